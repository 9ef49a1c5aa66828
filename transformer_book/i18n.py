"""The book's languages: what a chapter shows a reader in the language of the notebook it runs in.

A Chinese chapter (``zh/book/``) runs the English chapter's code, character for character; only its prose differs.
What that code shows a reader in words goes through this module, so that it comes out in the notebook's language:

- :func:`tr` ``("Head {h}", h=2)``: a label, a title, a message: the template in the reader's language, filled with
  the values by :meth:`str.format`;
- :func:`say` ``("The loss fell to {loss:.2f}.", loss=loss)``: a sentence computed from results, shown as Markdown;
- :func:`translatable` ``("pre-norm, warm-up")``: marks a string that is shown later through ``tr(name)``, where
  its value is not written out (a dictionary's key, say), so that the check below finds it;
- :func:`ljust` ``(tr(kind), 9)``, :func:`rjust`: a printed column that stays aligned when its labels are Chinese.

The English text is the key: each language other than English has a catalogue, ``locale/<language>/*.json`` beside
this module, of ``{"en": ..., "zh": ...}`` entries. ``tests/notebooks/test_chinese_edition.py`` reads every ``tr``, ``say`` and
``translatable`` of the book kit and the chapters and fails on a template with no translation (the English changed,
or is new) and on a translation whose English no longer occurs; ``scripts/translate.py status`` lists both.

The language is the notebook's (:func:`notebook_language`): the one its metadata names (``{"transformer_book":
{"language": "zh"}}``), where the front end tells the kernel which notebook runs (JupyterLab, VS Code, Colab), else
``zh`` when the kernel works in the book's ``zh/book/`` folder; ``TRANSFORMER_BOOK_LANGUAGE`` overrides it. A
template missing from the catalogue shows in English, with a warning, so that a reader who edits a chapter's code never
breaks it; ``TRANSFORMER_BOOK_STRICT_LANGUAGE=1`` (the book's own runs of the Chinese chapters) makes that an error.
"""

from __future__ import annotations

import json
import os
import string
import sys
import unicodedata
import warnings
from functools import cache
from pathlib import Path

__all__ = [
    "LANGUAGES",
    "language",
    "ljust",
    "notebook_language",
    "rjust",
    "say",
    "set_language",
    "text_columns",
    "tr",
    "translatable",
]

LANGUAGES = ("en", "zh")  # English, Simplified Chinese
LANGUAGE_ENV = "TRANSFORMER_BOOK_LANGUAGE"
STRICT_ENV = "TRANSFORMER_BOOK_STRICT_LANGUAGE"
LOCALE = Path(__file__).parent / "locale"
METADATA_KEY = "transformer_book"  # a notebook's metadata: {"transformer_book": {"language": "zh"}}

_language: str | None = None


def set_language(name: str) -> None:
    """Show every later :func:`tr` and :func:`say` in ``name`` (one of :data:`LANGUAGES`)."""
    global _language
    if name not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {name!r}")
    _language = name


def language() -> str:
    """The language :func:`tr` writes in: the one set, else the notebook's (found once)."""
    if _language is None:
        set_language(notebook_language())
    return _language


def notebook_language() -> str:
    """``TRANSFORMER_BOOK_LANGUAGE`` if set; else the language the notebook's metadata names, where the front end tells
    the kernel which notebook it runs (JupyterLab and Notebook 7, VS Code, Colab); else ``"zh"`` when the kernel works
    in the book's ``zh/book/`` folder (Jupyter, nbclient and the book's builds start it in the notebook's folder);
    else ``"en"``."""
    chosen = os.environ.get(LANGUAGE_ENV)
    if chosen:
        return chosen
    for path in _notebook_paths():
        found = _metadata_language(path)
        if found:
            return found
    found = _colab_notebook_language()
    if found:
        return found
    return "zh" if Path.cwd().parts[-2:] == ("zh", "book") else "en"


