"""The chapters' exercises: the reader writes a small piece of the model, and a check compares it with the package.

Each ``grade_*`` function takes the reader's function (and, for decoding, a model), runs it on several shapes and
seeds against :mod:`transformer`, and raises ``AssertionError`` with what is wrong (naming a classic mistake when it
recognises one). :func:`exercise` is what a chapter's check cell calls: it runs a check on the reader's answer and
says "not done yet" for a starter that still raises ``NotImplementedError``, so a chapter runs from top to bottom as
the reader first sees it.

- masks (chapter 4): :func:`grade_causal_mask`, :func:`grade_padding_mask`, :func:`grade_target_mask`;
- positional encoding (chapter 3): :func:`grade_sinusoid_table`, :func:`grade_offset_matrix`;
- embeddings (chapter 2): :func:`grade_vocabulary_parameters`, :func:`grade_cosine_similarity`;
- attention (chapter 5): :func:`grade_attention`, :func:`grade_multi_head_attention`;
- the model (chapter 6): :func:`grade_parameter_count`, :func:`grade_encoder_layer`, :func:`grade_decoder_layer`;
- training (chapter 7): :func:`grade_smoothed_targets`, :func:`grade_noam_lr`;
- decoding (chapter 8): :func:`grade_next_token`, :func:`grade_greedy_decode`;
- inside the model (chapter 11): :func:`grade_previous_token_weight`, :func:`grade_silenced_head`;
- cost (chapter 13): :func:`grade_encoder_layer_flops`, :func:`grade_longest_length`;
- dates (chapter 9): :func:`grade_ordinal_words`, :func:`grade_length_batches`;
- translation (chapter 10): :func:`grade_merge_step` (one step of byte-pair encoding), :func:`grade_clipped_precision`
  (BLEU's clipped n-gram counts, :func:`clipped_matches`).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.flop_counter import FlopCounterMode

from transformer import (
    DecoderLayer,
    EncoderLayer,
    MultiHeadAttention,
    TransformerConfig,
    causal_mask,
    padding_mask,
    target_mask,
)
from transformer.attention import scaled_dot_product_attention
from transformer.decoding import greedy_decode, greedy_steps
from transformer.embeddings import sinusoidal_table
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.bpe import apply_merges, learn_merges, pre_tokenize
from transformer.train.bucketing import padding_fraction, random_batches
from transformer.train.dates import number_words, ordinal_suffix, ordinal_words
from transformer.train.objective import smoothed_targets
from transformer.train.schedule import noam_lr
from transformer.utils import make_rng, seeded
from transformer_book.ablation import aligned_weight
from transformer_book.cost import encoder_layer_flops, readable_attention, score_bytes
from transformer_book.i18n import tr, translatable
from transformer_book.pitfalls import attention_with_scale_dim, multiply_mask_attention, sinusoidal_table_base_1000
from transformer_book.viz.overview import meta_model

__all__ = [
    "grade_attention",
    "grade_causal_mask",
    "grade_clipped_precision",
    "grade_cosine_similarity",
    "grade_decoder_layer",
    "grade_encoder_layer",
    "grade_encoder_layer_flops",
    "grade_greedy_decode",
    "grade_length_batches",
    "grade_longest_length",
    "grade_merge_step",
    "grade_multi_head_attention",
    "grade_next_token",
    "grade_noam_lr",
    "grade_offset_matrix",
    "grade_ordinal_words",
    "grade_padding_mask",
    "grade_parameter_count",
    "grade_previous_token_weight",
    "grade_silenced_head",
    "grade_sinusoid_table",
    "grade_smoothed_targets",
    "grade_target_mask",
    "grade_vocabulary_parameters",
    "clipped_matches",
    "exercise",
]

SEEDS = (0, 1, 2)


def exercise(check: Callable[..., None], answer: Callable, *args: object) -> None:
    """Run ``check(answer, *args)`` and say how the reader's ``answer`` did: "correct", or "not done yet" while it
    raises ``NotImplementedError`` (the starter); a wrong answer raises ``AssertionError`` naming what is wrong."""
    name = getattr(answer, "__name__", tr("your answer"))
    try:
        check(answer, *args)
    except NotImplementedError:
        print(
            tr(
                "{name}: not done yet (it raises NotImplementedError). Write it above, run that cell, then this one.",
                name=name,
            )
        )
        return
    except AssertionError as error:
        raise AssertionError(tr("{name} is not right yet: {error}", name=name, error=error)) from None
    print(tr("{name}: correct", name=name))


def _tensor(value: object, call: str) -> Tensor:
    assert isinstance(value, Tensor), tr(
        "{call} returned {kind}, not a torch.Tensor", call=call, kind=type(value).__name__
    )
    return value


def _shape(value: Tensor, expected: tuple[int, ...], call: str, hint: str = "") -> None:
    shape = tuple(value.shape)
    assert shape == expected, tr(
        "{call} has shape {shape}, not {expected}", call=call, shape=shape, expected=expected
    ) + (f": {hint}" if hint else "")


def _first_index(differ: Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in differ.nonzero()[0])


# ---------------------------------------------------------------------------------------------------------------
# Chapter 4: masks. The package's convention: bool, True = "this query may attend to this key", 4-D.


def _bool_mask(mask: Tensor, call: str) -> None:
    assert mask.dtype == torch.bool, tr(
        "{call} has dtype {dtype}: a mask is bool, True where the query may attend (compare with ==, or call .bool())",
        call=call,
        dtype=mask.dtype,
    )


def grade_causal_mask(causal: Callable[[int], Tensor]) -> None:
    """``causal(T)`` must equal ``transformer.causal_mask(T)``: ``(1, 1, T, T)`` bool, ``True`` on and below the
    diagonal, for T = 5, 2, 9, 1."""
    for T in (5, 2, 9, 1):
        call = f"causal({T})"
        mine, expected = _tensor(causal(T), call), causal_mask(T)
        _shape(mine, (1, 1, T, T), call, tr("two leading axes of size 1 let it broadcast against (B, H, T, T) scores"))
        _bool_mask(mine, call)
        if torch.equal(mine, expected):
            continue
        if torch.equal(mine, ~expected):
            raise AssertionError(
                tr(
                    "{call} is inverted: True must mean 'may attend' (nn.MultiheadAttention's True "
                    "means 'ignore'; this book's and F.scaled_dot_product_attention's mean 'attend')",
                    call=call,
                )
            )
        if torch.equal(mine, expected.transpose(-2, -1)):
            raise AssertionError(
                tr(
                    "{call} is True above the diagonal: query i sees keys i..T-1, the future, and "
                    "not the past (lower triangle, tril, not triu)",
                    call=call,
                )
            )
        if torch.equal(mine, expected & ~torch.eye(T, dtype=torch.bool)):
            raise AssertionError(
                tr(
                    "{call} is False on the diagonal: a position must see itself (the first query would see no key at "
                    "all)",
                    call=call,
                )
            )
        i, j = _first_index(mine != expected)[2:]
        raise AssertionError(
            tr(
                "{call}[0, 0, {i}, {j}] is {value}: query {i} may attend to keys 0..{i} only",
                call=call,
                i=i,
                j=j,
                value=bool(mine[0, 0, i, j]),
            )
        )


def _tokens(seed: int, B: int, S: int, pad_id: int) -> Tensor:
    """``(B, S)`` random ids in 0..5 (``pad_id`` among them), with at least one pad, sometimes first."""
    tokens = torch.randint(0, 6, (B, S), generator=make_rng(seed))
    tokens[0, -1] = pad_id  # right padding
    tokens[-1, 0] = pad_id  # and padding first, which a write-up's mask may not expect
    return tokens


def _mask_cases() -> Iterable[tuple[Tensor, int]]:
    for seed, (B, S), pad_id in zip(SEEDS, ((2, 5), (3, 7), (4, 1)), (0, 3, 0), strict=True):
        yield _tokens(seed, B, S, pad_id), pad_id


def grade_padding_mask(padding: Callable[[Tensor, int], Tensor]) -> None:
    """``padding(tokens (B, S), pad_id)`` must equal ``transformer.padding_mask``: ``(B, 1, 1, S)`` bool, ``True``
    where the *key* is a real token, for several batches, with ``pad_id`` 0 and 3 and padding anywhere."""
    for tokens, pad_id in _mask_cases():
        B, S = tokens.shape
        call = tr("padding(tokens of shape {shape}, pad_id={pad_id})", shape=(B, S), pad_id=pad_id)
        mine, expected = _tensor(padding(tokens, pad_id), call), padding_mask(tokens, pad_id)
        if tuple(mine.shape) == (B, 1, S, 1) and S > 1:
            raise AssertionError(
                tr(
                    "{call} has shape {shape}: it hides padding *queries*; a padding mask "
                    "hides padding keys from every query, shape (B, 1, 1, S)",
                    call=call,
                    shape=(B, 1, S, 1),
                )
            )
        _shape(mine, (B, 1, 1, S), call, tr("one row per sequence, broadcast over heads and queries"))
        _bool_mask(mine, call)
        if torch.equal(mine, ~expected):
            raise AssertionError(
                tr("{call} is True on the padding: True must mean 'a real token, may be attended to'", call=call)
            )
        if not torch.equal(mine, expected):
            b, *_, s = _first_index(mine != expected)
            hint = tr(" (is pad_id used, or 0 hard-coded?)") if pad_id != 0 else ""
            raise AssertionError(
                tr(
                    "{call}[{b}, 0, 0, {s}] is {value} for token {token}{hint}",
                    call=call,
                    b=b,
                    s=s,
                    value=bool(mine[b, 0, 0, s]),
                    token=int(tokens[b, s]),
                    hint=hint,
                )
            )


def grade_target_mask(target: Callable[[Tensor, int], Tensor]) -> None:
    """``target(tokens (B, T), pad_id)`` must equal ``transformer.target_mask``: ``(B, 1, T, T)`` bool, a key visible
    only if it is a real token *and* not in the future."""
    for tokens, pad_id in _mask_cases():
        B, T = tokens.shape
        call = tr("target(tokens of shape {shape}, pad_id={pad_id})", shape=(B, T), pad_id=pad_id)
        mine = _tensor(target(tokens, pad_id), call)
        expected = padding_mask(tokens, pad_id) & causal_mask(T)
        _shape(
            mine,
            (B, 1, T, T),
            call,
            tr("the padding mask (B, 1, 1, T) and the causal mask (1, 1, T, T) broadcast to it"),
        )
        _bool_mask(mine, call)
        if torch.equal(mine, padding_mask(tokens, pad_id) | causal_mask(T)):
            raise AssertionError(
                tr(
                    "{call} shows a key that one of the masks hides: combine them with & (visible if "
                    "real *and* not in the future), not |",
                    call=call,
                )
            )
        if not torch.equal(mine, expected):
            b, _, i, j = _first_index(mine != expected)
            raise AssertionError(
                tr(
                    "{call}[{b}, 0, {i}, {j}] is {value}: key {j} is token {token}, query {i}",
                    call=call,
                    b=b,
                    i=i,
                    j=j,
                    value=bool(mine[b, 0, i, j]),
                    token=int(tokens[b, j]),
                )
            )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 3: positional encoding.


def grade_sinusoid_table(table: Callable[[int, int], Tensor]) -> None:
    """``table(max_positions, d_model)`` must equal ``transformer.embeddings.sinusoidal_table`` to within 1e-4:
    ``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(...)``, for several sizes."""
    for L, d in ((1, 2), (10, 4), (50, 16), (128, 64)):
        call = f"table({L}, {d})"
        mine = _tensor(table(L, d), call)
        _shape(mine, (L, d), call, tr("one row per position, one column per dimension"))
        mine, expected = mine.double(), sinusoidal_table(L, d).double()
        angles = torch.arange(L, dtype=torch.float64)[:, None] * 10000.0 ** (
            -torch.arange(0, d, 2, dtype=torch.float64) / d
        )
        if L > 1 and torch.allclose(mine, torch.cat([angles.sin(), angles.cos()], dim=1), atol=1e-4):
            raise AssertionError(
                tr(
                    "{call} has the sines in the first half of the columns and the cosines in the "
                    "second (tensor2tensor's layout); the paper interleaves them: column 2i is the sine, "
                    "2i+1 the cosine of the same frequency",
                    call=call,
                )
            )
        if torch.allclose(mine[:, 0::2], expected[:, 1::2], atol=1e-4):
            raise AssertionError(
                tr("{call} has cosines in the even columns: column 2i is the sine, 2i+1 the cosine", call=call)
            )
        if L > 1 and d > 2 and torch.allclose(mine, sinusoidal_table_base_1000(L, d).double(), atol=1e-4):
            raise AssertionError(
                tr(
                    "{call} uses the base 1000: the paper's frequencies are 1 / 10000^(2i/d_model), "
                    "wavelengths from 2 pi to 10000 * 2 pi positions (base 1000 stops at 1000 * 2 pi)",
                    call=call,
                )
            )
        differ = (mine - expected).abs() > 1e-4
        if differ.any():
            pos, col = _first_index(differ)
            raise AssertionError(
                tr(
                    "{call}[{pos}, {col}] is {mine:.4f}, not {expected:.4f} (pair i = {pair}, frequency "
                    "1 / 10000^(2i/{d}) = {frequency:.4g})",
                    call=call,
                    pos=pos,
                    col=col,
                    mine=float(mine[pos, col]),
                    expected=float(expected[pos, col]),
                    pair=col // 2,
                    d=d,
                    frequency=10000.0 ** (-2 * (col // 2) / d),
                )
            )


def grade_offset_matrix(offset: Callable[[int, int], Tensor]) -> None:
    """``offset(k, d_model)`` must be the ``(d_model, d_model)`` matrix ``M_k`` with ``PE(pos + k) = M_k PE(pos)``
    for every position of the package's table (to within 1e-5), for several offsets and widths."""
    L = 200
    for d in (4, 16, 64):
        pe = sinusoidal_table(L, d).double()  # (L, d)
        for k in (1, 3, 25, 0):
            call = f"offset({k}, {d})"
            M = _tensor(offset(k, d), call)
            _shape(M, (d, d), call)
            M = M.double()
            moved = pe[: L - k] @ M.T  # (L - k, d): row pos is M_k PE(pos)
            error = (moved - pe[k:]).abs()
            if float(error.max()) <= 1e-5:
                continue
            if k and torch.allclose(pe[k:] @ M.T, pe[: L - k], atol=1e-5):
                raise AssertionError(
                    tr(
                        "{call} maps PE(pos) to PE(pos - {k}): it turns the wrong way (transpose each 2x2 block)",
                        call=call,
                        k=k,
                    )
                )
            pos, col = _first_index(error > 1e-5)
            raise AssertionError(
                tr(
                    "(M_k PE(pos))[{col}] = {moved:.4f} but PE(pos + k)[{col}] = {expected:.4f} for {call}, "
                    "pos = {pos} (pair i = {pair}, rows {first} and {second})",
                    col=col,
                    moved=float(moved[pos, col]),
                    expected=float(pe[pos + k, col]),
                    call=call,
                    pos=pos,
                    pair=col // 2,
                    first=2 * (col // 2),
                    second=2 * (col // 2) + 1,
                )
            )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 2: embeddings.


def _describe(config: TransformerConfig) -> str:
    """The config's fields that differ from the defaults, as a constructor call."""
    changed = [
        f"{f.name}={getattr(config, f.name)!r}"
        for f in fields(config)
        if f.name in ("src_vocab_size", "tgt_vocab_size") or getattr(config, f.name) != f.default
    ]
    return f"TransformerConfig({', '.join(changed)})"


def _count_cases(small: bool) -> list[TransformerConfig]:
    """Configurations that differ in every size and switch a count depends on (small ones, or the paper's)."""
    width = (
        dict(d_model=32, n_heads=4, d_ff=48, n_encoder_layers=2, n_decoder_layers=3, max_positions=64) if small else {}
    )
    return [
        TransformerConfig(11, 13, **width),
        TransformerConfig(37_000, 37_000, share_embeddings=True, tie_output_embedding=True),
        TransformerConfig(20, 20, tie_output_embedding=True, **width),
        TransformerConfig(20, 20, share_embeddings=True, **width),
        TransformerConfig(9, 14, tie_output_embedding=True, norm_first=True, **width),
        TransformerConfig(16, 16, positional_encoding="learned", final_norm=True, **width),
    ]


def _vocabulary_matrices(config: TransformerConfig) -> int:
    model = meta_model(config)
    parts = {id(p): p for p in (model.src_embed.weight, model.tgt_embed.weight, model.lm_head.weight)}
    return sum(p.numel() for p in parts.values())


def grade_vocabulary_parameters(count: Callable[[TransformerConfig], int]) -> None:
    """``count(config)`` must be the number of parameters in the source embedding, the target embedding and the
    output projection's weight, a matrix shared by two of them counted once, for configurations with and without
    ``share_embeddings`` and ``tie_output_embedding`` and with two vocabularies of different sizes."""
    for config in _count_cases(small=True):
        mine, expected = count(config), _vocabulary_matrices(config)
        assert mine == expected, tr(
            "count({config}) is {mine:,}, but its vocabulary matrices hold {expected:,} parameters "
            "({rows:,} rows of d_model = {d_model})",
            config=_describe(config),
            mine=mine,
            expected=expected,
            rows=expected // config.d_model,
            d_model=config.d_model,
        )


def grade_cosine_similarity(similarity: Callable[[Tensor], Tensor]) -> None:
    """``similarity(E (V, d))`` must be the ``(V, V)`` cosine similarities of the rows of ``E`` (to within 1e-5):
    ``E[i] . E[j] / (|E[i]| |E[j]|)``, for several seeds and shapes."""
    for seed, (V, d) in zip(SEEDS, ((5, 8), (12, 3), (1, 4)), strict=True):
        E = 3 * torch.randn(V, d, generator=make_rng(seed))
        call = tr("similarity(E of shape {shape})", shape=(V, d))
        mine = _tensor(similarity(E), call)
        _shape(mine, (V, V), call, tr("one row and one column per token"))
        expected = F.cosine_similarity(E[:, None], E[None], dim=-1)  # (V, V)
        if not torch.allclose(mine.diagonal().double(), torch.ones(V, dtype=torch.float64), atol=1e-5):
            raise AssertionError(
                tr(
                    "{call} has {diagonal:.3f} on the diagonal, not 1: a vector's cosine "
                    "with itself is 1 (divide each dot product by the norms of both rows)",
                    call=call,
                    diagonal=float(mine[0, 0]),
                )
            )
        if not torch.allclose(mine, expected, atol=1e-5):
            i, j = _first_index((mine - expected).abs() > 1e-5)
            raise AssertionError(
                tr(
                    "{call}[{i}, {j}] is {mine:.4f}, not {expected:.4f}",
                    call=call,
                    i=i,
                    j=j,
                    mine=float(mine[i, j]),
                    expected=float(expected[i, j]),
                )
            )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 5: attention.


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
        output, weights = (_tensor(x, call) for x in result)
        expected_output, expected_weights = scaled_dot_product_attention(q, k, v, mask)
        _shape(weights, tuple(expected_weights.shape), call, tr("the weights: one per (query, key)"))
        _shape(output, tuple(expected_output.shape), call, tr("the output: one row of d_v per query"))
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
        mask = causal_mask(T_q) if what.startswith("self") else padding_mask(_tokens(seed, B, T_k, pad_id=0))
        call = tr(
            "multi_head(x_q of shape {q}, x_kv of shape {kv}, {what}, params, n_heads={H})",
            q=(B, T_q, d),
            kv=(B, T_k, d),
            what=tr(what),
            H=H,
        )
        with torch.no_grad():
            mine = _tensor(multi_head(x_q, x_kv, mask, params, H), call)
            expected = module(x_q, x_kv, x_kv, mask)[0]
            assert torch.allclose(_multi_head_by(x_q, x_kv, mask, params, H), expected, atol=1e-5)
            _shape(mine, (B, T_q, d), call, tr("one d_model-wide row per query, after the output projection"))
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


# ---------------------------------------------------------------------------------------------------------------
# Chapter 6: the model.


def grade_parameter_count(count: Callable[[TransformerConfig], int]) -> None:
    """``count(config)`` must be ``Transformer(config).num_parameters()`` exactly, for the paper's base model and
    small models that differ in vocabularies, layers per stack, sharing, tying, pre-norm (which adds a final layer
    norm to each stack) and learned positions (one table, shared by the encoder and the decoder)."""
    for config in _count_cases(small=False)[1:2] + _count_cases(small=True):
        mine, expected = count(config), meta_model(config).num_parameters()
        values = dict(call=f"count({_describe(config)})", mine=mine, expected=expected, d_model=config.d_model)
        assert mine == expected, (
            tr(
                "{call} is {mine:,}, but the model has {expected:,} parameters (short by {gap:,}; d_model = {d_model})",
                gap=expected - mine,
                **values,
            )
            if mine < expected
            else tr(
                "{call} is {mine:,}, but the model has {expected:,} parameters (over by {gap:,}; d_model = {d_model})",
                gap=mine - expected,
                **values,
            )
        )


def _encoder_layer_by(layer: EncoderLayer, x: Tensor, mask: Tensor, norm_first: bool) -> Tensor:
    """The encoder layer in one layout or the other (eval mode: no dropout), for naming a reader's mix-up."""
    attend = lambda h: layer.self_attn(h, h, h, mask)[0]
    if norm_first:
        x = x + attend(layer.norm1(x))
        return x + layer.feed_forward(layer.norm2(x))
    x = layer.norm1(x + attend(x))
    return layer.norm2(x + layer.feed_forward(x))


def grade_encoder_layer(encoder_layer: Callable[[EncoderLayer, Tensor, Tensor], Tensor]) -> None:
    """``encoder_layer(layer, x (B, S, d_model), mask (B, 1, 1, S))`` must compute what ``layer(x, mask)[0]`` does
    (to within 1e-5) from the layer's parts, ``layer.self_attn``, ``layer.feed_forward``, ``layer.norm1`` and
    ``layer.norm2``, for post-norm and pre-norm layers (``layer.norm_first``), several seeds, shapes and padding."""
    for seed, (B, S, d, H) in zip(SEEDS, ((2, 5, 16, 4), (3, 7, 8, 2), (1, 4, 32, 8)), strict=True):
        for norm_first in (False, True):
            with seeded(seed), torch.no_grad():
                layer = EncoderLayer(d, H, 2 * d, dropout=0.1, norm_first=norm_first).eval()  # eval: no dropout
                for norm in (layer.norm1, layer.norm2):  # random gains and biases, so that a forgotten norm shows
                    norm.weight.normal_(1.0, 0.3), norm.bias.normal_(0.0, 0.3)
            x = 2 * torch.randn(B, S, d, generator=make_rng(seed))
            mask = padding_mask(_tokens(seed, B, S, pad_id=0))
            call = tr(
                "encoder_layer(layer with norm_first={norm_first}, x of shape {shape}, mask)",
                norm_first=norm_first,
                shape=(B, S, d),
            )
            with torch.no_grad():
                mine = _tensor(encoder_layer(layer, x, mask), call)
                _shape(mine, (B, S, d), call, tr("the layer's output only (the package's layer also returns weights)"))
                expected = layer(x, mask)[0]
                if torch.allclose(mine, expected, atol=1e-5):
                    continue
                if torch.allclose(mine, _encoder_layer_by(layer, x, mask, not norm_first), atol=1e-5):
                    if not norm_first:
                        raise AssertionError(
                            tr("{call} is the pre-norm, x + sublayer(norm(x)); follow layer.norm_first", call=call)
                        )
                    raise AssertionError(
                        tr("{call} is the post-norm, norm(x + sublayer(x)); follow layer.norm_first", call=call)
                    )
            error = float((mine - expected).abs().max())
            raise AssertionError(
                tr(
                    "{call} differs from layer(x, mask) by up to {error:.2g}: two residual blocks, "
                    "self-attention (with the mask) then the feed-forward network, each with its own norm",
                    call=call,
                    error=error,
                )
            )


def _decoder_layer_by(
    layer: DecoderLayer,
    y: Tensor,
    memory: Tensor,
    tgt_mask: Tensor | None,
    cross_mask: Tensor | None,
    norm_first: bool,
    cross: str = "memory",
    order: str = "self first",
    norms: Sequence[int] = (1, 2, 3),
    residuals: Sequence[bool] = (True, True, True),
) -> Tensor:
    """The decoder layer right, or with one classic mistake, for naming it (eval mode: no dropout). ``norms``: which of
    ``norm1`` to ``norm3`` each block uses; ``residuals``: which blocks add their input back."""
    norm1, norm2, norm3 = (getattr(layer, f"norm{i}") for i in norms)

    def block(x: Tensor, norm: torch.nn.Module, sublayer: Callable[[Tensor], Tensor], residual: bool) -> Tensor:
        kept = x if residual else 0.0
        return kept + sublayer(norm(x)) if norm_first else norm(kept + sublayer(x))

    attend = {  # cross-attention's queries, keys and values
        "memory": lambda h: layer.cross_attn(h, memory, memory, cross_mask)[0],
        "decoder": lambda h: layer.cross_attn(h, h, h, cross_mask)[0],  # keys and values from the decoder
        "swapped": lambda h: layer.cross_attn(memory, h, h, cross_mask)[0],  # queries from the memory
        "self_attn": lambda h: layer.self_attn(h, memory, memory, cross_mask)[0],  # one module for both jobs
    }[cross]
    self_attend = lambda h: layer.self_attn(h, h, h, tgt_mask)[0]
    first, second = (self_attend, attend) if order == "self first" else (attend, self_attend)
    y = block(y, norm1, first, residuals[0])
    y = block(y, norm2, second, residuals[1])
    return block(y, norm3, layer.feed_forward, residuals[2])


_DECODER_BLOCKS = (  # English names, shown through tr
    translatable("masked self-attention"),
    translatable("cross-attention"),
    translatable("feed-forward"),
)


def _swapped_norms_hint(norms: Sequence[int]) -> str:
    wrong = [
        tr("the {block} block uses norm{i}", block=tr(block), i=i)
        for right, (block, i) in enumerate(zip(_DECODER_BLOCKS, norms, strict=True), 1)
        if i != right
    ]
    return tr(
        "the norms are swapped: {wrong}; norm1 belongs to masked self-attention, norm2 to "
        "cross-attention, norm3 to the feed-forward network, each with a gain and a bias of its own",
        wrong=tr(", ").join(wrong),
    )


def grade_decoder_layer(decoder_layer: Callable[..., Tensor]) -> None:
    """``decoder_layer(layer, y (B, T, d_model), memory (B, S, d_model), src_mask (B, 1, 1, S), tgt_mask (B, 1, T,
    T))`` must compute what ``layer(y, memory, src_mask, tgt_mask)[0]`` does (to within 1e-5) from the layer's parts,
    ``layer.self_attn``, ``layer.cross_attn``, ``layer.feed_forward``, ``layer.norm1`` to ``norm3``, for post-norm
    and pre-norm layers (``layer.norm_first``), several seeds, shapes and padding. It names a self-attention without
    the causal mask, a cross-attention without ``src_mask``, with its keys and values taken from the decoder or run by
    ``layer.self_attn``, swapped layouts, sub-layers and norms, and a missing residual connection."""
    for seed, (B, T, S, d, H) in zip(SEEDS, ((2, 5, 5, 16, 4), (3, 6, 4, 8, 2), (1, 4, 7, 32, 8)), strict=True):
        for norm_first in (False, True):
            with seeded(seed), torch.no_grad():
                layer = DecoderLayer(d, H, 2 * d, dropout=0.1, norm_first=norm_first).eval()  # eval: no dropout
                for norm in (layer.norm1, layer.norm2, layer.norm3):  # random gains and biases: a swapped norm shows
                    norm.weight.normal_(1.0, 0.3), norm.bias.normal_(0.0, 0.3)
            g = make_rng(seed)
            y, memory = 2 * torch.randn(B, T, d, generator=g), 2 * torch.randn(B, S, d, generator=g)
            tgt = _tokens(seed, B, T, pad_id=0)
            tgt[:, 0] = 1  # BOS: padding only at the end of a target
            src_mask, tgt_mask = padding_mask(_tokens(seed + 10, B, S, pad_id=0)), target_mask(tgt)
            call = tr(
                "decoder_layer(layer with norm_first={norm_first}, y of shape {y_shape}, memory of shape "
                "{memory_shape}, src_mask, tgt_mask)",
                norm_first=norm_first,
                y_shape=(B, T, d),
                memory_shape=(B, S, d),
            )
            with torch.no_grad():
                mine = _tensor(decoder_layer(layer, y, memory, src_mask, tgt_mask), call)
                _shape(mine, (B, T, d), call, tr("the layer's output only (the package's layer also returns weights)"))
                expected = layer(y, memory, src_mask, tgt_mask)[0]
                if torch.allclose(mine, expected, atol=1e-5):
                    continue
                mistakes = [
                    (
                        tr(
                            "self-attention sees the future: give it tgt_mask, which holds the causal mask (and the "
                            "target's padding)"
                        ),
                        dict(tgt_mask=None),
                    ),
                    (
                        tr(
                            "self-attention has the target's padding mask but not the causal one: use tgt_mask, both "
                            "together"
                        ),
                        dict(tgt_mask=padding_mask(tgt)),
                    ),
                    (
                        tr(
                            "cross-attention has no src_mask: the decoder reads the source's padding; pass src_mask, "
                            "which hides the padding keys of the memory"
                        ),
                        dict(cross_mask=None),
                    ),
                    *[
                        (
                            tr(
                                "cross-attention takes its keys and values from the decoder: its queries come from the "
                                "decoder, its keys and values from the encoder's memory, with src_mask"
                            ),
                            dict(cross="decoder", cross_mask=m),
                        )
                        for m in (None, tgt_mask, src_mask)
                    ],
                    *[
                        (
                            tr(
                                "cross-attention is the wrong way round: queries from the decoder, keys and values from "
                                "the memory"
                            ),
                            dict(cross="swapped", cross_mask=m),
                        )
                        for m in (None, src_mask)
                    ],
                    *[
                        (
                            tr(
                                "cross-attention runs layer.self_attn: a decoder layer has two attention modules, each "
                                "with weights of its own; the encoder-decoder attention is layer.cross_attn (one module "
                                "for both jobs is the bug of transformer_book.pitfalls.SharedAttentionDecoderLayer)"
                            ),
                            dict(cross="self_attn", cross_mask=m),
                        )
                        for m in (src_mask, None)
                    ],
                    (
                        tr(
                            "cross-attention comes before self-attention: masked self-attention, then cross-attention, "
                            "then the feed-forward network"
                        ),
                        dict(order="cross first"),
                    ),
                    (
                        tr("pre-norm, x + sublayer(norm(x)); follow layer.norm_first")
                        if not norm_first
                        else tr("post-norm, norm(x + sublayer(x)); follow layer.norm_first"),
                        dict(norm_first=not norm_first),
                    ),
                    *[
                        (_swapped_norms_hint(norms), dict(norms=norms))
                        for norms in itertools.permutations((1, 2, 3))
                        if norms != (1, 2, 3)
                    ],
                    *[
                        (
                            tr(
                                "the {block} block has no residual connection: {layout}, the input added back",
                                block=tr(_DECODER_BLOCKS[i]),
                                layout="x + sublayer(norm(x))" if norm_first else "norm(x + sublayer(x))",
                            ),
                            dict(residuals=tuple(j != i for j in range(3))),
                        )
                        for i in range(3)
                    ],
                ]
                for hint, how in mistakes:
                    kwargs = dict(tgt_mask=tgt_mask, cross_mask=src_mask, norm_first=norm_first) | how
                    try:
                        wrong = _decoder_layer_by(layer, y, memory, **kwargs)
                    except (RuntimeError, ValueError):
                        continue  # that mistake cannot run with these shapes
                    if wrong.shape == mine.shape and torch.allclose(mine, wrong, atol=1e-5):
                        raise AssertionError(tr("{call}: {hint}", call=call, hint=hint))
            error = float((mine - expected).abs().max())
            raise AssertionError(
                tr(
                    "{call} differs from layer(y, memory, src_mask, tgt_mask) by up to {error:.2g}: "
                    "three residual blocks, masked self-attention, cross-attention on the memory, "
                    "feed-forward, each with its own norm",
                    call=call,
                    error=error,
                )
            )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 7: training.


def grade_smoothed_targets(smoothed: Callable[[Tensor, int, float], Tensor]) -> None:
    """``smoothed(target (N,), V, smoothing)`` must be the ``(N, V)`` distribution that
    ``F.cross_entropy(label_smoothing=smoothing)`` trains towards (``transformer.train.objective.smoothed_targets``), for
    several vocabularies, smoothings and seeds. A row whose target is the padding id (``PAD_ID``, in every case) may
    hold anything: the chapter's loss, ``sequence_loss``, leaves those positions out (``ignore_index``)."""
    for seed, V, eps in zip(SEEDS, (5, 13, 3), (0.1, 0.3, 0.2), strict=True):
        target = torch.randint(0, V, (7,), generator=make_rng(seed))
        target[seed] = PAD_ID  # a padding target, in another row each time
        call = f"smoothed(target, V={V}, smoothing={eps})"
        mine = _tensor(smoothed(target, V, eps), call)
        _shape(mine, (7, V), call, tr("one distribution over the V tokens per target"))
        expected = smoothed_targets(target, V, eps)
        wrong_rows = [
            r
            for r in range(7)
            if target[r] != PAD_ID and not torch.allclose(mine[r].double(), expected[r].double(), atol=1e-6)
        ]
        if not wrong_rows:
            continue
        r = wrong_rows[0]
        row, right = mine[r].double(), int(target[r])
        shown = ", ".join(f"{float(x):.4f}" for x in row)
        assert math.isclose(float(row.sum()), 1.0, abs_tol=1e-5), tr(
            "row {r} of {call} (target {right}) sums to {total:.4f}, not 1: a target must be a distribution (the "
            "row: {shown})",
            r=r,
            call=call,
            right=right,
            total=float(row.sum()),
            shown=shown,
        )
        others = [v for v in range(V) if v not in (right, PAD_ID)]
        if math.isclose(float(row[PAD_ID]), 0.0, abs_tol=1e-6) and torch.allclose(
            row[others], torch.full((len(others),), eps / (V - 2), dtype=torch.float64), atol=1e-6
        ):
            raise AssertionError(
                tr(
                    "row {r} of {call} (target {right}) gives <pad> nothing and ε/(V - 2) to the other wrong tokens, "
                    "as The Annotated Transformer's LabelSmoothing does; PyTorch's label_smoothing, which the "
                    "chapter's loss uses, spreads ε/V = {spread:.4f} over all V tokens, <pad> and the right one "
                    "included: 1 - ε + ε/V = {best:.4f}",
                    r=r,
                    call=call,
                    right=right,
                    spread=eps / V,
                    best=1 - eps + eps / V,
                )
            )
        wrong = (right + 1) % V if (right + 1) % V != PAD_ID else (right + 2) % V
        raise AssertionError(
            tr(
                "row {r} of {call} (target {right}) gives the right token {mine_right:.4f} and a wrong one "
                "{mine_wrong:.4f}; PyTorch spreads the smoothing over all V tokens, the right one included: "
                "1 - ε + ε/V = {best:.4f} and ε/V = {spread:.4f}",
                r=r,
                call=call,
                right=right,
                mine_right=float(row[right]),
                mine_wrong=float(row[wrong]),
                best=1 - eps + eps / V,
                spread=eps / V,
            )
        )


def grade_noam_lr(rate: Callable[[int, int, int], float]) -> None:
    """``rate(step, d_model, warmup)`` must be the paper's schedule, ``transformer.train.schedule.noam_lr`` (steps count
    from 1), to within 1e-6 relative, through the warm-up, at its end and long after, for two model sizes."""
    for d_model, warmup in ((512, 4000), (64, 100)):
        for step in (1, warmup // 2, warmup - 1, warmup, warmup + 1, 10 * warmup):
            call = f"rate({step}, d_model={d_model}, warmup={warmup})"
            mine, expected = float(rate(step, d_model, warmup)), noam_lr(step, d_model, warmup)
            assert math.isclose(mine, expected, rel_tol=1e-6), tr(
                "{call} is {mine:.4g}, not {expected:.4g}: d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)",
                call=call,
                mine=mine,
                expected=expected,
            )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 8: decoding.


def grade_next_token(
    next_token: Callable, model: torch.nn.Module, sources: Iterable[Tensor], max_new_tokens: int
) -> None:
    """``next_token(model, src (B, S), decoder_input (B, t))`` must pick what greedy decoding picks at every step of
    every source in ``sources``: the most probable next token, ``<pad>`` and ``<s>`` excluded (never valid
    outputs). Rows that have already said ``</s>`` are not compared. Inputs are given on the model's device.

    A model that has learned its task rarely prefers ``<pad>`` or ``<s>``, so forgetting to exclude them would go
    unnoticed: the check also runs the step on a copy of ``model`` whose output bias favours them."""
    sources = list(sources)
    tempted = copy.deepcopy(model)
    with torch.no_grad():  # <s> most, <pad> next: a step that excludes only one of them still picks the other
        bias = tempted.lm_head.bias
        bias[[model.config.pad_id, BOS_ID]] = bias.max() + torch.tensor([1000.0, 2000.0]).to(bias)
    for m in (model, tempted):
        _grade_steps(next_token, m, sources, max_new_tokens, tempted=m is tempted)


def _grade_steps(
    next_token: Callable, model: torch.nn.Module, sources: list[Tensor], max_new_tokens: int, tempted: bool
) -> None:
    device = next(model.parameters()).device
    for src in sources:
        src = src.to(device)
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=device)
        for t, step in enumerate(
            greedy_steps(model, src, max_new_tokens, use_cache=False)
        ):  # the whole prefix, each step
            call = tr(
                "next_token({model}, src of shape {src_shape}, decoder_input of shape {input_shape})",
                model=tr("a model that favours <pad> and <s>") if tempted else "model",
                src_shape=tuple(src.shape),
                input_shape=tuple(step.decoder_input.shape),
            )
            with torch.no_grad():
                mine = _tensor(next_token(model, src, step.decoder_input.to(device)), call)
            _shape(mine, (src.size(0),), call, tr("one id per row: the logits of the *last* position only"))
            differ = (mine.to(device) != step.next_tokens.to(device)) & ~finished
            if differ.any():
                b = int(differ.nonzero()[0])
                chosen = int(mine[b])
                hint = (
                    tr(
                        " ({token}, never a valid output: set the logits of <pad> and <s> to -inf before the argmax)",
                        token="<pad>" if chosen == model.config.pad_id else "<s>",
                    )
                    if chosen in (model.config.pad_id, BOS_ID)
                    else ""
                )
                raise AssertionError(
                    tr(
                        "at step {t} {call} chose {chosen} for row {b}{hint}; greedy decoding chose {expected}",
                        t=t,
                        call=call,
                        chosen=chosen,
                        b=b,
                        hint=hint,
                        expected=int(step.next_tokens[b]),
                    )
                )
            finished = step.finished.to(device)


def grade_greedy_decode(
    decode: Callable, model: torch.nn.Module, sources: Iterable[Tensor], max_new_tokens: int
) -> None:
    """``decode(model, src (B, S), max_new_tokens)`` must return what ``greedy_decode(model, src, max_new_tokens)`` does for every
    source in ``sources``: ``(B, L)`` ids after ``<s>``, each row ending with its ``</s>`` and ``<pad>`` after it, ``L``
    the step at which the last row finished (or ``max_new_tokens``). Inputs are given on the model's device."""
    device = next(model.parameters()).device
    for src in sources:
        src = src.to(device)
        call = tr(
            "decode(model, src of shape {shape}, max_new_tokens={max_new_tokens})",
            shape=tuple(src.shape),
            max_new_tokens=max_new_tokens,
        )
        with torch.no_grad():
            mine = _tensor(decode(model, src, max_new_tokens), call).to(device)
        expected = greedy_decode(model, src, max_new_tokens, use_cache=False)  # (B, L): the whole prefix, each step
        if (
            mine.dim() == 2
            and mine.size(0) == src.size(0)
            and mine.size(1) == expected.size(1) + 1
            and torch.equal(mine[:, 1:], expected)
        ):
            raise AssertionError(tr("{call} starts with <s>: return the generated ids only, after <s>", call=call))
        if (
            mine.dim() == 2
            and mine.size(0) == src.size(0)
            and mine.size(1) > expected.size(1)
            and torch.equal(mine[:, : expected.size(1)], expected)
        ):
            raise AssertionError(
                tr(
                    "{call} has {columns} columns, not {expected}: stop when every row has said </s>",
                    call=call,
                    columns=mine.size(1),
                    expected=expected.size(1),
                )
            )
        _shape(mine, tuple(expected.shape), call, tr("one row per source, one column per step"))
        differ = mine != expected
        if differ.any():
            b, t = _first_index(differ)
            after_eos = bool((expected[b, :t] == EOS_ID).any())
            hint = tr(": a row that has said </s> gets <pad> from then on") if after_eos else ""
            raise AssertionError(
                tr(
                    "{call}[{b}, {t}] is {mine}, greedy decoding gives {expected}{hint}",
                    call=call,
                    b=b,
                    t=t,
                    mine=int(mine[b, t]),
                    expected=int(expected[b, t]),
                    hint=hint,
                )
            )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 11: inside the model.


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
        mine = _tensor(previous(weights, valid), call)
        _shape(mine, (H,), call, tr("one number per head"))
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
                mine = _tensor(silenced(attention, x, head), call)
                _shape(mine, (B, T, d), call, tr("the attention's output, (B, T, d_model)"))
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


# ---------------------------------------------------------------------------------------------------------------
# Chapter 13: cost.


def _counted_layer_flops(T: int, d_model: int, d_ff: int, n_heads: int) -> int:
    """``FlopCounterMode``'s count of the package's encoder layer (readable attention) over one sequence of ``T``
    positions, on the meta device: shapes only, no arithmetic and no random numbers."""
    with torch.device("meta"):
        layer = readable_attention(EncoderLayer(d_model, n_heads, d_ff, dropout=0.0))
        x = torch.empty(1, T, d_model)  # (B, T, d_model): one sequence
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(x)
    return counter.get_total_flops()


def grade_encoder_layer_flops(flops: Callable[[int, int, int, int], int]) -> None:
    """``flops(T, d_model, d_ff, n_heads)`` must be the matrix-product FLOPs of one encoder layer's forward pass over
    one sequence of ``T`` positions, a multiply-add counting 2, exactly as ``FlopCounterMode`` counts them on the
    package's ``EncoderLayer``: ``8 T d^2 + 4 T^2 d + 4 T d d_ff``, for several lengths, widths and numbers of heads,
    with ``d_ff`` other than ``4 d_model``."""
    for T, d, d_ff, H in ((100, 8, 32, 1), (10, 64, 256, 4), (33, 32, 48, 2), (7, 16, 100, 8)):
        call = f"flops(T={T}, d_model={d}, d_ff={d_ff}, n_heads={H})"
        mine, expected = flops(T, d, d_ff, H), _counted_layer_flops(T, d, d_ff, H)
        assert isinstance(mine, int) and not isinstance(mine, bool), tr(
            "{call} returned {kind} {mine!r}, not an int: FLOPs are counted exactly",
            call=call,
            kind=type(mine).__name__,
            mine=mine,
        )
        terms = encoder_layer_flops(T, d, d_ff, H)
        assert sum(terms.values()) == expected  # the chapter's count is FlopCounterMode's
        if mine == expected:
            continue
        P, A, FF = terms["projections"], terms["attention"], terms["feed-forward"]
        mistakes = {
            expected // 2: tr("it counts multiply-adds: a multiply-add is 2 FLOPs, a (m x k)(k x n) product 2 m k n"),
            expected - P // 4: tr(
                "three projections: W_O, which mixes the heads' outputs, is a fourth (T x d)(d x d) product"
            ),
            expected - A // 2: tr(
                "one of attention's two products per head: the scores Q K^T and the weighted sum of the values, "
                "(T x T)(T x d_k), each 2 T^2 d_k"
            ),
            expected - FF // 2: tr("one feed-forward product: it goes d_model -> d_ff and back, two products"),
            expected - A + A // H: tr("attention for one head: there are n_heads of them, 4 T^2 d_k each"),
            expected + A * (H - 1): tr(
                "attention with d_model per head: each head works on d_k = d_model / n_heads dimensions, so all "
                "heads together do 4 T^2 d_model whatever their number"
            ),
            P + A + 16 * T * d * d: tr("d_ff = 4 d_model assumed: use the d_ff given"),
        }
        values = dict(call=call, mine=mine, expected=expected, P=P, A=A, FF=FF)
        if mine in mistakes:
            raise AssertionError(
                tr(
                    "{call} is {mine:,}, but FlopCounterMode counts {expected:,} on the package's layer (projections "
                    "{P:,}, attention {A:,}, feed-forward {FF:,}): {hint}",
                    hint=mistakes[mine],
                    **values,
                )
            )
        raise AssertionError(
            tr(
                "{call} is {mine:,}, but FlopCounterMode counts {expected:,} on the package's layer (projections "
                "{P:,}, attention {A:,}, feed-forward {FF:,})",
                **values,
            )
        )


