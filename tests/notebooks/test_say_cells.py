"""The generated paragraphs (``say`` cells) read as prose in JupyterLab, the Notebook and Colab before anything runs:
each stores the paragraph its last refresh wrote, in its notebook's language, and its code is folded
(``scripts/say_cells.py`` says how; ``make refresh`` keeps the paragraphs current)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import refresh_notebooks  # noqa: E402
import say_cells  # noqa: E402
import translate  # noqa: E402

from transformer_book.i18n import catalogue, fields  # noqa: E402

NOTEBOOKS = refresh_notebooks.toc_notebooks()  # both editions
KERNELSPEC = {"name": "python3", "display_name": "Python 3"}


def language(notebook: Path) -> str:
    return "zh" if notebook.is_relative_to(ROOT / "zh") else "en"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_say_cell_stores_its_paragraph_and_folds_its_code(notebook: Path) -> None:
    nb = nbformat.read(notebook, as_version=4)
    found = [
        f"cell {index} (id {cell.get('id')}): {problem}"
        for index, cell in enumerate(nb.cells)
        if say_cells.is_say_cell(cell)
        for problem in say_cells.problems(cell, language(notebook))
    ]
    where = notebook.relative_to(ROOT)
    twin = where if language(notebook) == "en" else Path(*where.parts[1:])
    assert not found, (
        "\n".join(found) + f'\n(make refresh NB="{twin} zh/{twin}" folds them and stores their paragraphs)'
    )


def test_the_book_has_say_cells_and_every_one_is_found() -> None:
    """The test above checks something: the chapters' generated paragraphs are found by their say(...) call."""
    english = [p for p in NOTEBOOKS if language(p) == "en"]
    count = sum(say_cells.is_say_cell(c) for p in english for c in nbformat.read(p, as_version=4).cells)
    assert count >= 30, count
    assert say_cells.calls_say('x = 1\nsay("The loss fell to {loss:.2f}.", loss=x)')
    assert not say_cells.calls_say('print("say(")\nsaying = 1') and not say_cells.calls_say("%time say")


def _say_cell(template: str = "A sentence.", tags: tuple[str, ...] = ("remove-input",)) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(f"say({template!r})", metadata={"tags": list(tags)})


def test_folding_puts_one_title_first_hides_the_code_and_keeps_the_rest() -> None:
    cell = _say_cell()
    cell.metadata["jupyter"] = {"outputs_hidden": False}
    assert say_cells.fold(cell) and not say_cells.fold(cell)  # once: the second fold changes nothing
    assert cell.source == f"{say_cells.TITLE}\nsay('A sentence.')"
    assert cell.metadata == {
        "tags": ["remove-input"],
        "jupyter": {"outputs_hidden": False, "source_hidden": True},
        "cellView": "form",
    }
    cell.source = "# @title An older title\nsay('A sentence.')"  # another title is replaced, not stacked
    assert say_cells.fold(cell) and cell.source == f"{say_cells.TITLE}\nsay('A sentence.')"
    assert say_cells.without_title(cell.source) == "say('A sentence.')"
    assert say_cells.problems(cell, "en") == ["no stored Markdown output (or other outputs beside it)"]


def test_a_say_cell_left_as_code_is_named_for_each_thing_it_lacks() -> None:
    cell = _say_cell(tags=())
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": "一个句子。"})]
    assert "its stored output has no execution count" in say_cells.problems(cell, "zh")[-1]
    cell.execution_count = 3
    assert say_cells.problems(cell, "en") == [
        "its code is shown on the page: tag it 'remove-input' (or 'hide-input')",
        f"its first line is not {say_cells.TITLE!r}",
        "metadata.jupyter.source_hidden is not true",
        'metadata.cellView is not "form"',
        "its stored output is not in the notebook's language (en): '一个句子。'",
    ]


