"""Keep the Chinese edition (``zh/``) in step with the English: what needs translating, and the tools to do it.

Each English chapter ``book/NN_name.ipynb`` has a twin ``zh/book/NN_name.ipynb`` with the same cells, in the same
order, under the same ids: its code cells are the English ones, character for character (with their own checked
outputs); each markdown cell is a translation that records, in ``metadata.transformer_book.translates``, the SHA-256
of the English cell it translates. What the code shows in words (``tr``, ``say``, ``translatable`` of
:mod:`transformer_book.i18n`, in the book kit and in the chapters; ``tr`` and ``translatable`` in the book's Sphinx
extension and the scripts of its pages, ``book/_ext``) is translated in ``transformer_book/locale/zh/``.

    python scripts/translate.py status [NN ...]     # what is missing or stale, by chapter and cell; exit 1 if any
    python scripts/translate.py sync NN [NN ...]    # make the twin follow the English cells (code copied, prose kept;
                                                    # then `make refresh` the twin for its say cells' paragraphs)
    python scripts/translate.py export NN > f.txt   # the prose of a chapter as text: the English beside the Chinese
    python scripts/translate.py import NN f.txt     # write the Chinese of f.txt back; each cell now translates the
                                                    # English it stands beside

``NN`` is a chapter's number or its file's stem. ``tests/notebooks/test_chinese_edition.py`` fails on what ``status`` lists.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_toc import toc_files  # noqa: E402
from say_cells import is_say_cell  # noqa: E402

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


def digest(text: str) -> str:
    """What a translated cell records of the English it translates."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    ids = [(c.cell_type, c.get("id")) for c in english.cells]
    if ids != [(c.cell_type, c.get("id")) for c in chinese.cells]:
        wrong = f"its cells are not {english_path.name}'s (ids and kinds, in order): sync it"
        problems.append(Problem(str(chinese_path.relative_to(ROOT)), wrong))
        return problems
    for index, (en, zh) in enumerate(zip(english.cells, chinese.cells, strict=True)):
        where = cell_name(chinese_path, index, zh)
        if en.cell_type == "code":
            if zh.source != en.source:
                problems.append(Problem(where, "its code differs from the English: sync it"))
            if zh.metadata.get("tags", []) != en.metadata.get("tags", []):
                problems.append(Problem(where, "its tags differ from the English: sync it"))
            continue
        recorded = zh.metadata.get(KEY, {}).get("translates")
        if recorded is None:
            problems.append(Problem(where, f"not translated yet: {first_line(en.source)!r}"))
        elif recorded != digest(en.source):
            problems.append(Problem(where, f"the English changed since it was translated: {first_line(en.source)!r}"))
        elif re.search(r"[A-Za-z]{3}", _prose(en.source)) and not CJK.search(zh.source):
            problems.append(Problem(where, f"holds no Chinese: {first_line(zh.source)!r}"))
    return problems


def _prose(markdown: str) -> str:
    """``markdown`` without code, formulas, links' targets and directives' options: what a translation changes."""
    text = re.sub(r"```.*?```|\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|^:[\w-]+:.*$", " ", markdown, flags=re.S | re.M)
    return text


def sync(english_path: Path) -> Path:
    """Make ``english_path``'s twin follow its cells: code cells and their tags copied (the twin's outputs kept where
    the code is unchanged, else the English outputs, but for a say cell's, whose paragraph is English: none, until
    ``make refresh`` runs the twin), markdown cells kept by id (a new one holds the English, marked untranslated),
    the English notebook's metadata with the language."""
    english = nbformat.read(english_path, 4)
    chinese_path = twin(english_path)
    old = {c.get("id"): c for c in nbformat.read(chinese_path, 4).cells} if chinese_path.is_file() else {}
    cells = []
    for en in english.cells:
        zh = old.get(en.get("id"))
        if en.cell_type == "code":
            cell = copy.deepcopy(en)
            if zh is not None and zh.cell_type == "code" and zh.source == en.source:
                cell.outputs, cell.execution_count = zh.outputs, zh.execution_count
            elif is_say_cell(cell):
                cell.outputs, cell.execution_count = [], None
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
    """The prose of a chapter as text: for each markdown cell a header, the English, and the Chinese (empty where
    there is none yet). ``import`` reads only the Chinese part back."""
    english, chinese = nbformat.read(english_path, 4), nbformat.read(twin(english_path), 4)
    parts = []
    for en, zh in zip(english.cells, chinese.cells, strict=True):
        if en.cell_type != "markdown":
            continue
        recorded = zh.metadata.get(KEY, {}).get("translates")
        state = "current" if recorded == digest(en.source) else "untranslated" if recorded is None else "stale"
        current = zh.source if recorded is not None else ""
        quoted = "\n".join(f"| {line}" if line else "|" for line in en.source.splitlines())
        parts.append(f"=== cell {en.get('id')} ({state}) ===\n{quoted}\n--- zh ---\n{current}\n")
    return "\n".join(parts)


def import_text(english_path: Path, text: str) -> int:
    """Write each Chinese part of ``text`` (from :func:`export`) into the twin's cell of that id, recorded as the
    translation of the English cell as it is now; a cell whose Chinese part is empty is left alone. Return how many."""
    english, chinese_path = nbformat.read(english_path, 4), twin(english_path)
    chinese = nbformat.read(chinese_path, 4)
    by_id = {c.get("id"): (en, c) for en, c in zip(english.cells, chinese.cells, strict=True)}
    written = 0
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
        zh.source = translated
        zh.metadata.setdefault(KEY, {})["translates"] = digest(en.source)
        written += 1
    nbformat.write(chinese, chinese_path)
    return written


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
        written = import_text(find_chapter(args.chapter), args.file.read_text(encoding="utf-8"))
        print(f"{written} cells written to {twin(find_chapter(args.chapter)).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
