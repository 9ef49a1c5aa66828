"""The mistakes that widely read Transformer write-ups ship, reproduced on purpose, and
the checks that catch them.

Everything in the first part of this module is DELIBERATELY WRONG. Each faulty variant
is the package's own code with the smallest change that reproduces one mistake found in
public code and tutorials, and in the many blog posts that copy them: the widely copied
PyTorch Transformer of github.com/luozhouyang/machine-learning-notes, graykode's
nlp-tutorial (github.com/graykode/nlp-tutorial), the Keras implementation
github.com/Lsdefine/attention-is-all-you-need-keras, OpenNMT-py and The Annotated
Transformer. Each docstring names its source. Never use them in a model
you mean to train.

The second part holds the checks: short functions a reader could have written, each
raising ``AssertionError`` (or the error the faulty code itself raises) for the faulty
variant and passing for the package. ``tests/test_pitfalls.py`` runs every check on
both; the chapter "Pitfalls" shows them side by side. :data:`CASES` lists every
(mistake, faulty variant, correct version, check) and :func:`build_model` builds a whole
Transformer with one mistake built in."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.attention import AttentionFunction, MultiHeadAttention, scaled_dot_product_attention
from transformer.config import TransformerConfig
from transformer.embeddings import sinusoidal_table
from transformer.layers import DecoderLayer, EncoderLayer, FeedForward
from transformer.masks import causal_mask, padding_mask, padding_mask_from_lengths
from transformer.model import Transformer
from transformer.tokens import PAD_ID
from transformer.utils import seeded
from transformer_book.i18n import tr, translatable
from transformer_book.parameters import parameter_formula

# ======================================================================================
# Part 1: the faulty variants (DELIBERATELY WRONG)
# ======================================================================================


def attention_step(attend: Callable[..., tuple[Tensor, Tensor]], **kwargs) -> AttentionFunction:
    """``attend(q, k, v, mask, **kwargs) -> (out, weights)``, written without dropout as
    tutorials write it, in the form :class:`~transformer.MultiHeadAttention` plugs in
    (``attention=``): a faulty variant is the package's module with a faulty attention
    function, nothing else changed. Not itself faulty."""
    return lambda q, k, v, mask, dropout_p: attend(q, k, v, mask, **kwargs)


# ---- 1. Splitting heads without a transpose -----------------------------------------


class SplitHeadsWithoutTranspose(MultiHeadAttention):
    """DELIBERATELY WRONG: splits heads with ``x.view(batch * heads, -1, d_head)``
    straight from ``(B, T, H * d_k)``, as in luozhouyang's
    machine-learning-notes (``transformer_pytorch.py``), and merges
    them back the same way.

    The view reads the memory of positions 0..T-1 as if it were heads 0, 1, ..., so each
    "head" gets a mixture of positions and of other heads' features. Every shape still
    matches, so nothing fails. (``reshape`` instead of its ``view`` only because the
    package's stacked projection hands over non-contiguous slices; the reinterpretation
    is the same.) Recognise it: a ``view`` or ``reshape`` to ``(B * H, T, d_k)`` or
    ``(B, H, T, d_k)`` with no ``transpose(1, 2)``/``permute`` next to it."""

    def split_heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        # WRONG: needs x.view(B, T, H, d_k).transpose(1, 2)
        return x.reshape(B, self.n_heads, T, self.d_k)

    def merge_heads(self, x: Tensor) -> Tensor:
        B, H, T, d_k = x.shape
        # WRONG: needs x.transpose(1, 2) first
        return x.reshape(B, T, H * d_k)


# ---- 2. `if mask:` and `if scale:` on a tensor ---------------------------------------


def attention_if_mask(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, scale: float | Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """DELIBERATELY WRONG: ``ScaledDotProductAttention.forward(q, k, v,
    scale=None, attn_mask=None)`` of luozhouyang's machine-learning-notes, which tests
    its optional arguments with ``if scale:`` and ``if attn_mask:``.

    Python asks a tensor for one truth value; any mask with more than one element
    raises ``RuntimeError: Boolean value of Tensor with more than one value is
    ambiguous`` (and a one-element mask that is ``False`` is skipped silently). A float
    ``scale`` passes, a tensor of scales (one per head) raises the same way. Recognise
    it: ``if x:`` where ``x`` may be a tensor; write ``if x is not None:``."""
    scores = q @ k.transpose(-2, -1)  # (..., T_q, T_k)
    if scale:  # WRONG: `if scale is not None:`
        scores = scores * scale
    if mask:  # WRONG: `if mask is not None:`
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k)
    return weights @ v, weights


class IfMaskAttention(MultiHeadAttention):
    """Multi-head attention whose attention function is :func:`attention_if_mask`,
    called with a float scale as that implementation calls it (DELIBERATELY WRONG)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        attend = attention_step(attention_if_mask, scale=(d_model // n_heads) ** -0.5)
        super().__init__(d_model, n_heads, dropout, bias, attention=attend)


# ---- 3. The wrong scale -------------------------------------------------------------

WRONG_SCALES = {
    "d_model": "ScaledDotProductAttention(d_model) divides by sqrt(d_model)",
    "d_k // n_heads": "(key.size(-1) // num_heads) ** -0.5 after the split",
}


def attention_with_scale_dim(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale_dim: int
) -> tuple[Tensor, Tensor]:
    """DELIBERATELY WRONG (unless ``scale_dim == q.size(-1)``): divides the scores by
    ``sqrt(scale_dim)``."""
    # WRONG: divide by math.sqrt(q.size(-1))
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(scale_dim)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)  # (B, H, T_q, T_k)
    return weights @ v, weights


class WrongScaleAttention(MultiHeadAttention):
    """DELIBERATELY WRONG: divides the scores by ``sqrt(score_dim)`` instead of
    ``sqrt(d_k)``.

    ``score_dim="d_model"`` is the Keras implementation
    github.com/Lsdefine/attention-is-all-you-need-keras, which builds
    ``ScaledDotProductAttention(d_model)``: scores ``sqrt(H)`` times too small,
    attention too flat. ``score_dim="d_k // n_heads"`` is luozhouyang's
    machine-learning-notes, whose
    ``(key.size(-1) // num_heads) ** -0.5`` runs after the split, where ``key.size(-1)``
    is already ``d_k``: scores ``sqrt(H)`` times too large, attention too sharp.
    Recognise it: the number under the square root must be the size of the vectors being
    dotted, ``q.size(-1)`` at the point where ``q @ k^T`` happens."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True, score_dim: str = "d_model"):
        if score_dim not in WRONG_SCALES:
            raise ValueError(f"score_dim must be one of {list(WRONG_SCALES)}; got {score_dim!r}")
        scale_dim = d_model if score_dim == "d_model" else (d_model // n_heads) // n_heads
        attend = attention_step(attention_with_scale_dim, scale_dim=scale_dim)
        super().__init__(d_model, n_heads, dropout, bias, attention=attend)
        self.score_dim, self.scale_dim = score_dim, scale_dim


# ---- 4. One attention module for two jobs -------------------------------------------


class SharedAttentionDecoderLayer(DecoderLayer):
    """DELIBERATELY WRONG: the decoder's self-attention and its encoder-decoder
    attention are one module.

    The ``DecoderLayer`` of luozhouyang's machine-learning-notes creates a single
    ``self.attention`` and calls it twice, once on the target and once on the encoder
    output, so the two sub-layers silently share their weights (a quarter fewer
    parameters per layer). Recognise it: count the
    attention modules created in ``__init__``: a decoder layer needs two."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cross_attn = self.self_attn  # WRONG: needs a MultiHeadAttention of its own


def share_cross_attention(model: Transformer) -> Transformer:
    """Make every decoder layer of ``model`` use its self-attention for cross-attention
    too (DELIBERATELY WRONG)."""
    for layer in model.decoder.layers:
        layer.cross_attn = layer.self_attn
    return model


# ---- 5. The feed-forward network's shapes -------------------------------------------

FFN_DIM_TYPO = 2018  # machine-learning-notes' EncoderLayer(ffn_dim=2018): the paper's d_ff is 2048


class ConvFeedForwardWrongShape(nn.Module):
    """DELIBERATELY WRONG: the feed-forward network as two 1x1 convolutions, the second
    declared ``Conv1d(d_model, d_ff, 1)`` as in luozhouyang's machine-learning-notes instead of
    ``Conv1d(d_ff, d_model, 1)``.

    With the paper's sizes it crashes at the first forward pass (the second convolution
    expects ``d_model`` input channels and gets ``d_ff``); with ``d_ff == d_model`` it
    would run. Recognise it: consecutive layers must chain, ``out`` of one equals ``in``
    of the next, and the block must end where it started (``d_model``)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Conv1d(d_model, d_ff, 1)
        self.w2 = nn.Conv1d(d_model, d_ff, 1)  # WRONG: nn.Conv1d(d_ff, d_model, 1)

    def forward(self, x: Tensor) -> Tensor:
        x = x.transpose(1, 2)  # (B, d_model, T): Conv1d wants channels first
        return self.w2(F.relu(self.w1(x))).transpose(1, 2)  # (B, T, channels)


# ---- 6. Softmax twice ---------------------------------------------------------------


def double_softmax_logits(logits: Tensor) -> Tensor:
    """DELIBERATELY WRONG: what the model of luozhouyang's machine-learning-notes hands to the loss,
    ``softmax(logits)``.
    ``nn.CrossEntropyLoss`` then applies log-softmax again: probabilities in [0, 1] are
    treated as logits, so the loss cannot go below ``log(1 + (V - 1) / e)`` and its
    gradients shrink. Recognise it: a ``Softmax`` as the model's last layer feeding
    ``CrossEntropyLoss``/``F.cross_entropy`` (which expect raw logits)."""
    return torch.softmax(logits, dim=-1)


class DoubleSoftmaxTransformer(Transformer):
    """The package's Transformer returning probabilities instead of logits (DELIBERATELY
    WRONG, see :func:`double_softmax_logits`); any standard training loop then softmaxes
    twice."""

    def forward(
        self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None
    ) -> Tensor:
        logits = super().forward(src, tgt, src_mask, tgt_mask)  # (B, T, V)
        return double_softmax_logits(logits)  # WRONG: return the logits


# ---- 7. A fresh LayerNorm per call, and a scale tensor stuck on the CPU -------------


class FreshLayerNormPerCall(nn.Module):
    """DELIBERATELY WRONG: ``return nn.LayerNorm(d_model)(output + residual)``
    (github.com/graykode/nlp-tutorial, 5-1.Transformer) builds a new LayerNorm inside
    ``forward``: its gain and bias are re-created as 1 and 0 on every call, are not
    parameters of the model, and are never trained or saved. (Widely shared copies of it
    also hard-code ``.cuda()``, see :class:`CudaLayerNormPerCall`; this
    copy follows the input's device so that a model built with it trains anywhere.)
    Recognise it: a module constructed inside ``forward``."""

    def __init__(self, d_model: int):
        super().__init__()
        self.d_model = d_model

    def forward(self, x: Tensor) -> Tensor:
        # WRONG: create the nn.LayerNorm once, in __init__
        return nn.LayerNorm(self.d_model).to(x.device)(x)


class CudaLayerNormPerCall(FreshLayerNormPerCall):
    """DELIBERATELY WRONG: the line as copies of nlp-tutorial print it,
    ``nn.LayerNorm(d_model).cuda()(x)``.
    On a machine without a GPU ``.cuda()`` raises; on one with a GPU the norm lands on
    the GPU whatever the input's device, so a model on the CPU (inference, tests, a
    laptop) fails. Recognise it: ``.cuda()`` anywhere in model code; a module follows
    its inputs' device when every tensor in it is a parameter or a buffer."""

    def forward(self, x: Tensor) -> Tensor:
        return nn.LayerNorm(self.d_model).cuda()(x)  # WRONG: built here, and .cuda()