def test_refresh_keeps_a_say_cells_markdown_without_a_prompt_and_nothing_else() -> None:
    say = _say_cell()
    say.execution_count = 7
    say.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="a warning\n"),
        nbformat.v4.new_output(
            "execute_result",
            data={"text/markdown": "A sentence.", "text/plain": "<IPython.core.display.Markdown object>"},
            execution_count=7,
        ),
    ]
    other = nbformat.v4.new_code_cell("x", execution_count=8)
    other.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=8)]
    nb = nbformat.v4.new_notebook(cells=[say, other])
    assert refresh_notebooks.strip_outputs(nb) == (1, 1)
    assert say.execution_count == 7 and other.outputs == [] and other.execution_count is None
    assert say.outputs == [nbformat.v4.new_output("display_data", data={"text/markdown": "A sentence."})]
    nbformat.validate(nb)


def test_refresh_folds_and_stores_each_editions_paragraph_in_its_language(tmp_path: Path) -> None:
    """A chapter and its twin refreshed together: the same folded code, each with its own language's paragraph (the
    Chinese twin runs in zh/book/, as the book's runs do); --fold-only folds without running."""
    english, chinese = next((en, zh) for en, zh in catalogue("zh").items() if not fields(en) and "\n" not in en)
    cells = [nbformat.v4.new_code_cell("from transformer_book.i18n import say"), _say_cell(english)]
    paths = [tmp_path / "book" / "page.ipynb", tmp_path / "zh" / "book" / "page.ipynb"]
    for path, metadata in zip(paths, ({}, {"transformer_book": {"language": "zh"}}), strict=True):
        path.parent.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC, **metadata}), path)
    script = ROOT / "scripts" / "refresh_notebooks.py"
    subprocess.run([sys.executable, script, "--fold-only", paths[0]], check=True, capture_output=True, timeout=60)
    folded = nbformat.read(paths[0], as_version=4).cells[1]
    assert folded.source.startswith(say_cells.TITLE) and folded.outputs == []
    subprocess.run([sys.executable, script, *paths], check=True, capture_output=True, timeout=120)
    en, zh = (nbformat.read(path, as_version=4).cells[1] for path in paths)
    assert en.source == zh.source == f"{say_cells.TITLE}\nsay({english!r})"
    assert say_cells.problems(en, "en") == say_cells.problems(zh, "zh") == []
    assert en.outputs[0]["data"]["text/markdown"] == english and zh.outputs[0]["data"]["text/markdown"] == chinese
    nbval = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", *paths]
    ran = subprocess.run(nbval, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    # nbval runs them with their stored paragraphs (it refuses a cell's outputs without an execution count)
    assert ran.returncode == 0, ran.stdout[-2000:]


def test_sync_never_gives_a_twin_the_english_paragraph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A twin keeps its Chinese paragraph while the code is the same, and has none (until make refresh) once the
    English code changed; it never gets the English one."""
    monkeypatch.setattr(translate, "ROOT", tmp_path)
    monkeypatch.setattr(translate, "ZH", tmp_path / "zh")
    kept, changed = _say_cell("Kept."), _say_cell("Changed.")
    for count, cell in enumerate((kept, changed), start=1):
        say_cells.fold(cell)
        cell.execution_count = count
        cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": "中文段落。"})]
    english_path, chinese_path = tmp_path / "book" / "page.ipynb", tmp_path / "zh" / "book" / "page.ipynb"
    for path in (english_path, chinese_path):
        path.parent.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(cells=[kept, changed]), path)
    english = nbformat.read(english_path, as_version=4)
    english.cells[1].source += "  # edited"
    for cell in english.cells:
        cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": "An English paragraph."})]
    nbformat.write(english, english_path)
    synced = nbformat.read(translate.sync(english_path), as_version=4)
    assert synced.cells[0].outputs[0]["data"]["text/markdown"] == "中文段落。"
    assert synced.cells[1].outputs == [] and synced.cells[1].execution_count is None
    assert synced.cells[1].source == english.cells[1].source
    assert synced.cells[1].metadata["cellView"] == "form"
