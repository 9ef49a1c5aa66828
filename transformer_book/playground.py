"""The in-page playground: trained models exported to ONNX for the static book, with the values the page must match.

:func:`write_playground` exports each model with the core's :func:`transformer.export.export_onnx` into
``<folder>/<name>/`` (``encoder.onnx``, ``decoder_step.onnx``) and writes ``<folder>/<name>/reference.json``:
for a few sources (new lengths, padded), what PyTorch computes with the package itself: the greedy output of
:func:`transformer.greedy_decode`, the logits of every decoding step and every attention map, intact and with a head
silenced by :func:`transformer_book.ablation.ablate_heads`. ``<folder>/manifest.json`` lists the models, their
vocabulary and their shapes for the page's script (``book/_ext/playground.js``), which runs the graphs with ONNX
Runtime Web. The book's browser test runs the page on the reference sources and compares.

In the static book build, ``book/_ext/offline_assets.py`` names the folder (``TRANSFORMER_BOOK_PLAYGROUND``, the
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
from pathlib import Path

import torch

from transformer.data import BOS_ID, EOS_ID, PAD_ID, token_label
from transformer.decoding import greedy_decode
from transformer.model import Transformer

from .ablation import KINDS, ablate_heads

PLAYGROUND_ENV = "TRANSFORMER_BOOK_PLAYGROUND"  # set by book/_ext/offline_assets.py in the static build
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


def _rounded(tensor: torch.Tensor) -> list:
    return [float(f"{x:.{DIGITS}g}") for x in tensor.flatten().tolist()] if tensor.dim() == 1 else [
        _rounded(row) for row in tensor
    ]


@torch.no_grad()
def reference_case(
    model: Transformer, src: Sequence[int], silenced: Mapping[tuple[str, int], Sequence[int]] | None = None,
    max_len: int | None = None,
) -> dict:
    """What the page must compute for one source ``src`` (ids, ``PAD_ID`` allowed anywhere after the first symbol):
    the greedy tokens (``greedy_decode``, up to and with ``</s>``), the logits of each step (the teacher-forced
    logits of ``<s>`` + those tokens) and every attention map of the last step, with ``silenced`` heads ablated."""
    if not src or any(not 0 <= int(i) < model.config.src_vocab_size for i in src) or src[0] == PAD_ID:
        raise ValueError(f"src must be non-empty ids in [0, {model.config.src_vocab_size}) not starting with padding; "
                         f"got {list(src)}")
    device = next(model.parameters()).device
    source = torch.tensor([list(src)], device=device)  # (1, S)
    max_len = max_len or default_max_len(src)
    model.eval()
    with ablate_heads(model, silenced or {}):
        tokens = greedy_decode(model, source, max_len)[0].tolist()  # (L,)
        if EOS_ID in tokens:
            tokens = tokens[: tokens.index(EOS_ID) + 1]
        tgt = torch.tensor([[BOS_ID, *tokens[:-1]]], device=device)  # (1, T): the last step's decoder input
        logits = model(source, tgt)[0]  # (T, V): step t's next-token scores
        maps = model.attention_maps(source, tgt)  # per kind, per layer: (1, H, Tq, Tk)
    return {
        "src": [int(i) for i in src], "max_len": max_len, "head_mask": head_masks(model, silenced),
        "silenced": [[kind, layer, list(heads)] for (kind, layer), heads in (silenced or {}).items()],
        "tokens": tokens, "logits": _rounded(logits.float().cpu()),
        "attention": {kind: [_rounded(m[0].float().cpu()) for m in maps[kind]] for kind in KINDS},
    }


def default_max_len(src: Sequence[int]) -> int:
    """The decoding budget the page uses too: two tokens more than the source's symbols (room for ``</s>``)."""
    return sum(int(i) != PAD_ID for i in src) + 2


def first_effective_ablation(model: Transformer, src: Sequence[int]) -> dict[tuple[str, int], list[int]]:
    """The first single head (encoder, decoder, cross; by layer and head) whose silencing changes the greedy output
    for ``src``, else the first whole attention layer (all its heads), in :func:`ablate_heads`' form."""
    intact = reference_case(model, src)["tokens"]
    c = model.config
    layers = {"encoder": c.n_encoder_layers, "decoder": c.n_decoder_layers, "cross": c.n_decoder_layers}
    attentions = [(kind, layer) for kind in KINDS for layer in range(layers[kind])]
    candidates = [{key: [head]} for key in attentions for head in range(c.n_heads)]
    candidates += [{key: list(range(c.n_heads))} for key in attentions]
    for silenced in candidates:
        if reference_case(model, src, silenced)["tokens"] != intact:
            return silenced
    raise ValueError(f"silencing no head and no layer of heads changes the greedy output for src {list(src)}")


def write_playground(models: Mapping[str, Transformer], folder: Path, sources: Sequence[Sequence[int]]) -> dict:
    """Export each model into ``folder/<name>/`` with its reference values for ``sources`` (intact, and with the
    heads of :func:`first_effective_ablation` for ``sources[0]`` silenced), and write ``folder/manifest.json``.
    Returns the manifest."""
    from plotly.colors import get_colorscale

    from transformer.export import export_onnx

    from .viz.style import FONT, MASK_SCALE, WEIGHTS_SCALE

    folder = Path(folder)
    # The book's figure style; the colour scale as plotly.py defines it (plotly.js' own "Blues" runs the other way).
    style = {"font": FONT, "weights_scale": get_colorscale(WEIGHTS_SCALE), "mask_color": MASK_SCALE[0][1]}
    manifest = {"pad_id": PAD_ID, "bos_id": BOS_ID, "eos_id": EOS_ID, "style": style, "models": {}}
    for name, model in models.items():
        c = model.config
        if c.src_vocab_size != c.tgt_vocab_size:
            raise ValueError(f"the playground shows one vocabulary; model {name!r} has {c.src_vocab_size} source and "
                             f"{c.tgt_vocab_size} target ids")
        with _quiet_exporter():
            export_onnx(model, folder / name)
        cases = [reference_case(model, src) for src in sources]
        cases.append(reference_case(model, sources[0], first_effective_ablation(model, sources[0])))
        (folder / name / "reference.json").write_text(json.dumps({"cases": cases}))
        manifest["models"][name] = {
            "vocab": [token_label(i) for i in range(c.tgt_vocab_size)], "n_heads": c.n_heads,
            "layers": {"encoder": c.n_encoder_layers, "decoder": c.n_decoder_layers, "cross": c.n_decoder_layers},
            "max_len": c.max_len, "example": list(sources[0]),
        }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


@contextmanager
def _quiet_exporter() -> Iterator[None]:
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


def playground_html(manifest: Mapping) -> str:
    """The playground's place in the page. ``playground.js`` (added to the page by the book's Sphinx extension)
    fills it; where that script is not loaded (Jupyter, Colab) the note inside says where the playground runs."""
    models = " ".join(manifest["models"])
    return (
        f'<div class="transformer-playground" data-models="{html.escape(models)}">'
        "<p><em>The playground runs in the online book, where the page loads ONNX Runtime Web; here, the cells above "
        "are the same models in PyTorch.</em></p></div>"
    )