def fresh_layer_norm_per_call(model: Transformer) -> Transformer:
    """Replace every layer norm inside the encoder and decoder layers of ``model`` by a
    :class:`FreshLayerNormPerCall` (DELIBERATELY WRONG)."""
    for layer in [*model.encoder.layers, *model.decoder.layers]:
        for name in ("norm1", "norm2", "norm3"):
            if hasattr(layer, name):
                setattr(layer, name, FreshLayerNormPerCall(model.config.d_model))
    return model


def attention_with_tensor_scale(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """DELIBERATELY WRONG: divides by ``torch.sqrt(torch.FloatTensor([d_k]))``, a
    one-element tensor created on the CPU. PyTorch lets a 0-dimensional CPU tensor join
    a computation on another device, not a tensor of shape ``(1,)``: on a GPU this
    raises ``Expected all tensors to be on the same device``. Recognise it: tensors
    created inside ``forward`` or ``__init__`` without ``device=``, and not registered
    as buffers; use ``math.sqrt``."""
    scale = torch.sqrt(torch.FloatTensor([q.size(-1)]))  # WRONG: math.sqrt(q.size(-1))
    scores = (q @ k.transpose(-2, -1)) / scale  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


# ---- 8. The cross-attention mask from the target; a function as a mask ------------


def cross_mask_from_target(src: Tensor, tgt: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """DELIBERATELY WRONG: luozhouyang's machine-learning-notes builds the
    encoder-decoder mask with
    ``padding_mask(tgt_seq, src_seq)``, which hides keys where the *target* is padding.
    The keys of cross-attention are source positions, so the mask must come from the
    source. When source and target lengths differ the shapes clash; when they are equal
    (padded to one width) it runs silently. Recognise it: the key-padding mask of any
    attention is built from the sequence its keys come from."""
    return padding_mask(tgt, pad_id)  # WRONG: padding_mask(src, pad_id), (B, 1, 1, S)


class AttentionGivenTheFunction(nn.Module):
    """DELIBERATELY WRONG: the ``EncoderLayer.forward(self, inputs, attn_mask=None)`` of
    luozhouyang's machine-learning-notes
    calls ``self.attention(inputs, inputs, inputs, padding_mask)``: the module-level
    *function* ``padding_mask``, not its argument. This wraps an attention module and
    makes that call. Recognise it: an argument that the body never uses (here
    ``attn_mask``) is a bug's fingerprint."""

    def __init__(self, attention: MultiHeadAttention):
        super().__init__()
        self.attention = attention

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None, *, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        # WRONG: the argument `attn_mask`, not the function `padding_mask`
        return self.attention(query, key, value, padding_mask, need_weights=need_weights)


class EncoderLayerPassesFunction(EncoderLayer):
    """The package's encoder layer whose self-attention is called as machine-learning-notes calls it
    (:class:`AttentionGivenTheFunction`, DELIBERATELY WRONG)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.self_attn = AttentionGivenTheFunction(self.self_attn)


# ---- 9. Multiplying the scores by the mask ------------------------------------------


def multiply_mask_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """DELIBERATELY WRONG: "multiply the scores element-wise by the mask", as some
    conceptual write-ups put it. A
    hidden score becomes 0, and softmax gives it weight ``exp(0) / sum``, about as much
    as an ordinary key: the future and the padding stay visible. Recognise it:
    ``scores * mask`` (or ``mask * scores``) before a softmax; masking must set hidden
    scores to a very negative number (``masked_fill``) before the softmax."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (..., T_q, T_k)
    if mask is not None:
        # WRONG: scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        scores = scores * mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


class MultiplyMaskAttention(MultiHeadAttention):
    """Multi-head attention whose attention function is :func:`multiply_mask_attention`
    (DELIBERATELY WRONG)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        attend = attention_step(multiply_mask_attention)
        super().__init__(d_model, n_heads, dropout, bias, attention=attend)


# ---- 10. Mask polarity and uint8 masks ----------------------------------------------


def padding_mask_true_is_pad(tokens: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """DELIBERATELY WRONG here: OpenNMT's and nlp-tutorial's polarity, ``True`` =
    "padding, hide it" (``seq_k.eq(0)``), handed to code whose convention is ``True`` =
    "may attend" (this package, The Annotated Transformer). Every query then attends to
    padding only. Recognise it: find the line that applies the mask
    (``masked_fill(mask, ...)`` hides True, ``masked_fill(~mask, ...)`` or
    ``mask == 0`` hides False) and check that the mask builder agrees."""
    # WRONG polarity for this package: tokens != pad_id
    return (tokens == pad_id)[:, None, None, :]  # (B, 1, 1, S)


def uint8_subsequent_mask(size: int) -> Tensor:
    """DELIBERATELY WRONG: luozhouyang's machine-learning-notes' and graykode's
    nlp-tutorial's ``torch.triu(torch.ones(T, T, dtype=torch.uint8), 1)``: a ``uint8`` mask with
    1 = "future, hide it". Current
    PyTorch's ``masked_fill`` rejects non-bool masks, and ``~`` on uint8 is a bitwise
    not (1 -> 254), not a logical one. Recognise it: ``dtype=torch.uint8``/``.byte()``
    masks."""
    ones = torch.ones(size, size, dtype=torch.uint8)  # WRONG: bool, with True = keep
    return torch.triu(ones, diagonal=1)[None, None]  # (1, 1, T, T)


# ---- 11. Fill values ----------------------------------------------------------------


def attention_with_fill(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, fill: float = -1e9
) -> tuple[Tensor, Tensor]:
    """DELIBERATELY WRONG: hides scores with a hard-coded ``fill`` and does nothing
    about a query with no visible key.

    ``-1e9`` and ``-1e18`` overflow float16 (largest magnitude 65504): ``masked_fill``
    raises in half precision. ``-inf`` makes a row whose keys are all hidden
    ``softmax([-inf, ...]) = NaN``; a finite fill instead turns that row into a uniform
    average over the hidden values. Recognise it: a literal ``-1e9``/``-1e18``/``-inf``
    next to ``masked_fill``; use ``torch.finfo(scores.dtype).min`` and decide what an
    empty row returns."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (..., T_q, T_k)
    if mask is not None:
        # WRONG: torch.finfo(scores.dtype).min, and rows with no visible key handled
        scores = scores.masked_fill(~mask, fill)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


# ---- 12. LayerNorm by hand with std + eps -------------------------------------------


class StdPlusEpsLayerNorm(nn.Module):
    """DELIBERATELY WRONG: the hand-written layer norm of The Annotated
    Transformer and luozhouyang's machine-learning-notes,
    ``gamma * (x - mean) / (std + eps) + beta``.

    ``x.std`` is the unbiased standard deviation (divides by ``d - 1``; ``nn.LayerNorm``
    uses the biased one, ``d``), and ``eps`` is added outside the square root instead of
    to the variance. Close to ``nn.LayerNorm`` for large ``d`` and ordinary inputs,
    different for small ``d`` or nearly constant inputs, so weights copied from one do
    not reproduce the other. Recognise it: ``.std(`` in a normalisation; write
    ``(x - mean) / sqrt(var + eps)`` with ``var = x.var(-1, unbiased=False)``."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)  # WRONG: unbiased, and eps belongs in the root
        return self.gamma * (x - mean) / (std + self.eps) + self.beta


# ---- 13. The base of the sinusoids written as 1000 ----------------------------------


def sinusoidal_table_base_1000(max_positions: int, d_model: int) -> Tensor:
    """DELIBERATELY WRONG: the sinusoid table with base 1000, as some write-ups print
    the formula. The longest wavelength shrinks from about
    ``2 pi * 10000`` to ``2 pi * 1000`` positions. Recognise it: compare the constant
    with the paper, ``10000^(2i / d_model)``."""
    position = torch.arange(max_positions, dtype=torch.float64)[:, None]  # (L, 1)
    exponents = torch.arange(0, d_model, 2, dtype=torch.float64) / d_model  # 2i / d
    inv_freq = 1000.0**-exponents  # (ceil(d/2),)  WRONG: 10000.0
    angles = position * inv_freq  # (L, ceil(d/2))
    table = torch.zeros(max_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return table.float()


# ---- 14. Code that does not run as printed ------------------------------------------

SNIPPET_SETUP = """
import numpy as np
import torch
from torch import nn
vocab_size, d_model, max_len = 10, 8, 6
inputs = torch.tensor([[1, 2, 3]])
"""

SNIPPETS = {
    "np.pow": (
        "position_encoding = np.array([\n"
        "    [pos / np.pow(10000, 2.0 * (j // 2) / d_model) for j in range(d_model)]\n"
        "    for pos in range(max_len)])",
        "position_encoding = np.array([\n"
        "    [pos / np.power(10000, 2.0 * (j // 2) / d_model)\n"
        "     for j in range(d_model)]\n"
        "    for pos in range(max_len)])",
    ),
    "undefined seq_embedding": (
        "embedding = nn.Embedding(vocab_size, d_model, padding_idx=0)\n"
        "seq_embedding = seq_embedding(inputs) * np.sqrt(d_model)",
        "embedding = nn.Embedding(vocab_size, d_model, padding_idx=0)\n"
        "seq_embedding = embedding(inputs) * np.sqrt(d_model)",
    ),
    "numpy and torch concatenated": (
        "position_encoding = np.zeros((max_len, d_model))\n"
        "pad_row = torch.zeros([1, d_model])\n"
        "position_encoding = torch.cat((pad_row, position_encoding))",
        "position_encoding = np.zeros((max_len, d_model))\n"
        "pad_row = torch.zeros([1, d_model])\n"
        "position_encoding = torch.cat(\n"
        "    (pad_row, torch.from_numpy(position_encoding).float()))",
    ),
}
"""Each name maps to ``(as printed in luozhouyang's machine-learning-notes, fixed)``; they run after
:data:`SNIPPET_SETUP`."""

# Notebook globals, as in graykode's nlp-tutorial, which defines d_k, n_heads and
# d_model once at the top.
n_heads, d_k = 8, 64


class GlobalSizesAttention(MultiHeadAttention):
    """DELIBERATELY WRONG: splits heads with the module-level globals ``n_heads`` and
    ``d_k`` (nlp-tutorial reads ``d_k``, ``n_heads`` and ``d_model`` from its globals
    inside its modules) instead of its own sizes. Build a second model with other sizes
    in the same session and it silently uses the first one's (or crashes). Recognise it:
    a name inside a method that is neither an argument, an attribute of ``self`` nor an
    import."""

    def split_heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        # WRONG: self.n_heads and self.d_k
        return x.view(B, T, n_heads, d_k).transpose(1, 2)


# ---- Whole models with one mistake built in ------------------------------------------


def replace_attention(model: Transformer, cls: type[MultiHeadAttention], **kwargs) -> Transformer:
    """Swap every multi-head attention of ``model`` for an instance of ``cls`` holding
    the same weights."""
    for layer in [*model.encoder.layers, *model.decoder.layers]:
        for name in ("self_attn", "cross_attn"):
            old = getattr(layer, name, None)
            if isinstance(old, MultiHeadAttention):
                bias = old.in_proj.bias is not None
                new = cls(old.d_model, old.n_heads, old.dropout, bias=bias, **kwargs)
                new.load_state_dict(old.state_dict())
                setattr(layer, name, new.to(old.in_proj.weight.device))
    return model


MODEL_MISTAKES: dict[str, Callable[[TransformerConfig], Transformer]] = {
    translatable("correct (the package)"): lambda c: Transformer(c),
    translatable("1. heads split without transpose"): lambda c: replace_attention(
        Transformer(c), SplitHeadsWithoutTranspose
    ),
    translatable("3. scale by sqrt(d_model)"): lambda c: replace_attention(
        Transformer(c), WrongScaleAttention, score_dim="d_model"
    ),
    translatable("4. cross-attention shares self-attention"): lambda c: share_cross_attention(Transformer(c)),
    translatable("6. softmax twice"): lambda c: DoubleSoftmaxTransformer(c),
    translatable("7. fresh LayerNorm per call"): lambda c: fresh_layer_norm_per_call(Transformer(c)),
    translatable("9. mask multiplied into the scores"): lambda c: replace_attention(
        Transformer(c), MultiplyMaskAttention
    ),
}
"""Transformers with one mistake built in, by name (each starts with its mistake's
number); the first is the package's correct model. The chapter trains each of them."""


def build_model(mistake: str, config: TransformerConfig, seed: int = 0) -> Transformer:
    """The Transformer of :data:`MODEL_MISTAKES` named ``mistake``, initialised from
    ``seed`` (every variant starts from the same weights as the correct model where it
    has the same parameters)."""
    if mistake not in MODEL_MISTAKES:
        raise KeyError(f"unknown mistake {mistake!r}; choose one of {list(MODEL_MISTAKES)}")
    with seeded(seed):
        return MODEL_MISTAKES[mistake](config)


# ======================================================================================
# Part 2: the checks. Each raises AssertionError (or the faulty code's own error)
# unless the variant is right.
# ======================================================================================


def _generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def check_matches_per_head_attention(attention: MultiHeadAttention) -> None:
    """Multi-head attention must equal the paper's definition computed one head at a
    time: head ``h`` uses rows ``h * d_k .. (h + 1) * d_k`` of W_Q, W_K, W_V, attends on
    its own, and the heads are concatenated then projected."""
    d, H = attention.d_model, attention.n_heads
    dk = d // H
    g = _generator()
    query, memory = torch.randn(2, 5, d, generator=g), torch.randn(2, 7, d, generator=g)
    with torch.no_grad():
        out, _ = attention.eval()(query, memory, memory)  # (B, T, d)
        w_q, w_k, w_v = attention.in_proj.weight.chunk(3)  # (d, d) each
        b_q, b_k, b_v = attention.in_proj.bias.chunk(3)
        heads = []
        for h in range(H):
            rows = slice(h * dk, (h + 1) * dk)
            q = query @ w_q[rows].T + b_q[rows]  # (B, T, d_k)
            k = memory @ w_k[rows].T + b_k[rows]  # (B, S, d_k)
            v = memory @ w_v[rows].T + b_v[rows]  # (B, S, d_k)
            weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dk), dim=-1)
            heads.append(weights @ v)  # (B, T, d_k)
        expected = attention.out_proj(torch.cat(heads, dim=-1))  # (B, T, d)
    message = tr("multi-head attention != per-head attention")
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5, msg=message)


