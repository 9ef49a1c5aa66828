"""The exercises of chapter 6 (transformer_book.exercises.model): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import pytest
import torch
import torch.nn.functional as F
from exercise_checks import accepted, refused
from test_exercises_embeddings import vocabulary_parameters

from transformer import Transformer
from transformer_book.exercises import grade_decoder_layer, grade_encoder_layer, grade_parameter_count


def parameter_count(
    config,
    biases=True,
    output_bias=True,
    norm_size=2,
    final_norm=True,
    cross=True,
    decoder_norms=3,
    out_proj=True,
    projections=3,
    encoder_layers=None,
    decoder_layers=None,
    d_ff=None,
    **vocabulary,
):
    """The closed form, as the chapter's solution writes it, optionally with one or more mistakes."""
    d, ff, b = config.d_model, config.d_ff if d_ff is None else d_ff(config), int(biases)
    attention = (projections + out_proj) * (d * d + d * b)
    ffn = 2 * d * ff + (ff + d) * b
    norm = norm_size * d
    n_enc = config.n_encoder_layers if encoder_layers is None else encoder_layers(config)
    n_dec = config.n_decoder_layers if decoder_layers is None else decoder_layers(config)
    encoder = n_enc * (attention + ffn + 2 * norm)
    decoder = n_dec * (attention * (1 + cross) + ffn + decoder_norms * norm)
    finals = 2 * norm if config.use_final_norm and final_norm else 0
    positions = config.max_positions * d if config.positional_encoding == "learned" else 0
    output = config.tgt_vocab_size * b * output_bias
    return vocabulary_parameters(config, **vocabulary) + output + encoder + decoder + finals + positions


def by_the_model(config):
    """The model built on the meta device (shapes only) and its distinct parameters counted."""
    with torch.device("meta"):
        model = Transformer(config)
    return sum(p.numel() for p in model.parameters())  # parameters() yields a shared tensor once


@pytest.mark.parametrize("right", [parameter_count, by_the_model], ids=["closed form", "the model's parameters"])
def test_parameter_count_check_passes_right_answers(right):
    accepted(grade_parameter_count, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (dict(biases=False), r"leaves out the biases of the linear layers"),
        (dict(output_bias=False), r"leaves out the output projection's bias"),
        (dict(norm_size=0), r"leaves out the layer norms"),
        (dict(norm_size=1), r"counts d_model for a layer norm: each has a gain \*and\* a bias"),
        (dict(final_norm=False), r"norm_first=True.*leaves out the final layer norm of each stack"),
        (dict(decoder_norms=2), r"leaves out each decoder layer's third layer norm"),
        (dict(cross=False), r"leaves out the decoder's cross-attention"),
        (dict(out_proj=False), r"leaves out W_O"),
        (dict(projections=1), r"counts one input projection where attention has three"),
        (dict(output=False), r"leaves out the output projection's weight"),
        (dict(target=False), r"leaves out the target embedding"),
        (dict(shared=False), r"share_embeddings=True makes"),
        (dict(tied=False), r"tie_output_embedding=True makes"),
        (dict(decoder_layers=lambda c: c.n_encoder_layers), r"gives the decoder n_encoder_layers layers"),
        (
            dict(encoder_layers=lambda c: c.n_decoder_layers, decoder_layers=lambda c: c.n_encoder_layers),
            r"swaps n_encoder_layers and n_decoder_layers",
        ),
        (dict(decoder_layers=lambda c: c.n_decoder_layers - 1), r"one decoder layer too few"),
        (dict(d_ff=lambda c: 4 * c.d_model), r"assumes d_ff = 4 d_model"),
        (dict(extra=0, biases=False, final_norm=False), r"biases of the linear layers.*; and .*final layer norm"),
        (dict(norm_size=1, cross=False), r"counts d_model for a layer norm.*; and .*cross-attention"),
    ],
    ids=[
        "no biases",
        "no output bias",
        "no norms",
        "norms of d_model",
        "no final norms",
        "two norms per decoder layer",
        "no cross-attention",
        "no W_O",
        "one input projection",
        "no output weight",
        "no target embedding",
        "shared twice",
        "tied twice",
        "the encoder's layer count for both",
        "layer counts swapped",
        "a decoder layer short",
        "d_ff assumed",
        "biases and final norms",
        "norm size and cross-attention",
    ],
)
def test_parameter_count_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_parameter_count, lambda c: parameter_count(c, **wrong), message)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (
            lambda c: by_the_model(c) + (c.positional_encoding == "sinusoidal") * c.max_positions * c.d_model,
            "counts the sinusoidal table",
        ),
        (
            lambda c: by_the_model(c) + (c.positional_encoding == "learned") * c.max_positions * c.d_model,
            "counts the learned positional table twice",
        ),
        (lambda c: by_the_model(c) + (not c.use_final_norm) * 4 * c.d_model, "counts final layer norms"),
        (
            lambda c: by_the_model(c) + c.n_encoder_layers * 4 * (c.d_model**2 + c.d_model),
            "gives the encoder layers a cross-attention",
        ),
        (lambda c: by_the_model(c) + 1, r"\(over by 1; d_model = 512\): embeddings 18,944,000, encoder"),
        (lambda c: by_the_model(c) - 7, r"\(short by 7; d_model = 512\)"),
    ],
    ids=[
        "sinusoidal table",
        "learned table per stack",
        "final norms of a post-norm model",
        "cross-attention in the encoder",
        "one over",
        "seven short",
    ],
)
def test_parameter_count_check_refuses_counts_of_what_the_model_lacks_naming_them(wrong, message):
    refused(grade_parameter_count, wrong, message)


