"""The decoder-only (GPT-style) model in the playground: :class:`PlaygroundGPT`, an entry of
:func:`transformer_book.playground.write_playground` that exports a :class:`~transformer_book.descendants.GPT` as one
ONNX graph (:func:`export_gpt_onnx`, ``gpt.onnx``) and writes what the page must reproduce for a few prefixes
(:func:`gpt_reference_case`): the greedy continuation of ``GPT.generate``, the logits of each step, every attention
map, top-1 sampling (the greedy continuation again) and the distribution a sampled token is drawn from
(:func:`transformer.decoding.sampling_probs`). The page's side is ``book/_ext/playground_engine.js``'s ``generate``.

Apart from :mod:`transformer_book.playground` so that the pages that use only the encoder-decoder models' playground
(and its training recipe) do not load the GPT- and BERT-style models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transformer.decoding import check_sampling, sampling_probs
from transformer.tokens import BOS_ID, PAD_ID
from transformer.train.tasks import token_label
from transformer.utils import eval_mode

from .descendants import GPT, GPTGraph
from .playground import quiet_exporter, rounded, until_eos


@dataclass(frozen=True)
class PlaygroundGPT:
    """A trained decoder-only model (:class:`~transformer_book.descendants.GPT`) for the page: the reader types a
    prefix of the synthetic tasks' symbols and ``<s>``, the separator of the rows it was trained on (``x <s> x </s>``
    for the copy), and the page shows the next-token probabilities and continues the prefix, greedily or sampled.

    ``prefixes``: the ids the page is tested on (no padding); the first is the example the page starts with.
    ``examples``: prefixes the page offers, as a reader types them. ``sampling``: the ``(temperature, top_k)`` at
    which the reference holds the distribution a sampled token is drawn from (:func:`transformer.decoding.sampling_probs`).
    ``trained_source_tokens`` and ``label``: as
    :class:`~transformer_book.playground.PlaygroundModel`'s."""

    model: GPT
    prefixes: Sequence[Sequence[int]]
    examples: Sequence[str] = field(default_factory=tuple)
    sampling: tuple[float, int | None] = (0.7, 3)
    trained_source_tokens: tuple[int, int] | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, GPT):
            raise TypeError(f"model must be a transformer_book.descendants.GPT; got {type(self.model).__name__}")
        if not self.prefixes:
            raise ValueError("prefixes must hold at least one prefix (the page's first example)")
        check_sampling(*self.sampling, None, self.model.config.vocab_size)

    def labels(self) -> list[str]:
        """What the page shows for each id."""
        return [token_label(i) for i in range(self.model.config.vocab_size)]

    def text(self, ids: Sequence[int]) -> str:
        """``ids`` as a reader types them: the symbols, ``<s>`` and ``</s>``, joined by spaces."""
        return " ".join(token_label(i) for i in ids)

    def write(self, folder: Path) -> dict:
        """Export the model into ``folder`` (``gpt.onnx``, :func:`export_gpt_onnx`) with its ``reference.json``
        (:func:`gpt_reference_case` for each prefix); return its entry of the page's manifest. Its ``layers`` are
        the encoder-decoder's three kinds, the stack's causal self-attention as the decoder's."""
        c = self.model.config
        with quiet_exporter():
            export_gpt_onnx(self.model, folder)
        cases = [gpt_reference_case(self.model, prefix, self.sampling) for prefix in self.prefixes]
        (folder / "reference.json").write_text(json.dumps({"cases": cases}))
        return {
            "kind": "decoder-only",
            "input": "symbols",
            "output": "symbols",
            "src_vocab": self.labels(),
            "tgt_vocab": self.labels(),
            "label": self.label or folder.name,
            "n_heads": c.n_heads,
            "max_new_tokens": None,
            "max_positions": c.max_positions,
            "layers": {"encoder": 0, "decoder": c.n_layers, "cross": 0},
            "examples": list(self.examples) or [self.text(self.prefixes[0])],
            "trained_source_tokens": list(self.trained_source_tokens) if self.trained_source_tokens else None,
            "separator": token_label(BOS_ID),
        }


def default_continuation(model: GPT, prefix: Sequence[int]) -> int:
    """How many tokens the page continues a prefix by (``continuationBudget`` in the page): two more than the prefix
    has, within the model's positions."""
    return max(1, min(len(prefix) + 2, model.config.max_positions - len(prefix)))


@torch.no_grad()
def gpt_reference_case(model: GPT, prefix: Sequence[int], sampling: tuple[float, int | None] = (0.7, 3)) -> dict:
    """What the page must compute for one ``prefix`` (ids, no padding): the greedy continuation (``GPT.generate``, up to
    and with ``</s>``), the logits of each of its steps (the next-token logits of the prefix and the tokens chosen so
    far), every attention map of the last step, the continuation sampled with ``top_k=1`` (which must be the greedy
    one), and, for the first step, the distribution a token is drawn from at ``sampling``'s temperature and top-k."""
    vocab_size = model.config.vocab_size
    if not prefix or any(not 0 <= int(i) < vocab_size for i in prefix) or PAD_ID in prefix:
        raise ValueError(f"prefix must be non-empty ids in [0, {vocab_size}) without padding; got {list(prefix)}")
    device = next(model.parameters()).device
    row = torch.tensor([list(prefix)], device=device)  # (1, T0)
    budget = default_continuation(model, prefix)
    model.eval()
    tokens = until_eos(model.generate(row, budget)[0].tolist())
    top_1 = until_eos(model.generate(row, budget, top_k=1, rng=torch.Generator(device).manual_seed(0))[0].tolist())
    last = torch.tensor([[*prefix, *tokens[:-1]]], device=device)  # (1, T): the last step's input
    logits = model(last)[0, len(prefix) - 1 :].float().cpu()  # (L, V): step t's next-token scores
    temperature, top_k = sampling
    return {
        "prefix": [int(i) for i in prefix],
        "max_new_tokens": budget,
        "tokens": tokens,
        "top_1": top_1,
        "logits": rounded(logits),
        "probs": rounded(logits[0].softmax(-1)),
        "sampling": {
            "temperature": temperature,
            "top_k": top_k,
            "probs": rounded(sampling_probs(logits[:1], temperature, top_k)[0]),
        },
        "attention": {"decoder": [rounded(m[0].float().cpu()) for m in model.attention_maps(last)]},
    }


def export_gpt_onnx(model: GPT, folder: str | Path) -> Path:
    """Write ``gpt.onnx`` (:class:`~transformer_book.descendants.GPTGraph`: inputs ``tokens``; outputs ``logits``,
    ``attention``) into ``folder`` (created if needed) with :func:`transformer.export.export_graph`, as
    :func:`transformer.export.export_onnx` writes the encoder-decoder's graphs: batch and length dynamic (up to
    ``max_positions``), in evaluation mode, on the model's device and dtype. Returns its path."""
    from torch.export import Dim

    from transformer.export import export_graph

    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT; got {type(model).__name__}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokens = torch.full((2, 5), model.config.pad_id + 1, device=next(model.parameters()).device)  # any valid ids
    length = Dim("length", min=1, max=model.config.max_positions)
    path = folder / "gpt.onnx"
    with eval_mode(model), torch.no_grad():
        export_graph(
            GPTGraph(model),
            (tokens,),
            path,
            inputs=["tokens"],
            outputs=["logits", "attention"],
            dynamic_shapes={"tokens": {0: Dim("batch", min=1, max=1024), 1: length}},
        )
    return path
