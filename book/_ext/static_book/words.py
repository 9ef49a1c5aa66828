"""The words the site's own code shows a reader, from the book's one catalogue (``transformer_book/locale/``).

The English text is the key, as for what the chapters show (:mod:`transformer_book.i18n`). The scripts in
``book/_ext`` write English through ``tr("...")``, and mark English they show later through ``tr(name)`` with
``translatable("...")``; the engine's ``InputError`` takes its English as its second argument. This extension's own
modules mark theirs with ``transformer_book.i18n.translatable`` (the toggles of hidden cells, the index page's link).
The build looks each up in the catalogue of the edition's language (:func:`translations`): a Chinese page carries the
translations of the words of the scripts it loads (``figures.js``: :mod:`.figures`; the playground's:
:mod:`.playground`; both through :func:`.editions.ask_page_words`), and the Chinese pages' toggles say theirs.

:func:`script_templates` reads every such string out of a script, with its line, for ``scripts/translate.py status``
and ``tests/notebooks/test_chinese_edition.py``, which fail on a string with no translation and on a translation that no
code asks for, as they do for the chapters' ``tr`` and ``say``. It reads JavaScript with a tokenizer (strings,
template literals, comments, regular expressions, punctuation), not by searching the text: a string in a comment is
no template, and a call whose English cannot be read off the source (a template literal, a sum with a variable) is
named as a problem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

EXT = Path(__file__).resolve().parents[1]  # book/_ext: the scripts
# The functions whose argument (by position) is an English template, like xgettext's --keyword=name:position.
KEYWORDS = {"tr": 0, "translatable": 0, "InputError": 1}


@dataclass(frozen=True)
class Token:
    kind: str  # "string" (value: its text), "template" (a template literal), "regex", "name", "number", "punct"
    value: str
    line: int


_CODE = re.compile(
    r"""(?P<space>\s+)
      | (?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<name>[A-Za-z_$][\w$]*)
      | (?P<number>\d[\w.]*|\.\d[\w.]*)
      | (?P<punct>=>|\.\.\.|\?\?=?|\?\.|[=!]==?|\*\*=?|<<=?|>>>?=?|&&=?|\|\|=?|\+\+|--|[-+*/%&|^<>]=?|[=~!?:;,.(){}\[\]])
    """,
    re.VERBOSE | re.DOTALL,
)
# After these a "/" starts a regular expression; after a name, a number, a string or a closing bracket it divides.
_BEFORE_REGEX_NAMES = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _string_value(literal: str) -> str:
    """The text of a JavaScript string literal (its quotes and escapes read)."""

    def escape(m: re.Match[str]) -> str:
        c = m.group(1)
        if c[0] in "ux":
            return chr(int(c.strip("u{}x"), 16))
        return _ESCAPES.get(c, "" if c == "\n" else c)

    return re.sub(r"\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", escape, literal[1:-1], flags=re.DOTALL)


def tokens(source: str) -> list[Token]:
    """The tokens of JavaScript ``source``, without spaces and comments (a template literal's text is a token, its
    ``${...}`` expressions are read as code)."""
    found: list[Token] = []
    at, line, counted = 0, 1, 0
    braces: list[int] = []  # for each open ${: how many { } are open inside it

    def emit(kind: str, value: str, start: int) -> None:
        nonlocal line, counted
        line, counted = line + source.count("\n", counted, start), start
        found.append(Token(kind, value, line))

    while at < len(source):
        char = source[at]
        if char == "`" or (char == "}" and braces and braces[-1] == 0):  # a template literal, or its text after ${...}
            if char == "}":
                braces.pop()
            end = at + 1
            while end < len(source) and source[end] != "`" and not source.startswith("${", end):
                end += 2 if source[end] == "\\" else 1
            if source.startswith("${", end):
                braces.append(0)
            emit("template", source[at : end + 1], at)
            at = end + (2 if source.startswith("${", end) else 1)
            continue
        if char == "/" and not source.startswith(("//", "/*"), at) and _regex_allowed(found):
            end, in_class = at + 1, False
            while source[end] != "/" or in_class:
                if source[end] == "\\":
                    end += 1
                elif source[end] in "[]":
                    in_class = source[end] == "["
                end += 1
            end = re.compile(r"[a-z]*").match(source, end + 1).end()
            emit("regex", source[at:end], at)
            at = end
            continue
        m = _CODE.match(source, at)
        if m is None:
            raise ValueError(f"cannot read {source[at : at + 20]!r} (line {line + source.count(chr(10), counted, at)})")
        if m.lastgroup == "string":
            emit("string", _string_value(m.group()), at)
        elif m.lastgroup in ("name", "number", "punct"):
            emit(m.lastgroup, m.group(), at)
            if braces and m.group() in ("{", "}"):
                braces[-1] += 1 if m.group() == "{" else -1
        at = m.end()
    return found


def _regex_allowed(before: list[Token]) -> bool:
    if not before:
        return True
    last = before[-1]
    if last.kind == "name":
        return last.value in _BEFORE_REGEX_NAMES
    return last.kind == "punct" and last.value not in (")", "]", "}")


def _arguments(code: list[Token], start: int) -> list[list[Token]]:
    """The arguments of the call whose "(" is ``code[start]``, each a list of tokens."""
    arguments: list[list[Token]] = [[]]
    depth = 0
    for token in code[start + 1 :]:
        if token.kind == "punct" and token.value in ("(", "[", "{"):
            depth += 1
        elif token.kind == "punct" and token.value in (")", "]", "}"):
            if depth == 0:
                return arguments if arguments != [[]] else []
            depth -= 1
        elif token.kind == "punct" and token.value == "," and depth == 0:
            arguments.append([])
            continue
        arguments[-1].append(token)
    raise ValueError(f"line {code[start].line}: a call that never closes")


def _joined_strings(argument: list[Token]) -> str | None:
    """``"a" + "b" + ...`` as one text; None for anything else."""
    if not argument or len(argument) % 2 == 0:
        return None
    if any(t.kind != "string" for t in argument[::2]) or any(t.value != "+" for t in argument[1::2]):
        return None
    return "".join(t.value for t in argument[::2])


def _templates_of(argument: list[Token]) -> list[str] | None:
    """The English an argument can be: strings joined by ``+``, or ``condition ? strings : strings``; an empty list
    for a name (``KIND_NAMES[kind]``, ``err.template``: its strings are marked where they are written); None when the
    English cannot be read off the source."""
    text = _joined_strings(argument)
    if text is not None:
        return [text]
    depth = 0
    for at, token in enumerate(argument):
        if token.kind == "punct" and token.value in "([{":
            depth += 1
        elif token.kind == "punct" and token.value in ")]}":
            depth -= 1
        elif depth == 0 and token.kind == "punct" and token.value == "?":
            colon = next(
                (k for k in range(at + 1, len(argument)) if argument[k].kind == "punct" and argument[k].value == ":"),
                None,
            )
            if colon is None:
                return None
            branches = [_joined_strings(argument[at + 1 : colon]), _joined_strings(argument[colon + 1 :])]
            return None if None in branches else branches
    if (
        argument
        and argument[0].kind == "name"
        and all(t.kind in ("name", "punct", "number", "string") for t in argument)
    ):
        if all(t.value in (".", "[", "]") for t in argument if t.kind == "punct"):
            return []
    return None


def script_templates(path: Path) -> tuple[list[tuple[str, int]], list[tuple[int, str]]]:
    """Every English template of the script at ``path``, with its line, and the calls whose English cannot be read
    off the source (line, what is wrong)."""
    code = tokens(path.read_text(encoding="utf-8"))
    found, problems = [], []
    for at, token in enumerate(code[:-1]):
        after = code[at + 1]
        if token.kind != "name" or token.value not in KEYWORDS or (after.kind, after.value) != ("punct", "("):
            continue
        if at and code[at - 1].value in (".", "function"):  # a method of that name, or the function's definition
            continue
        arguments = _arguments(code, at + 1)
        position = KEYWORDS[token.value]
        if len(arguments) <= position:
            problems.append((token.line, f"{token.value}() without its template"))
            continue
        texts = _templates_of(arguments[position])
        if texts is None:
            shown = " ".join(t.value if t.kind != "string" else json.dumps(t.value) for t in arguments[position])
            problems.append(
                (token.line, f"{token.value}() of {shown[:60]}: pass a string, strings joined by +, or a name")
            )
        else:
            found += [(text, token.line) for text in texts]
    return found, problems


def scripts() -> list[Path]:
    """The scripts the site's pages load from ``book/_ext``."""
    return sorted(EXT.glob("*.js"))


def translations(texts: list[str], language: str) -> tuple[dict[str, str], list[str]]:
    """Each of ``texts`` (English) in ``language``, from the book's catalogue, and those it has no translation of."""
    if language == "en":
        return {text: text for text in texts}, []
    from transformer_book.i18n import catalogue

    entries = catalogue(language)
    return {text: entries[text] for text in texts if text in entries}, [text for text in texts if text not in entries]
