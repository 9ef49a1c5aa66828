"""The chapters' exercises: the reader writes a small piece of the model, and a check compares it with the package.

Each ``check_*`` function takes the reader's function (and, for decoding, a model), runs it on several shapes and
seeds against :mod:`transformer`, and raises ``AssertionError`` with what is wrong (naming a classic mistake when it
recognises one). :func:`exercise` is what a chapter's check cell calls: it runs a check on the reader's answer and
says "not done yet" for a starter that still raises ``NotImplementedError``, so a chapter runs from top to bottom as
the reader first sees it.

- masks (chapter 4): :func:`check_causal_mask`, :func:`check_padding_mask`, :func:`check_target_mask`;
- positional encoding (chapter 3): :func:`check_sinusoid_table`, :func:`check_offset_matrix`;
- embeddings (chapter 2): :func:`check_vocabulary_parameters`, :func:`check_cosine_similarity`;
- the model (chapter 6): :func:`check_parameter_count`, :func:`check_encoder_layer`;
- training (chapter 7): :func:`check_smoothed_targets`, :func:`check_noam_lr`;
- decoding (chapter 8): :func:`check_next_token`, :func:`check_greedy_decode`;
- inside the model (chapter 9): :func:`check_previous_token_weight`, :func:`check_silenced_head`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import fields

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer import EncoderLayer, MultiHeadAttention, TransformerConfig, causal_mask, padding_mask, sinusoidal_table
from transformer.data import EOS_ID
from transformer.decoding import greedy_decode, greedy_steps
from transformer.training import noam_lr, smoothed_targets
from transformer_book.ablation import aligned_weight
from transformer_book.viz.overview import meta_model

__all__ = [
    "check_causal_mask",
    "check_cosine_similarity",
    "check_encoder_layer",
    "check_greedy_decode",
    "check_next_token",
    "check_noam_lr",
    "check_offset_matrix",
    "check_padding_mask",
    "check_parameter_count",
    "check_previous_token_weight",
    "check_silenced_head",
    "check_sinusoid_table",
    "check_smoothed_targets",
    "check_target_mask",
    "check_vocabulary_parameters",
    "exercise",
]

SEEDS = (0, 1, 2)


def exercise(check: Callable[..., None], answer: Callable, *args: object) -> None:
    """Run ``check(answer, *args)`` and say how the reader's ``answer`` did: "correct", or "not done yet" while it
    raises ``NotImplementedError`` (the starter); a wrong answer raises ``AssertionError`` naming what is wrong."""
    name = getattr(answer, "__name__", "your answer")
    try:
        check(answer, *args)
    except NotImplementedError:
        print(f"{name}: not done yet (it raises NotImplementedError). Write it above, run that cell, then this one.")
        return
    except AssertionError as error:
        raise AssertionError(f"{name} is not right yet: {error}") from None
    print(f"{name}: correct")


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _tensor(value: object, call: str) -> Tensor:
    assert isinstance(value, Tensor), f"{call} returned {type(value).__name__}, not a torch.Tensor"
    return value


def _shape(value: Tensor, expected: tuple[int, ...], call: str, hint: str = "") -> None:
    assert tuple(value.shape) == expected, (
        f"{call} has shape {tuple(value.shape)}, not {expected}" + (f": {hint}" if hint else "")
    )


def _first_index(differ: Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in differ.nonzero()[0])


# ---------------------------------------------------------------------------------------------------------------
# Chapter 4: masks. The package's convention: bool, True = "this query may attend to this key", 4-D.


def _bool_mask(mask: Tensor, call: str) -> None:
    assert mask.dtype == torch.bool, (
        f"{call} has dtype {mask.dtype}: a mask is bool, True where the query may attend (compare with ==, or "
        f"call .bool())"
    )


def check_causal_mask(causal: Callable[[int], Tensor]) -> None:
    """``causal(T)`` must equal ``transformer.causal_mask(T)``: ``(1, 1, T, T)`` bool, ``True`` on and below the
    diagonal, for T = 5, 2, 9, 1."""
    for T in (5, 2, 9, 1):
        call = f"causal({T})"
        mine, expected = _tensor(causal(T), call), causal_mask(T)
        _shape(mine, (1, 1, T, T), call, "two leading axes of size 1 let it broadcast against (B, H, T, T) scores")
        _bool_mask(mine, call)
        if torch.equal(mine, expected):
            continue
        if torch.equal(mine, ~expected):
            raise AssertionError(f"{call} is inverted: True must mean 'may attend' (nn.MultiheadAttention's True "
                                 "means 'ignore'; this book's and F.scaled_dot_product_attention's mean 'attend')")
        if torch.equal(mine, expected.transpose(-2, -1)):
            raise AssertionError(f"{call} is True above the diagonal: query i sees keys i..T-1, the future, and "
                                 "not the past (lower triangle, tril, not triu)")
        if torch.equal(mine, expected & ~torch.eye(T, dtype=torch.bool)):
            raise AssertionError(f"{call} is False on the diagonal: a position must see itself (the first query "
                                 "would see no key at all)")
        i, j = _first_index(mine != expected)[2:]
        raise AssertionError(f"{call}[0, 0, {i}, {j}] is {bool(mine[0, 0, i, j])}: query {i} may attend to keys "
                             f"0..{i} only")


def _tokens(seed: int, B: int, S: int, pad_id: int) -> Tensor:
    """``(B, S)`` random ids in 0..5 (``pad_id`` among them), with at least one pad, sometimes first."""
    tokens = torch.randint(0, 6, (B, S), generator=_generator(seed))
    tokens[0, -1] = pad_id  # right padding
    tokens[-1, 0] = pad_id  # and padding first, which a write-up's mask may not expect
    return tokens


def _mask_cases() -> Iterable[tuple[Tensor, int]]:
    for seed, (B, S), pad_id in zip(SEEDS, ((2, 5), (3, 7), (4, 1)), (0, 3, 0), strict=True):
        yield _tokens(seed, B, S, pad_id), pad_id


def check_padding_mask(padding: Callable[[Tensor, int], Tensor]) -> None:
    """``padding(tokens (B, S), pad_id)`` must equal ``transformer.padding_mask``: ``(B, 1, 1, S)`` bool, ``True``
    where the *key* is a real token, for several batches, with ``pad_id`` 0 and 3 and padding anywhere."""
    for tokens, pad_id in _mask_cases():
        B, S = tokens.shape
        call = f"padding(tokens of shape {(B, S)}, pad_id={pad_id})"
        mine, expected = _tensor(padding(tokens, pad_id), call), padding_mask(tokens, pad_id)
        if tuple(mine.shape) == (B, 1, S, 1) and S > 1:
            raise AssertionError(f"{call} has shape {(B, 1, S, 1)}: it hides padding *queries*; a padding mask "
                                 f"hides padding keys from every query, shape (B, 1, 1, S)")
        _shape(mine, (B, 1, 1, S), call, "one row per sequence, broadcast over heads and queries")
        _bool_mask(mine, call)
        if torch.equal(mine, ~expected):
            raise AssertionError(f"{call} is True on the padding: True must mean 'a real token, may be attended to'")
        if not torch.equal(mine, expected):
            b, *_, s = _first_index(mine != expected)
            hint = " (is pad_id used, or 0 hard-coded?)" if pad_id != 0 else ""
            raise AssertionError(f"{call}[{b}, 0, 0, {s}] is {bool(mine[b, 0, 0, s])} for token "
                                 f"{int(tokens[b, s])}{hint}")


def check_target_mask(target: Callable[[Tensor, int], Tensor]) -> None:
    """``target(tokens (B, T), pad_id)`` must equal ``transformer.target_mask``: ``(B, 1, T, T)`` bool, a key visible
    only if it is a real token *and* not in the future."""
    for tokens, pad_id in _mask_cases():
        B, T = tokens.shape
        call = f"target(tokens of shape {(B, T)}, pad_id={pad_id})"
        mine = _tensor(target(tokens, pad_id), call)
        expected = padding_mask(tokens, pad_id) & causal_mask(T)
        _shape(mine, (B, 1, T, T), call, "the padding mask (B, 1, 1, T) and the causal mask (1, 1, T, T) broadcast "
               "to it")
        _bool_mask(mine, call)
        if torch.equal(mine, padding_mask(tokens, pad_id) | causal_mask(T)):
            raise AssertionError(f"{call} shows a key that one of the masks hides: combine them with & (visible if "
                                 "real *and* not in the future), not |")
        if not torch.equal(mine, expected):
            b, _, i, j = _first_index(mine != expected)
            raise AssertionError(f"{call}[{b}, 0, {i}, {j}] is {bool(mine[b, 0, i, j])}: key {j} is token "
                                 f"{int(tokens[b, j])}, query {i}")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 3: positional encoding.


def check_sinusoid_table(table: Callable[[int, int], Tensor]) -> None:
    """``table(max_len, d_model)`` must equal ``transformer.sinusoidal_table`` to within 1e-4:
    ``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, ``PE[pos, 2i+1] = cos(...)``, for several sizes."""
    for L, d in ((1, 2), (10, 4), (50, 16), (128, 64)):
        call = f"table({L}, {d})"
        mine = _tensor(table(L, d), call)
        _shape(mine, (L, d), call, "one row per position, one column per dimension")
        mine, expected = mine.double(), sinusoidal_table(L, d).double()
        angles = torch.arange(L, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        if L > 1 and torch.allclose(mine, torch.cat([angles.sin(), angles.cos()], dim=1), atol=1e-4):
            raise AssertionError(f"{call} has the sines in the first half of the columns and the cosines in the "
                                 "second (tensor2tensor's layout); the paper interleaves them: column 2i is the sine, "
                                 "2i+1 the cosine of the same frequency")
        if torch.allclose(mine[:, 0::2], expected[:, 1::2], atol=1e-4):
            raise AssertionError(f"{call} has cosines in the even columns: column 2i is the sine, 2i+1 the cosine")
        differ = (mine - expected).abs() > 1e-4
        if differ.any():
            pos, col = _first_index(differ)
            raise AssertionError(f"{call}[{pos}, {col}] is {float(mine[pos, col]):.4f}, not "
                                 f"{float(expected[pos, col]):.4f} (pair i = {col // 2}, frequency "
                                 f"1 / 10000^(2i/{d}) = {10000.0 ** (-2 * (col // 2) / d):.4g})")


def check_offset_matrix(offset: Callable[[int, int], Tensor]) -> None:
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
                raise AssertionError(f"{call} maps PE(pos) to PE(pos - {k}): it turns the wrong way (transpose each "
                                     "2x2 block)")
            pos, col = _first_index(error > 1e-5)
            raise AssertionError(f"(M_k PE(pos))[{col}] = {float(moved[pos, col]):.4f} but PE(pos + k)[{col}] = "
                                 f"{float(pe[pos + k, col]):.4f} for {call}, pos = {pos} (pair i = {col // 2}, "
                                 f"rows {2 * (col // 2)} and {2 * (col // 2) + 1})")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 2: embeddings.


def _describe(config: TransformerConfig) -> str:
    """The config's fields that differ from the defaults, as a constructor call."""
    changed = [
        f"{f.name}={getattr(config, f.name)!r}" for f in fields(config)
        if f.name in ("src_vocab_size", "tgt_vocab_size") or getattr(config, f.name) != f.default
    ]
    return f"TransformerConfig({', '.join(changed)})"


