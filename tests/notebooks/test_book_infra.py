"""The book's machinery without a browser: plotly renderer, live-only explorers, CDN rewriting, notebook refreshing."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import yaml
from static_book import cdn, vendor

import transformer_book.viz as viz

ROOT = Path(__file__).resolve().parents[2]
PLOTLY_JSON = "application/vnd.plotly.v1+json"


def _load(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def static_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(viz.BOOK_ENV, "1")


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(viz.BOOK_ENV, raising=False)
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)


def _figure() -> go.Figure:
    return go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2]))


def test_setup_notebook_selects_the_book_renderer_and_importing_does_not() -> None:
    import transformer_book

    pio.renderers.default = "json"
    import transformer_book.viz.attention  # noqa: F401  (an import changes nothing global)

    assert pio.renderers.default == "json"
    transformer_book.setup_notebook()
    assert pio.renderers.default == viz.RENDERER


# A stand-in for rfc3987-syntax, which jsonschema's format checkers import where it is installed: importing it leaves a
# mark, as the real one's second of building parsers would.
SLOW_IRI_PARSERS = """from pathlib import Path
Path(__file__).with_name("imported").touch()
def is_valid_syntax(rule, value):
    return True
"""
JSONSCHEMA_THEN_IRI = """import sys
{before}
import jsonschema
print("iri" in jsonschema.FormatChecker.checkers, "rfc3987_syntax" in sys.modules)
import rfc3987_syntax
"""


@pytest.mark.parametrize(
    ("before", "iri_checked"),
    [("", True), ("import transformer_book\ntransformer_book.setup_notebook()", False)],
    ids=["jsonschema alone", "after setup_notebook"],
)
def test_setup_notebook_loads_jsonschema_without_the_iri_parsers_and_leaves_them_importable(
    tmp_path: Path, before: str, iri_checked: bool
) -> None:
    """jsonschema alone imports rfc3987-syntax for its ``iri`` format (the stand-in is found and imported); after
    setup_notebook it has not, and the module still imports."""
    (tmp_path / "rfc3987_syntax").mkdir()
    (tmp_path / "rfc3987_syntax" / "__init__.py").write_text(SLOW_IRI_PARSERS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    code = JSONSCHEMA_THEN_IRI.format(before=before)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == [str(iri_checked), str(iri_checked)]
    assert (tmp_path / "rfc3987_syntax" / "imported").is_file()  # by jsonschema, or by the last line


@pytest.fixture(autouse=True)
def book_renderer() -> None:
    viz.use_book_renderer()


def test_static_build_writes_html_without_plotlyjs(static_build: None) -> None:
    bundle = _figure()._repr_mimebundle_()
    assert set(bundle) == {"text/html"}
    html = bundle["text/html"]
    assert "plotly-graph-div" in html and "Plotly.newPlot" in html
    assert len(html) < 50_000, "plotly.js must not be embedded"
    assert "https://" not in html and "<script src" not in html  # no CDN, no MathJax


def test_live_bundle_has_plotly_json_and_html_fallback(live: None) -> None:
    bundle = _figure()._repr_mimebundle_()
    assert PLOTLY_JSON in bundle and bundle[PLOTLY_JSON]["data"][0]["y"] == [3, 1, 2]
    html = bundle["text/html"]
    assert "if (window.Plotly) { draw(); return; }" in html and "Plotly.newPlot" in html
    assert len(html) < 50_000


def test_in_static_build_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("1", True), ("yes", True), ("", False), ("0", False), ("false", False)):
        monkeypatch.setenv(viz.BOOK_ENV, value)
        assert viz.in_static_build() is expected
    monkeypatch.delenv(viz.BOOK_ENV)
    assert viz.in_static_build() is False


def test_live_only_builds_the_widget_in_a_live_kernel(live: None) -> None:
    assert viz.live_only(lambda: "the widget", "Vary the temperature.") == "the widget"


def test_live_only_shows_a_note_in_the_static_book(static_build: None) -> None:
    def factory() -> None:
        raise AssertionError("the factory must not run in the static build")

    note = viz.live_only(factory, "Vary the temperature.", static=_figure())
    html = note._repr_html_()
    assert "Vary the temperature." in html and "live kernel" in html and "rocket button" in html
    assert note.static is not None


def test_rewrite_html_points_cdns_at_the_vendor_folder() -> None:
    page = (
        '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"></script>\n'
        "<script>require.config({paths: {d3: 'https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min',\n"
        "jquery: 'https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min'}});</script>\n"
        '<script integrity="sha256-x" crossorigin="anonymous" '
        'src="https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1.0.6/dist/embed-amd.js"></script>\n'
        '<script charset="utf-8" src="https://cdn.plot.ly/plotly-4.1.1.min.js"></script>\n'
        '<a href="https://github.com/transformer-interactive/transformer-interactive">repository</a>'
    )
    out = cdn.rewrite_html(page, "../_static/vendor")
    assert '<script src="../_static/vendor/require.js"></script>' in out
    assert "d3: '../_static/vendor/d3.min'" in out and "jquery: '../_static/vendor/jquery.min'" in out
    assert '<script src="../_static/vendor/html-manager/embed-amd.js"></script>' in out  # SRI pins dropped
    assert 'src="../_static/vendor/plotly.min.js"' in out
    assert 'href="https://github.com/transformer-interactive/transformer-interactive"' in out  # links stay


def test_vendor_url_is_relative_to_each_page(tmp_path: Path) -> None:
    assert vendor.vendor_url_for(tmp_path / "index.html", tmp_path) == "_static/vendor"
    assert vendor.vendor_url_for(tmp_path / "book" / "01.html", tmp_path) == "../_static/vendor"


def test_a_markdown_table_left_as_text_is_found_in_a_page_and_code_is_not() -> None:
    check = _load(ROOT / "book" / "_ext" / "computed_markdown.py", "computed_markdown")
    # chapter 7's table as the pages showed it: a paragraph, the delimiter row's hyphens made em dashes
    shown = (
        "<p>| layout | exact match after 100 steps, seeds 0-2 | mean |\n| \u2014 | \u2014 | \u2014 |\n| pre-norm</p>"
    )
    assert check.tables_left_as_text(shown) == ["| \u2014 | \u2014 | \u2014 |"]
    assert check.tables_left_as_text("<p>|&#8212;|&#8212;|</p><p>| --- |</p>") == ["|\u2014|\u2014|", "| --- |"]
    code = '<pre>rows = ["| a | b |", "|---|---|"]</pre><p>a | b, <code>|---|---|</code></p><table><tr><td>|</td></tr></table>'
    assert check.tables_left_as_text(code) == []


def test_both_editions_render_markdown_outputs_with_tables_and_math_and_check_for_tables_left_as_text() -> None:
    """myst-nb's default parser for a cell's Markdown output, CommonMark, has no tables: the books name MyST's."""
    for config in (ROOT / "_config.yml", ROOT / "zh" / "_config.yml"):
        sphinx = yaml.safe_load(config.read_text())["sphinx"]
        assert sphinx["config"]["nb_render_markdown_format"] == "myst", config
        assert "computed_markdown" in sphinx["local_extensions"], config


