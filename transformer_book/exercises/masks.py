"""The exercises of chapter 4 (``book/04_masks.ipynb``): the causal, padding and target masks, in the package's
convention: bool, True where the query may attend to the key, 4-D so that they broadcast against ``(B, H, T_q, T_k)``
scores."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from transformer import causal_mask, padding_mask
from transformer.tokens import PAD_ID
from transformer_book.exercises.grading import SEEDS, check_shape, first_index, random_tokens, returned_tensor
from transformer_book.i18n import tr

__all__ = ["grade_causal_mask", "grade_padding_mask", "grade_target_mask"]


def _bool_mask(mask: Tensor, call: str) -> None:
    assert mask.dtype == torch.bool, tr(
        "{call} has dtype {dtype}: a mask is bool, True where the query may attend (compare with ==, or call .bool())",
        call=call,
        dtype=mask.dtype,
    )


def _causal_mistakes(T: int) -> dict[str, Tensor]:
    """What each classic mistake makes of the causal mask, by the hint that names it (``(1, 1, T, T)`` each)."""
    ones = torch.ones(T, T, dtype=torch.bool)
    return {
        tr(
            "it is inverted: True must mean 'may attend' (nn.MultiheadAttention's True means 'ignore'; this book's "
            "and F.scaled_dot_product_attention's mean 'attend')"
        ): ~ones.tril(),
        tr(
            "it is True above the diagonal: query i sees keys i..T-1, the future, and not the past (lower triangle, "
            "tril, not triu)"
        ): ones.triu(),
        tr("it is False on the diagonal: a position must see itself (the first query would see no key at all)"): (
            ones.tril(-1)
        ),
        tr(
            "it is off by one: query i also sees key i + 1, the next token, which it must predict (tril(diagonal=1)); "
            "the diagonal itself is the last visible key, tril(diagonal=0)"
        ): ones.tril(1),
        tr("it is True everywhere: every query sees the future; keep the lower triangle, tril"): ones,
    }


def grade_causal_mask(causal: Callable[[int], Tensor]) -> None:
    """``causal(T)`` must equal ``transformer.causal_mask(T)``: ``(1, 1, T, T)`` bool, ``True`` on and below the
    diagonal, for T = 5, 2, 9, 1. It names an inverted mask, the upper triangle, a diagonal hidden or a diagonal one
    step too high, and a mask that hides nothing."""
    for T in (5, 2, 9, 1):
        call = f"causal({T})"
        mine, expected = returned_tensor(causal(T), call), causal_mask(T)
        check_shape(
            mine, (1, 1, T, T), call, tr("two leading axes of size 1 let it broadcast against (B, H, T, T) scores")
        )
        _bool_mask(mine, call)
        if torch.equal(mine, expected):
            continue
        for hint, wrong in _causal_mistakes(T).items():
            if torch.equal(mine[0, 0], wrong):
                raise AssertionError(tr("{call}: {hint}", call=call, hint=hint))
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


_OWN_PAD_ID = 3  # a padding id of one's own (TransformerConfig.pad_id), which an answer with PAD_ID written in misses


def _mask_cases() -> Iterable[tuple[Tensor, int]]:
    for seed, (B, S), pad_id in zip(SEEDS, ((2, 5), (3, 7), (4, 1)), (PAD_ID, _OWN_PAD_ID, PAD_ID), strict=True):
        yield random_tokens(seed, B, S, pad_id), pad_id


def _lengths_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """The padding mask of an answer that counts each row's real tokens and keeps that many from the left."""
    lengths = (tokens != pad_id).sum(dim=1)  # (B,)
    return (torch.arange(tokens.size(1))[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)


def grade_padding_mask(padding: Callable[[Tensor, int], Tensor]) -> None:
    """``padding(tokens (B, S), pad_id)`` must equal ``transformer.padding_mask``: ``(B, 1, 1, S)`` bool, ``True``
    where the *key* is a real token, for several batches, with ``pad_id`` 0 and 3 and padding anywhere. It names a
    mask of the queries, an inverted one, a padding id written in, and a mask built from lengths, which assumes
    the padding comes last."""
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
        if torch.equal(mine, expected):
            continue
        if torch.equal(mine, ~expected):
            raise AssertionError(
                tr("{call} is True on the padding: True must mean 'a real token, may be attended to'", call=call)
            )
        if torch.equal(mine, _lengths_mask(tokens, pad_id)):
            raise AssertionError(
                tr(
                    "{call} keeps the first n tokens of a row that holds n real ones: it assumes the padding comes "
                    "last, but a row may start with padding (row {row} does here); compare each token with pad_id",
                    call=call,
                    row=B - 1,
                )
            )
        b, *_, s = first_index(mine != expected)
        hint = tr(" (is pad_id used, or {pad} written in?)", pad=PAD_ID) if pad_id != PAD_ID else ""
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


def _target_mistakes(tokens: Tensor, pad_id: int) -> dict[str, Tensor]:
    """What each classic mistake makes of the target mask, by the hint that names it (``(B, 1, T, T)`` each)."""
    B, T = tokens.shape
    keys, causal = padding_mask(tokens, pad_id), causal_mask(T)  # (B, 1, 1, T), (1, 1, T, T)
    queries = keys.transpose(-2, -1)  # (B, 1, T, 1)
    return {
        tr(
            "it shows a key that one of the masks hides: combine them with & (visible if real *and* not in the future), "
            "not |"
        ): keys | causal,
        tr("it is the causal mask alone: the padding keys stay visible; combine it with the padding mask, &"): (
            causal.expand(B, 1, T, T)
        ),
        tr("it is the padding mask alone: every query sees the future; combine it with the causal mask, &"): (
            keys.expand(B, 1, T, T)
        ),
        tr(
            "it also hides the padding *queries*' rows: a row with every key hidden turns into NaN after a -inf fill, "
            "and the loss ignores those positions anyway; hide the padding keys only, (B, 1, 1, T) & (1, 1, T, T)"
        ): keys & causal & queries,
        tr("its causal part is the upper triangle: each query sees the future, not the past (tril, not triu)"): (
            keys & causal.transpose(-2, -1)
        ),
    }


def grade_target_mask(target: Callable[[Tensor, int], Tensor]) -> None:
    """``target(tokens (B, T), pad_id)`` must equal ``transformer.target_mask``: ``(B, 1, T, T)`` bool, a key visible
    only if it is a real token *and* not in the future. It names masks combined with |, either mask alone, padding
    queries hidden too and a causal part in the upper triangle."""
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
        if torch.equal(mine, expected):
            continue
        for hint, wrong in _target_mistakes(tokens, pad_id).items():
            if torch.equal(mine, wrong):
                raise AssertionError(tr("{call}: {hint}", call=call, hint=hint))
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