def _count_cases(small: bool) -> list[TransformerConfig]:
    """Configurations that differ in every size and switch a count depends on (small ones, or the paper's)."""
    width = dict(d_model=32, n_heads=4, d_ff=48, n_encoder_layers=2, n_decoder_layers=3, max_len=64) if small else {}
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
    parts = {id(p): p for p in (model.src_embed.weight, model.tgt_embed.weight, model.generator.weight)}
    return sum(p.numel() for p in parts.values())


def check_vocabulary_parameters(count: Callable[[TransformerConfig], int]) -> None:
    """``count(config)`` must be the number of parameters in the source embedding, the target embedding and the
    output projection's weight, a matrix shared by two of them counted once, for configurations with and without
    ``share_embeddings`` and ``tie_output_embedding`` and with two vocabularies of different sizes."""
    for config in _count_cases(small=True):
        mine, expected = count(config), _vocabulary_matrices(config)
        assert mine == expected, (
            f"count({_describe(config)}) is {mine:,}, but its vocabulary matrices hold {expected:,} parameters "
            f"({expected // config.d_model:,} rows of d_model = {config.d_model})"
        )


def check_cosine_similarity(similarity: Callable[[Tensor], Tensor]) -> None:
    """``similarity(E (V, d))`` must be the ``(V, V)`` cosine similarities of the rows of ``E`` (to within 1e-5):
    ``E[i] . E[j] / (|E[i]| |E[j]|)``, for several seeds and shapes."""
    for seed, (V, d) in zip(SEEDS, ((5, 8), (12, 3), (1, 4)), strict=True):
        E = 3 * torch.randn(V, d, generator=_generator(seed))
        call = f"similarity(E of shape {(V, d)})"
        mine = _tensor(similarity(E), call)
        _shape(mine, (V, V), call, "one row and one column per token")
        expected = F.cosine_similarity(E[:, None], E[None], dim=-1)  # (V, V)
        if not torch.allclose(mine.diagonal().double(), torch.ones(V, dtype=torch.float64), atol=1e-5):
            raise AssertionError(f"{call} has {float(mine[0, 0]):.3f} on the diagonal, not 1: a vector's cosine "
                                 "with itself is 1 (divide each dot product by the norms of both rows)")
        if not torch.allclose(mine, expected, atol=1e-5):
            i, j = _first_index((mine - expected).abs() > 1e-5)
            raise AssertionError(f"{call}[{i}, {j}] is {float(mine[i, j]):.4f}, not {float(expected[i, j]):.4f}")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 6: the model.


