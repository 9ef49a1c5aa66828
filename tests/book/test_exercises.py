"""The chapters' exercises (transformer_book.exercises): every check passes a right answer, fails the classic wrong
ones with a message that names the mistake, and `exercise` says "not done yet" for a starter."""

import copy
import math
import random
from collections import Counter

import pytest
import torch
import torch.nn.functional as F

from transformer import Transformer, TransformerConfig, causal_mask, padding_mask
from transformer.attention import scaled_dot_product_attention
from transformer.decoding import greedy_decode
from transformer.embeddings import sinusoidal_table
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.bpe import SPACE, apply_merges
from transformer.train.bucketing import length_batches, random_batches
from transformer.train.schedule import noam_lr
from transformer.train.tasks import task_batch
from transformer_book import exercises as ex
from transformer_book.cost import score_bytes


def starter(*args):
    raise NotImplementedError


# ---------------------------------------------------------------------------------------------------------------
# exercise()


def test_exercise_says_not_done_yet_for_a_starter_and_correct_for_a_right_answer(capsys):
    ex.exercise(ex.grade_causal_mask, starter)
    assert "starter: not done yet" in capsys.readouterr().out

    def my_causal_mask(T):
        return torch.ones(T, T, dtype=torch.bool).tril()[None, None]

    ex.exercise(ex.grade_causal_mask, my_causal_mask)
    assert capsys.readouterr().out.strip() == "my_causal_mask: correct"


def test_exercise_raises_on_a_wrong_answer_naming_it():
    def my_causal_mask(T):
        return torch.ones(1, 1, T, T, dtype=torch.bool).triu()

    with pytest.raises(AssertionError, match="my_causal_mask is not right yet: .*the future"):
        ex.exercise(ex.grade_causal_mask, my_causal_mask)


# ---------------------------------------------------------------------------------------------------------------
# Masks


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda T: torch.ones(T, T, dtype=torch.bool).tril(), r"shape \(5, 5\)"),
        (lambda T: torch.ones(1, 1, T, T).tril(), "dtype torch.float32"),
        (lambda T: ~causal_mask(T), "inverted"),
        (lambda T: causal_mask(T).transpose(-2, -1), "the future"),
        (lambda T: torch.ones(1, 1, T, T, dtype=torch.bool).tril(-1), "diagonal"),
        (lambda T: torch.ones(1, 1, T, T, dtype=torch.bool), r"\[0, 0, 0, 1\] is True"),
    ],
)
def test_causal_mask_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_causal_mask(wrong)


def test_causal_mask_check_passes_a_loop():
    def by_loop(T):
        mask = torch.zeros(1, 1, T, T, dtype=torch.bool)
        for i in range(T):
            mask[0, 0, i, : i + 1] = True
        return mask

    ex.grade_causal_mask(by_loop)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda tokens, pad_id: (tokens != pad_id)[:, None, :, None], r"padding \*queries\*"),
        (lambda tokens, pad_id: tokens != pad_id, r"shape \(2, 5\)"),
        (lambda tokens, pad_id: (tokens == pad_id)[:, None, None, :], "True on the padding"),
        (lambda tokens, pad_id: (tokens != 0)[:, None, None, :], "pad_id used"),
        (lambda tokens, pad_id: (tokens != pad_id)[:, None, None, :].long(), "dtype torch.int64"),
    ],
)
def test_padding_mask_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_padding_mask(wrong)


def test_padding_and_target_mask_checks_pass_masks_written_from_the_tokens():
    def real_keys(tokens, pad_id):
        return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, S)

    def no_future(T):
        return torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)

    ex.grade_padding_mask(real_keys)
    ex.grade_target_mask(lambda tokens, pad_id: real_keys(tokens, pad_id) & no_future(tokens.size(1)))


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda tokens, pad_id: padding_mask(tokens, pad_id) | causal_mask(tokens.size(1)), r"not \|"),
        (lambda tokens, pad_id: padding_mask(tokens, pad_id), r"shape \(2, 1, 1, 5\)"),
        (lambda tokens, pad_id: causal_mask(tokens.size(1)).expand(tokens.size(0), 1, -1, -1), "is True: key"),
        (lambda tokens, pad_id: (padding_mask(tokens, pad_id) & causal_mask(tokens.size(1))).float(), "dtype"),
    ],
)
def test_target_mask_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_target_mask(wrong)


# ---------------------------------------------------------------------------------------------------------------
# Positional encoding


