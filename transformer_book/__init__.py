"""The book kit: what the chapters of *The Transformer, Interactive* use beside the model.

The model itself is the package :mod:`transformer` (torch and numpy only); this package holds what only the book
needs, and imports the model, never the other way round:

- :mod:`transformer_book.viz`: the figures (plotly builders, kernel-free controls, the bertviz adapter, live
  ipywidgets explorers) and the renderer that writes them for the static book and for live notebooks;
- :mod:`transformer_book.pitfalls`: the mistakes of popular write-ups as faulty variants, and the checks that catch
  them;
- :mod:`transformer_book.ablation`: silencing heads and measuring what the model loses, and alignment scores;
- :mod:`transformer_book.descendants`: GPT's decoder-only and BERT's encoder-only models built from the package's
  layers, their published parameter counts and how they differ; :mod:`transformer_book.induction`: induction heads;
- :mod:`transformer_book.exercises`: the chapters' exercises, checks that run a reader's function against the model;
- :mod:`transformer_book.results`: telling current benchmark results from stale ones;
- :mod:`transformer_book.runs`: trained runs kept on disk, so that a chapter loads the model an earlier chapter trained
  with the same settings instead of training it again.

Importing this package loads no plotly: a chapter calls :func:`setup_notebook` in its first cell.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformer.train.progress import Progress

__all__ = ["press_stop_when_saved", "progress", "setup_notebook"]


def setup_notebook() -> None:
    """Switch on what a chapter's figures need in this kernel: the book's plotly renderer (static ``text/html``
    in the built book, plotly's own output live; see :mod:`transformer_book.viz`)."""
    _import_jsonschema_without_iri_parsers()
    from .viz import use_book_renderer

    use_book_renderer()


def _import_jsonschema_without_iri_parsers() -> None:
    """Import jsonschema, if installed and not imported yet, without its checker of the ``iri`` format.

    plotly's renderers import nbformat, and nbformat imports jsonschema, whose format checkers import rfc3987-syntax
    where it is installed (Jupyter's own packages install it, and Colab has it): that module builds about 35 Earley
    parsers when it is imported, most of the time a chapter's first cell takes, about a second (python-jsonschema
    issue 1428). No chapter validates an IRI against a JSON schema. jsonschema takes a module that cannot be imported
    for a missing one and leaves that format unchecked; rfc3987_syntax itself stays importable afterwards."""
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        return
    sys.modules["rfc3987_syntax"] = None  # importing it now raises ImportError
    try:
        import jsonschema  # noqa: F401 (imported here for its format checkers, which the import sets up)
    except ImportError:  # not installed: then nothing imports it
        pass
    finally:
        del sys.modules["rfc3987_syntax"]


def progress() -> Progress:
    """What a chapter passes as ``progress=`` when it trains: a live bar in Jupyter and Colab, and in the static
    book (which cannot redraw a line) one line when training ends (recorded beside the bar in a recording run:
    :mod:`transformer_book.viz.record`); each in the notebook's language."""
    from .viz import in_static_build
    from .viz.record import RecordedBar, StaticLine, in_record_mode, live_bar

    if in_static_build():
        return StaticLine
    return RecordedBar if in_record_mode() else live_bar


@contextmanager
def press_stop_when_saved(path: str | Path, poll_seconds: float = 0.005) -> Iterator[None]:
    """Inside the block, press the stop button for the reader once a new file appears at ``path`` (a run's first
    training checkpoint): send this process SIGINT, as Jupyter's stop button and Ctrl-C do, once. A chapter shows an
    interrupted run this way without waiting for a reader to interrupt it."""
    path = Path(path)
    before = path.stat().st_mtime_ns if path.exists() else None
    done = threading.Event()

    def watch() -> None:
        while not done.wait(poll_seconds):
            if path.exists() and path.stat().st_mtime_ns != before:
                signal.raise_signal(signal.SIGINT)
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