def check_parameter_count(count: Callable[[TransformerConfig], int]) -> None:
    """``count(config)`` must be ``Transformer(config).num_parameters()`` exactly, for the paper's base model and
    small models that differ in vocabularies, layers per stack, sharing, tying, pre-norm (which adds a final layer
    norm to each stack) and learned positions (one table, shared by the encoder and the decoder)."""
    for config in _count_cases(small=False)[1:2] + _count_cases(small=True):
        mine, expected = count(config), meta_model(config).num_parameters()
        assert mine == expected, (
            f"count({_describe(config)}) is {mine:,}, but the model has {expected:,} parameters "
            f"({'short by' if mine < expected else 'over by'} {abs(mine - expected):,}; d_model = {config.d_model})"
        )


def _encoder_layer_by(layer: EncoderLayer, x: Tensor, mask: Tensor, norm_first: bool) -> Tensor:
    """The encoder layer in one layout or the other (eval mode: no dropout), for naming a reader's mix-up."""
    attend = lambda h: layer.self_attn(h, h, h, mask)[0]
    if norm_first:
        x = x + attend(layer.norm1(x))
        return x + layer.feed_forward(layer.norm2(x))
    x = layer.norm1(x + attend(x))
    return layer.norm2(x + layer.feed_forward(x))