def table_with(layout: str, base: float = 10000.0, pair_exponent: bool = True):
    def table(max_len, d_model):
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        i = torch.arange(0, d_model, 2) if pair_exponent else torch.arange(d_model // 2)
        angles = pos * base ** (-i / d_model)  # (L, d / 2)
        if layout == "halves":
            return torch.cat([angles.sin(), angles.cos()], dim=1)
        pe = torch.zeros(max_len, d_model)
        first, second = (angles.sin(), angles.cos()) if layout == "interleaved" else (angles.cos(), angles.sin())
        pe[:, 0::2], pe[:, 1::2] = first, second
        return pe

    return table


def test_sinusoid_table_check_passes_a_float32_table():
    ex.grade_sinusoid_table(table_with("interleaved"))


@pytest.mark.parametrize(
    "wrong, message",
    [
        (table_with("halves"), "tensor2tensor"),
        (table_with("swapped"), "cosines in the even columns"),
        (table_with("interleaved", base=1000.0), r"table\(10, 4\) uses the base 1000"),
        (table_with("interleaved", base=100.0), r"pair i = 1, frequency"),
        (table_with("interleaved", pair_exponent=False), r"pair i = "),
        (lambda L, d: sinusoidal_table(L, d).T, r"shape \(2, 1\)"),
    ],
)
def test_sinusoid_table_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_sinusoid_table(wrong)


def rotation(k, d_model, transpose=False, frequency_scale=1.0):
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        angle = k * frequency_scale * 10000.0 ** (-2 * i / d_model)
        c, s = math.cos(angle), math.sin(angle)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, -s], [s, c]] if transpose else [[c, s], [-s, c]])
    return M


def test_offset_matrix_check_passes_the_rotation_blocks():
    ex.grade_offset_matrix(rotation)
    ex.grade_offset_matrix(lambda k, d: rotation(k, d).float())


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda k, d: rotation(k, d, transpose=True), "the wrong way"),
        (lambda k, d: rotation(k, d, frequency_scale=2.0), r"offset\(1, 4\), pos = \d+ \(pair i = 0"),
        (lambda k, d: torch.eye(d), r"offset\(1, 4\)"),
        (lambda k, d: rotation(k, d)[: d // 2], r"shape \(2, 4\)"),
    ],
)
def test_offset_matrix_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_offset_matrix(wrong)


# ---------------------------------------------------------------------------------------------------------------
# Embeddings


def vocabulary_parameters(config):
    V_src, V_tgt, d = config.src_vocab_size, config.tgt_vocab_size, config.d_model
    return (
        (V_src * d) + (0 if config.share_embeddings else V_tgt * d) + (0 if config.tie_output_embedding else V_tgt * d)
    )


def test_vocabulary_parameters_check_passes_the_closed_form():
    ex.grade_vocabulary_parameters(vocabulary_parameters)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda c: 3 * c.src_vocab_size * c.d_model, r"count\(TransformerConfig\(src_vocab_size=11, tgt_vocab_size=13"),
        (lambda c: (3 - c.share_embeddings - c.tie_output_embedding) * c.tgt_vocab_size * c.d_model, "vocab_size=11"),
        (lambda c: vocabulary_parameters(c) + c.tgt_vocab_size, r"hold [\d,]+ parameters"),  # the bias is not one
    ],
)
def test_vocabulary_parameters_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_vocabulary_parameters(wrong)


def test_cosine_similarity_check():
    ex.grade_cosine_similarity(lambda E: F.normalize(E, dim=-1) @ F.normalize(E, dim=-1).T)
    with pytest.raises(AssertionError, match="not 1: a vector's cosine"):
        ex.grade_cosine_similarity(lambda E: E @ E.T)
    with pytest.raises(AssertionError, match="not 1"):
        ex.grade_cosine_similarity(lambda E: F.normalize(E, dim=0) @ F.normalize(E, dim=0).T)
    with pytest.raises(AssertionError, match=r"shape \(8, 8\)"):
        ex.grade_cosine_similarity(lambda E: F.normalize(E, dim=-1).T @ F.normalize(E, dim=-1))


# ---------------------------------------------------------------------------------------------------------------
# Attention


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
    ex.grade_attention(attention)
    ex.grade_attention(lambda *a: attention(*a, fill=-math.inf))  # -inf fits every dtype; no row here is all hidden


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
        ex.grade_attention(wrong)


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
    ex.grade_multi_head_attention(multi_head_by_loop)
    ex.grade_multi_head_attention(multi_head)


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
        ex.grade_multi_head_attention(lambda *a: multi_head(*a, **options))


