"""Scaled dot-product attention and multi-head attention."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checks import (
    check_attention_inputs,
    check_attention_module_inputs,
    check_bool,
    check_heads,
    check_mask,
    check_probability,
    checking_inputs,
)


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0
) -> tuple[Tensor, Tensor]:
    """softmax(q k^T / sqrt(d_k)) v, written out so every step can be inspected.

    Shapes: ``q (..., T_q, d_k)``, ``k (..., T_k, d_k)``, ``v (..., T_k, d_v)``; ``mask`` is bool (``True`` = may
    attend), broadcastable to ``(..., T_q, T_k)``. Returns ``(output (..., T_q, d_v), weights (..., T_q, T_k))``;
    the weights are taken before dropout.

    Hidden scores are filled with the most negative number of their dtype (not a hard-coded -1e9, which overflows in
    float16), and a query row with no visible key gets zero weights instead of NaN or a uniform average. Half
    precision (float16, bfloat16) takes the softmax in float32, as PyTorch's fused kernels do; float32 and float64
    keep their own precision.
    """
    if checking_inputs():
        check_attention_inputs(q, k, v, mask)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    upcast = torch.float32 if scores.dtype in (torch.float16, torch.bfloat16) else None
    weights = torch.softmax(scores, dim=-1, dtype=upcast).to(v.dtype)  # (..., T_q, T_k)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    attended = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return attended @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


def _fused_mask(mask: Tensor) -> tuple[Tensor, Tensor | None]:
    """``mask`` made safe for ``F.scaled_dot_product_attention``, which gives NaN for a query row with no visible key:
    such rows may see every key (any finite answer will do) and are zeroed afterwards, where ``no_key`` is True.
    Returns ``(attn_mask, no_key (B|1, 1|H, T_q|1, 1))``."""
    no_key = ~mask.any(dim=-1, keepdim=True)
    return mask | no_key, no_key


@dataclass
class KVCache:
    """Projected keys and values kept between decoding steps, ``(B, H, T_k, d_k)`` each.

    Self-attention writes each new position's key and value into buffers allocated for ``capacity`` positions
    (twice as many when they run out), so a step copies one position, not the whole past: ``k`` and ``v`` are
    ``(B, H, capacity, d_k)``, of which the first ``length`` positions are filled. Cross-attention (``static=True``)
    projects the encoder memory once and reuses it, and prepares its key mask once too (:meth:`fused_mask`).
    Made for inference: the buffers are written in place, so gradients cannot flow back through several steps.
    """

    static: bool = False
    capacity: int = 0
    k: Tensor | None = None
    v: Tensor | None = None
    length: int = 0
    _mask: tuple[Tensor, Tensor, Tensor | None] | None = field(default=None, repr=False)  # (mask, attn_mask, no_key)

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Write ``k``, ``v (B, H, T, d_k)`` after the cached positions; return every cached position,
        ``(B, H, length, d_k)`` each."""
        start, end = self.length, self.length + k.size(2)
        if self.k is None or end > self.k.size(2):
            self._grow(k, v, max(self.capacity, 2 * end))
        self.k[:, :, start:end], self.v[:, :, start:end] = k, v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]

    def fused_mask(self, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        """:func:`_fused_mask` of a static cache's key mask, computed once and reused while the same mask comes back
        (decoding passes one source mask at every step). ``no_key`` is ``None`` when every row sees a key."""
        if self._mask is None or self._mask[0] is not mask:
            attn_mask, no_key = _fused_mask(mask)
            self._mask = (mask, attn_mask, no_key if bool(no_key.any()) else None)
        return self._mask[1], self._mask[2]

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search reorders hypotheses)."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)
        self._mask = None  # prepared for the old rows

    def _grow(self, k: Tensor, v: Tensor, capacity: int) -> None:
        """Allocate buffers for ``capacity`` positions, keeping the cached ones."""
        old_k, old_v = self.k, self.v
        self.k = k.new_empty(*k.shape[:2], capacity, k.size(3))  # (B, H, capacity, d_k)
        self.v = v.new_empty(*v.shape[:2], capacity, v.size(3))
        if old_k is not None:
            self.k[:, :, : self.length] = old_k[:, :, : self.length]
            self.v[:, :, : self.length] = old_v[:, :, : self.length]


