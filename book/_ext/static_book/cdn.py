"""Every CDN URL the built pages carry, pointed at the vendored copy (:mod:`.vendor`), relative to each page.

``_config.yml`` points ``mathjax_path`` and ``nb_ipywidgets_js`` at ``_static/vendor/`` already; what is left are the
URLs that notebook outputs carry: bertviz writes its require.js, d3 and jQuery URLs into its HTML and JavaScript, and
an output may name plotly.js, MathJax or ipywidgets' embed manager on a CDN. After the build, each of them becomes the
local file, and the ``integrity`` and ``crossorigin`` attributes that pinned the CDN's copy go.

In the Chinese edition, whose pages load the English site's copy (:func:`.vendor.vendor_folder`), the URLs that the
build itself wrote to its own ``_static/vendor/`` (MathJax, RequireJS and the embed manager, from ``_config.yml``)
point there too (:func:`share_vendored`).
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from .output import is_html, rewrite_pages
from .vendor import vendor_folder, vendor_url_for, vendored_names

logger = logging.getLogger(__name__)

# (CDN URL pattern, local file without extension); the URL's own ".js" (if any) is kept, because RequireJS paths
# name modules without it while <script src> names the file with it.
CDN_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"https?://cdnjs\.cloudflare\.com/ajax/libs/require\.js/[\w.\-]+/require(?:\.min)?(?P<ext>\.js)?"),
        "require",
    ),
    (
        re.compile(
            r"https?://(?:cdn\.jsdelivr\.net/npm|unpkg\.com)/requirejs@[\w.\-]+/require(?:\.min)?(?P<ext>\.js)?"
        ),
        "require",
    ),
    (re.compile(r"https?://cdnjs\.cloudflare\.com/ajax/libs/d3/5\.[\w.\-]+/d3(?:\.min)?(?P<ext>\.js)?"), "d3.min"),
    (
        re.compile(r"https?://cdnjs\.cloudflare\.com/ajax/libs/jquery/[\w.\-]+/jquery(?:\.min)?(?P<ext>\.js)?"),
        "jquery.min",
    ),
    (re.compile(r"https?://cdn\.plot\.ly/plotly-[\w.\-]+?(?:\.min)?(?P<ext>\.js)"), "plotly.min"),
    (
        re.compile(
            r"https?://(?:cdn\.jsdelivr\.net/npm|unpkg\.com)/@jupyter-widgets/html-manager@[^/\"']+/dist/embed-amd(?P<ext>\.js)?"
        ),
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


def share_vendored(text: str, built_url: str, vendor_url: str, names: list[str]) -> str:
    """Point the URLs of the vendored ``names`` (files and folders) under ``built_url`` (the output's own vendor
    folder, relative to the page, where the build's configuration put MathJax and ipywidgets' scripts) at
    ``vendor_url``, the copy the pages load; the theme's own files in that folder (its icon font) stay."""
    if built_url == vendor_url:
        return text
    vendored = "|".join(re.escape(name) for name in names)
    return re.sub(rf"(?<=[\"']){re.escape(built_url)}/(?=(?:{vendored})[/\"'?#])", f"{vendor_url}/", text)


def _rewrite_pages(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or not is_html(app):
        return
    outdir, folder, names = Path(app.outdir), vendor_folder(app), vendored_names()

    def rewrite(text: str, page: Path) -> str:
        vendor_url = vendor_url_for(page, outdir, folder)
        return rewrite_html(share_vendored(text, vendor_url_for(page, outdir), vendor_url, names), vendor_url)

    changed = rewrite_pages(app, rewrite)
    logger.info(f"static_book: pointed {changed} page(s) at the vendored assets instead of CDNs")


def setup(app: Sphinx) -> None:
    app.connect("build-finished", _rewrite_pages)