def test_multi_head_attention_check_names_an_ignored_padding_mask():
    def ignores_padding(x_q, x_kv, mask, p, n_heads):
        causal = mask.size(-2) > 1  # the causal mask is (1, 1, T, T), the padding mask (B, 1, 1, T_k)
        return multi_head(x_q, x_kv, mask, p, n_heads, masked=causal)

    with pytest.raises(AssertionError, match="cross-attention, padding mask.*the queries attend to the padding keys"):
        ex.grade_multi_head_attention(ignores_padding)


def test_multi_head_attention_check_catches_an_inverted_mask():
    with pytest.raises(AssertionError, match="the mask is inverted"):
        ex.grade_multi_head_attention(lambda x_q, x_kv, mask, p, h: multi_head_by_loop(x_q, x_kv, ~mask, p, h))


# ---------------------------------------------------------------------------------------------------------------
# The model


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
    ex.grade_parameter_count(parameter_count)


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
        ex.grade_parameter_count(wrong)


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
    ex.grade_encoder_layer(encoder_layer)


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
        ex.grade_encoder_layer(wrong)


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
    ex.grade_decoder_layer(decoder_layer)


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
        ex.grade_decoder_layer(lambda *a: decoder_layer(*a, **options))


def test_decoder_layer_check_wants_the_output_only():
    with pytest.raises(AssertionError, match="returned tuple"):
        ex.grade_decoder_layer(lambda layer, y, memory, src_mask, tgt_mask: layer(y, memory, src_mask, tgt_mask))


# ---------------------------------------------------------------------------------------------------------------
# Training


def smoothed(target, V, eps, spread="all", padding_rows="smoothed"):
    """The smoothed targets, optionally spread as The Annotated Transformer does (nothing on <pad>, eps / (V - 2) on
    the other wrong tokens) or over the wrong tokens only, and with the padding targets' rows zeroed."""
    one_hot = F.one_hot(target, V).double()
    if spread == "all":
        q = one_hot * (1 - eps) + eps / V
    elif spread == "others":
        q = one_hot * (1 - eps) + (1 - one_hot) * eps / (V - 1)
    else:
        q = (one_hot * (1 - eps) + (1 - one_hot) * eps / (V - 2)).index_fill(1, torch.tensor([PAD_ID]), 0.0)
    return q.masked_fill((target == PAD_ID)[:, None], 0.0) if padding_rows == "zero" else q


def test_smoothed_targets_check_passes_right_answers_whatever_the_rows_of_padding_targets_hold():
    ex.grade_smoothed_targets(smoothed)
    ex.grade_smoothed_targets(lambda *a: smoothed(*a, padding_rows="zero"))  # as the loss ignores them


@pytest.mark.parametrize(
    "wrong, message",
    [
        (
            lambda *a: smoothed(*a, spread="others"),
            r"row 1 of .*V=5.* \(target 4\) gives the right token 0\.9000 and a "
            r"wrong one 0\.0250.*the right one included",
        ),
        (
            lambda *a: smoothed(*a, spread="annotated"),
            r"row 1 of .*V=5.* \(target 4\) gives <pad> nothing.*"
            r"The Annotated Transformer",
        ),
        (lambda *a: smoothed(*a, spread="annotated", padding_rows="zero"), "The Annotated Transformer"),
        (
            lambda target, V, eps: F.one_hot(target, V) * (1 - eps) + eps,
            r"row 1 of .* \(target 4\) sums to 1\.4000, "
            r"not 1: a target must be a distribution",
        ),
        (lambda target, V, eps: F.one_hot(target, V + 1).float(), "shape"),
    ],
)
def test_smoothed_targets_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_smoothed_targets(wrong)


def test_smoothed_targets_check_names_the_failing_row_not_the_first():
    def wrong_in_one_row(target, V, eps):
        q = smoothed(target, V, eps)
        q[4] *= 2  # row 4 only; row 0 is right
        return q

    with pytest.raises(
        AssertionError,
        match=r"row 4 of smoothed\(target, V=5, smoothing=0\.1\) \(target \d+\) sums "
        r"to 2\.0000",
    ):
        ex.grade_smoothed_targets(wrong_in_one_row)


def test_noam_lr_check():
    ex.grade_noam_lr(lambda step, d, w: d**-0.5 * min(step**-0.5, step * w**-1.5))
    with pytest.raises(AssertionError, match=r"rate\(1, d_model=512"):
        ex.grade_noam_lr(lambda step, d, w: d**-0.5 * max(step**-0.5, step * w**-1.5))
    with pytest.raises(AssertionError, match="not"):
        ex.grade_noam_lr(lambda step, d, w: min(step**-0.5, step * w**-1.5))
    with pytest.raises(AssertionError, match=r"rate\(2000"):
        ex.grade_noam_lr(
            lambda step, d, w: (
                d**-0.5 * min((step + 1) ** -0.5, (step + 1) * w**-1.5) if step > 1 else noam_lr(step, d, w)
            )
        )


