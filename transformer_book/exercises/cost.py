"""The exercises of chapter 13 (``book/13_cost.ipynb``): an encoder layer's FLOPs as ``FlopCounterMode`` counts them,
and the longest sequence whose attention scores fit in memory."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer import EncoderLayer
from transformer_book.cost import encoder_layer_flops, readable_attention, score_bytes
from transformer_book.i18n import tr

__all__ = ["grade_encoder_layer_flops", "grade_longest_length"]


def _counted_layer_flops(T: int, d_model: int, d_ff: int, n_heads: int) -> int:
    """``FlopCounterMode``'s count of the package's encoder layer (readable attention) over one sequence of ``T``
    positions, on the meta device: shapes only, no arithmetic and no random numbers."""
    with torch.device("meta"):
        layer = readable_attention(EncoderLayer(d_model, n_heads, d_ff, dropout=0.0))
        x = torch.empty(1, T, d_model)  # (B, T, d_model): one sequence
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(x)
    return counter.get_total_flops()


def grade_encoder_layer_flops(flops: Callable[[int, int, int, int], int]) -> None:
    """``flops(T, d_model, d_ff, n_heads)`` must be the matrix-product FLOPs of one encoder layer's forward pass over
    one sequence of ``T`` positions, a multiply-add counting 2, exactly as ``FlopCounterMode`` counts them on the
    package's ``EncoderLayer``: ``8 T d^2 + 4 T^2 d + 4 T d d_ff``, for several lengths, widths and numbers of heads,
    with ``d_ff`` other than ``4 d_model``."""
    for T, d, d_ff, H in ((100, 8, 32, 1), (10, 64, 256, 4), (33, 32, 48, 2), (7, 16, 100, 8)):
        call = f"flops(T={T}, d_model={d}, d_ff={d_ff}, n_heads={H})"
        mine, expected = flops(T, d, d_ff, H), _counted_layer_flops(T, d, d_ff, H)
        assert isinstance(mine, int) and not isinstance(mine, bool), tr(
            "{call} returned {kind} {mine!r}, not an int: FLOPs are counted exactly",
            call=call,
            kind=type(mine).__name__,
            mine=mine,
        )
        terms = encoder_layer_flops(T, d, d_ff, H)
        assert sum(terms.values()) == expected  # the chapter's count is FlopCounterMode's
        if mine == expected:
            continue
        P, A, FF = terms["projections"], terms["attention"], terms["feed-forward"]
        mistakes = {
            expected // 2: tr("it counts multiply-adds: a multiply-add is 2 FLOPs, a (m x k)(k x n) product 2 m k n"),
            expected - P // 4: tr(
                "three projections: W_O, which mixes the heads' outputs, is a fourth (T x d)(d x d) product"
            ),
            expected - A // 2: tr(
                "one of attention's two products per head: the scores Q K^T and the weighted sum of the values, "
                "(T x T)(T x d_k), each 2 T^2 d_k"
            ),
            expected - FF // 2: tr("one feed-forward product: it goes d_model -> d_ff and back, two products"),
            expected - A + A // H: tr("attention for one head: there are n_heads of them, 4 T^2 d_k each"),
            expected + A * (H - 1): tr(
                "attention with d_model per head: each head works on d_k = d_model / n_heads dimensions, so all "
                "heads together do 4 T^2 d_model whatever their number"
            ),
            P + A + 16 * T * d * d: tr("d_ff = 4 d_model assumed: use the d_ff given"),
        }
        values = dict(call=call, mine=mine, expected=expected, P=P, A=A, FF=FF)
        if mine in mistakes:
            raise AssertionError(
                tr(
                    "{call} is {mine:,}, but FlopCounterMode counts {expected:,} on the package's layer (projections "
                    "{P:,}, attention {A:,}, feed-forward {FF:,}): {hint}",
                    hint=mistakes[mine],
                    **values,
                )
            )
        raise AssertionError(
            tr(
                "{call} is {mine:,}, but FlopCounterMode counts {expected:,} on the package's layer (projections "
                "{P:,}, attention {A:,}, feed-forward {FF:,})",
                **values,
            )
        )


def grade_longest_length(longest: Callable[[int, int, int, torch.dtype], int]) -> None:
    """``longest(memory_bytes, batch, n_heads, dtype)`` must be the longest sequence length ``T`` whose
    ``(batch, n_heads, T, T)`` score tensor of ``dtype`` fits in ``memory_bytes`` (``transformer_book.cost.
    score_bytes``), for several budgets, batches, heads and dtypes, two of them fitting exactly."""
    cases = (
        (2**30, 1, 8, torch.float32),
        (2**30, 1, 8, torch.float16),
        (80 * 2**30, 64, 16, torch.float32),
        (10**9, 3, 6, torch.bfloat16),
        (2**20, 2, 4, torch.float64),
    )
    for memory, B, H, dtype in cases:
        call = f"longest({memory:,}, batch={B}, n_heads={H}, dtype={dtype})"
        mine = longest(memory, B, H, dtype)
        assert isinstance(mine, int) and not isinstance(mine, bool), tr(
            "{call} returned {kind} {mine!r}, not an int (a length is a whole number of positions)",
            call=call,
            kind=type(mine).__name__,
            mine=mine,
        )
        size = torch.empty((), dtype=dtype).element_size()
        expected = math.isqrt(memory // (B * H * size))
        assert (
            score_bytes(B, H, expected, expected, dtype)
            <= memory
            < score_bytes(B, H, expected + 1, expected + 1, dtype)
        )
        if mine == expected:
            continue
        mistakes = {
            memory // (B * H * size): tr("the score tensor grows as T^2: T x T scores per head and sequence"),
            math.isqrt(memory // (B * H)): tr(
                "that counts numbers, not bytes: each takes the dtype's element size ({size} bytes for {dtype})",
                size=size,
                dtype=dtype,
            ),
            math.isqrt(memory // (B * H * 4)): tr(
                "4 bytes a number assumed: {dtype} takes {size}", dtype=dtype, size=size
            ),
            math.isqrt(memory // (B * size)): tr("one T x T matrix per sequence: there is one per head"),
            math.isqrt(memory // (H * size)): tr(
                "one T x T matrix per head: there is one per sequence of the batch too"
            ),
        }
        if mine in mistakes and mine != expected:
            raise AssertionError(
                tr(
                    "{call} is {mine:,}, not {expected:,}: {hint}",
                    call=call,
                    mine=mine,
                    expected=expected,
                    hint=mistakes[mine],
                )
            )
        if mine > expected:
            raise AssertionError(
                tr(
                    "{call} is {mine:,}, but that score tensor takes {size:,} bytes, more than {memory:,} (round down: "
                    "the longest length that fits)",
                    call=call,
                    mine=mine,
                    size=score_bytes(B, H, mine, mine, dtype),
                    memory=memory,
                )
            )
        raise AssertionError(
            tr(
                "{call} is {mine:,}, but T = {longer:,} fits too: its score tensor takes {size:,} of the {memory:,} bytes",
                call=call,
                mine=mine,
                longer=mine + 1,
                size=score_bytes(B, H, mine + 1, mine + 1, dtype),
                memory=memory,
            )
        )
