"""The book's Sphinx extension (book/_ext/static_book) on a two-edition book small enough to build in seconds: pages
with a plotly figure and its menu, hidden cells, formulas, bertviz's and ipywidgets' CDN scripts, and the playground,
built by jupyter-book as ``make book`` builds the real one and published the same way (the Chinese under ``zh/`` of
the English site).

The site holds the vendored assets once (issue 42): the English site's ``_static/vendor/``, which the Chinese pages load
(``../_static/vendor/`` from ``zh/``) and the Chinese build does not copy. Every asset URL of every page resolves in
the published site, and those of the Chinese pages also where their build made them (its ``_static/vendor`` beside the
output links to the English build's copy); a Chinese build with no English build to link to fails, saying why. In
headless Chromium a Chinese page served from ``zh/`` draws its figure and typesets its formulas with no request failing
or leaving the machine. The Chinese playground page carries the Chinese of its scripts' words (``window.bookWords``),
the English page none; so does every Chinese page with a figure, of figures.js's words, and there figures.js names the
figure, its menu and bertviz's controls in Chinese (in English on the English page); the Chinese toggles of hidden
cells speak Chinese. The published site's checks run on the real one too, ``_build/html``, once ``make book`` has
built it.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import plotly.graph_objects as go
import pytest
import yaml
from chromium import PageRun
from figure_names import english_names
from static_book import playground, vendor
from static_book.figures import figure_words

from transformer_book.i18n import catalogue
from transformer_book.playground import playground_html
from transformer_book.viz.render import figure_html

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"  # the real site, once `make book` has built it
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
# What figures.js makes keyboard stops of in a bertviz view's SVG (bertviz draws them with d3): a head view's square
# of head 0, in its colour (shown), and a model view's thumbnail (transparent until hovered) of layer 0, head 0.
BERTVIZ_CONTROLS = (
    '<div class="bertviz-vis"><svg width="120" height="40"><g><rect x="0" y="0" width="20" height="20" '
    'fill="#1f77b4"></rect><rect x="40" y="0" width="60" height="30" style="opacity: 0"></rect></g></svg></div>'
)
# What the outputs of a chapter carry that the build points at the vendored copy: bertviz's RequireJS, d3 and jQuery,
# ipywidgets' embed manager and plotly.js, each from its CDN (and a bertviz view's controls).
CDN_SCRIPTS = """<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"
 integrity="sha512-x" crossorigin="anonymous"></script>
<div id="bertviz-1" class="bertviz-view">BERTVIZ_CONTROLS</div>
<script>require.config({paths: {d3: 'https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min',
 jquery: 'https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min'}});</script>
