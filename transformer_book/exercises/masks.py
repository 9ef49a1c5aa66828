"""The exercises of chapter 4 (``book/04_masks.ipynb``): the causal, padding and target masks, in the package's
convention: bool, True where the query may attend to the key, 4-D so that they broadcast against ``(B, H, T_q, T_k)``
scores."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from transformer import causal_mask, padding_mask
from transformer_book.exercises.grading import SEEDS, check_shape, first_index, random_tokens, returned_tensor
from transformer_book.i18n import tr

__all__ = ["grade_causal_mask", "grade_padding_mask", "grade_target_mask"]


def _bool_mask(mask: Tensor, call: str) -> None:
    assert mask.dtype == torch.bool, tr(
        "{call} has dtype {dtype}: a mask is bool, True where the query may attend (compare with ==, or call .bool())",
        call=call,
        dtype=mask.dtype,
    )


def grade_causal_mask(causal: Callable[[int], Tensor]) -> None:
    """``causal(T)`` must equal ``transformer.causal_mask(T)``: ``(1, 1, T, T)`` bool, ``True`` on and below the
    diagonal, for T = 5, 2, 9, 1."""
    for T in (5, 2, 9, 1):
        call = f"causal({T})"
        mine, expected = returned_tensor(causal(T), call), causal_mask(T)
        check_shape(
            mine, (1, 1, T, T), call, tr("two leading axes of size 1 let it broadcast against (B, H, T, T) scores")
        )
        _bool_mask(mine, call)
        if torch.equal(mine, expected):
            continue
        if torch.equal(mine, ~expected):
            raise AssertionError(
                tr(
                    "{call} is inverted: True must mean 'may attend' (nn.MultiheadAttention's True "
                    "means 'ignore'; this book's and F.scaled_dot_product_attention's mean 'attend')",
                    call=call,
                )
            )
        if torch.equal(mine, expected.transpose(-2, -1)):
            raise AssertionError(
                tr(
                    "{call} is True above the diagonal: query i sees keys i..T-1, the future, and "
                    "not the past (lower triangle, tril, not triu)",
                    call=call,
                )
            )
        if torch.equal(mine, expected & ~torch.eye(T, dtype=torch.bool)):
            raise AssertionError(
                tr(
                    "{call} is False on the diagonal: a position must see itself (the first query would see no key at "
                    "all)",
                    call=call,
                )
            )
        i, j = first_index(mine != expected)[2:]
        raise AssertionError(
            tr(
                "{call}[0, 0, {i}, {j}] is {value}: query {i} may attend to keys 0..{i} only",
                call=call,
                i=i,
                j=j,
                value=bool(mine[0, 0, i, j]),
            )
        )


def _mask_cases() -> Iterable[tuple[Tensor, int]]:
    for seed, (B, S), pad_id in zip(SEEDS, ((2, 5), (3, 7), (4, 1)), (0, 3, 0), strict=True):
        yield random_tokens(seed, B, S, pad_id), pad_id


def grade_padding_mask(padding: Callable[[Tensor, int], Tensor]) -> None:
    """``padding(tokens (B, S), pad_id)`` must equal ``transformer.padding_mask``: ``(B, 1, 1, S)`` bool, ``True``
    where the *key* is a real token, for several batches, with ``pad_id`` 0 and 3 and padding anywhere."""
    for tokens, pad_id in _mask_cases():
        B, S = tokens.shape
        call = tr("padding(tokens of shape {shape}, pad_id={pad_id})", shape=(B, S), pad_id=pad_id)
        mine, expected = returned_tensor(padding(tokens, pad_id), call), padding_mask(tokens, pad_id)
        if tuple(mine.shape) == (B, 1, S, 1) and S > 1:
            raise AssertionError(
                tr(
                    "{call} has shape {shape}: it hides padding *queries*; a padding mask "
                    "hides padding keys from every query, shape (B, 1, 1, S)",
                    call=call,
                    shape=(B, 1, S, 1),
                )
            )
        check_shape(mine, (B, 1, 1, S), call, tr("one row per sequence, broadcast over heads and queries"))
        _bool_mask(mine, call)
        if torch.equal(mine, ~expected):
            raise AssertionError(
                tr("{call} is True on the padding: True must mean 'a real token, may be attended to'", call=call)
            )
        if not torch.equal(mine, expected):
            b, *_, s = first_index(mine != expected)
            hint = tr(" (is pad_id used, or 0 hard-coded?)") if pad_id != 0 else ""
            raise AssertionError(
                tr(
                    "{call}[{b}, 0, 0, {s}] is {value} for token {token}{hint}",
                    call=call,
                    b=b,
                    s=s,
                    value=bool(mine[b, 0, 0, s]),
                    token=int(tokens[b, s]),
                    hint=hint,
                )
            )


def grade_target_mask(target: Callable[[Tensor, int], Tensor]) -> None:
    """``target(tokens (B, T), pad_id)`` must equal ``transformer.target_mask``: ``(B, 1, T, T)`` bool, a key visible
    only if it is a real token *and* not in the future."""
    for tokens, pad_id in _mask_cases():
        B, T = tokens.shape
        call = tr("target(tokens of shape {shape}, pad_id={pad_id})", shape=(B, T), pad_id=pad_id)
        mine = returned_tensor(target(tokens, pad_id), call)
        expected = padding_mask(tokens, pad_id) & causal_mask(T)
        check_shape(
            mine,
            (B, 1, T, T),
            call,
            tr("the padding mask (B, 1, 1, T) and the causal mask (1, 1, T, T) broadcast to it"),
        )
        _bool_mask(mine, call)
        if torch.equal(mine, padding_mask(tokens, pad_id) | causal_mask(T)):
            raise AssertionError(
                tr(
                    "{call} shows a key that one of the masks hides: combine them with & (visible if "
                    "real *and* not in the future), not |",
                    call=call,
                )
            )
        if not torch.equal(mine, expected):
            b, _, i, j = first_index(mine != expected)
            raise AssertionError(
                tr(
                    "{call}[{b}, 0, {i}, {j}] is {value}: key {j} is token {token}, query {i}",
                    call=call,
                    b=b,
                    i=i,
                    j=j,
                    value=bool(mine[b, 0, i, j]),
                    token=int(tokens[b, j]),
                )
            )
