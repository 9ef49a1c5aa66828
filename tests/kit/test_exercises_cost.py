"""The exercises of chapter 13 (transformer_book.exercises.cost): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import math

import pytest
import torch
from exercise_checks import refused

from transformer_book.cost import score_bytes
from transformer_book.exercises import grade_encoder_layer_flops, grade_longest_length


def layer_flops(T, d, d_ff, H, multiply_add=2, projections=4, attention_products=2, ff_products=2, per_head=True):
    d_attention = d // H if per_head else d  # the width each head's products run over
    return multiply_add * (
        projections * T * d * d + attention_products * H * T * T * d_attention + ff_products * T * d * d_ff
    )


def test_encoder_layer_flops_check_passes_the_closed_form():
    grade_encoder_layer_flops(layer_flops)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: layer_flops(*a, multiply_add=1), "a multiply-add is 2 FLOPs"),
        (lambda *a: layer_flops(*a, projections=3), "W_O"),
        (lambda *a: layer_flops(*a, attention_products=1), "weighted sum of the values"),
        (lambda *a: layer_flops(*a, ff_products=1), "two products"),
        (lambda *a: layer_flops(*a, per_head=False), "d_k = d_model / n_heads"),
        (lambda T, d, d_ff, H: layer_flops(T, d, d_ff, H) - 4 * T * T * d + 4 * T * T * (d // H), "for one head"),
        (lambda T, d, d_ff, H: layer_flops(T, d, 4 * d, H), "use the d_ff given"),
        (lambda T, d, d_ff, H: layer_flops(T, d, d_ff, H) + 1, r"is 473,601, but FlopCounterMode counts 473,600"),
        (lambda *a: float(layer_flops(*a)), "not an int"),
    ],
)
def test_encoder_layer_flops_check_catches_classic_mistakes(wrong, message):
    refused(grade_encoder_layer_flops, wrong, message)


def longest_length(memory, batch, n_heads, dtype, itemsize=None, squared=True, heads=True, batches=True):
    numbers = memory // (
        (batch if batches else 1)
        * (n_heads if heads else 1)
        * (itemsize or torch.empty((), dtype=dtype).element_size())
    )
    return math.isqrt(numbers) if squared else numbers


def test_longest_length_check_passes_the_square_root_and_a_search():
    grade_longest_length(longest_length)

    def by_search(memory, batch, n_heads, dtype):
        T = 1
        while score_bytes(batch, n_heads, T + 1, T + 1, dtype) <= memory:
            T *= 2
        low, high = T // 2 if T > 1 else 1, T  # the answer lies in [low, high]
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (
                (middle, high) if score_bytes(batch, n_heads, middle, middle, dtype) <= memory else (low, middle - 1)
            )
        return low

    grade_longest_length(by_search)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: longest_length(*a, squared=False), "grows as T\\^2"),
        (lambda *a: longest_length(*a, itemsize=1), "counts numbers, not bytes"),
        (lambda *a: longest_length(*a, itemsize=4), "4 bytes a number assumed"),
        (lambda *a: longest_length(*a, heads=False), "one per head"),
        (lambda *a: longest_length(*a, batches=False), "one per sequence of the batch"),
        (lambda *a: longest_length(*a) + 1, "more than 1,073,741,824"),
        (lambda *a: longest_length(*a) - 1, "T = 5,792 fits too"),
        (lambda *a: math.sqrt(a[0] / (a[1] * a[2] * 4)), "not an int"),
    ],
)
def test_longest_length_check_catches_classic_mistakes(wrong, message):
    refused(grade_longest_length, wrong, message)
