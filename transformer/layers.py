"""The position-wise feed-forward network and the encoder and decoder layers.

Each sub-layer sits in a residual block. Post-norm (the paper, ``norm_first=False``): ``x = norm(x + sublayer(x))``.
Pre-norm (``norm_first=True``, as in The Annotated Transformer, OpenNMT and most modern models):
``x = x + sublayer(norm(x))``, which keeps an identity path from input to output and trains without warm-up tricks.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn

from .attention import KVCache, MultiHeadAttention
from .checks import check_choice, check_device, checking_inputs
from .config import TransformerConfig

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class FeedForward(nn.Module):
    """``linear2(dropout(activation(linear1(x))))``, applied to every position independently: the same as two
    1x1 convolutions over the sequence, ``d_model -> d_ff -> d_model``."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        check_choice("activation", activation, tuple(_ACTIVATIONS))
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = _ACTIVATIONS[activation]
        for linear in (self.linear1, self.linear2):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))  # (B, T, d_ff) -> (B, T, d_model)


class ResidualLayer(nn.Module):
    """What the encoder and decoder layers share: every sub-layer sits in the same residual block, wired here once."""

    def __init__(self, norm_first: bool):
        super().__init__()
        self.norm_first = norm_first

    @classmethod
    def from_config(cls, config: TransformerConfig) -> ResidualLayer:
        """The layer with ``config``'s sizes and choices (how the encoder and decoder stacks build theirs)."""
        c = config
        return cls(c.d_model, c.n_heads, c.d_ff, c.dropout, c.activation, c.norm_first, c.layer_norm_eps)

    def residual(
        self, x: Tensor, norm: nn.Module, dropout: nn.Module, sublayer: Callable[[Tensor], tuple[Tensor, Tensor | None]]
    ) -> tuple[Tensor, Tensor | None]:
        """``sublayer`` (returning ``(output, attention weights or None)``) in a residual block: post-norm
        ``norm(x + dropout(sublayer(x)))`` (the paper), or pre-norm ``x + dropout(sublayer(norm(x)))``."""
        if self.norm_first:
            out, weights = sublayer(norm(x))
            return x + dropout(out), weights
        out, weights = sublayer(x)
        return norm(x + dropout(out)), weights  # (B, T, d_model)

    def check_devices(self, **tensors: Tensor | None) -> None:
        """Reject inputs on another device than this layer's weights, naming the argument (input checks on)."""
        if checking_inputs():
            device = next(self.parameters()).device
            for name, tensor in tensors.items():
                check_device(tensor, name, device)


class EncoderLayer(ResidualLayer):
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
        super().__init__(norm_first)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(
        self, x: Tensor, mask: Tensor | None = None, *, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """``x (B, S, d_model)``, ``mask`` broadcastable to ``(B, H, S, S)`` -> ``(x, weights (B, H, S, S) or None)``."""
        self.check_devices(x=x, mask=mask)
        x, weights = self.residual(
            x, self.norm1, self.dropout1, lambda h: self.self_attn(h, h, h, mask, need_weights=need_weights)
        )
        x, _ = self.residual(x, self.norm2, self.dropout2, lambda h: (self.feed_forward(h), None))
        return x, weights  # (B, S, d_model)


class DecoderLayer(ResidualLayer):
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
        super().__init__(norm_first)
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
        *,
        need_weights: bool = False,
        cache: tuple[KVCache, KVCache] | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """``y (B, T, d_model)``, ``memory (B, S, d_model)`` -> ``(y, self weights (B, H, T, T), cross weights
        (B, H, T, S))``; weights are ``None`` unless ``need_weights``. ``cache`` holds (self, cross) keys and values
        for incremental decoding, where ``y`` is only the new positions."""
        self.check_devices(y=y, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask)
        self_cache, cross_cache = cache if cache is not None else (None, None)
        y, self_weights = self.residual(
            y,
            self.norm1,
            self.dropout1,
            lambda h: self.self_attn(h, h, h, tgt_mask, need_weights=need_weights, cache=self_cache),
        )
        y, cross_weights = self.residual(
            y,
            self.norm2,
            self.dropout2,
            lambda h: self.cross_attn(h, memory, memory, src_mask, need_weights=need_weights, cache=cross_cache),
        )
        y, _ = self.residual(y, self.norm3, self.dropout3, lambda h: (self.feed_forward(h), None))
        return y, self_weights, cross_weights  # (B, T, d_model)
