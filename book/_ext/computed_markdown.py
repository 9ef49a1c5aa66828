"""Sphinx extension: what a cell computes as Markdown reads on the page as the book's own Markdown does.

A chapter shows a computed table or a generated paragraph as Markdown (``IPython.display.Markdown``, and
``transformer_book.i18n.say``). myst-nb renders such an output with the parser ``nb_render_markdown_format`` names,
``commonmark`` unless a configuration says otherwise, and a cell's ``{"mystnb": {"markdown_format": ...}}`` metadata
overrides it for that cell. CommonMark has neither tables nor ``$...$`` math: an output without that metadata showed its
table as a paragraph of pipes and dashes (``| layout | exact match … | | — | — | — |``) and its formulas as TeX, in
both editions, whichever way its outputs were made (executed by the build, or recorded by ``make nbval-reader`` and
``make nbval-colab`` and put into jupyter-cache: the metadata that picks the parser is the notebook's, not its
outputs'). So both ``_config.yml`` set ``nb_render_markdown_format: myst``: every Markdown output is parsed like the
book's Markdown cells (tables, dollar math), as JupyterLab and Colab render it, and no cell needs metadata for it.

This extension guards that: once a page is resolved, a paragraph that holds a Markdown table's delimiter row
(``| --- | --- |``, its dashes perhaps made em dashes by Sphinx's smart quotes) is a table left as text, and the build
warns, naming the page and the cell (``jupyter-book build -W`` fails). ``tests/site/test_book_browser.py`` checks the
built pages of both editions with :func:`tables_left_as_text` too.

A generated paragraph's cell (``say(...)``: ``scripts/say_cells.py``) starts with a Colab form title, ``#@title ...``,
which makes Colab show the paragraph with its code folded. That line is Colab's, not the chapter's code: where a page
shows such a cell's code (``hide-input``, behind a toggle), it is dropped, so the page shows the code as before.
"""

from __future__ import annotations

import html
import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# A delimiter row of a Markdown table, as text: two or more cells of dashes (hyphens, or the en and em dashes smart
# quotes make of them), each perhaps with an alignment colon, between pipes; or one cell of three hyphens or more.
_DASHES = r"\s*:?[-\u2013\u2014]+:?\s*"
TABLE_DELIMITER_ROW = re.compile(rf"\|(?:{_DASHES}\|){{2,}}|\|\s*:?-{{3,}}:?\s*\|")


def table_rows_as_text(text: str) -> list[str]:
    """The delimiter rows of Markdown tables in ``text``, a page's running text (code excluded): each is a table that
    was not rendered as one."""
    return [match.group(0) for match in TABLE_DELIMITER_ROW.finditer(text)]


# What a page shows as code or draws by script, not as running text: a table's syntax may stand there as written.
_NOT_RUNNING_TEXT = re.compile(r"<(script|style|pre|code|textarea|svg)\b.*?</\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


def tables_left_as_text(page: str) -> list[str]:
    """The delimiter rows of Markdown tables in the running text of ``page``, a built HTML page."""
    return table_rows_as_text(html.unescape(_TAG.sub(" ", _NOT_RUNNING_TEXT.sub(" ", page))))


FORM_TITLE = re.compile(r"#\s*@title\b.*")  # Colab's form title, a cell's first line


def _drop_form_titles(app: Sphinx, doctree: nodes.document) -> None:
    """A cell's code as the page shows it, without a first line that is a Colab form title."""
    for block in list(doctree.findall(nodes.literal_block)):
        if block.parent is None or "cell_input" not in block.parent.get("classes", []):
            continue
        first, newline, rest = block.astext().partition("\n")
        if newline and FORM_TITLE.fullmatch(first.strip()):
            block.rawsource = rest
            block.children = []
            block += nodes.Text(rest)


def _check_tables(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for paragraph in doctree.findall(nodes.paragraph):
        rows = table_rows_as_text(paragraph.astext())
        if rows:
            logger.warning(
                f"a Markdown table is shown as text ({rows[0]!r}): its output was not parsed with table syntax; "
                "nb_render_markdown_format must be myst (or gfm) in _config.yml, and the cell's "
                '{"mystnb": {"markdown_format": ...}} metadata, if any, must not be commonmark',
                location=paragraph,
                type="computed_markdown",
                subtype="table_as_text",
            )


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", _drop_form_titles)
    app.connect("doctree-resolved", _check_tables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
