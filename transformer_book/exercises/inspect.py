"""The exercises of chapter 11 (``book/11_inside_the_model.ipynb``): a head's mean weight on the previous token, and the
attention output with one head silenced."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from transformer import MultiHeadAttention
from transformer.utils import make_rng, seeded
from transformer_book.ablation import aligned_weight
from transformer_book.exercises.grading import SEEDS, check_shape, returned_tensor
from transformer_book.i18n import tr

__all__ = ["grade_previous_token_weight", "grade_silenced_head"]


def grade_previous_token_weight(previous: Callable[[Tensor, Tensor], Tensor]) -> None:
    """``previous(weights (B, H, T, T), valid (B, T))`` must give each head's mean weight on the key just before the
    query, ``(H,)``, averaged over the queries where ``valid`` is True and that have a previous token (t >= 1), for
    several seeds and shapes (with padding)."""
    for seed, (B, H, T) in zip(SEEDS, ((2, 4, 6), (3, 1, 9), (1, 8, 3)), strict=True):
        g = make_rng(seed)
        weights = torch.softmax(3 * torch.randn(B, H, T, T, generator=g), dim=-1)
        lengths = torch.randint(2, T + 1, (B,), generator=g)
        t = torch.arange(T)[None, :]  # (1, T)
        valid = t < lengths[:, None]  # (B, T)
        call = f"previous(weights of shape {(B, H, T, T)}, valid)"
        mine = returned_tensor(previous(weights, valid), call)
        check_shape(mine, (H,), call, tr("one number per head"))
        expected = aligned_weight(weights, (t - 1).expand(B, T), valid & (t >= 1))
        if torch.allclose(mine.double(), expected.double(), atol=1e-5):
            continue
        if torch.allclose(mine, aligned_weight(weights, (t - 1).expand(B, T), (t >= 1).expand(B, T)), atol=1e-5):
            raise AssertionError(
                tr("{call} averages over padding queries too: keep the queries where valid is True", call=call)
            )
        raise AssertionError(
            tr(
                "{call} is {mine}, not {expected} (the weight of query t on key t - 1, averaged over the valid queries "
                "with t >= 1)",
                call=call,
                mine=[round(float(w), 3) for w in mine],
                expected=[round(float(w), 3) for w in expected],
            )
        )


def grade_silenced_head(silenced: Callable[[MultiHeadAttention, Tensor, int], Tensor]) -> None:
    """``silenced(attention, x (B, T, d_model), head)`` must be the self-attention output of ``attention`` with
    ``head`` silenced, as the package computes it with ``attention.head_mask`` (to within 1e-5): the head's output is
    zeroed *before* the heads are concatenated and projected. For several seeds, shapes and heads (biases random)."""
    for seed, (B, T, d, H) in zip(SEEDS, ((2, 5, 16, 4), (1, 7, 8, 2), (3, 4, 32, 8)), strict=True):
        with seeded(seed), torch.no_grad():
            attention = MultiHeadAttention(d, H).eval()
            attention.in_proj.bias.normal_(), attention.out_proj.bias.normal_()  # random biases show a forgotten one
        x = torch.randn(B, T, d, generator=make_rng(seed))
        for head in (0, H - 1):
            call = f"silenced(attention with {H} heads, x of shape {(B, T, d)}, head={head})"
            with torch.no_grad():
                mine = returned_tensor(silenced(attention, x, head), call)
                check_shape(mine, (B, T, d), call, tr("the attention's output, (B, T, d_model)"))
                attention.head_mask = torch.ones(H).index_fill(0, torch.tensor([head]), 0.0)
                expected = attention(x, x, x)[0]
                attention.head_mask = None
                full = attention(x, x, x)[0]
            if torch.allclose(mine, expected, atol=1e-5):
                continue
            columns = slice(head * d // H, (head + 1) * d // H)
            if torch.allclose(mine, full.index_fill(-1, torch.arange(d)[columns], 0.0), atol=1e-5):
                raise AssertionError(
                    tr(
                        "{call} zeroes the head's columns of the *projected* output; silence the head's output "
                        "before out_proj, which mixes every head into every column",
                        call=call,
                    )
                )
            if torch.allclose(mine, full, atol=1e-5):
                raise AssertionError(
                    tr("{call} is the output with every head: head {head} is not silenced", call=call, head=head)
                )
            error = float((mine - expected).abs().max())
            raise AssertionError(tr("{call} differs from the package's by up to {error:.2g}", call=call, error=error))
