"""Looking inside a model: bertviz adapter, all-heads grid, attention-over-training animation, head ablation."""

import json
import re
from pathlib import Path

import pytest
import torch
from bertviz_drawing import DRAWINGS, drawing_defects
from conftest import small_model

from transformer.attention import scaled_dot_product_attention
from transformer.decoding import greedy_decode
from transformer.tokens import BOS_ID, EOS_ID
from transformer.train.config import RunConfig, TrainConfig
from transformer.train.recipes import train_task
from transformer.train.tasks import TaskConfig, make_batch, task_target, token_label
from transformer_book.ablation import (
    KINDS,
    ablate_heads,
    ablation_study,
    aligned_weight,
    attention_modules,
    head_ablation,
    head_means,
    mean_ablate_heads,
)
from transformer_book.viz import inspect as vi
from transformer_book.viz import record
from transformer_book.viz.record import RECORD_ENV
from transformer_book.viz.render import BOOK_ENV

ROOT = Path(__file__).resolve().parents[2]

SRC = torch.tensor([[5, 7, 5, 9, 4], [8, 3, 6, 0, 0]])  # (B, S): row 1 padded
TGT = torch.tensor([[1, 5, 7, 5], [1, 8, 0, 0]])  # (B, T): row 1 padded
SRC_TOKENS = [["5", "7", "5", "9", "4"], ["<b>", "<script>alert(1)</script>", "6"]]
TGT_TOKENS = [["<s>", "5", "7", "5"], ["<s>", "8"]]


@pytest.fixture
def model():
    return small_model()


def examples(model, items=(0, 1)) -> list[vi.AttentionExample]:
    maps = model.attention_maps(SRC, TGT)
    return [vi.AttentionExample.from_maps(maps, SRC_TOKENS[i], TGT_TOKENS[i], item=i, name=f"ex{i}") for i in items]


# ----------------------------------------------------------------------------------------------------------------
# bertviz


@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_bertviz_accepts_the_package_maps_for_all_three_attention_types(model, view):
    bertviz = pytest.importorskip("bertviz")
    args = vi.bertviz_arguments(model.attention_maps(SRC, TGT), SRC_TOKENS[0], TGT_TOKENS[0])
    page = getattr(bertviz, view)(**args, html_action="return").data
    params = json.loads(page.split("const params = ")[1].split("; // HACK")[0])
    shown = {d["name"]: d for d in params["attention"]}
    assert set(shown) == {"Encoder", "Decoder", "Cross"}
    assert shown["Cross"]["left_text"] == TGT_TOKENS[0] and shown["Cross"]["right_text"] == SRC_TOKENS[0]
    n_layers, n_heads = model.config.n_encoder_layers, model.config.n_heads
    assert len(shown["Encoder"]["attn"]) == n_layers and len(shown["Encoder"]["attn"][0]) == n_heads


def test_bertviz_arguments_are_one_item_with_padding_trimmed_and_equal_the_unpadded_run(model):
    args = vi.bertviz_arguments(model.attention_maps(SRC, TGT), SRC_TOKENS[1], TGT_TOKENS[1], item=1)
    alone = model.attention_maps(SRC[1:, :3], TGT[1:, :2])  # the same pair without its padding
    names = {"encoder": "encoder_attention", "decoder": "decoder_attention", "cross": "cross_attention"}
    for kind, name in names.items():
        assert len(args[name]) == len(alone[kind])
        for ours, reference in zip(args[name], alone[kind], strict=True):
            assert ours.shape == reference.shape  # (1, H, T_q, T_k) with the real lengths
            torch.testing.assert_close(ours.float(), reference, atol=1e-3, rtol=0)  # rounded to 3 decimals
    assert args["encoder_tokens"] == SRC_TOKENS[1] and args["decoder_tokens"] == TGT_TOKENS[1]


