"""Sphinx extension: the built book loads nothing from the network.

- Marks the build as the static book (``TRANSFORMER_BOOK_STATIC=1`` in ``os.environ``) before any notebook runs, so
  the kernels the build starts inherit it and ``transformer_book.viz`` writes figures as plain ``text/html``.
- Copies the assets fetched by ``scripts/vendor_assets.sh`` (``book/_vendor/``, but for its ``tests/``: axe-core,
  which only the browser test runs) and the plotly.js shipped with the installed plotly package to ``_static/vendor/``
  of the output (not via ``html_static_path``: Jupyter Book injects
  every .js/.css found there into every page).
- Adds ``figures.js`` (beside this module), deferred, to each page that holds a plotly figure, a bertviz view or the
  playground. It loads ``_static/vendor/plotly.min.js`` without holding up the page's first paint (after it, when a
  figure nears the screen, else once the page has loaded; through RequireJS where a bertviz view loaded it), then
  draws each figure, whose drawing script the build queued on ``window.bookFigures`` (:func:`defer_plotly_figures`),
  in the room plotly's HTML keeps for the figure. It also makes the figures' menus and
  sliders HTML controls above each figure, operable from the keyboard, names figures for screen readers, stacks
  panels and wraps titles in a narrow column, fits text to its cell or box, makes figures follow their column's width,
  and makes bertviz's SVG controls reachable from the keyboard.
- After the build, rewrites every CDN URL it knows in the HTML pages (bertviz's require.js/d3/jQuery, plotly.js,
  MathJax, ipywidgets' embed manager) to the local copy, relative to each page, dropping the ``integrity`` and
  ``crossorigin`` attributes that pinned the CDN files.

- The playground (``book/14_playground.ipynb``): points ``TRANSFORMER_BOOK_PLAYGROUND`` at ``_static/playground/``
  of the output, where the notebook's kernel exports its models (``transformer_book.playground``), and adds
  ``figures.js`` (which loads plotly.js), ``playground_engine.js`` (tokenizer, decoding, beam search, loading; no
  DOM) and ``playground.js`` (the controls and figures), all beside this module and deferred, to the page that has a
  playground; once the page has loaded, they load ONNX Runtime Web (``_static/vendor/ort/``) and the models, one
  after the other. When that folder holds no models (a fresh output folder with a kept jupyter-cache, as in CI,
  which caches only ``_build/.jupyter_cache``), the playground notebooks (those that call ``write_playground(``) are
  dropped from jupyter-cache before reading, so that they run again and export their models; a page that still has
  the playground without models fails the build with a warning.

- Makes every sidebar toggle work (:data:`NAV_JS`, on every page) and adds the book's stylesheet (``book.css``
  beside this module: outputs and inline code wrap instead of widening the page).
- Search results quote each page's own text, not the theme's toolbar (:data:`SEARCH_JS`, on the search page); the
  site's index.html, Jupyter Book's bare redirect to the first chapter, gets a title and a link to follow; the toggle
  of a hidden cell is named by the words it shows (:data:`HIDDEN_CELL_TOGGLE`).

- Serves both editions: the English book (``_config.yml``) and the Chinese (``zh/_config.yml``, ``language: zh_CN``,
  published under ``zh/``) each put a link to the same page in the other edition at the top of every article (and a
  ``<link rel="alternate" hreflang>`` in its head); the Chinese edition's hidden-cell toggles say what they do in
  Chinese. The vendored assets come from ``book/_vendor`` for either.

``_config.yml`` points ``mathjax_path`` and ``nb_ipywidgets_js`` at ``_static/vendor/`` too; the rewriting is the
safety net for URLs that notebook outputs carry (bertviz writes its CDN URLs into its HTML and JavaScript).
"""

from __future__ import annotations

import html
import json
import os
import posixpath
import re
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