def _notebook_paths() -> list[Path]:
    """The running notebook's path, where the front end gave it to the kernel: JupyterLab and Notebook 7 set
    ``JPY_SESSION_NAME``, ipykernel ``__session__``, VS Code ``__vsc_ipynb_file__``."""
    paths = [os.environ.get("JPY_SESSION_NAME", "")]
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        paths += [str(shell.user_ns.get(name, "")) for name in ("__session__", "__vsc_ipynb_file__")]
    return [Path(path) for path in paths if path.endswith(".ipynb")]


def _metadata_language(path: Path) -> str | None:
    """The language a notebook file's metadata names, if it is readable and names one."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))["metadata"][METADATA_KEY]["language"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _colab_notebook_language() -> str | None:
    """On Colab, the language in the open notebook's metadata (Colab's front end sends the notebook on request); None
    elsewhere, or when it does not answer."""
    if "google.colab" not in sys.modules:  # Colab's kernel has it loaded; nothing else should import it
        return None
    try:
        from google.colab import _message  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        notebook = _message.blocking_request("get_ipynb", timeout_sec=10)["ipynb"]
        return notebook["metadata"][METADATA_KEY]["language"]
    except Exception:  # an older or a changed front end: the other signs, else English
        return None


@cache
def catalogue(name: str) -> dict[str, str]:
    """Every template of ``locale/<name>/*.json``, English to ``name``; a template given twice must read the same."""
    entries: dict[str, str] = {}
    for path in sorted((LOCALE / name).glob("*.json")):
        for entry in json.loads(path.read_text(encoding="utf-8")):
            english, translated = entry["en"], entry[name]
            if entries.get(english, translated) != translated:
                raise ValueError(f"{path.name}: {english!r} is translated twice, differently")
            entries[english] = translated
    return entries


def template(text: str) -> str:
    """``text`` (an English template) in the current language."""
    name = language()
    if name == "en":
        return text
    translated = catalogue(name).get(text)
    if translated is None:
        message = (
            f"no {name} translation of {text!r} in {LOCALE / name}: scripts/translate.py status lists what is missing"
        )
        if os.environ.get(STRICT_ENV) == "1":
            raise KeyError(message)
        warnings.warn(message, stacklevel=3)
        return text
    return translated


def tr(text: str, **values: object) -> str:
    """``text`` in the reader's language, its ``{fields}`` filled from ``values`` (none given: no formatting, so a
    brace stays a brace)."""
    translated = template(text)
    return translated.format(**values) if values else translated


def say(text: str, **values: object):
    """A sentence computed from results, in the reader's language, as Markdown (a cell's last line shows it)."""
    from IPython.display import Markdown

    return Markdown(tr(text, **values))


def translatable(text: str) -> str:
    """``text`` unchanged: marks a string that is shown later through ``tr(...)`` of a name that holds it."""
    return text


def text_columns(text: str) -> int:
    """How many columns ``text`` takes as a terminal counts them: two for each wide (East Asian) character, one for
    any other. On screen a Chinese character is about as wide as two average Latin letters with their spaces."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def ljust(text: str, width: int) -> str:
    """``text`` and spaces to fill ``width`` columns (:func:`text_columns`): ``str.ljust`` and ``f"{text:<9}"`` count
    characters, and a Chinese character takes two columns, so a column of translated labels would not line up."""
    return text + " " * max(0, width - text_columns(text))


def rjust(text: str, width: int) -> str:
    """Spaces and ``text`` to fill ``width`` columns: :func:`ljust`, right-aligned."""
    return " " * max(0, width - text_columns(text)) + text


NOT_A_TEMPLATE = "(braces that are not fields: shown as written, never formatted)"


def fields(text: str) -> set[str]:
    """The names of ``text``'s ``{fields}`` (a translation must use the same); for text whose braces are not fields
    (TeX's ``\\sqrt{x}`` in text shown as written), :data:`NOT_A_TEMPLATE` alone."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError:
        return {NOT_A_TEMPLATE}