# ---------------------------------------------------------------------------------------------------------------
# Decoding


@pytest.fixture(scope="module")
def tiny_model():
    torch.manual_seed(0)
    config = TransformerConfig(
        12, 12, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=2, dropout=0.0
    )
    sources = [task_batch("copy", 4, 12, max_seq_len=6, rng=torch.Generator().manual_seed(s)).src for s in (0, 1)]
    return Transformer(config).eval(), sources


@pytest.fixture(scope="module")
def eos_model(tiny_model):
    """The tiny model with a bias towards </s>: rows of one source finish at different steps (one never), all rows of
    the other before max_len, which is what a decoding loop must get right."""
    model, sources = tiny_model
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.lm_head.bias[EOS_ID] += 1.5
    outputs = [greedy_decode(model, src, 8, use_cache=False) for src in sources]
    assert outputs[0].size(1) == 8 and (outputs[0][:, :-1] == EOS_ID).any(dim=1).sum() >= 2
    assert outputs[1].size(1) < 8
    return model, sources


def next_token(model, src, decoder_input, last=True, exclude=True):
    memory, src_mask = model.encode(src)
    hidden = model.decode(decoder_input, memory, src_mask, causal_mask(decoder_input.size(1)))  # (B, t, d_model)
    logits = model.lm_head(hidden[:, -1] if last else hidden[:, 0])  # (B, V)
    if exclude:
        logits[:, [PAD_ID, BOS_ID]] = -math.inf
    return logits.argmax(-1)


def test_next_token_check_passes_a_right_step(tiny_model):
    model, sources = tiny_model
    ex.grade_next_token(next_token, model, sources, max_new_tokens=8)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(last=False), "at step 1 "),  # step 0 has one position only: first = last
        (dict(exclude=False), "never a valid output"),  # an untrained model says PAD or BOS
    ],
)
def test_next_token_check_catches_classic_mistakes(tiny_model, options, message):
    model, sources = tiny_model
    with pytest.raises(AssertionError, match=message):
        ex.grade_next_token(lambda *a: next_token(*a, **options), model, sources, max_new_tokens=8)


def next_token_excluding(model, src, decoder_input, excluded):
    memory, src_mask = model.encode(src)
    hidden = model.decode(decoder_input, memory, src_mask, causal_mask(decoder_input.size(1)))
    logits = model.lm_head(hidden[:, -1])  # (B, V)
    logits[:, excluded] = -math.inf
    return logits.argmax(-1)


@pytest.mark.parametrize(
    "excluded, message",
    [([], "<s>, never a valid output"), ([PAD_ID], "<s>, never a valid output"), ([BOS_ID], "<pad>, never a valid")],
)
def test_next_token_check_catches_a_step_that_can_say_pad_or_bos_with_a_model_that_never_would(
    tiny_model, excluded, message
):
    """Like the chapter's half-trained model, this one never prefers <pad> or <s>: a step that forgets to exclude
    them gives greedy decoding's tokens here, and the check must still catch it."""
    model, sources = tiny_model
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.lm_head.bias[[PAD_ID, BOS_ID]] -= 100.0
    for src in sources:  # the model alone would not give it away
        for step in greedy_decode(model, src, 8, use_cache=False).T:
            assert not ((step == PAD_ID) | (step == BOS_ID)).all()
    forgetful = lambda *a: next_token_excluding(*a, excluded)  # noqa: E731
    for t in range(1, 4):
        decoder_input = torch.cat([torch.full((4, 1), BOS_ID), greedy_decode(model, sources[0], t)], dim=1)
        assert torch.equal(forgetful(model, sources[0], decoder_input), next_token(model, sources[0], decoder_input))
    with pytest.raises(AssertionError, match=rf"a model that favours <pad> and <s>.*\({message}"):
        ex.grade_next_token(forgetful, model, sources, max_new_tokens=8)


def test_next_token_check_wants_one_id_per_row(tiny_model):
    model, sources = tiny_model

    def all_positions(model, src, decoder_input):
        hidden = model.decode(decoder_input, *model.encode(src), causal_mask(decoder_input.size(1)))
        return model.lm_head(hidden).argmax(-1)  # (B, t)

    with pytest.raises(AssertionError, match=r"shape \(4, 1\), not \(4,\)"):
        ex.grade_next_token(all_positions, model, sources, max_new_tokens=8)


