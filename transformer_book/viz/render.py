"""How the book writes a plotly figure as HTML: in the static book (``in_static_build()``) a ``<div>`` and its
``Plotly.newPlot`` call without plotly.js, which each page loads once from the book's own copy; live, a script that
loads plotly.js from its CDN where the page has none (:mod:`transformer_book.viz` says when each is used)."""

from __future__ import annotations

import os
from typing import Any

import plotly.io as pio
from plotly.offline import get_plotlyjs_version

BOOK_ENV = "TRANSFORMER_BOOK_STATIC"
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
# The static book shows no mode bar: on a phone it sits on titles and menus; dragging zooms, a double click resets.
STATIC_CONFIG = {**PLOTLY_CONFIG, "displayModeBar": False}

# Draw at once when the page has plotly.js; otherwise load it once (AMD-aware for classic Notebook) and then draw.
_LOADER = """(function () {
  var draw = function () { __DRAW__ };
  if (window.Plotly) { draw(); return; }
  var url = "__URL__";
  if (typeof window.requirejs === "function" && typeof window.define === "function" && window.define.amd) {
    window.requirejs.config({paths: {plotly: url.replace(/\\.js$/, "")}});
    window.requirejs(["plotly"], function (P) { window.Plotly = P || window.Plotly; draw(); });
    return;
  }
  if (!window.__plotlyLoading) {
    window.__plotlyLoading = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = url; s.charset = "utf-8"; s.onload = resolve; s.onerror = reject;
      document.head.appendChild(s);
    });
  }
  window.__plotlyLoading.then(draw);
})();"""


def in_static_build() -> bool:
    """True while the static book is being built (``TRANSFORMER_BOOK_STATIC`` set to anything but ''/0/false)."""
    return os.environ.get(BOOK_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _plotly_cdn_url() -> str:
    """The CDN address of the plotly.js that matches the installed plotly (live use only; the book vendors its own)."""
    return f"https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js"


def figure_html(fig: Any, load_plotlyjs: bool = False) -> str:
    """The ``<div>`` + script that draws ``fig`` (a figure or its dict), never embedding plotly.js or MathJax.

    The figure takes the width of the page's column; a ``layout.width`` becomes its maximum width, so no figure is
    ever wider than the column (which is narrower than 720 px on some screens). With ``load_plotlyjs`` the script
    loads plotly.js from its CDN when the page has none (live use only).
    """
    fig_dict = fig.to_dict() if hasattr(fig, "to_dict") else dict(fig)
    layout = dict(fig_dict.get("layout") or {})
    max_width = layout.pop("width", None)
    if layout.get("autosize") is False:  # autosize=False without a width means plotly's fixed 700 px
        del layout["autosize"]
    fig_dict = {**fig_dict, "layout": layout}
    page = pio.to_html(
        fig_dict,
        config=PLOTLY_CONFIG if load_plotlyjs else STATIC_CONFIG,
        auto_play=False,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        default_width="100%",
        default_height=525,
        validate=False,
    )
    if isinstance(max_width, (int, float)) and max_width > 0:
        page = page.replace("width:100%;", f"width:100%; max-width:{int(max_width)}px;", 1)
    if not load_plotlyjs:
        return page
    start = page.rfind("<script")
    body_start, body_end = page.find(">", start) + 1, page.rfind("</script>")
    if start < 0 or body_end < body_start:  # plotly changed its template: fall back to the plain figure
        return page
    script = _LOADER.replace("__URL__", _plotly_cdn_url()).replace("__DRAW__", page[body_start:body_end])
    return f"{page[:body_start]}\n{script}\n{page[body_end:]}"
