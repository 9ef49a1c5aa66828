"""The exercises of chapter 11 (transformer_book.exercises.inspect): each check passes right answers, written in
several ways, and refuses the classic wrong ones with a message that names the mistake."""

import copy

import pytest
import torch
from exercise_checks import accepted, refused

from transformer.attention import scaled_dot_product_attention
from transformer_book.exercises import grade_previous_token_weight, grade_silenced_head


def previous_token_weight(weights, valid, offset=-1, queries="valid", first=1):
    """The chapter's way, with the diagonal, optionally with one mistake: another ``offset``, the queries kept by
    another rule, query 0 counted (``first=0``)."""
    B, H, T, _ = weights.shape
    on_key = weights.diagonal(offset=offset, dim1=-2, dim2=-1)  # (B, H, T - |offset|)
    n = on_key.size(-1)
    starts = max(-offset, 0)  # the first query that has that key
    keep = {
        "valid": valid[:, starts : starts + n],
        "all": torch.ones(B, n, dtype=torch.bool),
        "keys": valid[:, :n] if offset == -1 else valid[:, starts : starts + n],
    }[queries].float()[:, None, :]  # (B, 1, n)
    total = (on_key * keep).sum(dim=(0, 2))
    count = keep.sum(dim=(0, 2)) + (valid[:, 0].sum() if first == 0 else 0)  # query 0 counted, with weight 0
    return total / count


def by_gather(weights, valid):
    """Each query's weight on key t - 1 gathered, the queries t >= 1 that are valid kept."""
    B, H, T, _ = weights.shape
    t = torch.arange(T)
    on_previous = weights[:, :, t[1:], t[:-1]]  # (B, H, T - 1): advanced indexing, query t and key t - 1
    kept = valid[:, 1:]  # (B, T - 1)
    return torch.stack([on_previous[:, h][kept].mean() for h in range(H)])


def rolled(weights, valid):
    """torch.roll to line up key t - 1 with query t: query 0 gets the last key."""
    T = weights.size(-1)
    shifted = torch.roll(torch.eye(T), shifts=-1, dims=1)  # row t has its 1 in column t - 1 (mod T)
    on_previous = (weights * shifted).sum(-1)  # (B, H, T)
    keep = valid.float()[:, None, :]
    return (on_previous * keep).sum(dim=(0, 2)) / keep.sum(dim=(0, 2))


def mean_of_means(weights, valid):
    on_previous = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1)
    keep = valid[:, None, 1:].float()
    return ((on_previous * keep).sum(-1) / keep.sum(-1)).mean(0)


@pytest.mark.parametrize(
    "right", [previous_token_weight, by_gather], ids=["diagonal and a weighted sum", "gathered and boolean-indexed"]
)
def test_previous_token_weight_check_passes_right_answers(right):
    accepted(grade_previous_token_weight, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda w, v: previous_token_weight(w, v, queries="all"), "padding queries"),
        (lambda w, v: previous_token_weight(w, v, offset=1), r"reads key t \+ 1, the next token"),
        (lambda w, v: previous_token_weight(w.transpose(-2, -1), v), r"reads key t \+ 1"),
        (lambda w, v: w.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2)), r"each query's weight on itself \(the diagonal\)"),
        (rolled, r"query 0 is counted, on key -1 \(torch.roll"),
        (lambda w, v: previous_token_weight(w, v, first=0), "query 0 is counted, as a weight of 0"),
        (lambda w, v: previous_token_weight(w, v, queries="keys"), r"previous \*key\* is valid"),
        (mean_of_means, "the mean of each sequence's mean"),
        (lambda w, v: w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1), r"shape \(2, 4\)"),
        (lambda w, v: previous_token_weight(w, v) * 1.01, "the weight of query t on key t - 1"),
    ],
    ids=[
        "padding kept",
        "next key",
        "map transposed",
        "itself",
        "rolled",
        "query 0 as 0",
        "keys' validity",
        "mean of means",
        "(B, H)",
        "off",
    ],
)
def test_previous_token_weight_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_previous_token_weight, wrong, message)


def silenced(attention, x, head, where="before", bias=True, split="right"):
    B, T, d = x.shape
    H, d_k = attention.n_heads, attention.d_k
    q, k, v = attention.in_proj(x).chunk(3, dim=-1)
    if split == "right":
        q, k, v = (t.view(B, T, H, d_k).transpose(1, 2) for t in (q, k, v))
    else:
        q, k, v = (t.reshape(B, H, T, d_k) for t in (q, k, v))
    if where in ("queries", "values"):
        (q if where == "queries" else v)[:, head] = 0
    out, _ = scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)
    if where == "before":
        out[:, head] = 0
    merged = out.transpose(1, 2).reshape(B, T, d) if split == "right" else out.reshape(B, T, d)
    projected = merged @ attention.out_proj.weight.T + (attention.out_proj.bias if bias else 0)
    if where == "after":
        projected[..., head * d_k : (head + 1) * d_k] = 0
    return projected


def with_head_mask(attention, x, head):
    """The package's own switch, set and reset."""
    attention.head_mask = torch.ones(attention.n_heads).index_fill(0, torch.tensor([head]), 0.0)
    try:
        return attention(x, x, x)[0]
    finally:
        attention.head_mask = None


def through_the_projection(attention, x, head):
    """The head's columns of W_O zeroed, on a copy: what the head writes never reaches the output."""
    silent = copy.deepcopy(attention)
    d_k = attention.d_k
    silent.out_proj.weight[:, head * d_k : (head + 1) * d_k] = 0
    return silent(x, x, x)[0]


def in_place(attention, x, head):
    d_k = attention.d_k
    attention.out_proj.weight[:, head * d_k : (head + 1) * d_k] = 0  # the module itself: the next call changes too
    return attention(x, x, x)[0]


@pytest.mark.parametrize(
    "right",
    [silenced, with_head_mask, through_the_projection, lambda *a: silenced(*a, where="values")],
    ids=["output zeroed before the projection", "head_mask", "W_O's columns zeroed on a copy", "values zeroed"],
)
def test_silenced_head_check_passes_right_answers(right):
    accepted(grade_silenced_head, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: silenced(*a, where="after"), r"\*projected\* output"),
        (lambda *a: silenced(*a, where="queries"), "zeroes the head's queries: its weights become uniform"),
        (lambda *a: silenced(*a, where="nowhere"), "is not silenced"),
        (lambda *a: silenced(*a, bias=False), "leaves out the output projection's bias"),
        (lambda attention, x, head: silenced(attention, x, head + 1), "silences head 1, not head 0"),
        (in_place, "leaves attention changed"),
        (lambda *a: silenced(*a, split="raw"), "differs from the package's"),
    ],
    ids=[
        "after the projection",
        "queries zeroed",
        "nothing silenced",
        "no bias",
        "the next head",
        "in place",
        "heads split by a raw reshape",
    ],
)
def test_silenced_head_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_silenced_head, wrong, message)
