"""constraints.txt pins the build; the pins requirements.txt makes itself (the theme) stay there alone."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from lock_constraints import canonical, constraints, pinned_in_requirements  # noqa: E402

REQUIREMENTS = (ROOT / "requirements.txt").read_text(encoding="utf-8")
CONSTRAINTS = (ROOT / "constraints.txt").read_text(encoding="utf-8")


def _names(text: str) -> set[str]:
    return {canonical(line.split("==")[0]) for line in text.splitlines() if "==" in line and not line.startswith("#")}


def test_the_theme_is_pinned_in_requirements_and_nowhere_else() -> None:
    theme = {"sphinx-book-theme", "pydata-sphinx-theme"}
    assert theme <= pinned_in_requirements(REQUIREMENTS)
    assert not pinned_in_requirements(REQUIREMENTS) & _names(CONSTRAINTS), "run `make lock` after pinning in requirements.txt"


def test_constraints_pin_the_book_build_but_not_torch() -> None:
    names = _names(CONSTRAINTS)
    assert {"jupyter-book", "sphinx", "myst-nb", "docutils", "plotly", "ipywidgets"} <= names
    assert not {"torch", "transformer-interactive"} & names


def test_lock_keeps_torch_the_package_and_requirement_pins_out() -> None:
    freeze = "Sphinx==7.4.7\ntorch==2.13.0+cpu\nnvidia-cublas-cu12==12.8\n-e git+x#egg=y\nsphinx_book_theme==1.3.0\n"
    lines = [line for line in constraints(freeze, "sphinx-book-theme==1.3.0\n").splitlines() if not line.startswith("#")]
    assert lines == ["Sphinx==7.4.7"]
