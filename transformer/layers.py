"""The position-wise feed-forward network and the encoder and decoder layers.

Each sub-layer sits in a residual block. Post-norm (the paper, ``norm_first=False``): ``x = norm(x + sublayer(x))``.
Pre-norm (``norm_first=True``, as in The Annotated Transformer, OpenNMT and most modern models):
``x = x + sublayer(norm(x))``, which keeps an identity path from input to output and trains without warm-up tricks.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .attention import KVCache, MultiHeadAttention
from .checks import check_device, checking_inputs

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class FeedForward(nn.Module):
    """``linear2(dropout(activation(linear1(x))))``, applied to every position independently: the same as two
    1x1 convolutions over the sequence, ``d_model -> d_ff -> d_model``."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {tuple(_ACTIVATIONS)}; got {activation!r}")
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = _ACTIVATIONS[activation]
        for linear in (self.linear1, self.linear2):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))  # (B, T, d_ff) -> (B, T, d_model)


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward network, each in a residual block."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """``x (B, S, d_model)``, ``mask`` broadcastable to ``(B, H, S, S)`` -> ``(x, weights (B, H, S, S) or None)``."""
        if checking_inputs():
            for name, tensor in (("x", x), ("mask", mask)):
                check_device(tensor, name, next(self.parameters()).device)
        if self.norm_first:
            attended, weights = self._self_attention(self.norm1(x), mask, need_weights)
            x = x + attended
            x = x + self.dropout2(self.feed_forward(self.norm2(x)))
        else:
            attended, weights = self._self_attention(x, mask, need_weights)
            x = self.norm1(x + attended)
            x = self.norm2(x + self.dropout2(self.feed_forward(x)))
        return x, weights  # (B, S, d_model)

    def _self_attention(self, x: Tensor, mask: Tensor | None, need_weights: bool) -> tuple[Tensor, Tensor | None]:
        attended, weights = self.self_attn(x, x, x, mask, need_weights)
        return self.dropout1(attended), weights


class DecoderLayer(nn.Module):
    """Masked self-attention over the target, cross-attention to the encoder memory, then the feed-forward network."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        y: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        need_weights: bool = False,
        cache: tuple[KVCache, KVCache] | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """``y (B, T, d_model)``, ``memory (B, S, d_model)`` -> ``(y, self weights (B, H, T, T), cross weights
        (B, H, T, S))``; weights are ``None`` unless ``need_weights``. ``cache`` holds (self, cross) keys and values
        for incremental decoding, where ``y`` is only the new positions."""
        if checking_inputs():
            for name, tensor in (("y", y), ("memory", memory), ("src_mask", src_mask), ("tgt_mask", tgt_mask)):
                check_device(tensor, name, next(self.parameters()).device)
        self_cache, cross_cache = cache if cache is not None else (None, None)
        if self.norm_first:
            attended, self_weights = self._self_attention(self.norm1(y), tgt_mask, need_weights, self_cache)
            y = y + attended
            attended, cross_weights = self._cross_attention(self.norm2(y), memory, src_mask, need_weights, cross_cache)
            y = y + attended
            y = y + self.dropout3(self.feed_forward(self.norm3(y)))
        else:
            attended, self_weights = self._self_attention(y, tgt_mask, need_weights, self_cache)
            y = self.norm1(y + attended)
            attended, cross_weights = self._cross_attention(y, memory, src_mask, need_weights, cross_cache)
            y = self.norm2(y + attended)
            y = self.norm3(y + self.dropout3(self.feed_forward(y)))
        return y, self_weights, cross_weights  # (B, T, d_model)

    def _self_attention(
        self, y: Tensor, mask: Tensor | None, need_weights: bool, cache: KVCache | None
    ) -> tuple[Tensor, Tensor | None]:
        attended, weights = self.self_attn(y, y, y, mask, need_weights, cache)
        return self.dropout1(attended), weights

    def _cross_attention(
        self, y: Tensor, memory: Tensor, mask: Tensor | None, need_weights: bool, cache: KVCache | None
    ) -> tuple[Tensor, Tensor | None]:
        attended, weights = self.cross_attn(y, memory, memory, mask, need_weights, cache)
        return self.dropout2(attended), weights
