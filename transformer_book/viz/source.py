"""Show the package's own code in the book, so prose and code never drift apart.

Long code is folded the way Jupyter Book folds cells: the lines that say what the code is (its signature and
docstring, or the method a section is about) stay in view, the whole source is one click away.
"""

from __future__ import annotations

import html
import inspect
import textwrap

from IPython.display import Code

from ..i18n import tr

FOLD_LINES = 30  # longer sources show their head (or their focus) and fold the whole behind a toggle


def _head_length(lines: list[str]) -> int:
    """Lines up to the end of the first docstring (the signature and what the code is for), else the first 12."""
    quotes = 0
    for i, line in enumerate(lines[:25]):
        quotes += line.count('"""')
        if quotes >= 2:
            return i + 1
    return min(12, len(lines))


class Source:
    """The source of one object of the package: all of it when short, folded when long (see :func:`show_source`)."""

    def __init__(self, obj: object, focus: str | None = None, fold: int = FOLD_LINES):
        self.text = inspect.getsource(obj)
        self.name = getattr(obj, "__qualname__", getattr(obj, "__name__", "this code"))
        self.module = getattr(inspect.getmodule(obj), "__name__", "")
        self.focus = textwrap.dedent(inspect.getsource(getattr(obj, focus))) if focus else None
        self.fold = fold

    @property
    def n_lines(self) -> int:
        return len(self.text.splitlines())

    def visible(self) -> str | None:
        """What stays in view when the source is folded; None when it is shown whole."""
        if self.focus is None and self.n_lines <= self.fold:
            return None
        lines = self.text.splitlines()
        head = "\n".join(lines[: _head_length(lines)])
        if self.focus is None:
            return head + "\n    ..."
        return head + "\n\n    ...\n\n" + textwrap.indent(self.focus, "    ").rstrip() + "\n"

    def _repr_html_(self) -> str:
        shown = self.visible()
        if shown is None:
            return Code(self.text, language="python")._repr_html_()
        where = f"{self.module}.{self.name}" if self.module else self.name
        summary = tr("Show all {n} lines of {name}", n=self.n_lines, name=f"<code>{html.escape(where)}</code>")
        return (
            f'<div class="book-source">{Code(shown, language="python")._repr_html_()}'
            f'<details class="book-source-whole"><summary>{summary}</summary>'
            f"{Code(self.text, language='python')._repr_html_()}</details></div>"
        )

    def __repr__(self) -> str:
        return self.text


def show_source(obj: object, focus: str | None = None) -> Source:
    """Syntax-highlighted source of a function, class or method of the package (rendered in Jupyter and the book).

    Sources longer than :data:`FOLD_LINES` lines show their signature and docstring and fold the rest; ``focus``
    names the method of a class that stays in view beside them (``show_source(DecoderLayer, focus="forward")``).
    """
    return Source(obj, focus)
