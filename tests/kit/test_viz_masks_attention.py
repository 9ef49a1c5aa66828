"""The mask and attention figures: the controls they carry switch to the states they claim, computed by the package."""

import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from transformer import causal_mask, target_mask
from transformer.attention import scaled_dot_product_attention
from transformer_book.viz import attention as va
from transformer_book.viz import masks as vm
from transformer_book.viz.controls import dropdown

TOKENS = ["<s>", "the", "cat", "&", "the", "<pad>"]


def json_size(fig: go.Figure) -> int:
    return len(fig.to_json())


def random_weights(*shape: int) -> torch.Tensor:
    return torch.softmax(torch.randn(*shape), dim=-1)


def test_token_labels_are_html_escaped_and_unique_but_read_the_same():
    labels = va.token_labels(TOKENS)
    assert labels[0] == "&lt;s&gt;" and labels[3] == "&amp;" and labels[5] == "&lt;pad&gt;"
    assert not any("<" in label for label in labels)
    assert len(set(labels)) == len(labels)  # the two "the" stay two rows
    assert labels[1].replace("\u200b", "") == labels[4].replace("\u200b", "") == "the"


def test_attention_heatmap_draws_weights_in_0_1_with_escaped_axis_labels():
    w = random_weights(6, 6)
    fig = va.attention_heatmap(w, TOKENS, TOKENS, title="t")
    (trace,) = fig.data
    assert trace.type == "heatmap" and (trace.zmin, trace.zmax) == (0, 1)
    assert list(trace.x) == va.token_labels(TOKENS) and list(trace.y) == va.token_labels(TOKENS)
    assert np.allclose(np.array(trace.z), w.numpy(), atol=1e-4)
    assert fig.layout.xaxis.title.text == "key" and fig.layout.yaxis.title.text == "query"
    assert fig.layout.template.layout.paper_bgcolor is not None and fig.layout.width <= 720
    with pytest.raises(ValueError, match="query"):
        va.attention_heatmap(w, TOKENS[:5], TOKENS)


def test_attention_heads_draws_every_head_and_a_dropdown_picks_the_group():
    G, H, T = 3, 4, 6
    w = random_weights(G, H, T, T)
    fig = va.attention_heads(w, TOKENS, TOKENS, group_names=["a", "b", "c"], group_label="layer")
    assert len(fig.data) == G * H
    assert [t.visible for t in fig.data] == [i < H for i in range(G * H)]
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["a", "b", "c"]
    for g, button in enumerate(menu.buttons):
        visible = button.args[0]["visible"]
        shown = [i for i, v in enumerate(visible) if v]
        assert shown == list(range(g * H, (g + 1) * H))
        assert all(np.allclose(np.array(fig.data[i].z), w[g, i % H].numpy(), atol=1e-4) for i in shown)
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    single = va.attention_heads(w[0], TOKENS, TOKENS)  # (H, T_q, T_k): no dropdown needed
    assert len(single.data) == H and not single.layout.updatemenus


def test_attention_picker_head_buttons_and_group_dropdown_touch_different_attributes():
    G, H, T = 2, 3, 6
    w = random_weights(G, H, T, T)
    fig = va.attention_picker(w, TOKENS, TOKENS, group_names=["no mask", "causal"], title="Weights")
    assert len(fig.data) == G and [t.visible for t in fig.data] == [True, False]
    assert fig.layout.title.text == "Weights · head 0"  # the title says which head is shown
    heads, groups = fig.layout.updatemenus
    assert heads.type == "buttons" and [b.label for b in heads.buttons] == ["head 0", "head 1", "head 2"]
    for h, button in enumerate(heads.buttons):
        update, layout, traces = button.args
        assert set(update) == {"z"} and list(traces) == list(range(G))
        assert layout == {"title.text": f"Weights · head {h}"}
        for g in range(G):
            assert np.allclose(np.array(update["z"][g]), w[g, h].numpy(), atol=1e-4)
    assert va.attention_picker(w, TOKENS, TOKENS).layout.title.text == "head 0"
    assert groups.type == "dropdown"
    assert [set(b.args[0]) for b in groups.buttons] == [{"visible"}, {"visible"}]
    assert [b.args[0]["visible"] for b in groups.buttons] == [[True, False], [False, True]]


def test_attention_picker_can_open_on_any_group_and_head():
    w = random_weights(2, 3, 6, 6)
    fig = va.attention_picker(w, TOKENS, TOKENS, group_names=["layer 0", "layer 1"], group=1, head=2)
    assert [t.visible for t in fig.data] == [False, True]
    assert np.allclose(np.array(fig.data[1].z), w[1, 2].numpy(), atol=1e-4)
    heads, groups = fig.layout.updatemenus
    assert (heads.active, groups.active) == (2, 1)
    with pytest.raises(ValueError, match="group and head must index the weights' 2 groups and 3 heads; got group=2"):
        va.attention_picker(w, TOKENS, TOKENS, group=2)


