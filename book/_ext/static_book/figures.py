"""The book's figures in the static pages: drawn without holding up the page, and operable from the keyboard.

``figures.js`` (in ``book/_ext``, copied to ``_static/``) is added, deferred, to each page that holds a plotly figure,
a bertviz view or the playground. It loads ``plotly.min.js`` from the vendored copy (the folder its ``data-vendor``
names: :mod:`.vendor`) without holding up the page's first paint (after it, when a figure nears the screen, else once
the page has loaded; through RequireJS where a bertviz view loaded it), then draws each figure, whose drawing script
the build queued on ``window.bookFigures`` (:func:`defer_plotly_figures`), in the room plotly's HTML keeps for the
figure. It also makes the figures' menus and sliders HTML controls above each figure (whose bar the build puts in the
page: :func:`reserve_controls`), operable from the keyboard, names figures for screen readers, stacks panels and wraps
titles in a narrow column, fits text to its cell or box, makes figures follow their column's width, and makes
bertviz's SVG controls reachable from the keyboard. A Chinese page gets the translations of the words it writes there
(:func:`figure_words`, as ``window.bookWords``: :func:`.editions.ask_page_words`).
"""

from __future__ import annotations

import functools
import html
import json
import re

from sphinx.application import Sphinx

from .editions import ask_page_words
from .output import EXT, copy_to_static, is_html, rewrite_pages
from .playground import PLAYGROUND_CLASS
from .vendor import vendor_url_for_static
from .words import script_templates

FIGURE_SCRIPT = "figures.js"  # in book/_ext, copied to _static/: controls above figures, narrow layouts


def _copy_script(app: Sphinx) -> None:
    if is_html(app):
        copy_to_static(app, FIGURE_SCRIPT)


@functools.cache
def figure_words() -> tuple[str, ...]:
    """The English ``figures.js`` writes into a page through its ``tr``: controls' and figures' accessible names."""
    return tuple(sorted({text for text, _ in script_templates(EXT / FIGURE_SCRIPT)[0]}))


def _add_figure_js(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """``figures.js`` (which loads plotly.js itself, see :func:`defer_plotly_figures`, from the vendor folder its
    ``data-vendor`` names), deferred: it does not hold up the page's first paint; in an edition other than the
    English, the words it writes, before it."""
    body = context.get("body", "")
    if "plotly-graph-div" in body or "bertviz-view" in body or PLAYGROUND_CLASS in body:
        vendor = {"data-vendor": vendor_url_for_static(app)}
        app.add_js_file(FIGURE_SCRIPT, priority=201, loading_method="defer", **vendor)
        ask_page_words(context, figure_words())


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
            {
                **item,
                entries: [{k: v for k, v in e.items() if k not in ("args", "args2")} for e in item.get(entries, [])],
            }
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


def _rewrite_pages(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and is_html(app):
        rewrite_pages(app, lambda text, page: reserve_controls(defer_plotly_figures(text)))


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", _copy_script)
    app.connect("html-page-context", _add_figure_js)
    app.connect("build-finished", _rewrite_pages)
