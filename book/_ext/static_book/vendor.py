"""The JavaScript the pages need, vendored: the built book loads nothing from the network, and the site holds one copy.

``scripts/vendor_assets.sh`` (``make vendor``) fetches MathJax, RequireJS, d3, jQuery, ipywidgets' embed manager and
ONNX Runtime Web into ``book/_vendor/``; the English build copies them, and the plotly.js shipped with the installed
plotly package, to ``_static/vendor/`` of its output (about 54 MB), but for ``book/_vendor/tests/`` (axe-core, which
only the browser tests run).

The Chinese edition is published under ``zh/`` of the English site, so its pages load that same copy, one folder up
(``../_static/vendor/`` from its root: :func:`vendor_folder`); its build copies nothing, and removes a copy an earlier
build left. So that the Chinese build also works where it is built (``_build/zh/_build/html``, opened on its own), the
folder its pages look in there, ``_build/zh/_build/_static/vendor``, links to the English build's copy
(``_build/html/_static/vendor``, which ``make book`` builds first); where there is none, the build says so with a
warning (which fails the book's build, ``-W``), rather than leave pages without their scripts.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

from .editions import edition, english_root
from .output import is_html

logger = logging.getLogger(__name__)

VENDOR_SOURCE = Path(__file__).resolve().parents[2] / "_vendor"  # book/_vendor
VENDOR_OUT = "_static/vendor"  # relative to the English site's root (the HTML output folder of its build)
VENDOR_TESTS_ONLY = "tests"  # under VENDOR_SOURCE: what the tests use (axe-core), never copied into the site
ENGLISH_BUILD = "_build/html"  # relative to the English book's source folder: where `make book` builds it
REQUIRED = (
    "mathjax/tex-chtml.js",
    "require.js",
    "d3.min.js",
    "jquery.min.js",
    "html-manager/embed-amd.js",
    "ort/ort.wasm.min.mjs",
    "ort/ort-wasm-simd-threaded.mjs",
    "ort/ort-wasm-simd-threaded.wasm",
    "ort/ort-wasm-simd-threaded.wasm.gz",
)


def vendor_folder(app: Sphinx) -> str:
    """Where the edition's pages find the vendored assets, relative to its root: the English site's copy."""
    return english_root(app) + VENDOR_OUT


def vendored_names() -> list[str]:
    """What the English build puts in the vendor folder (book/_vendor's files and folders, and plotly.js), by their
    names there: the theme keeps its own files beside them."""
    names = [p.name for p in VENDOR_SOURCE.iterdir() if p.name != VENDOR_TESTS_ONLY and not p.name.startswith(".")]
    return sorted({*names, "plotly.min.js"})


def vendor_url_for(page: Path, outdir: Path, folder: str = VENDOR_OUT) -> str:
    """The URL of the vendor folder (``folder``, relative to the output's root) relative to an HTML file of it."""
    return posixpath.relpath(folder, page.parent.relative_to(outdir).as_posix() or ".")


def vendor_url_for_static(app: Sphinx) -> str:
    """The vendor folder's URL relative to the output's ``_static/``, where the book's scripts are (which load
    plotly.js and ONNX Runtime Web from it)."""
    return posixpath.relpath(vendor_folder(app), "_static") + "/"


def _copy_assets(app: Sphinx) -> None:
    if not is_html(app):
        return
    if edition(app) != "en":
        _use_the_english_copy(app)
        return
    source = VENDOR_SOURCE
    missing = [name for name in REQUIRED if not (source / name).is_file()]
    if missing:
        raise ExtensionError(
            f"offline assets missing from {source}: {', '.join(missing)}. Run `make vendor` "
            "(scripts/vendor_assets.sh) to fetch them from the npm registry."
        )
    target = Path(app.outdir, VENDOR_OUT)
    shutil.copytree(
        source,
        target,
        dirs_exist_ok=True,
        ignore=lambda folder, names: [VENDOR_TESTS_ONLY] if Path(folder) == source else [],
    )
    import plotly

    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", target / "plotly.min.js")


def _use_the_english_copy(app: Sphinx) -> None:
    """Another edition's build: no copy of its own (one an earlier build made goes), and the folder its pages look in
    beside its output linked to the English build's copy (see the module's docstring)."""
    outdir = Path(app.outdir)
    for name in vendored_names():  # the theme's own files there (its icon font) stay
        own = outdir / VENDOR_OUT / name
        if own.is_dir():
            shutil.rmtree(own)
        else:
            own.unlink(missing_ok=True)
    english = Path(app.srcdir).parent / ENGLISH_BUILD / VENDOR_OUT
    seen_from_here = Path(os.path.normpath(outdir / vendor_folder(app)))  # beside the output: not published with it
    if not (english / "plotly.min.js").is_file():
        logger.warning(
            f"static_book: the {edition(app)} pages load the English site's vendored assets ({vendor_folder(app)}/ "
            f"from their root, where the site publishes them), and {english} holds none: build the English book "
            "first (`make book` builds both); until then these pages lack MathJax, plotly.js and ONNX Runtime Web"
        )
        return
    if seen_from_here.is_symlink() or not seen_from_here.exists():
        seen_from_here.parent.mkdir(parents=True, exist_ok=True)
        seen_from_here.unlink(missing_ok=True)
        seen_from_here.symlink_to(os.path.relpath(english, seen_from_here.parent), target_is_directory=True)


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", _copy_assets)
