"""The exercises of chapter 11 (transformer_book.exercises.inspect): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import pytest
import torch

from transformer.attention import scaled_dot_product_attention
from transformer_book.exercises import grade_previous_token_weight, grade_silenced_head


def previous_token_weight(weights, valid, use_valid=True):
    T = weights.size(-1)
    on_previous = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1): query t on key t - 1
    keep = (valid[:, 1:] if use_valid else torch.ones_like(valid[:, 1:])).float()[:, None, :]  # (B, 1, T - 1)
    assert on_previous.size(-1) == T - 1
    return (on_previous * keep).sum(dim=(0, 2)) / keep.sum(dim=(0, 2))


def test_previous_token_weight_check():
    grade_previous_token_weight(previous_token_weight)
    with pytest.raises(AssertionError, match="padding queries"):
        grade_previous_token_weight(lambda w, v: previous_token_weight(w, v, use_valid=False))
    with pytest.raises(AssertionError, match="the weight of query t on key t - 1"):
        grade_previous_token_weight(lambda w, v: w.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2)))
    with pytest.raises(AssertionError, match=r"shape \(2, 4\)"):
        grade_previous_token_weight(lambda w, v: w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1))


def silenced(attention, x, head, where="before", bias=True):
    B, T, d = x.shape
    H, d_k = attention.n_heads, attention.d_k
    q, k, v = (t.view(B, T, H, d_k).transpose(1, 2) for t in attention.in_proj(x).chunk(3, dim=-1))
    out, _ = scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)
    if where == "before":
        out[:, head] = 0
    merged = out.transpose(1, 2).reshape(B, T, d)
    projected = merged @ attention.out_proj.weight.T + (attention.out_proj.bias if bias else 0)
    if where == "after":
        projected[..., head * d_k : (head + 1) * d_k] = 0
    return projected


def test_silenced_head_check():
    grade_silenced_head(silenced)
    with pytest.raises(AssertionError, match=r"\*projected\* output"):
        grade_silenced_head(lambda *a: silenced(*a, where="after"))
    with pytest.raises(AssertionError, match="is not silenced"):
        grade_silenced_head(lambda *a: silenced(*a, where="nowhere"))
    with pytest.raises(AssertionError, match="differs from the package's"):
        grade_silenced_head(lambda *a: silenced(*a, bias=False))
