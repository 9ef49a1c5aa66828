"""The claims of the chapter "The full model", checked against the package: the feed-forward network is two 1x1
convolutions, a hand-written ``(x - mean) / (std + eps)`` is not layer norm, the paper's base configuration has the
parameters the chapter says, pre-norm keeps an identity path, and what twelve plain blocks do to the signal depends on
the initialisation. Plus the figures' helpers it relies on."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer import DecoderLayer, EncoderLayer, Transformer, TransformerConfig
from transformer.layers import FeedForward
from transformer.train.recipes import small_model_config
from transformer_book.training_basics import initialise, signal_through
from transformer_book.viz import model as viz

BASE = TransformerConfig(37_000, 37_000, share_embeddings=True, tie_output_embedding=True)
BIG = TransformerConfig(
    37_000, 37_000, d_model=1024, n_heads=16, d_ff=4096, share_embeddings=True, tie_output_embedding=True
)


def test_feed_forward_equals_two_1x1_convolutions_with_copied_weights():
    ffn = FeedForward(8, 32).eval()
    conv1, conv2 = nn.Conv1d(8, 32, kernel_size=1), nn.Conv1d(32, 8, kernel_size=1)  # the second is (d_ff -> d_model)
    with torch.no_grad():
        for conv, linear in ((conv1, ffn.linear1), (conv2, ffn.linear2)):
            conv.weight.copy_(linear.weight[:, :, None])
            conv.bias.copy_(linear.bias)
    x = torch.randn(3, 7, 8)  # (B, T, d_model)
    by_convolution = conv2(F.relu(conv1(x.transpose(1, 2)))).transpose(1, 2)
    torch.testing.assert_close(by_convolution, ffn(x))


def test_second_convolution_declared_d_model_to_d_ff_rejects_the_hidden_activations():
    hidden = torch.randn(3, 32, 7)  # (B, d_ff, T)
    with pytest.raises(RuntimeError, match="expected input.*to have 8 channels, but got 32"):
        nn.Conv1d(8, 32, kernel_size=1)(hidden)


def test_feed_forward_is_position_wise():
    ffn = FeedForward(8, 32).eval()
    x = torch.randn(2, 6, 8)
    one_at_a_time = torch.cat([ffn(x[:, t : t + 1]) for t in range(6)], dim=1)
    torch.testing.assert_close(ffn(x), one_at_a_time)


@pytest.mark.parametrize("d", [4, 64, 512])
def test_handwritten_layer_norm_with_unbiased_std_and_eps_outside_is_not_layer_norm(d):
    x = torch.randn(200, d)
    reference = nn.LayerNorm(d, elementwise_affine=False)(x)
    handwritten = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5)
    difference = (handwritten - reference).abs().max().item()
    assert difference > 1e-3
    # The unbiased std is sqrt(d / (d - 1)) too large: the hand-written outputs are that much too small.
    ratio = (handwritten.std(-1, correction=0) / reference.std(-1, correction=0)).mean().item()
    assert ratio == pytest.approx(((d - 1) / d) ** 0.5, rel=1e-3)
    correct = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, correction=0) + 1e-5)
    torch.testing.assert_close(correct, reference, atol=1e-5, rtol=1e-5)


def test_eps_outside_the_root_blows_up_near_constant_vectors_that_layer_norm_damps():
    x = 1e-3 * torch.randn(200, 64)
    reference = nn.LayerNorm(64, elementwise_affine=False)(x)
    handwritten = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5)
    assert reference.std(-1).mean() < 0.35 < 0.95 < handwritten.std(-1).mean()


def test_base_config_with_shared_37000_vocabulary_has_63_1_million_parameters():
    assert sum(viz.parameter_tree(BASE).values()) == 63_119_496
    assert sum(viz.parameter_formula(BASE).values()) == 63_119_496
    assert sum(viz.parameter_tree(BIG).values()) == 214_282_376
    assert sum(viz.parameter_formula(TransformerConfig(37_000, 37_000)).values()) == 101_007_496  # nothing shared


def test_embedding_share_falls_with_width_while_feed_forward_keeps_four_sevenths_of_the_rest():
    shares = {}
    for name, config in (("base", BASE), ("big", BIG)):
        counts = viz.parameter_formula(config)
        total, embedding = sum(counts.values()), counts["token embeddings"]
        feed_forward = counts["encoder feed-forward"] + counts["decoder feed-forward"]
        shares[name] = embedding / total, feed_forward / (total - embedding)
    assert shares["base"][0] == pytest.approx(0.300, abs=5e-3) and shares["big"][0] == pytest.approx(0.177, abs=5e-3)
    assert shares["base"][1] == pytest.approx(4 / 7, abs=5e-3) and shares["big"][1] == pytest.approx(4 / 7, abs=5e-3)


def test_parity_with_torch_nn_transformer_is_exact_up_to_rounding_in_float64():
    from transformer.interop import copy_from_torch

    config = TransformerConfig(
        16, 16, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, final_norm=True
    )
    reference = nn.Transformer(32, 4, 2, 2, 64, dropout=0.0, batch_first=True).eval()
    ours = copy_from_torch(Transformer(config), reference).eval()
    reference, ours = reference.double(), ours.double()
    x, y = torch.randn(2, 6, 32, dtype=torch.float64), torch.randn(2, 5, 32, dtype=torch.float64)
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)  # PyTorch's convention: True = hidden
    with torch.no_grad():
        expected = reference(x, y, tgt_mask=causal)
        memory, _ = ours.encoder(x, None)
        got, _, _ = ours.decoder(y, memory, None, torch.ones(5, 5, dtype=torch.bool).tril()[None, None])
    assert (got - expected).abs().max() < 1e-12


@pytest.mark.parametrize(
    "overrides",
    [
        dict(),
        dict(norm_first=True),  # final norms
        dict(positional_encoding="learned", tie_output_embedding=True),
        dict(n_decoder_layers=0, final_norm=True),
        dict(share_embeddings=True, src_vocab_size=19),
    ],
)
def test_parameter_formula_and_tree_agree_with_a_built_model(overrides):
    values = dict(
        src_vocab_size=17,
        tgt_vocab_size=19,
        d_model=32,
        n_heads=4,
        d_ff=48,
        n_encoder_layers=2,
        n_decoder_layers=3,
        max_positions=40,
    )
    config = TransformerConfig(**{**values, **overrides})
    built = Transformer(config).num_parameters()
    assert sum(viz.parameter_formula(config).values()) == built
    assert sum(viz.parameter_tree(config).values()) == built


@pytest.mark.parametrize("layer_class", [EncoderLayer, DecoderLayer])
def test_pre_norm_layer_with_silenced_sublayers_is_the_identity_and_post_norm_is_not(layer_class):
    x, memory = 3 * torch.randn(2, 5, 16) + 1, torch.randn(2, 4, 16)
    outputs = {}
    for norm_first in (False, True):
        layer = layer_class(16, 4, 64, dropout=0.0, norm_first=norm_first).eval()
        attentions = [layer.self_attn] + ([layer.cross_attn] if layer_class is DecoderLayer else [])
        with torch.no_grad():
            for linear in [a.out_proj for a in attentions] + [layer.feed_forward.linear2]:
                linear.weight.zero_()
                linear.bias.zero_()
        outputs[norm_first] = layer(x)[0] if layer_class is EncoderLayer else layer(x, memory)[0]
    assert torch.equal(outputs[True], x)  # pre-norm: the residual path is the identity
    torch.testing.assert_close(outputs[False], F.layer_norm(x, (16,)), atol=1e-5, rtol=1e-5)  # post-norm normalises


def test_depth_statistics_pre_norm_gradient_grows_toward_the_input_and_post_norm_shrinks():
    post, pre = viz.depth_statistics(False, n_layers=6), viz.depth_statistics(True, n_layers=6)
    assert len(post.activation_rms) == len(post.input_gradient) == 7 and len(post.parameter_gradient) == 6
    assert all(abs(r - 1) < 1e-3 for r in post.activation_rms[1:])
    assert pre.activation_rms[-1] > 1.5 * pre.activation_rms[0]
    assert all(b < a for a, b in zip(pre.input_gradient, pre.input_gradient[1:], strict=False))
    assert post.input_gradient[0] < post.input_gradient[-1]


def test_norm_figure_states_normalise_rows_for_layer_norm_and_columns_for_batch_norm():
    x = torch.randn(2, 3, 6) * 2 + torch.linspace(-1, 1, 6)
    fig = viz.norm_figure(x)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 3 and len(fig.layout.updatemenus[0].buttons) == 3
    layer, batch = torch.tensor(heatmaps[1].z), torch.tensor(heatmaps[2].z)
    assert layer.mean(1).abs().max() < 1e-5 and batch.mean(0).abs().max() < 1e-5


def test_parameter_sunburst_totals_match_the_package():
    fig = viz.parameter_sunburst({"base": BASE, "small": small_model_config()})
    assert [t.values[0] for t in fig.data] == [63_119_496, Transformer(small_model_config()).num_parameters()]
    assert [t.visible for t in fig.data] == [True, False]


@pytest.mark.parametrize("seed", range(3))
def test_twelve_plain_blocks_fade_with_xavier_and_grow_with_he_but_the_residual_stack_fades_with_neither(seed):
    """The chapter's residual section: without the residual connection the package's Xavier initialisation multiplies
    the second moment by about 0.32 per feed-forward block and He's (on both layers) by about 2, for any seed."""
    x = torch.randn(4, 10, 64, generator=torch.Generator().manual_seed(seed))
    readout = torch.randn(4, 10, 64, generator=torch.Generator().manual_seed(seed + 100))
    per_block = {}
    for scheme in ("xavier", "he"):
        torch.manual_seed(seed)
        blocks = [initialise(FeedForward(64, 256), scheme) for _ in range(12)]
        plain = signal_through(blocks, x, residual=False, readout=readout)
        residual = signal_through(blocks, x, residual=True, readout=readout)
        per_block[scheme] = (plain.rms[-1] / plain.rms[0]) ** (2 / 12)
        assert residual.rms[-1] > residual.rms[0]  # the residual sum never fades
    assert 0.25 < per_block["xavier"] < 0.4 and 1.6 < per_block["he"] < 2.4
