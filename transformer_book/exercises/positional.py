"""The exercises of chapter 3 (``book/03_positional_encoding.ipynb``): the sinusoidal table, and the matrix that moves
every position of it by the same offset."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from transformer.embeddings import sinusoidal_table
from transformer_book.exercises.grading import check_shape, first_index, returned_tensor
from transformer_book.i18n import tr

__all__ = ["grade_offset_matrix", "grade_sinusoid_table"]


def _table_by(
    L: int,
    d: int,
    base: float = 10000.0,
    exponent: str = "2i",
    layout: str = "interleaved",
    first_position: int = 0,
    divide: bool = True,
) -> Tensor:
    """The ``(L, d)`` sinusoid table right, or with one classic mistake (float64), for naming a reader's mistake.
    ``exponent``: "2i" (the paper's 2i/d, i the pair), "i" (i/d), "column" (each column j its own j/d)."""
    pos = torch.arange(first_position, first_position + L, dtype=torch.float64)[:, None]  # (L, 1)
    columns = torch.arange(d, dtype=torch.float64)  # (d,)
    pair = columns // 2
    power = {"2i": 2 * pair, "i": pair, "column": columns}[exponent] / d  # (d,): each column's exponent
    frequency = base ** (-power if divide else power)
    angles = pos * frequency  # (L, d)
    sines, cosines = angles.sin(), angles.cos()
    if layout == "halves":  # sines of every pair first, then the cosines
        return torch.cat([sines[:, 0::2], cosines[:, 0::2]], dim=1)
    even = columns % 2 == 0
    if layout == "swapped":
        even = ~even
    return torch.where(even, sines, cosines)


def _table_mistakes(call: str) -> dict[str, dict[str, object]]:
    """The classic mistakes of the sinusoid table: each hint with the options of :func:`_table_by` that make it."""
    return {
        tr(
            "{call} has the sines in the first half of the columns and the cosines in the "
            "second (tensor2tensor's layout); the paper interleaves them: column 2i is the sine, "
            "2i+1 the cosine of the same frequency",
            call=call,
        ): dict(layout="halves"),
        tr("{call} has cosines in the even columns: column 2i is the sine, 2i+1 the cosine", call=call): dict(
            layout="swapped"
        ),
        tr(
            "{call} uses the base 1000: the paper's frequencies are 1 / 10000^(2i/d_model), "
            "wavelengths from 2 pi to 10000 * 2 pi positions (base 1000 stops at 1000 * 2 pi)",
            call=call,
        ): dict(base=1000.0),
        tr(
            "{call} takes log10(10000) = 4 where the natural logarithm belongs: exp(-(2i/d_model) ln 10000) is "
            "1 / 10000^(2i/d_model), and math.log(10000) = 9.21",
            call=call,
        ): dict(base=math.exp(4.0)),
        tr(
            "{call} uses the exponent i/d_model, i the number of the pair: it is 2i/d_model, the index of the "
            "sine's column over d_model (torch.arange(0, d_model, 2) / d_model)",
            call=call,
        ): dict(exponent="i"),
        tr(
            "{call} gives the cosine's column 2i+1 an exponent of its own, (2i+1)/d_model: a sine and its cosine "
            "share one frequency, 1 / 10000^(2i/d_model)",
            call=call,
        ): dict(exponent="column"),
        tr(
            "{call} multiplies the positions by 10000^(2i/d_model): divide by it, so that the frequencies fall "
            "from 1 to nearly 1/10000 across the columns",
            call=call,
        ): dict(divide=False),
        tr("{call} starts at position 1: row 0 is position 0 (sin 0 = 0 and cos 0 = 1 in every pair)", call=call): (
            dict(first_position=1)
        ),
    }


def grade_sinusoid_table(table: Callable[[int, int], Tensor]) -> None:
    """``table(max_positions, d_model)`` must equal ``transformer.embeddings.sinusoidal_table`` to within 1e-4:
    ``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(...)``, for several sizes. It names the halves
    layout, swapped sines and cosines, the base 1000, log10 for ln, the exponent i/d or (2i+1)/d, frequencies that
    grow, and positions counted from 1."""
    for L, d in ((1, 2), (10, 4), (50, 16), (128, 64)):
        call = f"table({L}, {d})"
        mine = returned_tensor(table(L, d), call)
        check_shape(mine, (L, d), call, tr("one row per position, one column per dimension"))
        mine, expected = mine.double(), sinusoidal_table(L, d).double()
        differ = (mine - expected).abs() > 1e-4
        if not differ.any():
            continue
        for hint, how in _table_mistakes(call).items():
            wrong = _table_by(L, d, **how)
            if torch.allclose(mine, wrong, atol=1e-4):
                raise AssertionError(hint)
        pos, col = first_index(differ)
        raise AssertionError(
            tr(
                "{call}[{pos}, {col}] is {mine:.4f}, not {expected:.4f} (pair i = {pair}, frequency "
                "1 / 10000^(2i/{d}) = {frequency:.4g})",
                call=call,
                pos=pos,
                col=col,
                mine=float(mine[pos, col]),
                expected=float(expected[pos, col]),
                pair=col // 2,
                d=d,
                frequency=10000.0 ** (-2 * (col // 2) / d),
            )
        )


def grade_offset_matrix(offset: Callable[[int, int], Tensor]) -> None:
    """``offset(k, d_model)`` must be the ``(d_model, d_model)`` matrix ``M_k`` with ``PE(pos + k) = M_k PE(pos)``
    for every position of the package's table (to within 1e-5), for several offsets and widths."""
    L = 200
    for d in (4, 16, 64):
        pe = sinusoidal_table(L, d).double()  # (L, d)
        for k in (1, 3, 25, 0):
            call = f"offset({k}, {d})"
            M = returned_tensor(offset(k, d), call)
            check_shape(M, (d, d), call)
            M = M.double()
            moved = pe[: L - k] @ M.T  # (L - k, d): row pos is M_k PE(pos)
            error = (moved - pe[k:]).abs()
            if float(error.max()) <= 1e-5:
                continue
            if k and torch.allclose(pe[k:] @ M.T, pe[: L - k], atol=1e-5):
                raise AssertionError(
                    tr(
                        "{call} maps PE(pos) to PE(pos - {k}): it turns the wrong way (transpose each 2x2 block; a "
                        "matrix written for rows, PE(pos) @ M, is the transpose of M_k)",
                        call=call,
                        k=k,
                    )
                )
            if k != 1 and torch.allclose(pe[: L - 1] @ M.T, pe[1:], atol=1e-5):
                raise AssertionError(
                    tr(
                        "{call} moves every position by 1, not by {k}: each 2x2 block turns by the angle "
                        "k / 10000^(2i/d_model), k times the angle of M_1",
                        call=call,
                        k=k,
                    )
                )
            pos, col = first_index(error > 1e-5)
            raise AssertionError(
                tr(
                    "(M_k PE(pos))[{col}] = {moved:.4f} but PE(pos + k)[{col}] = {expected:.4f} for {call}, "
                    "pos = {pos} (pair i = {pair}, rows {first} and {second})",
                    col=col,
                    moved=float(moved[pos, col]),
                    expected=float(pe[pos + k, col]),
                    call=call,
                    pos=pos,
                    pair=col // 2,
                    first=2 * (col // 2),
                    second=2 * (col // 2) + 1,
                )
            )
