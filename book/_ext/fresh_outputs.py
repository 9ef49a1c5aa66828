"""Sphinx extension: a page is written again when the outputs it shows changed, not only when its source did.

Sphinx rebuilds a page when its source file changes. A chapter's outputs live elsewhere: in the build's jupyter-cache,
which myst-nb reads in ``execute_notebooks: cache`` mode. ``make test`` puts a new run of every chapter there
(``scripts/execute_notebooks.py`` takes the recording of ``make nbval-reader`` in place of an earlier execution of the
same code); with the sources unchanged, Sphinx would keep every page of an earlier ``make book`` and show outputs of
another run than the one the tests check.

myst-nb keeps, for each page it read, the time the cache record it read was made (``exec_data["mtime"]``). Before
Sphinx reads anything (``env-get-outdated``), each notebook page is matched against the cache again; a page whose
record is another one now, or is gone, is read and written again with the others that changed.

What the book's own extensions write into every page (the figures' controls, the playground, the editions' words from
the catalogue) changes when their code does, and Sphinx does not look at it: a digest of that code and catalogue is a
configuration value of the build (``book_extensions_digest``), so a change to it reads and writes every page again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

logger = logging.getLogger(__name__)
EXTENSIONS = Path(__file__).resolve().parent  # book/_ext: the extensions, their scripts and styles
CATALOGUE = EXTENSIONS.parents[1] / "transformer_book" / "locale"  # the words the extensions put into pages


def extensions_digest(folders: tuple[Path, ...] = (EXTENSIONS, CATALOGUE)) -> str:
    """SHA-256 of the code, scripts, styles and catalogue files under ``folders`` (their paths and contents)."""
    digest = hashlib.sha256()
    for folder in folders:
        files = [path for path in folder.rglob("*") if path.suffix in (".py", ".js", ".css", ".json")]
        for path in sorted(files):
            digest.update(f"{path.relative_to(folder).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_path(app: Sphinx) -> Path:
    """The jupyter-cache myst-nb reads (jupyter-book points it at ``<build>/.jupyter_cache``)."""
    config = getattr(app.env, "mystnb_config", None)  # set by myst-nb's builder-inited handler
    return Path(getattr(config, "execution_cache_path", "") or Path(app.outdir).parent / ".jupyter_cache")


def recorded_mtime(env: BuildEnvironment, docname: str) -> float | None:
    """When the cache record a page was last read from was made (None: not read from the cache)."""
    exec_data = getattr(env, "nb_metadata", {}).get(docname, {}).get("exec_data")
    return exec_data.get("mtime") if exec_data and exec_data.get("method") == "cache" else None


def pages_with_new_outputs(app: Sphinx, env: BuildEnvironment, added: set, changed: set, removed: set) -> list[str]:
    """The notebook pages, among those Sphinx would keep, whose cache record is not the one they were built from."""
    if not cache_path(app).is_dir():
        return []
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_path(app)))
    stale = []
    for docname in sorted(env.all_docs.keys() - added - changed - removed):
        built_from = recorded_mtime(env, docname)
        source = Path(env.doc2path(docname))
        if built_from is None or source.suffix != ".ipynb" or not source.is_file():
            continue
        try:
            now = cache.match_cache_notebook(nbformat.read(source, as_version=4)).created.timestamp()
        except KeyError:  # no longer cached: myst-nb executes it again
            now = None
        if now != built_from:
            stale.append(docname)
    if stale:
        logger.info(f"fresh_outputs: {len(stale)} page(s) whose outputs changed in the cache: {', '.join(stale)}")
    return stale


def setup(app: Sphinx) -> dict:
    app.connect("env-get-outdated", pages_with_new_outputs)
    app.add_config_value("book_extensions_digest", extensions_digest(), "env")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