def block(x, norm, sublayer, norm_first, form="layout", residual=True, dropout=0.0):
    """One residual block as a reader writes it: the layer's layout, or the norm misplaced."""
    skip = x if residual else 0
    if form == "branch":
        return skip + norm(F.dropout(sublayer(x), dropout))
    if form == "normed residual":
        x = norm(x)
        return (x if residual else 0) + F.dropout(sublayer(x), dropout)
    if norm_first:
        return skip + F.dropout(sublayer(norm(x)), dropout)
    return norm(skip + F.dropout(sublayer(x), dropout))


def encoder_layer(
    layer,
    x,
    mask,
    layout=None,
    form="layout",
    residual=(True, True),
    mask_on=True,
    norms=("norm1", "norm2"),
    order="attention first",
    dropout=0.0,
):
    norm_first = layer.norm_first if layout is None else layout == "pre"

    def attend(h):
        return layer.self_attn(h, h, h, mask if mask_on else None)[0]

    sublayers = (attend, layer.feed_forward) if order == "attention first" else (layer.feed_forward, attend)
    for sublayer, norm, keep in zip(sublayers, norms, residual, strict=True):
        x = block(x, getattr(layer, norm), sublayer, norm_first, form, keep, dropout)
    return x


def chapter_encoder_layer(layer, x, mask):
    """The chapter's solution."""

    def attend(h):
        return layer.self_attn(h, h, h, mask)[0]

    if layer.norm_first:
        x = x + attend(layer.norm1(x))
        return x + layer.feed_forward(layer.norm2(x))
    x = layer.norm1(x + attend(x))
    return layer.norm2(x + layer.feed_forward(x))


def with_the_layers_dropouts(layer, x, mask):
    """The package's own wiring, its dropout modules included: in eval mode they drop nothing."""
    for norm, dropout, sublayer in (
        (layer.norm1, layer.dropout1, lambda h: layer.self_attn(h, h, h, mask)[0]),
        (layer.norm2, layer.dropout2, layer.feed_forward),
    ):
        x = x + dropout(sublayer(norm(x))) if layer.norm_first else norm(x + dropout(sublayer(x)))
    return x


@pytest.mark.parametrize(
    "right",
    [
        encoder_layer,
        chapter_encoder_layer,
        with_the_layers_dropouts,
        lambda *a: encoder_layer(*a, dropout=0.0),
        lambda layer, x, mask: layer(x, mask)[0],
    ],
    ids=["blocks", "the chapter's", "with layer.dropout1 and 2", "F.dropout with p=0", "the layer itself"],
)
def test_encoder_layer_check_passes_right_answers(right):
    accepted(grade_encoder_layer, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (dict(layout="pre"), r"norm_first=False.*: pre-norm, x \+ sublayer\(norm\(x\)\); follow layer.norm_first"),
        (dict(layout="post"), r"norm_first=True.*: post-norm, norm\(x \+ sublayer\(x\)\); follow"),
        (dict(form="branch"), r"applied to the sublayer's output, x \+ norm\(sublayer\(x\)\)"),
        (dict(layout="pre", form="normed residual"), r"norm_first=False.*adds the normalised input"),
        (dict(residual=(False, True)), "the self-attention block has no residual connection"),
        (dict(residual=(True, False)), "the feed-forward block has no residual connection"),
        (dict(residual=(False, False)), "two residual blocks"),
        (dict(mask_on=False), "self-attention ignores the mask"),
        (dict(norms=("norm2", "norm1")), "the norms are swapped: norm1 belongs to self-attention"),
        (dict(order="feed-forward first"), "the feed-forward network comes before self-attention"),
        (dict(dropout=0.1), r"different results: dropout is on .*eval mode"),
    ],
    ids=[
        "pre-norm in a post-norm layer",
        "post-norm in a pre-norm layer",
        "norm on the branch",
        "residual after the norm",
        "no attention residual",
        "no feed-forward residual",
        "no residuals",
        "no mask",
        "norms swapped",
        "feed-forward first",
        "dropout on",
    ],
)
def test_encoder_layer_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_encoder_layer, lambda *a: encoder_layer(*a, **wrong), message)


