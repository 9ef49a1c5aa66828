"""The names ``book/_ext/figures.js`` gives in a page, in a browser: the check the book's browser test and the small
book's test (``test_static_book.py``) share.

figures.js names each plotly figure (``Figure: <its title>``), each HTML control it puts above one (a menu, a row of
buttons, a slider, each named by the figure's own words or, where the figure gives none, by figures.js's) and each of
bertviz's controls (``head 0``). It writes its words through ``tr``: on a Chinese page they are the translations the
build put in the page (``window.bookWords``, from the book's catalogue), so that no name there is figures.js's English.
"""

from __future__ import annotations

import re

from static_book.figures import figure_words

from transformer_book.i18n import catalogue

FIGURE_NAME = "Figure: {name}"  # figures.js's name of a figure
UNTITLED = "an interactive plot"  # ... of one without a title, panel titles or axis titles

# () => every name figures.js gave in the page: the figures', the controls' above them (a <select>'s and a slider's
# are the text of their <label>), bertviz's controls'.
NAMES = """() => [
  ...[...document.querySelectorAll(
    '.plotly-graph-div[aria-label], .book-figure-controls [aria-label], .bertviz-vis svg [aria-label]')]
    .map((el) => el.getAttribute('aria-label')),
  ...[...document.querySelectorAll('.book-figure-controls label > span')].map((el) => el.textContent),
]"""


def english_templates() -> list[re.Pattern[str]]:
    """figures.js's English templates that hold words (not a separator such as ``", "`` or ``"{panels}: {axes}"``),
    each as a whole name: its ``{fields}`` any text."""
    assert {FIGURE_NAME, UNTITLED} <= set(figure_words()), "figures.js no longer names figures as this check expects"
    worded = [text for text in figure_words() if re.search(r"[A-Za-z]", re.sub(r"\{\w+\}", "", text))]
    return [re.compile(re.sub(r"\\\{\w+\\\}", ".+", re.escape(text)), re.DOTALL) for text in worded]


def english_names(page: object) -> list[str]:
    """The names figures.js gave in ``page`` that are its English words (on an English page, all of its own)."""
    templates = english_templates()
    return [name for name in page.evaluate(NAMES) if any(t.fullmatch(name) for t in templates)]


def figure_name_prefixes() -> list[str]:
    """What a figure's name starts with before its title, in each edition (``Figure: `` and its translation)."""
    return [text.split("{name}")[0] for text in (FIGURE_NAME, catalogue("zh")[FIGURE_NAME])]


def untitled_names() -> list[str]:
    """figures.js's name of a figure with nothing to name it by, in each edition."""
    return [UNTITLED, catalogue("zh")[UNTITLED]]