def test_refresh_keeps_outputs_of_checked_cells_only() -> None:
    refresh = _load(ROOT / "scripts" / "refresh_notebooks.py", "refresh_notebooks")
    checked = nbformat.v4.new_code_cell("print(1)", execution_count=2, metadata={"tags": ["nbval-check-output"]})
    checked.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text) for text in ("1", "\n")]
    other = nbformat.v4.new_code_cell("fig", execution_count=3, metadata={"execution": {"iopub.status.idle": "x"}})
    other.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<div></div>"})]
    nb = nbformat.v4.new_notebook(cells=[checked, other], metadata={"widgets": {"state": {}}})
    assert refresh.strip_outputs(nb) == (1, 1)
    assert checked.outputs == [nbformat.v4.new_output("stream", name="stdout", text="1\n")]  # one print, one output
    assert checked.execution_count == 2
    assert other.outputs == [] and other.execution_count is None and "execution" not in other.metadata
    assert "widgets" not in nb.metadata


def test_refresh_records_output_widget_contents_as_nbval_sees_them_and_does_not_stall(tmp_path: Path) -> None:
    """What a cell shows inside an ipywidgets Output widget stays among its outputs (nbval compares those), and the
    kernel's reply to a cell is never left unseen: with nbclient's stand-in for the widget, a reply that arrived while
    the stand-in wrote to the kernel waited out the cell's timeout (here none: the run would hang)."""
    capture = "out = w.Output()\ndisplay(out)\nwith out:\n    for i in range(30):\n        display(i)"
    cells = [nbformat.v4.new_code_cell("import ipywidgets as w\nfrom IPython.display import display")]
    cells += [nbformat.v4.new_code_cell(capture) for _ in range(20)]
    path = tmp_path / "widgets.ipynb"
    kernelspec = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": kernelspec}), path)
    code = (
        "import sys, nbformat, pathlib, refresh_notebooks as r; nb = nbformat.read(sys.argv[1], 4); "
        "r.execute(nb, pathlib.Path(sys.argv[1]).parent, None); nbformat.write(nb, sys.argv[1])"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(path)], cwd=ROOT / "scripts", timeout=120, check=True, capture_output=True
    )
    last = nbformat.read(path, as_version=4).cells[-1]
    shown = [o["data"]["text/plain"] for o in last.outputs if o["output_type"] == "display_data"]
    assert shown == ["Output()"] + [str(i) for i in range(30)]  # the widget, then what it captured


