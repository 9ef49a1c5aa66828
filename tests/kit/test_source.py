"""The book shows the package's code: short code whole, long code folded with its head (or focus) in view."""

from __future__ import annotations

from transformer.attention import MultiHeadAttention
from transformer.layers import DecoderLayer
from transformer.masks import causal_mask
from transformer_book.viz.source import FOLD_LINES, show_source


def test_short_code_is_shown_whole() -> None:
    source = show_source(causal_mask)
    assert source.n_lines <= FOLD_LINES
    assert source.visible() is None
    assert "<details" not in source._repr_html_()
    assert "def causal_mask" in repr(source)


def test_long_code_shows_its_signature_and_docstring_and_folds_the_rest() -> None:
    source = show_source(MultiHeadAttention)
    assert source.n_lines > FOLD_LINES
    shown = source.visible()
    assert shown.startswith("class MultiHeadAttention") and '"""' in shown
    assert len(shown.splitlines()) < source.n_lines
    page = source._repr_html_()
    assert f"Show all {source.n_lines} lines of" in page and "transformer.attention.MultiHeadAttention" in page
    assert "forward" in page[page.index("<details") :]  # the whole class, behind the toggle


def test_focus_keeps_the_named_method_in_view() -> None:
    shown = show_source(DecoderLayer, focus="forward").visible()
    assert shown.startswith("class DecoderLayer")
    assert "    def forward(" in shown
    assert "def __init__" not in shown
