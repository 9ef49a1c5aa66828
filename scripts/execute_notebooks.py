"""Execute the book's notebooks into the build's jupyter-cache, two at a time, before ``jupyter-book build`` reads them.

myst-nb executes the notebooks of a build one after another; on two cores half the machine then waits. This script
runs the same execution (jupyter-cache's, which myst-nb's ``execute_notebooks: cache`` mode uses: the same cache
folder, each notebook with ``book/`` as its working directory, the same timeout) for every notebook of ``_toc.yml``
that the cache does not hold yet, ``JOBS`` at a time, so that the build finds them all cached. The environment is the
static build's: ``TRANSFORMER_BOOK_STATIC=1``, and the playground's exports go where the build's Sphinx extension
would send them (``_build/html/_static/playground``; a cached playground notebook whose exports are missing runs
again, as the extension makes the build do). A notebook that fails stops the script with its traceback.

A notebook that a recording run left in ``_build/recorded`` (``make nbval-reader``: every chapter live in the reader's
environment, with the static book's outputs recorded; ``tests/nbval_record.py``) is not executed again: it goes into
the cache as it is, in place of an earlier execution of the same code, and the file is removed (a recording of other
code matches nothing, and the notebook runs here). ``make test`` builds the book this way, so each chapter runs once.

The Chinese edition (``--edition zh``: ``zh/``, built into ``_build/zh/_build``) is done the same way, each notebook
with ``zh/book/`` as its working directory (which makes its words Chinese: :mod:`transformer_book.i18n`), from the
recording that ``make nbval-colab`` leaves in ``_build/recorded-zh``.

The runs the chapters train and keep (:mod:`transformer_book.runs`: a chapter that needs a model an earlier one trained
with the same settings loads it) go to a folder of the edition's own, emptied first: each model trains once per
execution, and never comes from an earlier build or from the runs a reader keeps in ``~/.cache``.

    python scripts/execute_notebooks.py [--jobs 2] [--edition zh]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import time
from pathlib import Path
from typing import NamedTuple

import nbformat
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.basic import ExecutionWorkerLocalMProc, ProcessData

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_toc import toc_files  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


class Edition(NamedTuple):
    """Where an edition's book is, and where its build and its recording run put things. (A NamedTuple: the tests load
    this script by its path, and a dataclass needs its module registered.)"""

    root: Path  # the book's folder: _config.yml, _toc.yml
    build: Path  # jupyter-book's _build folder for it (its cache and html/)
    recorded: Path  # where its recording run leaves the notebooks it ran (TRANSFORMER_BOOK_RECORD)
    runs: Path  # where its chapters keep the runs they train (TRANSFORMER_BOOK_RUNS), emptied before they execute

    @property
    def cache(self) -> Path:  # where jupyter-book points myst-nb's cache
        return self.build / ".jupyter_cache"

    @property
    def playground(self) -> Path:  # book/_ext/static_book/playground.py: outdir / PLAYGROUND_OUT
        return self.build / "html" / "_static" / "playground"


# The English book (make nbval-reader records it); the Chinese one, built with --path-output _build/zh, whose
# chapters make nbval-colab runs and records.
EDITIONS = {
    "en": Edition(ROOT, ROOT / "_build", ROOT / "_build" / "recorded", ROOT / "_build" / "runs" / "book"),
    "zh": Edition(
        ROOT / "zh",
        ROOT / "_build" / "zh" / "_build",
        ROOT / "_build" / "recorded-zh",
        ROOT / "_build" / "runs" / "book-zh",
    ),
}


def stale_notebooks(cache: object, notebooks: list[Path], playground: Path) -> tuple[list, list]:
    """Add ``notebooks`` to ``cache``'s project; return all their records and those to execute: not cached, or a
    playground notebook (one that calls ``write_playground(``) while ``playground`` holds no exported models."""
    records = [cache.add_nb_to_project(str(path)) for path in notebooks]
    stale = [r for r in records if cache.get_cached_project_nb(r.pk) is None or exports_missing(r.uri, playground)]
    return records, stale


def exports_missing(notebook: str, playground: Path) -> bool:
    """Whether ``notebook`` is a playground notebook (it calls ``write_playground(``) and ``playground`` holds no
    exported models: then it must run here, whatever the cache holds."""
    writes = "write_playground(" in Path(notebook).read_text(encoding="utf-8")
    return writes and not (Path(playground) / "manifest.json").is_file()


def cache_recorded(cache: object, records: list, recorded: Path, playground: Path) -> int:
    """Put the notebooks of ``records`` that ``recorded`` holds into ``cache``, in place of what it holds for the same
    code (the pages then show the run that exported the playground's models), each file removed once read, unless
    their playground exports are missing; return how many."""
    taken = 0
    for record in records:
        path = recorded / Path(record.uri).name
        if path.is_file() and not exports_missing(record.uri, playground):
            cache.cache_notebook_bundle(CacheBundleIn(nbformat.read(path, as_version=4), record.uri), overwrite=True)
            path.unlink()
            taken += 1
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", 2)), help="notebooks at a time")
    parser.add_argument("--edition", choices=sorted(EDITIONS), default="en", help="the English book or the Chinese")
    args = parser.parse_args()
    edition = EDITIONS[args.edition]
    timeout = yaml.safe_load((edition.root / "_config.yml").read_text())["execute"]["timeout"]
    os.environ["TRANSFORMER_BOOK_STATIC"] = "1"
    os.environ["TRANSFORMER_BOOK_PLAYGROUND"] = str(edition.playground)
    os.environ["TRANSFORMER_BOOK_STRICT_LANGUAGE"] = "1"  # a missing translation fails the Chinese chapter's run
    shutil.rmtree(edition.runs, ignore_errors=True)
    os.environ["TRANSFORMER_BOOK_RUNS"] = str(edition.runs)  # transformer_book.runs.RUNS_ENV
    cache = get_cache(str(edition.cache))
    root = edition.root
    notebooks = [root / f"{name}.ipynb" for name in toc_files(root) if (root / f"{name}.ipynb").is_file()]
    records = [cache.add_nb_to_project(str(path)) for path in notebooks]
    taken = cache_recorded(cache, records, edition.recorded, edition.playground)
    records, stale = stale_notebooks(cache, notebooks, edition.playground)  # a recording of other code is not a match
    print(
        f"execute_notebooks ({args.edition}): {taken} of {len(records)} notebooks taken from the recording run, "
        f"{len(records) - len(stale)} cached in all; executing {len(stale)}, {args.jobs} at a time",
        flush=True,
    )
    started = time.perf_counter()
    # Last chapter first: the later chapters train models and take longest, so none of them starts at the end alone.
    work = [ProcessData(r.pk, r.uri, cache, timeout, False) for r in reversed(stale)]
    with multiprocessing.Pool(args.jobs) as pool:  # chunksize 1: a free worker takes the next notebook
        results = pool.map(ExecutionWorkerLocalMProc(), work, chunksize=1)
    failed = [uri for status, uri in results if status != 0]
    for uri in failed:
        print(f"\n{uri} failed:\n{cache.get_project_record(uri).traceback}", file=sys.stderr)
    print(
        f"execute_notebooks: {len(stale) - len(failed)} executed, {len(failed)} failed, in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