def greedy(model, src, max_len, pad_after_eos=True, stop=True, keep_bos=False):
    tokens = torch.full((src.size(0), 1), BOS_ID)
    finished = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len):
        chosen = next_token(model, src, tokens)
        if pad_after_eos:
            chosen = chosen.masked_fill(finished, PAD_ID)
        tokens = torch.cat([tokens, chosen[:, None]], dim=1)
        finished |= chosen == EOS_ID
        if stop and finished.all():
            break
    return tokens if keep_bos else tokens[:, 1:]


def test_greedy_decode_check_passes_a_right_loop(eos_model):
    model, sources = eos_model
    ex.grade_greedy_decode(greedy, model, sources, max_new_tokens=8)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(keep_bos=True), "starts with <s>"),
        (dict(stop=False), "stop when every row"),
        (dict(pad_after_eos=False), "gets <pad> from then on"),
    ],
)
def test_greedy_decode_check_catches_classic_mistakes(eos_model, options, message):
    model, sources = eos_model
    with pytest.raises(AssertionError, match=message):
        ex.grade_greedy_decode(lambda *a: greedy(*a, **options), model, sources, max_new_tokens=8)


# ---------------------------------------------------------------------------------------------------------------
# Inside the model


def previous_token_weight(weights, valid, use_valid=True):
    T = weights.size(-1)
    on_previous = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1): query t on key t - 1
    keep = (valid[:, 1:] if use_valid else torch.ones_like(valid[:, 1:])).float()[:, None, :]  # (B, 1, T - 1)
    assert on_previous.size(-1) == T - 1
    return (on_previous * keep).sum(dim=(0, 2)) / keep.sum(dim=(0, 2))


def test_previous_token_weight_check():
    ex.grade_previous_token_weight(previous_token_weight)
    with pytest.raises(AssertionError, match="padding queries"):
        ex.grade_previous_token_weight(lambda w, v: previous_token_weight(w, v, use_valid=False))
    with pytest.raises(AssertionError, match="the weight of query t on key t - 1"):
        ex.grade_previous_token_weight(lambda w, v: w.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2)))
    with pytest.raises(AssertionError, match=r"shape \(2, 4\)"):
        ex.grade_previous_token_weight(lambda w, v: w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1))


def silenced(attention, x, head, where="before", bias=True):
    B, T, d = x.shape
    H, d_k = attention.n_heads, attention.d_k
    q, k, v = (t.view(B, T, H, d_k).transpose(1, 2) for t in attention.in_proj(x).chunk(3, dim=-1))
    out, _ = scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)
    if where == "before":
        out[:, head] = 0
    merged = out.transpose(1, 2).reshape(B, T, d)
    projected = merged @ attention.out_proj.weight.T + (attention.out_proj.bias if bias else 0)
    if where == "after":
        projected[..., head * d_k : (head + 1) * d_k] = 0
    return projected


def test_silenced_head_check():
    ex.grade_silenced_head(silenced)
    with pytest.raises(AssertionError, match=r"\*projected\* output"):
        ex.grade_silenced_head(lambda *a: silenced(*a, where="after"))
    with pytest.raises(AssertionError, match="is not silenced"):
        ex.grade_silenced_head(lambda *a: silenced(*a, where="nowhere"))
    with pytest.raises(AssertionError, match="differs from the package's"):
        ex.grade_silenced_head(lambda *a: silenced(*a, bias=False))


# ---------------------------------------------------------------------------------------------------------------
# Cost


def layer_flops(T, d, d_ff, H, multiply_add=2, projections=4, attention_products=2, ff_products=2, per_head=True):
    d_attention = d // H if per_head else d  # the width each head's products run over
    return multiply_add * (
        projections * T * d * d + attention_products * H * T * T * d_attention + ff_products * T * d * d_ff
    )


def test_encoder_layer_flops_check_passes_the_closed_form():
    ex.grade_encoder_layer_flops(layer_flops)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: layer_flops(*a, multiply_add=1), "a multiply-add is 2 FLOPs"),
        (lambda *a: layer_flops(*a, projections=3), "W_O"),
        (lambda *a: layer_flops(*a, attention_products=1), "weighted sum of the values"),
        (lambda *a: layer_flops(*a, ff_products=1), "two products"),
        (lambda *a: layer_flops(*a, per_head=False), "d_k = d_model / n_heads"),
        (lambda T, d, d_ff, H: layer_flops(T, d, d_ff, H) - 4 * T * T * d + 4 * T * T * (d // H), "for one head"),
        (lambda T, d, d_ff, H: layer_flops(T, d, 4 * d, H), "use the d_ff given"),
        (lambda T, d, d_ff, H: layer_flops(T, d, d_ff, H) + 1, r"is 473,601, but FlopCounterMode counts 473,600"),
        (lambda *a: float(layer_flops(*a)), "not an int"),
    ],
)
def test_encoder_layer_flops_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_encoder_layer_flops(wrong)


