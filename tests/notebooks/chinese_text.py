"""The Chinese edition's words as its editorial tests read them, and the rules those tests apply.

Every markdown cell of a Chinese chapter (``zh/_toc.yml``) and every Chinese string of a catalogue
(``transformer_book/locale/zh/*.json``) is a :class:`Text`, named by where it is, with what a translation keeps as it
is (code, formulas, link targets, a template's ``{fields}``) masked. The glossary (``zh/book/glossary.md``) gives each
English term one rendering and, in its last table, the wordings it replaces (column 不用); :func:`variant_uses` finds
those wordings.
:func:`parenthesis_problems` finds a full-width parenthesis inside another or right after one, and
:func:`reference_problems` a section named in the prose (“标题”一节, or *标题* in a link to a chapter) that is no heading
of the page it names.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
ZH = ROOT / "zh"
GLOSSARY = ZH / "book" / "glossary.md"
CATALOGUES = ROOT / "transformer_book" / "locale" / "zh"
TERMS = ["English", "中文", "说明"]  # the glossary's tables of terms
REPLACED = ["English", "中文", "不用"]  # and its table of the wordings they replace
MASKED = "▢"  # stands for what a text keeps untranslated, so that nothing around it becomes adjacent

sys.path.insert(0, str(ROOT / "scripts"))
from book_toc import toc_files  # noqa: E402


@dataclass(frozen=True)
class Text:
    file: Path  # a chapter or a catalogue
    where: str  # the file and the cell (number and id), or the catalogue entry (number and English)
    text: str  # the Chinese, with code, formulas and link targets masked
    source: str  # as written


def chapters() -> list[Path]:
    """The Chinese chapters, in reading order (the glossary, a Markdown page, is not one)."""
    return [(ZH / name).with_suffix(".ipynb") for name in toc_files(ZH) if (ZH / name).with_suffix(".ipynb").is_file()]


def catalogues() -> list[Path]:
    return sorted(CATALOGUES.glob("*.json"))


def relative(path: Path) -> str:
    """``path`` from the repository's root (as it is, if it lies outside)."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


_CODE_BLOCK = re.compile(r"^(```+)(?!\s*\{)[^\n]*\n.*?^\1\s*$", re.S | re.M)  # not a directive: ```{admonition}
_INLINE = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]*`", re.S)
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")


def masked_markdown(markdown: str) -> str:
    """``markdown`` with code blocks, inline code, formulas and link targets masked (a directive's content is prose)."""
    text = _CODE_BLOCK.sub(MASKED, markdown)
    text = _INLINE.sub(MASKED, text)
    return _LINK_TARGET.sub("](" + MASKED + ")", text)


def masked_template(template: str) -> str:
    """A catalogue's Chinese with its ``{fields}`` and inline code masked."""
    return re.sub(r"\{[^{}\n]*\}|`[^`\n]*`", MASKED, template)


def chapter_texts(path: Path) -> list[Text]:
    cells = nbformat.read(path, 4).cells
    return [
        Text(path, f"{relative(path)} cell {i} (id {cell.get('id')})", masked_markdown(cell.source), cell.source)
        for i, cell in enumerate(cells)
        if cell.cell_type == "markdown"
    ]


def catalogue_texts(path: Path) -> list[Text]:
    entries = json.loads(path.read_text(encoding="utf-8"))
    return [
        Text(path, f"{relative(path)} entry {i} ({shorten(e['en'], 50)!r})", masked_template(e["zh"]), e["zh"])
        for i, e in enumerate(entries)
    ]


def texts(path: Path) -> list[Text]:
    return chapter_texts(path) if path.suffix == ".ipynb" else catalogue_texts(path)


def shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def context(text: str, start: int, end: int, around: int = 16) -> str:
    """The wording at ``text[start:end]``, with a little of what surrounds it, on one line."""
    before, after = text[max(0, start - around) : start], text[end : end + around]
    return shorten(f"…{before}{text[start:end]}{after}…", 2 * around + end - start + 2)


# --- the glossary -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    english: str
    renderings: tuple[str, ...]  # "查询 / 键 / 值": one per English word of "query / key / value"
    variants: tuple[str, ...]  # the wordings the renderings replace
    line: int


def table_rows(path: Path) -> list[tuple[list[str], list[str], int]]:
    """Each row of the Markdown tables of ``path``: (the table's header, the row's cells, the line number)."""
    rows, header = [], None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set("".join(cells)) <= set("-: "):
            rows.append((header, cells, number))
    return rows


def glossary(path: Path = GLOSSARY) -> tuple[list[Term], list[str]]:
    """The glossary's terms, each with the wordings it replaces, and what is wrong with the page: a table whose
    columns are neither TERMS nor REPLACED, a term listed twice, a replaced wording listed for a term the glossary does
    not have or under another rendering than the term's."""
    found: dict[str, Term] = {}
    replaced: list[tuple[str, tuple[str, ...], tuple[str, ...], int]] = []
    problems = []
    where = relative(path)
    for header, cells, number in table_rows(path):
        if header not in (TERMS, REPLACED) or len(cells) != len(header):
            problems.append(
                f"{where} line {number}: a row of {len(cells)} cells under {header}: not {TERMS} or {REPLACED}"
            )
            continue
        english, renderings = cells[0], tuple(r.strip() for r in cells[1].split(" / "))
        if header == TERMS:
            if english in found:
                problems.append(f"{where} line {number}: {english!r} again (line {found[english].line})")
            found[english] = Term(english, renderings, (), number)
        else:
            replaced.append((english, renderings, tuple(v.strip() for v in cells[2].split("、") if v.strip()), number))
    for english, renderings, variants, number in replaced:
        term = found.get(english)
        if term is None:
            problems.append(f"{where} line {number}: wordings replaced for {english!r}, which no table of terms lists")
        elif renderings != term.renderings:
            problems.append(
                f"{where} line {number}: {english!r} is {renderings}, but {term.renderings} line {term.line}"
            )
        else:
            found[english] = Term(english, term.renderings, term.variants + variants, term.line)
    return list(found.values()), problems


def glossed(text: str, start: int, end: int, renderings: tuple[str, ...]) -> bool:
    """Whether ``text[start:end]`` is a gloss: inside full-width parentheses right after one of ``renderings``, as a
    chapter writes a term the first time, 独热（one-hot）."""
    opening = text.rfind("（", 0, start)
    if opening < 0 or "）" in text[opening:start] or "（" in text[end : text.find("）", end)] or "）" not in text[end:]:
        return False
    before = text[:opening].rstrip("*_ ")
    return any(before.endswith(rendering) for rendering in renderings)


def variant_uses(text: Text, terms: list[Term]) -> list[str]:
    """Each wording of ``text`` that the glossary replaces, with the term, its rendering and where it is."""
    found = []
    for term in terms:
        for variant in term.variants:
            for match in re.finditer(re.escape(variant), text.text):
                if glossed(text.text, match.start(), match.end(), term.renderings):
                    continue
                found.append(
                    f"{text.where}: {variant!r} for {term.english!r}, which the glossary renders "
                    f"{' / '.join(term.renderings)!r}: {context(text.text, match.start(), match.end())}"
                )
    return found


# --- parentheses --------------------------------------------------------------------------------------------------


def parenthesis_problems(text: Text) -> list[str]:
    """A full-width parenthesis opened inside another, （…（…）…）, or right after one closes, ）（ (each line alone)."""
    problems = []
    for line in text.text.splitlines():
        depth = 0
        for i, char in enumerate(line):
            if char == "（":
                if depth:
                    problems.append(f"{text.where}: a parenthesis inside another: {context(line, i, i + 1, 30)}")
                depth += 1
            elif char == "）":
                depth = max(0, depth - 1)
        for match in re.finditer(r"）\s*（", line):
            problems.append(
                f"{text.where}: two parentheses back to back: {context(line, match.start(), match.end(), 30)}"
            )
    return problems


# --- references to sections ---------------------------------------------------------------------------------------

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)")
_QUOTED_SECTION = re.compile(r"“([^”\n]{1,80})”(?:这一节|一节|小节)")