def test_encoder_layer_check_wants_the_output_only():
    refused(grade_encoder_layer, lambda layer, x, mask: layer(x, mask), "returned tuple")


def decoder_layer(
    layer,
    y,
    memory,
    src_mask,
    tgt_mask,
    layout=None,
    form="layout",
    causal=True,
    keys_from="memory",
    order="self first",
    source_masked=True,
    norms=("norm1", "norm2", "norm3"),
    residual=(True, True, True),
    cross_module="cross_attn",
    dropout=0.0,
):
    norm_first = layer.norm_first if layout is None else layout == "pre"

    def masked_self_attention(h):
        return layer.self_attn(h, h, h, tgt_mask if causal else None)[0]

    def cross_attention(h):
        attend = getattr(layer, cross_module)
        if keys_from == "memory":
            return attend(h, memory, memory, src_mask if source_masked else None)[0]
        return attend(h, h, h, src_mask)[0]  # the decoder's own states as keys and values

    first, second = (
        (masked_self_attention, cross_attention) if order == "self first" else (cross_attention, masked_self_attention)
    )
    for sublayer, norm, keep in zip((first, second, layer.feed_forward), norms, residual, strict=True):
        y = block(y, getattr(layer, norm), sublayer, norm_first, form, keep, dropout)
    return y


def chapter_decoder_layer(layer, y, memory, src_mask, tgt_mask):
    """The chapter's solution."""

    def step(x, norm, sublayer):
        return x + sublayer(norm(x)) if layer.norm_first else norm(x + sublayer(x))

    y = step(y, layer.norm1, lambda h: layer.self_attn(h, h, h, tgt_mask)[0])
    y = step(y, layer.norm2, lambda h: layer.cross_attn(h, memory, memory, src_mask)[0])
    return step(y, layer.norm3, layer.feed_forward)


@pytest.mark.parametrize(
    "right",
    [decoder_layer, chapter_decoder_layer, lambda layer, *a: layer(*a)[0]],
    ids=["blocks", "the chapter's", "the layer itself"],
)
def test_decoder_layer_check_passes_right_answers(right):
    accepted(grade_decoder_layer, right)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(causal=False), "self-attention sees the future"),
        (dict(keys_from="decoder"), "keys and values from the decoder"),
        (dict(layout="pre"), r"norm_first=False.*pre-norm"),
        (dict(layout="post"), r"norm_first=True.*post-norm"),
        (dict(form="branch"), r"applied to the sublayer's output"),
        (dict(layout="pre", form="normed residual"), "adds the normalised input"),
        (dict(order="cross first"), "cross-attention comes before self-attention"),
        (dict(source_masked=False), "cross-attention has no src_mask"),
        (
            dict(norms=("norm2", "norm1", "norm3")),
            "norms are swapped: the masked self-attention block uses norm2, the cross-attention block uses norm1;",
        ),
        (
            dict(norms=("norm1", "norm3", "norm2")),
            "norms are swapped: the cross-attention block uses norm3, the feed-forward block uses norm2;",
        ),
        (dict(residual=(False, True, True)), "the masked self-attention block has no residual connection"),
        (dict(residual=(True, False, True)), "the cross-attention block has no residual connection"),
        (dict(residual=(True, True, False)), "the feed-forward block has no residual connection"),
        (dict(cross_module="self_attn"), "cross-attention runs layer.self_attn"),
        (dict(cross_module="self_attn", source_masked=False), "cross-attention runs layer.self_attn"),
        (dict(dropout=0.1), "dropout is on"),
    ],
    ids=[
        "no causal mask",
        "keys from the decoder",
        "pre-norm in a post-norm layer",
        "post-norm in a pre-norm layer",
        "norm on the branch",
        "residual after the norm",
        "cross first",
        "no src_mask",
        "norms 1 and 2 swapped",
        "norms 2 and 3 swapped",
        "no self-attention residual",
        "no cross-attention residual",
        "no feed-forward residual",
        "self_attn for cross-attention",
        "self_attn, no src_mask",
        "dropout on",
    ],
)
def test_decoder_layer_check_refuses_classic_mistakes_naming_them(options, message):
    refused(grade_decoder_layer, lambda *a: decoder_layer(*a, **options), message)


def test_decoder_layer_check_wants_the_output_only():
    refused(
        grade_decoder_layer,
        lambda layer, y, memory, src_mask, tgt_mask: layer(y, memory, src_mask, tgt_mask),
        "returned tuple",
    )
