"""The in-page playground: trained models exported to ONNX for the static book, with the values the page must match.

:func:`write_playground` exports each :class:`PlaygroundModel` with the core's
:func:`transformer.export.export_onnx` into ``<folder>/<name>/`` (``encoder.onnx``, ``decoder_step.onnx``; a
a decoder-only model's ``gpt.onnx``: :mod:`transformer_book.playground_gpt`) and writes
``<folder>/<name>/reference.json``: for a few sources (new lengths, padded), what PyTorch computes with the package
itself: the greedy output of :func:`transformer.greedy_decode` and the beam of :func:`transformer.beam_search`, the
logits of every greedy step and every attention map, intact and with a head silenced by
:func:`transformer_book.ablation.ablate_heads`; for a model that reads text, how its vocabulary tokenizes a few
texts. ``<folder>/manifest.json`` lists the models, their vocabularies and shapes for the page's scripts
(``book/_ext/playground_engine.js`` decodes, ``book/_ext/playground.js`` draws), which run the graphs with ONNX Runtime
Web. The book's browser test runs the page on
the reference sources and compares.

In the static book build, ``book/_ext/static_book/playground.py`` names the folder (``TRANSFORMER_BOOK_PLAYGROUND``, the
built site's ``_static/playground``); elsewhere (Jupyter, Colab, nbval) :func:`playground_dir` is a temporary folder.
"""

from __future__ import annotations

import html
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import torch

from transformer.decoding import beam_search, greedy_decode
from transformer.model import Transformer
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.config import TrainConfig
from transformer.train.subwords import SubwordVocabulary
from transformer.train.tasks import token_label
from transformer.train.tokenizer import Vocabulary
from transformer.train.translation import translation_train_config

from .ablation import KINDS, ablate_heads
from .i18n import tr

PLAYGROUND_ENV = "TRANSFORMER_BOOK_PLAYGROUND"  # set by book/_ext/static_book/playground.py in the static build
DIGITS = 7  # significant digits of the reference values: far below the page's 1e-4 tolerance


def playground_dir() -> Path:
    """Where to write the exported models: the built site's folder in the static build, else a temporary one."""
    folder = os.environ.get(PLAYGROUND_ENV)
    return Path(folder) if folder else Path(tempfile.mkdtemp(prefix="playground-"))


def head_masks(model: Transformer, silenced: Mapping[tuple[str, int], Sequence[int]] | None = None) -> dict:
    """The three head masks the ONNX graphs take, as nested lists: ``{"encoder": (L_enc, H), "decoder": (L_dec, H),
    "cross": (L_dec, H)}``, 1 keeps a head, 0 silences it; ``silenced`` in :func:`ablate_heads`' form."""
    c = model.config
    layers = {"encoder": c.n_encoder_layers, "decoder": c.n_decoder_layers, "cross": c.n_decoder_layers}
    masks = {kind: [[1.0] * c.n_heads for _ in range(n)] for kind, n in layers.items()}
    for (kind, layer), heads in (silenced or {}).items():
        for head in heads:
            masks[kind][layer][head] = 0.0
    return masks


def rounded(tensor: torch.Tensor) -> list:
    """``tensor``'s values as nested lists, each to :data:`DIGITS` significant digits: how a reference is written."""
    return (
        [float(f"{x:.{DIGITS}g}") for x in tensor.flatten().tolist()]
        if tensor.dim() == 1
        else [rounded(row) for row in tensor]
    )


def playground_translation_train_config(**overrides) -> TrainConfig:
    """How the playground chapter trains its translator: the translation chapter's recipe
    (:func:`~transformer.train.translation.translation_train_config`) cut to 1,500 steps of 32 pairs, scored once at
    the end: it reads a third of that run's pairs, in a time that a chapter training four models can spend."""
    return translation_train_config(**{"steps": 1500, "batch_size": 32, "eval_every": 1500, **overrides})


