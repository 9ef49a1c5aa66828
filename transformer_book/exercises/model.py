"""The exercises of chapter 6 (``book/06_model.ipynb``): the model's parameter count, and the encoder and decoder layers
written from their parts, post-norm and pre-norm."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from transformer import DecoderLayer, EncoderLayer, TransformerConfig, padding_mask, target_mask
from transformer.tokens import BOS_ID, PAD_ID
from transformer.utils import make_rng, seeded
from transformer_book.exercises.grading import (
    SEEDS,
    check_shape,
    count_cases,
    count_mistake,
    describe_config,
    random_tokens,
    returned_tensor,
    varies,
)
from transformer_book.i18n import tr, translatable
from transformer_book.viz.overview import meta_model

__all__ = ["grade_decoder_layer", "grade_encoder_layer", "grade_parameter_count"]


def _parts(config: TransformerConfig) -> Counter[str]:
    """The parameters of ``Transformer(config)`` by the part a count may miss, a tensor shared by two modules counted
    once (under its first name: a tied ``lm_head.weight`` or a shared ``tgt_embed.weight`` does not appear)."""
    parts: Counter[str] = Counter()
    for name, parameter in meta_model(config).named_parameters():
        n, module, kind = parameter.numel(), name.split(".")[-2], name.split(".")[-1]
        is_norm = module.startswith("norm")
        parts["linear biases"] += n * (kind == "bias" and not is_norm)
        parts["attention biases"] += n * (kind == "bias" and "_attn." in name)
        parts["feed-forward biases"] += n * (kind == "bias" and ".feed_forward." in name)
        parts["norms"] += n * is_norm
        parts["norm biases"] += n * (is_norm and kind == "bias")
        parts["final norms"] += n * name.startswith(("encoder.norm.", "decoder.norm."))
        parts["norm3"] += n * (module == "norm3")
        parts["cross-attention"] += n * (".cross_attn." in name)
        parts["W_O"] += n * (module == "out_proj")
        parts["keys and values"] += 2 * n // 3 * (module == "in_proj")
        parts["encoder layer"] += n * name.startswith("encoder.layers.0.")
        parts["decoder layer"] += n * name.startswith("decoder.layers.0.")
        parts["embeddings"] += n * name.startswith(("src_embed.", "tgt_embed.", "positional."))
        parts["encoder"] += n * name.startswith("encoder.")
        parts["decoder"] += n * name.startswith("decoder.")
        parts["output layer"] += n * name.startswith("lm_head.")
        parts[name] += n  # the single tensors: lm_head.bias, positional.weight, ...
    return parts


def _parameter_mistakes(configs: list[TransformerConfig]) -> dict[str, list[int]]:
    """What each classic mistake adds to the count of each configuration (negative: what it leaves out)."""
    parts = [_parts(c) for c in configs]
    each = lambda added: [added(c, p) for c, p in zip(configs, parts, strict=True)]  # noqa: E731
    missing = lambda part: each(lambda c, p: -p[part])  # noqa: E731
    return {
        tr(
            "it leaves out the biases of the linear layers: every nn.Linear here has one, out_features numbers "
            "(attention's projections, the feed-forward network's two layers, the output projection)"
        ): missing("linear biases"),
        tr(
            "it leaves out the output projection's bias, tgt_vocab_size numbers (lm_head has one even when its weight "
            "is tied)"
        ): missing("lm_head.bias"),
        tr("it leaves out the attention projections' biases: in_proj has 3 d_model of them, out_proj d_model"): (
            missing("attention biases")
        ),
        tr("it leaves out the feed-forward network's biases, d_ff + d_model in each layer"): missing(
            "feed-forward biases"
        ),
        tr("it leaves out the layer norms: each has a gain and a bias, 2 d_model parameters"): missing("norms"),
        tr("it counts d_model for a layer norm: each has a gain *and* a bias, 2 d_model"): missing("norm biases"),
        tr(
            "it leaves out the final layer norm of each stack, which pre-norm (or final_norm=True) adds after the "
            "last layer, 2 d_model each"
        ): missing("final norms"),
        tr("it leaves out each decoder layer's third layer norm: three residual blocks, three norms"): missing("norm3"),
        tr("it leaves out the decoder's cross-attention, a second attention module in every decoder layer"): missing(
            "cross-attention"
        ),
        tr("it leaves out W_O, each attention module's output projection (d_model x d_model and its bias)"): missing(
            "W_O"
        ),
        tr(
            "it counts one input projection where attention has three, W_Q, W_K and W_V, each d_model x d_model "
            "with its bias"
        ): missing("keys and values"),
        tr("it leaves out the learned positional table, max_positions x d_model (positional_encoding='learned')"): (
            missing("positional.weight")
        ),
        tr(
            "it leaves out the output projection's weight, tgt_vocab_size x d_model, a matrix of its own unless "
            "tie_output_embedding=True"
        ): missing("lm_head.weight"),
        tr(
            "it leaves out the target embedding, tgt_vocab_size x d_model, a matrix of its own unless "
            "share_embeddings=True"
        ): missing("tgt_embed.weight"),
        tr("it counts one decoder layer too few: the decoder has n_decoder_layers of them"): missing("decoder layer"),
        tr("it counts one encoder layer too few: the encoder has n_encoder_layers of them"): missing("encoder layer"),
        tr("share_embeddings=True makes the target embedding the source embedding's matrix: count it once"): each(
            lambda c, p: c.share_embeddings * c.src_vocab_size * c.d_model
        ),
        tr(
            "tie_output_embedding=True makes the output projection's weight the target embedding's matrix: count it "
            "once"
        ): each(lambda c, p: c.tie_output_embedding * c.tgt_vocab_size * c.d_model),
        tr("it counts the sinusoidal table, a fixed buffer rather than a parameter"): each(
            lambda c, p: (c.positional_encoding == "sinusoidal") * c.max_positions * c.d_model
        ),
        tr("it counts the learned positional table twice: the encoder and the decoder share one"): each(
            lambda c, p: (c.positional_encoding == "learned") * c.max_positions * c.d_model
        ),
        tr("it counts final layer norms that a post-norm model without final_norm=True does not have"): each(
            lambda c, p: (not c.use_final_norm) * 4 * c.d_model
        ),
        tr("it gives the encoder layers a cross-attention: only a decoder layer has one"): each(
            lambda c, p: c.n_encoder_layers * p["cross-attention"] // c.n_decoder_layers
        ),
        tr("it gives the decoder n_encoder_layers layers: it has n_decoder_layers"): each(
            lambda c, p: (c.n_encoder_layers - c.n_decoder_layers) * p["decoder layer"]
        ),
        tr("it swaps n_encoder_layers and n_decoder_layers"): each(
            lambda c, p: (c.n_decoder_layers - c.n_encoder_layers) * (p["encoder layer"] - p["decoder layer"])
        ),
        tr("it assumes d_ff = 4 d_model: use config.d_ff"): each(
            lambda c, p: (c.n_encoder_layers + c.n_decoder_layers) * (4 * c.d_model - c.d_ff) * (2 * c.d_model + 1)
        ),
    }


def grade_parameter_count(count: Callable[[TransformerConfig], int]) -> None:
    """``count(config)`` must be ``Transformer(config).num_parameters()`` exactly, for the paper's base model and
    small models that differ in vocabularies, layers per stack, sharing, tying, pre-norm (which adds a final layer
    norm to each stack) and learned positions (one table, shared by the encoder and the decoder). It names the part
    left out or counted twice (or two of them): biases, layer norms or their biases, the final norms, the third
    norm, cross-attention, W_O, two of the three input projections, the positional table, an embedding or the output
    weight, a layer, and a shared or tied matrix, a sinusoidal table, a swapped or assumed size."""
    configs = count_cases(small=False)[1:2] + count_cases(small=True)
    answers, expected = [count(c) for c in configs], [meta_model(c).num_parameters() for c in configs]
    if answers == expected:
        return
    wrong = next(i for i, (a, e) in enumerate(zip(answers, expected, strict=True)) if a != e)
    config, mine = configs[wrong], answers[wrong]
    values = dict(call=f"count({describe_config(config)})", mine=mine, expected=expected[wrong])
    hint = count_mistake(answers, expected, _parameter_mistakes(configs))
    if hint:
        raise AssertionError(
            tr("{call} is {mine:,}, but the model has {expected:,} parameters: {hint}", hint=hint, **values)
        )
    parts = _parts(config)
    values |= dict(
        gap=abs(mine - expected[wrong]),
        d_model=config.d_model,
        embeddings=parts["embeddings"],
        encoder=parts["encoder"],
        decoder=parts["decoder"],
        output=parts["output layer"],
    )
    raise AssertionError(
        tr(
            "{call} is {mine:,}, but the model has {expected:,} parameters (short by {gap:,}; d_model = {d_model}): "
            "embeddings {embeddings:,}, encoder {encoder:,}, decoder {decoder:,}, output layer {output:,}",
            **values,
        )
        if mine < expected[wrong]
        else tr(
            "{call} is {mine:,}, but the model has {expected:,} parameters (over by {gap:,}; d_model = {d_model}): "
            "embeddings {embeddings:,}, encoder {encoder:,}, decoder {decoder:,}, output layer {output:,}",
            **values,
        )
    )


def _block(
    x: Tensor,
    norm: torch.nn.Module,
    sublayer: Callable[[Tensor], Tensor],
    norm_first: bool,
    form: str = "layout",
    residual: bool = True,
) -> Tensor:
    """One residual block in the layer's layout (``form`` "layout"), or with the norm misplaced: "branch",
    ``x + norm(sublayer(x))``; "normed residual", ``norm(x) + sublayer(norm(x))``. ``residual=False``: no input added
    back."""
    kept = x if residual else 0.0
    if form == "branch":
        return kept + norm(sublayer(x))
    if form == "normed residual":
        h = norm(x)
        return (h if residual else 0.0) + sublayer(h)
    return kept + sublayer(norm(x)) if norm_first else norm(kept + sublayer(x))


def _layouts(norm_first: bool) -> str:
    return "x + sublayer(norm(x))" if norm_first else "norm(x + sublayer(x))"


def _norm_mistakes(norm_first: bool) -> list[tuple[str, dict[str, object]]]:
    """The layout or the norm's place mistaken, in either layer, by the hint that names it."""
    return [
        (
            tr("pre-norm, x + sublayer(norm(x)); follow layer.norm_first")
            if not norm_first
            else tr("post-norm, norm(x + sublayer(x)); follow layer.norm_first"),
            dict(norm_first=not norm_first),
        ),
        (
            tr(
                "the norm is applied to the sublayer's output, x + norm(sublayer(x)): the block is {layout}",
                layout=_layouts(norm_first),
            ),
            dict(form="branch"),
        ),
        (
            tr(
                "the residual connection adds the normalised input, norm(x) + sublayer(norm(x)): it adds x itself, "
                "{layout}",
                layout=_layouts(norm_first),
            ),
            dict(form="normed residual"),
        ),
    ]


