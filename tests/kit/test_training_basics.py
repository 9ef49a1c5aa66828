"""The teaching code of the page "Before you start" (transformer_book.training_basics) and its figure: each piece
against PyTorch's own implementation or against the closed form the page derives."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer.attention import MultiHeadAttention
from transformer.layers import FeedForward
from transformer_book import training_basics as tb
from transformer_book.viz.basics import lines_figure


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_cross_entropy_gradient_is_what_autograd_finds_through_f_cross_entropy(smoothing):
    logits = (4 * torch.randn(9, 11, dtype=torch.float64)).requires_grad_()
    target = torch.randint(0, 11, (9,))
    loss = F.cross_entropy(logits, target, label_smoothing=smoothing, reduction="sum")
    (expected,) = torch.autograd.grad(loss, logits)
    torch.testing.assert_close(tb.cross_entropy_gradient(logits.detach(), target, smoothing), expected)


def test_adam_steps_follow_the_update_rule_written_out():
    gradients = [0.5, -2.0, 3.0, 3.0, 1e-7]
    beta1, beta2, eps = 0.8, 0.95, 1e-6
    m = v = 0.0
    expected = []
    for t, g in enumerate(gradients, start=1):
        m, v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * g * g
        expected.append((m / (1 - beta1**t)) / (math.sqrt(v / (1 - beta2**t)) + eps))
    assert np.allclose(tb.adam_steps(gradients, betas=(beta1, beta2), eps=eps), expected, rtol=1e-12, atol=0)


def test_adam_steps_feed_several_parameters_side_by_side_each_with_its_own_averages():
    gradients = torch.tensor([[1e-5, 3.0], [2e-5, -3.0], [-1e-5, 3.0]])  # (steps, n)
    together = np.array(tb.adam_steps(gradients))  # (steps, n)
    alone = np.array([tb.adam_steps(column.tolist()) for column in gradients.T]).T
    assert together.shape == (3, 2) and np.allclose(together, alone, rtol=1e-12, atol=0)
    assert np.allclose(together[0], [1, 1], atol=1e-3)  # step 1: the full rate, whatever the gradient's size


@pytest.mark.parametrize(
    "scheme, variance", [("xavier", lambda n_in, n_out: 2 / (n_in + n_out)), ("he", lambda n_in, n_out: 2 / n_in)]
)
def test_initialise_sets_each_linear_layers_variance_and_zeroes_its_bias(scheme, variance):
    torch.manual_seed(0)
    block = tb.initialise(FeedForward(200, 800), scheme)
    for linear in (block.linear1, block.linear2):
        n_out, n_in = linear.weight.shape
        assert abs(float(linear.weight.detach().var()) / variance(n_in, n_out) - 1) < 0.03
        assert not linear.bias.any()


def test_initialise_names_the_schemes_it_knows():
    with pytest.raises(ValueError, match=r"scheme must be one of \('xavier', 'he'\); got 'lecun'"):
        tb.initialise(nn.Linear(2, 2), "lecun")


def test_signal_through_measures_every_block_and_the_gradient_at_the_input():
    x, readout = torch.randn(3, 4), torch.randn(3, 4)
    double = lambda h: 2 * h  # noqa: E731
    plain = tb.signal_through([double, double], x, residual=False, readout=readout)
    rms = float(x.pow(2).mean().sqrt())
    assert np.allclose(plain.rms, [rms, 2 * rms, 4 * rms])
    assert math.isclose(plain.input_gradient, float((4 * readout).norm()), rel_tol=1e-6)
    residual = tb.signal_through([double], x, residual=True, readout=readout)  # h + 2h
    assert np.allclose(residual.rms, [rms, 3 * rms]) and math.isclose(
        residual.input_gradient, float((3 * readout).norm()), rel_tol=1e-6
    )


def test_initial_attention_scores_are_the_modules_own_scores_and_start_at_half_the_unit_scale():
    scores = tb.initial_attention_scores(64, 4, n_tokens=12, seed=3)
    torch.manual_seed(3)  # the helper draws the module, then the inputs, from this seed
    attention = MultiHeadAttention(64, 4)
    x = torch.randn(1, 12, 64)
    with torch.no_grad():
        _, weights = attention(x, x, x, need_weights=True)  # (1, H, T, T): the softmax of the same scores
    assert scores.shape == (4, 12, 12)
    torch.testing.assert_close(scores.softmax(-1), weights[0])
    # q and k each get Var(W) = 2 / (3d + d) = 1 / (2d) from the stacked Xavier init: scores of variance 1/4
    assert abs(float(tb.initial_attention_scores(512, 8).std()) - 0.5) < 0.02


def test_initial_attention_scores_leave_the_global_generator_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    tb.initial_attention_scores(32, 2, n_tokens=4)
    torch.testing.assert_close(torch.rand(3), expected)


def test_lines_figure_colours_a_group_alike_and_dashes_its_members_apart():
    series = {name: [1.0, 2.0] for name in ("a0", "a1", "b0", "b1", "b2")}
    fig = lines_figure(series, "x", "y", "t", groups=[0, 0, 1, 1, 1])
    colours, dashes = [t.line.color for t in fig.data], [t.line.dash for t in fig.data]
    assert colours[0] == colours[1] != colours[2] == colours[3] == colours[4]
    assert dashes == ["solid", "dash", "solid", "dash", "dot"]
    with pytest.raises(ValueError, match="one group per series"):
        lines_figure(series, "x", "y", "t", groups=[0])


def test_lines_figure_draws_one_line_per_series_with_the_legend_below():
    fig = lines_figure({"a": [1.0, 0.5, 0.25], "b": [1.0, 1.0, 1.0]}, "layer", "RMS", "title", log_y=True)
    assert [trace.name for trace in fig.data] == ["a", "b"] and list(fig.data[0].x) == [0, 1, 2]
    assert fig.layout.yaxis.type == "log" and fig.layout.legend.y < 0
    with pytest.raises(ValueError, match="at least one"):
        lines_figure({}, "x", "y", "t")
    with pytest.raises(ValueError, match="len"):
        lines_figure({"a": [1.0]}, "x", "y", "t", x=[0, 1])
