"""The Chinese chapters' outputs speak Chinese: no English sentence or label in what a chapter's code prints or
displays (its stdout, the Markdown and HTML it shows), outside what is data. Every such word goes through
``transformer_book.i18n`` (``tr``/``say``), as ``tests/notebooks/test_chinese_edition.py`` checks from the code's
side; this test checks from the reader's side, over the outputs of a real run.

The outputs are those of ``make test``'s Chinese build (``make nbval-colab`` records the chapters, the build takes
them from its jupyter-cache), or of a folder of recorded notebooks named by ``TRANSFORMER_BOOK_ZH_OUTPUTS``::

    TRANSFORMER_BOOK_RECORD=/tmp/rec TRANSFORMER_BOOK_STRICT_LANGUAGE=1 python -m pytest -p tests.nbval_kernels \\
        -p tests.nbval_record --nbval-lax --nbval-sanitize-with tests/nbval_sanitize.cfg zh/book/04_masks.ipynb
    TRANSFORMER_BOOK_ZH_OUTPUTS=/tmp/rec python -m pytest tests/notebooks/test_chinese_outputs.py

With neither, it skips.

**English** (:func:`english_findings`) is, in one line of output:

- a run of three or more English words in a row (a *word*: two or more letters, with inner hyphens or apostrophes,
  or ``a``; ``True``, ``False``, ``None``, ``nan`` and ``inf`` are values, not words; a single letter such as ``x``,
  ``V`` or ``T`` is a variable; an identifier such as ``d_model``, ``nn.Linear``, ``x2`` or ``LayerNorm`` and an
  acronym such as ``BLEU`` are not words; ``:``, ``;``, ``=``, brackets, arrows and the like end a run, commas and
  full stops do not);
- in a line with no Chinese character, a run of two English words, or a label: an English word or two at the start of
  the line followed by a colon (``finite: True``, ``mask shape: (3, 1, 1, 5)``).

**Data**, removed from a line before it is read (each rule says why it is data):

- everywhere: text in quotes (a Python repr of a string, a quoted token or sentence); an exception's message after
  its class name (the library's or the package's words to a programmer, shown as raised); in Markdown, inline code,
  math and link targets; in HTML, scripts, styles and code (a figure's data, a source listing); the names of works and
  products in :data:`NAMES`;
- per chapter and cell, :data:`DATA`: a pattern and the reason that what it matches is data (the dates in words of the
  dates chapter, the English and German of the translation pairs, token lists, ...). Only that cell's lines are read
  through its patterns, so a label printed beside the data is still found.

A page whose prints are not converted yet is an expected failure, named in :data:`NOT_YET` with the reason (none
now).
"""

from __future__ import annotations

import html.parser
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import translate  # noqa: E402

OUTPUTS_ENV = "TRANSFORMER_BOOK_ZH_OUTPUTS"
BUILD = ROOT / "_build" / "zh" / "_build"
CHAPTERS = [path.stem for path in translate.english_chapters()]

CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")  # Chinese characters and full-width punctuation
VALUES = {"True", "False", "None", "nan", "inf", "NaN", "Inf"}
WORD = re.compile(r"[A-Za-z]+(?:[-'’][A-Za-z]+)*")
OPENING = "([{<«“‘\"'|=→←⟶"  # a token that starts with one of these starts a new run
CLOSING = ":;)]}>»”’\"'|=→←⟶?!"  # a token that ends with one of these ends its run
AROUND = "([{<«“‘\"'*_`,.:;)]}>»”’?!…"  # stripped from a token before it is read as a word
LABEL = re.compile(r"^\s*(?P<label>[A-Za-z]+(?:[-'][A-Za-z]+)*(?: [A-Za-z]+(?:[-'][A-Za-z]+)*)?):(?:\s|$)")

# Names of works, products, places and authors the Chinese text writes in their own language.
NAMES = [
    "Wu et al.",
    "The Annotated Transformer",
    "Attention Is All You Need",
    "ONNX Runtime Web",
    "ONNX Runtime",
    "Hugging Face",
    "Google Colab",
    "Unicode CLDR",
]

