"""Each mistake of the chapter "Pitfalls", caught: one check per mistake, run on the faulty variant (it must fail)
and on the package (it must pass). The checks live in ``transformer.pitfalls`` so the book can show them."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import small_config, small_model
from torch import nn

from transformer import (
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    TransformerConfig,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    sinusoidal_table,
)
from transformer import pitfalls as P


def run(check, variant, error):
    """``error is None``: the check must pass. Otherwise it must fail with ``error``."""
    if error is None:
        check(variant)
    else:
        with pytest.raises(error):
            check(variant)


def attention(cls=MultiHeadAttention, d_model=64, n_heads=8, **kwargs):
    return cls(d_model, n_heads, **kwargs)


def faulty(error, make, name):
    return pytest.param(make, error, id=f"faulty-{name}")


def package(make, name="package"):
    return pytest.param(make, None, id=name)


# ---- 1 (and 14): heads ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(AssertionError, lambda: attention(P.SplitHeadsWithoutTranspose), "split-without-transpose"),
        faulty(AssertionError, lambda: attention(P.GlobalSizesAttention, 512, 4), "sizes-from-globals"),
        package(lambda: attention()),
        package(lambda: attention(P.AttentionWithStep), "attention-with-step-unchanged"),
    ],
)
def test_multi_head_attention_equals_per_head_attention(make, error):
    run(P.check_matches_per_head_attention, make(), error)


def test_head_split_without_transpose_fails_silently():
    x = torch.randn(2, 5, 64)
    out, weights = attention(P.SplitHeadsWithoutTranspose)(x, x, x, need_weights=True)
    assert out.shape == x.shape and weights.shape == (2, 8, 5, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 8, 5))


def test_global_sizes_crash_when_they_do_not_fit():
    x = torch.randn(2, 5, 32)
    with pytest.raises(RuntimeError):
        attention(P.GlobalSizesAttention, 32, 4)(x, x, x)


# ---- 2 and 9: masks that do not mask -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(RuntimeError, lambda: P.replace_attention(small_model(), P.IfMaskAttention), "if-mask"),
        faulty(AssertionError, lambda: P.replace_attention(small_model(), P.MultiplyMaskAttention), "multiplied-mask"),
        faulty(
            AssertionError, lambda: P.replace_attention(small_model(), P.SplitHeadsWithoutTranspose), "split-without-transpose"
        ),
        package(small_model),
        package(lambda: P.replace_attention(small_model(), P.AttentionWithStep), "attention-with-step-unchanged"),
    ],
)
def test_future_tokens_do_not_change_earlier_outputs(make, error):
    run(P.check_decoder_is_causal, make(), error)


def test_if_mask_raises_for_a_multi_element_mask():
    q = torch.randn(1, 1, 3, 4)
    with pytest.raises(RuntimeError, match="ambiguous"):
        P.attention_if_mask(q, q, q, causal_mask(3))


def test_multiplied_mask_gives_hidden_keys_weight():
    q = torch.randn(1, 1, 4, 8)
    _, weights = P.multiply_mask_attention(q, q, q, causal_mask(4))
    assert float(weights[~causal_mask(4).expand_as(weights)].min()) > 0.0  # every future key gets weight


# ---- 3: the scale ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(AssertionError, lambda: attention(P.WrongScaleAttention, 512, 8, score_dim="d_model"), "sqrt-d_model"),
        faulty(AssertionError, lambda: attention(P.WrongScaleAttention, 512, 8, score_dim="d_k // n_heads"), "d_k//h"),
        package(lambda: attention(MultiHeadAttention, 512, 8)),
    ],
)
def test_scaled_scores_have_unit_variance(make, error):
    run(P.check_scores_have_unit_variance, make(), error)


def test_wrong_scales_are_sqrt_h_off():
    flat = attention(P.WrongScaleAttention, 512, 8, score_dim="d_model")
    sharp = attention(P.WrongScaleAttention, 512, 8, score_dim="d_k // n_heads")
    assert (flat.scale_dim, sharp.scale_dim) == (512, 8)
    assert math.sqrt(flat.scale_dim) / math.sqrt(64) == pytest.approx(math.sqrt(8))
    assert math.sqrt(64) / math.sqrt(sharp.scale_dim) == pytest.approx(math.sqrt(8))


# ---- 4 and 7: parameters that are shared or missing -------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(AssertionError, lambda: P.share_cross_attention(small_model()), "shared-cross-attention"),
        faulty(AssertionError, lambda: P.fresh_layer_norm_per_call(small_model()), "fresh-layer-norm-per-call"),
        package(small_model),
        package(lambda: small_model(norm_first=True), "package-pre-norm"),
        package(lambda: small_model(final_norm=True, positional_encoding="learned"), "package-final-norm-learned-pe"),
        package(
            lambda: small_model(tgt_vocab_size=17, share_embeddings=True, tie_output_embedding=True), "package-tied"
        ),
    ],
)
def test_parameter_count_matches_the_architecture(make, error):
    run(P.check_parameter_count, make(), error)


def test_paper_base_model_parameter_count():
    config = TransformerConfig(
        src_vocab_size=37000, tgt_vocab_size=37000, share_embeddings=True, tie_output_embedding=True
    )  # one 37000-token vocabulary, one shared embedding matrix, as in the paper
    assert P.expected_parameter_count(config) == 63_119_496  # the paper reports "65M"
    assert sum(p.numel() for p in P.SharedAttentionDecoderLayer(512, 8, 2048).parameters()) == 4 * 512 * 512 + 4 * 512 + (
        2 * 512 * 2048 + 2048 + 512
    ) + 3 * 2 * 512


def test_fresh_layer_norm_is_neither_trained_nor_saved():
    norm = P.FreshLayerNormPerCall(8)
    assert list(norm.parameters()) == [] and norm.state_dict() == {}


# ---- 5: the feed-forward network -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(RuntimeError, lambda: P.ConvFeedForwardWrongShape(512, 2048), "conv-declared-d_model-d_ff"),
        faulty(AssertionError, lambda: FeedForward(512, P.FFN_DIM_TYPO), "ffn-dim-2018"),
        package(lambda: FeedForward(512, 2048)),
    ],
)
def test_feed_forward_maps_d_model_to_d_model_through_d_ff(make, error):
    run(P.check_feed_forward, make(), error)


def test_wrong_conv_runs_only_when_d_ff_equals_d_model():
    x = torch.randn(2, 3, 16)
    assert P.ConvFeedForwardWrongShape(16, 16)(x).shape == x.shape


# ---- 6: softmax twice --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [faulty(AssertionError, lambda: P.double_softmax_logits, "double-softmax"), package(lambda: (lambda logits: logits))],
)
def test_loss_gradient_is_softmax_minus_one_hot(make, error):
    run(P.check_loss_gradient, make(), error)


def test_double_softmax_loss_cannot_go_below_its_floor():
    V = 10
    perfect = 100.0 * F.one_hot(torch.arange(V), V).float()  # (V, V): certain and right
    assert float(F.cross_entropy(perfect, torch.arange(V))) < 1e-6
    floor = math.log(1 + (V - 1) / math.e)
    assert float(F.cross_entropy(P.double_softmax_logits(perfect), torch.arange(V))) == pytest.approx(floor, rel=1e-5)


def test_double_softmax_model_returns_probabilities():
    model = P.build_model("6. softmax twice", small_config()).eval()
    out = model(torch.randint(1, 17, (2, 5)), torch.randint(1, 19, (2, 4)))
    torch.testing.assert_close(out.sum(-1), torch.ones(2, 4))


# ---- 7: devices ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(RuntimeError, lambda: P.attention_with_tensor_scale, "one-element-cpu-scale"),
        package(lambda: scaled_dot_product_attention),
    ],
)
def test_attention_runs_on_another_device(make, error):
    run(P.check_runs_on_another_device, make(), error)


# ---- 8: masks from the wrong place ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(AssertionError, lambda: P.cross_mask_from_target, "mask-from-target"),
        package(lambda: (lambda src, tgt, pad_id: padding_mask(src, pad_id)), "package-mask-from-source"),
    ],
)
def test_source_padding_never_reaches_the_decoder(make, error):
    run(P.check_source_padding_is_invisible, make(), error)


def test_cross_mask_from_target_fails_loudly_when_lengths_differ():
    model = small_model()
    src, tgt = torch.randint(1, 17, (2, 6)), torch.randint(1, 19, (2, 4))
    with pytest.raises(ValueError, match="src_mask"):
        model(src, tgt, src_mask=P.cross_mask_from_target(src, tgt))


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(TypeError, lambda: P.EncoderLayerPassesFunction(32, 4, 64, dropout=0.0), "passes-the-function"),
        package(lambda: EncoderLayer(32, 4, 64, dropout=0.0)),
    ],
)
def test_padding_never_changes_real_positions(make, error):
    run(P.check_padding_is_invisible, make(), error)


# ---- 10: polarity and dtype --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(AssertionError, lambda: P.padding_mask_true_is_pad, "true-means-pad"),
        package(lambda: padding_mask),
    ],
)
def test_padding_mask_hides_pad_keys(make, error):
    run(P.check_padding_mask_hides_pad_keys, make(), error)


@pytest.mark.parametrize(
    "make, error",
    [faulty(RuntimeError, lambda: P.uint8_subsequent_mask, "uint8"), package(lambda: causal_mask)],
)
def test_causal_mask_hides_future_keys(make, error):
    run(P.check_causal_mask_builder, make(), error)


def test_current_torch_rejects_uint8_masks_in_masked_fill():
    with pytest.raises(RuntimeError, match="boolean"):
        torch.zeros(2, 2).masked_fill(torch.ones(2, 2, dtype=torch.uint8), -1e9)


# ---- 11: fill values -------------------------------------------------------------------------------------------


def fill(value):
    return lambda q, k, v, mask=None: P.attention_with_fill(q, k, v, mask, fill=value)


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(RuntimeError, lambda: fill(-1e9), "fill-1e9"),
        faulty(RuntimeError, lambda: fill(-1e18), "fill-1e18"),
        pytest.param(lambda: fill(float("-inf")), None, id="fill-inf-runs-in-half"),
        package(lambda: scaled_dot_product_attention),
    ],
)
def test_masked_attention_runs_in_float16(make, error):
    run(P.check_runs_in_half_precision, make(), error)


@pytest.mark.parametrize(
    "make, error",
    [
        faulty(AssertionError, lambda: fill(float("-inf")), "fill-inf-nan"),
        faulty(AssertionError, lambda: fill(-1e9), "fill-1e9-uniform-average"),
        package(lambda: scaled_dot_product_attention),
    ],
)
def test_query_with_no_visible_key_is_finite_and_ignores_hidden_values(make, error):
    run(P.check_query_with_nothing_to_see, make(), error)


# ---- 12: layer norm by hand ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [faulty(AssertionError, lambda: P.StdPlusEpsLayerNorm(512), "std-plus-eps"), package(lambda: nn.LayerNorm(512))],
)
def test_layer_norm_matches_torch(make, error):
    run(P.check_matches_torch_layer_norm, make(), error)


def test_std_plus_eps_is_off_by_sqrt_d_over_d_minus_1():
    d = 4
    x = torch.randn(3, d)
    by_hand = P.StdPlusEpsLayerNorm(d, eps=0.0)(x)
    torch.testing.assert_close(F.layer_norm(x, (d,), eps=0.0), by_hand * math.sqrt(d / (d - 1)))


# ---- 13: the documentation's claims ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error",
    [faulty(AssertionError, lambda: P.sinusoidal_table_base_1000, "base-1000"), package(lambda: sinusoidal_table)],
)
def test_sinusoidal_table_matches_the_paper(make, error):
    run(P.check_sinusoidal_table, make(), error)


def test_attention_weights_are_query_by_key_not_query_by_d_head():
    q, k = torch.randn(2, 8, 3, 16), torch.randn(2, 8, 5, 16)
    _, weights = scaled_dot_product_attention(q, k, k)
    assert weights.shape == (2, 8, 3, 5)


# ---- 14: code that does not run as printed ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["undefined seq_embedding", "numpy and torch concatenated"])
@pytest.mark.parametrize("version, error", [(0, AssertionError), (1, None)], ids=["as-printed", "fixed"])
def test_snippet_runs(name, version, error):
    run(P.check_snippet_runs, P.SNIPPETS[name][version], error)


def test_np_pow_runs_only_with_numpy_2():
    as_printed, fixed = P.SNIPPETS["np.pow"]
    P.check_snippet_runs(fixed)
    run(P.check_snippet_runs, as_printed, None if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else AssertionError)


# ---- the catalogue the chapter summarises -----------------------------------------------------------------------


def test_catalogue_covers_all_fourteen_mistakes():
    assert {case.mistake for case in P.CASES} == set(range(1, 15))


@pytest.mark.parametrize("case", P.CASES, ids=[f"{c.mistake:02d}-{c.name}" for c in P.CASES])
def test_catalogue_case_is_caught(case):
    run(case.check, case.faulty(), case.error)
    run(case.check, case.correct(), None)


@pytest.mark.parametrize("mistake", list(P.MODEL_MISTAKES))
def test_every_model_variant_trains_one_step(mistake):
    model = P.build_model(mistake, small_config(src_vocab_size=13, tgt_vocab_size=13))
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 6))
    logits = model(src, tgt[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 13), tgt[:, 1:].reshape(-1))
    loss.backward()
    assert logits.shape == (2, 5, 13) and torch.isfinite(loss)
    assert model.generator.weight.grad is not None and torch.isfinite(model.generator.weight.grad).all()


# ---- the chapter's figures -------------------------------------------------------------------------------------


def test_head_split_figure_shows_tokens_in_order_only_for_the_package():
    from transformer.viz.pitfalls import head_split_figure

    fig = head_split_figure(n_heads=4, length=6)
    package, faulty = (np.asarray(trace.z) for trace in fig.data)  # token position per (head, row)
    assert (package == np.arange(6)[None, :]).all()
    assert (faulty != np.arange(6)[None, :]).any() and sorted(faulty.ravel().tolist()) == sorted(package.ravel().tolist())


def test_training_picker_keeps_the_baseline_visible_in_every_state():
    from transformer.training import History
    from transformer.viz.pitfalls import training_picker

    def history(final_loss):
        return History(step=[1, 2], loss=[3.0, final_loss], eval_token_accuracy=[0.9], eval_exact_match=[0.5])

    fig = training_picker({"correct": history(0.1), "a": history(1.0), "b": history(2.0)}, baseline="correct")
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["a", "b"]
    for i, button in enumerate(buttons):
        visible = button.args[0]["visible"]
        assert visible[:2] == [True, True] and sum(visible) == 4 and visible[2 + 2 * i]


def test_mask_picker_rejects_weights_that_do_not_match_the_tokens():
    from transformer.viz.pitfalls import mask_picker

    with pytest.raises(ValueError, match="do not match"):
        mask_picker({"m": torch.zeros(3, 4)}, ["a", "b", "c"], ["a", "b", "c"])