BEAM_SIZE, LENGTH_PENALTY = 4, 0.6  # the paper's beam search (section 6.1); the page offers a beam of 2 as well


@dataclass(frozen=True)
class PlaygroundModel:
    """A trained model for the page, and how a reader talks to it.

    ``sources``: the ids the page is tested on (``PAD_ID`` allowed after the first id); the first is the example the
    page starts with. ``source_vocab`` and ``target_vocab``: for a model that reads text (the dates), the
    vocabularies it was trained with; the page tokenizes what the reader types as ``source_vocab`` does. Without
    them, the reader types the synthetic tasks' symbols. ``max_new_tokens``: the most tokens to decode; ``None``: two more
    than the source has symbols (:func:`default_max_new_tokens`). ``examples``: inputs the page offers, as a reader types them.
    ``trained_source_tokens``: the shortest and the longest source (in tokens, padding aside) the model was trained on;
    the page says so when a reader's source is longer. ``label``: the model's name in the page (its key in the
    manifest if ``None``).
    """

    model: Transformer
    sources: Sequence[Sequence[int]]
    source_vocab: Vocabulary | None = None
    target_vocab: Vocabulary | None = None
    max_new_tokens: int | None = None
    examples: Sequence[str] = field(default_factory=tuple)
    trained_source_tokens: tuple[int, int] | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        c = self.model.config
        lengths = self.trained_source_tokens
        if lengths is not None and not (len(lengths) == 2 and 1 <= lengths[0] <= lengths[1]):
            raise ValueError(
                f"trained_source_tokens must be (shortest, longest) with 1 <= shortest <= longest; got {lengths}"
            )
        if (self.source_vocab is None) != (self.target_vocab is None):
            raise ValueError("give both source_vocab and target_vocab (a model that reads text), or neither (symbols)")
        if self.source_vocab is None and c.src_vocab_size != c.tgt_vocab_size:
            raise ValueError(
                f"a model of symbols reads and writes one vocabulary; this one has {c.src_vocab_size} "
                f"source and {c.tgt_vocab_size} target ids: give its source_vocab and target_vocab"
            )
        sizes = (len(self.source_vocab), len(self.target_vocab)) if self.source_vocab else None
        if sizes is not None and sizes != (c.src_vocab_size, c.tgt_vocab_size):
            raise ValueError(
                f"the vocabularies must match the model's embeddings {(c.src_vocab_size, c.tgt_vocab_size)}; "
                f"got {sizes}"
            )
        if not self.sources:
            raise ValueError("sources must hold at least one source (the page's first example)")

    def labels(self, side: str) -> list[str]:
        """What the page shows for each id of the ``"source"`` or ``"target"`` vocabulary."""
        vocab = self.source_vocab if side == "source" else self.target_vocab
        size = self.model.config.src_vocab_size if side == "source" else self.model.config.tgt_vocab_size
        return list(vocab.itos) if vocab is not None else [token_label(i) for i in range(size)]

    def text(self, ids: Sequence[int], side: str = "source") -> str:
        """``ids`` as a reader would type or read them: words joined by spaces, characters by nothing."""
        vocab = self.source_vocab if side == "source" else self.target_vocab
        if vocab is not None:
            return vocab.decode(ids)
        return " ".join(token_label(i) for i in ids if i not in (PAD_ID, BOS_ID, EOS_ID))


