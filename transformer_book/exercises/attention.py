"""The exercises of chapter 5 (``book/05_attention.ipynb``): scaled dot-product attention, then multi-head attention
from handed-over weights. Each grader recomputes a wrong answer with every classic mistake it knows and names the one
that the reader's answer matches."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor

from transformer import MultiHeadAttention, causal_mask, padding_mask
from transformer.attention import scaled_dot_product_attention
from transformer.utils import make_rng, seeded
from transformer_book.exercises.grading import check_shape, random_tokens, returned_tensor
from transformer_book.i18n import tr, translatable
from transformer_book.pitfalls import attention_with_scale_dim, multiply_mask_attention

__all__ = ["grade_attention", "grade_multi_head_attention"]


def _close(mine: Tensor, expected: Tensor, atol: float) -> bool:
    return tuple(mine.shape) == tuple(expected.shape) and torch.allclose(mine.float(), expected.float(), atol=atol)


def _same_mistake(mine: Tensor, wrong: Tensor, atol: float) -> bool:
    """``mine`` equals the mistaken ``wrong`` wherever ``mine`` is a number: a row whose keys are all hidden is NaN
    when the hidden scores were filled with -inf, whatever the mistake."""
    finite = mine.isfinite()
    return (
        tuple(mine.shape) == tuple(wrong.shape)
        and bool(finite.any())
        and torch.allclose(mine[finite].float(), wrong[finite].float(), atol=atol)
    )


_NAN_HINT = translatable(
    "; it holds NaN: a query whose keys are all hidden gets a softmax over -inf only (fill with "
    "torch.finfo(dtype).min, and check which keys the mask hides)"
)


def _attention_by(
    q: Tensor,
    k: Tensor,
    mask: Tensor | None,
    inverted: bool = False,
    axis: int = -1,
    mask_after_softmax: bool = False,
    scale_after_softmax: bool = False,
) -> Tensor:
    """Attention's weights computed right or with one classic mistake (in float32), for naming a reader's mistake."""
    scores = q.float() @ k.float().transpose(-2, -1)  # (..., T_q, T_k)
    scale = math.sqrt(q.size(-1))
    scores = scores if scale_after_softmax else scores / scale
    if mask is not None and not mask_after_softmax:
        scores = scores.masked_fill(mask if inverted else ~mask, torch.finfo(torch.float32).min)
    weights = torch.softmax(scores, dim=axis)
    weights = weights.masked_fill(~mask, 0.0) if mask is not None and mask_after_softmax else weights
    return weights / scale if scale_after_softmax else weights


def _attention_mistakes(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> dict[str, Callable[[], Tensor]]:
    """What each classic mistake makes of the weights (computed when asked), by the hint that names it. The wrong
    divisors and the multiplied mask are the faulty variants of :mod:`transformer_book.pitfalls`."""
    d_k, d_v, T_q = q.size(-1), v.size(-1), q.size(-2)
    q, k, v = q.float(), k.float(), v.float()
    divided_by = lambda n: lambda: attention_with_scale_dim(q, k, v, mask, scale_dim=n)[1]  # scores / sqrt(n)
    root = math.sqrt(d_k)
    mistakes = {
        tr(
            "the scores are not divided by sqrt(d_k) = {root:g}: their variance grows with d_k and the "
            "softmax saturates",
            root=root,
        ): divided_by(1),
        tr(
            "the scores are divided by d_k = {d_k}, not by its square root, {root:g}: the dot product of two "
            "unit-variance vectors has variance d_k, so its standard deviation is sqrt(d_k)",
            d_k=d_k,
            root=root,
        ): divided_by(d_k**2),
        tr(
            "the scores are divided by sqrt(d_v) = {root_v:g}, the width of the values: divide by "
            "sqrt(d_k) = {root:g}, the width of the queries and keys whose dot products they are",
            root_v=math.sqrt(d_v),
            root=root,
        ): divided_by(d_v),
        tr(
            "the weights are divided by sqrt(d_k) after the softmax: each query's weights sum to 1/sqrt(d_k) = "
            "{inverse:.3g}, not 1; divide the scores, before the softmax",
            inverse=1 / root,
        ): lambda: _attention_by(q, k, mask, scale_after_softmax=True),
        tr(
            "the softmax runs over the queries (dim=-2): each query's weights must sum to 1 over the keys, dim=-1 "
            "(here T_q = {T_q}, T_k = {T_k})",
            T_q=T_q,
            T_k=k.size(-2),
        ): lambda: _attention_by(q, k, mask, axis=-2),
    }
    if mask is not None:
        mistakes |= {
            tr(
                "the mask is inverted: True means 'may attend', so hide the keys where the mask is False (~mask)"
            ): lambda: _attention_by(q, k, mask, inverted=True),
            tr(
                "the mask is applied after the softmax: the hidden keys' weights are zeroed, but the softmax has "
                "already shared each row among them, so a row sums to less than 1; fill the hidden scores with "
                "torch.finfo(scores.dtype).min before the softmax"
            ): lambda: _attention_by(q, k, mask, mask_after_softmax=True),
            tr(
                "the mask is multiplied into the scores: a hidden score becomes 0, and exp(0) gives a hidden key "
                "about as much weight as any other; fill the hidden scores with torch.finfo(scores.dtype).min "
                "(masked_fill) before the softmax"
            ): lambda: multiply_mask_attention(q, k, v, mask)[1],
        }
    return mistakes


_DROPOUT_HINT = translatable(
    "two calls with the same inputs give different results: dropout is on (F.dropout drops by default, "
    "training=True, and an nn.Dropout drops until .eval()); this function takes no dropout, and the "
    "package compares without it"
)


def _varies(function: Callable[..., object], args: tuple, first: Sequence[Tensor]) -> bool:
    """Whether ``function(*args)`` gives other tensors than ``first`` on a second call: a random answer."""
    again = function(*args)
    again = again if isinstance(again, tuple) else (again,)
    return any(
        isinstance(a, Tensor) and a.shape == b.shape and not torch.equal(a.nan_to_num(), b.nan_to_num())
        for a, b in zip(again, first, strict=False)
    )


def _attention_cases() -> Iterable[tuple[str, Tensor, Tensor, Tensor, Tensor | None]]:
    """``(what, q, k, v, mask)``: heads and a padding mask with T_q != T_k, a causal mask, no mask, float16."""
    g = make_rng(0)
    B, H, T_q, T_k, d_k, d_v = 2, 3, 4, 6, 16, 5
    q, k, v = (torch.randn(B, H, T, d, generator=g) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
    padding = (torch.arange(T_k) < torch.tensor([T_k, 3])[:, None])[:, None, None, :]  # (B, 1, 1, T_k)
    yield translatable("a padding mask (B, 1, 1, T_k)"), q, k, v, padding
    T, d = 5, 32
    x = torch.randn(3, T, d, generator=g)  # (B, T, d): self-attention without heads
    yield translatable("a causal mask (T, T)"), x, x, x, causal_mask(T)[0, 0]
    yield "mask=None", q[:, 0], k[:, 0], v[:, 0], None
    yield translatable("float16 inputs and a padding mask"), q.half(), k.half(), v.half(), padding


def grade_attention(attention: Callable[[Tensor, Tensor, Tensor, Tensor | None], tuple[Tensor, Tensor]]) -> None:
    """``attention(q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v), mask)`` must return ``(output (..., T_q,
    d_v), weights (..., T_q, T_k))`` as ``transformer.attention.scaled_dot_product_attention`` does (to within 1e-5,
    1e-2 in float16), ``mask`` bool (True = may attend) broadcastable to the scores, or ``None``: with heads and a
    padding mask (T_q != T_k, d_v != d_k), a causal mask, no mask, and in float16. It names a missing scale, a
    division by d_k or sqrt(d_v) or after the softmax, an inverted mask, a mask applied after the softmax or multiplied
    into the scores, a softmax over the wrong axis, dropout left on and a -1e9 that float16 cannot hold."""
    for what, q, k, v, mask in _attention_cases():
        call = tr(
            "attention(q of shape {q}, k of shape {k}, v of shape {v}, with {what})",
            q=tuple(q.shape),
            k=tuple(k.shape),
            v=tuple(v.shape),
            what=what if what == "mask=None" else tr(what),
        )
        atol = 1e-2 if q.dtype == torch.float16 else 1e-5
        try:
            result = attention(q, k, v, mask)
        except RuntimeError as error:
            if q.dtype == torch.float16 and "overflow" in str(error):
                raise AssertionError(
                    tr(
                        "{call} fails ({error}): a fixed -1e9 does not fit in float16, whose largest "
                        "magnitude is 65504. Fill the hidden scores with torch.finfo(scores.dtype).min, "
                        "the most negative number of their own dtype",
                        call=call,
                        error=error,
                    )
                ) from None
            raise
        assert isinstance(result, tuple) and len(result) == 2, tr(
            "{call} returned {kind}: return the pair (output, weights)", call=call, kind=type(result).__name__
        )
        output, weights = (returned_tensor(x, call) for x in result)
        expected_output, expected_weights = scaled_dot_product_attention(q, k, v, mask)
        check_shape(weights, tuple(expected_weights.shape), call, tr("the weights: one per (query, key)"))
        check_shape(output, tuple(expected_output.shape), call, tr("the output: one row of d_v per query"))
        if _close(weights, expected_weights, atol):
            if _close(output, expected_output, atol):
                continue
            if _varies(attention, (q, k, v, mask), result):
                raise AssertionError(f"{call}: {tr(_DROPOUT_HINT)}")
            raise AssertionError(tr("{call}: the weights are right, the output is not: it is weights @ v", call=call))
        if _varies(attention, (q, k, v, mask), result):
            raise AssertionError(f"{call}: {tr(_DROPOUT_HINT)}")
        for hint, wrong in _attention_mistakes(q, k, v, mask).items():
            if _same_mistake(weights, wrong(), atol):
                raise AssertionError(f"{call}: {hint}")
        error = float((weights.float() - expected_weights.float()).abs().max())
        raise AssertionError(
            tr(
                "{call}: the weights differ from scaled_dot_product_attention's by up to {error:.2g}",
                call=call,
                error=error,
            )
            + (tr(_NAN_HINT) if weights.isnan().any() else "")
        )


def _multi_head_by(
    x_q: Tensor,
    x_kv: Tensor,
    mask: Tensor | None,
    params: dict[str, Tensor],
    n_heads: int,
    divisor: str = "d_k",
    inverted: bool = False,
    split: str = "heads",
    merge: str = "heads",
    project: bool = True,
    biases: bool = True,
    transposed: bool = True,
    axis: int = -1,
) -> Tensor:
    """Multi-head attention from handed-over weights, right or with one classic mistake, for naming it."""
    B, T_q, d = x_q.shape
    T_k, d_k = x_kv.size(1), d // n_heads

    def linear(x: Tensor, name: str) -> Tensor:
        W = params[f"W_{name}"]
        return x @ (W.T if transposed else W) + (params[f"b_{name}"] if biases else 0.0)

    def heads(x: Tensor, T: int) -> Tensor:  # (B, T, d) -> (B, H, T, d_k)
        return x.view(B, T, n_heads, d_k).transpose(1, 2) if split == "heads" else x.reshape(B, n_heads, T, d_k)

    q, k, v = heads(linear(x_q, "q"), T_q), heads(linear(x_kv, "k"), T_k), heads(linear(x_kv, "v"), T_k)
    scores = q @ k.transpose(-2, -1) / {"d_k": math.sqrt(d_k), "d_model": math.sqrt(d), "none": 1.0}[divisor]
    if mask is not None:
        scores = scores.masked_fill(mask if inverted else ~mask, torch.finfo(scores.dtype).min)
    out = torch.softmax(scores, dim=axis) @ v  # (B, H, T_q, d_k)
    merged = out.transpose(1, 2).reshape(B, T_q, d) if merge == "heads" else out.reshape(B, T_q, d)
    return linear(merged, "o") if project else merged  # (B, T_q, d_model)


def grade_multi_head_attention(multi_head: Callable[..., Tensor]) -> None:
    """``multi_head(x_q (B, T_q, d_model), x_kv (B, T_k, d_model), mask, params, n_heads)`` must compute what
    ``MultiHeadAttention`` computes with the weights in ``params`` (``W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o``; a
    linear map is ``x @ W.T + b``, PyTorch's layout) to within 1e-5: self-attention with a causal mask and
    cross-attention with a padding mask, for several widths and numbers of heads. It names a wrong scale, an inverted
    or ignored mask, a softmax over the queries, heads split or merged in the wrong order, a missing projection or
    bias, and ``x @ W``."""
    cases = (
        (0, translatable("self-attention, causal mask"), 2, 5, 5, 16, 4),
        (1, translatable("cross-attention, padding mask"), 3, 4, 7, 24, 3),
        (2, translatable("self-attention, causal mask"), 1, 6, 6, 32, 8),
        (3, translatable("cross-attention, padding mask"), 2, 3, 5, 8, 1),
    )
    for seed, what, B, T_q, T_k, d, H in cases:
        with seeded(seed), torch.no_grad():
            module = MultiHeadAttention(d, H).eval()
            module.in_proj.bias.normal_(), module.out_proj.bias.normal_()  # random biases show a forgotten one
        W_q, W_k, W_v = module.in_proj.weight.detach().chunk(3)
        b_q, b_k, b_v = module.in_proj.bias.detach().chunk(3)
        params = dict(
            W_q=W_q,
            b_q=b_q,
            W_k=W_k,
            b_k=b_k,
            W_v=W_v,
            b_v=b_v,
            W_o=module.out_proj.weight.detach(),
            b_o=module.out_proj.bias.detach(),
        )
        g = make_rng(seed)
        x_q = torch.randn(B, T_q, d, generator=g)
        x_kv = x_q if what.startswith("self") else torch.randn(B, T_k, d, generator=g)
        mask = causal_mask(T_q) if what.startswith("self") else padding_mask(random_tokens(seed, B, T_k, pad_id=0))
        call = tr(
            "multi_head(x_q of shape {q}, x_kv of shape {kv}, {what}, params, n_heads={H})",
            q=(B, T_q, d),
            kv=(B, T_k, d),
            what=tr(what),
            H=H,
        )
        with torch.no_grad():
            mine = returned_tensor(multi_head(x_q, x_kv, mask, params, H), call)
            expected = module(x_q, x_kv, x_kv, mask)[0]
            assert torch.allclose(_multi_head_by(x_q, x_kv, mask, params, H), expected, atol=1e-5)
            check_shape(mine, (B, T_q, d), call, tr("one d_model-wide row per query, after the output projection"))
            if torch.allclose(mine, expected, atol=1e-5):
                continue
            ignored = (
                tr(
                    "the mask is ignored: each query sees the positions after it; hide the keys where the mask is "
                    "False before the softmax (masked_fill)"
                )
                if what.startswith("self")
                else tr(
                    "the mask is ignored: the queries attend to the padding keys; hide the keys where the mask is "
                    "False before the softmax (masked_fill)"
                )
            )
            mistakes = {
                tr(
                    "the scores are divided by sqrt(d_model) = {root_model:g}, not by sqrt(d_k) = {root:g}: "
                    "the dot products happen inside a head, of d_k = d_model / n_heads features",
                    root_model=math.sqrt(d),
                    root=math.sqrt(d // H),
                ): dict(divisor="d_model"),
                tr("the scores are not divided by sqrt(d_k)"): dict(divisor="none"),
                tr("the mask is inverted: True means 'may attend'"): dict(inverted=True),
                ignored: dict(mask=None),
                tr(
                    "the softmax runs over the queries (dim=-2): each query's weights must sum to 1 over the keys, "
                    "dim=-1 (here T_q = {T_q}, T_k = {T_k})",
                    T_q=T_q,
                    T_k=T_k,
                ): dict(axis=-2),
                tr(
                    "the heads are cut with a raw view(B, H, T, d_k), which takes whole positions: cut each "
                    "position's features into heads, view(B, T, H, d_k), then transpose(1, 2)"
                ): dict(split="raw"),
                tr(
                    "the heads are merged in the wrong order: (B, H, T, d_k) reshaped straight to (B, T, d_model) "
                    "interleaves positions; transpose(1, 2) back to (B, T, H, d_k) first, then reshape"
                ): dict(merge="raw"),
                tr(
                    "the heads are cut and merged with raw reshapes: view(B, T, H, d_k).transpose(1, 2) to split, "
                    "transpose(1, 2).reshape(B, T, d_model) to merge"
                ): dict(split="raw", merge="raw"),
                tr("the output projection (W_o, b_o) is missing: it mixes the heads"): dict(project=False),
                tr("the biases are missing: each projection is x @ W.T + b"): dict(biases=False),
                tr("x @ W: a weight here is stored (out, in), as nn.Linear stores it, so the map is x @ W.T + b"): dict(
                    transposed=False
                ),
            }
            for hint, how in mistakes.items():
                if _same_mistake(
                    mine, _multi_head_by(x_q, x_kv, params=params, n_heads=H, **(dict(mask=mask) | how)), 1e-5
                ):
                    raise AssertionError(f"{call}: {hint}")
        error = float((mine - expected).abs().max())
        raise AssertionError(
            tr(
                "{call} differs from MultiHeadAttention with these weights by up to {error:.2g}: "
                "project, split into heads, attend in each, merge, project",
                call=call,
                error=error,
            )
            + (tr(_NAN_HINT) if mine.isnan().any() else "")
        )