def check_encoder_layer(encoder_layer: Callable[[EncoderLayer, Tensor, Tensor], Tensor]) -> None:
    """``encoder_layer(layer, x (B, S, d_model), mask (B, 1, 1, S))`` must compute what ``layer(x, mask)[0]`` does
    (to within 1e-5) from the layer's parts, ``layer.self_attn``, ``layer.feed_forward``, ``layer.norm1`` and
    ``layer.norm2``, for post-norm and pre-norm layers (``layer.norm_first``), several seeds, shapes and padding."""
    for seed, (B, S, d, H) in zip(SEEDS, ((2, 5, 16, 4), (3, 7, 8, 2), (1, 4, 32, 8)), strict=True):
        for norm_first in (False, True):
            torch.manual_seed(seed)
            layer = EncoderLayer(d, H, 2 * d, dropout=0.1, norm_first=norm_first).eval()  # eval: no dropout
            with torch.no_grad():  # random gains and biases, so that a forgotten norm shows
                for norm in (layer.norm1, layer.norm2):
                    norm.weight.normal_(1.0, 0.3), norm.bias.normal_(0.0, 0.3)
            x = 2 * torch.randn(B, S, d, generator=_generator(seed))
            mask = padding_mask(_tokens(seed, B, S, pad_id=0))
            call = f"encoder_layer(layer with norm_first={norm_first}, x of shape {(B, S, d)}, mask)"
            with torch.no_grad():
                mine = _tensor(encoder_layer(layer, x, mask), call)
                _shape(mine, (B, S, d), call, "the layer's output only (the package's layer also returns weights)")
                expected = layer(x, mask)[0]
                if torch.allclose(mine, expected, atol=1e-5):
                    continue
                if torch.allclose(mine, _encoder_layer_by(layer, x, mask, not norm_first), atol=1e-5):
                    layout = "pre-norm, x + sublayer(norm(x))" if not norm_first else "post-norm, norm(x + sublayer(x))"
                    raise AssertionError(f"{call} is the {layout}; follow layer.norm_first")
            error = float((mine - expected).abs().max())
            raise AssertionError(f"{call} differs from layer(x, mask) by up to {error:.2g}: two residual blocks, "
                                 "self-attention (with the mask) then the feed-forward network, each with its own norm")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 7: training.


