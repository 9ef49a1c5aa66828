"""How much prose a page of the book asks a reader to read: its words and its longest paragraphs.

A page's prose is its Markdown cells and the sentences its code writes with ``say(...)`` (the first argument: a
template whose ``{fields}`` count as one word each). Code blocks, formulas (``$...$``, ``$$...$$``), tables, HTML tags
and link targets are not prose and are not counted; a paragraph is a block between blank lines (a list item is one).

    python scripts/prose_stats.py book/*.ipynb          # words and the longest paragraph of each page
    python scripts/prose_stats.py --over 180 book/05_attention.ipynb   # every paragraph over 180 words
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path
from typing import NamedTuple

WORD = re.compile(r"[^\W_]+(?:['’\-.][^\W_]+)*")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.DOTALL)
_INLINE_MATH = re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_FIELD = re.compile(r"\{[^{}]*\}")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")


class Paragraph(NamedTuple):
    cell: int  # the cell's index in the notebook
    words: int
    text: str


def words(text: str) -> int:
    """The words of ``text`` as prose: formulas, code blocks, tags and link targets left out."""
    for pattern in (_FENCE, _DISPLAY_MATH, _INLINE_MATH, _LINK_TARGET, _TAG):
        text = pattern.sub(" ", text)
    return len(WORD.findall(text))


def blocks(markdown: str) -> list[str]:
    """The paragraphs of a Markdown text: blocks between blank lines, each list item its own, tables and code left out."""
    markdown = _FENCE.sub("\n\n", markdown)
    markdown = _DISPLAY_MATH.sub(" ", markdown)
    found = []
    for block in re.split(r"\n\s*\n", markdown):
        lines = [line for line in block.splitlines() if not line.lstrip().startswith("|")]
        items, current = [], []
        for line in lines:
            if _ITEM.match(line) and current:
                items.append("\n".join(current))
                current = []
            current.append(line)
        if current:
            items.append("\n".join(current))
        found += [item for item in items if item.strip() and not item.lstrip().startswith("#")]
    return found


def say_templates(code: str) -> list[str]:
    """The first argument of every ``say(...)`` call in ``code`` (one string, as Python joins adjacent literals)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:  # a cell with IPython magics: none of the book's say cells has one
        return []
    return [
        _FIELD.sub("N", node.args[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "say"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]


def paragraphs(notebook: Path) -> list[Paragraph]:
    """Every paragraph of prose of ``notebook``, in order: its Markdown's and its ``say`` templates'."""
    found = []
    for index, cell in enumerate(json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            texts = blocks(source)
        elif cell["cell_type"] == "code" and "say(" in source:
            texts = [block for template in say_templates(source) for block in blocks(template)]
        else:
            continue
        found += [Paragraph(index, words(text), text) for text in texts]
    return found


def prose_words(notebook: Path) -> int:
    """How many words of prose ``notebook`` has."""
    return sum(p.words for p in paragraphs(notebook))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--over", type=int, help="list every paragraph with more words than this")
    args = parser.parse_args()
    for notebook in args.notebooks:
        found = paragraphs(notebook)
        longest = max(found, key=lambda p: p.words, default=Paragraph(-1, 0, ""))
        print(
            f"{notebook}: {sum(p.words for p in found):,} words, longest paragraph {longest.words} (cell {longest.cell})"
        )
        for p in found:
            if args.over is not None and p.words > args.over:
                print(f"  cell {p.cell}: {p.words} words: {p.text[:100]!r}...")


if __name__ == "__main__":
    main()
