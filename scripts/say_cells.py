"""The chapters' generated paragraphs (``say`` cells), made to read as prose in Jupyter and on Colab before they run.

A **say cell** is a code cell that calls ``say(...)`` (:mod:`transformer_book.i18n`): it writes a paragraph from the
chapter's results, and its code, a template and the values that fill it, is hidden on the web pages (tagged
``remove-input`` or ``hide-input``). In a notebook front end, where nothing has run yet, the same cell would show
10-30 lines of template and no paragraph. So every say cell is *folded* and keeps its *stored output*:

- folded (:func:`fold`, no kernel needed): ``metadata.jupyter.source_hidden`` (JupyterLab and Notebook 7 collapse the
  code to a placeholder), ``metadata.cellView = "form"`` and a first line :data:`TITLE` (Colab shows the cell as a
  form: the title, a "Show code" link and the output). A twin's code is the English code character for character, so
  the title is one line for both editions, in both languages;
- its stored output (:func:`stored_outputs`, applied by ``scripts/refresh_notebooks.py`` after a run): the Markdown
  the cell displayed when the notebook was last refreshed, as one ``display_data`` output (no ``Out[n]`` prompt, no
  ``text/plain`` stand-in), in the notebook's language (a Chinese twin runs in ``zh/book/`` and writes Chinese), with
  the cell's execution count from that run (nbval refuses a cell that has outputs and no count). A reader who runs
  the cell replaces it with their own numbers.

On the web pages nothing changes: the build executes the chapters (or takes the recorded run) and shows that run's
outputs; the title line is dropped from a ``hide-input`` cell's code there (``book/_ext/computed_markdown.py``).
nbval (``--nbval-lax``) compares only cells tagged ``nbval-check-output``, never a say cell, and jupyter-cache keys on
code, not outputs. ``tests/notebooks/test_say_cells.py`` checks every say cell of both editions.

    python scripts/refresh_notebooks.py                 # fold and refresh every notebook of both editions
    python scripts/refresh_notebooks.py --fold-only     # fold only (seconds; the stored outputs need the run)
"""

from __future__ import annotations

import ast
import re

import nbformat

# Colab's form title: Colab shows it in place of the hidden code (JupyterLab hides it with the code). The cell is the
# same in both editions, so the title says it in both languages.
TITLE = "#@title Paragraph computed from the results above · 根据上文结果生成的段落"
TITLE_LINE = re.compile(r"#\s*@title\b.*")
HIDDEN_ON_THE_PAGE = ("remove-input", "hide-input")  # the book's tags that hide a cell's code (myst-nb)
MARKDOWN = "text/markdown"


def calls_say(source: str) -> bool:
    """Whether ``source`` (a code cell's) calls ``say(...)``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: no say cell has one
        return False
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "say"
        for node in ast.walk(tree)
    )


def is_say_cell(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and calls_say(cell.get("source", ""))


def without_title(source: str) -> str:
    """``source`` without a first line that is a Colab form title."""
    first, _, rest = source.partition("\n")
    return rest if TITLE_LINE.fullmatch(first.strip()) else source


def fold(cell: dict) -> bool:
    """Fold a say cell: :data:`TITLE` as its first line (in place of any other title), its code hidden in JupyterLab
    and shown as a form on Colab. Return whether anything changed."""
    before = (cell["source"], dict(cell["metadata"]))
    cell["source"] = f"{TITLE}\n{without_title(cell['source'])}"
    cell["metadata"]["cellView"] = "form"
    cell["metadata"]["jupyter"] = nbformat.from_dict({**cell["metadata"].get("jupyter", {}), "source_hidden": True})
    return (cell["source"], dict(cell["metadata"])) != before


def stored_outputs(outputs: list[dict]) -> list[dict]:
    """What a say cell keeps of a run's ``outputs``: the Markdown it displayed, each as a ``display_data`` output."""
    return [
        nbformat.v4.new_output("display_data", data={MARKDOWN: out["data"][MARKDOWN]})
        for out in outputs
        if out.get("output_type") in ("display_data", "execute_result") and out.get("data", {}).get(MARKDOWN)
    ]


def problems(cell: dict, language: str) -> list[str]:
    """What keeps a say cell from reading as prose before it runs, in a notebook of ``language`` (``en``, ``zh``)."""
    found = []
    tags = cell.get("metadata", {}).get("tags", [])
    if not any(tag in tags for tag in HIDDEN_ON_THE_PAGE):
        found.append(f"its code is shown on the page: tag it {HIDDEN_ON_THE_PAGE[0]!r} (or {HIDDEN_ON_THE_PAGE[1]!r})")
    if cell["source"].partition("\n")[0] != TITLE:
        found.append(f"its first line is not {TITLE!r}")
    if cell["metadata"].get("jupyter", {}).get("source_hidden") is not True:
        found.append("metadata.jupyter.source_hidden is not true")
    if cell["metadata"].get("cellView") != "form":
        found.append('metadata.cellView is not "form"')
    shown = [out for out in cell.get("outputs", []) if out.get("data", {}).get(MARKDOWN, "").strip()]
    if not shown or len(shown) != len(cell.get("outputs", [])):
        found.append("no stored Markdown output (or other outputs beside it)")
    elif cell.get("execution_count") is None:
        found.append("its stored output has no execution count (nbval refuses it: 'Unrun reference cell has outputs')")
    else:
        text = "".join(out["data"][MARKDOWN] for out in shown)
        chinese = re.search(r"[\u3400-\u9fff]", text) is not None
        if chinese != (language == "zh"):
            found.append(f"its stored output is not in the notebook's language ({language}): {text[:60]!r}")
    return found
