"""Why attention divides by sqrt(d_k): the variance of q·k grows like d_k, and without the scale the softmax saturates."""

import math

import pytest
import torch

from transformer import MultiHeadAttention
from transformer.attention import scaled_dot_product_attention
from transformer_book.viz.attention import scaling_experiment

D_KS = (1, 4, 16, 64, 256, 1024)


@pytest.fixture(scope="module")
def results():
    return [scaling_experiment(d_k, n_queries=400, n_keys=16, seed=0) for d_k in D_KS]


def test_variance_of_dot_products_grows_like_d_k(results):
    for r in results:
        assert r.raw.shape == (400, 16)
        assert r.var_raw / r.d_k == pytest.approx(1.0, abs=0.1), f"d_k={r.d_k}: Var(q·k)={r.var_raw:.1f}"
    variances = [r.var_raw for r in results]
    assert variances == sorted(variances) and variances[-1] > 500 * variances[0]


def test_dividing_by_sqrt_d_k_restores_unit_variance(results):
    for r in results:
        assert torch.allclose(r.scaled, r.raw / math.sqrt(r.d_k))
        assert r.var_scaled == pytest.approx(1.0, abs=0.1), f"d_k={r.d_k}: Var(q·k/sqrt(d_k))={r.var_scaled:.2f}"


def test_unscaled_softmax_saturates_as_d_k_grows(results):
    large = results[2:]  # d_k >= 16, where the trend is monotonic
    assert [r.max_weight_raw for r in large] == sorted(r.max_weight_raw for r in large)
    assert [r.entropy_raw for r in large] == sorted((r.entropy_raw for r in large), reverse=True)
    biggest = results[-1]
    assert biggest.max_weight_raw > 0.9 and biggest.entropy_raw < 0.3
    assert biggest.jacobian_raw < biggest.jacobian_scaled / 4  # a saturated softmax passes little gradient


def test_scaled_softmax_stays_the_same_at_every_d_k(results):
    for r in results[1:]:
        assert 0.2 < r.max_weight_scaled < 0.3
        assert r.entropy_scaled > 2.2  # uniform over 16 keys: log(16) = 2.77
        assert r.jacobian_scaled == pytest.approx(results[-1].jacobian_scaled, rel=0.15)


def test_package_attention_uses_the_same_scale_so_its_weights_do_not_saturate():
    g = torch.Generator().manual_seed(0)
    d_k = 1024
    q, k, v = (torch.randn(1, 200, n, d_k, generator=g) for n in (1, 16, 16))  # (B, N, T, d_k)
    _, weights = scaled_dot_product_attention(q, k, v)  # (1, 200, 1, 16)
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    assert torch.allclose(weights, expected, atol=1e-6)
    assert weights.max(-1).values.mean() < 0.35
    assert torch.softmax(q @ k.transpose(-2, -1), dim=-1).max(-1).values.mean() > 0.9


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_multi_head_attention_scales_by_the_head_size_not_d_model(n_heads):
    d_model = 32
    d_k = d_model // n_heads
    mha = MultiHeadAttention(d_model, n_heads).eval()
    with torch.no_grad():
        mha.in_proj.weight.copy_(torch.eye(d_model).repeat(3, 1))  # Q = K = V = x
        mha.in_proj.bias.zero_()
    x = 3 * torch.randn(2, 5, d_model)
    _, weights = mha(x, x, x, need_weights=True)  # (B, H, T, T)
    heads = x.view(2, 5, n_heads, d_k).transpose(1, 2)  # (B, H, T, d_k)
    scores = heads @ heads.transpose(-2, -1)  # (B, H, T, T)
    assert torch.allclose(weights, torch.softmax(scores / math.sqrt(d_k), -1), atol=1e-5)
    if n_heads > 1:
        assert not torch.allclose(weights, torch.softmax(scores / math.sqrt(d_model), -1), atol=1e-3)
        assert not torch.allclose(weights, torch.softmax(scores / math.sqrt(max(d_k // n_heads, 1)), -1), atol=1e-3)