def check_scores_have_unit_variance(attention: MultiHeadAttention) -> None:
    """With unit-variance queries and keys, the scaled scores ``q . k / sqrt(d_k)`` must
    have variance about 1.

    The projections are set to the identity (on a copy) so that q and k are the
    unit-variance inputs themselves. The scores are read back from the weights:
    ``log(softmax(s)) = s - logsumexp(s)``, so each row of log-weights has the variance
    of its scores."""
    probe = copy.deepcopy(attention).eval()
    d = probe.d_model
    with torch.no_grad():
        probe.in_proj.weight.copy_(torch.eye(d).repeat(3, 1))
        probe.in_proj.bias.zero_()
        g = _generator()
        query = torch.randn(4, 32, d, generator=g)  # (B, T_q, d)
        key = torch.randn(4, 64, d, generator=g)  # (B, T_k, d)
        _, weights = probe(query, key, key, need_weights=True)  # (B, H, T_q, T_k)
    variance = float(weights.log().var(dim=-1).mean())
    assert 0.8 < variance < 1.25, tr("scaled scores have variance {variance:.3g}, not about 1", variance=variance)


def check_parameter_count(model: Transformer) -> None:
    """The model must have exactly the trainable parameters the architecture implies: no
    sub-layer missing, shared by accident or created outside the model's parameters."""
    got, expected = model.num_parameters(), sum(parameter_formula(model.config).values())
    assert got == expected, tr(
        "{got:,} parameters, the architecture implies {expected:,} ({difference:+,})",
        got=got,
        expected=expected,
        difference=got - expected,
    )


