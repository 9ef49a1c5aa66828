"""pyproject.toml's extras are the one list of dependencies; constraints.txt pins the build around the few pins the
extras make themselves (the theme), which stay there alone."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from lock_constraints import canonical, constraints, extras, pinned  # noqa: E402

EXTRAS = extras((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CONSTRAINTS = (ROOT / "constraints.txt").read_text(encoding="utf-8")


def _names(text: str) -> set[str]:
    return {canonical(line.split("==")[0]) for line in text.splitlines() if "==" in line and not line.startswith("#")}


def test_the_theme_is_pinned_in_the_extras_and_nowhere_else() -> None:
    theme = {"sphinx-book-theme", "pydata-sphinx-theme"}
    assert theme <= pinned(EXTRAS)
    assert not pinned(EXTRAS) & _names(CONSTRAINTS), "run `make lock` after pinning in pyproject.toml"


def test_constraints_pin_every_extra_but_not_torch() -> None:
    names = _names(CONSTRAINTS)
    needed = {canonical(re.split(r"[<>=!\[ ]", r, maxsplit=1)[0]) for r in EXTRAS} - {"transformer-interactive"}
    assert needed - pinned(EXTRAS) <= names, f"not pinned: {sorted(needed - pinned(EXTRAS) - names)}; run `make lock`"
    assert {"jupyter-book", "sphinx", "myst-nb", "docutils"} <= names
    assert not {"torch", "transformer-interactive"} & names


def test_requirements_install_the_package_with_its_extras_and_nothing_else() -> None:
    lines = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert lines == ["-e .[book,test]"]


def test_the_test_extra_brings_what_make_test_runs() -> None:
    test = {canonical(re.split(r"[<>=!\[ ]", r, maxsplit=1)[0]) for r in EXTRAS}
    assert {"pytest", "pytest-xdist", "hypothesis", "nbval", "ruff", "onnxruntime"} <= test  # -n needs pytest-xdist


def test_lock_keeps_torch_the_package_and_the_extras_pins_out() -> None:
    freeze = "Sphinx==7.4.7\ntorch==2.13.0+cpu\nnvidia-cublas-cu12==12.8\n-e git+x#egg=y\nsphinx_book_theme==1.3.0\n"
    lines = [
        line for line in constraints(freeze, ["sphinx-book-theme==1.3.0"]).splitlines() if not line.startswith("#")
    ]
    assert lines == ["Sphinx==7.4.7"]
