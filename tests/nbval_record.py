"""pytest plugin for ``make nbval-reader``: keep each notebook that runs through without a failure, with its outputs as
the static book shows them, so that the book is built from this run instead of executing every chapter again.

With ``TRANSFORMER_BOOK_RECORD`` naming a folder (the kernels inherit it, and record the static book's stand-ins for
their widgets: :mod:`transformer_book.viz.record`), every cell's outputs are kept as nbval receives them; when the last
cell of a notebook has passed, ``<folder>/<notebook>`` is written: the notebook as committed, each code cell with its
execution count and its outputs through :func:`~transformer_book.viz.record.to_static`. ``scripts/execute_notebooks.py``
puts it into the build's jupyter-cache. A notebook with a failed or skipped cell is not written.

    TRANSFORMER_BOOK_RECORD=_build/recorded python -m pytest -p tests.nbval_record --nbval-lax book/
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import nbformat
import nbval.plugin

from transformer_book.viz.record import RECORD_ENV, to_static

_received: list[list[dict]] = []  # the outputs of the cell running now, as received: before nbval joins its streams


def _keeping_received(coalesce_streams):
    """nbval's ``coalesce_streams``, which joins all of a cell's text of one stream into its first (moving text past
    figures): the first call of a cell's run gets the outputs as received, and a copy of them is kept."""

    def coalesce(outputs):
        if not _received:
            _received.append(copy.deepcopy(outputs))
        return coalesce_streams(outputs)

    return coalesce


def _recording_runtest(runtest):
    """nbval's cell run, then the cell's outputs kept on its notebook (``None`` there once a cell did not pass)."""

    def run(self) -> None:
        notebook = self.parent
        if not hasattr(notebook, "recorded"):
            notebook.recorded = []
        _received.clear()
        try:
            runtest(self)
        except BaseException:
            notebook.recorded = None
            raise
        if notebook.recorded is not None:
            notebook.recorded.append(_received[0] if _received else [])

    return run


def _recording_teardown(teardown):
    """nbval's notebook teardown, after writing the notebook with its static outputs when every cell passed."""

    def finish(self) -> None:
        try:
            recorded = getattr(self, "recorded", None)
            code = [cell for cell in self.nb.cells if cell.cell_type == "code"]
            if recorded is not None and len(recorded) == len(code):
                _write(self.nb, recorded, Path(os.environ[RECORD_ENV]) / Path(str(self.fspath)).name)
        finally:
            teardown(self)

    return finish


def _write(nb: nbformat.NotebookNode, recorded: list[list[dict]], path: Path) -> None:
    nb = copy.deepcopy(nb)
    for count, (cell, outputs) in enumerate(
        zip((c for c in nb.cells if c.cell_type == "code"), recorded, strict=True), start=1
    ):
        cell.execution_count = count
        cell.outputs = [nbformat.from_dict(_with_defaults(out, count)) for out in to_static(outputs)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(nb)
    temporary = path.with_suffix(".tmp")
    nbformat.write(nb, temporary)
    temporary.replace(path)


def _with_defaults(out: dict, count: int) -> dict:
    """An nbformat output from what nbval keeps of a message (display outputs need their metadata; a result, the
    count of its cell)."""
    out = dict(out)
    if out["output_type"] in ("display_data", "execute_result"):
        out.setdefault("metadata", {})
    if out["output_type"] == "execute_result":
        out["execution_count"] = count
    return out


def pytest_configure(config) -> None:
    if os.environ.get(RECORD_ENV, "").strip():
        nbval.plugin.coalesce_streams = _keeping_received(nbval.plugin.coalesce_streams)
        nbval.plugin.IPyNbCell.runtest = _recording_runtest(nbval.plugin.IPyNbCell.runtest)
        nbval.plugin.IPyNbFile.teardown = _recording_teardown(nbval.plugin.IPyNbFile.teardown)