@torch.no_grad()
def reference_case(
    model: Transformer,
    src: Sequence[int],
    silenced: Mapping[tuple[str, int], Sequence[int]] | None = None,
    max_new_tokens: int | None = None,
) -> dict:
    """What the page must compute for one source ``src`` (ids, ``PAD_ID`` allowed anywhere after the first symbol):
    the greedy tokens (``greedy_decode``, up to and with ``</s>``), the logits of each step (the teacher-forced
    logits of ``<s>`` + those tokens), every attention map of the last step, and the best hypothesis of
    ``beam_search`` (beam of :data:`BEAM_SIZE`, length penalty :data:`LENGTH_PENALTY`) with its score, all with
    ``silenced`` heads ablated."""
    if not src or any(not 0 <= int(i) < model.config.src_vocab_size for i in src) or src[0] == PAD_ID:
        raise ValueError(
            f"src must be non-empty ids in [0, {model.config.src_vocab_size}) not starting with padding; "
            f"got {list(src)}"
        )
    device = next(model.parameters()).device
    source = torch.tensor([list(src)], device=device)  # (1, S)
    max_new_tokens = max_new_tokens or default_max_new_tokens(src)
    model.eval()
    with ablate_heads(model, silenced or {}):
        tokens = until_eos(greedy_decode(model, source, max_new_tokens)[0].tolist())  # (L,)
        tgt = torch.tensor([[BOS_ID, *tokens[:-1]]], device=device)  # (1, T): the last step's decoder input
        logits = model(source, tgt)[0]  # (T, V): step t's next-token scores
        maps = model.attention_maps(source, tgt)  # per kind, per layer: (1, H, Tq, Tk)
        beam, score = beam_search(model, source, BEAM_SIZE, max_new_tokens, LENGTH_PENALTY)  # (1, L'), (1,)
    return {
        "src": [int(i) for i in src],
        "max_new_tokens": max_new_tokens,
        "head_mask": head_masks(model, silenced),
        "silenced": [[kind, layer, list(heads)] for (kind, layer), heads in (silenced or {}).items()],
        "tokens": tokens,
        "logits": rounded(logits.float().cpu()),
        "attention": {kind: [rounded(m[0].float().cpu()) for m in maps[kind]] for kind in KINDS},
        "beam": {
            "size": BEAM_SIZE,
            "length_penalty": LENGTH_PENALTY,
            "tokens": until_eos(beam[0].tolist()),
            "score": float(score[0]),
        },
    }


def until_eos(tokens: list[int]) -> list[int]:
    """``tokens`` up to and with the first ``EOS_ID`` (all of them if none)."""
    return tokens[: tokens.index(EOS_ID) + 1] if EOS_ID in tokens else tokens


def default_max_new_tokens(src: Sequence[int]) -> int:
    """The decoding budget the page uses too: two tokens more than the source's symbols (room for ``</s>``)."""
    return sum(int(i) != PAD_ID for i in src) + 2


def first_effective_ablation(
    model: Transformer, src: Sequence[int], max_new_tokens: int | None = None
) -> dict[tuple[str, int], list[int]]:
    """The first single head (encoder, decoder, cross; by layer and head) whose silencing changes the greedy output
    for ``src``, else the first whole attention layer (all its heads), in :func:`ablate_heads`' form."""
    max_new_tokens = max_new_tokens or default_max_new_tokens(src)
    source = torch.tensor([list(src)], device=next(model.parameters()).device)  # (1, S)

    def greedy(silenced: Mapping) -> list[int]:
        with ablate_heads(model, silenced), torch.no_grad():
            return greedy_decode(model.eval(), source, max_new_tokens)[0].tolist()

    intact = greedy({})
    c = model.config
    layers = {"encoder": c.n_encoder_layers, "decoder": c.n_decoder_layers, "cross": c.n_decoder_layers}
    attentions = [(kind, layer) for kind in KINDS for layer in range(layers[kind])]
    candidates = [{key: [head]} for key in attentions for head in range(c.n_heads)]
    candidates += [{key: list(range(c.n_heads))} for key in attentions]
    for silenced in candidates:
        if greedy(silenced) != intact:
            return silenced
    raise ValueError(f"silencing no head and no layer of heads changes the greedy output for src {list(src)}")


