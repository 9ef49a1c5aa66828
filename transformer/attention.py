"""Scaled dot-product attention and multi-head attention."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .masks import check_mask


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0
) -> tuple[Tensor, Tensor]:
    """softmax(q k^T / sqrt(d_k)) v, written out so every step can be inspected.

    Shapes: ``q (..., T_q, d_k)``, ``k (..., T_k, d_k)``, ``v (..., T_k, d_v)``; ``mask`` is bool (``True`` = may
    attend), broadcastable to ``(..., T_q, T_k)``. Returns ``(output (..., T_q, d_v), weights (..., T_q, T_k))``;
    the weights are taken before dropout.

    Hidden scores are filled with the most negative number of their dtype (not a hard-coded -1e9, which overflows in
    float16), and a query row with no visible key gets zero weights instead of NaN or a uniform average.
    """
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(v.dtype)  # (..., T_q, T_k)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    attended = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return attended @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


@dataclass
class KVCache:
    """Projected keys and values kept between decoding steps, ``(B, H, T_k, d_k)`` each.

    Self-attention appends the new position's key and value at every step; cross-attention (``static=True``)
    projects the encoder memory once and reuses it.
    """

    static: bool = False
    k: Tensor | None = None
    v: Tensor | None = None

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search reorders hypotheses)."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into heads, attend in each head, concatenate, project.

    The query, key and value projections are stacked in one ``(3 * d_model, d_model)`` matrix, as in
    ``nn.MultiheadAttention``, so self-attention computes all three with one matrix product.

    With ``need_weights=False`` it calls PyTorch's fused ``F.scaled_dot_product_attention``; with ``need_weights=True``
    it takes the readable :func:`scaled_dot_product_attention` and also returns the ``(B, H, T_q, T_k)`` weights.
    Both agree (tested). ``head_mask`` (``(H,)``, 1 keeps a head, 0 silences it) is for ablation studies.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads; got d_model={d_model}, n_heads={n_heads}"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be a probability in [0, 1); got {dropout!r}")
        self.d_model, self.n_heads, self.d_k, self.dropout = d_model, n_heads, d_model // n_heads, dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)  # rows: W_Q, W_K, W_V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
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
        need_weights: bool = False,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """``query (B, T_q, d_model)``, ``key``/``value (B, T_k, d_model)``, ``mask`` bool broadcastable to
        ``(B, H, T_q, T_k)`` -> ``(output (B, T_q, d_model), weights (B, H, T_q, T_k) or None)``."""
        self._check_inputs(query, key, value)
        B, T_q, _ = query.shape
        q, k, v = self._project(query, key, value, cache)  # (B, H, T, d_k) each
        if mask is not None:
            check_mask(mask, "mask", B, T_q, k.size(2))
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)  # (B, H, T_q, d_k)
        else:
            out, weights = self._fused_attention(q, k, v, mask, dropout_p), None
        if self.head_mask is not None:
            out = out * self.head_mask.to(out.dtype).view(1, -1, 1, 1)
        out = out.transpose(1, 2).reshape(B, T_q, self.d_model)  # (B, T_q, H * d_k)
        return self.out_proj(out), weights

    def _project(
        self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        if cache is not None and cache.static and cache.k is not None:
            return self._split(self._linear(query, 0, 1)), cache.k, cache.v
        if query is key and key is value:
            q, k, v = self.in_proj(query).chunk(3, dim=-1)  # (B, T, d_model) each
        elif key is value:
            q = self._linear(query, 0, 1)
            k, v = self._linear(key, 1, 3).chunk(2, dim=-1)
        else:
            q, k, v = self._linear(query, 0, 1), self._linear(key, 1, 2), self._linear(value, 2, 3)
        q, k, v = self._split(q), self._split(k), self._split(v)  # (B, H, T, d_k)
        if cache is not None:
            if not cache.static and cache.k is not None:
                k, v = torch.cat([cache.k, k], dim=2), torch.cat([cache.v, v], dim=2)  # (B, H, T_past + T, d_k)
            cache.k, cache.v = k, v
        return q, k, v

    def _linear(self, x: Tensor, start: int, stop: int) -> Tensor:
        """Apply rows ``start * d_model : stop * d_model`` of the stacked projection (0: Q, 1: K, 2: V)."""
        rows = slice(start * self.d_model, stop * self.d_model)
        bias = None if self.in_proj.bias is None else self.in_proj.bias[rows]
        return F.linear(x, self.in_proj.weight[rows], bias)

    def _split(self, x: Tensor) -> Tensor:
        """``(B, T, d_model)`` -> ``(B, H, T, d_k)``: view the last axis as heads, then bring heads forward."""
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)  # (B, H, T, d_k)

    @staticmethod
    def _fused_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float) -> Tensor:
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
        # A row with no visible key would be NaN: let it see everything, then zero its output.
        has_key = mask.any(dim=-1, keepdim=True)  # (B|1, 1|H, T_q|1, 1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | ~has_key, dropout_p=dropout_p)
        return out.masked_fill(~has_key, 0.0)  # (B, H, T_q, d_k)

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        for name, x in (("query", query), ("key", key), ("value", value)):
            if not isinstance(x, Tensor) or x.dim() != 3 or x.size(-1) != self.d_model:
                got = f"shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
                raise ValueError(f"{name} must have shape (batch, seq_len, d_model={self.d_model}); got {got}")
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"key and value must share (batch, seq_len); got {tuple(key.shape)} and {tuple(value.shape)}")
        if query.size(0) != key.size(0):
            raise ValueError(f"query and key must have the same batch size; got {query.size(0)} and {key.size(0)}")
