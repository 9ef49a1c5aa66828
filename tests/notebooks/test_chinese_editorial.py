"""Editorial rules of the Chinese edition that can be checked (issue 42, item 3), over every Chinese chapter and
catalogue: no full-width parenthesis inside another, （…（…）…）, and none right after another, ）（ (a gloss goes
outside, or the aside becomes a sentence); and every section the prose names, “标题”一节 or *标题* in a link to a
chapter, is a heading of the page it names, as the heading reads now.

A chapter whose editorial pass has not happened yet is an expected failure, named in PENDING with what it still has;
the mark is strict, so the test fails once the chapter is clean until its entry is removed. ``pytest --runxfail
tests/notebooks/test_chinese_editorial.py`` lists everything that is left.
"""

from __future__ import annotations

from pathlib import Path

import chinese_text
import nbformat
import pytest
from chinese_text import Text, catalogues, chapters, headings, parenthesis_problems, reference_problems, relative, texts

PARENTHESES_PENDING: dict[str, str] = {}
REFERENCES_PENDING: dict[str, str] = {}


def marks(path: Path, pending: dict[str, str]) -> list:
    reason = pending.get(relative(path))
    if reason is None:
        return []
    return [pytest.mark.xfail(strict=True, reason=f"editorial pass of {path.name} pending (issue 42): {reason}")]


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=relative(p), marks=marks(p, PARENTHESES_PENDING)) for p in chapters() + catalogues()]
)
def test_no_full_width_parenthesis_opens_inside_another_or_right_after_one(path):
    problems = [problem for text in texts(path) for problem in parenthesis_problems(text)]
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def pages():
    return {path.resolve(): headings(path) for path in chapters()}


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=relative(p), marks=marks(p, REFERENCES_PENDING)) for p in chapters()]
)
def test_every_section_the_prose_names_is_a_heading_of_the_page_it_names(path, pages):
    problems = reference_problems(path, pages)
    assert not problems, "\n".join(problems)


def test_the_expected_failures_name_files_that_exist():
    files = {relative(path) for path in chapters() + catalogues()}
    assert set(PARENTHESES_PENDING) | set(REFERENCES_PENDING) <= files


def test_nested_and_back_to_back_parentheses_are_named_with_the_wording():
    text = Text(
        Path("x"),
        "zh/book/99_x.ipynb cell 1 (id a)",
        "向量（嵌入（embedding）乘以 2），词表（vocabulary）（第 5.1 节）",
        "",
    )
    problems = parenthesis_problems(text)
    assert len(problems) == 2
    assert problems[0].startswith("zh/book/99_x.ipynb cell 1 (id a): a parenthesis inside another: ")
    assert "嵌入（embedding" in problems[0]
    assert "two parentheses back to back" in problems[1] and "（vocabulary）（第 5.1 节" in problems[1]
    assert parenthesis_problems(Text(Path("x"), "", "形状（(B, T)，即批次与长度）；（B）", "")) == []


def test_a_section_named_by_a_title_that_the_heading_no_longer_has_is_named(tmp_path, monkeypatch):
    page = nbformat.v4.new_notebook()
    page.cells = [
        nbformat.v4.new_markdown_cell("# 掩码\n\n## 极性：谁用 `True` 表示什么\n\n## 填充值与 float16", id="h")
    ]
    nbformat.write(page, tmp_path / "04_masks.ipynb")
    reader = nbformat.v4.new_notebook()
    reader.cells = [
        nbformat.v4.new_markdown_cell(
            "见[第 4 章，*极性*一节末尾](04_masks.ipynb)和[第 4 章，*填充值与 float16* 和 *没有可见键的一行*]"
            "(04_masks.ipynb)；上面“掩码”一节，“正弦表”一节。",
            id="r",
        )
    ]
    nbformat.write(reader, tmp_path / "12_pitfalls.ipynb")
    pages = {p.resolve(): headings(p) for p in (tmp_path / "04_masks.ipynb", tmp_path / "12_pitfalls.ipynb")}
    monkeypatch.setattr(chinese_text, "ROOT", tmp_path)
    problems = reference_problems(tmp_path / "12_pitfalls.ipynb", pages)
    assert len(problems) == 2, problems
    assert "names a section '没有可见键的一行' that 04_masks.ipynb has no heading for" in problems[0]
    assert problems[1].endswith("“正弦表” names a section that 12_pitfalls.ipynb, 04_masks.ipynb has no heading for")
