"""Tables of computed values, for the chapters' outputs.

A table a cell computes may be Markdown (``Markdown("| a | b |\n|---|---|...")``: the book parses Markdown outputs
as its Markdown cells, tables included, ``book/_ext/computed_markdown.py``) or, where its cells hold text that Markdown
would read as syntax (``<s>``, pipes) or it must be a named region the Tab key reaches, HTML: the same in the static
book, in Jupyter and in Colab, and styled by the book's theme like the tables of its text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from IPython.display import HTML

from transformer_book.i18n import tr


def html_table(header: Sequence[str], rows: Sequence[Sequence[object]], name: str | None = None) -> HTML:
    """A table of ``rows`` under ``header``, every cell escaped (``<s>`` stays text), numbers right-aligned; on a
    screen narrower than the table it scrolls sideways inside its box, never the page. The box is a named region
    (``name``, by default the table's columns) that the Tab key reaches, so a keyboard can scroll it too."""
    if not header or any(len(row) != len(header) for row in rows):
        raise ValueError(
            f"every row must have the header's {len(header)} cells; got rows of {sorted({len(r) for r in rows})}"
        )

    def cell(tag: str, value: object) -> str:
        align = ' style="text-align: right"' if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        return f"<{tag}{align}>{html.escape(str(value))}</{tag}>"

    head = "".join(cell("th", name) for name in header)
    body = "".join("<tr>" + "".join(cell("td", value) for value in row) + "</tr>" for row in rows)
    table = f'<table class="table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    label = html.escape(name or tr("table of {columns}", columns=tr(", ").join(map(str, header))), quote=True)
    return HTML(f'<div class="book-table" role="region" tabindex="0" aria-label="{label}">{table}</div>')


__all__ = ["html_table"]
