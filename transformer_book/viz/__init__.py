"""The figures the book draws, rendered the same way live (Jupyter, Colab, VS Code) and in the static book.

Importing this package changes nothing global. A notebook's first cell switches the book's plotly renderer on
explicitly, with :func:`transformer_book.setup_notebook` (which calls :func:`use_book_renderer`); a chapter then simply
ends a cell with ``fig`` (preferred) or calls ``fig.show()``; there is no ``show`` helper. What a figure's output
carries:

- **static book build** (``in_static_build()``: the environment variable ``TRANSFORMER_BOOK_STATIC=1``, which
  ``make book`` and the book's Sphinx extension ``book/_ext/static_book`` set, so the kernels the build starts
  inherit it): a single ``text/html`` output, the figure's ``<div>`` and its ``Plotly.newPlot`` call, *without*
  plotly.js. The book loads one vendored plotly.js on each page that has a figure, so pages work with no network.
  Figures take the column's width; a ``layout.width`` only caps it (set ``height``; the column is 680-790 px).
- **live**: ``application/vnd.plotly.v1+json`` (JupyterLab, Notebook 7 and VS Code draw it with plotly's extension)
  plus a ``text/html`` fallback that uses the page's ``Plotly`` when there is one and loads plotly.js from its CDN
  otherwise. On Colab, plotly's own ``"colab"`` renderer is used.

bertviz views (:class:`.inspect.BertvizView`, what ``open_on`` and ``fit_width`` return) follow the same split: in the
static book, bertviz's HTML of a few kilobytes, whose RequireJS, d3 and jQuery the page loads once from the book's
own copies; live, the view with d3 and jQuery inside it, so that it draws with no network and no RequireJS.

Build outputs are cached by jupyter-cache, keyed on the notebooks' code only: after changing this module (or any
package code a chapter's outputs depend on) run ``make clean`` before ``make book``.

A live kernel run with ``TRANSFORMER_BOOK_RECORD`` set (``make nbval-reader``) also records, beside each explorer,
what the static book shows in its place, so that the book can be built from that run (:mod:`.record`).

Interactive explorers made of ipywidgets need a kernel; wrap them with :func:`live_only` so the static book shows a
clear note (and, optionally, a static stand-in such as a plotly figure with sliders) instead of a dead widget. Create
every widget *inside* the factory: a widget created at top level is saved in the page's widget state even if it is
never shown, which makes the static page load ipywidgets' 4 MB manager for nothing.

Kernel-free controls (plotly dropdown menus) are built with :func:`transformer_book.viz.controls.dropdown`, so every
figure's menus look and behave alike.

Figure text: prefer HTML tags (``d<sub>k</sub>``, ``√d<sub>model</sub>``) to LaTeX ``$...$``, which plotly renders
only with a MathJax set-up the book does not promise.
"""

from __future__ import annotations

import html
import os
import sys
from collections.abc import Callable
from typing import Any

import plotly.io as pio
from plotly.io.base_renderers import MimetypeRenderer

from ..i18n import tr, translatable
from .render import BOOK_ENV, figure_html, in_static_build

__all__ = ["BOOK_ENV", "BookRenderer", "figure_html", "in_static_build", "live_only", "use_book_renderer"]

RENDERER = "transformer_book"
LIVE_NOTE = translatable(
    "This explorer needs a live kernel: open the chapter in Colab or Jupyter with the rocket button at the top."
)


def _in_colab() -> bool:
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


class BookRenderer(MimetypeRenderer):
    """Plotly renderer for the book: ``text/html`` alone in the static build; JSON + HTML fallback live."""

    def to_mimebundle(self, fig_dict: dict) -> dict:
        from .record import in_record_mode

        if in_static_build():
            return {"text/html": figure_html(fig_dict)}
        if _in_colab() and not in_record_mode():  # a recording run keeps plotly's JSON, which the book draws
            return pio.renderers["colab"].to_mimebundle(fig_dict)
        bundle = pio.renderers["plotly_mimetype"].to_mimebundle(fig_dict)
        bundle["text/html"] = figure_html(fig_dict, load_plotlyjs=True)
        return bundle


class _LiveOnlyNote:
    """What :func:`live_only` shows in the static book: a note, then the optional static stand-in."""

    def __init__(self, note: str, static: Any = None):
        self.note, self.static = note, static

    def _repr_html_(self) -> str:
        return (
            f'<div class="admonition note live-only-note"><p class="admonition-title">{tr("Live explorer")}</p>'
            f"<p>{html.escape(self.note)}</p></div>"
        )

    def __repr__(self) -> str:
        return f"[live only] {self.note}"

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display

        display(HTML(self._repr_html_()))
        if self.static is not None:
            display(self.static)


def live_only(widget_factory: Callable[[], Any], note: str = "", static: Any = None) -> Any:
    """An ipywidgets explorer in a live kernel; in the static book a note saying how to get it, never a dead widget.

    ``widget_factory`` builds and returns the widget (it is not called in the static build, so its cost is not paid
    there). ``note`` adds a sentence about what the explorer does; ``static`` (a figure or anything displayable,
    e.g. a plotly figure with sliders) is shown below the note in the static book instead. End the cell with the
    call, e.g. ``live_only(lambda: interactive(plot_scores, temperature=(0.1, 5.0)), "Vary the temperature.")``.
    A recording run (:mod:`.record`) shows the widget and records the note and the stand-in before it.
    """
    stand_in = _LiveOnlyNote(f"{note.strip()} {tr(LIVE_NOTE)}".strip(), static)
    if in_static_build():
        return stand_in
    from .record import in_record_mode, record_static, static_outputs

    if in_record_mode():
        record_static(static_outputs(stand_in._ipython_display_), widget_follows=True)
    return widget_factory()


def use_book_renderer() -> None:
    """Register the book's renderer and make it plotly's default, for this kernel: called once by every chapter's
    first cell (through :func:`transformer_book.setup_notebook`), never as a side effect of an import."""
    pio.renderers[RENDERER] = BookRenderer()
    pio.renderers.default = RENDERER