def test_toc_lists_existing_notebooks() -> None:
    refresh = _load(ROOT / "scripts" / "refresh_notebooks.py", "refresh_notebooks")
    notebooks = refresh.toc_notebooks()
    assert notebooks[0].name == "01_introduction.ipynb"
    assert all(path.is_file() for path in notebooks), [str(p) for p in notebooks if not p.is_file()]


def test_every_notebook_cell_has_a_unique_id() -> None:
    """nbformat 4.5 cells carry ids (nbformat warns without one, and will refuse); jupyter-cache and nbval key on them."""
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        ids = [
            cell.get("id") for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
        ]  # as stored: nbformat adds ids
        assert None not in ids, f"{path.name}: cells {[i for i, x in enumerate(ids) if x is None]} have no id"
        assert len(set(ids)) == len(ids), f"{path.name}: repeated cell ids"


def test_execute_notebooks_runs_uncached_notebooks_and_playground_ones_without_exports(tmp_path: Path) -> None:
    """scripts/execute_notebooks.py fills the build's jupyter-cache before the build: it must skip what is cached, and
    run a cached playground notebook again when its exported models are gone (the build would fail without them)."""
    from jupyter_cache import get_cache

    execute = _load(ROOT / "scripts" / "execute_notebooks.py", "execute_notebooks")
    paths = []
    for name, code in (("play", "write_playground(entries, folder)"), ("plain", "print(1)"), ("new", "print(2)")):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        paths.append(tmp_path / f"{name}.ipynb")
        nbformat.write(nb, paths[-1])
    cache = get_cache(tmp_path / "cache")
    for path in paths[:2]:
        cache.cache_notebook_file(str(path), check_validity=False)
    playground = tmp_path / "playground"
    playground.mkdir()
    (playground / "manifest.json").write_text("{}")
    records, stale = execute.stale_notebooks(cache, paths, playground)
    assert len(records) == 3 and [Path(r.uri).name for r in stale] == ["new.ipynb"]
    (playground / "manifest.json").unlink()
    _, stale = execute.stale_notebooks(cache, paths, playground)
    assert [Path(r.uri).name for r in stale] == ["play.ipynb", "new.ipynb"]


def test_importing_the_kit_loads_no_plotly_until_a_figure_is_asked_for() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import transformer_book, transformer_book.results, sys; print('plotly' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert out.strip() == "False"


def _without_ids(text: str) -> str:
    """``text`` with the random ids of plotly figures' ``<div>``s left out."""
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)