BOOK_ENV = "TRANSFORMER_BOOK_STATIC"  # the same name as transformer_book.viz.BOOK_ENV
VENDOR_SOURCE = Path(__file__).resolve().parents[1] / "_vendor"  # book/_vendor, for either edition's build
VENDOR_OUT = "_static/vendor"  # relative to the HTML output folder
VENDOR_TESTS_ONLY = "tests"  # under VENDOR_SOURCE: what the tests use (axe-core), never copied into the site
STYLESHEET = "book.css"  # beside this module, copied to _static/
FIGURE_SCRIPT = "figures.js"  # beside this module, copied to _static/: controls above figures, narrow layouts
PLAYGROUND_SCRIPTS = ("playground_engine.js", "playground.js")  # beside this module, copied to _static/, in this order
PLAYGROUND_ENV = "TRANSFORMER_BOOK_PLAYGROUND"  # the same name as transformer_book.playground.PLAYGROUND_ENV
PLAYGROUND_OUT = "_static/playground"  # relative to the HTML output folder: the exported models
PLAYGROUND_CLASS = "transformer-playground"  # the playground's element (transformer_book.playground.playground_html)
REQUIRED = (
    "mathjax/tex-chtml.js", "require.js", "d3.min.js", "jquery.min.js", "html-manager/embed-amd.js",
    "ort/ort.wasm.min.mjs", "ort/ort-wasm-simd-threaded.mjs", "ort/ort-wasm-simd-threaded.wasm",
    "ort/ort-wasm-simd-threaded.wasm.gz",
)

# (CDN URL pattern, local file without extension); the URL's own ".js" (if any) is kept, because RequireJS paths
# name modules without it while <script src> names the file with it.
CDN_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"https?://cdnjs\.cloudflare\.com/ajax/libs/require\.js/[\w.\-]+/require(?:\.min)?(?P<ext>\.js)?"), "require"),
    (re.compile(r"https?://(?:cdn\.jsdelivr\.net/npm|unpkg\.com)/requirejs@[\w.\-]+/require(?:\.min)?(?P<ext>\.js)?"), "require"),
    (re.compile(r"https?://cdnjs\.cloudflare\.com/ajax/libs/d3/5\.[\w.\-]+/d3(?:\.min)?(?P<ext>\.js)?"), "d3.min"),
    (re.compile(r"https?://cdnjs\.cloudflare\.com/ajax/libs/jquery/[\w.\-]+/jquery(?:\.min)?(?P<ext>\.js)?"), "jquery.min"),
    (re.compile(r"https?://cdn\.plot\.ly/plotly-[\w.\-]+?(?:\.min)?(?P<ext>\.js)"), "plotly.min"),
    (
        re.compile(r"https?://(?:cdn\.jsdelivr\.net/npm|unpkg\.com)/@jupyter-widgets/html-manager@[^/\"']+/dist/embed-amd(?P<ext>\.js)?"),
        "html-manager/embed-amd",
    ),
    (
        re.compile(
            r"https?://(?:cdn\.jsdelivr\.net/npm/mathjax@3|cdnjs\.cloudflare\.com/ajax/libs/mathjax/3[\w.\-]*)"
            r"/es5/tex-(?:mml-)?(?:chtml|svg)(?:\.min)?(?P<ext>\.js)"
        ),
        "mathjax/tex-chtml",
    ),
)
_WIDGETS_PATH = "@jupyter-widgets/html-manager/dist"
_TAG = re.compile(r"<(?:script|link)\b[^>]*>", re.IGNORECASE)
_PINNING = re.compile(r"\s(?:integrity|crossorigin)(?:=(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?", re.IGNORECASE)


def rewrite_html(text: str, vendor_url: str) -> str:
    """Replace known CDN URLs in ``text`` by files under ``vendor_url`` (the vendor folder, relative to the page)."""
    vendor_url = vendor_url.rstrip("/")
    for pattern, local in CDN_RULES:
        text = pattern.sub(lambda m, local=local: f"{vendor_url}/{local}{m.group('ext') or ''}", text)

    def unpin(tag: re.Match[str]) -> str:
        return _PINNING.sub("", tag.group(0)) if f"{vendor_url}/" in tag.group(0) else tag.group(0)

    text = _TAG.sub(unpin, text)
    # ipywidgets' embed manager defines the AMD module "@jupyter-widgets/html-manager/dist/libembed-amd" and loads its
    # fonts next to that module's URL: map the module's folder onto the vendored copy (before the manager runs).
    manager = re.search(rf"<script[^>]*src=\"{re.escape(vendor_url)}/html-manager/embed-amd\.js[^>]*>", text)
    if manager and _WIDGETS_PATH not in text:
        config = f'<script>require.config({{paths: {{"{_WIDGETS_PATH}": "{vendor_url}/html-manager"}}}});</script>'
        text = text[: manager.start()] + config + "\n" + text[manager.start() :]
    return text


