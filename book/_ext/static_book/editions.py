"""The two editions: the English book (``_config.yml``) and the Chinese (``zh/_config.yml``, ``language: zh_CN``),
built one after the other and published together, the Chinese under ``zh/`` of the English site.

Each puts a link to the same page in the other edition at the top of every article (and a ``<link rel="alternate"
hreflang>`` in its head), so that a reader switches language without losing their place. The Chinese edition's toggles
of hidden cells say what they do in Chinese: myst-nb writes them in English whatever the language. Every word the
site's own code shows comes from the book's catalogue (:mod:`.words`, :func:`translated`): a Chinese page that loads
a script of ``book/_ext`` carries the translations of that script's words (:func:`ask_page_words`), as
``window.bookWords``, which the script's ``tr`` reads.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from transformer_book.i18n import translatable

from .output import is_html, rewrite_pages
from .words import translations

logger = logging.getLogger(__name__)

# Each edition links every page to its twin in the other: the English site's root holds the Chinese under zh/.
EDITIONS = {
    "en": ("zh", "中文", "zh-CN", "zh/"),
    "zh": ("en", "English", "en", "../"),
}  # other, its name, hreflang, root

# myst-nb's words on the toggles of hidden cells (one format for every kind of cell, hence English whatever the
# language), which the other edition shows in its own.
CELL_TOGGLES = (
    translatable("Show code cell source"),
    translatable("Hide code cell source"),
    translatable("Show code cell content"),
    translatable("Hide code cell content"),
    translatable("Show code cell outputs"),
    translatable("Hide code cell outputs"),
)


def edition(app: Sphinx) -> str:
    """``"zh"`` in the Chinese edition's build (``language: zh_CN``), else ``"en"``."""
    return "zh" if str(app.config.language or "").startswith("zh") else "en"


def english_root(app: Sphinx) -> str:
    """The English site's root, relative to the edition's: the other editions are published under it."""
    return "" if edition(app) == "en" else EDITIONS[edition(app)][3]


def translated(app: Sphinx, texts: list[str]) -> dict[str, str]:
    """``texts`` (English) in the edition's language, from the book's catalogue (``transformer_book/locale/``); one it
    lacks stays English, with a warning (which fails the book's build: ``-W``)."""
    found, missing = translations(texts, edition(app))
    for text in missing:
        logger.warning(
            f"static_book: no {edition(app)} translation of {text!r} in transformer_book/locale/{edition(app)}/: "
            "scripts/translate.py status lists what is missing"
        )
    return {**{text: text for text in missing}, **found}


# The page's context (html-page-context) holds, under this key, the English whose translations its scripts need.
PAGE_WORDS = "book_page_words"


def ask_page_words(context: dict, texts: Iterable[str]) -> None:
    """Give the page whose html-page-context ``context`` is the edition's words for ``texts`` (English that a script
    it loads writes through ``tr``): one ``window.bookWords`` for all of its scripts, written by
    :func:`_add_page_words`."""
    context.setdefault(PAGE_WORDS, set()).update(texts)


def _add_page_words(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """In an edition other than English, the words the page's scripts asked for (:func:`ask_page_words`), as
    ``window.bookWords``, in a script before theirs; an English page has none, and its scripts write their English."""
    texts = context.get(PAGE_WORDS)
    if not texts or edition(app) == "en":
        return
    words = json.dumps(translated(app, sorted(texts)), ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    app.add_js_file(None, body=f"window.bookWords = {words};", priority=200)


def twin_url(app: Sphinx, pagename: str) -> str:
    """The URL, relative to page ``pagename``, of the same page in the other edition (of its first page, where that
    edition has no such page: the glossary, the search and index pages)."""
    other_root = EDITIONS[edition(app)][3]
    srcdir = Path(app.srcdir)
    other_src = srcdir / "zh" if edition(app) == "en" else srcdir.parent
    up = "../" * pagename.count("/")
    if any((other_src / f"{pagename}{suffix}").is_file() for suffix in (".ipynb", ".md")):
        return f"{up}{other_root}{pagename}.html"
    return f"{up}{other_root}index.html"


def _add_language_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """A link to the page's twin in the other edition, at the top of the article (and for search engines, in the
    head)."""
    if not is_html(app):
        return
    _, name, hreflang, _ = EDITIONS[edition(app)]
    url = html.escape(twin_url(app, pagename))
    context["metatags"] = context.get("metatags", "") + f'<link rel="alternate" hreflang="{hreflang}" href="{url}">\n'
    label = "Language / 语言"
    link = (
        f'<nav class="book-language" aria-label="{label}"><a href="{url}" hreflang="{hreflang}" lang="{hreflang}">'
        f"{name}</a></nav>\n"
    )
    context["body"] = link + context.get("body", "")


def _translate_cell_toggles(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or not is_html(app) or edition(app) == "en":
        return
    toggles = translated(app, list(CELL_TOGGLES))

    def translate(text: str, page: Path) -> str:
        for english, translated in toggles.items():
            text = text.replace(f">{english}</p>", f">{translated}</p>")
        return text

    rewrite_pages(app, translate)


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", _add_language_switch)
    app.connect("html-page-context", _add_page_words, priority=900)  # after the handlers that add the scripts
    app.connect("build-finished", _translate_cell_toggles)
