"""The package boundaries: ``transformer`` is the model core (torch and numpy only), ``transformer.train`` the training
and data wing beside it, ``transformer_book`` the book kit.

Imports run one way: the kit uses the wing and the core, the wing uses the core, the core uses neither. Importing the
core loads nothing of the wing; importing the core or the wing loads no figure, notebook or progress-bar library;
importing the kit changes no global state (a chapter switches the renderer on in its first cell)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK_ONLY = ("plotly", "IPython", "ipywidgets", "bertviz", "transformer_book", "pandas", "matplotlib")
# The wing imports these inside the functions that use them (the progress bar; BLEU and chrF) and does without them.
OPTIONAL = ("tqdm", "sacrebleu")


def _imported_modules(code: str) -> set[str]:
    """The top-level names of every module a fresh interpreter has loaded after running ``code``."""
    return {name.split(".")[0] for name in _loaded(code)}


CORE_LINES = (
    2000  # small enough to read in one sitting, as formatted (about 1,920 lines today): room to grow, not to pack
)


def _loaded(code: str) -> list[str]:
    """Every module a fresh interpreter has loaded after running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return json.loads(out.splitlines()[-1])


@pytest.mark.parametrize("code", ["import transformer", "import transformer.train.cli", "import transformer.interop"])
@pytest.mark.slow
def test_importing_the_core_or_the_wing_loads_no_book_library(code: str) -> None:
    loaded = _imported_modules(code)
    unwanted = {*BOOK_ONLY, "sacrebleu"}  # (torch itself loads tqdm when it is installed)
    assert not loaded & unwanted, f"{code!r} loaded {sorted(loaded & unwanted)}"


@pytest.mark.slow
def test_importing_the_core_loads_only_the_core() -> None:
    """Beyond what torch and numpy load themselves, ``import transformer`` adds only modules of the core: no training
    loop, no data-parallel engine of ours, no data set, no progress bar."""
    before = set(_loaded("import numpy, torch"))
    added = sorted(set(_loaded("import numpy, torch, transformer")) - before)
    assert added and all(m == "transformer" or m.startswith("transformer.") for m in added), added
    assert not [m for m in added if m.startswith("transformer.train")], added


def test_the_core_stays_within_its_line_budget() -> None:
    lines = sum(len(path.read_text().splitlines()) for path in (ROOT / "transformer").glob("*.py"))
    assert lines <= CORE_LINES, (
        f"the core has {lines} lines; keep it under {CORE_LINES} (move what it does not need out)"
    )


def _imports_of(path: Path, module_level: bool = False) -> set[str]:
    """Absolute module names that ``path`` imports (relative imports resolved against its package); with
    ``module_level``, only the imports that run when the module is imported."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    tree = ast.parse(path.read_text())
    for node in tree.body if module_level else ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                names.add(".".join(base + ([node.module] if node.module else [])))
            else:
                names.add(node.module)
    return names


def test_the_core_never_imports_the_wing_or_the_book_kit() -> None:
    for path in sorted((ROOT / "transformer").glob("*.py")):
        if path.name == "__main__.py":  # `python -m transformer`: the command line, which is the wing's
            continue
        bad = {n for n in _imports_of(path) if n.split(".")[0] in BOOK_ONLY or n.startswith("transformer.train")}
        bad |= {n for n in _imports_of(path) if n.split(".")[0] in OPTIONAL}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_wing_never_imports_the_book_kit() -> None:
    for path in sorted((ROOT / "transformer" / "train").glob("*.py")):
        bad = {n for n in _imports_of(path) if n.split(".")[0] in BOOK_ONLY}
        bad |= {n for n in _imports_of(path, module_level=True) if n.split(".")[0] in OPTIONAL}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_core_declares_only_torch_and_numpy() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert sorted(dep.split(">")[0].split("=")[0].strip() for dep in project["dependencies"]) == ["numpy", "torch"]
    live = " ".join(project["optional-dependencies"]["live"])
    for name in ("plotly", "ipython", "ipywidgets", "tqdm", "sacrebleu"):
        assert name in live, f"the live extra must install {name}, which the book kit or a chapter imports"
    # bertviz comes with the live extra without the dependencies it declares, which an extra cannot say: the first
    # cells' installer names it (transformer_book/install.py), as the README's local path and the Makefile do
    installer = (ROOT / "transformer_book" / "install.py").read_text()
    assert re.search(r'WITHOUT_DEPENDENCIES = \{\(DISTRIBUTION, "live"\): \("bertviz>=', installer), (
        "bertviz: not installed"
    )


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_imports_one_that_imports_it_back() -> None:
    """Over the core, the wing and the book kit, imports at the top of a module and inside functions alike: a module
    (a package's ``__init__`` included) never reaches itself through what it imports."""
    modules = {
        _module_name(path): path
        for package in ("transformer", "transformer_book")
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    imports = {
        name: {other for other in _imports_of(path) if other in modules and other != name}
        for name, path in modules.items()
    }
    for start in modules:
        seen, todo = set(), [[start]]
        while todo:
            chain = todo.pop()
            for other in sorted(imports[chain[-1]]):
                assert other != start, f"an import circle: {' -> '.join([*chain, start])}"
                if other not in seen:
                    seen.add(other)
                    todo.append([*chain, other])
