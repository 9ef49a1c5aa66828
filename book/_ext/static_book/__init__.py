"""Sphinx extension: the static book as readers get it online, in either edition, with nothing loaded from the network.

One module per job, each set up here:

- :mod:`.vendor`: the JavaScript the pages need (MathJax, RequireJS, d3, jQuery, ipywidgets' embed manager, ONNX
  Runtime Web, plotly.js), copied from ``book/_vendor`` into the English site once; the Chinese pages load that copy;
- :mod:`.cdn`: every CDN URL the pages carry pointed at that copy (and, in the Chinese edition, the build's own);
- :mod:`.figures`: plotly figures drawn once the page has painted, their menus and sliders as HTML controls;
- :mod:`.pages`: the theme's pages made to work: the book's stylesheet, the sidebar toggles, scroll hints, search
  snippets, named toggles of hidden cells, a real page for the site's ``index.html``;
- :mod:`.playground`: the playground's scripts, the models its notebook exports, the words its page writes;
- :mod:`.editions`: the English and the Chinese book, each page linked to its twin in the other;
- :mod:`.words`: the words the site's own code shows (the scripts' ``tr``, the toggles of hidden cells), found in
  the source and translated from the book's catalogue, ``transformer_book/locale/`` (no Sphinx: ``scripts/translate.py``
  checks them with the chapters' words);
- :mod:`.output`: what they share: the book's scripts copied to ``_static/``, the written pages rewritten in place.

Setting up marks the build as the static book (``TRANSFORMER_BOOK_STATIC=1`` in ``os.environ``) before any notebook
runs, so the kernels the build starts inherit it: ``transformer_book.viz`` then writes figures as plain ``text/html``
(which :mod:`.figures` defers) and live-only explorers as notes.
"""

from __future__ import annotations

import os

from sphinx.application import Sphinx

from . import cdn, editions, figures, pages, playground, vendor

BOOK_ENV = "TRANSFORMER_BOOK_STATIC"  # the same name as transformer_book.viz.BOOK_ENV


def setup(app: Sphinx) -> dict:
    os.environ[BOOK_ENV] = "1"  # the build's kernels are started after this (while reading), so they inherit it
    for job in (vendor, cdn, figures, pages, playground, editions):
        job.setup(app)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