def check_feed_forward(ffn: nn.Module, d_model: int = 512, d_ff: int = 2048) -> None:
    """The feed-forward block maps ``(B, T, d_model)`` to ``(B, T, d_model)`` through
    ``d_ff`` hidden units: ``2 * d_model * d_ff + d_ff + d_model`` parameters."""
    x = torch.randn(2, 3, d_model, generator=_generator())  # (B, T, d_model)
    out = ffn(x)
    assert out.shape == x.shape, tr("output {output} != input {input}", output=tuple(out.shape), input=tuple(x.shape))
    got = sum(p.numel() for p in ffn.parameters())
    expected = 2 * d_model * d_ff + d_ff + d_model
    assert got == expected, tr(
        "{got:,} parameters, d_ff={d_ff} implies {expected:,}", got=got, d_ff=d_ff, expected=expected
    )


def check_loss_gradient(output_fn: Callable[[Tensor], Tensor]) -> None:
    """The gradient of ``F.cross_entropy`` with respect to the logits must be
    ``(softmax(logits) - one_hot) / N`` when the model hands its logits
    (``output_fn(logits)``) to the loss."""
    g = _generator()
    logits = torch.randn(6, 10, generator=g).requires_grad_()  # (N, V)
    target = torch.randint(0, 10, (6,), generator=g)  # (N,)
    F.cross_entropy(output_fn(logits), target).backward()
    expected = (torch.softmax(logits.detach(), -1) - F.one_hot(target, 10)) / 6
    message = tr("the loss does not see the logits")
    torch.testing.assert_close(logits.grad, expected, msg=message)


