"""Each mistake of the chapter "Pitfalls", caught. ``test_catalogue_case_is_caught`` runs every check of
``transformer_book.pitfalls.CASES`` on its faulty variant (it must fail) and on the package (it must pass); the other
tests pin down how each faulty variant misbehaves, and that the checks also pass for the package's other
configurations. The checks live in ``transformer_book.pitfalls`` so the book can show them."""

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import small_config, small_model

from transformer import EncoderLayer, MultiHeadAttention, TransformerConfig, causal_mask
from transformer.attention import scaled_dot_product_attention
from transformer.train.objective import sequence_loss
from transformer_book import pitfalls as P
from transformer_book.parameters import parameter_formula


def caught(check, variant, error=AssertionError):
    with pytest.raises(error):
        check(variant)


# ---- the catalogue the chapter summarises -----------------------------------------------------------------------


def test_catalogue_covers_all_fourteen_mistakes():
    assert {case.mistake for case in P.CASES} == set(range(1, 15))


@pytest.mark.parametrize("case", P.CASES, ids=[f"{c.mistake:02d}-{c.name}" for c in P.CASES])
def test_catalogue_case_is_caught(case):
    caught(case.check, case.faulty(), case.error)
    case.check(case.correct())


def test_run_check_reports_the_first_line_of_the_error():
    assert P.run_check(P.check_snippet_runs, "x = 1") == (True, "passes")
    assert P.run_check(P.check_snippet_runs, "raise ValueError('one\\ntwo')") == (
        False,
        "AssertionError: ValueError: one",
    )


# ---- 1 (and 14): heads ------------------------------------------------------------------------------------------


def test_the_readable_function_plugged_in_with_attention_step_computes_what_the_package_computes():
    readable = P.attention_step(scaled_dot_product_attention)
    P.check_matches_per_head_attention(MultiHeadAttention(64, 8, attention=readable))
    P.check_decoder_is_causal(P.replace_attention(small_model(), MultiHeadAttention, attention=readable))


def test_head_split_without_transpose_fails_silently():
    x = torch.randn(2, 5, 64)
    out, weights = P.SplitHeadsWithoutTranspose(64, 8)(x, x, x, need_weights=True)
    assert out.shape == x.shape and weights.shape == (2, 8, 5, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 8, 5))


def test_global_sizes_crash_when_they_do_not_fit():
    x = torch.randn(2, 5, 32)
    with pytest.raises(RuntimeError):
        P.GlobalSizesAttention(32, 4)(x, x, x)


# ---- 2 and 9: masks that do not mask -----------------------------------------------------------------------------


def test_if_mask_raises_for_a_multi_element_mask():
    q = torch.randn(1, 1, 3, 4)
    with pytest.raises(RuntimeError, match="ambiguous"):
        P.attention_if_mask(q, q, q, causal_mask(3))


def test_if_scale_accepts_a_float_and_raises_for_one_scale_per_head():
    q = torch.randn(1, 2, 3, 4)  # (B, H, T, d_k)
    out, _ = P.attention_if_mask(q, q, q, scale=0.5)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, q, q)[0])  # 0.5 = 1 / sqrt(4)
    with pytest.raises(RuntimeError, match="ambiguous"):
        P.attention_if_mask(q, q, q, scale=torch.full((2, 1, 1), 0.5))  # (H, 1, 1)


def test_multiplied_mask_gives_hidden_keys_weight():
    q = torch.randn(1, 1, 4, 8)
    _, weights = P.multiply_mask_attention(q, q, q, causal_mask(4))
    assert float(weights[~causal_mask(4).expand_as(weights)].min()) > 0.0  # every future key gets weight


# ---- 3: the scale ----------------------------------------------------------------------------------------------


def test_wrong_scales_are_sqrt_h_off():
    flat = P.WrongScaleAttention(512, 8, score_dim="d_model")
    sharp = P.WrongScaleAttention(512, 8, score_dim="d_k // n_heads")
    assert (flat.scale_dim, sharp.scale_dim) == (512, 8)
    assert math.sqrt(flat.scale_dim) / math.sqrt(64) == pytest.approx(math.sqrt(8))
    assert math.sqrt(64) / math.sqrt(sharp.scale_dim) == pytest.approx(math.sqrt(8))


