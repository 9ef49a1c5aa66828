"""Show the package's own code in the book, so prose and code never drift apart."""

from __future__ import annotations

import inspect

from IPython.display import Code


def show_source(obj: object) -> Code:
    """Syntax-highlighted source of a function, class or method of the package (rendered in Jupyter and the book)."""
    return Code(inspect.getsource(obj), language="python")