def check_runs_on_another_device(attend: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """Attention must run wherever its inputs are. Without a GPU, the ``meta`` device
    (shapes only, no data) applies the same rule as CUDA: a CPU tensor of shape ``(1,)``
    may not join the computation, a 0-dim scalar may."""
    device = "cuda" if torch.cuda.is_available() else "meta"
    q = torch.randn(2, 4, 5, 8, device=device)  # (B, H, T, d_k)
    out, _ = attend(q, q, q, causal_mask(5, device=device))
    assert out.device.type == device and out.shape == q.shape


def check_runs_on_the_cpu(norm: nn.Module, d_model: int = 16) -> None:
    """A module must run on the device its input is on. Every machine has a CPU, so
    start there: a hard-coded ``.cuda()`` fails on it, with or without a GPU."""
    x = torch.randn(2, 3, d_model, generator=_generator())  # (B, T, d_model) on the CPU
    out = norm(x)
    assert out.device == x.device, tr("input on {input}, output on {output}", input=x.device, output=out.device)


def check_padding_is_invisible(layer: EncoderLayer) -> None:
    """Whatever sits at padded positions must not change the outputs at real
    positions."""
    d = layer.norm1.normalized_shape[0]
    g = _generator()
    x = torch.randn(2, 6, d, generator=g)  # (B, S, d)
    mask = padding_mask_from_lengths(torch.tensor([6, 4]), 6)  # row 1: 2 padded
    changed = x.clone()
    changed[1, 4:] = torch.randn(2, d, generator=g)
    with torch.no_grad():
        out, _ = layer.eval()(x, mask)
        out_changed, _ = layer(changed, mask)
    message = tr("padding changed the real positions")
    torch.testing.assert_close(out[1, :4], out_changed[1, :4], msg=message)


def check_source_padding_is_invisible(make_cross_mask: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """Whatever the encoder puts at padded source positions must not reach the decoder's
    output.

    ``make_cross_mask(src, tgt, pad_id)`` builds the encoder-decoder attention mask.
    Source and target have the same length here, so a mask built from the wrong sequence
    still has a valid shape."""
    model = small_model()
    src = torch.tensor([[3, 4, 5, 6, 7, 8], [3, 4, 5, 6, 0, 0]])  # row 1: 2 padded
    tgt = torch.tensor([[1, 9, 9, 9, 9, 9], [1, 9, 9, 9, 9, 0]])  # row 1: 1 padded
    with torch.no_grad():
        memory, _ = model.encode(src)  # (B, S, d)
        mask = make_cross_mask(src, tgt, 0)
        out = model.decode(tgt, memory, src_mask=mask)
        changed = memory.masked_fill((src == 0)[..., None], 5.0)  # only at padding
        out_changed = model.decode(tgt, changed, src_mask=mask)
    message = tr("source padding reached the decoder")
    torch.testing.assert_close(out, out_changed, msg=message)


def check_decoder_is_causal(model: Transformer) -> None:
    """The output at position i may depend on target tokens 0..i only: changing the
    tokens from position 4 on, or cutting them off, must leave the outputs at positions
    0..3 unchanged (greedy decoding relies on the second)."""
    g = _generator()
    V = model.config.tgt_vocab_size
    src = torch.randint(1, model.config.src_vocab_size, (2, 6), generator=g)
    tgt = torch.randint(1, V, (2, 7), generator=g)
    changed = tgt.clone()
    changed[:, 4:] = torch.randint(1, V, (2, 3), generator=g)
    with torch.no_grad():
        logits = model.eval()(src, tgt)  # (B, T, V)
        logits_changed, logits_cut = model(src, changed), model(src, tgt[:, :4])
    message = tr("future tokens changed earlier outputs")
    torch.testing.assert_close(logits[:, :4], logits_changed[:, :4], msg=message)
    message = tr("earlier outputs change when the sequence is cut short")
    torch.testing.assert_close(logits[:, :4], logits_cut, msg=message)


def check_padding_mask_hides_pad_keys(make_mask: Callable[[Tensor, int], Tensor]) -> None:
    """With the mask that ``make_mask(tokens, pad_id)`` builds, the package's attention
    must give padding keys weight 0 and real keys all the weight."""
    tokens = torch.tensor([[4, 5, 6, 0, 0], [4, 5, 6, 7, 8]])
    q = torch.randn(2, 1, 5, 8, generator=_generator())  # (B, H, T, d_k)
    mask = make_mask(tokens, 0)
    _, weights = scaled_dot_product_attention(q, q, q, mask)  # (B, H, T, T)
    pad = (tokens == 0)[:, None, None, :].expand_as(weights)
    assert float(weights[pad].sum()) == 0.0, tr("padding keys get weight")
    message = tr("weights of real keys do not sum to 1")
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 1, 5), msg=message)