# Removed everywhere, before a line is read: (pattern, why it is data).
EVERYWHERE = [
    (r"(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])", "a Python repr of a string, or a quoted token: the data it quotes"),
    (r'(?<![A-Za-z])"[^"\n]*"(?![A-Za-z])', "a quoted string: the data it quotes"),
    (r"“[^”\n]*”|‘[^’\n]*’|「[^」\n]*」", "a quotation in the Chinese text: the English it quotes"),
    (
        r"\b[A-Z]\w*(?:Error|Exception|Interrupt)\b:.*",
        "an exception, its class and its message: the words of the library or the package to a programmer, as raised",
    ),
    (r"<(?:pad|unk|s|/s|bos|eos)>", "a special token"),
]

# Dates and numbers in words (the dates chapter's sources, transformer.train.dates): a run of month and weekday names,
# number words, ordinals, "the", "of", "and", and the tokenizer's "st", "nd", "rd", "th", with digits and commas between.
_NUMBER = (
    "zero|oh|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand"
)
_ORDINAL = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|"
    "fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth"
)
_CALENDAR = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
)
_TENS = "(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)-"
_DATE_WORD = rf"(?:{_TENS})?(?:{_NUMBER}|{_ORDINAL}|{_CALENDAR}|and|the|of|st|nd|rd|th)"
DATES_IN_WORDS = rf"(?i)\b{_DATE_WORD}\b(?:[\s,;\d-]+{_DATE_WORD}\b)*"
DATES = "dates and numbers in words: the dates chapter's data (transformer.train.dates)"
# A translation pair on one line: what follows the last Chinese character (a label), an arrow, the rest of the line.
PAIR = r"[^\u3400-\u9fff\uff00-\uffef]* (?:->|→) .*$"
PAIRS = "the English and German of translation pairs, or the model's German (transformer.train.translation)"

# Data per chapter and cell: {chapter: {cell id: [(pattern, why it is data)]}}. A pattern is removed from each line
# of that cell's outputs before the line is read.
DATA: dict[str, dict[str, list[tuple[str, str]]]] = {
    "09_dates": {
        "d13-styles": [(DATES_IN_WORDS, DATES + ", one date in each style, and years")],
        "d13-examples": [(DATES_IN_WORDS, DATES + ": training examples")],
        "d13-vocab-build": [(DATES_IN_WORDS, DATES + ": the source vocabulary, their words")],
        "d13-encode": [(DATES_IN_WORDS, DATES + ": an example, its tokens")],
        "d13-unk-code": [(DATES_IN_WORDS, DATES + ": a date with a word the vocabulary does not have")],
        "d13-greedy-code": [(DATES_IN_WORDS, DATES + ": test dates the model gets wrong")],
    },
    "10_translation": {
        "d10-kinds": [(PAIR, PAIRS + ": an example of each kind")],
        "d10-held-out": [(r"(?<=：).*$", "the English of test pairs: a date in every style, a list of countries")],
        "d10-samples": [(PAIR, PAIRS + ": training pairs")],
        "d10-vocab-split": [(PAIR, "English and German text and its subword tokens")],
        "d10-vocab-prefix": [(r"(?<=id：).*$", "the subword pieces of a German number word")],
        "d10-errors-code": [(PAIR, PAIRS + ": the model's mistakes, with the right German")],
        "d10-ablation-code": [(PAIR, PAIRS + ": the mistakes of the model without one head, with the right German")],
    },
    "02_embeddings": {
        "c04": [
            (
                r"\b(?:have|is|my|the|cat|dog|horse|bird|fox|red|green|blue|black|white|one|two|three|four|five|sees"
                r"|likes|chases|follows|hears)\b",
                "the toy corpus's vocabulary, word by word",
            )
        ]
    },
    "05_attention": {"fd5f400789de": [(r"the (?:cat|dog) chased the (?:cat|dog)", "the two example sentences")]},
    "14_playground": {
        "52f57c2c": [
            (PAIR, "each playground model's sources (symbols, dates in words) and its greedy and beam outputs")
        ],
        "en-de-examples": [(PAIR, PAIRS + ": the playground's English examples, greedy and beam")],
        "en-de-limits-code": [(PAIR, "English text unlike the training pairs and the model's German for it")],
    },
    "14a_in_the_browser": {
        "pga-tokens": [(PAIR, "a text and its subword tokens (the translation chapter's vocabulary)")]
    },
}

