"""Attention masks.

One convention throughout the package: a boolean mask where ``True`` means "this query may attend to this key".
Masks are 4-D and broadcast against the attention scores ``(B, H, T_q, T_k)``:

* ``padding_mask``: ``(B, 1, 1, S)``, hides padding keys from every query;
* ``causal_mask``: ``(1, 1, T, T)``, hides future positions (lower-triangular);
* ``target_mask``: ``(B, 1, T, T)``, both at once, for decoder self-attention.

PyTorch's ``nn.MultiheadAttention``/``nn.Transformer`` use the opposite polarity (``True`` = ignore) or additive float
masks (``0`` / ``-inf``); Hugging Face uses ``(B, S)`` integer masks with ``1`` = keep. The converters at the bottom of
this module translate at those edges only.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .checks import require_bool_mask, tracing


def padding_mask(tokens: Tensor, pad_id: int = 0) -> Tensor:
    """``(B, S)`` token ids -> ``(B, 1, 1, S)`` bool, ``True`` where the key is a real token."""
    if not isinstance(tokens, Tensor):
        raise TypeError(f"tokens must be a torch.Tensor of token ids; got {type(tokens).__name__}")
    if tokens.dtype == torch.bool or tokens.is_floating_point() or tokens.is_complex():
        raise TypeError(f"tokens must hold integer token ids (e.g. torch.long); got dtype {tokens.dtype}")
    if tokens.dim() != 2:
        raise ValueError(f"tokens must be a 2-D tensor (batch, seq_len); got {_describe(tokens)}")
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, S)


def padding_mask_from_lengths(lengths: Tensor, max_len: int | None = None) -> Tensor:
    """``(B,)`` sequence lengths -> ``(B, 1, 1, max_len)`` bool, ``True`` for the first ``length`` positions."""
    if not isinstance(lengths, Tensor) or lengths.dim() != 1:
        raise ValueError(f"lengths must be a 1-D tensor (batch,); got {_describe(lengths)}")
    if lengths.numel() and int(lengths.min()) < 0:
        raise ValueError(f"lengths must be >= 0; got min {int(lengths.min())}")
    longest = int(lengths.max()) if lengths.numel() else 0
    max_len = longest if max_len is None else max_len
    if max_len < longest:
        raise ValueError(f"max_len must be >= the longest length {longest}; got {max_len}")
    positions = torch.arange(max_len, device=lengths.device)  # (S,)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)


def causal_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """``(1, 1, T, T)`` bool, ``True`` on and below the diagonal: position i sees positions 0..i."""
    if not tracing() and (isinstance(size, bool) or not isinstance(size, int) or size < 1):  # traced: a symbolic size
        raise ValueError(f"size must be a positive int; got {size!r}")
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]  # (1, 1, T, T)


def target_mask(tokens: Tensor, pad_id: int = 0) -> Tensor:
    """Decoder self-attention mask: padding keys hidden and no peeking ahead, ``(B, 1, T, T)`` bool."""
    return padding_mask(tokens, pad_id) & causal_mask(tokens.size(1), device=tokens.device)  # (B, 1, T, T)


def to_torch_mask(mask: Tensor) -> Tensor:
    """This package's mask (``True`` = attend) -> PyTorch's boolean ``attn_mask`` polarity (``True`` = ignore).

    Only bool masks: ``~`` on a 0/1 integer mask is a bitwise not (1 -> 254), not a logical one."""
    require_bool_mask(mask, "mask")
    return ~mask


def from_torch_mask(mask: Tensor) -> Tensor:
    """PyTorch's boolean (``True`` = ignore) or additive float (``-inf`` = ignore) mask -> ``True`` = attend."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a torch.Tensor; got {type(mask).__name__}")
    if mask.dtype == torch.bool:
        return ~mask
    if mask.is_floating_point():
        return mask == 0
    raise TypeError(f"mask must be bool or floating point; got dtype {mask.dtype}")


def to_additive_mask(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """``True`` = attend -> additive float mask: ``0`` where allowed, ``-inf`` where hidden (PyTorch's float form)."""
    require_bool_mask(mask, "mask")
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, float("-inf"))


def from_hf_attention_mask(attention_mask: Tensor) -> Tensor:
    """Hugging Face ``(B, S)`` mask with ``1`` = keep -> ``(B, 1, 1, S)`` bool, ``True`` = attend."""
    if not isinstance(attention_mask, Tensor):
        raise TypeError(f"attention_mask must be a torch.Tensor; got {type(attention_mask).__name__}")
    if attention_mask.dim() != 2:
        raise ValueError(f"attention_mask must be 2-D (batch, seq_len); got shape {tuple(attention_mask.shape)}")
    return attention_mask.bool()[:, None, None, :]  # (B, 1, 1, S)


def key_padding_mask(mask: Tensor) -> Tensor:
    """A ``(B, 1, 1, S)`` padding mask -> PyTorch's ``key_padding_mask`` ``(B, S)``, ``True`` = padding."""
    require_bool_mask(mask, "mask")
    if mask.dim() != 4 or mask.size(1) != 1 or mask.size(2) != 1:
        raise ValueError(f"mask must be a padding mask of shape (B, 1, 1, S); got shape {tuple(mask.shape)}")
    return ~mask[:, 0, 0, :]  # (B, S)


def _describe(x: object) -> str:
    if isinstance(x, Tensor):
        return f"a tensor of shape {tuple(x.shape)}"
    return f"{type(x).__name__}"