def test_to_static_puts_recorded_outputs_in_place_of_widgets_and_draws_figures_as_the_book() -> None:
    from transformer_book.viz import record

    figure = {"data": [{"type": "bar", "y": [1, 2]}], "layout": {"width": 500}, "config": {"responsive": True}}
    note = {"output_type": "display_data", "data": {"text/html": "<div>note</div>"}, "metadata": {}}
    line = {"output_type": "stream", "name": "stdout", "text": "training: 3 steps in 0.1 s\n"}
    widget = {"output_type": "display_data", "data": {record.WIDGET: {"model_id": "x"}, "text/plain": "HBox()"}}
    live = [
        {"output_type": "stream", "name": "stdout", "text": "a\n"},
        {
            "output_type": "display_data",
            "data": {PLOTLY_JSON: figure, "text/html": "<script>cdn</script>"},
            "metadata": {},
        },
        {"output_type": "stream", "name": "stdout", "text": "b\n"},
        {"output_type": "display_data", "data": {record.MIMETYPE: {"outputs": [note], "widget_follows": True}}},
        {"output_type": "stream", "name": "stdout", "text": "drawn by the explorer\n"},
        {"output_type": "execute_result", "data": widget["data"], "metadata": {}, "execution_count": 4},
        widget,  # a progress bar, then the line recorded when it closed
        {"output_type": "display_data", "data": {record.MIMETYPE: {"outputs": [line], "widget_follows": False}}},
        {"output_type": "stream", "name": "stdout", "text": "after\n"},
    ]
    static = record.to_static(live)
    assert [out["output_type"] for out in static] == ["stream", "display_data", "stream", "display_data", "stream"]
    assert static[0]["text"] == "a\n" and static[2]["text"] == "b\n"  # text stays on its side of the figure
    drawn = viz.figure_html({key: figure[key] for key in ("data", "layout")})
    assert list(static[1]["data"]) == ["text/html"] and _without_ids(static[1]["data"]["text/html"]) == _without_ids(
        drawn
    )
    assert "max-width:500px" in static[1]["data"]["text/html"] and "cdn.plot.ly" not in static[1]["data"]["text/html"]
    assert static[3] == note
    assert static[4]["text"] == line["text"] + "after\n"  # the recorded line joins the text after it


def test_a_recorded_live_run_gives_the_outputs_of_the_static_build(tmp_path: Path) -> None:
    """nbval in a live kernel with tests/nbval_record.py records, for each cell, what the static build's own execution
    shows: figures, an explorer's note (not the text it prints while built), a training run's final line."""
    from nbclient import NotebookClient

    cells = [
        "import ipywidgets as widgets\nimport plotly.graph_objects as go\nimport transformer_book\n"
        "from transformer.train import RunConfig, TaskConfig, TrainConfig, train_task\n"
        "from transformer_book.viz import live_only\n"
        "transformer_book.setup_notebook()",
        "print('before')\nfig = go.Figure(go.Scatter(x=[1, 2], y=[2, 1]))\nfig.show()\nprint('after')\nfig",
        "live_only(lambda: widgets.interactive(lambda n: print(n * 2), n=widgets.IntSlider(3)), 'Move n.', static=fig)",
        "model, history = train_task(TaskConfig(eval_size=8), TrainConfig(steps=3, eval_every=3), RunConfig(device='cpu'),\n"
        "                            progress=transformer_book.progress())\nprint(len(history.loss))",
    ]
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells], metadata={"kernelspec": kernelspec}
    )
    source = tmp_path / "book" / "chapter.ipynb"
    source.parent.mkdir()
    nbformat.write(nb, source)
    env = {key: value for key, value in os.environ.items() if key != viz.BOOK_ENV}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.nbval_kernels",
            "-p",
            "tests.nbval_record",
            "--nbval-lax",
            "--nbval-current-env",
            "-q",
            "-p",
            "no:cacheprovider",
            str(source),
        ],
        cwd=ROOT,
        env={**env, "TRANSFORMER_BOOK_RECORD": str(tmp_path / "recorded")},
        check=True,
        capture_output=True,
        timeout=300,
    )
    recorded = nbformat.read(tmp_path / "recorded" / "chapter.ipynb", as_version=4)
    static = copy.deepcopy(nb)
    os.environ[viz.BOOK_ENV] = "1"  # the kernel inherits it, as in the static build
    try:
        NotebookClient(static, timeout=300, resources={"metadata": {"path": str(source.parent)}}).execute()
    finally:
        del os.environ[viz.BOOK_ENV]

    def comparable(cell: nbformat.NotebookNode) -> str:
        """The outputs as the page shows them: adjacent text of one stream joined (the book's nb_merge_streams), the
        figures' random ids and the training line's time left out."""
        outputs: list[dict] = []
        for out in cell.outputs:
            out = {key: out.get(key) for key in ("output_type", "name", "text", "data")}
            if outputs and out["output_type"] == "stream" and outputs[-1]["name"] == out["name"]:
                outputs[-1]["text"] += out["text"]
            else:
                outputs.append(out)
        return re.sub(r"\d+\.\d s", "<time> s", _without_ids(json.dumps(outputs, sort_keys=True)))

    for number, (got, want) in enumerate(zip(recorded.cells, static.cells, strict=True)):
        assert comparable(got) == comparable(want), f"cell {number}"
        assert got.execution_count == want.execution_count == number + 1
    explorer, training = recorded.cells[2].outputs, recorded.cells[3].outputs
    assert [out.output_type for out in explorer] == ["display_data", "display_data"]  # the note, the static figure
    assert "Move n." in explorer[0].data["text/html"] and "Plotly.newPlot" in explorer[1].data["text/html"]
    assert [out.output_type for out in training] == ["stream"] and " 3 steps in " in training[0].text


