"""The JavaScript the pages need, vendored: the built book loads nothing from the network.

``scripts/vendor_assets.sh`` (``make vendor``) fetches MathJax, RequireJS, d3, jQuery, ipywidgets' embed manager and
ONNX Runtime Web into ``book/_vendor/``; the build copies them, and the plotly.js shipped with the installed plotly
package, to ``_static/vendor/`` of its output, but for ``book/_vendor/tests/`` (axe-core, which only the browser tests
run).
"""

from __future__ import annotations

import posixpath
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from .output import is_html

VENDOR_SOURCE = Path(__file__).resolve().parents[2] / "_vendor"  # book/_vendor, for either edition's build
VENDOR_OUT = "_static/vendor"  # relative to the HTML output folder
VENDOR_TESTS_ONLY = "tests"  # under VENDOR_SOURCE: what the tests use (axe-core), never copied into the site
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


def vendor_url_for(page: Path, outdir: Path) -> str:
    """The vendor folder's URL relative to an HTML file of the output."""
    return posixpath.relpath(VENDOR_OUT, page.parent.relative_to(outdir).as_posix() or ".")


def _copy_assets(app: Sphinx) -> None:
    if not is_html(app):
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


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", _copy_assets)