<script src="https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1.0.0/dist/embed-amd.js"></script>
<script src="https://cdn.plot.ly/plotly-2.35.2.min.js"></script>""".replace("BERTVIZ_CONTROLS", BERTVIZ_CONTROLS)
WIDGET_STATE = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2, "version_minor": 0}}


def _figure() -> str:
    fig = go.Figure([go.Scatter(x=[1, 2, 3], y=[3, 1, 2]), go.Bar(x=[1, 2], y=[2, 1], visible=False)])
    buttons = [
        dict(label="line", method="update", args=[{"visible": [True, False]}]),
        dict(label="bars", method="update", args=[{"visible": [False, True]}]),
    ]
    # a menu without a name: figures.js names it
    fig.update_layout(title="A figure with a menu", height=400, updatemenus=[dict(buttons=buttons)])
    return figure_html(fig)


def _notebook(title: str, zh: bool, cells: list) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(title), *cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if zh:
        nb.metadata["transformer_book"] = {"language": "zh"}
    return nb


def _cell(source: str, html: str | None = None, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    outputs = [nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": "<HTML>"})] if html else []
    cell = nbformat.v4.new_code_cell(source, outputs=outputs, execution_count=1)
    cell.metadata["tags"] = list(tags)
    return cell


def write_edition(folder: Path, zh: bool) -> None:
    """One edition of the small book: its two pages (and the Chinese glossary), its table of contents, and the real
    edition's configuration with the notebooks' outputs taken as they are."""
    (folder / "book").mkdir(parents=True)
    first = _notebook(
        "# 小书\n\n公式 $x^2$。\n\n$$\\sum_i x_i$$" if zh else "# A small book\n\nA formula $x^2$.\n\n$$\\sum_i x_i$$",
        zh,
        [_cell("fig", _figure(), ("hide-input",)), _cell("x = 1", tags=("hide-cell",)), _cell("view", CDN_SCRIPTS)],
    )
    first.metadata["widgets"] = WIDGET_STATE
    nbformat.write(first, folder / "book" / "01_first.ipynb")
    page = _notebook("# 演练场" if zh else "# Playground", zh, [_cell("playground", playground_html(["copy"]))])
    nbformat.write(page, folder / "book" / "14_playground.ipynb")
    toc = {"format": "jb-book", "root": "book/01_first", "chapters": [{"file": "book/14_playground"}]}
    if zh:
        (folder / "book" / "glossary.md").write_text("# 术语表\n\n词元\n", encoding="utf-8")
        toc["chapters"].append({"file": "book/glossary"})
    (folder / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    config = yaml.safe_load((ROOT / ("zh/_config.yml" if zh else "_config.yml")).read_text(encoding="utf-8"))
    config["execute"]["execute_notebooks"] = "off"
    config["sphinx"]["local_extensions"] = {
        name: str(ROOT / "book" / "_ext") for name in config["sphinx"]["local_extensions"]
    }
    config["sphinx"]["config"]["templates_path"] = [str(ROOT / "book" / "_templates")]
    (folder / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")


def build(source: Path, output: Path) -> subprocess.CompletedProcess:
    """``jupyter-book build`` into ``output/_build/html`` as the Makefile runs it (-W: a warning fails the build), with
    the playground's exported models in place (their manifest: the page's words name the models)."""
    models = output / "_build" / "html" / playground.PLAYGROUND_OUT
    models.mkdir(parents=True, exist_ok=True)
    (models / "manifest.json").write_text(json.dumps({"models": {"copy": {"label": "copy"}}}), encoding="utf-8")
    command = [str(JUPYTER_BOOK), "build", str(source), "--path-output", str(output), "-W", "-n", "--keep-going"]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, "TRANSFORMER_BOOK_STATIC": "1"})


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small book's folder, both editions built and published as ``make book`` does: ``_build/html`` the site,
    the Chinese built into ``_build/zh/_build/html`` and copied to ``zh/`` of it."""
    folder = tmp_path_factory.mktemp("book")
    write_edition(folder, zh=False)
    write_edition(folder / "zh", zh=True)
    for source, output in ((folder, folder), (folder / "zh", folder / "_build" / "zh")):
        done = build(source, output)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shutil.copytree(folder / "_build" / "zh" / "_build" / "html", folder / "_build" / "html" / "zh", symlinks=True)
    return folder