def longest_length(memory, batch, n_heads, dtype, itemsize=None, squared=True, heads=True, batches=True):
    numbers = memory // (
        (batch if batches else 1)
        * (n_heads if heads else 1)
        * (itemsize or torch.empty((), dtype=dtype).element_size())
    )
    return math.isqrt(numbers) if squared else numbers


def test_longest_length_check_passes_the_square_root_and_a_search():
    ex.grade_longest_length(longest_length)

    def by_search(memory, batch, n_heads, dtype):
        T = 1
        while score_bytes(batch, n_heads, T + 1, T + 1, dtype) <= memory:
            T *= 2
        low, high = T // 2 if T > 1 else 1, T  # the answer lies in [low, high]
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (
                (middle, high) if score_bytes(batch, n_heads, middle, middle, dtype) <= memory else (low, middle - 1)
            )
        return low

    ex.grade_longest_length(by_search)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: longest_length(*a, squared=False), "grows as T\\^2"),
        (lambda *a: longest_length(*a, itemsize=1), "counts numbers, not bytes"),
        (lambda *a: longest_length(*a, itemsize=4), "4 bytes a number assumed"),
        (lambda *a: longest_length(*a, heads=False), "one per head"),
        (lambda *a: longest_length(*a, batches=False), "one per sequence of the batch"),
        (lambda *a: longest_length(*a) + 1, "more than 1,073,741,824"),
        (lambda *a: longest_length(*a) - 1, "T = 5,792 fits too"),
        (lambda *a: math.sqrt(a[0] / (a[1] * a[2] * 4)), "not an int"),
    ],
)
def test_longest_length_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_longest_length(wrong)


# ---------------------------------------------------------------------------------------------------------------
# Dates


ONES = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
IRREGULAR = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}


def ordinal(n, irregular=True, ieth=True, hyphen="-", every_word=False):
    words = (
        [*ONES, *TEENS][n - 1]
        if n < 20
        else ["twenty", "thirty"][n // 10 - 2] + (f"-{ONES[n % 10 - 1]}" if n % 10 else "")
    ).split("-")

    def th(word):
        if irregular and word in IRREGULAR:
            return IRREGULAR[word]
        return word[:-1] + "ieth" if ieth and word.endswith("y") else word + "th"

    return hyphen.join([th(w) if every_word else w for w in words[:-1]] + [th(words[-1])])


def test_ordinal_words_check_passes_a_right_answer():
    ex.grade_ordinal_words(ordinal)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda n: ordinal(n, irregular=False), r"ordinal\(1\) is 'oneth'.*irregular"),
        (lambda n: ordinal(n, ieth=False), r"ordinal\(20\) is 'twentyth'.*-ieth"),
        (lambda n: ordinal(n, hyphen=" "), r"ordinal\(21\) is 'twenty first'.*hyphen"),
        (lambda n: ordinal(n, every_word=True), r"'twentieth-first'.*only the last word"),
        (lambda n: ordinal(n).capitalize(), "lower case"),
        (lambda n: f"{n}{'st' if n == 1 else 'th'}", "in words"),
        (lambda n: ordinal(n) if n != 31 else "thirty-one", r"ordinal\(31\) is 'thirty-one', not 'thirty-first'$"),
        (lambda n: n, "not a str"),
    ],
)
def test_ordinal_words_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_ordinal_words(wrong)


def sorted_batches(lengths, batch_size, generator, shuffle_first=True, shuffle_batches=True, drop_last=False):
    order = torch.randperm(len(lengths), generator=generator).tolist() if shuffle_first else list(range(len(lengths)))
    order.sort(key=lambda i: lengths[i])  # stable: ties keep the shuffled order
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if drop_last and len(batches[-1]) < batch_size:
        batches = batches[:-1]
    if shuffle_batches:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]
    return batches


def test_length_batches_check_passes_a_whole_sort():
    ex.grade_length_batches(sorted_batches)
    ex.grade_length_batches(lambda *a: [torch.tensor(b) for b in sorted_batches(*a)])


def one_batch_per_length(lengths, batch_size, generator):
    by_length = {}
    for i in torch.randperm(len(lengths), generator=generator).tolist():
        by_length.setdefault(lengths[i], []).append(i)
    batches = [same[i : i + batch_size] for same in by_length.values() for i in range(0, len(same), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator)]