def grade_longest_length(longest: Callable[[int, int, int, torch.dtype], int]) -> None:
    """``longest(memory_bytes, batch, n_heads, dtype)`` must be the longest sequence length ``T`` whose
    ``(batch, n_heads, T, T)`` score tensor of ``dtype`` fits in ``memory_bytes`` (``transformer_book.cost.
    score_bytes``), for several budgets, batches, heads and dtypes, two of them fitting exactly."""
    cases = (
        (2**30, 1, 8, torch.float32),
        (2**30, 1, 8, torch.float16),
        (80 * 2**30, 64, 16, torch.float32),
        (10**9, 3, 6, torch.bfloat16),
        (2**20, 2, 4, torch.float64),
    )
    for memory, B, H, dtype in cases:
        call = f"longest({memory:,}, batch={B}, n_heads={H}, dtype={dtype})"
        mine = longest(memory, B, H, dtype)
        assert isinstance(mine, int) and not isinstance(mine, bool), tr(
            "{call} returned {kind} {mine!r}, not an int (a length is a whole number of positions)",
            call=call,
            kind=type(mine).__name__,
            mine=mine,
        )
        size = torch.empty((), dtype=dtype).element_size()
        expected = math.isqrt(memory // (B * H * size))
        assert (
            score_bytes(B, H, expected, expected, dtype)
            <= memory
            < score_bytes(B, H, expected + 1, expected + 1, dtype)
        )
        if mine == expected:
            continue
        mistakes = {
            memory // (B * H * size): tr("the score tensor grows as T^2: T x T scores per head and sequence"),
            math.isqrt(memory // (B * H)): tr(
                "that counts numbers, not bytes: each takes the dtype's element size ({size} bytes for {dtype})",
                size=size,
                dtype=dtype,
            ),
            math.isqrt(memory // (B * H * 4)): tr(
                "4 bytes a number assumed: {dtype} takes {size}", dtype=dtype, size=size
            ),
            math.isqrt(memory // (B * size)): tr("one T x T matrix per sequence: there is one per head"),
            math.isqrt(memory // (H * size)): tr(
                "one T x T matrix per head: there is one per sequence of the batch too"
            ),
        }
        if mine in mistakes and mine != expected:
            raise AssertionError(
                tr(
                    "{call} is {mine:,}, not {expected:,}: {hint}",
                    call=call,
                    mine=mine,
                    expected=expected,
                    hint=mistakes[mine],
                )
            )
        if mine > expected:
            raise AssertionError(
                tr(
                    "{call} is {mine:,}, but that score tensor takes {size:,} bytes, more than {memory:,} (round down: "
                    "the longest length that fits)",
                    call=call,
                    mine=mine,
                    size=score_bytes(B, H, mine, mine, dtype),
                    memory=memory,
                )
            )
        raise AssertionError(
            tr(
                "{call} is {mine:,}, but T = {longer:,} fits too: its score tensor takes {size:,} of the {memory:,} bytes",
                call=call,
                mine=mine,
                longer=mine + 1,
                size=score_bytes(B, H, mine + 1, mine + 1, dtype),
                memory=memory,
            )
        )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 9: dates.


def grade_ordinal_words(ordinal: Callable[[int], str]) -> None:
    """``ordinal(n)`` must write every day of a month, 1 to 31, as an English ordinal in words, as
    ``transformer.train.dates.ordinal_words`` does: "first", "twelfth", "twentieth", "twenty-third", "thirty-first"."""
    for n in range(1, 32):
        call = f"ordinal({n})"
        mine, expected = ordinal(n), ordinal_words(n)
        assert isinstance(mine, str), tr(
            "{call} returned {kind} {mine!r}, not a str", call=call, kind=type(mine).__name__, mine=mine
        )
        if mine == expected:
            continue
        last = number_words(n).split("-")[-1]
        if mine == ordinal_suffix(n):
            hint = tr("that is the numeric style's digits; write the ordinal in words")
        elif mine.replace(" ", "-") == expected:
            hint = tr("a ten and a unit are joined by a hyphen")
        elif mine.lower() == expected:
            hint = tr("the dates write ordinals in lower case")
        elif mine.endswith("yth"):
            hint = tr("a ten ending in -y becomes -ieth: twentieth, thirtieth")
        elif mine.split("-")[-1] == last + "th":
            hint = tr("some ordinals are irregular: first, second, third, fifth, eighth, ninth, twelfth")
        elif "-" in expected and mine.split("-")[0] != expected.split("-")[0]:
            hint = tr("only the last word becomes an ordinal: twenty-first, not twentieth-first")
        else:
            hint = ""
        if hint:
            raise AssertionError(
                tr("{call} is {mine!r}, not {expected!r}: {hint}", call=call, mine=mine, expected=expected, hint=hint)
            )
        raise AssertionError(tr("{call} is {mine!r}, not {expected!r}", call=call, mine=mine, expected=expected))


def _index_batches(batches: object, call: str) -> list[list[int]]:
    assert isinstance(batches, Sequence) and all(isinstance(b, Sequence | Tensor) for b in batches), tr(
        "{call} returned {kind}, not a list of batches (lists of indices)", call=call, kind=type(batches).__name__
    )
    return [[int(i) for i in batch] for batch in batches]


def grade_length_batches(batches_of: Callable[[Sequence[int], int, torch.Generator], Sequence[Sequence[int]]]) -> None:
    """``batches_of(lengths, batch_size, rng)`` must cut the examples ``0 .. n - 1`` into batches by length:
    every example exactly once, ``ceil(n / batch_size)`` batches of at most ``batch_size``, at most half the padding
    of random batches (``transformer.train.bucketing.padding_fraction``), the batches not served in order of length, and
    other batches from another rng (so that every epoch differs), for several data sets and batch sizes."""
    for seed, (n, batch_size, low, high) in zip(
        SEEDS, ((1000, 32, 5, 11), (500, 16, 1, 40), (37, 8, 2, 9)), strict=True
    ):
        lengths = torch.randint(low, high + 1, (n,), generator=make_rng(seed)).tolist()
        call = tr("batches_of(lengths of {n} examples, batch_size={batch_size}, rng)", n=n, batch_size=batch_size)
        mine = _index_batches(batches_of(lengths, batch_size, make_rng(seed)), call)
        seen = [i for batch in mine for i in batch]
        missing, repeated = n - len(set(seen) & set(range(n))), len(seen) - len(set(seen))
        if missing or repeated or sorted(seen) != list(range(n)):
            hint = tr(" (is the last, smaller batch dropped?)") if 0 < missing < batch_size and not repeated else ""
            raise AssertionError(
                tr(
                    "{call} does not hold every index 0..{last} exactly once: {missing} missing, {repeated} repeated"
                    "{hint}",
                    call=call,
                    last=n - 1,
                    missing=missing,
                    repeated=repeated,
                    hint=hint,
                )
            )
        sizes = sorted(len(batch) for batch in mine)
        assert sizes[0] >= 1 and sizes[-1] <= batch_size, tr(
            "{call} has batches of {smallest} to {largest} examples: at most batch_size = {batch_size}, none empty",
            call=call,
            smallest=sizes[0],
            largest=sizes[-1],
            batch_size=batch_size,
        )
        assert len(mine) == math.ceil(n / batch_size), tr(
            "{call} makes {made} batches, not {expected}: cut full batches of {batch_size}, at most one smaller (a "
            "batch per length leaves many batches half empty)",
            call=call,
            made=len(mine),
            expected=math.ceil(n / batch_size),
            batch_size=batch_size,
        )
        mine_padding = padding_fraction(lengths, mine)
        random_padding = padding_fraction(lengths, random_batches(n, batch_size, make_rng(seed)))
        assert mine_padding <= random_padding / 2, tr(
            "{call} pads {mine:.1%} of the slots, random batches {random:.1%}: sort examples by length before cutting "
            "them into batches",
            call=call,
            mine=mine_padding,
            random=random_padding,
        )
        longest = [max(lengths[i] for i in batch) for batch in mine]
        assert len(mine) < 10 or longest not in (sorted(longest), sorted(longest, reverse=True)), tr(
            "{call} serves its batches in order of length, every epoch the same way: shuffle the batches", call=call
        )
        again = _index_batches(batches_of(lengths, batch_size, make_rng(seed + 10)), call)
        assert again != mine, tr(
            "{call} gives the same batches with another rng: every epoch would see the same batches in the same "
            "order; shuffle with the rng (before sorting within pools, and the batches after)",
            call=call,
        )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 10: translation.

Words = dict[tuple[str, ...], int]  # byte-pair encoding's working state: each piece as its symbols, and its count

_NUMBER_TEXTS = (
    "dreihundertzweiundvierzig",
    "fünfundzwanzig",
    "vierundsechzigtausendfünfundzwanzig",
    "zweiundzwanzig",
    "three hundred and forty-two",
    "twenty-five",
    "sixty-four thousand and twenty-five",
    "twenty-two",
)
_MERGE_CASES = (  # (texts, merges learned before the step to take)
    (("in 3 Stunden", "in 5 Minuten", "in 2 Sekunden", "in 1 Jahr", "in 4 Wochen", "in 6 Monaten"), 0),
    (("the",) * 3 + ("and",) * 3, 0),  # a tie: six pairs, each 3 times
    (("Schifffahrt",) * 3 + ("Kaffee",), 0),  # f f f: a pair that overlaps itself
    (_NUMBER_TEXTS, 0),  # "nd" three times in one word
    (_NUMBER_TEXTS, 7),  # symbols already merged ("nd", "und"): the next merge, a + n, must not take a + nd
)


def _merge_step_case(
    texts: Sequence[str], k: int
) -> tuple[list[tuple[tuple[str, ...], tuple[str, ...], int]], tuple[str, str]]:
    """The pieces of ``texts`` as ``(symbols after k merges, symbols after k + 1, count)`` and merge k + 1, all as
    ``learn_merges`` learns them and ``apply_merges`` applies them."""
    pieces = Counter(piece for text in texts for piece in pre_tokenize(text))
    merges = learn_merges(texts, k + 1)
    rows = [
        (tuple(apply_merges(piece, merges[:k])), tuple(apply_merges(piece, merges)), n) for piece, n in pieces.items()
    ]
    return rows, (merges[k].left, merges[k].right)


def _pair_counts(words: Words, weighted: bool = True) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for symbols, n in words.items():
        for pair in zip(symbols, symbols[1:], strict=False):
            counts[pair] += n if weighted else 1
    return counts


def _most_frequent(counts: Counter[tuple[str, str]]) -> tuple[str, str]:
    return min(counts, key=lambda pair: (-counts[pair], pair))


def _spelled(symbols: Sequence[str]) -> str:
    return " ".join(symbols)


def _merge_mistake(before: tuple[str, ...], mine: tuple[str, ...], pair: tuple[str, str]) -> str:
    """The hint for a word merged wrongly, naming the classic mistakes."""
    left, right = pair
    if tuple(_spelled(before).replace(f"{left} {right}", left + right).split()) == mine:
        return tr(
            "str.replace on the symbols joined by spaces also matches '{left} {right}' inside longer symbols; "
            "Sennrich et al.'s code bounds the pattern by spaces, re.sub(r'(?<!\\S)' + re.escape(bigram) + "
            "r'(?!\\S)', ...), or merge symbol by symbol",
            left=left,
            right=right,
        )
    if left == right and any(before[i : i + 3] == (left,) * 3 for i in range(len(before) - 2)):
        return tr(
            "'{left} {right}' overlaps itself in '{word}': merge from the left, each symbol at most once, and move "
            "past the merged pair",
            left=left,
            right=right,
            word=_spelled(before),
        )
    first = list(before)
    i = next((i for i, p in enumerate(zip(before, before[1:], strict=False)) if p == pair), None)
    if i is not None:
        first[i : i + 2] = [left + right]
    if tuple(first) == mine:
        return tr("only the first occurrence is merged: merge the pair everywhere in the word")
    return ""


def grade_merge_step(merge_step: Callable[[Words], tuple[tuple[str, str], Words]]) -> None:
    """``merge_step(words)`` must take one step of byte-pair encoding as ``transformer.train.bpe.learn_merges``
    does: ``words`` maps each piece, as a tuple of symbols, to its count; count every pair of neighbouring symbols,
    each word's pairs as often as the word occurs; return the most frequent pair and the words with that pair merged
    everywhere, from the left (``apply_merges``), every count kept. A tie goes to the pair whose symbols come first in
    code-point order (Python's string order, left symbol first): on characters, ``learn_merges``' and `tokenizers`'
    rule (they order a merged symbol by when it was made; no case here has a tie that the two orders break
    differently). For the pieces of sentences of the chapter's kinds, from characters and after 7 merges."""
    for texts, k in _MERGE_CASES:
        rows, pair = _merge_step_case(texts, k)
        words = {before: n for before, _, n in rows}
        shown = ", ".join(repr(text) for text in dict.fromkeys(texts))
        if k:
            call = tr("merge_step(the pieces of {texts}, after {k} merges)", texts=shown, k=k)
        else:
            call = tr("merge_step(the pieces of {texts})", texts=shown)
        result = merge_step(dict(words))  # a copy: the answer may change it in place
        assert isinstance(result, tuple) and len(result) == 2, tr(
            "{call} returned {kind}: return the pair (pair merged, words after the merge)",
            call=call,
            kind=type(result).__name__,
        )
        mine_pair, mine_words = result
        assert isinstance(mine_pair, tuple) and len(mine_pair) == 2 and all(isinstance(s, str) for s in mine_pair), tr(
            "{call} merged {mine!r}: a pair is a tuple of two symbols, such as {pair!r}",
            call=call,
            mine=mine_pair,
            pair=pair,
        )
        counts = _pair_counts(words)
        if mine_pair != pair:
            unweighted = _pair_counts(words, weighted=False)
            if counts[mine_pair] == counts[pair]:
                hint = tr(
                    "a tie: both occur {count} times, and a tie goes to the pair first in code-point order, {pair!r}, "
                    "as learn_merges and tokenizers break it (Counter.most_common and max keep the pair counted first)",
                    count=counts[pair],
                    pair=pair,
                )
            elif mine_pair == _most_frequent(unweighted):
                hint = tr(
                    "{mine!r} is in the most words ({words}), but a word counts as often as it occurs: {pair!r} occurs "
                    "{count} times, {mine!r} {mine_count}",
                    mine=mine_pair,
                    words=unweighted[mine_pair],
                    pair=pair,
                    count=counts[pair],
                    mine_count=counts[mine_pair],
                )
            elif counts[mine_pair] == 0:
                hint = tr("{mine!r} is not a pair of neighbouring symbols in any word", mine=mine_pair)
            else:
                hint = tr(
                    "{mine!r} occurs {mine_count} times, {pair!r} {count}",
                    mine=mine_pair,
                    mine_count=counts[mine_pair],
                    pair=pair,
                    count=counts[pair],
                )
            raise AssertionError(
                tr("{call} merges {mine!r}, not {pair!r}: {hint}", call=call, mine=mine_pair, pair=pair, hint=hint)
            )
        assert isinstance(mine_words, dict) and all(isinstance(w, tuple) for w in mine_words), tr(
            "{call} returned words of type {kind}: return a dict from each word's symbols (a tuple) to its count, as "
            "words is",
            call=call,
            kind=type(mine_words).__name__,
        )
        by_text = {"".join(word): word for word in mine_words}
        for before, after, n in rows:
            mine = by_text.get("".join(before))
            if mine is None:
                raise AssertionError(
                    tr(
                        "{call} has no word '{word}' (count {n}): keep every word, those without the pair as they are",
                        call=call,
                        word=_spelled(after),
                        n=n,
                    )
                )
            if mine != after:
                hint = _merge_mistake(before, mine, pair)
                values = dict(call=call, before=_spelled(before), mine=_spelled(mine), after=_spelled(after))
                if hint:
                    raise AssertionError(
                        tr("{call} turns '{before}' into '{mine}', not '{after}': {hint}", hint=hint, **values)
                    )
                raise AssertionError(tr("{call} turns '{before}' into '{mine}', not '{after}'", **values))
            assert mine_words[mine] == n, tr(
                "{call} counts '{word}' {count!r} times, not {n}: a merge keeps each word's count",
                call=call,
                word=_spelled(after),
                count=mine_words[mine],
                n=n,
            )
        assert len(mine_words) == len(rows), tr(
            "{call} returns {mine} words, not {expected}", call=call, mine=len(mine_words), expected=len(rows)
        )


def _ngrams(words: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def clipped_matches(hypothesis: str, references: Sequence[str], n: int) -> tuple[int, int]:
    """BLEU's modified n-gram precision as its two counts, ``(matches, total)`` (Papineni et al., 2002, section 2.1;
    sacrebleu's ``counts`` and ``totals``): the words are the texts split at spaces; each n-gram of the hypothesis
    matches at most as often as it occurs in the one reference that holds it most; the total is the hypothesis'
    number of n-grams."""
    mine = _ngrams(hypothesis.split(), n)
    most: Counter[tuple[str, ...]] = Counter()
    for reference in references:
        most |= _ngrams(reference.split(), n)  # the union of Counters keeps the larger count
    return sum((mine & most).values()), sum(mine.values())


_PRECISION_CASES = (  # (hypothesis, references, n)
    ("the the the the the the the", ("there is a cat on the mat", "the cat is on the mat"), 1),  # Papineni et al.
    ("in fünf Tagen oder in fünf Wochen", ("fünf Tage oder fünf Wochen", "in sechs Tagen oder in fünf Wochen"), 1),
    ("in fünf Tagen oder in fünf Wochen", ("fünf Tage oder fünf Wochen", "in sechs Tagen oder in fünf Wochen"), 2),
    ("In drei Tagen", ("in drei Tagen",), 1),
    ("vor drei Tagen", ("vor drei Tagen",), 3),
    ("vor drei Tagen", ("vor drei Tagen",), 4),
    ("Mittwoch, 25. November 2026", ("Mittwoch, 25. November 2026", "Mittwoch, den 25. November 2026"), 2),
)


def grade_clipped_precision(precision: Callable[[str, Sequence[str], int], tuple[int, int]]) -> None:
    """``precision(hypothesis, references, n)`` must return BLEU's clipped n-gram counts ``(matches, total)`` as
    :func:`clipped_matches` (and sacrebleu) computes them, for one and two references, n from 1 to 4, a hypothesis
    with fewer than n words, and capitals."""
    for hypothesis, references, n in _PRECISION_CASES:
        call = f"precision({hypothesis!r}, {list(references)!r}, n={n})"
        mine = precision(hypothesis, list(references), n)
        assert (
            isinstance(mine, tuple)
            and len(mine) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in mine)
        ), tr("{call} returned {mine!r}: return the pair of counts (matches, total), two ints", call=call, mine=mine)
        expected = clipped_matches(hypothesis, references, n)
        if mine == expected:
            continue
        length = len(hypothesis.split())
        if mine[1] != expected[1]:
            if mine[1] == max(0, length - n):
                hint = tr(
                    "a text of L = {length} words has L - n + 1 = {total} n-grams (the last one is missed)",
                    length=length,
                    total=expected[1],
                )
            elif mine[1] in {sum(_ngrams(r.split(), n).values()) for r in references}:
                hint = tr(
                    "the total counts a reference's n-grams (that is recall): precision divides by the hypothesis' "
                    "n-grams, L - n + 1 = {total}",
                    total=expected[1],
                )
            elif mine[1] == len(_ngrams(hypothesis.split(), n)):
                hint = tr("each distinct n-gram is counted once: an n-gram that occurs twice counts twice")
            else:
                hint = tr("the total is the hypothesis' number of n-grams, L - n + 1 = {total}", total=expected[1])
            raise AssertionError(
                tr("{call} is {mine}, not {expected}: {hint}", call=call, mine=mine, expected=expected, hint=hint)
            )
        ngrams = _ngrams(hypothesis.split(), n)
        each = [_ngrams(r.split(), n) for r in references]
        lower_case, _ = clipped_matches(hypothesis.lower(), [r.lower() for r in references], n)
        mistakes = {
            sum(c for g, c in ngrams.items() if any(g in r for r in each)): tr(
                "the counts are not clipped: an n-gram matches at most as often as the reference that holds it most "
                "holds it (else seven times 'the' would score 7 of 7 against 'the cat is on the mat')"
            ),
            sum((ngrams & sum(each, Counter())).values()): tr(
                "each n-gram is clipped by its count in all references together: clip by its largest count in any "
                "single reference"
            ),
            sum((ngrams & each[0]).values()): tr(
                "only the first reference is used: clip by an n-gram's largest count in any of them"
            ),
            max(sum((ngrams & r).values()) for r in each): tr(
                "the references are taken one at a time, the best one kept: clip n-gram by n-gram, by its largest "
                "count in any reference (two references can each supply different n-grams)"
            ),
            lower_case: tr(
                "the words are compared in lower case: BLEU as sacrebleu computes it by default is case-sensitive"
            ),
        }
        mistakes.pop(expected[0], None)
        hint = mistakes.get(mine[0], "")
        if hint:
            raise AssertionError(
                tr("{call} is {mine}, not {expected}: {hint}", call=call, mine=mine, expected=expected, hint=hint)
            )
        raise AssertionError(tr("{call} is {mine}, not {expected}", call=call, mine=mine, expected=expected))
