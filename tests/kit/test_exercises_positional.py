"""The exercises of chapter 3 (transformer_book.exercises.positional): each check passes right answers, written in
several ways, and refuses the classic wrong ones with a message that names the mistake."""

import math

import pytest
import torch
from exercise_checks import accepted, refused

from transformer.embeddings import sinusoidal_table
from transformer_book.exercises import grade_offset_matrix, grade_sinusoid_table


def table_with(layout="interleaved", base=10000.0, exponent="2i", first=0, divide=True):
    """The table as a reader writes it from the paper's formula, optionally with one mistake."""

    def table(max_len, d_model):
        pos = torch.arange(first, first + max_len, dtype=torch.float32)[:, None]  # (L, 1)
        two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (d / 2,)
        power = {"2i": two_i, "i": two_i / 2}[exponent] / d_model
        angles = pos / base**power if divide else pos * base**power  # (L, d / 2)
        if layout == "halves":
            return torch.cat([angles.sin(), angles.cos()], dim=1)
        pe = torch.zeros(max_len, d_model)
        first_half, second_half = (
            (angles.sin(), angles.cos()) if layout == "interleaved" else (angles.cos(), angles.sin())
        )
        pe[:, 0::2], pe[:, 1::2] = first_half, second_half
        return pe

    return table


def annotated_table(max_len, d_model, log=math.log):
    """The Annotated Transformer's way: frequencies through exp and log."""
    position = torch.arange(max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def loop_table(max_len, d_model, per_column=False):
    """Column by column, as the formula reads."""
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    for pos in range(max_len):
        for j in range(d_model):
            exponent = (j if per_column else j - j % 2) / d_model
            angle = pos / 10000**exponent
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


@pytest.mark.parametrize(
    "right", [table_with(), annotated_table, loop_table], ids=["float32 powers", "exp and log", "loop in float64"]
)
def test_sinusoid_table_check_passes_right_answers(right):
    accepted(grade_sinusoid_table, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (table_with("halves"), "tensor2tensor"),
        (table_with("swapped"), "cosines in the even columns"),
        (table_with(base=1000.0), r"table\(10, 4\) uses the base 1000"),
        (lambda L, d: annotated_table(L, d, log=math.log10), r"log10\(10000\) = 4"),
        (table_with(exponent="i"), r"exponent i/d_model, i the number of the pair"),
        (lambda L, d: loop_table(L, d, per_column=True), r"column 2i\+1 an exponent of its own"),
        (table_with(divide=False), r"multiplies the positions by 10000\^\(2i/d_model\)"),
        (table_with(first=1), r"table\(1, 2\) starts at position 1"),
        (table_with(base=500.0), r"table\(10, 4\)\[1, 2\] is 0\.0447, not 0\.0100 \(pair i = 1, frequency"),
        (lambda L, d: sinusoidal_table(L, d).T, r"shape \(2, 1\)"),
        (lambda L, d: sinusoidal_table(L, d)[None], r"shape \(1, 1, 2\)"),
    ],
    ids=[
        "halves",
        "swapped",
        "base 1000",
        "log10",
        "exponent i",
        "per column",
        "multiplied",
        "from 1",
        "base 500",
        "transposed",
        "batch axis",
    ],
)
def test_sinusoid_table_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_sinusoid_table, wrong, message)


def rotation(k, d_model, transpose=False, frequency_scale=1.0, offset=None):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        angle = (k if offset is None else offset) * frequency_scale * 10000.0 ** (-2 * i / d_model)
        c, s = math.cos(angle), math.sin(angle)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, -s], [s, c]] if transpose else [[c, s], [-s, c]])
    return M


def power_of_one_step(k, d_model):
    """M_1 multiplied by itself k times: a step of k is k steps of 1."""
    return torch.linalg.matrix_power(rotation(1, d_model), k)


@pytest.mark.parametrize(
    "right",
    [rotation, lambda k, d: rotation(k, d).float(), power_of_one_step],
    ids=["blocks", "blocks in float32", "power of M_1"],
)
def test_offset_matrix_check_passes_right_answers(right):
    accepted(grade_offset_matrix, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda k, d: rotation(k, d, transpose=True), r"the wrong way.*PE\(pos\) @ M"),
        (lambda k, d: rotation(k, d, offset=1), r"offset\(3, 4\) moves every position by 1, not by 3"),
        (lambda k, d: rotation(k, d, frequency_scale=2.0), r"offset\(1, 4\), pos = \d+ \(pair i = 0"),
        (lambda k, d: torch.eye(d), r"offset\(1, 4\)"),
        (lambda k, d: rotation(k, d)[: d // 2], r"shape \(2, 4\)"),
    ],
    ids=["transposed", "always M_1", "twice the angle", "identity", "half the rows"],
)
def test_offset_matrix_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_offset_matrix, wrong, message)