def test_the_packages_pooled_length_batches_meet_the_exercises_specification():
    """The check never calls length_batches: it tests properties (every example once, full batches, half the padding
    of random batches, shuffled batches, another rng another order), which the package's pools must meet too."""
    ex.grade_length_batches(length_batches)
    ex.grade_length_batches(lambda *a: length_batches(*a, pool=4))


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda lengths, b, g: random_batches(len(lengths), b, g), "sort examples by length"),
        (lambda *a: sorted_batches(*a, shuffle_batches=False), "in order of length"),
        (lambda *a: sorted_batches(*a, shuffle_first=False, shuffle_batches=False)[::-1], "in order of length"),
        (lambda lengths, b, g: sorted_batches(lengths, b, torch.Generator().manual_seed(0)), "another rng"),
        (lambda *a: sorted_batches(*a, drop_last=True), "8 missing, 0 repeated .*smaller batch dropped"),
        (lambda *a: [b + b[:1] for b in sorted_batches(*a)], "0 missing, 32 repeated"),
        (lambda *a: [[i] for i in range(len(a[0]))], "1000 batches, not 32"),
        (one_batch_per_length, "batches, not 32: .*a batch per length"),
        (lambda lengths, b, g: [list(range(len(lengths)))], "at most batch_size = 32"),
        (lambda lengths, b, g: {"batches": []}, "not a list of batches"),
    ],
)
def test_length_batches_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_length_batches(wrong)


# ---------------------------------------------------------------------------------------------------------------
# Translation


def merge_step(words, tie="code point", weighted=True, direction="left", replace=False, everywhere=True, keep_all=True):
    """One step of byte-pair encoding, as a reader might write it (optionally with one mistake)."""
    counts = Counter()
    for symbols, n in words.items():
        for pair in zip(symbols, symbols[1:], strict=False):
            counts[pair] += n if weighted else 1
    pair = min(counts, key=lambda p: (-counts[p], p)) if tie == "code point" else counts.most_common(1)[0][0]
    left, right = pair
    merged = {}
    for symbols, n in words.items():
        if replace:  # the symbols joined by spaces, the pair replaced as text
            new = tuple(" ".join(symbols).replace(f"{left} {right}", left + right).split())
        else:
            new, i = list(symbols), 0 if direction == "left" else len(symbols) - 2
            while 0 <= i < len(new) - 1:
                if (new[i], new[i + 1]) == pair:
                    new[i : i + 2] = [left + right]
                    if not everywhere:
                        break
                i += 1 if direction == "left" else -1
            new = tuple(new)
        if keep_all or new != symbols:
            merged[new] = n
    return pair, merged


def test_merge_step_check_passes_a_right_step():
    ex.grade_merge_step(merge_step)


def test_merge_step_cases_are_learn_merges_steps_whose_ties_code_point_order_breaks_as_learn_merges_does():
    for texts, k in ex._MERGE_CASES:
        rows, pair = ex._merge_step_case(texts, k)
        assert merge_step({before: n for before, _, n in rows}) == (pair, {after: n for _, after, n in rows})
    assert apply_merges(SPACE + "Schifffahrt", [("f", "f")]) == [
        SPACE,
        "S",
        "c",
        "h",
        "i",
        "ff",
        "f",
        "a",
        "h",
        "r",
        "t",
    ]


