"""The build's HTML output, as the jobs of :mod:`static_book` share it: the book's own scripts and stylesheet copied
into its ``_static/`` folder, and its pages rewritten in place once Sphinx has written them all.

Several jobs rewrite the written pages (CDN URLs, figures, the toggles of hidden cells): each reads and writes them
itself, after the build, so that what it changes is said in one place and the jobs stay apart.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

EXT = Path(__file__).resolve().parents[1]  # book/_ext: the scripts and the stylesheet the pages load sit here


def is_html(app: Sphinx) -> bool:
    return app.builder.format == "html"


def copy_to_static(app: Sphinx, *names: str) -> None:
    """Copy files of ``book/_ext`` to the output's ``_static/`` (not through ``html_static_path``: Jupyter Book adds
    every .js and .css found there to every page)."""
    static = Path(app.outdir, "_static")
    static.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy2(EXT / name, static / name)


def html_pages(outdir: Path) -> list[Path]:
    """Every HTML page of the output, but for what ``_static/`` holds."""
    return [page for page in sorted(outdir.rglob("*.html")) if not page.is_relative_to(outdir / "_static")]


def rewrite_pages(app: Sphinx, rewrite: Callable[[str, Path], str]) -> int:
    """Write ``rewrite(text, page)`` over each page of the output where it changes the text; how many changed."""
    outdir, changed = Path(app.outdir), 0
    for page in html_pages(outdir):
        text = page.read_text(encoding="utf-8")
        new = rewrite(text, page)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    return changed