def test_fit_width_narrows_the_model_views_thumbnails_and_zooms_it_into_the_column(model):
    bertviz = pytest.importorskip("bertviz")
    args = vi.bertviz_arguments(model.attention_maps(SRC, TGT), SRC_TOKENS[0], TGT_TOKENS[0])
    view = bertviz.model_view(**args, html_action="return")
    drawn = 38 + vi.BERTVIZ_THUMBNAIL_WIDTH * model.config.n_heads  # 4 heads: 478 px instead of bertviz's 970
    fitted = vi.fit_width(view, width=drawn // 4).data
    assert fitted.startswith(
        f'<div class="bertviz-frame"><div class="bertviz-fit" data-width="{drawn}" style="zoom: 0.249">'
    )
    assert f"const DIV_WIDTH = {drawn};" in fitted and "const DIV_WIDTH = 970;" not in fitted
    assert "zoom: 1.000" in vi.fit_width(view, width=2000).data  # never enlarged


@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_accessible_bertviz_views_have_unique_ids_labelled_menus_and_a_name(model, view):
    bertviz = pytest.importorskip("bertviz")
    args = vi.bertviz_arguments(model.attention_maps(SRC, TGT), SRC_TOKENS[0], TGT_TOKENS[0])
    pages = [vi.accessible(getattr(bertviz, view)(**args, html_action="return")).data for _ in range(2)]
    ids = [re.findall(r"""id=["']([\w-]+)["']""", page) for page in pages]
    assert set(ids[0]).isdisjoint(ids[1]), "two views on one page share ids"
    for page, (root, *others) in zip(pages, ids, strict=True):
        assert page.startswith('<div class="bertviz-view" role="figure" aria-label="bertviz ')
        assert all(other.startswith(f"{root}-") for other in others)  # layer, filter, vis: the view's own
        menus = re.findall(r"<label>(\w+): <select id=", page)
        assert menus == (["Layer", "Attention"] if view == "head_view" else ["Attention"])
        for part in {"layer", "filter", "vis"} & {other.rsplit("-", 1)[1] for other in others}:
            assert f"#${{config.rootDivId}}-{part}" in page and f"#${{config.rootDivId}} #{part}" not in page
    assert vi.accessible(vi.HTML(pages[0])).data == pages[0]  # idempotent


@pytest.mark.parametrize("view", ["head_view", "model_view"])
@pytest.mark.parametrize(("kind", "index"), [("encoder", "0"), ("decoder", "1"), ("cross", "2")])
def test_open_on_starts_a_bertviz_view_on_the_chosen_attention_type_and_keeps_the_menu(model, view, kind, index):
    bertviz = pytest.importorskip("bertviz")
    args = vi.bertviz_arguments(model.attention_maps(SRC, TGT), SRC_TOKENS[0], TGT_TOKENS[0])
    page = vi.open_on(getattr(bertviz, view)(**args, html_action="return"), kind).data
    params = json.loads(page.split("const params = ")[1].split("; // HACK")[0])
    assert params["attention"][int(params["default_filter"])]["name"] == vi.BERTVIZ_NAMES[kind]
    assert params["default_filter"] == index
    options = re.findall(r"<option value=\"(\d)\"( selected)?>(\w+)</option>", page)
    assert [(value, name) for value, _, name in options] == [("0", "Encoder"), ("1", "Decoder"), ("2", "Cross")]
    assert [name for _, selected, name in options if selected] == [vi.BERTVIZ_NAMES[kind]]


def test_open_on_rejects_an_unknown_kind_and_a_view_without_that_type(model):
    bertviz = pytest.importorskip("bertviz")
    args = vi.bertviz_arguments(model.attention_maps(SRC, TGT), SRC_TOKENS[0], TGT_TOKENS[0], kinds=("cross",))
    view = bertviz.head_view(**args, html_action="return")  # one type: bertviz draws no Attention menu
    with pytest.raises(ValueError, match="'Cross' in its Attention menu"):
        vi.open_on(view, "cross")
    with pytest.raises(ValueError, match="kind must be one of"):
        vi.open_on(view, "self")


def chapter_views(model) -> list:
    """The views chapter 11 shows: head views opened on cross-attention, model views fitted to the column."""
    bertviz = pytest.importorskip("bertviz")
    args = vi.bertviz_arguments(model.attention_maps(SRC, TGT), SRC_TOKENS[0], TGT_TOKENS[0])
    return [
        vi.open_on(bertviz.head_view(**args, layer=1, html_action="return"), "cross"),
        vi.fit_width(bertviz.model_view(**args, display_mode="light", html_action="return")),
    ]


def shown(view, monkeypatch, static: bool = False, record: bool = False) -> dict:
    """What a kernel sends when a cell ends with ``view``: IPython's formatter, in the static build or live."""
    from IPython.core.interactiveshell import InteractiveShell

    for name, on in ((BOOK_ENV, static), (RECORD_ENV, record)):
        if on:
            monkeypatch.setenv(name, "1")
        else:
            monkeypatch.delenv(name, raising=False)
    return InteractiveShell.instance().display_formatter.format(view)[0]


def test_a_live_bertviz_view_carries_d3_and_jquery_and_loads_no_script(model, monkeypatch):
    for view in chapter_views(model):
        assert isinstance(view, vi.BertvizView)
        page = shown(view, monkeypatch)["text/html"]
        assert not re.search(r"<script[^>]*\ssrc=", page), "a live view must not load a script (RequireJS, its CDN)"
        assert page.count("</script>") == 1 and "d3js.org v5.7.0" in page and "jQuery v2.2.4" in page
        assert page == vi.self_contained(view.data) and len(page) < len(view.data) + 340_000
    with pytest.raises(ValueError, match="expected a bertviz view"):
        vi.self_contained("<div>not a view</div>")


def test_the_static_book_shows_the_view_as_bertviz_wrote_it_a_few_kilobytes(model, monkeypatch):
    """The book's pages load RequireJS, d3 and jQuery once (offline_assets.py rewrites bertviz's CDN addresses)."""
    for view in chapter_views(model):
        page = shown(view, monkeypatch, static=True)["text/html"]
        assert page == view.data and len(page) < 30_000 and "d3js.org" not in page
        assert re.search(r'<script src="https://cdnjs[^"]+/require\.min\.js"></script>', page)


def test_a_recording_run_records_the_static_books_view_beside_the_live_one(model, monkeypatch):
    for view in chapter_views(model):
        data = shown(view, monkeypatch, record=True)
        assert data["text/html"] == vi.self_contained(view.data)  # what the reader's page draws
        static = record.to_static([{"output_type": "display_data", "data": data, "metadata": {}}])
        assert [out["data"]["text/html"] for out in static] == [view.data]


@pytest.mark.parametrize(
    "page",
    [
        "",  # JupyterLab's page (and Colab's output frame): no RequireJS
        "<script>__REQUIRE__</script><script>define('jquery', [], () => 'its own');</script>",  # the classic Notebook
    ],
    ids=["without RequireJS", "with RequireJS"],
)
@pytest.mark.parametrize("later", [False, True], ids=["in the page", "inserted after its script ran"])
def test_live_bertviz_views_draw_in_a_browser_with_no_network(model, browser, page, later):  # noqa: F811
    """The live views' HTML, in a page with every request off the machine refused: each draws all its lines and leaves
    the page's globals and RequireJS alone; also where the script runs before the view is in the page (the classic
    Notebook runs an output's scripts, then inserts it)."""
    views = "".join(vi.self_contained(view.data) for view in chapter_views(model))
    requirejs = ROOT / "book" / "_vendor" / "require.js"
    if "__REQUIRE__" in page and not requirejs.is_file():
        pytest.skip("book/_vendor/require.js is fetched by `make vendor`")
    head = page.replace("__REQUIRE__", requirejs.read_text(encoding="utf-8")) if page else ""
    body = f"<div id='out'>{views}</div>"
    if later:  # every script of the output run at once, then the output put into the page
        body = f"<template id='out-later'>{views}</template>"
    context = browser.new_context()
    external, errors = [], []
    context.route("**/*", lambda route: (external.append(route.request.url), route.abort()))
    tab = context.new_page()
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        tab.set_content(f"<!doctype html><html><head>{head}</head><body>{body}</body></html>")
        if later:
            tab.evaluate(INSERT_AFTER_RUNNING)
        tab.wait_for_function("() => document.querySelectorAll('.bertviz-vis svg').length === 2", timeout=10_000)
        drawings = tab.evaluate(DRAWINGS, None)
        kept = tab.evaluate(PAGE_GLOBALS)
    finally:
        context.close()
    heads, layers = model.config.n_heads, model.config.n_encoder_layers
    assert [defect for drawing in drawings for defect in drawing_defects(drawing, heads, layers)] == []
    assert [d["kind"] for d in drawings] == ["head", "model"]
    assert drawings[0]["left"] == TGT_TOKENS[0] and drawings[0]["right"] == SRC_TOKENS[0]  # opened on cross-attention
    assert kept == {"$": "undefined", "jQuery": "undefined", "d3": "undefined", "amd": "its own" if page else None}
    assert not errors and not external


# Runs the output's scripts as the classic Notebook (jQuery's append) does, before the output is in the page.
INSERT_AFTER_RUNNING = """() => {
  const output = document.createElement('div');
  output.append(document.getElementById('out-later').content.cloneNode(true));
  output.querySelectorAll('script').forEach(script => (0, eval)(script.textContent));
  setTimeout(() => document.body.append(output), 300);
}"""
PAGE_GLOBALS = """async () => ({$: typeof window.$, jQuery: typeof window.jQuery, d3: typeof window.d3,
  amd: typeof window.require === 'function'
    ? await new Promise(done => window.require(['jquery'], done, error => done(`not loaded: ${error}`))) : null})"""


@pytest.mark.parametrize("name", ["d3.min.js", "jquery.min.js"])
def test_live_views_carry_the_d3_and_jquery_that_the_static_book_loads(name):
    """One version of each everywhere: the package's copies (package data) are scripts/vendor_assets.sh's files."""
    vendored = ROOT / "book" / "_vendor" / name
    if not vendored.is_file():
        pytest.skip("book/_vendor/ is fetched by `make vendor`")
    assert (ROOT / "transformer_book" / "viz" / "vendor" / name).read_bytes() == vendored.read_bytes()


def test_bertviz_weights_are_rounded_so_the_page_stays_small(model):
    args = vi.bertviz_arguments(model.attention_maps(SRC, TGT), SRC_TOKENS[0], TGT_TOKENS[0])
    values = torch.cat([w.flatten() for w in args["cross_attention"]])
    assert torch.equal(values, torch.round(values, decimals=3))
    assert max(len(repr(v)) for v in values.tolist()) <= 5  # "0.123", not "0.12300000339746475"


def test_from_maps_rejects_more_tokens_than_the_maps_have(model):
    maps = model.attention_maps(SRC, TGT)
    with pytest.raises(ValueError, match="do not fit"):
        vi.AttentionExample.from_maps(maps, SRC_TOKENS[0] + ["extra"], TGT_TOKENS[0])


# ----------------------------------------------------------------------------------------------------------------
# The all-heads grid


def test_grid_has_one_heatmap_per_attention_layer_and_head(model):
    fig = vi.attention_grid(examples(model))
    c = model.config
    assert len(fig.data) == (c.n_encoder_layers + 2 * c.n_decoder_layers) * c.n_heads
    assert all(trace.type == "heatmap" for trace in fig.data)
    assert fig.layout.width is None  # autosize: the book's column decides, nothing is clipped


def test_grid_labels_are_html_escaped(model):
    fig = vi.attention_grid(examples(model))
    labels = json.dumps(fig.to_plotly_json()["layout"]["updatemenus"]) + json.dumps([list(t.x) for t in fig.data])
    assert "&lt;script&gt;" in labels and "&lt;b&gt;" in labels
    assert "<script>" not in labels and "<b>" not in labels


def test_grid_repeated_tokens_keep_their_own_rows(model):
    fig = vi.attention_grid(examples(model, items=(0,)))
    encoder_trace = fig.data[0]
    assert len(set(encoder_trace.x)) == len(SRC_TOKENS[0])  # "5" twice, two columns
    assert [label.replace("\u200b", "") for label in encoder_trace.x] == SRC_TOKENS[0]


def test_grid_type_picker_shows_exactly_one_attention_type(model):
    fig = vi.attention_grid(examples(model))
    type_menu = fig.layout.updatemenus[0]
    assert [b.label for b in type_menu.buttons] == [vi.KIND_TITLES[k] for k in KINDS]
    per_layer = model.config.n_heads
    kinds = [kind for kind in KINDS for _ in range(2 * per_layer)]  # 2 layers of each type
    for button, kind in zip(type_menu.buttons, KINDS, strict=True):
        visible = button.args[0]["visible"]
        assert visible == [k == kind for k in kinds]
    assert [t.visible for t in fig.data] == [k == "encoder" for k in kinds]  # starts on the encoder


def test_grid_example_picker_replaces_every_trace_with_that_example(model):
    exs = examples(model)
    fig = vi.attention_grid(exs)
    example_menu = fig.layout.updatemenus[1]
    assert [b.label for b in example_menu.buttons] == ["ex0", "ex1"]
    update = example_menu.buttons[1].args[0]
    n = len(fig.data)
    assert len(update["x"]) == len(update["y"]) == len(update["z"]) == n
    last_cross = n - 1  # cross-attention, last layer, last head: keys are the source, queries the target
    keys = [s.replace("\u200b", "") for s in update["x"][last_cross]]
    assert keys == ["&lt;b&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;", "6"]
    assert len(update["y"][last_cross]) == len(TGT_TOKENS[1])
    expected = exs[1].maps["cross"][-1][-1]  # (T_q, T_k)
    torch.testing.assert_close(
        torch.tensor(update["z"][last_cross], dtype=torch.float64), expected.double(), atol=5e-3, rtol=0
    )
    assert "visible" not in update  # the two pickers change different attributes, so they combine


def test_grid_with_one_example_has_only_the_type_picker(model):
    fig = vi.attention_grid(examples(model, items=(0,)))
    assert len(fig.layout.updatemenus) == 1


# ----------------------------------------------------------------------------------------------------------------
# Attention over training


def test_animation_has_one_frame_per_snapshot(model):
    snapshots = examples(model, items=(0,)) * 4
    steps = [0, 10, 50, 200]
    fig = vi.attention_animation(snapshots, steps, kind="cross")
    assert [frame.name for frame in fig.frames] == ["0", "10", "50", "200"]
    assert [step.label for step in fig.layout.sliders[0].steps] == ["0", "10", "50", "200"]
    n_cells = model.config.n_decoder_layers * model.config.n_heads
    assert all(len(frame.data) == n_cells for frame in fig.frames)
    assert len(fig.data) == n_cells


def test_animation_needs_one_step_per_snapshot(model):
    with pytest.raises(ValueError, match="one step per snapshot"):
        vi.attention_animation(examples(model, items=(0,)), [0, 1])


def test_recorder_snapshots_the_maps_after_the_asked_numbers_of_updates(model):
    symbols = [5, 7, 9]
    src = torch.tensor([symbols])
    batch = make_batch(src, task_target("copy", src, torch.tensor([3])))
    before = model.attention_maps(batch.src, batch.tgt_in)
    data = TaskConfig("copy", vocab_size=13, max_seq_len=4, eval_size=2)
    config = TrainConfig(steps=3, batch_size=4, eval_every=100, warmup=1)
    with vi.AttentionRecorder(model, symbols, batch.tgt_in[0].tolist(), steps=[0, 1, 3]) as recorder:
        train_task(data, config, RunConfig(device="cpu"), model=model, progress=False)
    assert recorder.steps == [0, 1, 3]
    assert len(model._forward_pre_hooks) == 0  # the hook is gone after the block
    torch.testing.assert_close(recorder.examples[0].maps["cross"][0], before["cross"][0][0])  # untrained
    after = model.attention_maps(batch.src, batch.tgt_in)
    torch.testing.assert_close(recorder.examples[-1].maps["cross"][0], after["cross"][0][0])  # trained
    assert not torch.allclose(recorder.examples[0].maps["cross"][0], recorder.examples[-1].maps["cross"][0])
    assert recorder.examples[0].tgt_tokens[0] == "<s>"


# ----------------------------------------------------------------------------------------------------------------
# Head ablation


def test_removing_all_heads_of_a_layer_changes_the_output_and_removing_none_does_not(model):
    reference = model(SRC, TGT)
    for kind in KINDS:
        with ablate_heads(model, {(kind, 0): []}):
            torch.testing.assert_close(model(SRC, TGT), reference, atol=0, rtol=0)
        with ablate_heads(model, {(kind, 0): range(model.config.n_heads)}):
            assert not torch.allclose(model(SRC, TGT), reference, atol=1e-4)


def test_silencing_a_head_equals_zeroing_its_columns_of_the_output_projection(model):
    module = attention_modules(model)[("cross", 1)]
    d_k = module.d_k
    with ablate_heads(model, {("cross", 1): [2]}):
        ablated = model(SRC, TGT)
    with torch.no_grad():
        module.out_proj.weight[:, 2 * d_k : 3 * d_k] = 0.0  # what head 2 contributes to the projection
    torch.testing.assert_close(ablated, model(SRC, TGT))


def test_ablation_context_restores_the_head_masks_even_after_an_error(model):
    module = attention_modules(model)[("encoder", 1)]
    module.head_mask = torch.tensor([1.0, 0.0, 1.0, 1.0])  # a head already switched off by the caller
    with pytest.raises(RuntimeError, match="boom"), ablate_heads(model, {("encoder", 1): [3], ("cross", 0): [0]}):
        assert module.head_mask.tolist() == [1.0, 0.0, 1.0, 0.0]  # combined with the existing mask
        assert attention_modules(model)[("cross", 0)].head_mask.tolist() == [0.0, 1.0, 1.0, 1.0]
        raise RuntimeError("boom")
    assert module.head_mask.tolist() == [1.0, 0.0, 1.0, 1.0]
    assert attention_modules(model)[("cross", 0)].head_mask is None


def test_ablation_rejects_unknown_attention_and_head(model):
    with pytest.raises(KeyError, match="no attention"), ablate_heads(model, {("cross", 5): [0]}):
        pass
    with pytest.raises(IndexError, match="head indices"), ablate_heads(model, {("cross", 0): [4]}):
        pass
    assert all(m.head_mask is None for m in attention_modules(model).values())


def test_ablation_study_scores_every_head_and_every_layer_and_restores_the_model(model):
    seen = []

    def score(m):
        masks = [m.head_mask for m in attention_modules(m).values() if m.head_mask is not None]
        seen.append(masks)
        return 1.0 - 0.1 * sum(float((1 - mask).sum()) for mask in masks)

    baseline, results = ablation_study(model, score)
    H, n_attentions = model.config.n_heads, len(attention_modules(model))
    assert baseline == 1.0 and seen[0] == []
    assert len(results) == n_attentions * (H + 1)
    assert [r.heads for r in results[: H + 1]] == [(0,), (1,), (2,), (3,), (0, 1, 2, 3)]
    assert [round(r.score, 6) for r in results[: H + 1]] == [0.9, 0.9, 0.9, 0.9, 0.6]
    assert results[0].label == "encoder L0 H0" and results[H].label == "encoder L0 (all heads)"
    assert all(m.head_mask is None for m in attention_modules(model).values())


def test_head_ablation_measures_exact_match_with_greedy_decoding():
    model = small_model(src_vocab_size=13, tgt_vocab_size=13, n_encoder_layers=1, n_decoder_layers=1, n_heads=2)
    baseline, results = head_ablation(model, "copy", n=8, max_seq_len=4)
    assert 0.0 <= baseline <= 1.0 and len(results) == 3 * 3
    assert all(0.0 <= r.score <= 1.0 and r.score * 8 == int(r.score * 8) for r in results)


BARE_TGT = torch.tensor([[5, 7, 5], [8, 0, 0]])  # (B, T) target symbols: make_batch adds BOS and EOS; row 1 padded


def test_head_means_are_each_heads_attention_output_averaged_over_the_real_positions(model):
    batch = make_batch(SRC, BARE_TGT)
    module = attention_modules(model)[("encoder", 1)]
    seen = {}

    def keep_query(_, args):
        seen["x"] = args[0]  # (B, S, d_model): what the layer's self-attention reads

    handle = module.register_forward_pre_hook(keep_query)
    means = head_means(model, batch)
    handle.remove()
    with torch.no_grad():
        q, k, v = (module.split_heads(t) for t in module.in_proj(seen["x"]).chunk(3, dim=-1))  # (B, H, S, d_k)
        out, _ = scaled_dot_product_attention(q, k, v, batch.src_mask)  # (B, H, S, d_k)
    real = batch.src != 0  # (B, S): 5 + 3 positions
    by_hand = torch.stack([out[:, h][real].mean(dim=0) for h in range(module.n_heads)])  # (H, d_k)
    torch.testing.assert_close(means[("encoder", 1)], by_hand)


def test_head_means_leave_the_padding_out(model):
    both = head_means(model, make_batch(SRC, BARE_TGT))
    first = head_means(model, make_batch(SRC[:1], BARE_TGT[:1]))
    second = head_means(model, make_batch(SRC[1:, :3], BARE_TGT[1:, :1]))  # row 1 without its padding
    assert set(both) == set(attention_modules(model))
    for (kind, layer), mean in both.items():
        n_first, n_second = (5, 3) if kind == "encoder" else (4, 2)  # real queries: source tokens, or BOS + target
        pooled = (n_first * first[kind, layer] + n_second * second[kind, layer]) / (n_first + n_second)
        torch.testing.assert_close(mean, pooled)


def test_mean_ablation_equals_zeroing_the_head_and_adding_its_mean_through_the_output_projection(model):
    means = head_means(model, make_batch(SRC, BARE_TGT))
    reference = model(SRC, TGT)
    with mean_ablate_heads(model, {("cross", 1): [2]}, means):
        replaced = model(SRC, TGT)
    torch.testing.assert_close(model(SRC, TGT), reference, atol=0, rtol=0)  # the hook is gone after the block
    assert not torch.allclose(replaced, reference, atol=1e-4)
    module = attention_modules(model)[("cross", 1)]
    d_k = module.d_k
    with torch.no_grad():  # head 2's mean, through its columns of W^O, becomes a constant of the projection
        module.out_proj.bias += module.out_proj.weight[:, 2 * d_k : 3 * d_k] @ means[("cross", 1)][2]
    with ablate_heads(model, {("cross", 1): [2]}):
        torch.testing.assert_close(replaced, model(SRC, TGT))


def test_with_every_cross_head_mean_ablated_greedy_decoding_writes_the_same_for_every_source(model):
    means = head_means(model, make_batch(SRC, BARE_TGT))
    every = {("cross", i): range(model.config.n_heads) for i in range(model.config.n_decoder_layers)}
    sources = torch.tensor([[5, 7, 5, 9, 4], [8, 3, 6, 2, 2], [16, 15, 14, 13, 12]])  # (B, S)
    with mean_ablate_heads(model, every, means):  # the source reaches the decoder only through cross-attention
        out = greedy_decode(model, sources, max_new_tokens=6)  # cached, one position per step
    assert (out == out[:1]).all()
    assert not torch.allclose(model(sources, out)[0], model(sources, out)[2], atol=1e-4)  # intact, it reads them


def test_mean_ablation_rejects_wrong_means_and_heads_and_restores_the_model_after_an_error(model):
    means = head_means(model, make_batch(SRC, BARE_TGT))
    reference = model(SRC, TGT)
    H, d_k = model.config.n_heads, attention_modules(model)[("cross", 0)].d_k
    with pytest.raises(ValueError, match=rf"means\[\('cross', 0\)\] must be \({H}, {d_k}\).*got \(2, {d_k}\)"):
        with mean_ablate_heads(model, {("cross", 0): [0]}, {("cross", 0): means[("cross", 0)][:2]}):
            pass
    with pytest.raises(ValueError, match="got None"), mean_ablate_heads(model, {("cross", 0): [0]}, {}):
        pass
    with pytest.raises(KeyError, match="no attention"), mean_ablate_heads(model, {("cross", 5): [0]}, means):
        pass
    with pytest.raises(IndexError, match="head indices"), mean_ablate_heads(model, {("cross", 0): [H]}, means):
        pass
    with pytest.raises(RuntimeError, match="boom"), mean_ablate_heads(model, {("cross", 1): [0, 1]}, means):
        raise RuntimeError("boom")
    torch.testing.assert_close(model(SRC, TGT), reference, atol=0, rtol=0)


def test_ablation_figure_has_one_panel_per_model_with_a_column_per_head_and_all():
    results = [
        vi.AblationResult(kind, layer, heads, 0.5)
        for kind in KINDS
        for layer in range(2)
        for heads in [(0,), (1,), (0, 1)]
    ]
    fig = vi.ablation_figure({"copy": (1.0, results), "reverse": (0.9, results)})
    assert len(fig.data) == 2
    assert list(fig.data[0].x) == ["H0", "H1", "all"] and len(fig.data[0].y) == 6
    assert "intact: 0.90" in fig.layout.annotations[1].text
    assert fig.layout.width is None


def test_aligned_weight_is_one_on_the_expected_key_and_one_over_n_when_uniform():
    expected = torch.tensor([[2, 1, 0]])  # (B, T_q): the reversal of 3 keys
    one_hot = torch.nn.functional.one_hot(expected, 3).float()[:, None].expand(1, 2, 3, 3)  # (B, H, T_q, T_k)
    uniform = torch.full((1, 2, 3, 3), 1 / 3)
    valid = torch.tensor([[True, True, True]])
    torch.testing.assert_close(aligned_weight(one_hot, expected, valid), torch.ones(2))
    torch.testing.assert_close(aligned_weight(uniform, expected, valid), torch.full((2,), 1 / 3))
    wrong_last = one_hot.clone()
    wrong_last[..., 2, :] = torch.tensor([0.0, 0.0, 1.0])  # the last query looks elsewhere...
    torch.testing.assert_close(aligned_weight(wrong_last, expected, torch.tensor([[True, True, False]])), torch.ones(2))


# ----------------------------------------------------------------------------------------------------------------
# Live explorer helpers


def test_decoded_example_feeds_the_decoder_its_own_output(model):
    example = vi.decoded_example(model, [5, 7, 9], name="x")
    output = greedy_decode(model, torch.tensor([[5, 7, 9]]), max_new_tokens=5)[0].tolist()
    output = output[: output.index(EOS_ID)] if EOS_ID in output else output
    assert example.src_tokens == ["5", "7", "9"]
    assert example.tgt_tokens == [token_label(i) for i in [BOS_ID, *output]]
    T = len(example.tgt_tokens)
    assert example.maps["cross"][0].shape == (model.config.n_heads, T, 3)
    assert example.maps["decoder"][0].shape == (model.config.n_heads, T, T)


def test_parse_symbols_accepts_task_symbols_only():
    assert vi.parse_symbols("3 5, 12", vocab_size=13) == [3, 5, 12]
    for bad in ("", "3 x", "2 5", "13"):
        with pytest.raises(ValueError, match="symbol|numbers"):
            vi.parse_symbols(bad, vocab_size=13)


def test_source_alignment_reads_where_each_task_takes_its_symbols_from(model):
    """Force every cross-attention head onto the diagonal (queries = keys = position only): copy scores 1, reverse
    scores only where the two alignments meet, sort where a symbol is already in its sorted place."""
    from transformer_book.ablation import source_alignment

    def diagonal_maps(src, tgt, src_mask=None, tgt_mask=None):
        B, S, T = src.size(0), src.size(1), tgt.size(1)
        eye = torch.eye(T, S)[None, None].expand(B, model.config.n_heads, T, S)  # (B, H, T, S)
        return {"cross": [eye] * model.config.n_decoder_layers}

    model.attention_maps = diagonal_maps
    copy = source_alignment(model, "copy", n=64)
    reverse = source_alignment(model, "reverse", n=64)
    assert copy.shape == (model.config.n_decoder_layers, model.config.n_heads)
    torch.testing.assert_close(copy, torch.ones_like(copy))
    assert float(reverse.max()) < 0.5  # only the middle token of odd-length sequences is on both diagonals
    assert 0 < float(source_alignment(model, "sort", n=64).max()) < 0.5
    with pytest.raises(ValueError, match="task must be one of"):
        source_alignment(model, "shuffle")


def test_attention_sharpness_is_one_for_one_hot_maps_and_one_over_k_for_uniform(model):
    from transformer_book.ablation import attention_sharpness

    def maps(src, tgt, src_mask=None, tgt_mask=None):
        B, S, T, H = src.size(0), src.size(1), tgt.size(1), model.config.n_heads
        one_hot = torch.eye(T, S)[None, None].expand(B, H, T, S)
        return {
            "encoder": [torch.full((B, H, S, S), 1 / S)],
            "decoder": [torch.eye(T)[None, None].expand(B, H, T, T)],
            "cross": [one_hot, torch.full((B, H, T, S), 0.25)],
        }

    model.attention_maps = maps
    sharp = attention_sharpness(model, "copy", n=32, max_seq_len=6)
    assert sharp["cross"].shape == (2, model.config.n_heads)
    torch.testing.assert_close(sharp["decoder"], torch.ones(1, model.config.n_heads))
    torch.testing.assert_close(sharp["cross"][1], torch.full((model.config.n_heads,), 0.25))
    assert float(sharp["encoder"].max()) < 1.0


def test_explorer_builds_and_redraws_for_new_input_and_model():
    pytest.importorskip("ipywidgets")
    model = small_model(src_vocab_size=13, tgt_vocab_size=13)
    box = vi.attention_explorer({"copy": model, "reverse": model}, text="3 4 5")
    symbols, choice = box.children[0].children
    symbols.value = "3 x"  # reported in the output, not raised
    symbols.value = " ".join(["3"] * 70)  # longer than max_positions=64: reported too
    symbols.value = "7 7 4"
    choice.value = "reverse"
    assert choice.options == ("copy", "reverse")
