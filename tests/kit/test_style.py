"""The figure style's text measures: how wide a label is drawn, and wrapping it to a width plotly does not wrap to."""

import re
import textwrap

from transformer_book.viz.style import LETTER_WIDTH, text_columns, text_width, wrap_text

ENGLISH = "Feed-forward: the same d_model -> d_ff -> d_model network at every position, alone (two 1x1 convolutions)."
CLOSING = "，。、；：！？）》」』”’"
CHINESE = "前馈网络：每个位置上同一个 d_model -> d_ff -> d_model 网络，各自独立（两个 1x1 卷积）。每层参数占编码器层的三分之二。"


def test_latin_text_wraps_as_textwrap_does():
    for columns in (20, 40, 72):
        assert wrap_text(ENGLISH, columns) == textwrap.wrap(ENGLISH, columns)


def test_chinese_lines_fit_the_columns_given():
    for columns in (20, 40, 72):
        lines = wrap_text(CHINESE, columns)
        assert len(lines) > 1
        # a closing mark may overhang: it never starts a line
        assert all(text_columns(line.rstrip(CLOSING)) <= columns for line in lines), lines
        assert "".join(lines).replace(" ", "") == CHINESE.replace(" ", "")  # nothing lost, only breaks added


def test_chinese_wrapping_keeps_ascii_runs_whole_and_never_starts_a_line_with_closing_punctuation():
    for columns in range(8, 80):
        for line in wrap_text(CHINESE, columns):
            assert line[0] not in CLOSING, (columns, line)
            assert line.strip() == line
        lines = wrap_text(CHINESE, columns)
        for run in re.findall(r"[!-~]+", CHINESE):  # d_model, ->, d_ff, 1x1
            assert any(run in line for line in lines), (columns, run, lines)


def test_a_chinese_character_takes_two_columns_and_is_drawn_as_wide_as_its_font_size():
    assert text_columns("注意力 (attention)，") == 2 * 3 + 12 + 2
    assert text_width("注意力", 12) == 36
    assert text_width("abc", 10) == 3 * LETTER_WIDTH * 10
