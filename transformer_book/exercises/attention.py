"""The exercises of chapter 5 (``book/05_attention.ipynb``): scaled dot-product attention, then multi-head attention
from handed-over weights. Each grader recomputes a wrong answer with every classic mistake it knows and names the one
that the reader's answer matches."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from transformer import MultiHeadAttention, causal_mask, padding_mask, target_mask
from transformer.attention import scaled_dot_product_attention
from transformer.tokens import PAD_ID
from transformer.utils import make_rng, seeded
from transformer_book.exercises.grading import check_shape, random_tokens, returned_tensor, varies
from transformer_book.i18n import tr, translatable

__all__ = ["grade_attention", "grade_multi_head_attention"]


def _close(mine: Tensor, expected: Tensor, atol: float) -> bool:
    return tuple(mine.shape) == tuple(expected.shape) and torch.allclose(mine.float(), expected.float(), atol=atol)


def _same_mistake(mine: Tensor, wrong: Tensor, atol: float, compared: Tensor | None = None) -> bool:
    """``mine`` equals the mistaken ``wrong`` wherever ``mine`` is a number and ``compared`` (broadcast) is True: a row
    whose keys are all hidden is NaN when the hidden scores were filled with -inf, whatever the mistake, and has no
    one right value (the package gives it zero weights, a finite fill uniform ones)."""
    if tuple(mine.shape) != tuple(wrong.shape):
        return False
    kept = mine.isfinite() & (True if compared is None else compared.expand_as(mine))
    return bool(kept.any()) and torch.allclose(mine[kept].float(), wrong[kept].float(), atol=atol)


def _no_key(mask: Tensor | None, weights_shape: tuple[int, ...]) -> Tensor | None:
    """``(..., T_q, 1)`` True where a query sees no key (every key hidden); ``None`` where none does."""
    if mask is None:
        return None
    hidden = (~mask.any(dim=-1, keepdim=True)).expand(*weights_shape[:-1], 1)
    return hidden if bool(hidden.any()) else None


def _allowed(
    weights: Tensor, expected_weights: Tensor, expected_output: Tensor, v: Tensor, no_key: Tensor | None, atol: float
) -> tuple[Tensor, Tensor]:
    """The package's weights and output, but where a query sees no key and the answer gives it uniform weights (what
    a fill with torch.finfo(dtype).min gives) instead of the package's zeros, those: either is right."""
    expected_weights, expected_output = expected_weights.float(), expected_output.float()
    if no_key is None or weights.shape != expected_weights.shape:
        return expected_weights, expected_output
    T_k = weights.size(-1)
    uniform = no_key & ((weights.float() - 1 / T_k).abs().amax(dim=-1, keepdim=True) <= atol)  # (..., T_q, 1)
    average = v.float().mean(dim=-2, keepdim=True)  # (..., 1, d_v): what uniform weights give
    return torch.where(uniform, 1 / T_k, expected_weights), torch.where(uniform, average, expected_output)


def _nan_rows_hint(call: str, no_key: Tensor) -> str:
    """The message for NaN where a query sees no key: the -inf fill."""
    query = int(no_key.nonzero()[0][-2])
    return tr(
        "{call}: a query whose keys are all hidden (query {query} here) gets NaN: a -inf fill leaves its softmax "
        "nothing but -inf, and the NaN spreads to every layer after it; fill the hidden scores with "
        "torch.finfo(scores.dtype).min, which gives such a query finite weights",
        call=call,
        query=query,
    )


_NAN_HINT = translatable(
    "; it holds NaN: a query whose keys are all hidden gets a softmax over -inf only (fill with "
    "torch.finfo(dtype).min, and check which keys the mask hides)"
)

_SIZES = {  # the sizes of q other than d_k that a wrong divisor may take, by their names
    -2: translatable("the number of queries, T_q = q.size(-2)"),
    -3: translatable("the size of q's dimension -3 (the heads, or the batch without heads)"),
    -4: translatable("the size of q's dimension -4 (the batch)"),
}


