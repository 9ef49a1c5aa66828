"""The exercises of chapter 3 (``book/03_positional_encoding.ipynb``): the sinusoidal table, and the matrix that moves
every position of it by the same offset."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from transformer.embeddings import sinusoidal_table
from transformer_book.exercises.grading import check_shape, first_index, returned_tensor
from transformer_book.i18n import tr
from transformer_book.pitfalls import sinusoidal_table_base_1000

__all__ = ["grade_offset_matrix", "grade_sinusoid_table"]


def grade_sinusoid_table(table: Callable[[int, int], Tensor]) -> None:
    """``table(max_positions, d_model)`` must equal ``transformer.embeddings.sinusoidal_table`` to within 1e-4:
    ``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(...)``, for several sizes."""
    for L, d in ((1, 2), (10, 4), (50, 16), (128, 64)):
        call = f"table({L}, {d})"
        mine = returned_tensor(table(L, d), call)
        check_shape(mine, (L, d), call, tr("one row per position, one column per dimension"))
        mine, expected = mine.double(), sinusoidal_table(L, d).double()
        angles = torch.arange(L, dtype=torch.float64)[:, None] * 10000.0 ** (
            -torch.arange(0, d, 2, dtype=torch.float64) / d
        )
        if L > 1 and torch.allclose(mine, torch.cat([angles.sin(), angles.cos()], dim=1), atol=1e-4):
            raise AssertionError(
                tr(
                    "{call} has the sines in the first half of the columns and the cosines in the "
                    "second (tensor2tensor's layout); the paper interleaves them: column 2i is the sine, "
                    "2i+1 the cosine of the same frequency",
                    call=call,
                )
            )
        if torch.allclose(mine[:, 0::2], expected[:, 1::2], atol=1e-4):
            raise AssertionError(
                tr("{call} has cosines in the even columns: column 2i is the sine, 2i+1 the cosine", call=call)
            )
        if L > 1 and d > 2 and torch.allclose(mine, sinusoidal_table_base_1000(L, d).double(), atol=1e-4):
            raise AssertionError(
                tr(
                    "{call} uses the base 1000: the paper's frequencies are 1 / 10000^(2i/d_model), "
                    "wavelengths from 2 pi to 10000 * 2 pi positions (base 1000 stops at 1000 * 2 pi)",
                    call=call,
                )
            )
        differ = (mine - expected).abs() > 1e-4
        if differ.any():
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
                        "{call} maps PE(pos) to PE(pos - {k}): it turns the wrong way (transpose each 2x2 block)",
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