_LAYER_DROPOUT_HINT = translatable(
    "two calls with the same inputs give different results: dropout is on (F.dropout drops by default, "
    "training=True); the layer is in eval mode, where its own dropouts (layer.dropout1, ...) drop nothing, and the "
    "package compares without dropout"
)

_ENCODER_BLOCKS = (translatable("self-attention"), translatable("feed-forward"))  # English names, shown through tr


def _encoder_layer_by(
    layer: EncoderLayer,
    x: Tensor,
    mask: Tensor | None,
    norm_first: bool,
    form: str = "layout",
    norms: Sequence[int] = (1, 2),
    residuals: Sequence[bool] = (True, True),
    order: str = "attention first",
) -> Tensor:
    """The encoder layer right, or with one classic mistake, for naming it (eval mode: no dropout)."""
    attend = lambda h: layer.self_attn(h, h, h, mask)[0]
    sublayers = (attend, layer.feed_forward) if order == "attention first" else (layer.feed_forward, attend)
    for sublayer, i, residual in zip(sublayers, norms, residuals, strict=True):
        x = _block(x, getattr(layer, f"norm{i}"), sublayer, norm_first, form, residual)
    return x


def grade_encoder_layer(encoder_layer: Callable[[EncoderLayer, Tensor, Tensor], Tensor]) -> None:
    """``encoder_layer(layer, x (B, S, d_model), mask (B, 1, 1, S))`` must compute what ``layer(x, mask)[0]`` does
    (to within 1e-5) from the layer's parts, ``layer.self_attn``, ``layer.feed_forward``, ``layer.norm1`` and
    ``layer.norm2``, for post-norm and pre-norm layers (``layer.norm_first``), several seeds, shapes and padding. It
    names the other layout, a norm on the sublayer's output or a residual taken after the norm, a missing residual
    connection, an ignored mask, swapped norms or sublayers, and dropout left on."""
    for seed, (B, S, d, H) in zip(SEEDS, ((2, 5, 16, 4), (3, 7, 8, 2), (1, 4, 32, 8)), strict=True):
        for norm_first in (False, True):
            with seeded(seed), torch.no_grad():
                layer = EncoderLayer(d, H, 2 * d, dropout=0.1, norm_first=norm_first).eval()  # eval: no dropout
                for norm in (layer.norm1, layer.norm2):  # random gains and biases, so that a forgotten norm shows
                    norm.weight.normal_(1.0, 0.3), norm.bias.normal_(0.0, 0.3)
            x = 2 * torch.randn(B, S, d, generator=make_rng(seed))
            mask = padding_mask(random_tokens(seed, B, S, pad_id=PAD_ID))
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
                if varies(encoder_layer, (layer, x, mask), (mine,)):
                    raise AssertionError(tr("{call}: {hint}", call=call, hint=tr(_LAYER_DROPOUT_HINT)))
                mistakes = [
                    *_norm_mistakes(norm_first),
                    *[
                        (
                            tr(
                                "the {block} block has no residual connection: {layout}, the input added back",
                                block=tr(_ENCODER_BLOCKS[i]),
                                layout=_layouts(norm_first),
                            ),
                            dict(residuals=tuple(j != i for j in range(2))),
                        )
                        for i in range(2)
                    ],
                    (
                        tr(
                            "self-attention ignores the mask: the queries attend to the padding keys; pass mask to "
                            "layer.self_attn"
                        ),
                        dict(mask=None),
                    ),
                    (
                        tr(
                            "the norms are swapped: norm1 belongs to self-attention, norm2 to the feed-forward "
                            "network, each with a gain and a bias of its own"
                        ),
                        dict(norms=(2, 1)),
                    ),
                    (
                        tr(
                            "the feed-forward network comes before self-attention: self-attention first, then the "
                            "feed-forward network"
                        ),
                        dict(order="feed-forward first"),
                    ),
                ]
                for hint, how in mistakes:
                    wrong = _encoder_layer_by(layer, x, **(dict(mask=mask, norm_first=norm_first) | how))
                    if torch.allclose(mine, wrong, atol=1e-5):
                        raise AssertionError(tr("{call}: {hint}", call=call, hint=hint))
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
    form: str = "layout",
    cross: str = "memory",
    order: str = "self first",
    norms: Sequence[int] = (1, 2, 3),
    residuals: Sequence[bool] = (True, True, True),
) -> Tensor:
    """The decoder layer right, or with one classic mistake, for naming it (eval mode: no dropout). ``norms``: which of
    ``norm1`` to ``norm3`` each block uses; ``residuals``: which blocks add their input back."""
    attend = {  # cross-attention's queries, keys and values
        "memory": lambda h: layer.cross_attn(h, memory, memory, cross_mask)[0],
        "decoder": lambda h: layer.cross_attn(h, h, h, cross_mask)[0],  # keys and values from the decoder
        "swapped": lambda h: layer.cross_attn(memory, h, h, cross_mask)[0],  # queries from the memory
        "self_attn": lambda h: layer.self_attn(h, memory, memory, cross_mask)[0],  # one module for both jobs
    }[cross]
    self_attend = lambda h: layer.self_attn(h, h, h, tgt_mask)[0]
    first, second = (self_attend, attend) if order == "self first" else (attend, self_attend)
    for sublayer, i, residual in zip((first, second, layer.feed_forward), norms, residuals, strict=True):
        y = _block(y, getattr(layer, f"norm{i}"), sublayer, norm_first, form, residual)
    return y


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
    ``layer.self_attn``, swapped layouts, sub-layers and norms, a norm on the sublayer's output or a residual taken
    after the norm, a missing residual connection and dropout left on."""
    for seed, (B, T, S, d, H) in zip(SEEDS, ((2, 5, 5, 16, 4), (3, 6, 4, 8, 2), (1, 4, 7, 32, 8)), strict=True):
        for norm_first in (False, True):
            with seeded(seed), torch.no_grad():
                layer = DecoderLayer(d, H, 2 * d, dropout=0.1, norm_first=norm_first).eval()  # eval: no dropout
                for norm in (layer.norm1, layer.norm2, layer.norm3):  # random gains and biases: a swapped norm shows
                    norm.weight.normal_(1.0, 0.3), norm.bias.normal_(0.0, 0.3)
            g = make_rng(seed)
            y, memory = 2 * torch.randn(B, T, d, generator=g), 2 * torch.randn(B, S, d, generator=g)
            tgt = random_tokens(seed, B, T, pad_id=PAD_ID)
            tgt[:, 0] = BOS_ID  # padding only at the end of a target
            src_mask, tgt_mask = padding_mask(random_tokens(seed + 10, B, S, pad_id=PAD_ID)), target_mask(tgt)
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
                if varies(decoder_layer, (layer, y, memory, src_mask, tgt_mask), (mine,)):
                    raise AssertionError(tr("{call}: {hint}", call=call, hint=tr(_LAYER_DROPOUT_HINT)))
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
                    *_norm_mistakes(norm_first),
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
                                layout=_layouts(norm_first),
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
