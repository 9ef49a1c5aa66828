"""The faulty variants: every mistake of the chapter "Pitfalls" (book/12_pitfalls.ipynb), reproduced on purpose.

Everything in this module is DELIBERATELY WRONG. Each faulty variant is the package's own code with the smallest
change that reproduces one mistake found in public code and tutorials, and in the many blog posts that copy them: the
widely copied PyTorch Transformer of github.com/luozhouyang/machine-learning-notes, graykode's nlp-tutorial
(github.com/graykode/nlp-tutorial), the Keras implementation github.com/Lsdefine/attention-is-all-you-need-keras,
OpenNMT-py and The Annotated Transformer. Each docstring names its source. Never use them in a model you mean to
train. :data:`MODEL_MISTAKES` and :func:`build_model` give whole Transformers with one mistake built in.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.attention import AttentionFunction, MultiHeadAttention
from transformer.config import TransformerConfig
from transformer.layers import DecoderLayer, EncoderLayer
from transformer.masks import padding_mask
from transformer.model import Transformer
from transformer.tokens import PAD_ID
from transformer.utils import seeded
from transformer_book.i18n import translatable


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