def normalise(title: str) -> str:
    """A title as the prose quotes it: emphasis dropped, spaces collapsed."""
    return " ".join(title.replace("*", "").split())


def headings(path: Path) -> set[str]:
    """The titles of ``path``'s headings, each also up to its colon (a section quoted by the first part of its title,
    *极性* for 极性：谁用 `True` 表示什么)."""
    titles = set()
    for cell in nbformat.read(path, 4).cells:
        if cell.cell_type != "markdown":
            continue
        for match in _HEADING.finditer(_CODE_BLOCK.sub("", cell.source)):
            title = normalise(match[1])
            titles.add(title)
            if re.search("[：:]", title):
                titles.add(normalise(re.split("[：:]", title, maxsplit=1)[0]))
    return titles


def local_page(path: Path, target: str) -> Path | None:
    """The page a link of ``path`` leads to, if it is a page of the book (``05_attention.ipynb#...``)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
        return None
    page = (path.parent / target.split("#", 1)[0]).resolve()
    return page if page.suffix == ".ipynb" else None


def reference_problems(path: Path, pages: dict[Path, set[str]]) -> list[str]:
    """Sections that ``path``'s prose names which are no heading of the page they name: the emphasised titles in a
    link to a chapter, [第 4 章，*掩码对分数做了什么*](04_masks.ipynb), must be headings of that chapter; a quoted
    title, “标签平滑”一节, a heading of this page or of a page this cell links to."""
    problems = []
    for text in chapter_texts(path):
        linked = [path]
        for match in _LINK.finditer(text.source):
            page = local_page(path, match[2])
            if page is None:
                continue
            linked.append(page)
            for title in re.findall(r"\*([^*]+)\*", masked_code_only(match[1])):
                if normalise(title) not in pages.get(page, set()):
                    problems.append(
                        f"{text.where}: {match[0]!r} names a section {normalise(title)!r} that "
                        f"{relative(page)} has no heading for"
                    )
        for match in _QUOTED_SECTION.finditer(masked_code_only(text.source)):
            title = normalise(match[1])
            if not any(title in pages.get(page, set()) for page in linked):
                where = ", ".join(relative(page) for page in dict.fromkeys(linked))
                problems.append(f"{text.where}: “{title}” names a section that {where} has no heading for")
    return problems


def masked_code_only(markdown: str) -> str:
    """``markdown`` with its code blocks removed but inline code and formulas kept: titles quote them as written."""
    return _CODE_BLOCK.sub(MASKED, markdown)