def test_wrong_scale_rejects_an_unknown_score_dim():
    with pytest.raises(ValueError, match="score_dim"):
        P.WrongScaleAttention(64, 8, score_dim="d_k")


# ---- 4 and 7: parameters that are shared or missing -------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        dict(),
        dict(norm_first=True),
        dict(final_norm=True, positional_encoding="learned"),
        dict(tgt_vocab_size=17, share_embeddings=True, tie_output_embedding=True),
    ],
    ids=["post-norm", "pre-norm", "final-norm-learned-pe", "tied"],
)
def test_parameter_count_check_passes_every_package_configuration(overrides):
    P.check_parameter_count(small_model(**overrides))


def test_paper_base_model_parameter_count():
    config = TransformerConfig(
        src_vocab_size=37000, tgt_vocab_size=37000, share_embeddings=True, tie_output_embedding=True
    )  # one 37000-token vocabulary, one shared embedding matrix, as in the paper
    assert sum(parameter_formula(config).values()) == 63_119_496  # the paper reports "65M"
    assert (
        sum(p.numel() for p in P.SharedAttentionDecoderLayer(512, 8, 2048).parameters())
        == 4 * 512 * 512 + 4 * 512 + (2 * 512 * 2048 + 2048 + 512) + 3 * 2 * 512
    )


def test_fresh_layer_norm_is_neither_trained_nor_saved():
    norm = P.FreshLayerNormPerCall(8)
    assert list(norm.parameters()) == [] and norm.state_dict() == {}


# ---- 5: the feed-forward network -------------------------------------------------------------------------------


def test_wrong_conv_runs_only_when_d_ff_equals_d_model():
    x = torch.randn(2, 3, 16)
    assert P.ConvFeedForwardWrongShape(16, 16)(x).shape == x.shape


# ---- 6: softmax twice --------------------------------------------------------------------------------------------


def test_double_softmax_loss_cannot_go_below_its_floor():
    V = 10
    perfect = 100.0 * F.one_hot(torch.arange(V), V).float()  # (V, V): certain and right
    assert float(F.cross_entropy(perfect, torch.arange(V))) < 1e-6
    floor = math.log(1 + (V - 1) / math.e)
    assert float(F.cross_entropy(P.double_softmax_logits(perfect), torch.arange(V))) == pytest.approx(floor, rel=1e-5)


def test_double_softmax_shrinks_the_loss_gradient():
    logits = torch.randn(64, 13).requires_grad_()  # (N, V)
    target = torch.randint(0, 13, (64,))
    (once,) = torch.autograd.grad(F.cross_entropy(logits, target), logits)
    (twice,) = torch.autograd.grad(F.cross_entropy(P.double_softmax_logits(logits), target), logits)
    assert float(twice.norm()) < 0.2 * float(once.norm())


def test_double_softmax_model_returns_probabilities():
    model = P.build_model("6. softmax twice", small_config()).eval()
    out = model(torch.randint(1, 17, (2, 5)), torch.randint(1, 19, (2, 4)))
    torch.testing.assert_close(out.sum(-1), torch.ones(2, 4))


# ---- 8: masks from the wrong place ------------------------------------------------------------------------------


def test_cross_mask_from_target_fails_loudly_when_lengths_differ():
    model = small_model()
    src, tgt = torch.randint(1, 17, (2, 6)), torch.randint(1, 19, (2, 4))
    with pytest.raises(ValueError, match="src_mask"):
        model(src, tgt, src_mask=P.cross_mask_from_target(src, tgt))


def test_padding_check_passes_a_pre_norm_encoder_layer():
    P.check_padding_is_invisible(EncoderLayer(32, 4, 64, dropout=0.0, norm_first=True))


# ---- 10: polarity and dtype --------------------------------------------------------------------------------------


def test_current_torch_rejects_uint8_masks_in_masked_fill():
    with pytest.raises(RuntimeError, match="boolean"):
        torch.zeros(2, 2).masked_fill(torch.ones(2, 2, dtype=torch.uint8), -1e9)


# ---- 11: fill values -------------------------------------------------------------------------------------------


def test_fill_minus_inf_runs_in_half_precision_so_it_needs_the_empty_row_check():
    P.check_runs_in_half_precision(lambda q, k, v, mask=None: P.attention_with_fill(q, k, v, mask, fill=float("-inf")))


