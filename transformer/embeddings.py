"""Token embeddings and positional encodings."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .checks import check_length, checking_inputs


class TokenEmbedding(nn.Module):
    """Looks up a ``d_model`` vector per token and scales it by ``sqrt(d_model)`` (the paper, section 3.4).

    Weights start as N(0, 1/d_model), so the scaled embeddings have unit variance per dimension: the same scale as
    the sinusoidal positional encoding added to them, and (when tied) a well-scaled output projection. GPT-2 and BERT
    use the rows as they are: ``scale=False``.
    """

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True):
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        nn.init.normal_(self.weight, std=d_model**-0.5)

    def forward(self, tokens: Tensor) -> Tensor:
        """``(B, S)`` ids -> ``(B, S, d_model)``."""
        return nn.functional.embedding(tokens, self.weight) * self.scale  # (B, S, d_model)


def sinusoidal_table(max_positions: int, d_model: int) -> Tensor:
    """The paper's ``(max_positions, d_model)`` table (section 3.5): PE[pos, 2i] = sin(pos / 10000^(2i/d)),
    PE[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    position = torch.arange(max_positions, dtype=torch.float64)[:, None]  # (L, 1)
    inv_freq = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model)
    )  # (ceil(d/2),)
    angles = position * inv_freq  # (L, ceil(d/2))
    table = torch.zeros(max_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return table.float()


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoid table to ``(B, T, d_model)`` inputs. It encodes absolute position; a fixed offset k
    is a linear map (a rotation per frequency) of it, which is what lets attention use relative position."""

    def __init__(self, d_model: int, max_positions: int = 5000):
        super().__init__()
        self.max_positions = max_positions
        self.register_buffer("pe", sinusoidal_table(max_positions, d_model), persistent=False)  # (L, d_model)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """``x (B, T, d_model)`` at positions ``offset .. offset + T - 1`` -> ``x`` plus their encodings."""
        if checking_inputs():
            check_length("x", offset + x.size(1), self.max_positions)
        return x + self.pe[offset : offset + x.size(1)].to(x.dtype)  # (B, T, d_model)


class LearnedPositionalEncoding(nn.Module):
    """A trained vector per position (as in BERT/GPT): flexible, but knows nothing past the lengths it saw."""

    def __init__(self, d_model: int, max_positions: int = 5000):
        super().__init__()
        self.max_positions = max_positions
        self.weight = nn.Parameter(torch.empty(max_positions, d_model))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """``x (B, T, d_model)`` at positions ``offset .. offset + T - 1`` -> ``x`` plus their vectors."""
        if checking_inputs():
            check_length("x", offset + x.size(1), self.max_positions)
        return x + self.weight[offset : offset + x.size(1)].to(x.dtype)  # (B, T, d_model)