@pytest.mark.parametrize(
    "options, message",
    [
        (
            dict(weighted=False),
            r"merges \('e', 'n'\), not \('i', 'n'\): \('e', 'n'\) is in the most words \(5\), but a "
            r"word counts as often as it occurs: \('i', 'n'\) occurs 7 times",
        ),
        (
            dict(tie="counted first"),
            r"the pieces of 'the', 'and'\) merges \('▁', 't'\), not \('a', 'n'\): a tie: both "
            r"occur 3 times",
        ),
        (
            dict(direction="right"),
            r"turns '▁ S c h i f f f a h r t' into '▁ S c h i f ff a h r t', not "
            r"'▁ S c h i ff f a h r t': 'f f' overlaps itself",
        ),
        (dict(everywhere=False), "only the first occurrence is merged"),
        (dict(replace=True), r"after 7 merges\) turns '▁ a nd' into '▁ and', not '▁ a nd': str\.replace"),
        (dict(keep_all=False), r"has no word '▁' \(count 6\): keep every word, those without the pair as they are"),
    ],
)
def test_merge_step_check_catches_classic_mistakes(options, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_merge_step(lambda words: merge_step(words, **options))


def test_merge_step_check_wants_the_counts_kept_and_the_pair_as_a_tuple():
    with pytest.raises(AssertionError, match="counts '▁ in' 1 times, not 6: a merge keeps each word's count"):
        ex.grade_merge_step(lambda words: (merge_step(words)[0], dict.fromkeys(merge_step(words)[1], 1)))
    with pytest.raises(AssertionError, match=r"merged 'in': a pair is a tuple of two symbols, such as \('i', 'n'\)"):
        ex.grade_merge_step(lambda words: ("".join(merge_step(words)[0]), merge_step(words)[1]))


def clipped(hypothesis, references, n, clip="max", total="hypothesis", lower=False, distinct=False):
    """BLEU's clipped n-gram counts, as a reader might write them (optionally with one mistake)."""

    def ngrams(text):
        words = text.lower().split() if lower else text.split()
        stop = len(words) - n + (0 if total == "one short" else 1)
        grams = Counter(tuple(words[i : i + n]) for i in range(stop))
        return Counter(set(grams)) if distinct else grams

    mine, each = ngrams(hypothesis), [ngrams(r) for r in references]
    if clip == "max":
        matches = sum(min(c, max(r[g] for r in each)) for g, c in mine.items())
    elif clip == "none":
        matches = sum(c for g, c in mine.items() if any(g in r for r in each))
    elif clip == "sum":
        matches = sum(min(c, sum(r[g] for r in each)) for g, c in mine.items())
    elif clip == "first":
        matches = sum(min(c, each[0][g]) for g, c in mine.items())
    else:  # the best single reference
        matches = max(sum(min(c, r[g]) for g, c in mine.items()) for r in each)
    return matches, sum(each[0].values()) if total == "reference" else sum(mine.values())


def test_clipped_matches_are_sacrebleus_counts_and_totals():
    sacrebleu = pytest.importorskip("sacrebleu")  # the live extra's; the book's build and make test have it
    bleu = sacrebleu.metrics.BLEU(tokenize="none", effective_order=True)  # words split at spaces, as the exercise's
    g = random.Random(0)
    words = ["in", "drei", "Tagen", "fünf", "und", "zwanzig", "vor"]
    random_cases = [
        (
            " ".join(g.choices(words, k=g.randint(1, 9))),
            [" ".join(g.choices(words, k=g.randint(1, 9))) for _ in range(g.randint(1, 3))],
        )
        for _ in range(50)
    ]
    cases = [(h, list(r)) for h, r, _ in ex._PRECISION_CASES] + random_cases
    for hypothesis, references in cases:
        score = bleu.sentence_score(hypothesis, references)
        for n in range(1, 5):
            assert ex.clipped_matches(hypothesis, references, n) == (score.counts[n - 1], score.totals[n - 1])


def test_clipped_precision_check_passes_a_right_answer():
    ex.grade_clipped_precision(clipped)


@pytest.mark.parametrize(
    "options, message",
    [
        (
            dict(clip="none"),
            r"precision\('the the the the the the the', .*n=1\) is \(7, 7\), not \(2, 7\): the counts "
            "are not clipped",
        ),
        (
            dict(clip="sum"),
            r"is \(3, 7\), not \(2, 7\): each n-gram is clipped by its count in all references together",
        ),
        (dict(clip="first"), r"n=1\) is \(1, 7\), not \(2, 7\): only the first reference is used"),
        (dict(clip="best"), r"is \(6, 7\), not \(7, 7\): the references are taken one at a time"),
        (
            dict(lower=True),
            r"precision\('In drei Tagen', .*\) is \(3, 3\), not \(2, 3\): the words are compared in "
            "lower case",
        ),
        (dict(distinct=True), r"is \(1, 1\), not \(2, 7\): each distinct n-gram is counted once"),
        (dict(total="one short"), r"n=1\) is \(2, 6\), not \(2, 7\): a text of L = 7 words has L - n \+ 1 = 7 n-grams"),
        (dict(total="reference"), r"is \(7, 5\), not \(7, 7\): the total counts a reference's n-grams"),
    ],
)
def test_clipped_precision_check_catches_classic_mistakes(options, message):
    with pytest.raises(AssertionError, match=message):
        ex.grade_clipped_precision(lambda *a: clipped(*a, **options))


def test_clipped_precision_check_wants_two_ints():
    with pytest.raises(AssertionError, match=r"returned 0\.2857142857142857: return the pair of counts"):
        ex.grade_clipped_precision(lambda *a: clipped(*a)[0] / clipped(*a)[1])
