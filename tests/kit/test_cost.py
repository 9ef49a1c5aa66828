"""Chapter 13's counts of the model's cost (transformer_book.cost) against what PyTorch counts and holds, and its
figures (transformer_book.viz.cost)."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer import EncoderLayer, MultiHeadAttention, Transformer
from transformer.train.objective import sequence_loss
from transformer.train.recipes import small_model_config
from transformer_book.cost import (
    COMPONENTS,
    crossover_length,
    encoder_layer_flops,
    forward_flops_by_component,
    readable_attention,
    saved_bytes,
    score_bytes,
    step_times,
)
from transformer_book.viz.cost import breakdown_figure, loglog_figure, short_number


@pytest.mark.parametrize(("T", "d_model", "n_heads", "d_ff"), [(1, 8, 1, 8), (7, 32, 4, 96), (50, 64, 8, 256)])
def test_encoder_layer_flops_equal_what_flop_counter_mode_counts_in_the_packages_layer(T, d_model, n_heads, d_ff):
    torch.manual_seed(0)
    layer = readable_attention(EncoderLayer(d_model, n_heads, d_ff, dropout=0.0))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(torch.randn(3, T, d_model))
    terms = encoder_layer_flops(T, d_model, d_ff, n_heads)
    assert counter.get_total_flops() == 3 * sum(terms.values())
    assert terms["attention"] == 4 * T * T * d_model and terms["projections"] == 8 * T * d_model**2


def test_attention_term_overtakes_the_rest_exactly_at_the_crossover_length():
    d_model, d_ff = 96, 384
    cross = crossover_length(d_model, d_ff)
    assert cross == 2 * d_model + d_ff == 6 * d_model
    for T, sign in ((cross - 1, -1), (cross, 0), (cross + 1, 1)):
        terms = encoder_layer_flops(T, d_model, d_ff, 8)
        difference = terms["attention"] - terms["projections"] - terms["feed-forward"]
        assert (difference > 0) - (difference < 0) == sign


def test_score_bytes_is_the_size_of_the_weights_the_readable_attention_returns():
    attention = MultiHeadAttention(16, 4)
    x = torch.randn(2, 9, 16)
    with torch.no_grad():
        _, weights = attention(x, x, x, need_weights=True)  # (B, H, T, T)
    assert weights.nbytes == score_bytes(2, 4, 9, 9)
    assert score_bytes(2, 4, 9, 9, torch.bfloat16) == weights.nbytes // 2


def test_readable_attention_keeps_quadratic_memory_for_backward_and_the_fused_path_linear():
    torch.manual_seed(0)
    attention = MultiHeadAttention(32, 4)
    saved = {}
    for T in (256, 512):
        x = torch.randn(1, T, 32, requires_grad=True)
        saved[T] = (
            saved_bytes(lambda x=x: attention(x, x, x, need_weights=True)),
            saved_bytes(lambda x=x: attention(x, x, x)),
        )
    assert saved[512][0] > score_bytes(1, 4, 512, 512)
    assert saved[512][0] / saved[256][0] > 3.3  # T^2
    assert saved[512][1] / saved[256][1] < 2.1  # T
    assert saved_bytes(lambda: torch.randn(4, 4) @ torch.randn(4, 4)) == 0  # nothing requires a gradient


def test_flops_by_component_cover_every_product_and_a_step_costs_three_forward_passes():
    torch.manual_seed(0)
    model = Transformer(small_model_config())
    B, T, d = 2, 7, model.config.d_model
    src, tgt = torch.randint(3, 13, (B, T)), torch.randint(3, 13, (B, T + 1))  # as long as the decoder's input
    forward = forward_flops_by_component(model, src, tgt)
    assert list(forward) == list(COMPONENTS)
    layers = model.config.n_encoder_layers + model.config.n_decoder_layers
    assert forward["feed-forward"] == layers * B * 4 * T * d * model.config.d_ff
    assert forward["output projection"] == 2 * B * T * d * model.config.tgt_vocab_size
    assert forward["embeddings"] == forward["layer norms"] == forward["loss"] == 0
    with FlopCounterMode(display=False) as counter:
        sequence_loss(model(src, tgt[:, :-1]), tgt[:, 1:]).backward()
    assert counter.get_total_flops() == 3 * sum(forward.values())


def test_step_times_splits_a_measured_step_into_its_components():
    torch.manual_seed(0)
    model = Transformer(small_model_config())
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 6))
    times = step_times(model, src, tgt, steps=1)
    assert {"embeddings", "attention", "feed-forward", "layer norms", "output projection", "loss"} < times.keys()
    assert all(v > 0 for v in times.values())
    assert sum(v for k, v in times.items() if k != "step") == pytest.approx(times["step"])  # the rest completes it
    assert not any(module._forward_hooks or module._forward_pre_hooks for module in model.modules())  # hooks removed
    with pytest.raises(ValueError, match="steps must be a positive int; got 0"):
        step_times(model, src, tgt, steps=0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: encoder_layer_flops(0, 8, 8, 1), "T must be a positive int; got 0"),
        (lambda: encoder_layer_flops(4, 10, 8, 3), "d_model must be divisible by n_heads; got d_model=10, n_heads=3"),
        (lambda: score_bytes(1, 1, 4, -1), "T_k must be a positive int; got -1"),
        (lambda: crossover_length(64, 2.5), "d_ff must be a positive int; got 2.5"),
    ],
)
def test_bad_sizes_are_rejected_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()


def test_loglog_figure_labels_ticks_short_and_marks_the_crossover():
    fig = loglog_figure(
        [256, 1024, 4096],
        {"a": [1e3, 1e5, 1e7], "ref": [1, 2, 3]},
        "T",
        "FLOPs",
        "Cost",
        dashed=["ref"],
        marker=(1024, "here"),
    )
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    assert list(fig.layout.xaxis.ticktext) == ["256", "1k", "4k"]
    assert fig.data[1].line.dash == "dash" and fig.layout.title.text == "Cost"
    assert list(fig.layout.yaxis.tickvals) == [10.0**e for e in range(0, 8)]
    in_bytes = loglog_figure([1, 2], {"a": [2**10, 2**21]}, "T", "bytes", "t", y_tick_base=16)
    assert list(in_bytes.layout.yaxis.tickvals) == [16.0**e for e in range(2, 7)]
    with pytest.raises(ValueError, match="len\\(x\\) = 3"):
        loglog_figure([1, 2, 3], {"a": [1, 2]}, "T", "y", "t")
    assert short_number(2048) == "2k" and short_number(3000) == "3k" and short_number(3e6) == "3M"
    assert short_number(12) == "12" and short_number(1e12) == "1T"


def test_breakdown_figure_has_a_menu_only_for_several_models_and_labels_every_bar():
    one = {"m": {"FLOPs": {"a": 0.75, "b": 0.25}, "time": {"a": 0.5, "b": 0.2, "rest": 0.3}}}
    fig = breakdown_figure(one, "Step")
    assert not fig.layout.updatemenus  # no menu with a single entry
    assert [list(trace.text) for trace in fig.data] == [["75%", "25%", "0%"], ["50%", "20%", "30%"]]
    assert all(trace.error_x.array is None for trace in fig.data)  # no error bars to strike the labels through
    two = breakdown_figure({**one, "n": one["m"]}, "Step")
    assert [b.label for b in two.layout.updatemenus[0].buttons] == ["m", "n"]
    with pytest.raises(ValueError, match="shares"):
        breakdown_figure({}, "Step")