class _Assets(HTMLParser):
    """The URLs a page loads: scripts, stylesheets and other links, images, RequireJS paths, and the vendor folder a
    script's ``data-vendor`` names (relative to the script)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.modules: list[str] = []  # RequireJS paths: a module's file without its ".js", or a folder of modules
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        url = values.get("src") if tag in ("script", "img") else values.get("href") if tag == "link" else None
        if url:
            self.urls.append(url)
        if tag == "script" and values.get("data-vendor") and url:
            self.urls.append(posixpath.join(posixpath.dirname(urlsplit(url).path), values["data-vendor"]))
        self._script = tag == "script"

    def handle_data(self, data: str) -> None:
        if self._script:
            for paths in re.findall(r"require\.config\(\{\s*paths:\s*\{(.*?)\}", data, re.DOTALL):
                self.modules += [url for url in re.findall(r":\s*[\"']([^\"']+)[\"']", paths)]

    def handle_endtag(self, tag: str) -> None:
        self._script = False


def unresolved(root: Path, page: Path) -> list[str]:
    """The asset URLs of ``page`` that find nothing under ``root`` (a URL may not leave the machine, nor ``root``)."""
    parser = _Assets()
    parser.feed(page.read_text(encoding="utf-8"))
    missing = []
    for url, suffixes in [(url, ("",)) for url in parser.urls] + [(url, ("", ".js")) for url in parser.modules]:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob"):
            continue
        target = Path(os.path.normpath(page.parent / parts.path))
        found = any(Path(f"{target}{suffix}").exists() for suffix in suffixes)
        if parts.scheme or parts.netloc or not target.is_relative_to(root) or not found:
            missing.append(f"{page.relative_to(root)}: {url}")
    return missing


def html_pages(root: Path) -> list[Path]:
    """The pages under ``root``, without the theme's templates in each edition's ``_static/``."""
    return [page for page in sorted(root.rglob("*.html")) if "_static" not in page.relative_to(root).parts]


def vendor_copies(site: Path) -> list[str]:
    """The folders of the site that hold the vendored plotly.js (one per copy of the vendored assets)."""
    return sorted(str(p.parent.relative_to(site)) for p in site.rglob("plotly.min.js"))


def test_the_published_site_holds_the_vendored_assets_once(book: Path) -> None:
    site = book / "_build" / "html"
    assert vendor_copies(site) == [vendor.VENDOR_OUT]
    assert not (book / "_build" / "zh" / "_build" / "html" / vendor.VENDOR_OUT / "plotly.min.js").exists()


def test_every_asset_of_every_page_of_either_edition_resolves_in_the_published_site(book: Path) -> None:
    site = book / "_build" / "html"
    pages = html_pages(site)
    assert len([p for p in pages if p.is_relative_to(site / "zh")]) >= 4  # the Chinese pages, glossary and index too
    missing = [url for page in pages for url in unresolved(site, page)]
    assert not missing, "asset URLs that find nothing:\n" + "\n".join(missing)
    chinese = (site / "zh" / "book" / "01_first.html").read_text(encoding="utf-8")
    assert 'src="../../_static/vendor/mathjax/tex-chtml.js' in chinese  # the English site's copy, from zh/book/


def test_a_chinese_build_opened_where_it_was_built_finds_the_english_build_s_copy(book: Path) -> None:
    built = book / "_build" / "zh" / "_build"
    assert (built / vendor.VENDOR_OUT).resolve() == (book / "_build" / "html" / vendor.VENDOR_OUT).resolve()
    missing = [url for page in html_pages(built / "html") for url in unresolved(built, page)]
    missing = [url for url in missing if "_static/vendor/" in url]  # its links to English pages need the site
    assert not missing, "the Chinese build on its own: vendored assets that find nothing:\n" + "\n".join(missing)


def test_a_chinese_build_without_an_english_build_to_load_the_assets_from_fails_saying_why(tmp_path: Path) -> None:
    write_edition(tmp_path / "zh", zh=True)
    done = build(tmp_path / "zh", tmp_path / "_build" / "zh")
    assert done.returncode != 0
    assert "build the English book first" in done.stdout + done.stderr


def page_words(page: Path) -> dict[str, str] | None:
    """The words the build gave a page's scripts (``window.bookWords``), or None where it gave none; fails where it
    gave them twice (a second would replace the first)."""
    found = re.findall(r"<script>window\.bookWords = (\{.*?\});</script>", page.read_text(encoding="utf-8"))
    assert len(found) <= 1, f"{page.name}: window.bookWords written {len(found)} times"
    return json.loads(found[0].replace("<\\/", "</")) if found else None


def test_the_chinese_playground_page_carries_its_scripts_words_in_chinese_and_the_english_page_none(book: Path) -> None:
    site = book / "_build" / "html"
    chinese = (site / "zh" / "book" / "14_playground.html").read_text(encoding="utf-8")
    assert page_words(site / "book" / "14_playground.html") is None
    assert "</s>" not in re.search(r"window\.bookWords = .*?</script>", chinese).group()  # "<\/s>": no end of script
    words = page_words(site / "zh" / "book" / "14_playground.html")
    assert words["Decode"] == "解码" and words["copy"] == "复制"  # a script's word, a model's name (the manifest's)
    assert words[" … (no </s>)"] == " …（没有 </s>）"
    assert words["Figure: {name}"] == "图：{name}"  # and those of figures.js, which the page loads too: one bookWords
    scripts = [chinese.index(script) for script in ("window.bookWords", "_static/figures.js", "_static/playground.js")]
    assert scripts == sorted(scripts)


def test_a_chinese_page_with_figures_carries_the_translation_of_every_word_figures_js_writes_and_no_other(
    book: Path,
) -> None:
    """figures.js names figures and their controls through its ``tr``: a Chinese page that loads it carries the
    Chinese of each of its words (from the book's catalogue, as the build found them in the script), an English page
    none (figures.js writes its English)."""
    site = book / "_build" / "html"
    assert "figures.js" in (site / "book" / "01_first.html").read_text(encoding="utf-8")
    assert page_words(site / "book" / "01_first.html") is None
    words = page_words(site / "zh" / "book" / "01_first.html")
    assert words is not None and set(words) == set(figure_words())
    assert words == {english: catalogue("zh")[english] for english in figure_words()}
    assert words["Figure: {name}"] == "图：{name}" and words["head {h}"] == "头 {h}" and words["show"] == "显示"
    assert page_words(site / "zh" / "book" / "glossary.html") is None  # no figure: no figures.js, no words


def test_the_chinese_toggles_of_hidden_cells_speak_chinese_and_are_named_by_their_words(book: Path) -> None:
    site = book / "_build" / "html"
    english = (site / "book" / "01_first.html").read_text(encoding="utf-8")
    chinese = (site / "zh" / "book" / "01_first.html").read_text(encoding="utf-8")
    assert "Show code cell source" in english and "显示代码" in chinese and "Show code cell" not in chinese
    assert 'aria-label="Toggle hidden content"' not in english + chinese
    assert ">开始阅读</a>" in (site / "zh" / "index.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def served(book: Path) -> Iterator[str]:
    """The small book's published site served on 127.0.0.1: the URL of its folder (``.../html``)."""
    site = book / "_build" / "html"
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site.parent))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{site.name}"
    server.shutdown()
    server.server_close()


