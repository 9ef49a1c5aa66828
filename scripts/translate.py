"""Keep the Chinese edition (``zh/``) in step with the English: what needs translating, and the tools to do it.

Each English chapter ``book/NN_name.ipynb`` has a twin ``zh/book/NN_name.ipynb`` with the same cells, in the same
order, under the same ids: its code cells are the English ones, character for character (with their own outputs, never
the English ones); each markdown cell is a translation that keeps, in ``metadata.transformer_book.translates``, the
English it translates, as d2l-zh keeps the English beside each file: when the English changes, ``status`` shows what
changed (words taken out and put in), and re-wrapping the English's lines is no change. What the code shows in words
(``tr``, ``say``, ``translatable`` of :mod:`transformer_book.i18n`, in the book kit and in the chapters; ``tr`` and
``translatable`` in the book's Sphinx extension and the scripts of its pages, ``book/_ext``) is translated in
``transformer_book/locale/zh/``.

    python scripts/translate.py status [NN ...]     # what is missing or stale, by chapter and cell; exit 1 if any
    python scripts/translate.py sync NN [NN ...]    # make the twin follow the English cells (code copied, prose kept;
                                                    # then `make refresh` the twin for its say cells' paragraphs)
    python scripts/translate.py export NN > f.txt   # the prose of a chapter as text: the English beside the Chinese
    python scripts/translate.py import NN f.txt     # write the Chinese of f.txt back; each cell whose Chinese was
                                                    # written or changed now translates the English it stands beside

``NN`` is a chapter's number or its file's stem. ``tests/notebooks/test_chinese_edition.py`` fails on what ``status`` lists.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_toc import toc_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ZH = ROOT / "zh"
KIT = ROOT / "transformer_book"
LOCALE = KIT / "locale"
SITE = ROOT / "book" / "_ext"  # the book's Sphinx extension (static_book) and the scripts its pages load
KEY = "transformer_book"  # the metadata key of a notebook (language) and of a translated cell (translates)
FUNCTIONS = ("tr", "say", "translatable")  # transformer_book.i18n: their first argument is an English template
CJK = re.compile(r"[\u3400-\u9fff]")


def english_chapters() -> list[Path]:
    """The English chapters, in reading order (``_toc.yml``)."""
    return [ROOT / f"{name}.ipynb" for name in toc_files(ROOT)]


def twin(english: Path) -> Path:
    """The Chinese twin of an English chapter."""
    return ZH / english.relative_to(ROOT)


_BLOCK_START = re.compile(r"^\s*(?:[-*+>|#]|\d+\.\s|```|~~~|\$\$|<)")  # a line that starts a block of its own


def normalized(markdown: str) -> str:
    """``markdown`` as a translation reads it: the lines of a paragraph joined and their spaces collapsed, so that
    re-wrapping the English is no change; lists, tables, headings, formulas and code keep their lines."""
    lines, fenced = [], False
    for raw in markdown.strip().splitlines():
        line = raw.rstrip()
        fence = line.lstrip().startswith(("```", "~~~"))
        if fenced or fence:
            lines.append(line)
            fenced ^= fence
        elif not line.strip():
            lines.append("")
        elif lines and lines[-1] and not _BLOCK_START.match(line) and _continues(lines[-1]):
            lines[-1] = f"{lines[-1]} {' '.join(line.split())}"
        else:
            lines.append(" ".join(line.split()))
    return "\n".join(lines)


def _continues(line: str) -> bool:
    """Whether the next line of text belongs to ``line``'s block: a paragraph's, a list item's or a quote's does, a
    table row's, a heading's, a formula's, a fence's or an HTML tag's does not."""
    return not line.lstrip().startswith(("|", "#", "```", "~~~", "$$", "<"))


def current(recorded: str | None, english: str) -> bool:
    """Whether a translation that ``recorded`` the English it translates still translates ``english``."""
    return recorded is not None and normalized(recorded) == normalized(english)


