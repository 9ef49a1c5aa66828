"""The README's two commands in either order: a build after a run that changed the outputs shows the new outputs.

``make book`` builds the pages from the chapters' cached outputs; ``make test`` runs every chapter again, records it,
puts the recording into the same cache (``scripts/execute_notebooks.py``) and builds again, then checks the pages. The
sources have not changed between the two, so Sphinx alone would keep the first build's pages. A small book, built the
same way (myst-nb's cache mode, the book's ``fresh_outputs`` extension), stands in for the real one: it runs in
seconds, and fails when a page outlives the outputs it was built from. ``test_book_browser.py`` then checks the real
pages against the real run.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from datetime import timezone
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSIONS = ROOT / "book" / "_ext"
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
CODE = "print(open('shown.txt').read())"  # one cell, whose output changes while its code does not

pytestmark = pytest.mark.skipif(
    not Path(sys.executable).with_name("jupyter-book").exists(), reason="jupyter-book is not installed"
)


def _load(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def small_book(folder: Path, extensions: Path = EXTENSIONS) -> Path:
    """A book of one notebook page, configured as the book's _config.yml is where it matters here."""
    (folder / "_config.yml").write_text(
        "title: order\n"
        "execute:\n  execute_notebooks: cache\n  run_in_temp: false\n"
        "sphinx:\n"
        f"  local_extensions:\n    fresh_outputs: {extensions}\n"
    )
    (folder / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    (folder / "shown.txt").write_text("the first run")
    page = folder / "page.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CODE)], metadata={"kernelspec": KERNELSPEC}), page
    )
    return page


def build(folder: Path) -> str:
    """Build the book as make book does (jupyter-book, the cache in _build/.jupyter_cache); the page's HTML."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([str(jupyter_book), "build", str(folder), "-W", "-q"], check=True, env=env, capture_output=True)
    return (folder / "_build" / "html" / "page.html").read_text(encoding="utf-8")


def record(page: Path, shown: str) -> nbformat.NotebookNode:
    """The page as a recording run leaves it: the same code, with its own output."""
    notebook = nbformat.read(page, as_version=4)
    notebook.cells[0].execution_count = 1
    notebook.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text=shown + "\n")]
    return notebook


def test_a_build_after_a_recorded_run_shows_the_recorded_outputs(tmp_path: Path) -> None:
    """make book, then make test (whose recording replaces the cached outputs): the page shows the new run; a build
    that changes nothing rewrites nothing."""
    from jupyter_cache import get_cache

    execute = _load(ROOT / "scripts" / "execute_notebooks.py", "execute_notebooks")
    page = small_book(tmp_path)
    assert "the first run" in build(tmp_path)  # make book: executed into the cache

    recorded = tmp_path / "recorded"
    recorded.mkdir()
    nbformat.write(record(page, "the recorded run"), recorded / page.name)
    cache = get_cache(str(tmp_path / "_build" / ".jupyter_cache"))
    records = [cache.add_nb_to_project(str(page))]
    assert execute.cache_recorded(cache, records, recorded, tmp_path / "no-playground") == 1  # make test's recording
    html = build(tmp_path)
    assert "the recorded run" in html and "the first run" not in html

    written = (tmp_path / "_build" / "html" / "page.html").stat().st_mtime_ns
    assert "the recorded run" in build(tmp_path)  # make book again: nothing changed
    assert (tmp_path / "_build" / "html" / "page.html").stat().st_mtime_ns == written


def test_a_change_to_the_books_extensions_writes_every_page_again(tmp_path: Path) -> None:
    """What the extensions write into pages changes with their code: a build after a change to one of their scripts
    writes the page again, though neither the page nor its outputs changed."""
    extensions = tmp_path / "_ext"
    extensions.mkdir()
    (extensions / "fresh_outputs.py").write_bytes((EXTENSIONS / "fresh_outputs.py").read_bytes())
    script = extensions / "figures.js"
    script.write_text("// the first version\n")
    book = tmp_path / "book"
    book.mkdir()
    small_book(book, extensions)
    build(book)
    build(book)
    page = book / "_build" / "html" / "page.html"
    written = page.stat().st_mtime_ns
    build(book)
    assert page.stat().st_mtime_ns == written  # nothing changed: nothing written
    script.write_text("// the second version\n")
    build(book)
    assert page.stat().st_mtime_ns > written, "a change to the extensions' code left the page as it was"


EDITIONS = {"en": ROOT / "_build", "zh": ROOT / "_build" / "zh" / "_build"}  # each edition's build folder


@pytest.mark.parametrize("edition", sorted(EDITIONS))
def test_every_built_page_shows_the_latest_run_of_its_notebook(edition: str) -> None:
    """The real book, once built: no page is older than the cached run of its notebook (the run make test made, when
    it made one), in either edition, nor the Chinese copy published under the English site's zh/."""
    from jupyter_cache import get_cache

    build_folder = EDITIONS[edition]
    html = build_folder / "html"
    if not (build_folder / ".jupyter_cache").is_dir() or not html.is_dir():
        pytest.skip(f"the {edition} book is not built (make book)")
    toc_files = _load(ROOT / "scripts" / "book_toc.py", "book_toc").toc_files
    source_root = ROOT if edition == "en" else ROOT / "zh"
    cache = get_cache(str(build_folder / ".jupyter_cache"))
    stale = []
    for name in toc_files(source_root):
        notebook = source_root / f"{name}.ipynb"
        if not notebook.is_file():
            continue
        created = cache.match_cache_notebook(nbformat.read(notebook, as_version=4)).created
        ran = created.replace(tzinfo=timezone.utc).timestamp()  # jupyter-cache writes UTC, read back without a zone
        pages = [html / f"{name}.html"] + (
            [ROOT / "_build" / "html" / "zh" / f"{name}.html"] if edition == "zh" else []
        )
        stale += [f"{page.relative_to(ROOT)}" for page in pages if page.stat().st_mtime < ran]
    assert not stale, f"pages built before the latest run of their notebook: {stale}"
