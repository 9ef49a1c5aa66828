"""`exercise`, what a chapter's check cell calls (transformer_book.exercises.grading): "not done yet" for a starter,
"correct" for a right answer, the reader's function named with what is wrong in a wrong one; and the package's layout:
each topic module names the chapter whose exercises it grades, and that chapter imports them."""

import importlib
import pkgutil
import re
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from transformer_book import exercises
from transformer_book.exercises import exercise, grade_causal_mask

ROOT = Path(__file__).resolve().parents[2]


def starter(*args):
    raise NotImplementedError


def test_exercise_says_not_done_yet_for_a_starter_and_correct_for_a_right_answer(capsys):
    exercise(grade_causal_mask, starter)
    assert "starter: not done yet" in capsys.readouterr().out

    def my_causal_mask(T):
        return torch.ones(T, T, dtype=torch.bool).tril()[None, None]

    exercise(grade_causal_mask, my_causal_mask)
    assert capsys.readouterr().out.strip() == "my_causal_mask: correct"


def test_exercise_raises_on_a_wrong_answer_naming_it():
    def my_causal_mask(T):
        return torch.ones(1, 1, T, T, dtype=torch.bool).triu()

    with pytest.raises(AssertionError, match="my_causal_mask is not right yet: .*the future"):
        exercise(grade_causal_mask, my_causal_mask)


def chapter_code(notebook: Path) -> str:
    return "\n".join(cell.source for cell in nbformat.read(notebook, 4).cells if cell.cell_type == "code")


def test_each_topic_module_names_the_chapter_that_imports_its_graders_and_the_package_exports_them_all():
    """A reader of chapter N finds its graders in the module whose docstring names book/NN_*.ipynb, as d2l names the
    chapter of each saved function; the chapters import them from the package."""
    exported = {"exercise"}
    for info in pkgutil.iter_modules(exercises.__path__):
        if info.name == "grading":
            continue
        module = importlib.import_module(f"transformer_book.exercises.{info.name}")
        found = re.match(r"The exercises of chapter (\d+) \(``(book/(\d+)_\w+\.ipynb)``\)", module.__doc__)
        assert found, f"{info.name}.py: its docstring opens with the chapter it serves"
        number, notebook, stem_number = found.groups()
        assert int(number) == int(stem_number) and (ROOT / notebook).is_file(), (info.name, notebook)
        code = chapter_code(ROOT / notebook)
        graders = [name for name in module.__all__ if name.startswith("grade_")]
        assert graders and all(re.search(rf"\b{name}\b", code) for name in graders), (notebook, graders)
        exported |= set(module.__all__)
    assert set(exercises.__all__) == exported
    for notebook in sorted((ROOT / "book").glob("*.ipynb")):
        for imported in re.findall(r"from transformer_book\.exercises import ([\w, ]+)", chapter_code(notebook)):
            for name in imported.replace(" ", "").split(","):
                module = getattr(exercises, name).__module__
                assert notebook.name in sys.modules[module].__doc__ or module.endswith("grading"), (notebook, name)