def test_a_chinese_page_served_from_zh_draws_its_figure_and_formulas_with_every_request_answered(
    served: str,
    browser: object,  # noqa: F811
) -> None:
    run = PageRun(browser, f"{served}/zh/book/01_first.html")
    try:
        run.page.wait_for_function(
            "() => document.querySelector('.plotly-graph-div .main-svg') && document.querySelector('mjx-container')",
            timeout=30_000,
        )
        loaded = run.page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
        assert any(url.endswith(f"{urlsplit(served).path}/_static/vendor/plotly.min.js") for url in loaded), loaded
        assert not run.errors, run.errors
        assert not run.external, run.external
        assert not run.failed, run.failed
    finally:
        run.close()


# () => the names figures.js gave the page's figure, its menu and the bertviz view's two controls, once it has.
NAMES_GIVEN = """() => {
  const gd = document.querySelector('.plotly-graph-div'), stops = document.querySelectorAll('.bertviz-vis [aria-label]');
  if (!gd || gd.dataset.bookFigure !== 'ready' || stops.length < 2) return null;
  return {figure: gd.getAttribute('aria-label'), menu: document.querySelector('.book-figure-controls label > span')
    .textContent, bertviz: [...stops].map((el) => el.getAttribute('aria-label'))};
}"""


@pytest.mark.parametrize(
    ("edition", "expected"),
    [
        ("", {"figure": "Figure: A figure with a menu", "menu": "show"}),
        ("zh/", {"figure": "图：A figure with a menu", "menu": "显示"}),
    ],
)
def test_figures_js_names_the_figures_and_controls_of_a_page_in_its_edition_s_language(
    served: str,
    browser: object,  # noqa: F811
    edition: str,
    expected: dict,
) -> None:
    """The words figures.js writes in a Chinese page (a figure's name around its title, a menu the figure does not
    name, bertviz's head and thumbnail) are Chinese, none of its English; an English page's are its English."""
    run = PageRun(browser, f"{served}/{edition}book/01_first.html")
    try:
        run.page.wait_for_function(NAMES_GIVEN, timeout=30_000)
        names = run.page.evaluate(NAMES_GIVEN)
        bertviz = ["头 0", "第 0 层的头 0：放大或关闭"] if edition else ["head 0", "layer 0, head 0: enlarge or close"]
        assert names == {**expected, "bertviz": bertviz}
        english = english_names(run.page)
        assert (english == []) if edition else (len(english) == 4), english
        assert not run.errors, run.errors
    finally:
        run.close()


built = pytest.mark.skipif(not (SITE / "index.html").is_file(), reason=f"the book is not built ({SITE} missing)")


@built
def test_the_built_site_holds_the_vendored_assets_once() -> None:
    assert vendor_copies(SITE) == [vendor.VENDOR_OUT]


@built
def test_every_asset_of_every_chinese_page_of_the_built_site_resolves() -> None:
    missing = [url for page in html_pages(SITE / "zh") for url in unresolved(SITE, page)]
    assert not missing, "asset URLs that find nothing:\n" + "\n".join(missing)