def reference_cases(entry: PlaygroundModel) -> list[dict]:
    """:func:`reference_case` for every source of ``entry``, then for its first source with the heads of
    :func:`first_effective_ablation` silenced."""
    model, first = entry.model, entry.sources[0]
    cases = [reference_case(model, src, max_new_tokens=entry.max_new_tokens) for src in entry.sources]
    silenced = first_effective_ablation(model, first, entry.max_new_tokens)
    return [*cases, reference_case(model, first, silenced, entry.max_new_tokens)]


def tokenizer_cases(vocab: Vocabulary | SubwordVocabulary, texts: Sequence[str]) -> list[dict]:
    """How ``vocab`` tokenizes and encodes each of ``texts``, and decodes the ids back to text: what the page's own
    tokenizer must reproduce."""
    return [
        {"text": text, "tokens": vocab.tokenize(text), "ids": (ids := vocab.encode(text)), "decoded": vocab.decode(ids)}
        for text in texts
    ]


TOKENIZER_TEXTS = (  # what a reader might type: capitals, digits, punctuation, unknown words, letters beyond ASCII
    "the twenty-third of March, nineteen ninety-nine",
    "Tuesday, 4 July 2023",
    "MARCH 23RD,1999",
    "the 1st of Mars",
    "  le 14 juillet 1789 ",
    "Été 2024 — août",
    "１２ déc. ½",
    "snake_case & (brackets)!",
    "Straße ΟΔΟΣ x² İ",
    "cafe\u0301\ufeff 3rd\u00a0May",
)


def vocabulary_manifest(
    source_vocab: Vocabulary | SubwordVocabulary, target_vocab: Vocabulary | SubwordVocabulary
) -> dict:
    """How the page reads and writes a model's text: ``input`` and ``output`` ``"word"`` or ``"char"`` (a
    :class:`~transformer.train.tokenizer.Vocabulary`'s level) or ``"subword"`` (a
    :class:`~transformer.train.subwords.SubwordVocabulary`), each vocabulary's tokens by id, and for subwords the
    merges in the order they were learned, which the page's tokenizer applies by rank."""

    def kind(vocab: Vocabulary | SubwordVocabulary) -> str:
        return "subword" if isinstance(vocab, SubwordVocabulary) else vocab.level

    info = {
        "input": kind(source_vocab),
        "output": kind(target_vocab),
        "src_vocab": list(source_vocab.itos),
        "tgt_vocab": list(target_vocab.itos),
    }
    if isinstance(source_vocab, SubwordVocabulary):
        info["merges"] = [list(merge) for merge in source_vocab.merges]
    return info


SUBWORD_TEXTS = (  # what a reader might type to the English -> German model: capitals, unknown words, digits, signs,
    # letters beyond ASCII, spaces of every kind
    "three hundred and forty-two",
    "THREE HUNDRED and Forty-Two",
    "Wednesday, November 25, 2026",
    "€1,234.50 and £3",
    "12.5 kilograms",
    "in 3 days",
    "  Germany,France ,  and   Italy  ",
    "Zürich, Köln, Straße, café, naïve",
    "Ärger über Öl: 5 € ß",
    "the quokka's 7½ km²!",
    "e\u0301 cafe\u0301 ÉTÉ",
    "snake_case & (brackets) [x] {y} #1",
    "2026-11-25T15:45\u00a0PM",
    "tab\there\nnewline\u202fnarrow",
    "日本 😀 ΟΔΟΣ",
)


class PageEntry(Protocol):
    """Another kind of model for the page (:class:`transformer_book.playground_gpt.PlaygroundGPT`, a decoder-only
    one): it exports itself and its reference values into a folder, and returns its entry of the manifest."""

    def write(self, folder: Path) -> dict: ...