def check_smoothed_targets(smoothed: Callable[[Tensor, int, float], Tensor]) -> None:
    """``smoothed(target (N,), V, smoothing)`` must be the ``(N, V)`` distribution that
    ``F.cross_entropy(label_smoothing=smoothing)`` trains towards (``transformer.training.smoothed_targets``), for
    several vocabularies, smoothings and seeds."""
    for seed, V, eps in zip(SEEDS, (5, 13, 2), (0.1, 0.3, 0.2), strict=True):
        target = torch.randint(0, V, (7,), generator=_generator(seed))
        call = f"smoothed(target, V={V}, smoothing={eps})"
        mine = _tensor(smoothed(target, V, eps), call)
        _shape(mine, (7, V), call, "one distribution over the V tokens per target")
        expected = smoothed_targets(target, V, eps)
        if torch.allclose(mine.double(), expected.double(), atol=1e-6):
            continue
        sums = mine.sum(-1)
        assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5), (
            f"the rows of {call} sum to {float(sums[0]):.4f}, not 1: a target must be a distribution"
        )
        right = float(mine[0, target[0]])
        raise AssertionError(f"{call} gives the right token {right:.4f} and a wrong one "
                             f"{float(mine[0, (target[0] + 1) % V]):.4f}; PyTorch spreads the smoothing over all V "
                             f"tokens, the right one included: 1 - ε + ε/V = {1 - eps + eps / V:.4f} and ε/V = "
                             f"{eps / V:.4f}")


