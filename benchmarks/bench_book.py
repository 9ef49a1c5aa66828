"""The book: time to execute every notebook, cold build time, and the weight of each built page.

- execute: each chapter of ``_toc.yml`` runs top to bottom exactly as the book build runs it: jupyter-cache's
  executor (``single_nb_execution``, what myst-nb calls), a fresh kernel with ``book/`` as its working directory,
  ``TRANSFORMER_BOOK_STATIC=1`` (figures written as the static book writes them) and the per-cell timeout of
  ``_config.yml``. Timed with the kernel's start. Goal: all chapters together <= 3 minutes on 2 cores.
- build: a cold ``jupyter-book build`` (the flags of ``make book``) into a temporary folder with an empty
  jupyter-cache there, so every notebook executes again and Sphinx writes every page. The repository's ``_build/``
  (the real book and its cache) is never touched.
- weight: each built HTML page plus the page-specific files it loads (its images, ...), excluding the shared assets
  under ``_static/`` (the theme, MathJax, plotly.js), which a browser fetches once for the whole book.
  Goal: no page over 1.5 MB.

Run ``python benchmarks/bench_book.py`` (about 7 minutes on 2 cores: it executes the book twice); ``--skip-build``
(no pages weighed unless ``--html-dir DIR`` names a build to measure) makes it shorter, and ``--quick`` executes only
the smallest chapter and skips the build. The kernels use PyTorch's default threads, as in the book build (no
``--threads``). Writes ``results/book.json`` (with a digest of every chapter's code, so that the book can show which
chapters changed since); exits with 1 when a notebook or the build failed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from book_toc import toc_files  # noqa: E402
from common import ROOT, parse_args, parser, write_results  # noqa: E402

BOOK_DIR = ROOT / "book"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
EXECUTE_GOAL_S = 180.0
PAGE_GOAL_BYTES = 1_500_000
SHARED = "_static"
_RESOURCE = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"'#?]+)""", re.IGNORECASE)


def toc_notebooks() -> list[Path]:
    """The chapters the book builds, in the order of ``_toc.yml``."""
    return [ROOT / f"{f}.ipynb" for f in toc_files(ROOT)]


def execute_notebook(path: Path, timeout: int | None) -> dict:
    """Run one notebook as the book build does (see the module docstring) and time it, kernel start included."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    nb = nbformat.read(path, as_version=4)
    allow_errors = bool(CONFIG.get("execute", {}).get("allow_errors", False))
    result = single_nb_execution(
        nb, cwd=str(path.resolve().parent), timeout=timeout, allow_errors=allow_errors, meta_override=True
    )
    error = None
    if result.err is not None:  # a failing chapter is a result to report, not a reason to stop measuring the others
        failed = [
            i for i, c in enumerate(nb.cells) if any(o.get("output_type") == "error" for o in c.get("outputs", []))
        ]
        err = result.err  # CellExecutionError names the cell's exception; a CellTimeoutError says what timed out
        error = f"{err.ename}: {err.evalue}" if hasattr(err, "ename") else f"{type(err).__name__}: {err}"
        if failed:
            error += f" (cell {failed[0]}, id {nb.cells[failed[0]].get('id', '?')})"
    code_cells = sum(cell.cell_type == "code" for cell in nb.cells)
    return dict(
        kind="execute",
        notebook=path.name,
        seconds=round(result.time, 2),
        code_cells=code_cells,
        ok=error is None,
        error=error,
    )


def cold_build(output: Path, timeout: int) -> dict:
    """``jupyter-book build`` of the repository into ``output`` with a fresh jupyter-cache there, timed."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config.setdefault("execute", {})["cache"] = str(output / "jupyter_cache")
    extensions = config.get("sphinx", {}).get("local_extensions") or {}
    for name, folder in extensions.items():  # relative to the configuration file, which now lives in `output`
        extensions[name] = str(ROOT / folder)
    config_path = output / "_config.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    command = [
        "jupyter-book",
        "build",
        str(ROOT),
        "--path-output",
        str(output),
        "--config",
        str(config_path),
        "-W",
        "-n",
        "--keep-going",
        "-q",
    ]  # as `make book`: a warning fails the build
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        ok, tail = done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    except subprocess.TimeoutExpired:
        ok, tail = False, f"timed out after {timeout} s"
    return dict(kind="build", seconds=round(time.perf_counter() - start, 2), ok=ok, log_tail=None if ok else tail)