# ---- 12: layer norm by hand ------------------------------------------------------------------------------------


def test_std_plus_eps_is_off_by_sqrt_d_over_d_minus_1():
    d = 4
    x = torch.randn(3, d)
    by_hand = P.StdPlusEpsLayerNorm(d, eps=0.0)(x)
    torch.testing.assert_close(F.layer_norm(x, (d,), eps=0.0), by_hand * math.sqrt(d / (d - 1)))


# ---- 13: the documentation's claims ------------------------------------------------------------------------------


def test_cross_attention_weights_are_query_by_key_not_query_by_d_head():
    model = small_model()  # d_model 32, 4 heads: d_head = 8
    src, tgt = torch.randint(1, 17, (2, 6)), torch.randint(1, 19, (2, 3))
    cross = model.attention_maps(src, tgt)["cross"]
    assert len(cross) == model.config.n_decoder_layers
    for weights in cross:
        assert weights.shape == (2, 4, 3, 6)  # (B, H, T_q, T_k): 3 target queries, 6 source keys


# ---- 14: code that does not run as printed ----------------------------------------------------------------------


def test_np_pow_runs_only_with_numpy_2():
    as_printed, fixed = P.SNIPPETS["np.pow"]
    P.check_snippet_runs(fixed)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        P.check_snippet_runs(as_printed)
    else:
        caught(P.check_snippet_runs, as_printed)


# ---- the spot-the-bug exercises --------------------------------------------------------------------------------


def test_loss_check_catches_padding_in_the_mean():
    def loss_with_padding(logits, target):
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))

    caught(P.check_loss_ignores_padding, loss_with_padding)
    P.check_loss_ignores_padding(sequence_loss)


# ---- the models the chapter trains -----------------------------------------------------------------------------


@pytest.mark.parametrize("mistake", list(P.MODEL_MISTAKES))
def test_every_model_variant_trains_one_step(mistake):
    model = P.build_model(mistake, small_config(src_vocab_size=13, tgt_vocab_size=13))
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 6))
    logits = model(src, tgt[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 13), tgt[:, 1:].reshape(-1))
    loss.backward()
    assert logits.shape == (2, 5, 13) and torch.isfinite(loss)
    assert model.lm_head.weight.grad is not None and torch.isfinite(model.lm_head.weight.grad).all()


def test_build_model_starts_every_variant_from_the_correct_models_weights():
    correct = dict(P.build_model("correct (the package)", small_config()).named_parameters())
    shared = dict(P.build_model("4. cross-attention shares self-attention", small_config()).named_parameters())
    assert shared.keys() < correct.keys()  # the cross-attention's own parameters are gone
    for name, value in shared.items():
        torch.testing.assert_close(value, correct[name])


def test_build_model_rejects_an_unknown_mistake():
    with pytest.raises(KeyError, match="unknown mistake"):
        P.build_model("15. none", small_config())


# ---- the chapter's figures -------------------------------------------------------------------------------------


def test_training_picker_keeps_the_baseline_visible_in_every_state():
    from transformer.train.loop import History
    from transformer_book.viz.pitfalls import training_picker

    def history(final_loss):
        return History(step=[1, 2], loss=[3.0, final_loss], eval_token_accuracy=[0.9], eval_exact_match=[0.5])

    fig = training_picker({"correct": history(0.1), "a": history(1.0), "b": history(2.0)}, baseline="correct")
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["a", "b"]
    for i, button in enumerate(buttons):
        visible = button.args[0]["visible"]
        assert visible[:2] == [True, True] and sum(visible) == 4 and visible[2 + 2 * i]


def test_picker_notes_are_wrapped_so_they_fit_the_figure():
    from transformer.train.loop import History
    from transformer_book.viz.pitfalls import training_picker

    history = History(step=[1, 2], loss=[3.0, 1.0], eval_token_accuracy=[0.9], eval_exact_match=[0.5])
    note = " ".join(["word"] * 60)  # 299 characters
    fig = training_picker({"correct": history, "m": history}, baseline="correct", notes={"m": note})
    lines = [re.sub("<[^>]+>", "", line) for line in fig.layout.title.text.split("<br>")]  # text without tags
    assert lines[0] == "m" and len(lines) == 1 + 3 and all(len(line) <= 100 for line in lines)