def test_attention_steps_slider_shows_three_panels_per_step_with_the_package_weights():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4), torch.randn(4, 4), torch.randn(4, 2)
    mask = torch.tensor([True, True, True, False]).expand(3, 4)
    fig = va.attention_steps(q, k, v, mask, ["a", "b", "<c>"], ["a", "b", "<c>", "<pad>"])
    (slider,) = fig.layout.sliders
    assert len(slider.steps) == 5 and len(fig.data) == 15
    for i, step in enumerate(slider.steps):
        visible = step.args[0]["visible"]
        assert [j for j, shown in enumerate(visible) if shown] == [3 * i, 3 * i + 1, 3 * i + 2]
        assert step.args[1]["title.text"].startswith(f"{i + 1}.")
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    softmax_result = fig.data[3 * 3 + 2]  # step 4, right panel
    assert np.allclose(np.array(softmax_result.z, dtype=float), weights.numpy(), atol=1e-4)
    masked_scores = fig.data[2 * 3 + 2]  # step 3, right panel: the hidden column reads "min"
    assert [row[3] for row in masked_scores.text] == ["min"] * 3
    assert "&lt;pad&gt;" in json.dumps(slider.steps[0].args[1]["xaxis3.ticktext"])
    assert len(va.attention_steps(q, k, v).layout.sliders[0].steps) == 4  # no mask, no mask step


def test_scaling_figure_has_one_slider_step_per_d_k_with_its_statistics():
    d_ks = (1, 16, 256)
    fig = va.scaling_figure(d_ks=d_ks, n_keys=8)
    (slider,) = fig.layout.sliders
    assert [s.label for s in slider.steps] == ["1", "16", "256"]
    assert len(fig.data) == 4 * len(d_ks)
    for i, step in enumerate(slider.steps):
        visible = step.args[0]["visible"]
        assert [j for j, shown in enumerate(visible) if shown] == list(range(4 * i, 4 * i + 4))
        assert f"d_k = {d_ks[i]}" in step.args[1]["title.text"]
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text and fig.layout.xaxis2.title.text
    assert json_size(fig) < 300_000


def test_mask_reasons_match_the_package_masks():
    real = 3
    tokens = torch.tensor([[5, 6, 7, 0, 0]])
    codes = vm.mask_reasons(tokens[0])
    assert np.array_equal(codes["combined"] == vm.VISIBLE, target_mask(tokens)[0, 0].numpy())
    assert np.array_equal(codes["causal"] == vm.VISIBLE, causal_mask(5)[0, 0].numpy())
    assert (codes["padding"][:, real:] == vm.PADDING).all() and (codes["padding"][:, :real] == vm.VISIBLE).all()
    assert (
        codes["combined"][0, 4] == vm.BOTH
        and codes["combined"][4, 3] == vm.PADDING
        and codes["combined"][0, 1] == vm.FUTURE
    )


def test_mask_explorer_sliders_combine_sentence_length_and_padding_length():
    max_real, max_pad = 4, 3
    fig = vm.mask_explorer(max_real=max_real, max_pad=max_pad, real=2, pad=1)
    assert len(fig.data) == 3 * max_real
    real_slider, pad_slider = fig.layout.sliders
    assert [s.label for s in real_slider.steps] == ["1", "2", "3", "4"] and real_slider.active == 1
    assert [s.label for s in pad_slider.steps] == ["0", "1", "2", "3"] and pad_slider.active == 1
    for n, step in enumerate(real_slider.steps, start=1):
        assert step.method == "restyle" and set(step.args[0]) == {"visible"}
        assert [i for i, v in enumerate(step.args[0]["visible"]) if v] == [
            3 * (n - 1),
            3 * (n - 1) + 1,
            3 * (n - 1) + 2,
        ]
    for p, step in enumerate(pad_slider.steps):
        update, traces = step.args
        assert set(update) == {"z"} and list(traces) == list(range(3 * max_real))
        for n in range(1, max_real + 1):
            expected = vm.mask_reasons([1] * n + [0] * p)
            for panel, name in enumerate(("padding", "causal", "combined")):
                assert np.array_equal(np.array(update["z"][3 * (n - 1) + panel]), expected[name])
    initial = [t for t in fig.data if t.visible]
    assert np.array_equal(np.array(initial[2].z), vm.mask_reasons([1, 1, 0])["combined"])
    assert json_size(vm.mask_explorer()) < 100_000


