"""The playground (``book/14_playground.ipynb``): the book's trained models, run in the reader's browser.

The build points ``TRANSFORMER_BOOK_PLAYGROUND`` at ``_static/playground/`` of its output, where the notebook's
kernel exports the models (``transformer_book.playground``), and adds ``playground_engine.js`` (tokenizer, decoding,
beam search, loading; no DOM) and ``playground.js`` (the controls and figures), both in ``book/_ext`` and deferred, to
the page that has a playground (``figures.js``, which loads plotly.js, comes with them: :mod:`.figures`). Once the
page has loaded, they load ONNX Runtime Web (``ort/`` of the vendored copy, which ``playground.js``'s ``data-vendor``
names: :mod:`.vendor`) and the models, one after the other. The
Chinese edition's page carries the Chinese of every word they write (:func:`page_texts`), as ``window.bookWords``
(:func:`.editions.ask_page_words`).

When that folder holds no models (a fresh output folder with a kept jupyter-cache, as in CI, which caches only
``_build/.jupyter_cache``), the playground notebooks (those that call ``write_playground(``) are dropped from
jupyter-cache before reading, so that they run again and export their models; a page that still has the playground
without models fails the build with a warning.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fresh_outputs import cache_path
from sphinx.application import Sphinx
from sphinx.util import logging

from .editions import ask_page_words
from .output import EXT, copy_to_static, is_html
from .vendor import vendor_url_for_static
from .words import script_templates

logger = logging.getLogger(__name__)

PLAYGROUND_ENV = "TRANSFORMER_BOOK_PLAYGROUND"  # the same name as transformer_book.playground.PLAYGROUND_ENV
PLAYGROUND_OUT = "_static/playground"  # relative to the HTML output folder: the exported models
PLAYGROUND_CLASS = "transformer-playground"  # the playground's element (transformer_book.playground.playground_html)
PLAYGROUND_SCRIPTS = ("playground_engine.js", "playground.js")  # in book/_ext, copied to _static/, in this order
PAGE_SCRIPT = "playground.js"  # the one that runs the page: it finds ONNX Runtime Web through its data-vendor


def has_models(app: Sphinx) -> bool:
    return (Path(app.outdir) / PLAYGROUND_OUT / "manifest.json").is_file()


def _rerun_playground_without_models(app: Sphinx) -> None:
    """Drop the playground notebooks from jupyter-cache when the output folder has no exported models: their cached
    outputs alone would give a playground page without the models it runs."""
    if not is_html(app) or has_models(app):
        return
    cache_folder = cache_path(app)
    if not cache_folder.is_dir():
        return
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(cache_folder)
    for path in sorted(Path(app.srcdir).glob("book/*.ipynb")):
        if "write_playground(" not in path.read_text(encoding="utf-8"):
            continue
        try:
            record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            continue
        cache.remove_cache(record.pk)
        logger.info(f"static_book: {PLAYGROUND_OUT}/ holds no models: {path.name} runs again to export them")


def _copy_scripts(app: Sphinx) -> None:
    if is_html(app):
        copy_to_static(app, *PLAYGROUND_SCRIPTS)


def page_texts(app: Sphinx) -> set[str]:
    """The English the playground's page writes: its scripts' ``tr`` and ``translatable`` strings and the models'
    names (their labels in the exported manifest)."""
    texts = {text for script in PLAYGROUND_SCRIPTS for text, _ in script_templates(EXT / script)[0]}
    manifest = Path(app.outdir) / PLAYGROUND_OUT / "manifest.json"
    if manifest.is_file():
        texts |= {model["label"] for model in json.loads(manifest.read_text(encoding="utf-8"))["models"].values()}
    return texts


def _add_playground_js(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """The playground's scripts, deferred: they do not hold up the page's first paint; in an edition other than the
    English, the words they write, before them."""
    if PLAYGROUND_CLASS in context.get("body", ""):
        ask_page_words(context, page_texts(app))
        for priority, script in enumerate(PLAYGROUND_SCRIPTS, start=202):
            vendor = {"data-vendor": vendor_url_for_static(app)} if script == PAGE_SCRIPT else {}
            app.add_js_file(script, priority=priority, loading_method="defer", **vendor)


def _warn_without_models(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or not is_html(app) or has_models(app):
        return
    if any(
        f'class="{PLAYGROUND_CLASS}"' in page.read_text(encoding="utf-8")
        for page in Path(app.outdir).glob("book/*.html")
    ):
        logger.warning(
            f"static_book: a page has the playground but {PLAYGROUND_OUT}/ holds no models: its notebook must call "
            "transformer_book.playground.write_playground(); `make clean` and build again"
        )


def setup(app: Sphinx) -> None:
    # The build's kernels are started after this (while reading), so they inherit where to export the models.
    os.environ[PLAYGROUND_ENV] = str(Path(app.outdir, PLAYGROUND_OUT))
    app.connect("builder-inited", _copy_scripts)
    app.connect("builder-inited", _rerun_playground_without_models, priority=900)  # after myst-nb's handler
    app.connect("html-page-context", _add_playground_js)
    app.connect("build-finished", _warn_without_models)
