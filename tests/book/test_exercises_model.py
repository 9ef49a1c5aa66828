"""The exercises of chapter 6 (transformer_book.exercises.model): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import pytest
from test_exercises_embeddings import vocabulary_parameters

from transformer_book.exercises import grade_decoder_layer, grade_encoder_layer, grade_parameter_count


def parameter_count(config, biases=True, norms=True, cross=True, final_norm=True):
    d, ff, b = config.d_model, config.d_ff, int(biases)
    attention = 4 * d * d + 4 * d * b
    ffn = 2 * d * ff + (ff + d) * b
    norm = 2 * d * int(norms)
    encoder = config.n_encoder_layers * (attention + ffn + 2 * norm)
    decoder = config.n_decoder_layers * (attention * (1 + int(cross)) + ffn + (2 + int(cross)) * norm)
    finals = 2 * norm if config.use_final_norm and final_norm else 0
    positions = config.max_positions * d if config.positional_encoding == "learned" else 0
    return vocabulary_parameters(config) + config.tgt_vocab_size * b + encoder + decoder + finals + positions


def test_parameter_count_check_passes_the_closed_form():
    grade_parameter_count(parameter_count)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda c: parameter_count(c, biases=False), r"short by [\d,]+; d_model = 512"),
        (lambda c: parameter_count(c, norms=False), "short by"),
        (lambda c: parameter_count(c, cross=False), "short by"),
        (lambda c: parameter_count(c, final_norm=False), "norm_first=True"),  # pre-norm's final norms
        (lambda c: parameter_count(c) + 2 * c.tgt_vocab_size * c.d_model, "over by"),  # the tied matrix thrice
    ],
)
def test_parameter_count_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_parameter_count(wrong)


def encoder_layer(layer, x, mask, layout=None, residual=True, mask_on=True):
    norm_first = layer.norm_first if layout is None else layout == "pre"
    keep = 1.0 if residual else 0.0

    def attend(h):
        return layer.self_attn(h, h, h, mask if mask_on else None)[0]

    if norm_first:
        x = keep * x + attend(layer.norm1(x))
        return keep * x + layer.feed_forward(layer.norm2(x))
    x = layer.norm1(keep * x + attend(x))
    return layer.norm2(keep * x + layer.feed_forward(x))


def test_encoder_layer_check_passes_the_layer_written_from_its_parts():
    grade_encoder_layer(encoder_layer)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: encoder_layer(*a, layout="pre"), r"norm_first=False.*is the pre-norm"),
        (lambda *a: encoder_layer(*a, layout="post"), r"norm_first=True.*is the post-norm"),
        (lambda *a: encoder_layer(*a, residual=False), "two residual blocks"),
        (lambda *a: encoder_layer(*a, mask_on=False), "with the mask"),
        (lambda layer, x, mask: layer(x, mask), "returned tuple"),
    ],
)
def test_encoder_layer_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_encoder_layer(wrong)


def decoder_layer(
    layer,
    y,
    memory,
    src_mask,
    tgt_mask,
    layout=None,
    causal=True,
    keys_from="memory",
    order="self first",
    source_masked=True,
    norms=("norm1", "norm2", "norm3"),
    residual=(True, True, True),
    cross_module="cross_attn",
):
    norm_first = layer.norm_first if layout is None else layout == "pre"

    def block(x, norm, sublayer, residual):
        skip = x if residual else 0
        return skip + sublayer(norm(x)) if norm_first else norm(skip + sublayer(x))

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
    norm1, norm2, norm3 = (getattr(layer, name) for name in norms)
    y = block(y, norm1, first, residual[0])
    y = block(y, norm2, second, residual[1])
    return block(y, norm3, layer.feed_forward, residual[2])


def test_decoder_layer_check_passes_the_layer_written_from_its_parts():
    grade_decoder_layer(decoder_layer)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(causal=False), "self-attention sees the future"),
        (dict(keys_from="decoder"), "keys and values from the decoder"),
        (dict(layout="pre"), r"norm_first=False.*pre-norm"),
        (dict(layout="post"), r"norm_first=True.*post-norm"),
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
    ],
)
def test_decoder_layer_check_catches_classic_mistakes(options, message):
    with pytest.raises(AssertionError, match=message):
        grade_decoder_layer(lambda *a: decoder_layer(*a, **options))


def test_decoder_layer_check_wants_the_output_only():
    with pytest.raises(AssertionError, match="returned tuple"):
        grade_decoder_layer(lambda layer, y, memory, src_mask, tgt_mask: layer(y, memory, src_mask, tgt_mask))