def check_causal_mask_builder(make_causal: Callable[[int], Tensor]) -> None:
    """With the mask ``make_causal(T)``, the package's attention must give every future
    key weight 0."""
    q = torch.randn(1, 2, 5, 8, generator=_generator())  # (B, H, T, d_k)
    _, weights = scaled_dot_product_attention(q, q, q, make_causal(5))  # (B, H, T, T)
    assert float(weights.triu(diagonal=1).sum()) == 0.0, tr("future keys get weight")


def check_query_with_nothing_to_see(attend: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """A query whose keys are all hidden (e.g. cross-attention on an empty, fully padded
    source) must return a finite result that does not depend on the hidden values."""
    g = _generator()
    q, v = torch.randn(1, 1, 3, 4, generator=g), torch.randn(1, 1, 3, 4, generator=g)
    mask = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    mask[..., 0, :] = False  # query 0 may see nothing
    out, _ = attend(q, q, v, mask)
    out_changed, _ = attend(q, q, v + 1.0, mask)
    assert torch.isfinite(out).all(), tr("a query with no visible key gives {values}", values=out[0, 0, 0].tolist())
    message = tr("hidden values leak into an empty row")
    torch.testing.assert_close(out[..., 0, :], out_changed[..., 0, :], msg=message)


def check_runs_in_half_precision(attend: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """Masked attention must run in float16 (mixed-precision training) and give finite
    outputs."""
    q = torch.randn(1, 2, 5, 8, generator=_generator()).half()  # (B, H, T, d_k)
    out, _ = attend(q, q, q, causal_mask(5))
    assert torch.isfinite(out).all(), tr("non-finite outputs in float16")


def check_matches_torch_layer_norm(norm: nn.Module, d_model: int = 512) -> None:
    """A layer norm written by hand must compute what ``nn.LayerNorm`` computes (both
    start with gain 1, bias 0)."""
    x = 3.0 * torch.randn(4, d_model, generator=_generator()) + 1.0
    with torch.no_grad():
        expected = F.layer_norm(x, (d_model,))
        torch.testing.assert_close(norm(x), expected, msg=tr("not nn.LayerNorm"))


def check_sinusoidal_table(table_fn: Callable[[int, int], Tensor]) -> None:
    """The table must match the paper's formula, PE[pos, 2i] = sin(pos / 10000^(2i/d)),
    PE[pos, 2i+1] = cos(...)."""
    d = 16
    table = table_fn(50, d)
    for pos, i in [(1, 0), (7, 3), (49, 7)]:
        angle = pos / 10000 ** (2 * i / d)
        got = (float(table[pos, 2 * i]), float(table[pos, 2 * i + 1]))
        expected = (math.sin(angle), math.cos(angle))
        assert np.allclose(got, expected, atol=1e-6), tr(
            "PE[{pos}, {start}:{end}] = ({got0:.4f}, {got1:.4f}), paper: ({expected0:.4f}, {expected1:.4f})",
            pos=pos,
            start=2 * i,
            end=2 * i + 2,
            got0=got[0],  # 4 decimals: the same on every CPU
            got1=got[1],
            expected0=expected[0],
            expected1=expected[1],
        )


def check_loss_ignores_padding(loss_fn: Callable[[Tensor, Tensor], Tensor], pad_id: int = PAD_ID) -> None:
    """Appending padding to a batch must not change its loss: ``loss_fn(logits (B, T,
    V), target (B, T))`` must average over the real tokens only."""
    g = _generator()
    logits = torch.randn(2, 4, 7, generator=g)  # (B, T, V)
    target = torch.randint(1, 7, (2, 4), generator=g)  # (B, T), no padding
    padded_logits = torch.cat([logits, torch.randn(2, 3, 7, generator=g)], dim=1)
    padded_target = F.pad(target, (0, 3), value=pad_id)  # 3 padding tokens per row
    message = tr("padding changed the loss")
    torch.testing.assert_close(loss_fn(padded_logits, padded_target), loss_fn(logits, target), msg=message)


def check_snippet_runs(code: str) -> None:
    """Code printed in a tutorial must run as printed (after :data:`SNIPPET_SETUP`)."""
    namespace: dict = {}
    exec(SNIPPET_SETUP, namespace)
    try:
        exec(code, namespace)
    except Exception as error:
        raise AssertionError(f"{type(error).__name__}: {error}") from error


def small_model() -> Transformer:
    """A seeded, untrained two-head model (d_model 16, 1 + 1 layers, 10 tokens): big
    enough for every model-level check, small enough that each runs in milliseconds."""
    config = TransformerConfig(
        src_vocab_size=10,
        tgt_vocab_size=10,
        d_model=16,
        n_heads=2,
        d_ff=32,
        n_encoder_layers=1,
        n_decoder_layers=1,
        dropout=0.0,
    )
    with seeded(0):
        return Transformer(config).eval()


# ======================================================================================
# The catalogue: every mistake, its faulty variant(s), the correct version and the check
# ======================================================================================


def _attention(cls: type[MultiHeadAttention] = MultiHeadAttention, d_model: int = 64, n_heads: int = 8, **kw):
    with seeded(0):
        return cls(d_model, n_heads, **kw)


def _model_with(cls: type[MultiHeadAttention]) -> Transformer:
    return replace_attention(small_model(), cls)


def _encoder_layer(cls: type[EncoderLayer]) -> EncoderLayer:
    with seeded(0):
        return cls(16, 2, 32, dropout=0.0)


def cross_mask_from_source(src: Tensor, tgt: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """The correct counterpart of :func:`cross_mask_from_target`: the keys of
    cross-attention are source positions, so the mask comes from the source, as the
    package's :class:`~transformer.Transformer` builds it. ``(B, 1, 1, S)``."""
    return padding_mask(src, pad_id)


@dataclass(frozen=True)
class Case:
    """One faulty variant of one mistake: ``check(faulty())`` fails with ``error``,
    ``check(correct())`` passes."""

    mistake: int
    name: str
    faulty: Callable[[], object]
    correct: Callable[[], object]
    check: Callable[[object], None]
    error: type[Exception] | tuple[type[Exception], ...] = AssertionError


CASES: list[Case] = [
    Case(
        1,
        translatable("heads split without transpose"),
        lambda: _attention(SplitHeadsWithoutTranspose),
        lambda: _attention(),
        check_matches_per_head_attention,
    ),
    Case(
        1,
        translatable("heads split without transpose (whole model)"),
        lambda: _model_with(SplitHeadsWithoutTranspose),
        small_model,
        check_decoder_is_causal,
    ),
    Case(
        2,
        translatable("`if mask:` on a tensor"),
        lambda: _model_with(IfMaskAttention),
        small_model,
        check_decoder_is_causal,
        RuntimeError,
    ),
    Case(
        3,
        translatable("scale by sqrt(d_model)"),
        lambda: _attention(WrongScaleAttention, 512, 8, score_dim="d_model"),
        lambda: _attention(MultiHeadAttention, 512, 8),
        check_scores_have_unit_variance,
    ),
    Case(
        3,
        translatable("scale by sqrt(d_k // h)"),
        lambda: _attention(WrongScaleAttention, 512, 8, score_dim="d_k // n_heads"),
        lambda: _attention(MultiHeadAttention, 512, 8),
        check_scores_have_unit_variance,
    ),
    Case(
        4,
        translatable("cross-attention shares self-attention"),
        lambda: share_cross_attention(small_model()),
        small_model,
        check_parameter_count,
    ),
    Case(
        5,
        translatable("second convolution declared (d_model, d_ff)"),
        lambda: ConvFeedForwardWrongShape(512, 2048),
        lambda: FeedForward(512, 2048),
        check_feed_forward,
        RuntimeError,
    ),
    Case(
        5,
        translatable("ffn_dim=2018"),
        lambda: FeedForward(512, FFN_DIM_TYPO),
        lambda: FeedForward(512, 2048),
        check_feed_forward,
    ),
    Case(
        6,
        translatable("softmax in the model, log-softmax in the loss"),
        lambda: double_softmax_logits,
        lambda: lambda logits: logits,
        check_loss_gradient,
    ),
    Case(
        7,
        translatable("fresh LayerNorm per call"),
        lambda: fresh_layer_norm_per_call(small_model()),
        small_model,
        check_parameter_count,
    ),
    Case(
        7,
        translatable("hard-coded .cuda()"),
        lambda: CudaLayerNormPerCall(16),
        lambda: nn.LayerNorm(16),
        check_runs_on_the_cpu,
        (AssertionError, RuntimeError),  # no CUDA at all / a GPU, input on the CPU
    ),
    Case(
        7,
        translatable("scale as a 1-element CPU tensor"),
        lambda: attention_with_tensor_scale,
        lambda: scaled_dot_product_attention,
        check_runs_on_another_device,
        RuntimeError,
    ),
    Case(
        8,
        translatable("cross-attention mask from the target"),
        lambda: cross_mask_from_target,
        lambda: cross_mask_from_source,
        check_source_padding_is_invisible,
    ),
    Case(
        8,
        translatable("the function padding_mask passed as the mask"),
        lambda: _encoder_layer(EncoderLayerPassesFunction),
        lambda: _encoder_layer(EncoderLayer),
        check_padding_is_invisible,
        TypeError,
    ),
    Case(
        9,
        translatable("mask multiplied into the scores"),
        lambda: _model_with(MultiplyMaskAttention),
        small_model,
        check_decoder_is_causal,
    ),
    Case(
        10,
        translatable("True = pad mask given to True = keep code"),
        lambda: padding_mask_true_is_pad,
        lambda: padding_mask,
        check_padding_mask_hides_pad_keys,
    ),
    Case(
        10,
        translatable("uint8 subsequent mask"),
        lambda: uint8_subsequent_mask,
        lambda: causal_mask,
        check_causal_mask_builder,
        TypeError,  # the package's attention refuses non-bool masks
    ),
    Case(
        11,
        translatable("fill -1e9 in float16"),
        lambda: partial(attention_with_fill, fill=-1e9),
        lambda: scaled_dot_product_attention,
        check_runs_in_half_precision,
        RuntimeError,
    ),
    Case(
        11,
        translatable("fill -1e18 in float16"),
        lambda: partial(attention_with_fill, fill=-1e18),
        lambda: scaled_dot_product_attention,
        check_runs_in_half_precision,
        RuntimeError,
    ),
    Case(
        11,
        translatable("fill -inf, query with no visible key"),
        lambda: partial(attention_with_fill, fill=float("-inf")),
        lambda: scaled_dot_product_attention,
        check_query_with_nothing_to_see,
    ),
    Case(
        11,
        translatable("fill -1e9, query with no visible key"),
        lambda: partial(attention_with_fill, fill=-1e9),
        lambda: scaled_dot_product_attention,
        check_query_with_nothing_to_see,
    ),
    Case(
        12,
        translatable("LayerNorm with std + eps"),
        lambda: StdPlusEpsLayerNorm(512),
        lambda: nn.LayerNorm(512),
        check_matches_torch_layer_norm,
    ),
    Case(
        13,
        translatable("sinusoid base 1000"),
        lambda: sinusoidal_table_base_1000,
        lambda: sinusoidal_table,
        check_sinusoidal_table,
    ),
    Case(
        14,
        translatable("undefined seq_embedding"),
        lambda: SNIPPETS["undefined seq_embedding"][0],
        lambda: SNIPPETS["undefined seq_embedding"][1],
        check_snippet_runs,
    ),
    Case(
        14,
        translatable("numpy and torch concatenated"),
        lambda: SNIPPETS["numpy and torch concatenated"][0],
        lambda: SNIPPETS["numpy and torch concatenated"][1],
        check_snippet_runs,
    ),
    Case(
        14,
        translatable("sizes read from globals"),
        lambda: _attention(GlobalSizesAttention, 512, 4),
        lambda: _attention(MultiHeadAttention, 512, 4),
        check_matches_per_head_attention,
    ),
]
"""Every faulty variant with the check that catches it. ``np.pow`` (14) is left out: it
fails only with numpy < 2.0."""


def run_check(check: Callable[[object], None], variant: object) -> tuple[bool, str]:
    """Run ``check`` on ``variant``: ``(True, "passes")`` or ``(False, "ErrorType:
    message")`` (first line)."""
    try:
        check(variant)
    except Exception as error:  # the faulty variants fail in many ways
        lines = str(error).strip().splitlines()
        return False, f"{type(error).__name__}: {lines[0] if lines else ''}"
    return True, "passes"
