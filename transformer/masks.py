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

from .checks import check_int, check_lengths, check_padding_mask, check_tokens, checking_inputs, require_bool_mask
from .tokens import PAD_ID


def padding_mask(tokens: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """``(B, S)`` token ids -> ``(B, 1, 1, S)`` bool, ``True`` where the key is a real token."""
    if checking_inputs():
        check_tokens(tokens, "tokens")
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, S)


def padding_mask_from_lengths(lengths: Tensor, width: int | None = None) -> Tensor:
    """``(B,)`` sequence lengths -> ``(B, 1, 1, width)`` bool, ``True`` for the first ``length`` positions of each
    row. ``width`` (the padded length) defaults to the longest length."""
    if checking_inputs():
        check_lengths(lengths, width)
    width = (int(lengths.max()) if lengths.numel() else 0) if width is None else width
    positions = torch.arange(width, device=lengths.device)  # (S,)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)


def causal_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """``(1, 1, T, T)`` bool, ``True`` on and below the diagonal: position i sees positions 0..i."""
    if checking_inputs():  # traced, ``size`` may be symbolic
        check_int("size", size, minimum=1)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]  # (1, 1, T, T)


def target_mask(tokens: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Decoder self-attention mask: padding keys hidden and no peeking ahead, ``(B, 1, T, T)`` bool."""
    return padding_mask(tokens, pad_id) & causal_mask(tokens.size(1), device=tokens.device)  # (B, 1, T, T)


def to_torch_mask(mask: Tensor) -> Tensor:
    """This package's mask (``True`` = attend) -> PyTorch's boolean ``attn_mask`` polarity (``True`` = ignore).

    Only bool masks: ``~`` on a 0/1 integer mask is a bitwise not (1 -> 254), not a logical one."""
    if checking_inputs():
        require_bool_mask(mask, "mask")
    return ~mask


def from_torch_mask(mask: Tensor) -> Tensor:
    """PyTorch's boolean (``True`` = ignore) or additive float (``-inf`` = ignore) mask -> ``True`` = attend."""
    if checking_inputs():
        require_bool_mask(mask, "mask", bool_only=False)
    if mask.dtype == torch.bool:
        return ~mask
    if mask.is_floating_point():
        return mask == 0
    raise TypeError(f"mask must be bool or floating point; got dtype {mask.dtype}")


def to_additive_mask(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """``True`` = attend -> additive float mask: ``0`` where allowed, ``-inf`` where hidden (PyTorch's float form)."""
    if checking_inputs():
        require_bool_mask(mask, "mask")
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, float("-inf"))


def from_hf_attention_mask(attention_mask: Tensor) -> Tensor:
    """Hugging Face ``(B, S)`` mask with ``1`` = keep -> ``(B, 1, 1, S)`` bool, ``True`` = attend."""
    if checking_inputs():
        require_bool_mask(attention_mask, "attention_mask", dims=2, bool_only=False)
    return attention_mask.bool()[:, None, None, :]  # (B, 1, 1, S)


def key_padding_mask(mask: Tensor) -> Tensor:
    """A ``(B, 1, 1, S)`` padding mask -> PyTorch's ``key_padding_mask`` ``(B, S)``, ``True`` = padding."""
    if checking_inputs():
        check_padding_mask(mask, "mask")
    return ~mask[:, 0, 0, :]  # (B, S)
