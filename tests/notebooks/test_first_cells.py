"""Each chapter's first code cell checks for the libraries its chapter needs and, on Colab or wherever one is missing,
installs the package from its repository; where the README's local path installed it, it installs nothing.

- What a chapter needs is derived from its own imports: those of its code cells, and through them those of every
  module of the package they load (imports inside functions included, optional ones, in ``try``/``except
  ImportError``, left out), less the standard library and what comes with the package or with any kernel.
- The cell's own logic runs (first_cell_runner.py, its magics recorded, not run): in the reader's environment it
  must find everything and run to its end (``make nbval-reader`` gives that environment's Python in
  TRANSFORMER_BOOK_READER_PYTHON); with any one needed module hidden it must install the package from the repository;
  with a library that the chapter does not use hidden it must not.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from book_toc import toc_files  # noqa: E402
from sync_repository_url import repository_url  # noqa: E402

RUNNER = ROOT / "tests" / "notebooks" / "first_cell_runner.py"
READER_PYTHON = os.environ.get("TRANSFORMER_BOOK_READER_PYTHON")  # set by `make nbval-reader`
PACKAGES = ("transformer", "transformer_book")  # the repository's own, installed together as transformer-interactive
COMES_WITH = {"torch", "numpy", "IPython"}  # the package's own requirements, and what every Jupyter kernel has
# Modules that a package module needs without importing them itself: torch.onnx's exporter imports these when it runs.
INDIRECT = {"transformer.export": {"onnx", "onnxscript"}}
LIVE_LIBRARIES = (  # what install_extra("live") installs: the extra's imports, and bertviz without its dependencies
    "plotly",
    "ipywidgets",
    "bertviz",
    "sacrebleu",
    "onnx",
    "onnxscript",
    "babel",
    "num2words",
    "tokenizers",
)
CHAPTERS = [ROOT / f"{name}.ipynb" for name in toc_files(ROOT) if (ROOT / f"{name}.ipynb").is_file()]
INSTALL = (
    f"pip install -q --no-deps transformer-interactive @ git+{repository_url(ROOT)}"  # as first_cell_runner records it
)


def _module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _optional(parents: list[ast.AST]) -> bool:
    """Inside a ``try`` that handles ImportError: the code runs without the module."""
    caught = {"ImportError", "ModuleNotFoundError"}
    return any(
        isinstance(p, ast.Try) and any(isinstance(h.type, ast.Name) and h.type.id in caught for h in p.handlers)
        for p in parents
    )


def imported_names(tree: ast.AST, package: str = "") -> set[str]:
    """Every module ``tree`` imports, wherever the import stands (``from m import x`` gives ``m`` and ``m.x``, which
    may be a submodule), relative imports resolved against ``package``; optional imports left out."""
    found: set[str] = set()

    def visit(node: ast.AST, parents: list[ast.AST]) -> None:
        if isinstance(node, ast.Import) and not _optional(parents):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not _optional(parents):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child, [*parents, node])

    visit(tree, [])
    return found


def libraries_needed(names: set[str]) -> set[str]:
    """The top-level modules outside the repository that importing ``names`` loads, following the package's modules."""
    seen: set[str] = set()
    needed: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        top = name.split(".")[0]
        if top not in PACKAGES:
            if top not in sys.stdlib_module_names:
                needed.add(top)
            continue
        needed |= INDIRECT.get(name, set())
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # a module's packages run their __init__ first
        todo += _module_imports(name)
    return needed - COMES_WITH


@functools.cache
def _module_imports(name: str) -> frozenset[str]:
    """What the package's module ``name`` imports; nothing when ``name`` is an attribute (``from package import x``)."""
    path = _module_file(name)
    if path is None:
        return frozenset()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return frozenset(imported_names(ast.parse(path.read_text(encoding="utf-8")), package))


def _code_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def chapter_needs(path: Path) -> tuple[str, ...]:
    """What the first cell of chapter ``path`` must check: the package, then the libraries of its other cells."""
    transform = TransformerManager().transform_cell
    names = set().union(*(imported_names(ast.parse(transform(code))) for code in _code_cells(path)[1:]))
    return ("transformer", *sorted(libraries_needed(names)))