# Pages not yet converted, by the start of their name, with the reason: expected to fail (strict), so that an entry
# goes once its pages pass. Chapter 7's three pages were here until their prints went through the catalogue.
NOT_YET: dict[str, str] = {}


def not_yet(chapter: str) -> str | None:
    return next((reason for start, reason in NOT_YET.items() if chapter.startswith(start)), None)


class _Text(html.parser.HTMLParser):
    """The text of an HTML output, one line per text node, without scripts, styles, code and source listings."""

    SKIPPED = {"script", "style", "code", "pre", "svg", "math"}

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.SKIPPED:
            self.skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIPPED and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.lines += [line for line in data.splitlines() if line.strip()]


def html_lines(text: str) -> list[str]:
    parser = _Text()
    parser.feed(text)
    return parser.lines


MARKDOWN_DATA = [
    r"`[^`\n]*`",  # inline code
    r"\$\$[^$]*\$\$|\$[^$\n]*\$",  # math
    r"\]\([^)\s]*\)",  # a link's target
    r"<[^>\n]*>",  # an inline HTML tag
]


def markdown_lines(text: str) -> list[str]:
    for pattern in MARKDOWN_DATA:
        text = re.sub(pattern, " ", text)
    return text.splitlines()


def _text(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value


def output_lines(output: dict) -> list[str]:
    """What a reader reads of one output, line by line: stdout, else Markdown, else HTML's text, else plain text
    (the book shows the richest form; stderr holds the libraries' warnings, not the chapter's words)."""
    if output.get("output_type") == "stream":
        return _text(output["text"]).splitlines() if output.get("name") == "stdout" else []
    data = output.get("data", {})
    if "text/markdown" in data:
        return markdown_lines(_text(data["text/markdown"]))
    if "text/html" in data:
        return html_lines(_text(data["text/html"]))
    if output.get("output_type") == "execute_result" and set(data) == {"text/plain"}:
        return _text(data["text/plain"]).splitlines()
    return []


def _is_word(token: str) -> bool:
    core = token.strip(AROUND)
    letters = re.sub("[-'’]", "", core)
    written = letters.islower() or (letters[:1].isupper() and letters[1:].islower())  # not BLEU, chrF, LayerNorm
    return bool(WORD.fullmatch(core)) and core not in VALUES and written and (len(core) > 1 or core == "a")


def english_runs(line: str) -> list[list[str]]:
    """The runs of English words in a line, in order."""
    runs: list[list[str]] = []
    current: list[str] = []
    for token in line.split():
        if token[0] in OPENING and current:
            runs.append(current)
            current = []
        if _is_word(token):
            current.append(token.strip(AROUND))
        elif current:
            runs.append(current)
            current = []
        if token[-1] in CLOSING and current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def without_data(line: str, patterns: list[tuple[str, str]]) -> str:
    for name in NAMES:
        line = line.replace(name, " ")
    for pattern, _ in EVERYWHERE + patterns:
        line = re.sub(pattern, " ", line)
    return line


def english_in(line: str) -> str | None:
    """What makes a line (its data removed) English, or None."""
    chinese = bool(CJK.search(line))
    for run in english_runs(line):
        if len(run) >= 3 or (len(run) == 2 and not chinese):
            return " ".join(run)
    label = LABEL.match(line)
    if label and not chinese and all(map(_is_word, label["label"].split())):
        return label["label"] + ":"
    return None


def english_findings(notebook: dict, chapter: str) -> list[str]:
    """Every line of the notebook's outputs that holds English outside what is data: chapter, cell (id), the line's
    number among the cell's output lines, and the line."""
    findings = []
    data = DATA.get(chapter, {})
    for cell in notebook["cells"]:
        if cell.get("cell_type") != "code":
            continue
        patterns = data.get(cell.get("id"), [])
        lines = [line for output in cell.get("outputs", []) for line in output_lines(output)]
        for number, line in enumerate(lines, 1):
            found = english_in(without_data(line, patterns))
            if found:
                findings.append(f"{chapter} cell {cell.get('id')} line {number}: {found!r} in {line.strip()!r}")
    return findings


def executed(chapter: str) -> dict:
    """The Chinese chapter's executed notebook, from TRANSFORMER_BOOK_ZH_OUTPUTS or the Chinese build; skips when
    neither has it."""
    folder = os.environ.get(OUTPUTS_ENV)
    if folder:
        path = Path(folder) / f"{chapter}.ipynb"
        if not path.is_file():
            pytest.skip(f"{path} missing: {OUTPUTS_ENV} names a folder without this chapter")
        return json.loads(path.read_text(encoding="utf-8"))
    if not (BUILD / "html").is_dir():
        pytest.skip(f"no Chinese build in {BUILD} (make book) and no {OUTPUTS_ENV}")
    return _site_tests().executed_notebook(f"zh/book/{chapter}")


def _site_tests():
    """tests/site/test_book_browser.py, which reads the build's executed notebooks (its cache or jupyter_execute)."""
    path = ROOT / "tests" / "site" / "test_book_browser.py"
    spec = importlib.util.spec_from_file_location("book_browser", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "chapter",
    [
        pytest.param(name, marks=pytest.mark.xfail(reason=not_yet(name), strict=True)) if not_yet(name) else name
        for name in CHAPTERS
    ],
)
def test_a_chinese_chapter_prints_no_english_outside_its_data(chapter: str) -> None:
    findings = english_findings(executed(chapter), chapter)
    assert not findings, (
        f"{len(findings)} lines of English in the outputs of zh/book/{chapter}.ipynb (put the words through tr/say, "
        "or, if they are data, add them to DATA with the reason):\n" + "\n".join(findings)
    )


def test_data_names_cells_that_exist() -> None:
    """Each DATA entry names a chapter and a cell of it: a renamed cell must not leave its data unread, or exempt."""
    for chapter, cells in DATA.items():
        assert chapter in CHAPTERS, chapter
        ids = {cell["id"] for cell in json.loads((ROOT / "zh" / "book" / f"{chapter}.ipynb").read_text())["cells"]}
        assert set(cells) <= ids, f"{chapter}: no cells {sorted(set(cells) - ids)}"
        for patterns in cells.values():
            for pattern, reason in patterns:
                re.compile(pattern)
                assert reason.strip(), pattern


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("layer norm: unchanged when sentence 1 changes: True   unchanged by padding: True", "layer norm"),
        ("正确。there the smoothed loss equals the entropy of q", "the smoothed loss"),
        ("mask shape: (3, 1, 1, 5) torch.bool", "mask shape"),
        ("finite: True", "finite:"),
        ("torch.float16   finfo.min = -65504       -1e9 stored as -inf", "stored as"),
        ("掩码形状：(3, 1, 1, 5) torch.bool", None),
        ("NaN rows after layer 1: [True, True, False]", "rows after layer"),
        ("第 1 层之后出现 NaN 的行：[True, True, False]", None),
        ("tensor([[1, 0, 0], [1, 1, 0]], dtype=torch.int32)", None),
        ("torch 2.13.0+cpu", None),
        ("RuntimeError: masked_fill_ only supports boolean masks, but got mask with dtype unsigned char", None),
        ("tokens: ['the', 'cat', 'sat']", "tokens:"),
        ("词元：['the', 'cat', 'sat']", None),
        ("用 The Annotated Transformer 的写法", None),
        ("nn.MultiheadAttention, nn.Transformer: key_padding_mask(mask)", None),
        ("share_embeddings=True   tie_output_embedding=False    37,888,000  = 2 x V x d_model", None),
        ("a step extends 4 live hypotheses", "a step extends"),
        ("LearnedPositionalEncoding:", None),
        ("贪心解码：BLEU 99.9，chrF 99.7", None),
    ],
)
def test_what_counts_as_english(line: str, found: str | None) -> None:
    result = english_in(without_data(line, []))
    assert (result is None) if found is None else (result is not None and result.startswith(found)), result


def test_a_column_of_chinese_and_english_labels_lines_up_with_ljust() -> None:
    """What the chapters use to print a column whose labels may be Chinese (a Chinese character takes two columns)."""
    from transformer_book.i18n import ljust, rjust, text_columns

    labels = ["数字", "相对时间", "number", "relative"]
    assert (
        {text_columns(ljust(label, 9)) for label in labels}
        == {text_columns(rjust(label, 9)) for label in labels}
        == {9}
    )
    assert ljust("number", 9) == f"{'number':<9}" and rjust("all", 4) == f"{'all':>4}"
    assert ljust("a long label", 4) == rjust("a long label", 4) == "a long label"