def changes(before: str, after: str, context: int = 3) -> list[str]:
    """What changed from the English ``before`` to ``after``, word by word: ``"... 400 steps" -> "... 4000 steps"``,
    each with a few words around it."""
    old, new = normalized(before).split(), normalized(after).split()
    found = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lead = " ".join(old[max(0, i1 - context) : i1])
        taken, put = " ".join(old[i1:i2]), " ".join(new[j1:j2])
        found.append(f"{lead + ' ' if lead else ''}[{taken or '+'} -> {put or '-'}]")
    return found


def find_chapter(name: str) -> Path:
    for path in english_chapters():
        if path.stem == name or path.stem.split("_")[0] == name.zfill(2):
            return path
    raise SystemExit(f"no chapter {name!r} in _toc.yml")


# --- prose: the markdown cells ----------------------------------------------------------------------------------


@dataclass
class Problem:
    where: str  # the chapter's file and the cell (number and id), or the catalogue
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def cell_name(path: Path, index: int, cell: dict) -> str:
    return f"{path.relative_to(ROOT)} cell {index} (id {cell.get('id')})"


def first_line(text: str) -> str:
    line = next((line for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= 80 else line[:77] + "..."


def chapter_problems(english_path: Path) -> list[Problem]:
    """Everything that keeps ``english_path``'s twin from being a complete, current translation of it."""
    chinese_path = twin(english_path)
    if not chinese_path.is_file():
        return [Problem(str(chinese_path.relative_to(ROOT)), f"missing: the Chinese of {english_path.name}")]
    english, chinese = nbformat.read(english_path, 4), nbformat.read(chinese_path, 4)
    problems = []
    if chinese.metadata.get(KEY, {}).get("language") != "zh":
        problems.append(
            Problem(str(chinese_path.relative_to(ROOT)), 'metadata lacks {"transformer_book": {"language": "zh"}}')
        )
    if [(c.cell_type, c.get("id")) for c in english.cells] != [(c.cell_type, c.get("id")) for c in chinese.cells]:
        return problems + cell_list_problems(english_path, english, chinese_path, chinese)
    for index, (en, zh) in enumerate(zip(english.cells, chinese.cells, strict=True)):
        where = cell_name(chinese_path, index, zh)
        if en.cell_type == "code":
            if zh.source != en.source:
                problems.append(Problem(where, "its code differs from the English: sync it"))
            if zh.metadata.get("tags", []) != en.metadata.get("tags", []):
                problems.append(Problem(where, "its tags differ from the English: sync it"))
            if CHECKED in zh.metadata.get("tags", []) and not zh.get("outputs"):
                problems.append(
                    Problem(where, f"its checked output is missing: make refresh NB={chinese_path.relative_to(ROOT)}")
                )
            continue
        recorded = zh.metadata.get(KEY, {}).get("translates")
        if recorded is None:
            problems.append(Problem(where, f"not translated yet: {first_line(en.source)!r}"))
        elif not current(recorded, en.source):
            changed = "; ".join(changes(recorded, en.source)) or "its layout"
            problems.append(Problem(where, f"the English changed since it was translated: {changed}"))
        elif mostly_english(en.source, zh.source):
            problems.append(Problem(where, f"is mostly English, not a translation: {first_line(zh.source)!r}"))
    return problems


CHECKED = "nbval-check-output"  # the tag of a cell whose outputs nbval compares


def cell_list_problems(english_path: Path, english: dict, chinese_path: Path, chinese: dict) -> list[Problem]:
    """How the twin's cells differ from the English's (by id, kind and order), each cell named: `sync` mends it."""
    where = str(chinese_path.relative_to(ROOT))
    theirs = {c.get("id"): c for c in chinese.cells}
    ours = {c.get("id") for c in english.cells}
    problems = []
    for index, cell in enumerate(english.cells):
        twin_cell = theirs.get(cell.get("id"))
        if twin_cell is None:
            what = f"new in {english_path.name}: {cell.cell_type} cell {index} (id {cell.get('id')}), "
            problems.append(Problem(where, what + f"{first_line(cell.source)!r}: sync it"))
        elif twin_cell.cell_type != cell.cell_type:
            problems.append(Problem(where, f"cell {cell.get('id')} is {cell.cell_type} in English: sync it"))
    for cell in chinese.cells:
        if cell.get("id") not in ours:
            problems.append(Problem(where, f"cell {cell.get('id')} is no longer in {english_path.name}: sync it"))
    if not problems:
        problems.append(Problem(where, f"its cells are not in {english_path.name}'s order: sync it"))
    return problems


_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def mostly_english(english: str, chinese: str) -> bool:
    """Whether a translated cell keeps most of its English's words in English: more than two thirds of them, for an
    English of ten words or more (a translation keeps names, and a term's English beside its first use), or no Chinese
    at all where the English has a word."""
    english_words = len(_LATIN_WORD.findall(_prose(english)))
    if english_words and not CJK.search(chinese):
        return True
    return english_words >= 10 and len(_LATIN_WORD.findall(_prose(chinese))) > 2 / 3 * english_words


def _prose(markdown: str) -> str:
    """``markdown`` without code, formulas, links' targets and directives' options: what a translation changes."""
    text = re.sub(r"```.*?```|\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|^:[\w-]+:.*$", " ", markdown, flags=re.S | re.M)
    return text


def sync(english_path: Path) -> Path:
    """Make ``english_path``'s twin follow its cells: code cells and their tags copied (with the twin's own outputs
    where the code is unchanged, else none: the twin's outputs are its own run's, never the English ones, so a
    changed cell is refreshed in Chinese), markdown cells kept by id (a new one holds the English, marked
    untranslated), the English notebook's metadata with the language."""
    english = nbformat.read(english_path, 4)
    chinese_path = twin(english_path)
    old = {c.get("id"): c for c in nbformat.read(chinese_path, 4).cells} if chinese_path.is_file() else {}
    cells = []
    for en in english.cells:
        zh = old.get(en.get("id"))
        if en.cell_type == "code":
            cell = copy.deepcopy(en)
            unchanged = zh is not None and zh.cell_type == "code" and zh.source == en.source
            cell.outputs, cell.execution_count = (zh.outputs, zh.execution_count) if unchanged else ([], None)
        elif zh is not None and zh.cell_type == "markdown":
            cell = zh
        else:
            cell = copy.deepcopy(en)
            cell.metadata.setdefault(KEY, {})["translates"] = None
        cells.append(cell)
    english.cells = cells
    english.metadata[KEY] = {"language": "zh"}
    chinese_path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(english, chinese_path)
    return chinese_path


# --- the text format of export and import ---------------------------------------------------------------------

_HEADER = re.compile(r"^=== cell (?P<id>\S+) .*===$", re.M)


def export(english_path: Path) -> str:
    """The prose of a chapter as text: for each markdown cell a header, the English, what changed in it since its
    translation (for a stale cell), and the Chinese (empty where there is none yet). ``import`` reads only the Chinese
    part back."""
    english, chinese = nbformat.read(english_path, 4), nbformat.read(twin(english_path), 4)
    parts = []
    for en, zh in zip(english.cells, chinese.cells, strict=True):
        if en.cell_type != "markdown":
            continue
        recorded = zh.metadata.get(KEY, {}).get("translates")
        state = "untranslated" if recorded is None else "current" if current(recorded, en.source) else "stale"
        translation = zh.source if recorded is not None else ""
        quoted = "\n".join(f"| {line}" if line else "|" for line in en.source.splitlines())
        changed = "".join(f"\n! {change}" for change in changes(recorded, en.source)) if state == "stale" else ""
        parts.append(f"=== cell {en.get('id')} ({state}) ===\n{quoted}{changed}\n--- zh ---\n{translation}\n")
    return "\n".join(parts)


def import_text(english_path: Path, text: str) -> tuple[int, list[str]]:
    """Write each Chinese part of ``text`` (from :func:`export`) into the twin's cell of that id, recorded as the
    translation of the English cell as it is now. A cell whose Chinese part is empty is left alone, and so is a stale
    cell whose Chinese did not change: its English changed, and a translation that does not follow it stays stale.
    Return how many cells were written, and the ids of the stale cells left as they were."""
    english, chinese_path = nbformat.read(english_path, 4), twin(english_path)
    chinese = nbformat.read(chinese_path, 4)
    by_id = {c.get("id"): (en, c) for en, c in zip(english.cells, chinese.cells, strict=True)}
    written, left_stale = 0, []
    starts = list(_HEADER.finditer(text))
    for match, following in zip(starts, starts[1:] + [None], strict=True):
        body = text[match.end() : following.start() if following else len(text)]
        if "\n--- zh ---\n" not in body:
            raise SystemExit(f"cell {match['id']}: no '--- zh ---' line")
        translated = body.split("\n--- zh ---\n", 1)[1].strip("\n")
        if not translated:
            continue
        if match["id"] not in by_id:
            raise SystemExit(f"cell {match['id']}: no such cell in {english_path.name}")
        en, zh = by_id[match["id"]]
        recorded = zh.metadata.get(KEY, {}).get("translates")
        if translated == zh.source and recorded is not None:
            if not current(recorded, en.source):
                left_stale.append(match["id"])
            continue
        zh.source = translated
        zh.metadata.setdefault(KEY, {})["translates"] = en.source
        written += 1
    nbformat.write(chinese, chinese_path)
    return written, left_stale


# --- words the code shows: the catalogue ------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    text: str
    where: str  # file (and cell) where the code asks for it


def code_sources() -> list[tuple[str, str]]:
    """(where, Python source) of the book kit's modules, the book's Sphinx extension's and every English chapter's
    code cells."""
    from IPython.core.inputtransformer2 import TransformerManager

    modules = sorted(KIT.rglob("*.py")) + sorted((SITE / "static_book").glob("*.py"))
    sources = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in modules]
    cleaner = TransformerManager()
    for path in english_chapters():
        for index, cell in enumerate(nbformat.read(path, 4).cells):
            if cell.cell_type == "code":
                sources.append((cell_name(path, index, cell), cleaner.transform_cell(cell.source)))
    return sources


def templates() -> tuple[list[Template], list[Problem]]:
    """Every English template the code passes to ``tr``/``say``/``translatable``, and the calls whose first argument
    is not a plain string (an f-string, a concatenation at run time) outside :mod:`transformer_book.i18n` itself:
    their text cannot be looked up. A name's value (``tr(name)``) is allowed: it must be marked ``translatable``."""
    found, problems = [], []
    for where, source in code_sources():
        if where.endswith("i18n.py"):
            continue
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name not in FUNCTIONS or not node.args:
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append(Template(first.value, f"{where} line {node.lineno}"))
            elif not isinstance(first, (ast.Name, ast.Attribute, ast.Subscript)):
                problems.append(
                    Problem(f"{where} line {node.lineno}", f"{name}() of {ast.unparse(first)[:60]}: pass a template")
                )
    return found, problems


def script_templates() -> tuple[list[Template], list[Problem]]:
    """Every English template the scripts of the book's pages (``book/_ext/*.js``) pass to ``tr``, ``translatable``
    (and the playground's ``InputError``), and the calls whose English cannot be read off the source: read by the
    book's Sphinx extension (``static_book.words``), which gives the pages their translations from the catalogue."""
    sys.path.insert(0, str(SITE))
    from static_book import words

    found, problems = [], []
    for path in words.scripts():
        texts, unreadable = words.script_templates(path)
        where = str(path.relative_to(ROOT))
        found += [Template(text, f"{where} line {line}") for text, line in texts]
        problems += [Problem(f"{where} line {line}", what) for line, what in unreadable]
    return found, problems


def catalogue_entries(language: str = "zh") -> list[tuple[Path, dict]]:
    return [
        (path, entry)
        for path in sorted((LOCALE / language).glob("*.json"))
        for entry in json.loads(path.read_text("utf-8"))
    ]


def entry_lines(path: Path) -> list[int]:
    """The line of each entry of a catalogue file, in order: where its ``"en"`` starts (a JSON string holds no line
    break, so each key is on a line of its own)."""
    text = path.read_text("utf-8")
    return [text.count("\n", 0, m.start()) + 1 for m in re.finditer(r'^\s*"en"\s*:', text, re.M)]


def catalogue_problems(language: str = "zh") -> list[Problem]:
    """Templates with no translation, translations of English the code no longer has, English translated differently
    in two places, and translations whose ``{fields}`` differ from their English."""
    sys.path.insert(0, str(ROOT))
    from transformer_book.i18n import fields

    used, problems = templates()
    scripts, unreadable = script_templates()
    used, problems = used + scripts, problems + unreadable
    entries = catalogue_entries(language)
    known = {entry["en"] for _, entry in entries}
    asked = {t.text for t in used}
    for template in used:
        if template.text not in known:
            problems.append(Problem(template.where, f"no {language} translation of {template.text!r}"))
            known.add(template.text)  # named once, where it is first asked for
    first: dict[str, tuple[Path, str]] = {}
    lines = {path: iter(entry_lines(path)) for path, _ in entries}
    for path, entry in entries:
        where = f"{path.relative_to(ROOT)} line {next(lines[path])}"
        earlier = first.setdefault(entry["en"], (path, entry[language]))
        if earlier[1] != entry[language]:
            problems.append(
                Problem(
                    where,
                    f"{entry['en']!r} is {entry[language]!r} here, {earlier[1]!r} in {earlier[0].name}: one translation",
                )
            )
        if entry["en"] not in asked:
            problems.append(Problem(where, f"the code no longer shows {entry['en']!r}"))
        elif fields(entry["en"]) != fields(entry[language]):
            mine, english = sorted(fields(entry[language])), sorted(fields(entry["en"]))
            problems.append(Problem(where, f"{entry[language]!r} fills {mine}, its English {english}"))
    return problems


def all_problems(chapters: list[Path]) -> list[Problem]:
    problems = [p for chapter in chapters for p in chapter_problems(chapter)]
    return problems + catalogue_problems()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    status = commands.add_parser("status", help="what is missing or stale (exit 1 if anything)")
    status.add_argument("chapters", nargs="*")
    for name in ("sync", "export"):
        commands.add_parser(name).add_argument("chapters", nargs="+")
    imported = commands.add_parser("import")
    imported.add_argument("chapter")
    imported.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    if args.command == "status":
        chapters = [find_chapter(c) for c in args.chapters] or english_chapters()
        problems = all_problems(chapters)
        for problem in problems:
            print(problem)
        print(f"{len(problems)} to translate or revisit" if problems else "the Chinese edition is up to date")
        return 1 if problems else 0
    if args.command == "sync":
        for chapter in args.chapters:
            print(f"synced {sync(find_chapter(chapter)).relative_to(ROOT)}")
    elif args.command == "export":
        for chapter in args.chapters:
            sys.stdout.write(export(find_chapter(chapter)))
    else:
        written, left_stale = import_text(find_chapter(args.chapter), args.file.read_text(encoding="utf-8"))
        print(f"{written} cells written to {twin(find_chapter(args.chapter)).relative_to(ROOT)}")
        for cell in left_stale:
            print(f"cell {cell}: its English changed and its Chinese did not: left stale (translate the change)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