def check_noam_lr(rate: Callable[[int, int, int], float]) -> None:
    """``rate(step, d_model, warmup)`` must be the paper's schedule, ``transformer.training.noam_lr`` (steps count
    from 1), to within 1e-6 relative, through the warm-up, at its end and long after, for two model sizes."""
    for d_model, warmup in ((512, 4000), (64, 100)):
        for step in (1, warmup // 2, warmup - 1, warmup, warmup + 1, 10 * warmup):
            call = f"rate({step}, d_model={d_model}, warmup={warmup})"
            mine, expected = float(rate(step, d_model, warmup)), noam_lr(step, d_model, warmup)
            assert math.isclose(mine, expected, rel_tol=1e-6), (
                f"{call} is {mine:.4g}, not {expected:.4g}: d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)"
            )


# ---------------------------------------------------------------------------------------------------------------
# Chapter 8: decoding.


def check_next_token(next_token: Callable, model: torch.nn.Module, sources: Iterable[Tensor], max_len: int) -> None:
    """``next_token(model, src (B, S), decoder_input (B, t))`` must pick what greedy decoding picks at every step of
    every source in ``sources``: the most probable next token, ``<pad>`` and ``<bos>`` excluded (never valid
    outputs). Rows that have already said ``<eos>`` are not compared. Inputs are given on the model's device."""
    device = next(model.parameters()).device
    for src in sources:
        src = src.to(device)
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=device)
        for t, step in enumerate(greedy_steps(model, src, max_len, use_cache=False)):  # the whole prefix, each step
            call = f"next_token(model, src of shape {tuple(src.shape)}, decoder_input of shape " \
                   f"{tuple(step.decoder_input.shape)})"
            with torch.no_grad():
                mine = _tensor(next_token(model, src, step.decoder_input.to(device)), call)
            _shape(mine, (src.size(0),), call, "one id per row: the logits of the *last* position only")
            differ = (mine.to(device) != step.next_tokens.to(device)) & ~finished
            if differ.any():
                b = int(differ.nonzero()[0])
                raise AssertionError(f"at step {t} {call} chose {int(mine[b])} for row {b}; greedy decoding "
                                     f"chose {int(step.next_tokens[b])}")
            finished = step.finished.to(device)


def check_greedy_decode(decode: Callable, model: torch.nn.Module, sources: Iterable[Tensor], max_len: int) -> None:
    """``decode(model, src (B, S), max_len)`` must return what ``greedy_decode(model, src, max_len)`` does for every
    source in ``sources``: ``(B, L)`` ids after ``<s>``, each row ending with its ``</s>`` and ``<pad>`` after it, ``L``
    the step at which the last row finished (or ``max_len``). Inputs are given on the model's device."""
    device = next(model.parameters()).device
    for src in sources:
        src = src.to(device)
        call = f"decode(model, src of shape {tuple(src.shape)}, max_len={max_len})"
        with torch.no_grad():
            mine = _tensor(decode(model, src, max_len), call).to(device)
        expected = greedy_decode(model, src, max_len, use_cache=False)  # (B, L): the whole prefix, each step
        if mine.dim() == 2 and mine.size(0) == src.size(0) and mine.size(1) == expected.size(1) + 1 \
                and torch.equal(mine[:, 1:], expected):
            raise AssertionError(f"{call} starts with <s>: return the generated ids only, after <s>")
        if mine.dim() == 2 and mine.size(0) == src.size(0) and mine.size(1) > expected.size(1) \
                and torch.equal(mine[:, : expected.size(1)], expected):
            raise AssertionError(f"{call} has {mine.size(1)} columns, not {expected.size(1)}: stop when every row "
                                 "has said </s>")
        _shape(mine, tuple(expected.shape), call, "one row per source, one column per step")
        differ = mine != expected
        if differ.any():
            b, t = _first_index(differ)
            after_eos = bool((expected[b, :t] == EOS_ID).any())
            hint = ": a row that has said </s> gets <pad> from then on" if after_eos else ""
            raise AssertionError(f"{call}[{b}, {t}] is {int(mine[b, t])}, greedy decoding gives "
                                 f"{int(expected[b, t])}{hint}")