def vendor_url_for(page: Path, outdir: Path) -> str:
    """The vendor folder's URL relative to an HTML file of the output."""
    return posixpath.relpath(VENDOR_OUT, page.parent.relative_to(outdir).as_posix() or ".")


def _rerun_playground_without_models(app: Sphinx) -> None:
    """Drop the playground notebooks from jupyter-cache when the output folder has no exported models: their cached
    outputs alone would give a playground page without the models it runs."""
    if app.builder.format != "html" or (Path(app.outdir) / PLAYGROUND_OUT / "manifest.json").is_file():
        return
    config = getattr(app.env, "mystnb_config", None)  # set by myst-nb's own builder-inited handler
    cache_path = Path(getattr(config, "execution_cache_path", "") or Path(app.outdir).parent / ".jupyter_cache")
    if not cache_path.is_dir():
        return
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(cache_path)
    for path in sorted(Path(app.srcdir).glob("book/*.ipynb")):
        if "write_playground(" not in path.read_text(encoding="utf-8"):
            continue
        try:
            record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            continue
        cache.remove_cache(record.pk)
        logger.info(f"offline_assets: {PLAYGROUND_OUT}/ holds no models: {path.name} runs again to export them")


def _copy_assets(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    source = VENDOR_SOURCE
    missing = [name for name in REQUIRED if not (source / name).is_file()]
    if missing:
        raise ExtensionError(
            f"offline assets missing from {source}: {', '.join(missing)}. Run `make vendor` "
            "(scripts/vendor_assets.sh) to fetch them from the npm registry."
        )
    target = Path(app.outdir, VENDOR_OUT)
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=lambda folder, names: (
        [VENDOR_TESTS_ONLY] if Path(folder) == source else []))
    import plotly

    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", target / "plotly.min.js")
    for name in (STYLESHEET, FIGURE_SCRIPT, *PLAYGROUND_SCRIPTS):
        shutil.copy2(Path(__file__).with_name(name), Path(app.outdir, "_static", name))


# pydata-sphinx-theme 0.17 and sphinx-book-theme 1.3 bind their sidebar toggles with document.querySelector, i.e. to
# the first ".primary-toggle" (".secondary-toggle") of the page: the header's, which the book theme hides. The ☰ a
# reader sees, in the article's header, got no handler, so the chapter list could not be opened, on a phone not at
# all (pydata/pydata-sphinx-theme#2451). Forward its clicks to the bound button: at >= 992 px the book theme's handler
# shows or hides the sidebar, below it the pydata theme's opens the sidebar as a dialog.
NAV_JS = """document.addEventListener("DOMContentLoaded", function () {
  ["primary", "secondary"].forEach(function (side) {
    var buttons = Array.prototype.slice.call(document.querySelectorAll("." + side + "-toggle"));
    buttons.slice(1).forEach(function (button) {
      button.addEventListener("click", function (event) {
        event.preventDefault();
        event.stopPropagation();
        buttons[0].click();
      });
    });
  });
});"""


# A table (or a code block) wider than the column scrolls sideways inside its box, which only shows a cut edge: while
# more of it lies to the right, the box carries "book-scrolls-more" and book.css fades its right edge, so the cut
# reads as "there is more" (the box is a stop of the Tab key, whose arrow keys scroll it).
SCROLL_HINT_JS = """document.addEventListener("DOMContentLoaded", function () {
  var boxes = document.querySelectorAll(
    ".bd-article .pst-scrollable-table-container, .bd-article .book-table, .bd-article div.highlight pre");
  function mark(box) {
    box.classList.toggle("book-scrolls-more", box.scrollWidth - box.clientWidth - box.scrollLeft > 1);
  }
  boxes.forEach(function (box) {
    mark(box);
    box.addEventListener("scroll", function () { mark(box); }, {passive: true});
  });
  window.addEventListener("resize", function () { boxes.forEach(mark); });
});"""


