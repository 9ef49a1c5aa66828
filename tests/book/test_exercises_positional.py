"""The exercises of chapter 3 (transformer_book.exercises.positional): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import math

import pytest
import torch

from transformer.embeddings import sinusoidal_table
from transformer_book.exercises import grade_offset_matrix, grade_sinusoid_table


def table_with(layout: str, base: float = 10000.0, pair_exponent: bool = True):
    def table(max_len, d_model):
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        i = torch.arange(0, d_model, 2) if pair_exponent else torch.arange(d_model // 2)
        angles = pos * base ** (-i / d_model)  # (L, d / 2)
        if layout == "halves":
            return torch.cat([angles.sin(), angles.cos()], dim=1)
        pe = torch.zeros(max_len, d_model)
        first, second = (angles.sin(), angles.cos()) if layout == "interleaved" else (angles.cos(), angles.sin())
        pe[:, 0::2], pe[:, 1::2] = first, second
        return pe

    return table


def test_sinusoid_table_check_passes_a_float32_table():
    grade_sinusoid_table(table_with("interleaved"))


@pytest.mark.parametrize(
    "wrong, message",
    [
        (table_with("halves"), "tensor2tensor"),
        (table_with("swapped"), "cosines in the even columns"),
        (table_with("interleaved", base=1000.0), r"table\(10, 4\) uses the base 1000"),
        (table_with("interleaved", base=100.0), r"pair i = 1, frequency"),
        (table_with("interleaved", pair_exponent=False), r"pair i = "),
        (lambda L, d: sinusoidal_table(L, d).T, r"shape \(2, 1\)"),
    ],
)
def test_sinusoid_table_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_sinusoid_table(wrong)


def rotation(k, d_model, transpose=False, frequency_scale=1.0):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        angle = k * frequency_scale * 10000.0 ** (-2 * i / d_model)
        c, s = math.cos(angle), math.sin(angle)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, -s], [s, c]] if transpose else [[c, s], [-s, c]])
    return M


def test_offset_matrix_check_passes_the_rotation_blocks():
    grade_offset_matrix(rotation)
    grade_offset_matrix(lambda k, d: rotation(k, d).float())


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda k, d: rotation(k, d, transpose=True), "the wrong way"),
        (lambda k, d: rotation(k, d, frequency_scale=2.0), r"offset\(1, 4\), pos = \d+ \(pair i = 0"),
        (lambda k, d: torch.eye(d), r"offset\(1, 4\)"),
        (lambda k, d: rotation(k, d)[: d // 2], r"shape \(2, 4\)"),
    ],
)
def test_offset_matrix_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_offset_matrix(wrong)
