"""The exercises of chapter 5 (transformer_book.exercises.attention): each check passes right answers, written in
several ways, and refuses the classic wrong ones with a message that names the mistake."""

import math

import pytest
import torch
import torch.nn.functional as F
from exercise_checks import accepted, refused

from transformer.attention import scaled_dot_product_attention
from transformer_book.exercises import grade_attention, grade_multi_head_attention


def attention(q, k, v, mask, divisor="sqrt(d_k)", inverted=False, axis=-1, fill=None, masking="fill", dropout=0.0):
    """The formula written with einsum, as a reader might (optionally with one mistake)."""
    scores = torch.einsum("...qd,...kd->...qk", q, k)  # (..., T_q, T_k)
    d_k = q.size(-1)
    scale = {
        "sqrt(d_k)": math.sqrt(d_k),
        "d_k": d_k,
        "times sqrt(d_k)": 1 / math.sqrt(d_k),
        "sqrt(d_v)": math.sqrt(v.size(-1)),
        "sqrt(T_k)": math.sqrt(k.size(-2)),
        "sqrt(T_q)": math.sqrt(q.size(-2)),
        "sqrt(size(1))": math.sqrt(q.size(1)),
        "none": 1.0,
        "after softmax": 1.0,
    }[divisor]
    scores = scores / scale
    if mask is not None and masking == "fill":
        hidden = mask if inverted else ~mask
        scores = scores.masked_fill(hidden, torch.finfo(scores.dtype).min if fill is None else fill)
    if mask is not None and masking == "multiply":
        scores = scores * mask
    if mask is not None and masking == "add":
        scores = scores + mask
    weights = scores.softmax(dim=axis)
    if mask is not None and masking == "after softmax":
        weights = weights * mask
    if divisor == "after softmax":
        weights = weights / math.sqrt(d_k)
    weights = F.dropout(weights, dropout)  # F.dropout's training=True: on unless told otherwise
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


