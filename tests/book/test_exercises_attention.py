"""The exercises of chapter 5 (transformer_book.exercises.attention): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_book.exercises import grade_attention, grade_multi_head_attention


def attention(q, k, v, mask, scale="sqrt(d_k)", inverted=False, axis=-1, fill=None, masking="fill", dropout=0.0):
    """The formula written with einsum, as a reader might (optionally with one mistake)."""
    scores = torch.einsum("...qd,...kd->...qk", q, k)  # (..., T_q, T_k)
    divisor = {
        "sqrt(d_k)": math.sqrt(q.size(-1)),
        "d_k": q.size(-1),
        "sqrt(d_v)": math.sqrt(v.size(-1)),
        "none": 1.0,
        "after softmax": 1.0,
    }[scale]
    scores = scores / divisor
    if mask is not None and masking == "fill":
        scores = scores.masked_fill(
            mask if inverted else ~mask, torch.finfo(scores.dtype).min if fill is None else fill
        )
    if mask is not None and masking == "multiply":
        scores = scores * mask
    weights = scores.softmax(dim=axis)
    if mask is not None and masking == "after softmax":
        weights = weights * mask
    if scale == "after softmax":
        weights = weights / math.sqrt(q.size(-1))
    weights = F.dropout(weights, dropout)  # F.dropout's training=True: on unless told otherwise
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


def test_attention_check_passes_the_formula_with_either_fill():
    grade_attention(attention)
    grade_attention(lambda *a: attention(*a, fill=-math.inf))  # -inf fits every dtype; no row here is all hidden


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: attention(*a, scale="none"), r"not divided by sqrt\(d_k\) = 4"),
        (lambda *a: attention(*a, scale="d_k"), r"divided by d_k = 16, not by its square root, 4"),
        (lambda *a: attention(*a, scale="sqrt(d_v)"), r"divided by sqrt\(d_v\) = 2\.23607, the width of the values"),
        (lambda *a: attention(*a, scale="after softmax"), r"divided by sqrt\(d_k\) after the softmax.*sum to 1/sqrt"),
        (lambda *a: attention(*a, masking="after softmax"), "the mask is applied after the softmax"),
        (lambda *a: attention(*a, masking="multiply"), "the mask is multiplied into the scores"),
        (lambda *a: attention(*a, dropout=0.1), "different results: dropout is on"),
        (lambda *a: (F.dropout(attention(*a)[0], 0.1), attention(*a)[1]), "dropout is on"),  # on the output only
        (lambda *a: attention(*a, inverted=True), "the mask is inverted"),
        (lambda *a: attention(*a, axis=-2), r"over the queries \(dim=-2\)"),
        (lambda *a: attention(*a, fill=-1e9), r"-1e9 does not fit in float16.*finfo"),  # the Annotated Transformer's
        (lambda *a: (attention(*a)[1] @ a[2][..., :1], attention(*a)[1]), r"shape \(2, 3, 4, 1\)"),
        (lambda *a: (attention(*a)[1].transpose(-2, -1) @ a[0][..., :5], attention(*a)[1]), r"shape \(2, 3, 6, 5\)"),
        (lambda q, k, v, mask: (attention(q, k, v, mask)[0] + 1, attention(q, k, v, mask)[1]), "weights @ v"),
        (lambda *a: attention(*a)[0], "return the pair"),
    ],
)
def test_attention_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_attention(wrong)


def multi_head_by_loop(x_q, x_kv, mask, p, n_heads):
    """Head by head, with column slices: no view, no transpose, so no axis to get wrong."""
    q, k, v = (F.linear(x, p[f"W_{n}"], p[f"b_{n}"]) for x, n in ((x_q, "q"), (x_kv, "k"), (x_kv, "v")))
    d_k = x_q.size(-1) // n_heads
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(d_k)  # (B, T_q, T_k)
        scores = scores.masked_fill(~mask[:, 0], -math.inf)  # the mask without its head axis
        heads.append(scores.softmax(-1) @ v[..., cols])  # (B, T_q, d_k)
    return F.linear(torch.cat(heads, dim=-1), p["W_o"], p["b_o"])


def multi_head(
    x_q,
    x_kv,
    mask,
    p,
    n_heads,
    divisor="d_k",
    split="right",
    merge="right",
    project=True,
    bias=True,
    transpose=True,
    masked=True,
    axis=-1,
):
    """All heads at once, as the package does it, optionally with one mistake."""
    B, T_q, d = x_q.shape
    d_k = d // n_heads

    def linear(x, n):
        return x @ (p[f"W_{n}"].T if transpose else p[f"W_{n}"]) + (p[f"b_{n}"] if bias else 0)

    def heads(x):
        if split == "right":
            return x.view(B, x.size(1), n_heads, d_k).transpose(1, 2)
        return x.view(B, n_heads, x.size(1), d_k)

    q, k, v = heads(linear(x_q, "q")), heads(linear(x_kv, "k")), heads(linear(x_kv, "v"))
    scale = {"d_k": d_k, "d_model": d, "none": 1}[divisor] ** 0.5
    scores = q @ k.transpose(-2, -1) / scale
    weights = (scores.masked_fill(~mask, float("-inf")) if masked else scores).softmax(axis)
    out = weights @ v  # (B, H, T_q, d_k)
    merged = out.transpose(1, 2).reshape(B, T_q, d) if merge == "right" else out.reshape(B, T_q, d)
    return linear(merged, "o") if project else merged


def test_multi_head_attention_check_passes_a_loop_over_heads_and_all_heads_at_once():
    grade_multi_head_attention(multi_head_by_loop)
    grade_multi_head_attention(multi_head)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(divisor="d_model"), r"divided by sqrt\(d_model\) = 4, not by sqrt\(d_k\) = 2"),
        (dict(divisor="none"), r"not divided by sqrt\(d_k\)"),
        (dict(split="raw"), r"raw view\(B, H, T, d_k\)"),
        (dict(merge="raw"), "merged in the wrong order"),
        (dict(split="raw", merge="raw"), "cut and merged with raw reshapes"),
        (dict(project=False), "output projection"),
        (dict(bias=False), "biases are missing"),
        (dict(transpose=False), r"x @ W\.T \+ b"),
        (dict(masked=False), r"self-attention, causal mask.*the mask is ignored: each query sees the positions after"),
        (dict(axis=-2), r"softmax runs over the queries \(dim=-2\)"),
    ],
)
def test_multi_head_attention_check_catches_classic_mistakes(options, message):
    with pytest.raises(AssertionError, match=message):
        grade_multi_head_attention(lambda *a: multi_head(*a, **options))


def test_multi_head_attention_check_names_an_ignored_padding_mask():
    def ignores_padding(x_q, x_kv, mask, p, n_heads):
        causal = mask.size(-2) > 1  # the causal mask is (1, 1, T, T), the padding mask (B, 1, 1, T_k)
        return multi_head(x_q, x_kv, mask, p, n_heads, masked=causal)

    with pytest.raises(AssertionError, match="cross-attention, padding mask.*the queries attend to the padding keys"):
        grade_multi_head_attention(ignores_padding)


def test_multi_head_attention_check_catches_an_inverted_mask():
    with pytest.raises(AssertionError, match="the mask is inverted"):
        grade_multi_head_attention(lambda x_q, x_kv, mask, p, h: multi_head_by_loop(x_q, x_kv, ~mask, p, h))