AttentionFunction = Callable[[Tensor, Tensor, Tensor, Tensor | None, float], tuple[Tensor, Tensor | None]]
"""One attention step over every head at once: ``(q, k, v (B, H, T, d_k), mask, dropout_p) -> (output (B, H, T_q,
d_k), weights (B, H, T_q, T_k) or None)``, as :func:`scaled_dot_product_attention` computes it."""


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into heads, attend in each head, concatenate, project.

    The query, key and value projections are stacked in one ``(3 * d_model, d_model)`` matrix, as in
    ``nn.MultiheadAttention``, so self-attention computes all three with one matrix product.

    The attention step is pluggable. By default, with ``need_weights=False`` it calls PyTorch's fused
    ``F.scaled_dot_product_attention``; with ``need_weights=True`` it takes the readable
    :func:`scaled_dot_product_attention` and also returns the ``(B, H, T_q, T_k)`` weights. Both agree (tested).
    ``attention`` replaces both with another :data:`AttentionFunction` (the book's pitfall variants plug faulty ones
    in). ``head_mask`` (``(H,)``, 1 keeps a head, 0 silences it) is for ablation studies.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        attention: AttentionFunction | None = None,
    ):
        super().__init__()
        check_heads(d_model, n_heads)
        check_probability("dropout", dropout)
        check_bool("bias", bias)
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)  # rows: W_Q, W_K, W_V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.attention = attention  # None: the fused kernel, or the readable function when weights are asked for
        self.head_mask: Tensor | None = None
        nn.init.xavier_uniform_(self.in_proj.weight)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if bias:
            nn.init.zeros_(self.in_proj.bias)
            nn.init.zeros_(self.out_proj.bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        *,
        need_weights: bool = False,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """``query (B, T_q, d_model)``, ``key``/``value (B, T_k, d_model)``, ``mask`` bool broadcastable to
        ``(B, H, T_q, T_k)`` -> ``(output (B, T_q, d_model), weights (B, H, T_q, T_k) or None)``."""
        if checking_inputs():
            check_attention_module_inputs(query, key, value, self.d_model)
        B, T_q, _ = query.shape
        q, k, v = self._project(query, key, value, cache)  # (B, H, T, d_k) each
        if mask is not None and checking_inputs():
            check_mask(mask, "mask", B, T_q, k.size(2), heads=self.n_heads)
        dropout_p = self.dropout if self.training else 0.0
        if self.attention is not None:
            out, weights = self.attention(q, k, v, mask, dropout_p)  # (B, H, T_q, d_k)
        elif need_weights:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
        else:
            out = self._fused_attention(q, k, v, mask, dropout_p, cache)
            weights = None
        if self.head_mask is not None:
            out = out * self.head_mask.to(out.dtype).view(1, -1, 1, 1)
        return self.out_proj(self.merge_heads(out)), weights if need_weights else None  # (B, T_q, d_model)

    def _project(
        self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        if cache is not None and cache.static and cache.k is not None:
            return self.split_heads(self._linear(query, 0, 1)), cache.k, cache.v
        if query is key and key is value:
            q, k, v = self.in_proj(query).chunk(3, dim=-1)  # (B, T, d_model) each
        elif key is value:
            q = self._linear(query, 0, 1)
            k, v = self._linear(key, 1, 3).chunk(2, dim=-1)
        else:
            q, k, v = self._linear(query, 0, 1), self._linear(key, 1, 2), self._linear(value, 2, 3)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)  # (B, H, T, d_k)
        if cache is not None and cache.static:
            cache.k, cache.v, cache.length = k, v, k.size(2)  # the memory's keys and values, kept for every step
        elif cache is not None:
            k, v = cache.append(k, v)  # (B, H, T_past + T, d_k): the new positions after the cached ones
        return q, k, v

    def _linear(self, x: Tensor, start: int, stop: int) -> Tensor:
        """Apply rows ``start * d_model : stop * d_model`` of the stacked projection (0: Q, 1: K, 2: V)."""
        rows = slice(start * self.d_model, stop * self.d_model)
        bias = None if self.in_proj.bias is None else self.in_proj.bias[rows]
        return F.linear(x, self.in_proj.weight[rows], bias)

    def split_heads(self, x: Tensor) -> Tensor:
        """``(B, T, d_model)`` -> ``(B, H, T, d_k)``: view the last axis as heads, then bring heads forward."""
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, H, T, d_k)

    def merge_heads(self, x: Tensor) -> Tensor:
        """``(B, H, T, d_k)`` -> ``(B, T, d_model)``: bring positions forward again, then concatenate the heads."""
        B, H, T, d_k = x.shape
        return x.transpose(1, 2).reshape(B, T, H * d_k)  # (B, T, d_model)

    @staticmethod
    def _fused_attention(
        q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float, cache: KVCache | None = None
    ) -> Tensor:
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
        # A row with no visible key would be NaN: let it see everything, then zero its output. A static cache
        # prepares its (constant) key mask once per decoding run and skips the zeroing if every row sees a key.
        attn_mask, no_key = cache.fused_mask(mask) if cache is not None and cache.static else _fused_mask(mask)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
        return out if no_key is None else out.masked_fill(no_key, 0.0)  # (B, H, T_q, d_k)


@contextmanager
def masked_heads(modules: Sequence[MultiHeadAttention], head_masks: Sequence[Tensor] | Tensor) -> Iterator[None]:
    """Give attention module ``i`` the head mask ``head_masks[i]`` (``(H,)``: 1 keeps a head, 0 silences it) inside
    the block, restoring the masks they had before (ablation studies, and the exported graphs' head-mask inputs).
    ``head_masks`` is a list of ``(H,)`` tensors or one ``(len(modules), H)`` tensor."""
    previous = [module.head_mask for module in modules]
    try:
        for module, mask in zip(modules, head_masks, strict=True):
            module.head_mask = mask
        yield
    finally:
        for module, mask in zip(modules, previous, strict=True):
            module.head_mask = mask