def chapter_attention(q, k, v, mask=None):
    """The chapter's own solution: matmul, a fill with the dtype's most negative number."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def zeroing_hidden_rows(q, k, v, mask=None):
    """A -inf fill, and the rows of queries that see no key set to zero afterwards, as the package does."""
    scores = (q / math.sqrt(q.size(-1))) @ k.transpose(-2, -1)  # the queries scaled first: the same scores
    if mask is not None:
        scores = torch.where(mask, scores, -math.inf)
    weights = torch.softmax(scores.float(), dim=-1).nan_to_num(0.0).to(q.dtype)
    return weights @ v, weights


@pytest.mark.parametrize(
    "right",
    [attention, chapter_attention, zeroing_hidden_rows, scaled_dot_product_attention],
    ids=["einsum", "the chapter's", "-inf, then hidden rows zeroed", "the package's"],
)
def test_attention_check_passes_right_answers_whatever_a_query_that_sees_no_key_gets_but_nan(right):
    accepted(grade_attention, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: attention(*a, divisor="none"), r"not divided by sqrt\(d_k\) = 4"),
        (lambda *a: attention(*a, divisor="d_k"), r"divided by d_k = 16, not by its square root, 4"),
        (lambda *a: attention(*a, divisor="times sqrt(d_k)"), r"multiplied by sqrt\(d_k\) = 4: divide"),
        (lambda *a: attention(*a, divisor="sqrt(d_v)"), r"divided by sqrt\(d_v\) = 2\.23607, the width of the values"),
        (lambda *a: attention(*a, divisor="sqrt(T_k)"), r"divided by sqrt\(T_k\) = 2\.44949, the root of the number"),
        (lambda *a: attention(*a, divisor="sqrt(T_q)"), r"divided by sqrt\(4\) = 2, the root of the number of queries"),
        (lambda *a: attention(*a, divisor="sqrt(size(1))"), r"divided by sqrt\(3\) = 1\.73205, the root of the size"),
        (lambda *a: attention(*a, divisor="after softmax"), r"divided by sqrt\(d_k\) after the softmax.*sum to 1/sqrt"),
        (lambda *a: attention(*a, masking="after softmax"), "the mask is applied after the softmax"),
        (lambda *a: attention(*a, masking="multiply"), r"a hidden score becomes 0 \(the mask multiplied"),
        (lambda *a: attention(*a, fill=0.0), r"a hidden score becomes 0 \(.*masked_fill with 0"),
        (lambda *a: attention(*a, masking="add"), "the mask is added to the scores"),
        (lambda *a: attention(*a, dropout=0.1), "different results: dropout is on"),
        (lambda *a: (F.dropout(attention(*a)[0], 0.1), attention(*a)[1]), "dropout is on"),  # on the output only
        (lambda *a: attention(*a, inverted=True), "the mask is inverted"),
        (lambda *a: attention(*a, axis=-2), r"over the queries \(dim=-2\)"),
        (lambda *a: attention(*a, axis=1), r"over dim=1, not over the keys"),
        (lambda *a: attention(*a, axis=0), r"over dim=0, not over the keys"),
        (
            lambda *a: attention(*a, fill=-math.inf),
            r"target mask whose first keys are padding\): a query whose keys are all hidden \(query 0 here\) gets "
            r"NaN: a -inf fill",
        ),
        (lambda *a: attention(*a, fill=-1e9), r"-1e9 does not fit in float16.*finfo"),  # the Annotated Transformer's
        (lambda *a: (attention(*a)[1] @ a[2][..., :1], attention(*a)[1]), r"shape \(2, 3, 4, 1\)"),
        (lambda *a: (attention(*a)[1].transpose(-2, -1) @ a[0][..., :5], attention(*a)[1]), r"shape \(2, 3, 6, 5\)"),
        (lambda q, k, v, mask: (attention(q, k, v, mask)[0] + 1, attention(q, k, v, mask)[1]), "weights @ v"),
        (lambda *a: attention(*a)[::-1], r"returns \(weights, output\): return the output first"),
        (lambda *a: attention(*a)[0], "return the pair"),
    ],
    ids=[
        "no scale",
        "d_k",
        "times sqrt(d_k)",
        "sqrt(d_v)",
        "sqrt(T_k)",
        "sqrt(T_q)",
        "sqrt(heads)",
        "after softmax",
        "mask after softmax",
        "mask multiplied",
        "filled with 0",
        "mask added",
        "dropout on the weights",
        "dropout on the output",
        "inverted mask",
        "softmax over the queries",
        "softmax over the heads",
        "softmax over the batch",
        "-inf fill",
        "-1e9 fill",
        "output of the wrong width",
        "weights transposed",
        "output off",
        "swapped",
        "output only",
    ],
)
def test_attention_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_attention, wrong, message)


def multi_head_by_loop(x_q, x_kv, mask, p, n_heads):
    """Head by head, with column slices: no view, no transpose, so no axis to get wrong."""
    q, k, v = (F.linear(x, p[f"W_{n}"], p[f"b_{n}"]) for x, n in ((x_q, "q"), (x_kv, "k"), (x_kv, "v")))
    d_k = x_q.size(-1) // n_heads
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(d_k)  # (B, T_q, T_k)
        scores = scores.masked_fill(~mask[:, 0], torch.finfo(scores.dtype).min)  # the mask without its head axis
        heads.append(scores.softmax(-1) @ v[..., cols])  # (B, T_q, d_k)
    return F.linear(torch.cat(heads, dim=-1), p["W_o"], p["b_o"])


def multi_head(
    x_q,
    x_kv,
    mask,
    p,
    n_heads,
    divisor="sqrt(d_k)",
    split="right",
    merge="right",
    project=True,
    bias=True,
    transpose=True,
    masked=True,
    axis=-1,
    fill=None,
    dropout=0.0,
    attend=None,
):
    """All heads at once, as the package does it, optionally with one mistake."""
    B, T_q, d = x_q.shape
    d_k = d // n_heads

    def linear(x, n):
        return x @ (p[f"W_{n}"].T if transpose else p[f"W_{n}"]) + (p[f"b_{n}"] if bias else 0)

    def heads(x):
        if split == "right":
            return x.view(B, x.size(1), n_heads, d_k).transpose(1, 2)
        if split == "no transpose":
            return x.view(B, x.size(1), n_heads, d_k)
        return x.view(B, n_heads, x.size(1), d_k)

    q, k, v = heads(linear(x_q, "q")), heads(linear(x_kv, "k")), heads(linear(x_kv, "v"))
    if attend is not None:  # the reader's own attention function
        out = attend(q, k, v, mask)[0]
    else:
        scale = {"sqrt(d_k)": d_k**0.5, "d_k": d_k, "sqrt(d_model)": d**0.5, "none": 1}[divisor]
        scores = q @ k.transpose(-2, -1) / scale
        filled = torch.finfo(scores.dtype).min if fill is None else fill
        weights = (scores.masked_fill(~mask, filled) if masked else scores).softmax(axis)
        out = F.dropout(weights, dropout) @ v  # (B, H, T_q, d_k)
    merged = out.transpose(1, 2).reshape(B, T_q, d) if merge == "right" else out.reshape(B, T_q, d)
    return linear(merged, "o") if project else merged


def the_package_with_these_weights(x_q, x_kv, mask, p, n_heads):
    from transformer import MultiHeadAttention

    module = MultiHeadAttention(x_q.size(-1), n_heads).eval()
    with torch.no_grad():
        module.in_proj.weight.copy_(torch.cat([p["W_q"], p["W_k"], p["W_v"]]))
        module.in_proj.bias.copy_(torch.cat([p["b_q"], p["b_k"], p["b_v"]]))
        module.out_proj.weight.copy_(p["W_o"]), module.out_proj.bias.copy_(p["b_o"])
    return module(x_q, x_kv, x_kv, mask)[0]


@pytest.mark.parametrize(
    "right",
    [
        multi_head_by_loop,
        multi_head,
        lambda *a: multi_head(*a, attend=chapter_attention),
        lambda *a: multi_head(*a, attend=zeroing_hidden_rows),
        the_package_with_these_weights,
    ],
    ids=["a loop over heads", "all heads at once", "with the chapter's attention", "hidden rows zeroed", "the package"],
)
def test_multi_head_attention_check_passes_right_answers(right):
    accepted(grade_multi_head_attention, right)


def ignores_padding(x_q, x_kv, mask, p, n_heads):
    causal = mask.size(-2) > 1  # the causal and target masks are (., 1, T, T), the padding mask (B, 1, 1, T_k)
    return multi_head(x_q, x_kv, mask, p, n_heads, masked=causal)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (dict(divisor="sqrt(d_model)"), r"divided by sqrt\(d_model\) = 4\.89898, not by sqrt\(d_k\) = 2\.44949"),
        (dict(divisor="none"), r"not divided by sqrt\(d_k\)"),
        (dict(divisor="d_k"), r"divided by d_k = 6, not by its square root, 2\.44949"),
        (dict(split="raw"), r"raw view\(B, H, T, d_k\)"),
        (dict(split="no transpose"), r"fails \(.*\): the heads are cut with view\(B, T, H, d_k\) but not transposed"),
        (dict(split="no transpose", merge="raw"), r"view\(B, T, H, d_k\) but not transposed"),
        (dict(merge="raw"), "merged in the wrong order"),
        (dict(split="raw", merge="raw"), "cut and merged with raw reshapes"),
        (dict(project=False), "output projection"),
        (dict(bias=False), "biases are missing"),
        (dict(transpose=False), r"x @ W\.T \+ b"),
        (dict(masked=False), r"self-attention, causal mask.*the mask is ignored: each query sees the positions after"),
        (dict(axis=-2), r"softmax runs over the queries \(dim=-2\)"),
        (dict(axis=1), r"softmax runs over the heads \(dim=1\)"),
        (dict(fill=-math.inf), r"target mask with padding first.*a query whose keys are all hidden.*gets NaN"),
        (dict(dropout=0.1), "dropout is on"),
        (dict(attend=lambda q, k, v, mask: attention(q, k, v, ~mask)), "the mask is inverted"),
        (ignores_padding, "cross-attention, padding mask.*the queries attend to the padding keys"),
    ],
    ids=[
        "sqrt(d_model)",
        "no scale",
        "d_k",
        "raw view",
        "view without transpose",
        "view without transpose, raw merge",
        "raw merge",
        "raw view and merge",
        "no projection",
        "no biases",
        "x @ W",
        "mask ignored",
        "softmax over the queries",
        "softmax over the heads",
        "-inf fill",
        "dropout",
        "inverted mask",
        "padding ignored",
    ],
)
def test_multi_head_attention_check_refuses_classic_mistakes_naming_them(wrong, message):
    answer = wrong if callable(wrong) else lambda *a: multi_head(*a, **wrong)
    refused(grade_multi_head_attention, answer, message)