# Sphinx's search shows a few lines of each page it finds, taken from the page's [role="main"], which in this theme
# also holds the article's toolbar (download buttons), the page's table of contents for printing ("Contents") and the
# links to the previous and next chapters, so every snippet started "....pdf Attention Contents". The search page
# drops the theme's frame from each page before Sphinx reads it.
SEARCH_CHROME = (".bd-header-article, .bd-sidebar-secondary, .onlyprint, .prev-next-area, .bd-footer-article, "
                 ".bd-footer-content")
SEARCH_JS = """(function () {
  function withoutChrome() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.bookChrome) return;
    var htmlToText = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll("__CHROME__").forEach(function (el) { el.remove(); });
      return htmlToText(doc.documentElement.outerHTML, anchor);
    };
    Search.htmlToText.bookChrome = true;
  }
  withoutChrome();
  document.addEventListener("DOMContentLoaded", withoutChrome);
})();""".replace("__CHROME__", SEARCH_CHROME)


def _add_nav_js(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    app.add_js_file(None, body=NAV_JS, priority=900)
    app.add_js_file(None, body=SCROLL_HINT_JS, priority=900)
    if pagename == "search":
        app.add_js_file(None, body=SEARCH_JS, priority=900)


def _add_figure_js(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """``figures.js`` (which loads plotly.js itself, see :func:`defer_plotly_figures`) and the playground's scripts,
    all deferred: none of them holds up the page's first paint."""
    body = context.get("body", "")
    if "plotly-graph-div" in body or "bertviz-view" in body or PLAYGROUND_CLASS in body:
        app.add_js_file(FIGURE_SCRIPT, priority=201, loading_method="defer")
    if PLAYGROUND_CLASS in body:
        for priority, script in enumerate(PLAYGROUND_SCRIPTS, start=202):
            app.add_js_file(script, priority=priority, loading_method="defer")


# plotly's HTML for a figure is a <div> of the figure's height (its room in the page, kept while plotly.js loads)
# with the figure's <div> and a <script> that draws it at once: `window.PLOTLYENV=...; if (document.getElementById(id))
# { Plotly.newPlot(id, data, layout, config)... };`. The script's body becomes a function queued on
# window.bookFigures, which figures.js runs once it has loaded plotly.js (4.8 MB, 1.5 MB gzipped): a synchronous
# <script src> in <head> would leave the page blank until all of it arrived (3.5-4 s at 10 Mbit/s).
_PLOTLY_SCRIPT = re.compile(r"(<script[^>]*>)(\s*window\.PLOTLYENV\s*=.*?)(</script>)", re.DOTALL)
FIGURE_QUEUE = "(window.bookFigures = window.bookFigures || []).push(function () {%s});"


def defer_plotly_figures(text: str) -> str:
    """Queue each plotly figure's drawing script of an HTML page on ``window.bookFigures`` (see above)."""
    return _PLOTLY_SCRIPT.sub(lambda m: m.group(1) + FIGURE_QUEUE % m.group(2) + m.group(3), text)


# figures.js shows a figure's plotly menus and sliders as HTML controls in a bar above it. Built once plotly.js is
# in, the bar would push the text below down after the page has painted; so the build puts the bar in the page, with
# the menus and sliders it shows (their labels, without the plotly calls each entry makes, which figures.js finds in
# the drawn figure), and figures.js fills it as soon as it runs.
_FIGURE = re.compile(
    r'(<div class="book-figure-controls"[^>]*></div>)?(<div style="height:\d+px; width:100%;">\s*<div id="[^"]+" '
    r'class="plotly-graph-div"[^>]*></div>\s*<script[^>]*>)(.*?</script>)',
    re.DOTALL,
)
_NEW_PLOT = re.compile(r"Plotly\.newPlot\(\s*")
CONTROLS_BAR = '<div class="book-figure-controls" data-book-controls="%s"></div>'


def figure_controls(script: str) -> dict:
    """The menus and sliders of the figure that ``script`` draws (``Plotly.newPlot(id, data, layout, ...)``), each
    entry without its plotly call (``args``), and its height, top margin and title: what figures.js needs to show
    them, and to reserve the figure's room; empty for a figure with neither menus nor sliders."""
    start = _NEW_PLOT.search(script)
    if start is None:
        return {}
    decoder, at, values = json.JSONDecoder(), start.end(), []
    for _ in range(3):  # the id, the data, the layout
        value, at = decoder.raw_decode(script, at)
        values.append(value)
        at = re.compile(r"\s*,\s*").match(script, at).end()
    layout = values[2]
    title = layout.get("title", {})
    template_title = layout.get("template", {}).get("layout", {}).get("title", {})
    controls = {  # what figures.js needs to reserve the figure's height: plotly's defaults where the layout has none
        "height": layout.get("height", 450),
        "top": layout.get("margin", {}).get("t", 100),
        "title": title.get("text", "") if isinstance(title, dict) else str(title),
        "titleSize": title.get("font", {}).get("size") or template_title.get("font", {}).get("size") or 17,
    }
    for kind, entries in (("updatemenus", "buttons"), ("sliders", "steps")):
        items = [
            {**item, entries: [{k: v for k, v in e.items() if k not in ("args", "args2")} for e in item.get(entries, [])]}
            for item in layout.get(kind, [])
        ]
        if items:
            controls[kind] = items
    return controls if "updatemenus" in controls or "sliders" in controls else {}


def reserve_controls(text: str) -> str:
    """A bar before each figure of an HTML page that has menus or sliders (see above)."""

    def bar(m: re.Match[str]) -> str:
        controls = None if m.group(1) else figure_controls(m.group(3))
        if not controls:
            return m.group(0)
        return CONTROLS_BAR % html.escape(json.dumps(controls, separators=(",", ":"))) + m.group(2) + m.group(3)

    return _FIGURE.sub(bar, text)


def _dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    # Sphinx 7.4 with Jupyter Book 1 repeats some inline scripts (sphinx-thebe's `const THEBE_JS_URL = ...`, a
    # SyntaxError the second time), once with filename None and once ''; keep the first of identical entries.
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for js in scripts:
        attributes = getattr(js, "attributes", {})
        key = (str(getattr(js, "filename", js) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def _rewrite_pages(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    changed = 0
    for page in outdir.rglob("*.html"):
        if page.is_relative_to(outdir / "_static"):
            continue
        text = page.read_text(encoding="utf-8")
        new = rewrite_html(text, vendor_url_for(page, outdir)).replace(HIDDEN_CELL_TOGGLE, "<summary>")
        new = reserve_controls(defer_plotly_figures(new))
        for english, translated in CELL_TOGGLES.get(edition(app), {}).items():
            new = new.replace(f">{english}</p>", f">{translated}</p>")
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    logger.info(f"offline_assets: pointed {changed} page(s) at _static/vendor/ instead of CDNs")
    _give_the_redirect_a_page(outdir / "index.html", app.config.html_title or app.config.project, edition(app))
    if not (outdir / PLAYGROUND_OUT / "manifest.json").is_file() and any(
        f'class="{PLAYGROUND_CLASS}"' in page.read_text(encoding="utf-8") for page in outdir.glob("book/*.html")
    ):
        logger.warning(f"offline_assets: a page has the playground but {PLAYGROUND_OUT}/ holds no models: its "
                       "notebook must call transformer_book.playground.write_playground(); `make clean` and build again")


# myst-nb's toggle of a hidden cell says "Show code cell source" but names itself "Toggle hidden content" for
# screen readers, so a reader who says what they see (voice control) cannot press it: its own words are its name.
HIDDEN_CELL_TOGGLE = '<summary aria-label="Toggle hidden content">'
REDIRECT = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)"\s*/?>', re.IGNORECASE)


# myst-nb's words on the toggles of hidden cells (one format for every kind of cell, hence English whatever the
# language), in the Chinese edition.
CELL_TOGGLES = {
    "zh": {
        "Show code cell source": "显示代码",
        "Hide code cell source": "隐藏代码",
        "Show code cell content": "显示单元格",
        "Hide code cell content": "隐藏单元格",
        "Show code cell outputs": "显示输出",
        "Hide code cell outputs": "隐藏输出",
    }
}

# Each edition links every page to its twin in the other: the English site's root holds the Chinese under zh/.
EDITIONS = {"en": ("zh", "中文", "zh-CN", "zh/"), "zh": ("en", "English", "en", "../")}  # other, its name, hreflang, root


def edition(app: Sphinx) -> str:
    """``"zh"`` in the Chinese edition's build (``language: zh_CN``), else ``"en"``."""
    return "zh" if str(app.config.language or "").startswith("zh") else "en"


def twin_url(app: Sphinx, pagename: str) -> str:
    """The URL, relative to page ``pagename``, of the same page in the other edition (of its first page, where that
    edition has no such page: the glossary, the search and index pages)."""
    other_root = EDITIONS[edition(app)][3]
    srcdir = Path(app.srcdir)
    other_src = srcdir / "zh" if edition(app) == "en" else srcdir.parent
    up = "../" * pagename.count("/")
    if any((other_src / f"{pagename}{suffix}").is_file() for suffix in (".ipynb", ".md")):
        return f"{up}{other_root}{pagename}.html"
    return f"{up}{other_root}index.html"


def _add_language_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """A link to the page's twin in the other edition, at the top of the article (and for search engines, in the
    head)."""
    if app.builder.format != "html":
        return
    _, name, hreflang, _ = EDITIONS[edition(app)]
    url = html.escape(twin_url(app, pagename))
    context["metatags"] = context.get("metatags", "") + f'<link rel="alternate" hreflang="{hreflang}" href="{url}">\n'
    label = "Language / 语言"
    link = (f'<nav class="book-language" aria-label="{label}"><a href="{url}" hreflang="{hreflang}" lang="{hreflang}">'
            f"{name}</a></nav>\n")
    context["body"] = link + context.get("body", "")


def _give_the_redirect_a_page(index: Path, title: str, language: str = "en") -> None:
    """Jupyter Book writes the site's index.html as a bare ``<meta http-equiv="Refresh">``: no title (a tab, a
    bookmark or a search engine shows the address) and nothing to follow where a browser does not redirect. Make it a
    page with the book's title, the same redirect and a link to the first chapter."""
    text = index.read_text(encoding="utf-8") if index.is_file() else ""
    target = REDIRECT.search(text)
    if target is None or "<title>" in text:
        return
    url, name = html.escape(target.group(1)), html.escape(title)
    lang, start = ("zh-CN", "开始阅读") if language == "zh" else ("en", "Start reading")
    index.write_text(
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n<title>{name}</title>\n'
        f'<meta http-equiv="Refresh" content="0; url={url}">\n<link rel="canonical" href="{url}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n</head>\n<body>\n'
        f'<main><h1>{name}</h1>\n<p><a href="{url}">{start}</a></p></main>\n</body>\n</html>\n',
        encoding="utf-8",
    )


def setup(app: Sphinx) -> dict:
    # The build's kernels are started after this (while reading), so they inherit the marker.
    os.environ[BOOK_ENV] = "1"
    os.environ[PLAYGROUND_ENV] = str(Path(app.outdir, PLAYGROUND_OUT))
    app.connect("builder-inited", _copy_assets)
    app.connect("builder-inited", _rerun_playground_without_models, priority=900)  # after myst-nb's handler
    app.add_css_file(STYLESHEET)
    app.connect("html-page-context", _add_figure_js)
    app.connect("html-page-context", _add_nav_js)
    app.connect("html-page-context", _add_language_switch)
    app.connect("html-page-context", _dedupe_scripts, priority=900)  # after every other extension added its scripts
    app.connect("build-finished", _rewrite_pages)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