def cell_needs(path: Path) -> tuple[str, ...] | None:
    """The tuple the first code cell assigns to ``NEEDS``, or None."""
    tree = ast.parse(TransformerManager().transform_cell(_code_cells(path)[0]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["NEEDS"]:
            return tuple(ast.literal_eval(node.value))
    return None


def run_first_cells(python: str, plan: list[dict]) -> dict:
    """first_cell_runner.py's report for ``plan``, run by ``python`` from the book's folder (as a kernel is)."""
    out = subprocess.run(
        [python, str(RUNNER)],
        input=json.dumps(plan),
        capture_output=True,
        text=True,
        cwd=ROOT / "book",
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "TRANSFORMER_BOOK_STATIC"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def cell_template(path: Path) -> str:
    """The first code cell with its ``NEEDS`` assignment taken out: what every chapter's first cell must share."""
    return re.sub(r"^NEEDS = \((?:[^()]|\n)*?\)[^\n]*\n", "NEEDS = ...\n", _code_cells(path)[0], count=1, flags=re.M)


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def test_the_derivation_sees_imports_inside_functions_and_skips_optional_ones() -> None:
    code = (
        "import json\nfrom transformer_book import viz\n"
        "def f():\n    import ipywidgets\n"
        "try:\n    import tqdm\nexcept ImportError:\n    tqdm = None\n"
    )
    names = imported_names(ast.parse(code))
    assert {"json", "transformer_book", "transformer_book.viz", "ipywidgets"} <= names and "tqdm" not in names
    assert libraries_needed({"json", "ipywidgets"}) == {"ipywidgets"}
    assert {"onnx", "onnxscript"} <= libraries_needed({"transformer.export"})  # INDIRECT, through the module


@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids(CHAPTERS))
def test_first_cell_checks_what_its_chapter_imports(chapter: Path) -> None:
    expected = chapter_needs(chapter)
    assert cell_needs(chapter) == expected, f"{chapter.name}: its first code cell should set NEEDS = {expected}"
    assert set(expected[1:]) <= set(LIVE_LIBRARIES), (
        f"{chapter.name} imports {sorted(set(expected[1:]) - set(LIVE_LIBRARIES))}, which the live extra does not install"
    )


def test_every_first_cell_is_the_same_but_for_what_its_chapter_needs() -> None:
    first = cell_template(CHAPTERS[0])
    assert "NEEDS = ...\n" in first and 'install_extra("live")' in first
    for chapter in CHAPTERS[1:]:
        assert cell_template(chapter) == first, f"{chapter.name}'s first code cell differs from {CHAPTERS[0].name}'s"


@pytest.fixture(scope="module")
def hidden_trials() -> tuple[list[dict], dict]:
    """Every chapter's first cell with each module it checks hidden in turn, and with a library it does not use
    hidden; in the reader's environment when there is one, else in this one."""
    plan = []
    for chapter in CHAPTERS:
        needs = cell_needs(chapter) or ()
        unused = [name for name in LIVE_LIBRARIES if name not in needs][:1]
        plan += [{"notebook": str(chapter), "hide": [name], "needed": True} for name in needs]
        plan += [{"notebook": str(chapter), "hide": unused, "needed": False} for _ in unused[:1]]
    return plan, run_first_cells(READER_PYTHON or sys.executable, plan)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids(CHAPTERS))
def test_first_cell_installs_the_package_when_a_module_it_checks_is_missing(chapter: Path, hidden_trials) -> None:
    plan, report = hidden_trials
    trials = [(t, r) for t, r in zip(plan, report["trials"], strict=True) if t["notebook"] == str(chapter)]
    assert any(t["needed"] for t, _ in trials), f"{chapter.name}: its first cell checks no module"
    for trial, result in trials:
        assert result["error"] is None, f"{chapter.name} with {trial['hide']} missing:\n{result['error']}"
        if trial["needed"]:
            assert result["runs"] == [INSTALL], f"{chapter.name} with {trial['hide']} missing ran {result['runs']}"
        else:
            assert result["runs"] == [] and result["finished"], f"{chapter.name} needs no {trial['hide']}"


@pytest.fixture(scope="module")
def reader_report() -> dict:
    if not READER_PYTHON:
        pytest.skip("`make nbval-reader` runs this with the reader environment's Python")
    return run_first_cells(READER_PYTHON, [{"notebook": str(chapter)} for chapter in CHAPTERS])


def test_the_cells_ran_in_the_reader_environment(reader_report: dict) -> None:
    assert Path(reader_report["prefix"]).resolve() == Path(READER_PYTHON).parents[1].resolve()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=_ids(CHAPTERS))
def test_first_cell_installs_nothing_in_the_reader_environment(chapter: Path, reader_report: dict) -> None:
    result = reader_report["trials"][CHAPTERS.index(chapter)]
    assert result["error"] is None, (
        f"{chapter.name}'s first cell failed in the reader's environment:\n{result['error']}"
    )
    assert result["runs"] == [], f"{chapter.name}'s first cell would run {result['runs']} in the reader's environment"
    assert result["finished"]
