"""Execute chapter notebooks and write them back with outputs kept only where a reader or nbval needs them.

    python scripts/refresh_notebooks.py book/04_masks.ipynb zh/book/04_masks.ipynb [...]
    python scripts/refresh_notebooks.py                 # every notebook of both editions (_toc.yml, zh/_toc.yml)
    python scripts/refresh_notebooks.py --fold-only     # fold the say cells only: nothing runs (seconds)

``make refresh`` runs it (``make refresh NB="book/04_masks.ipynb zh/book/04_masks.ipynb"``; without ``NB``, every
notebook of both editions): after changing a chapter's code cells, refresh the chapter and its Chinese twin together,
so that their code stays the same and each stores its own language's paragraphs.

First every generated paragraph's cell (a *say cell*, ``scripts/say_cells.py``) is folded: a Colab form title as its
first line, its code hidden in JupyterLab (``metadata.jupyter.source_hidden``) and on Colab (``metadata.cellView``);
this needs no kernel, and is all ``--fold-only`` does. Then each notebook runs top to bottom with nbclient, in its own
folder (the build's working directory: a notebook in ``zh/book/`` writes its words in Chinese), with the kernel its
metadata names (``python3``: the Python this script runs with, as in the book build) and as a live kernel, the way
``make nbval`` runs it (the static-build marker ``TRANSFORMER_BOOK_STATIC`` is removed from the environment). Then:

- cells tagged ``nbval-check-output`` keep their outputs and execution count (the reference that
  ``pytest --nbval-lax`` compares);
- say cells keep the Markdown they displayed, so that the paragraph reads as prose before the notebook runs (in
  JupyterLab, the Notebook and Colab), and their execution count (nbval refuses a cell with outputs and none);
- every other cell loses its outputs and execution count; execution timings and the notebook-level widget state are
  dropped.

The runs the chapters train and keep (:mod:`transformer_book.runs`) go to a new temporary folder for each use of the
script: what a chapter prints comes from models trained in this refresh, never from an earlier one's or from the runs
a reader keeps in ``~/.cache``.

So committed notebooks stay small and diff well, and the book build executes them itself (cached by jupyter-cache).
A notebook that raises stops the script with the error and is not written.

The client does not play the part of ipywidgets' Output widget, which nbclient does by default: what a cell shows
inside one stays among the cell's own outputs, as nbval sees it. That is also what keeps the run from stalling.
nbclient's stand-in answers every output captured by the widget with a message to the kernel on the shell channel,
and jupyter_client sends it through a synchronous twin of the client's asyncio socket; a send processes the socket's
pending events, so when the kernel's reply to the cell arrives at that moment, its wake-up is used up and zmq.asyncio
never sees it: the client waits until the cell's timeout for a reply that has arrived (a chapter with a live
explorer stalled for the whole 600 s now and then, more often on a busy machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_toc import toc_files  # noqa: E402
from say_cells import fold, is_say_cell, stored_outputs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHECK_TAG = "nbval-check-output"
STATIC_ENV = "TRANSFORMER_BOOK_STATIC"  # transformer_book.viz.BOOK_ENV
STRICT_LANGUAGE_ENV = "TRANSFORMER_BOOK_STRICT_LANGUAGE"  # transformer_book.i18n.STRICT_ENV
RUNS_ENV = "TRANSFORMER_BOOK_RUNS"  # transformer_book.runs.RUNS_ENV


def toc_notebooks() -> list[Path]:
    """The notebooks of both editions (``_toc.yml``, then ``zh/_toc.yml``), each in reading order (the Chinese
    glossary, a Markdown page, is not one)."""
    return [
        (root / f).with_suffix(".ipynb")
        for root in (ROOT, ROOT / "zh")
        for f in toc_files(root)
        if not (root / f).with_suffix(".md").is_file()
    ]


def fold_say_cells(nb: nbformat.NotebookNode) -> int:
    """Fold every say cell of ``nb`` (``scripts/say_cells.py``); return how many changed."""
    return sum(fold(cell) for cell in nb.cells if is_say_cell(cell))


def joined_streams(outputs: list) -> list:
    """``outputs`` with the text of adjacent outputs of one stream joined, as nbval compares them and the book shows
    them: a print whose text reached the client in two messages is stored as one output, as on any other run."""
    joined: list = []
    for out in outputs:
        if (
            out.output_type == "stream"
            and joined
            and joined[-1].output_type == "stream"
            and joined[-1].name == out.name
        ):
            joined[-1].text += out.text
        else:
            joined.append(out)
    return joined


def strip_outputs(nb: nbformat.NotebookNode) -> tuple[int, int]:
    """Keep the outputs of cells tagged ``nbval-check-output`` and the Markdown of say cells only; return (cells kept,
    cells stripped)."""
    kept = stripped = 0
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        if CHECK_TAG in cell.metadata.get("tags", []):
            kept += 1  # outputs and execution count stay: nbval rejects a reference cell with outputs but no count
            cell.outputs = joined_streams(cell.outputs)
            continue
        if is_say_cell(cell):
            cell.outputs = stored_outputs(cell.outputs)  # and the count: nbval refuses outputs without one
            kept += 1
            continue
        cell.execution_count = None
        if cell.outputs:
            stripped += 1
            cell.outputs = []
    nb.metadata.pop("widgets", None)
    return kept, stripped


def execute(nb: nbformat.NotebookNode, folder: Path, timeout: int | None) -> None:
    """Run ``nb`` top to bottom in a live kernel, in ``folder`` (its own), filling in its outputs; ``timeout``: seconds
    per cell."""
    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel, resources={"metadata": {"path": str(folder)}})
    client.widget_registry = {}  # no stand-in for ipywidgets' Output widget: see the module docstring
    client.execute()


def refresh(path: Path, timeout: int, run: bool = True) -> None:
    """Fold ``path``'s say cells, then (``run``) execute it and keep the outputs a reader or nbval needs."""
    nb = nbformat.read(path, as_version=4)
    folded = fold_say_cells(nb)
    if run:
        execute(nb, path.parent, timeout)
        kept, stripped = strip_outputs(nb)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    done = f"{folded} say cell(s) folded"
    if run:
        done += f"; outputs kept in {kept} checked or say cell(s), removed from {stripped}"
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {done}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="notebooks to refresh (default: every one of both editions' tocs)"
    )
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    parser.add_argument("--fold-only", action="store_true", help="fold the say cells; run nothing, keep every output")
    args = parser.parse_args(argv)
    os.environ.pop(STATIC_ENV, None)  # the kernel inherits this environment: run it live, as nbval does
    os.environ[STRICT_LANGUAGE_ENV] = "1"  # a Chinese chapter's missing translation is an error here
    notebooks = [p.resolve() for p in args.notebooks] or toc_notebooks()
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="transformer-runs-") as runs:
        os.environ[RUNS_ENV] = runs
        for path in notebooks:
            refresh(path, args.timeout, run=not args.fold_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