def test_masking_methods_compute_what_each_method_really_does():
    scores = torch.tensor([1.2, -0.3, 2.0, 0.1, -0.5, 0.8])
    visible = torch.tensor([True, True, True, True, False, False])
    fill, multiply, additive, nan_row, uniform_row, package_row = vm.masking_methods(scores, visible)
    alone = torch.softmax(scores[visible], -1).numpy()
    assert np.allclose(fill.weights[:4], alone) and (fill.weights[4:] == 0).all()
    assert np.allclose(additive.weights, fill.weights)
    assert multiply.weights[4:].sum() > 0.1 and (multiply.masked[4:] == 0).all()
    assert np.isnan(nan_row.weights).all()
    assert np.allclose(uniform_row.weights, 1 / 6)
    assert (package_row.weights == 0).all() and not package_row.visible.any()


def test_additive_minus_1e9_mask_becomes_minus_inf_in_float16_and_a_fully_hidden_row_nan():
    visible = torch.tensor([True, True, False])
    additive = torch.zeros(3).masked_fill(~visible, -1e9).half()
    assert additive[2] == float("-inf") and additive[:2].eq(0).all()
    row = torch.tensor([0.5, -1.0, 2.0]).half()
    assert torch.softmax(row + additive, dim=-1)[2] == 0  # one hidden key: still fine
    assert torch.softmax(row + torch.full((3,), -1e9).half(), dim=-1).isnan().all()  # every key hidden: NaN


def test_masking_methods_figure_dropdown_updates_all_three_panels():
    scores = torch.tensor([1.2, -0.3, 2.0, 0.1, -0.5, 0.8])
    visible = torch.tensor([True, True, True, True, False, False])
    tokens = ["I", "like", "cats", ".", "<pad>", "<pad>"]
    fig = vm.masking_methods_figure(scores, visible, tokens)
    assert len(fig.data) == 3 and all(t.type == "bar" for t in fig.data)
    assert list(fig.data[0].x) == va.token_labels(tokens) and "&lt;pad&gt;" in fig.data[0].x[4]
    (menu,) = fig.layout.updatemenus
    methods = vm.masking_methods(scores, visible)
    assert [b.label for b in menu.buttons] == [m.label for m in methods]
    for button, method in zip(menu.buttons, methods, strict=True):
        update, layout = button.args
        assert len(update["y"]) == len(update["text"]) == 3
        weights_text = update["text"][2]
        expected = ["NaN" if math.isnan(w) else f"{w:.2f}" for w in method.weights]
        assert weights_text == expected
        assert layout["title.text"] == method.description
    nan_button = menu.buttons[3]
    assert nan_button.args[0]["text"][2] == ["NaN"] * 6 and nan_button.args[0]["text"][1] == ["−inf"] * 6
    for axis in (fig.layout.yaxis, fig.layout.yaxis2, fig.layout.yaxis3, fig.layout.xaxis):
        assert axis.title.text


def test_mask_reasons_with_left_padding_leave_rows_with_no_visible_key():
    codes = vm.mask_reasons([0, 0, 4, 5])  # <pad> <pad> a b
    empty = [i for i, row in enumerate(codes["combined"]) if (row != vm.VISIBLE).all()]
    assert empty == [0, 1]
    with pytest.raises(ValueError, match="ids must hold at least one token"):
        vm.mask_reasons([])


def test_masks_figure_draws_the_three_masks_of_any_tokens_and_marks_empty_rows():
    tokens = ["<pad>", "the", "cat", "<pad>"]
    fig = vm.masks_figure(tokens)
    assert len(fig.data) == 3 and fig.data[0].y[0] == "&lt;pad&gt;"
    expected = vm.mask_reasons([0, 1, 1, 0])
    for trace, name in zip(fig.data, vm.PANELS, strict=True):
        assert np.array_equal(np.array(trace.z), expected[name])
    assert [a.text for a in fig.layout.annotations if a.text == "empty"] == ["empty"]  # only row 0 sees nothing
    assert (
        fig.data[2].customdata[0][0] == vm.REASONS[vm.PADDING] and fig.data[2].customdata[0][3] == vm.REASONS[vm.BOTH]
    )
    with pytest.raises(ValueError, match="tokens must hold at least one token"):
        vm.masks_figure([])


def test_dropdown_builds_one_menu_and_rejects_bad_arguments():
    buttons = [
        dict(label="a", method="restyle", args=[{"visible": [True, False]}]),
        dict(label="b", method="restyle", args=[{"visible": [False, True]}]),
    ]
    menu = go.layout.Updatemenu(dropdown(buttons, x=1.0, xanchor="right", active=1, name="layer", pad=dict(b=30)))
    assert menu.type == "dropdown" and menu.active == 1 and menu.name == "layer" and menu.pad.b == 30
    assert (menu.x, menu.xanchor, menu.y, menu.yanchor) == (1.0, "right", 1.0, "bottom")
    with pytest.raises(ValueError, match="at least one menu entry"):
        dropdown([])
    with pytest.raises(ValueError, match="active must index one of the 2 buttons; got 2"):
        dropdown(buttons, active=2)
    with pytest.raises(ValueError, match="xanchor must be one of .*; got 'middle'"):
        dropdown(buttons, xanchor="middle")