def write_playground(entries: Mapping[str, PlaygroundModel | PageEntry], folder: Path) -> dict:
    """Export each model into ``folder/<name>/`` with its reference values (:func:`reference_cases`, and
    :func:`tokenizer_cases` for a model that reads text; a :class:`PageEntry` writes its own) and write
    ``folder/manifest.json``. Returns the manifest."""
    from plotly.colors import get_colorscale

    from transformer.export import export_onnx

    from .viz.style import FONT, MASK_SCALE, WEIGHTS_SCALE
    from .viz.training import EDGE_COLOUR, KIND_COLOURS, OTHER_COLOUR

    folder = Path(folder)
    # The book's figure style; the colour scale as plotly.py defines it (plotly.js' own "Blues" runs the other way).
    # The beam's colours are those of the decoding chapter's beam figure (transformer_book.viz.decoding.beam_figure).
    style = {
        "font": FONT,
        "weights_scale": get_colorscale(WEIGHTS_SCALE),
        "mask_color": MASK_SCALE[0][1],
        "bos_color": KIND_COLOURS["bos"],
        "best_color": KIND_COLOURS["eos"],
        "beam_color": OTHER_COLOUR,
        "edge_color": EDGE_COLOUR,
    }
    manifest = {
        "pad_id": PAD_ID,
        "bos_id": BOS_ID,
        "eos_id": EOS_ID,
        "style": style,
        "beam": {"sizes": [2, BEAM_SIZE], "length_penalty": LENGTH_PENALTY},
        "models": {},
    }
    for name, entry in entries.items():
        if not isinstance(entry, PlaygroundModel):
            manifest["models"][name] = entry.write(folder / name)
            continue
        c = entry.model.config
        with quiet_exporter():
            export_onnx(entry.model, folder / name)
        reference = {"cases": reference_cases(entry)}
        if entry.source_vocab is not None:  # the texts too: what a reader types and reads
            for case in reference["cases"]:
                case["text"], case["output"] = entry.text(case["src"]), entry.text(case["tokens"], "target")
                case["beam"]["output"] = entry.text(case["beam"]["tokens"], "target")
            texts = SUBWORD_TEXTS if isinstance(entry.source_vocab, SubwordVocabulary) else TOKENIZER_TEXTS
            reference["tokenizer"] = tokenizer_cases(entry.source_vocab, texts)
        (folder / name / "reference.json").write_text(json.dumps(reference))
        symbols = {
            "input": "symbols",
            "output": "symbols",
            "src_vocab": entry.labels("source"),
            "tgt_vocab": entry.labels("target"),
        }
        manifest["models"][name] = {
            **(symbols if entry.source_vocab is None else vocabulary_manifest(entry.source_vocab, entry.target_vocab)),
            "label": entry.label or name,
            "n_heads": c.n_heads,
            "max_new_tokens": entry.max_new_tokens,
            "max_positions": c.max_positions,
            "layers": {"encoder": c.n_encoder_layers, "decoder": c.n_decoder_layers, "cross": c.n_decoder_layers},
            "examples": list(entry.examples) or [entry.text(entry.sources[0])],
            "trained_source_tokens": list(entry.trained_source_tokens) if entry.trained_source_tokens else None,
        }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


@contextmanager
def quiet_exporter() -> Iterator[None]:
    """torch.onnx's exporter warns about things that do not concern these models (torchvision's operators missing,
    dynamic axes it renames); keep them out of the chapter's output."""
    loggers = [logging.getLogger(name) for name in ("torch.onnx", "torch.export", "torch._export")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def playground_html(names: Sequence[str]) -> str:
    """The playground's place in the page, for the models ``names``. ``playground.js`` (added to the page with
    ``playground_engine.js`` by the book's Sphinx extension) fills it; where those scripts are not loaded (Jupyter,
    Colab) the note inside says where the playground runs."""
    models = " ".join(names)
    return (
        f'<div class="transformer-playground" data-models="{html.escape(models)}">'
        "<p><em>"
        + html.escape(
            tr(
                "The playground runs in the online book, where the page loads ONNX Runtime Web; here, the cells above "
                "are the same models in PyTorch."
            )
        )
        + "</em></p></div>"
    )