def test_execute_notebooks_takes_recorded_notebooks_in_place_of_executing_them(tmp_path: Path) -> None:
    """A notebook that make nbval-reader recorded goes into the build's cache (over an earlier execution of the same
    code); a recording of other code matches nothing, and a playground notebook without its exports runs again."""
    from jupyter_cache import get_cache

    execute = _load(ROOT / "scripts" / "execute_notebooks.py", "execute_notebooks")
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}

    def notebook(code: str, shown: str) -> nbformat.NotebookNode:
        cell = nbformat.v4.new_code_cell(code, execution_count=1)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=shown)]
        return nbformat.v4.new_notebook(cells=[cell], metadata={"kernelspec": kernelspec})

    book, recorded, playground = tmp_path / "book", tmp_path / "recorded", tmp_path / "playground"
    book.mkdir(), recorded.mkdir(), playground.mkdir()
    paths = {}
    for name, code in (("same", "print(1)"), ("edited", "print(2)"), ("play", "write_playground(entries, folder)")):
        paths[name] = book / f"{name}.ipynb"
        nbformat.write(notebook(code, ""), paths[name])
    nbformat.write(notebook("print(1)", "recorded\n"), recorded / "same.ipynb")
    nbformat.write(notebook("print(2)  # before an edit", "recorded\n"), recorded / "edited.ipynb")
    nbformat.write(notebook("write_playground(entries, folder)", "recorded\n"), recorded / "play.ipynb")
    cache = get_cache(tmp_path / "cache")
    cache.cache_notebook_bundle(execute.CacheBundleIn(notebook("print(1)", "executed earlier\n"), str(paths["same"])))

    records = [cache.add_nb_to_project(str(path)) for path in paths.values()]
    assert execute.cache_recorded(cache, records, recorded, playground) == 2  # play: no exports
    _, stale = execute.stale_notebooks(cache, list(paths.values()), playground)
    assert sorted(Path(r.uri).name for r in stale) == ["edited.ipynb", "play.ipynb"]
    _, merged = cache.merge_match_into_notebook(nbformat.read(paths["same"], as_version=4))
    assert merged.cells[0].outputs[0]["text"] == "recorded\n"
    assert sorted(path.name for path in recorded.iterdir()) == ["play.ipynb"]  # taken ones are removed
