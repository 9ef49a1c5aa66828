"""Every page of the book is a path for a learner: it opens with what the reader will be able to do, keeps its main
line within a size a reader can hold, and ends with a summary and a way to check oneself; what goes deeper is on a
companion page (``NNa_...``) that its chapter links to. Both editions."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MAX_WORDS = 3_000  # words of prose per page: markdown and generated paragraphs (scripts/prose_stats.py)
MAX_PARAGRAPH = 180  # words per paragraph
ITEMS = range(3, 6)  # abilities promised at the top of a page


def _load(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


toc_files = _load(ROOT / "scripts" / "book_toc.py", "book_toc").toc_files
prose_stats = _load(ROOT / "scripts" / "prose_stats.py", "prose_stats")

WORDS = {  # (the opening's line for a chapter, for a companion page, the summary's heading, the last sections')
    "en": (
        "**After this chapter you will be able to:**",
        "**After this page you will be able to:**",
        "Summary",
        ("Exercises", "Check yourself"),
    ),
    "zh": ("**学完本章，你将能够：**", "**学完本页，你将能够：**", "小结", ("练习", "自测")),
}
PAGES = [("en", f"{name}.ipynb") for name in toc_files(ROOT)] + [
    ("zh", f"zh/{name}.ipynb") for name in toc_files(ROOT / "zh") if not name.endswith("glossary")
]


def _sections(root: Path) -> set[str]:
    """The pages that _toc.yml lists as sections of a chapter: its companion pages ("going deeper")."""
    found = set()

    def walk(node: dict) -> None:
        for key in ("parts", "chapters", "sections"):
            for entry in node.get(key) or []:
                if key == "sections" and "file" in entry:
                    found.add(entry["file"])
                walk(entry)

    walk(yaml.safe_load((root / "_toc.yml").read_text()))
    return found


COMPANIONS = {f"{name}.ipynb" for name in _sections(ROOT)} | {f"zh/{name}.ipynb" for name in _sections(ROOT / "zh")}


def companion(path: str) -> bool:
    """Whether ``path`` is a companion page: a section under its chapter in the table of contents, named NNa_...,
    NNb_... for chapter NN."""
    return path in COMPANIONS


def markdown(path: str) -> list[str]:
    return [cell.source for cell in nbformat.read(ROOT / path, 4).cells if cell.cell_type == "markdown"]


@pytest.mark.parametrize(("edition", "path"), PAGES, ids=[p for _, p in PAGES])
def test_a_page_opens_with_what_the_reader_will_be_able_to_do(edition: str, path: str) -> None:
    chapter_line, page_line, *_ = WORDS[edition]
    opening = markdown(path)[0]
    promise = page_line if companion(path) else chapter_line
    assert opening.startswith("# "), f"{path}: its first cell is not the page's title"
    assert promise in opening, f"{path}: its first cell does not say {promise!r}"
    items = [line for line in opening.split(promise, 1)[1].splitlines() if re.match(r"\s*[-*] \S", line)]
    assert len(items) in ITEMS, f"{path}: {len(items)} abilities listed after {promise!r}, not 3 to 5"


@pytest.mark.parametrize(("edition", "path"), PAGES, ids=[p for _, p in PAGES])
def test_a_page_ends_with_a_summary_and_a_way_to_check_yourself(edition: str, path: str) -> None:
    *_, summary, checks = WORDS[edition]
    headings = [line[3:].strip() for text in markdown(path) for line in text.splitlines() if line.startswith("## ")]
    assert summary in headings, f"{path}: no '## {summary}' section"
    after = headings[headings.index(summary) + 1 :]
    assert after and after[-1] in checks, f"{path}: after '## {summary}', the last section is not one of {checks}"
    assert all(heading in checks for heading in after), f"{path}: after '## {summary}' come {after}"


@pytest.mark.parametrize("path", [p for edition, p in PAGES if edition == "en"])
def test_a_page_keeps_its_main_line_within_what_a_reader_can_hold(path: str) -> None:
    paragraphs = prose_stats.paragraphs(ROOT / path)
    total = sum(p.words for p in paragraphs)
    assert total <= MAX_WORDS, f"{path}: {total:,} words of prose, more than {MAX_WORDS:,}"
    long = [f"cell {p.cell}: {p.words} words, {p.text[:60]!r}" for p in paragraphs if p.words > MAX_PARAGRAPH]
    assert not long, f"{path}: paragraphs over {MAX_PARAGRAPH} words: {long}"


@pytest.mark.parametrize("path", [p for edition, p in PAGES if edition == "en" and companion(p)])
def test_a_companion_page_is_linked_from_its_chapter(path: str) -> None:
    assert re.match(r"\d+[a-z]_", Path(path).name), f"{path}: a companion page of chapter NN is named NNa_..."
    number = re.match(r"(\d+)", Path(path).name).group(1)
    chapters = [p for e, p in PAGES if e == "en" and Path(p).name.startswith(f"{number}_")]
    assert chapters, f"{path}: no chapter {number} to deepen"
    linked = any(f"({Path(path).name}" in text for chapter in chapters for text in markdown(chapter))
    assert linked, f"{path}: {chapters[0]} links to it nowhere"
