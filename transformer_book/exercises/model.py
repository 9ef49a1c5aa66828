"""The exercises of chapter 6 (``book/06_model.ipynb``): the model's parameter count, and the encoder and decoder layers
written from their parts, post-norm and pre-norm."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from transformer import DecoderLayer, EncoderLayer, TransformerConfig, padding_mask, target_mask
from transformer.utils import make_rng, seeded
from transformer_book.exercises.grading import (
    SEEDS,
    check_shape,
    count_cases,
    describe_config,
    random_tokens,
    returned_tensor,
)
from transformer_book.i18n import tr, translatable
from transformer_book.viz.overview import meta_model

__all__ = ["grade_decoder_layer", "grade_encoder_layer", "grade_parameter_count"]


def grade_parameter_count(count: Callable[[TransformerConfig], int]) -> None:
    """``count(config)`` must be ``Transformer(config).num_parameters()`` exactly, for the paper's base model and
    small models that differ in vocabularies, layers per stack, sharing, tying, pre-norm (which adds a final layer
    norm to each stack) and learned positions (one table, shared by the encoder and the decoder)."""
    for config in count_cases(small=False)[1:2] + count_cases(small=True):
        mine, expected = count(config), meta_model(config).num_parameters()
        values = dict(call=f"count({describe_config(config)})", mine=mine, expected=expected, d_model=config.d_model)
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
            mask = padding_mask(random_tokens(seed, B, S, pad_id=0))
            call = tr(
                "encoder_layer(layer with norm_first={norm_first}, x of shape {shape}, mask)",
                norm_first=norm_first,
                shape=(B, S, d),
            )
            with torch.no_grad():
                mine = returned_tensor(encoder_layer(layer, x, mask), call)
                check_shape(
                    mine, (B, S, d), call, tr("the layer's output only (the package's layer also returns weights)")
                )
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
            tgt = random_tokens(seed, B, T, pad_id=0)
            tgt[:, 0] = 1  # BOS: padding only at the end of a target
            src_mask, tgt_mask = padding_mask(random_tokens(seed + 10, B, S, pad_id=0)), target_mask(tgt)
            call = tr(
                "decoder_layer(layer with norm_first={norm_first}, y of shape {y_shape}, memory of shape "
                "{memory_shape}, src_mask, tgt_mask)",
                norm_first=norm_first,
                y_shape=(B, T, d),
                memory_shape=(B, S, d),
            )
            with torch.no_grad():
                mine = returned_tensor(decoder_layer(layer, y, memory, src_mask, tgt_mask), call)
                check_shape(
                    mine, (B, T, d), call, tr("the layer's output only (the package's layer also returns weights)")
                )
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