def _attention_by(
    q: Tensor,
    k: Tensor,
    mask: Tensor | None,
    divisor: float | None = None,
    inverted: bool = False,
    axis: int = -1,
    masking: str = "fill",
    scale_after_softmax: bool = False,
) -> Tensor:
    """Attention's weights computed right or with one classic mistake (in float32), for naming a reader's mistake:
    ``divisor`` (default sqrt(d_k)); ``masking`` "fill" (with the dtype's most negative number), "after softmax"
    (hidden weights zeroed), "multiply" (scores * mask) or "add" (scores + mask)."""
    scores = q.float() @ k.float().transpose(-2, -1)  # (..., T_q, T_k)
    divisor = math.sqrt(q.size(-1)) if divisor is None else divisor
    scores = scores if scale_after_softmax else scores / divisor
    if mask is not None and masking == "fill":
        scores = scores.masked_fill(mask if inverted else ~mask, torch.finfo(torch.float32).min)
    elif mask is not None and masking in ("multiply", "add"):
        scores = scores * mask if masking == "multiply" else scores + mask
    weights = torch.softmax(scores, dim=axis)
    weights = weights.masked_fill(~mask, 0.0) if mask is not None and masking == "after softmax" else weights
    return weights / divisor if scale_after_softmax else weights


def _attention_mistakes(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> dict[str, Callable[[], Tensor]]:
    """What each classic mistake makes of the weights (computed when asked), by the hint that names it."""
    d_k, d_v, T_q, T_k = q.size(-1), v.size(-1), q.size(-2), k.size(-2)
    by = lambda **how: lambda: _attention_by(q, k, mask, **how)  # noqa: E731
    root = math.sqrt(d_k)
    mistakes = {
        tr(
            "the scores are not divided by sqrt(d_k) = {root:g}: their variance grows with d_k and the "
            "softmax saturates",
            root=root,
        ): by(divisor=1.0),
        tr(
            "the scores are divided by d_k = {d_k}, not by its square root, {root:g}: the dot product of two "
            "unit-variance vectors has variance d_k, so its standard deviation is sqrt(d_k)",
            d_k=d_k,
            root=root,
        ): by(divisor=float(d_k)),
        tr(
            "the scores are multiplied by sqrt(d_k) = {root:g}: divide by it, to bring their variance back from d_k "
            "to 1",
            root=root,
        ): by(divisor=1 / root),
        tr(
            "the scores are divided by sqrt(d_v) = {root_v:g}, the width of the values: divide by "
            "sqrt(d_k) = {root:g}, the width of the queries and keys whose dot products they are",
            root_v=math.sqrt(d_v),
            root=root,
        ): by(divisor=math.sqrt(d_v)),
        tr(
            "the scores are divided by sqrt(T_k) = {root_n:g}, the root of the number of keys: divide by "
            "sqrt(d_k) = {root:g}, q.size(-1)",
            root_n=math.sqrt(T_k),
            root=root,
        ): by(divisor=math.sqrt(T_k)),
        **{
            tr(
                "the scores are divided by sqrt({n}) = {root_n:g}, the root of {size}: divide by sqrt(d_k) = "
                "{root:g}, q.size(-1)",
                n=q.size(dim),
                root_n=math.sqrt(q.size(dim)),
                size=tr(name),
                root=root,
            ): by(divisor=math.sqrt(q.size(dim)))
            for dim, name in _SIZES.items()
            if dim >= -q.dim() and q.size(dim) not in (1, d_k, d_v, T_k)
        },
        tr(
            "the weights are divided by sqrt(d_k) after the softmax: each query's weights sum to 1/sqrt(d_k) = "
            "{inverse:.3g}, not 1; divide the scores, before the softmax",
            inverse=1 / root,
        ): by(scale_after_softmax=True),
        tr(
            "the softmax runs over the queries (dim=-2): each query's weights must sum to 1 over the keys, dim=-1 "
            "(here T_q = {T_q}, T_k = {T_k})",
            T_q=T_q,
            T_k=T_k,
        ): by(axis=-2),
        **{
            tr(
                "the softmax runs over dim={dim}, not over the keys: each query's weights must sum to 1 over the "
                "keys, dim=-1",
                dim=q.dim() + axis,
            ): by(axis=axis)
            for axis in range(-q.dim(), -2)
        },
    }
    if mask is not None:
        mistakes |= {
            tr("the mask is inverted: True means 'may attend', so hide the keys where the mask is False (~mask)"): by(
                inverted=True
            ),
            tr(
                "the mask is applied after the softmax: the hidden keys' weights are zeroed, but the softmax has "
                "already shared each row among them, so a row sums to less than 1; fill the hidden scores with "
                "torch.finfo(scores.dtype).min before the softmax"
            ): by(masking="after softmax"),
            tr(
                "a hidden score becomes 0 (the mask multiplied into the scores, or masked_fill with 0), and exp(0) "
                "gives a hidden key about as much weight as any other; fill the hidden scores with "
                "torch.finfo(scores.dtype).min (masked_fill) before the softmax"
            ): by(masking="multiply"),
            tr(
                "the mask is added to the scores: a bool mask adds 1 to each visible key and hides nothing (an "
                "additive mask holds 0 where a key is visible and a very negative number where it is hidden); fill "
                "the hidden scores with torch.finfo(scores.dtype).min (masked_fill)"
            ): by(masking="add"),
        }
    return mistakes


_DROPOUT_HINT = translatable(
    "two calls with the same inputs give different results: dropout is on (F.dropout drops by default, "
    "training=True, and an nn.Dropout drops until .eval()); this function takes no dropout, and the "
    "package compares without it"
)


def _attention_cases() -> Iterable[tuple[str, Tensor, Tensor, Tensor, Tensor | None]]:
    """``(what, q, k, v, mask)``: heads and a padding mask with T_q != T_k, a causal mask, a target mask where a
    query sees no key, no mask, float16."""
    g = make_rng(0)
    B, H, T_q, T_k, d_k, d_v = 2, 3, 4, 6, 16, 5
    q, k, v = (torch.randn(B, H, T, d, generator=g) for T, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
    padding = (torch.arange(T_k) < torch.tensor([T_k, 3])[:, None])[:, None, None, :]  # (B, 1, 1, T_k)
    yield translatable("a padding mask (B, 1, 1, T_k)"), q, k, v, padding
    T, d = 5, 32
    x = torch.randn(3, T, d, generator=g)  # (B, T, d): self-attention without heads
    yield translatable("a causal mask (T, T)"), x, x, x, causal_mask(T)[0, 0]
    tokens = torch.tensor([[PAD_ID, PAD_ID, 7, 8, 9, 10], [4, 5, 6, 7, PAD_ID, PAD_ID]])  # padding first, then last
    yield translatable("a target mask whose first keys are padding"), k, k, v, target_mask(tokens)
    yield "mask=None", q[:, 0], k[:, 0], v[:, 0], None
    yield translatable("float16 inputs and a padding mask"), q.half(), k.half(), v.half(), padding


def grade_attention(attention: Callable[[Tensor, Tensor, Tensor, Tensor | None], tuple[Tensor, Tensor]]) -> None:
    """``attention(q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v), mask)`` must return ``(output (..., T_q,
    d_v), weights (..., T_q, T_k))`` as ``transformer.attention.scaled_dot_product_attention`` does (to within 1e-5,
    1e-2 in float16), ``mask`` bool (True = may attend) broadcastable to the scores, or ``None``: with heads and a
    padding mask (T_q != T_k, d_v != d_k), a causal mask, a target mask with a query that sees no key (whose weights
    may be zeros, as the package gives, or uniform, as a finite fill gives, but not NaN), no mask, and in float16. It
    names a missing scale, a scale by d_k, sqrt(d_v), sqrt of another size or after the softmax, a multiplied scale, an
    inverted mask, a mask applied after the softmax, multiplied into or added to the scores, a softmax over a wrong
    axis, outputs in the wrong order, dropout left on, a -inf fill (NaN where a query sees no key) and a -1e9 that
    float16 cannot hold."""
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
        if output.shape == expected_weights.shape != expected_output.shape == weights.shape:
            raise AssertionError(
                tr("{call} returns (weights, output): return the output first, (output, weights)", call=call)
            )
        check_shape(weights, tuple(expected_weights.shape), call, tr("the weights: one per (query, key)"))
        check_shape(output, tuple(expected_output.shape), call, tr("the output: one row of d_v per query"))
        no_key = _no_key(mask, tuple(weights.shape))
        allowed_weights, allowed_output = _allowed(weights, expected_weights, expected_output, v, no_key, atol)
        if _close(weights, allowed_weights, atol):
            if _close(output, allowed_output, atol):
                continue
            if varies(attention, (q, k, v, mask), result):
                raise AssertionError(tr("{call}: {hint}", call=call, hint=tr(_DROPOUT_HINT)))
            raise AssertionError(tr("{call}: the weights are right, the output is not: it is weights @ v", call=call))
        if varies(attention, (q, k, v, mask), result):
            raise AssertionError(tr("{call}: {hint}", call=call, hint=tr(_DROPOUT_HINT)))
        seen = None if no_key is None else ~no_key
        if no_key is not None and weights.isnan().any() and _same_mistake(weights, allowed_weights, atol, seen):
            raise AssertionError(_nan_rows_hint(call, no_key))
        for hint, wrong in _attention_mistakes(q, k, v, mask).items():
            if _same_mistake(weights, wrong(), atol, seen):
                raise AssertionError(tr("{call}: {hint}", call=call, hint=hint))
        error = float((weights.float() - allowed_weights).abs().max())
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
    divisor: str = "sqrt(d_k)",
    inverted: bool = False,
    split: str = "heads",
    merge: str = "heads",
    project: bool = True,
    biases: bool = True,
    transposed: bool = True,
    axis: int = -1,
) -> Tensor:
    """Multi-head attention from handed-over weights, right or with one classic mistake, for naming it. Hidden scores
    are filled with the dtype's most negative number, so that a query that sees no key gets uniform weights."""
    B, T_q, d = x_q.shape
    T_k, d_k = x_kv.size(1), d // n_heads

    def linear(x: Tensor, name: str) -> Tensor:
        W = params[f"W_{name}"]
        return x @ (W.T if transposed else W) + (params[f"b_{name}"] if biases else 0.0)

    def heads(x: Tensor, T: int) -> Tensor:  # (B, T, d) -> (B, H, T, d_k); split "view": (B, T, H, d_k)
        if split == "raw":
            return x.reshape(B, n_heads, T, d_k)
        x = x.view(B, T, n_heads, d_k)
        return x.transpose(1, 2) if split == "heads" else x

    q, k, v = heads(linear(x_q, "q"), T_q), heads(linear(x_kv, "k"), T_k), heads(linear(x_kv, "v"), T_k)
    scale = {"sqrt(d_k)": math.sqrt(d_k), "d_k": d_k, "sqrt(d_model)": math.sqrt(d), "none": 1.0}[divisor]
    scores = q @ k.transpose(-2, -1) / scale
    if mask is not None:
        scores = scores.masked_fill(mask if inverted else ~mask, torch.finfo(scores.dtype).min)
    out = torch.softmax(scores, dim=axis) @ v  # (B, H, T_q, d_k)
    merged = out.transpose(1, 2).reshape(B, T_q, d) if merge == "heads" else out.reshape(B, T_q, d)
    return linear(merged, "o") if project else merged  # (B, T_q, d_model)


_IGNORED_MASK = {  # what a query sees when the mask of each case is ignored
    "causal": translatable(
        "the mask is ignored: each query sees the positions after it; hide the keys where the mask is False before "
        "the softmax (masked_fill)"
    ),
    "padding": translatable(
        "the mask is ignored: the queries attend to the padding keys; hide the keys where the mask is False before "
        "the softmax (masked_fill)"
    ),
    "target": translatable(
        "the mask is ignored: each query sees the positions after it and the padding; hide the keys where the mask "
        "is False before the softmax (masked_fill)"
    ),
}


def _heads_not_transposed(multi_head: Callable[..., Tensor], x_q: Tensor, params: dict[str, Tensor], H: int) -> bool:
    """Whether ``multi_head``, which failed with this case's mask, is self-attention with its heads cut by
    ``view(B, T, H, d_k)`` and never transposed (its scores then are ``(B, T, H, H)``, heads attending to heads, which
    no mask of the case fits): tried with a mask that hides nothing and fits any scores."""
    hides_nothing = torch.ones(1, 1, 1, 1, dtype=torch.bool)
    try:
        mine = multi_head(x_q, x_q, hides_nothing, params, H)
    except RuntimeError:
        return False
    return isinstance(mine, Tensor) and any(
        _close(mine, _multi_head_by(x_q, x_q, None, params, H, split="view", merge=merge), 1e-5)
        for merge in ("heads", "raw")
    )


def _multi_head_cases() -> Iterable[tuple[int, str, str, int, int, int, int, int]]:
    """``(seed, what, kind of mask, B, T_q, T_k, d_model, n_heads)``."""
    yield 0, translatable("self-attention, causal mask"), "causal", 2, 5, 5, 24, 4  # sqrt(d_model) != d_k
    yield 1, translatable("cross-attention, padding mask"), "padding", 3, 4, 7, 24, 3
    yield 2, translatable("self-attention, causal mask"), "causal", 1, 6, 6, 32, 8
    yield 3, translatable("cross-attention, padding mask"), "padding", 2, 3, 5, 8, 1
    yield 4, translatable("self-attention, target mask with padding first"), "target", 2, 5, 5, 16, 2


def grade_multi_head_attention(multi_head: Callable[..., Tensor]) -> None:
    """``multi_head(x_q (B, T_q, d_model), x_kv (B, T_k, d_model), mask, params, n_heads)`` must compute what
    ``MultiHeadAttention`` computes with the weights in ``params`` (``W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o``; a
    linear map is ``x @ W.T + b``, PyTorch's layout) to within 1e-5: self-attention with a causal mask,
    cross-attention with a padding mask and self-attention with a target mask where a query sees no key (uniform
    weights there are right too, not NaN), for several widths and numbers of heads. It names a wrong scale, an
    inverted or ignored mask, a softmax over the queries, heads split or merged in the wrong order, a missing
    projection or bias, ``x @ W``, dropout left on and a -inf fill."""
    for seed, what, kind, B, T_q, T_k, d, H in _multi_head_cases():
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
        x_kv = x_q if kind != "padding" else torch.randn(B, T_k, d, generator=g)
        tokens = random_tokens(seed, B, T_k, pad_id=PAD_ID)  # the last row starts with padding
        mask = {"causal": causal_mask(T_q), "padding": padding_mask(tokens), "target": target_mask(tokens)}[kind]
        call = tr(
            "multi_head(x_q of shape {q}, x_kv of shape {kv}, {what}, params, n_heads={H})",
            q=(B, T_q, d),
            kv=(B, T_k, d),
            what=tr(what),
            H=H,
        )
        with torch.no_grad():
            try:
                mine = returned_tensor(multi_head(x_q, x_kv, mask, params, H), call)
            except RuntimeError as error:
                if kind != "padding" and _heads_not_transposed(multi_head, x_q, params, H):
                    raise AssertionError(
                        tr(
                            "{call} fails ({error}): the heads are cut with view(B, T, H, d_k) but not transposed "
                            "to (B, H, T, d_k), so each position's heads attend to one another instead of the "
                            "positions; add .transpose(1, 2) after the view, and undo it before merging",
                            call=call,
                            error=error,
                        )
                    ) from None
                raise
            expected = module(x_q, x_kv, x_kv, mask)[0]  # a query that sees no key: zero weights
            uniform = _multi_head_by(x_q, x_kv, mask, params, H)  # there: uniform weights
            check_shape(mine, (B, T_q, d), call, tr("one d_model-wide row per query, after the output projection"))
            if torch.allclose(mine, expected, atol=1e-5) or torch.allclose(mine, uniform, atol=1e-5):
                continue
            if varies(multi_head, (x_q, x_kv, mask, params, H), (mine,)):
                raise AssertionError(tr("{call}: {hint}", call=call, hint=tr(_DROPOUT_HINT)))
            no_key = _no_key(mask, (B, H, T_q, T_k))
            seen = None if no_key is None else ~no_key.any(dim=1)  # (B, T_q, 1): the queries that see a key
            if no_key is not None and mine.isnan().any() and _same_mistake(mine, uniform, 1e-5, seen):
                raise AssertionError(_nan_rows_hint(call, no_key))
            mistakes = {
                tr(
                    "the scores are divided by sqrt(d_model) = {root_model:g}, not by sqrt(d_k) = {root:g}: "
                    "the dot products happen inside a head, of d_k = d_model / n_heads features",
                    root_model=math.sqrt(d),
                    root=math.sqrt(d // H),
                ): dict(divisor="sqrt(d_model)"),
                tr("the scores are not divided by sqrt(d_k)"): dict(divisor="none"),
                tr(
                    "the scores are divided by d_k = {d_k}, not by its square root, {root:g}",
                    d_k=d // H,
                    root=math.sqrt(d // H),
                ): dict(divisor="d_k"),
                tr("the mask is inverted: True means 'may attend'"): dict(inverted=True),
                tr(_IGNORED_MASK[kind]): dict(mask=None),
                tr(
                    "the softmax runs over the queries (dim=-2): each query's weights must sum to 1 over the keys, "
                    "dim=-1 (here T_q = {T_q}, T_k = {T_k})",
                    T_q=T_q,
                    T_k=T_k,
                ): dict(axis=-2),
                tr(
                    "the softmax runs over the heads (dim=1): each query's weights must sum to 1 over the keys, dim=-1"
                ): dict(axis=1),
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
                wrong = _multi_head_by(x_q, x_kv, params=params, n_heads=H, **(dict(mask=mask) | how))
                if _same_mistake(mine, wrong, 1e-5, seen):
                    raise AssertionError(tr("{call}: {hint}", call=call, hint=hint))
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