def page_weights(html_dir: Path) -> tuple[list[dict], int]:
    """One entry per HTML page (its bytes plus the local non-shared files it loads), and the shared assets' bytes."""
    pages = []
    for page in sorted(html_dir.rglob("*.html")):
        relative = page.relative_to(html_dir)
        if relative.parts[0] == SHARED:
            continue
        resources = set()
        for target in _RESOURCE.findall(page.read_text(errors="replace")):
            if "://" in target or target.startswith(("data:", "mailto:", "javascript:")) or target.endswith(".html"):
                continue
            file = (page.parent / target).resolve()
            inside = file.is_file() and file.is_relative_to(html_dir.resolve())
            if inside and file.relative_to(html_dir.resolve()).parts[0] != SHARED:
                resources.add(file)
        html_bytes = page.stat().st_size
        resource_bytes = sum(f.stat().st_size for f in resources)
        pages.append(
            dict(
                kind="page",
                page=relative.as_posix(),
                bytes=html_bytes + resource_bytes,
                html_bytes=html_bytes,
                resource_bytes=resource_bytes,
                resources=len(resources),
            )
        )
    shared = html_dir / SHARED
    shared_bytes = sum(f.stat().st_size for f in shared.rglob("*") if f.is_file()) if shared.is_dir() else 0
    return pages, shared_bytes


def main() -> None:
    p = parser(__doc__.splitlines()[0], threads=False)
    p.add_argument("--notebooks", type=Path, nargs="*", help="notebooks to execute (default: the chapters of _toc.yml)")
    p.add_argument("--skip-execute", action="store_true", help="do not execute the notebooks one by one")
    p.add_argument("--skip-build", action="store_true", help="no cold build (page weights come from --html-dir)")
    p.add_argument("--html-dir", type=Path, help="measure the pages of this built book instead of a fresh build")
    p.add_argument(
        "--timeout",
        type=int,
        default=CONFIG.get("execute", {}).get("timeout"),
        help="seconds allowed per cell (default: the book's, from _config.yml)",
    )
    p.add_argument("--build-timeout", type=int, default=1800, help="seconds allowed for the cold build")
    args = parse_args(p)
    os.environ["TRANSFORMER_BOOK_STATIC"] = "1"  # kernels inherit it: figures as in the built book
    notebooks = args.notebooks if args.notebooks is not None else toc_notebooks()
    if args.quick and args.notebooks is None:
        notebooks = sorted(notebooks, key=lambda n: n.stat().st_size)[:1]
    results: list[dict] = []

    if not args.skip_execute:
        for notebook in notebooks:
            entry = execute_notebook(notebook, args.timeout)
            results.append(entry)
            print(
                f"execute {entry['notebook']:<32} {entry['seconds']:7.1f} s {'' if entry['ok'] else entry['error']}",
                flush=True,
            )
    executed = [r for r in results if r["kind"] == "execute"]
    total_execute = round(sum(r["seconds"] for r in executed), 2)

    with tempfile.TemporaryDirectory(prefix="book-build-") as tmp:
        html_dir = args.html_dir
        if not (args.quick or args.skip_build):
            entry = cold_build(Path(tmp), args.build_timeout)
            results.append(entry)
            print(f"cold build {entry['seconds']:.1f} s{'' if entry['ok'] else ' FAILED: ' + str(entry['log_tail'])}")
            html_dir = html_dir or Path(tmp) / "_build" / "html"
        pages, shared_bytes = page_weights(html_dir) if html_dir is not None and html_dir.is_dir() else ([], 0)
    results += pages
    for page in pages:
        print(f"page {page['page']:<40} {page['bytes'] / 1e6:7.3f} MB")
    heaviest = max(pages, key=lambda page: page["bytes"], default=None)
    summary = dict(
        notebooks_executed=len(executed),
        execute_total_s=total_execute,
        execute_goal_s=EXECUTE_GOAL_S,
        execute_ok=all(r["ok"] for r in executed),
        shared_assets_bytes=shared_bytes,
        page_goal_bytes=PAGE_GOAL_BYTES,
        heaviest_page=heaviest["page"] if heaviest else None,
        heaviest_page_bytes=heaviest["bytes"] if heaviest else None,
    )
    print(
        f"execute total {total_execute:.1f} s (goal <= {EXECUTE_GOAL_S:.0f} s); "
        f"heaviest page {summary['heaviest_page']} {(summary['heaviest_page_bytes'] or 0) / 1e6:.2f} MB "
        f"(goal <= {PAGE_GOAL_BYTES / 1e6} MB); shared assets {shared_bytes / 1e6:.1f} MB"
    )
    packages = [ROOT / "transformer", ROOT / "transformer_book"]
    sources = [f.relative_to(ROOT).as_posix() for package in packages for f in package.rglob("*.py")]
    sources += [n.resolve().relative_to(ROOT).as_posix() for n in notebooks if n.resolve().is_relative_to(ROOT)]
    sources += ["_config.yml", "_toc.yml"]
    path = write_results(
        "book", results, extra=dict(summary=summary, quick=args.quick), out_dir=args.out, sources=sources
    )
    print(f"wrote {path}")
    build_ok = all(r["ok"] for r in results if r["kind"] == "build")
    sys.exit(0 if summary["execute_ok"] and build_ok else 1)


if __name__ == "__main__":
    main()
