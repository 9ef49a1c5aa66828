"""The Chinese edition speaks one vocabulary. zh/book/glossary.md gives each English term one rendering and lists, in
its last table (column 不用), the wordings that rendering replaces; no Chinese chapter (its prose) and no catalogue (its
Chinese) may use one of them. A failure names the file, the cell or catalogue entry, the wording and the rendering to use.

A chapter whose editorial pass (issue 42, item 3) has not happened yet is an expected failure, named in PENDING with
what it still says; the mark is strict, so the test fails once the chapter is clean until its entry is removed.
``pytest --runxfail tests/notebooks/test_glossary.py`` lists every wording that is left.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chinese_text import GLOSSARY, Text, catalogues, chapters, glossary, relative, texts, variant_uses

PENDING: dict[str, str] = {}


def pending(path: Path) -> list:
    reason = PENDING.get(relative(path))
    if reason is None:
        return []
    return [pytest.mark.xfail(strict=True, reason=f"editorial pass of {path.name} pending (issue 42): {reason}")]


FILES = [pytest.param(path, id=relative(path), marks=pending(path)) for path in chapters() + catalogues()]


@pytest.fixture(scope="module")
def terms():
    terms, problems = glossary()
    assert not problems, "\n".join(problems)
    return terms


@pytest.mark.parametrize("path", FILES)
def test_the_chinese_uses_the_glossary_rendering_of_every_term(path, terms):
    found = [use for text in texts(path) for use in variant_uses(text, terms)]
    assert not found, "\n".join(found)


def test_the_expected_failures_name_files_that_exist():
    files = {relative(path) for path in chapters() + catalogues()}
    assert set(PENDING) <= files, sorted(set(PENDING) - files)


def test_the_glossary_gives_each_term_one_rendering_and_replaces_only_other_wordings(terms):
    assert len(terms) > 100
    seen: dict[str, int] = {}
    for term in terms:
        assert term.english not in seen, f"{term.english!r} twice, lines {seen[term.english]} and {term.line}"
        seen[term.english] = term.line
        assert all(term.renderings), f"line {term.line}: {term.english!r} has no rendering"
    renderings = {r for term in terms for r in term.renderings}
    for term in terms:
        for variant in term.variants:
            assert variant not in renderings, f"line {term.line}: {variant!r} is replaced and is a rendering"
            # a rendering that holds a variant of its own term would be reported wherever it is used
            assert not any(variant in r for r in term.renderings), f"line {term.line}: {variant!r} in a rendering"


def test_the_glossary_lists_the_terms_the_issue_names(terms):
    """Issue 42's examples: attend, hypotheses, notebook, widget, the cost chapter, the grader's verdicts."""
    rendering = {term.english: term.renderings for term in terms}
    assert rendering["attend (to)"] == ("关注",)
    assert rendering["hypothesis (beam search)"] == ("候选序列",)
    assert rendering["notebook"] == ("笔记本",)
    assert rendering["widget / control"] == ("控件",)
    assert rendering["cost"] == ("成本",)
    assert rendering["correct (a check's verdict)"] == ("正确",)


def test_a_replaced_wording_is_named_with_its_file_cell_and_rendering(terms):
    path = Path("zh/book/99_example.ipynb")
    text = Text(path, "zh/book/99_example.ipynb cell 3 (id c3)", "每个查询可以注意这个键，运行本 notebook。", "")
    found = variant_uses(text, terms)
    assert len(found) == 2
    assert found[0].startswith("zh/book/99_example.ipynb cell 3 (id c3): '可以注意' for 'attend (to)'")
    assert "'关注'" in found[0] and "…每个查询可以注意这个键" in found[0]
    assert "'notebook' for 'notebook'" in found[1] and "'笔记本'" in found[1]


def test_a_gloss_after_the_rendering_is_not_a_replaced_wording(terms):
    path = Path("zh/book/99_example.ipynb")
    glossed = Text(path, "cell 0", "对独热（one-hot）目标，“正确”（correct）", "")
    assert [use.split(": ", 1)[1].split(",")[0] for use in variant_uses(glossed, terms)] == [
        "'（correct）' for \"correct (a check's verdict)\""
    ]


def test_a_wording_replaced_under_another_rendering_or_for_no_term_is_a_problem_of_the_glossary(tmp_path):
    page = tmp_path / "glossary.md"
    page.write_text(
        "| English | 中文 | 说明 |\n| --- | --- | --- |\n| attend (to) | 关注 | |\n| cost | 成本 | |\n| cost | 代价 | |\n\n"
        "| English | 中文 | 不用 |\n| --- | --- | --- |\n| attend (to) | 注意 | 可以注意 |\n| widget | 控件 | 小部件 |\n"
        "| cost | 代价 | 开销 |\n\n| English | 中文 |\n| --- | --- |\n| head | 头 |\n",
        encoding="utf-8",
    )
    terms, problems = glossary(page)
    assert [term.english for term in terms] == ["attend (to)", "cost"]
    assert [p.split(": ", 1)[1] for p in problems] == [
        "'cost' again (line 4)",
        "a row of 2 cells under ['English', '中文']: not ['English', '中文', '说明'] or ['English', '中文', '不用']",
        "'attend (to)' is ('注意',), but ('关注',) line 3",
        "wordings replaced for 'widget', which no table of terms lists",
    ]


def test_the_glossary_is_a_page_of_the_chinese_book():
    assert GLOSSARY.is_file()
    assert "book/glossary" in (GLOSSARY.parents[1] / "_toc.yml").read_text()
