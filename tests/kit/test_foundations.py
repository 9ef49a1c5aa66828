"""Chapter 5's foundations (transformer_book.foundations): additive attention and its exact cost, the hand-written
one-head/two-head retrieval, the exercises' checks, and the figure that picks one map with a dropdown."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from transformer import MultiHeadAttention
from transformer.attention import scaled_dot_product_attention
from transformer_book import foundations as fd
from transformer_book.pitfalls import run_check
from transformer_book.viz import attention as va
from transformer_book.viz import foundations as vf

WORDS = ["the", "cat", "chased", "dog"]
CAT_DOG = ["the", "cat", "chased", "the", "dog"]
DOG_CAT = ["the", "dog", "chased", "the", "cat"]


def test_additive_attention_is_v_tanh_Wq_plus_Uk_with_the_packages_mask_convention():
    att = fd.AdditiveAttention(d_q=6, d_k=4, d_hidden=5)
    q, k, v = torch.randn(2, 3, 6), torch.randn(2, 7, 4), torch.randn(2, 7, 3)  # d_q != d_k is allowed
    mask = torch.ones(2, 1, 7, dtype=torch.bool)
    mask[1, :, 4:] = False
    with torch.no_grad():
        out, weights = att(q, k, v, mask)
        by_hand = torch.empty(2, 3, 7)
        for b in range(2):
            for i in range(3):
                for j in range(7):
                    hidden = torch.tanh(att.W.weight @ q[b, i] + att.U.weight @ k[b, j])  # (d_hidden,)
                    by_hand[b, i, j] = att.v.weight[0] @ hidden
    expected = torch.softmax(by_hand.masked_fill(~mask, -math.inf), dim=-1)
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(out, expected @ v)
    assert (weights[1, :, 4:] == 0).all()


def test_additive_scores_are_bounded_by_the_l1_norm_of_v_at_any_size():
    for size in (2, 64, 2048):
        att = fd.AdditiveAttention(size, size, 16)
        q, k = 100 * torch.randn(50, size), 100 * torch.randn(20, size)  # huge inputs saturate the tanh
        with torch.no_grad():
            assert att.scores(q, k).abs().max() <= att.v.weight.abs().sum()


def test_unscaled_dot_product_is_what_the_package_computes_without_its_scale():
    q, k, v = torch.randn(2, 4, 16), torch.randn(2, 5, 16), torch.randn(2, 5, 3)
    torch.testing.assert_close(fd.dot_product_attention(q, k, v), scaled_dot_product_attention(q, k, v))
    out, _ = fd.dot_product_attention(q / 4, k, v, scaled=False)  # 1 / sqrt(16) folded into q
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v)[0])


@pytest.mark.parametrize("d_q, d_k, d_hidden, T_q, T_k", [(64, 64, 64, 9, 7), (16, 8, 32, 3, 11), (1, 1, 1, 1, 1)])
def test_cost_formulas_are_exact_against_parameter_counts_and_flop_counter(d_q, d_k, d_hidden, T_q, T_k):
    additive = fd.score_cost("additive", d_q, d_k, d_hidden)
    att = fd.AdditiveAttention(d_q, d_k, d_hidden)
    assert additive.parameters == sum(p.numel() for p in att.parameters())
    q, k = torch.randn(T_q, d_q), torch.randn(T_k, d_k)
    assert fd.counted_matmul_flops(lambda: att.scores(q, k)) == fd.attention_flops(additive, T_q, T_k, matmul_only=True)
    # every operation counted: matmuls plus the add and the tanh per (pair, hidden unit)
    total = fd.attention_flops(additive, T_q, T_k)
    assert total == fd.attention_flops(additive, T_q, T_k, matmul_only=True) + 2 * d_hidden * T_q * T_k
    assert additive.held_per_score == d_hidden + 1
    if d_q == d_k:
        dot = fd.score_cost("dot", d_q, d_k)
        qd = torch.randn(T_q, d_k)
        assert dot.parameters == 0 and dot.held_per_score == 1
        assert fd.counted_matmul_flops(lambda: qd @ k.T) == fd.attention_flops(dot, T_q, T_k, matmul_only=True)
        assert fd.attention_flops(dot, T_q, T_k) == 2 * d_k * T_q * T_k + d_k * T_q  # the scale once per query
        if d_hidden == d_k:
            assert additive.per_score == 2 * dot.per_score


def test_cost_rejects_what_it_cannot_count():
    with pytest.raises(ValueError, match="d_q == d_k"):
        fd.score_cost("dot", 4, 8)
    with pytest.raises(ValueError, match="d_hidden"):
        fd.score_cost("additive", 4, 4)
    with pytest.raises(ValueError, match="kind"):
        fd.score_cost("multiplicative", 4, 4)


def test_median_seconds_is_the_median_of_the_timed_runs_after_one_warm_up(monkeypatch):
    clock = iter([10.0, 11.0, 20.0, 23.0, 30.0, 32.0])  # three timed runs: 1 s, 3 s and 2 s
    monkeypatch.setattr(fd, "time", SimpleNamespace(perf_counter=lambda: next(clock)))  # this module's clock only
    calls = []
    assert fd.median_seconds(lambda: calls.append(1), repeats=3) == 2.0
    assert len(calls) == 4  # one warm-up, untimed, then three timed


def _retrieve(sentence, n_heads):
    module, x = fd.retrieval_attention(WORDS, sentence, 2, [1, 4], n_heads=n_heads)
    with torch.no_grad():
        out, w = module(x, x, x, need_weights=True)
    return module, out[0, 2], w[0, :, 2]  # the verb's output (d_model,) and weights (H, T)


def test_one_head_blends_the_two_positions_and_loses_which_word_stood_where():
    module, out_a, w = _retrieve(CAT_DOG, 1)
    _, out_b, _ = _retrieve(DOG_CAT, 1)
    torch.testing.assert_close(w[0, [1, 4]], torch.tensor([0.5, 0.5]), atol=1e-4, rtol=0)
    torch.testing.assert_close(out_a, out_b)
    torch.testing.assert_close(out_a[:4], torch.tensor([0.0, 0.5, 0.0, 0.5]), atol=1e-4, rtol=0)  # cat, dog halves


def test_two_heads_of_the_same_width_each_pick_one_position():
    module, out_a, w = _retrieve(CAT_DOG, 2)
    _, out_b, _ = _retrieve(DOG_CAT, 2)
    assert w[0, 1] > 0.999 and w[1, 4] > 0.999
    d_k = module.d_k
    torch.testing.assert_close(out_a[:4], torch.tensor([0.0, 1.0, 0.0, 0.0]), atol=1e-4, rtol=0)  # head 0: cat
    torch.testing.assert_close(out_a[d_k : d_k + 4], torch.tensor([0.0, 0.0, 0.0, 1.0]), atol=1e-4, rtol=0)  # dog
    assert (out_a - out_b).abs().max() > 0.9
    one_head, _ = fd.retrieval_attention(WORDS, CAT_DOG, 2, [1, 4], n_heads=1)
    assert sum(p.numel() for p in one_head.parameters()) == sum(p.numel() for p in module.parameters())


def test_retrieval_attention_rejects_other_shapes():
    with pytest.raises(ValueError, match="n_heads"):
        fd.retrieval_attention(WORDS, CAT_DOG, 2, [1, 4], n_heads=3)
    with pytest.raises(ValueError, match="two positions"):
        fd.retrieval_attention(WORDS, CAT_DOG, 2, [1], n_heads=2)


def test_without_projections_each_token_prefers_itself_and_pairs_never_both_prefer_the_other():
    g = torch.Generator().manual_seed(1)
    x = torch.nn.functional.layer_norm(torch.randn(200, 8, 32, generator=g), (32,))
    s = x @ x.transpose(1, 2)
    assert (s.argmax(-1) == torch.arange(8)).all()
    a, b = torch.randn(2, 50_000, 3, generator=g)
    cross = (a * b).sum(-1)
    assert not ((cross > (a * a).sum(-1)) & (cross > (b * b).sum(-1))).any()


# ------------------------------------------------------------------------------------------- the exercises' checks


def softmax_over_queries(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-2)
    return weights @ v, weights


class AdditiveWithoutTanh(fd.AdditiveAttention):
    def scores(self, q, k):
        return self.v(self.W(q).unsqueeze(-2) + self.U(k).unsqueeze(-3)).squeeze(-1)


class SharedQK(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.qk, self.v = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, x):
        q = k = self.qk(x)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(x.size(-1)), dim=-1)
        return weights @ self.v(x), weights


def test_rows_check_catches_softmax_over_queries_and_passes_both_attentions():
    assert not run_check(fd.check_rows_are_distributions, softmax_over_queries)[0]
    for attend in (scaled_dot_product_attention, fd.AdditiveAttention(8, 8, 16), fd.dot_product_attention):
        assert run_check(fd.check_rows_are_distributions, attend) == (True, "passes")


@pytest.mark.parametrize("seed", range(5))
def test_query_check_catches_additive_without_tanh_for_any_initialisation(seed):
    torch.manual_seed(seed)
    assert not run_check(fd.check_weights_depend_on_query, AdditiveWithoutTanh(8, 8, 16))[0]
    assert run_check(fd.check_weights_depend_on_query, fd.AdditiveAttention(8, 8, 16)) == (True, "passes")
    assert run_check(fd.check_weights_depend_on_query, scaled_dot_product_attention) == (True, "passes")


@pytest.mark.parametrize("seed", range(20))
def test_itself_check_catches_a_shared_qk_projection_and_passes_the_package_for_any_initialisation(seed):
    torch.manual_seed(seed)
    shared, package = SharedQK(64), MultiHeadAttention(64, 8)
    caught, message = run_check(fd.check_not_drawn_to_itself, lambda x: shared(x)[1][:, None])
    assert not caught and "attend most to themselves" in message
    assert run_check(fd.check_not_drawn_to_itself, lambda x: package(x, x, x, need_weights=True)[1])[0]


def test_compare_asserts_that_the_check_tells_the_two_apart(capsys):
    fd.compare(fd.check_rows_are_distributions, softmax_over_queries, scaled_dot_product_attention)
    assert "CAUGHT" in capsys.readouterr().out
    with pytest.raises(AssertionError):
        fd.compare(fd.check_rows_are_distributions, scaled_dot_product_attention, scaled_dot_product_attention)


# ------------------------------------------------------------------------------------------------------ the figure


def test_weights_dropdown_shows_one_map_at_a_time_and_the_dropdown_switches_them():
    maps = {"a": torch.softmax(torch.randn(5, 5), -1), "b": torch.eye(5), "c": torch.full((5, 5), 0.2)}
    fig = vf.weights_dropdown(maps, CAT_DOG, CAT_DOG)
    assert [t.visible for t in fig.data] == [True, False, False]
    assert list(fig.data[0].y) == va.token_labels(CAT_DOG)  # the repeated "the" keeps its own row
    for trace, w in zip(fig.data, maps.values(), strict=True):
        assert (trace.zmin, trace.zmax) == (0, 1) and np.allclose(np.array(trace.z), w.numpy(), atol=1e-4)
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["a", "b", "c"]
    for i, button in enumerate(menu.buttons):
        assert button.args[0]["visible"] == [j == i for j in range(3)]
    assert menu.y > 1  # above the plot, never on it
    assert fig.layout.width is None or fig.layout.width <= 680


def test_weights_dropdown_needs_matching_tokens_and_at_least_one_map():
    with pytest.raises(ValueError, match="query"):
        vf.weights_dropdown({"a": torch.eye(5)}, CAT_DOG[:4], CAT_DOG)
    with pytest.raises(ValueError, match="at least one"):
        vf.weights_dropdown({}, CAT_DOG, CAT_DOG)
    assert not vf.weights_dropdown({"a": torch.eye(5)}, CAT_DOG, CAT_DOG).layout.updatemenus  # one map: no menu


# ------------------------------------------------------------------------------------------- gradient through softmax


@pytest.mark.parametrize("d_k", [4, 64])
def test_query_gradient_norms_are_the_norms_autograd_finds(d_k):
    unscaled, scaled = fd.query_gradient_norms(d_k, n_keys=5, draws=7, seed=3)
    rng = torch.Generator().manual_seed(3)  # the same draws, in the same order
    q = torch.randn(7, d_k, generator=rng, dtype=torch.float64).requires_grad_()
    K = torch.randn(7, 5, d_k, generator=rng, dtype=torch.float64)
    upstream = torch.randn(7, 5, generator=rng, dtype=torch.float64)
    for divisor, norms in ((1.0, unscaled), (math.sqrt(d_k), scaled)):
        weights = torch.softmax((K @ q[..., None])[..., 0] / divisor, dim=-1)
        (grad,) = torch.autograd.grad((weights * upstream).sum(), q)
        torch.testing.assert_close(norms, grad.norm(dim=-1))


def test_without_the_scale_the_gradient_reaching_a_query_spreads_with_d_k_and_with_it_does_not():
    spreads = {}
    for d_k in (16, 256):
        unscaled, scaled = fd.query_gradient_norms(d_k, draws=200)
        spreads[d_k] = [float(x.quantile(0.9) / x.quantile(0.1)) for x in (unscaled, scaled)]
    assert spreads[256][0] > 100 * spreads[16][0]  # unscaled: orders of magnitude wider at d_k 256
    assert all(spread[1] < 5 for spread in spreads.values())  # scaled: a factor of a few at any width