# ---------------------------------------------------------------------------------------------------------------
# Chapter 9: inside the model.


def check_previous_token_weight(previous: Callable[[Tensor, Tensor], Tensor]) -> None:
    """``previous(weights (B, H, T, T), valid (B, T))`` must give each head's mean weight on the key just before the
    query, ``(H,)``, averaged over the queries where ``valid`` is True and that have a previous token (t >= 1), for
    several seeds and shapes (with padding)."""
    for seed, (B, H, T) in zip(SEEDS, ((2, 4, 6), (3, 1, 9), (1, 8, 3)), strict=True):
        g = _generator(seed)
        weights = torch.softmax(3 * torch.randn(B, H, T, T, generator=g), dim=-1)
        lengths = torch.randint(2, T + 1, (B,), generator=g)
        t = torch.arange(T)[None, :]  # (1, T)
        valid = t < lengths[:, None]  # (B, T)
        call = f"previous(weights of shape {(B, H, T, T)}, valid)"
        mine = _tensor(previous(weights, valid), call)
        _shape(mine, (H,), call, "one number per head")
        expected = aligned_weight(weights, (t - 1).expand(B, T), valid & (t >= 1))
        if torch.allclose(mine.double(), expected.double(), atol=1e-5):
            continue
        if torch.allclose(mine, aligned_weight(weights, (t - 1).expand(B, T), (t >= 1).expand(B, T)), atol=1e-5):
            raise AssertionError(f"{call} averages over padding queries too: keep the queries where valid is True")
        raise AssertionError(f"{call} is {[round(float(w), 3) for w in mine]}, not "
                             f"{[round(float(w), 3) for w in expected]} (the weight of query t on key t - 1, "
                             "averaged over the valid queries with t >= 1)")


def check_silenced_head(silenced: Callable[[MultiHeadAttention, Tensor, int], Tensor]) -> None:
    """``silenced(attention, x (B, T, d_model), head)`` must be the self-attention output of ``attention`` with
    ``head`` silenced, as the package computes it with ``attention.head_mask`` (to within 1e-5): the head's output is
    zeroed *before* the heads are concatenated and projected. For several seeds, shapes and heads (biases random)."""
    for seed, (B, T, d, H) in zip(SEEDS, ((2, 5, 16, 4), (1, 7, 8, 2), (3, 4, 32, 8)), strict=True):
        torch.manual_seed(seed)
        attention = MultiHeadAttention(d, H).eval()
        with torch.no_grad():  # the package starts its biases at 0: random ones show a forgotten bias
            attention.in_proj.bias.normal_(), attention.out_proj.bias.normal_()
        x = torch.randn(B, T, d, generator=_generator(seed))
        for head in (0, H - 1):
            call = f"silenced(attention with {H} heads, x of shape {(B, T, d)}, head={head})"
            with torch.no_grad():
                mine = _tensor(silenced(attention, x, head), call)
                _shape(mine, (B, T, d), call, "the attention's output, (B, T, d_model)")
                attention.head_mask = torch.ones(H).index_fill(0, torch.tensor([head]), 0.0)
                expected = attention(x, x, x)[0]
                attention.head_mask = None
                full = attention(x, x, x)[0]
            if torch.allclose(mine, expected, atol=1e-5):
                continue
            columns = slice(head * d // H, (head + 1) * d // H)
            if torch.allclose(mine, full.index_fill(-1, torch.arange(d)[columns], 0.0), atol=1e-5):
                raise AssertionError(f"{call} zeroes the head's columns of the *projected* output; silence the head's "
                                     "output before out_proj, which mixes every head into every column")
            if torch.allclose(mine, full, atol=1e-5):
                raise AssertionError(f"{call} is the output with every head: head {head} is not silenced")
            error = float((mine - expected).abs().max())
            raise AssertionError(f"{call} differs from the package's by up to {error:.2g}")
