"""The book's one figure style: fonts, title, margins, colour scales, palette (every figure builder uses it).

Where controls go is decided here too, by convention: the builders put plotly menus above the plot (never on it), and
in the static book ``book/_ext/figures.js`` turns them into HTML controls above the figure, stacks side-by-side panels
in a narrow column and wraps long titles, so one figure reads from a 360 px phone to a wide desktop.
"""

from __future__ import annotations

import html
import re
import textwrap

import plotly.graph_objects as go
import plotly.io as pio

from ..i18n import text_columns

FIGURE_NOTE = "figure-note"  # names an annotation about the whole figure (the same name as in book/_ext/figures.js)
MAX_WIDTH = 680  # the book's text column is about 700 px wide: wider figures are clipped
PHONE_PLOT = 200  # px: about the width of a plot on a phone (a 358 px column less the margins and a colour bar)
# Latin text in the first fonts; Chinese (the Chinese edition's labels) in the first CJK font a system has: macOS,
# Windows, then Linux's and Android's Noto/Source Han, WenQuanYi. No font is downloaded.
CJK_FONTS = (
    '"PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "Noto Sans CJK SC", "Source Han Sans SC", '
    '"WenQuanYi Micro Hei"'
)
FONT = dict(family=f"Inter, Helvetica, Arial, {CJK_FONTS}, sans-serif", size=13)
TITLE_FONT = dict(size=16)
WEIGHTS_SCALE = "Blues"  # weights live in [0, 1]: sequential, zmin=0, zmax=1
SIGNED_SCALE = "RdBu_r"  # scores and activations are signed: diverging, centred at 0
MASK_SCALE = [[0.0, "#e5e7eb"], [0.5, "#e5e7eb"], [0.5, "#2563eb"], [1.0, "#2563eb"]]  # hidden grey, visible blue
BLUE, ORANGE, GREEN, RED, GREY = "#4c78a8", "#f58518", "#54a24b", "#d62728", "#9d9d9d"

# Registered under a name (no default is changed): figures ask for it with template=TEMPLATE. Tick labels keep a few
# pixels from the plot (a heatmap's row labels would touch its cells); a colour bar's title goes beside the bar, where
# it cannot touch the label of the bar's top value.
TICK_STANDOFF = 4
_COLORBAR = dict(title=dict(side="right"))
pio.templates["book"] = go.layout.Template(
    layout=dict(
        font=FONT,
        title=dict(x=0.02, xanchor="left", font=TITLE_FONT),
        hoverlabel=dict(font_size=12),
        legend=dict(font=dict(size=12)),
        xaxis=dict(ticklabelstandoff=TICK_STANDOFF),
        yaxis=dict(ticklabelstandoff=TICK_STANDOFF),
        coloraxis=dict(colorbar=_COLORBAR),
    ),
    data=dict(heatmap=[go.Heatmap(colorbar=_COLORBAR)]),
)
TEMPLATE = "plotly_white+book"


def figure_note(text: str, y: float = -0.3) -> dict:
    """An annotation about the whole figure (a key to its colours), centred under its panels at ``y`` (paper units).
    Named :data:`FIGURE_NOTE`, so that the static book, stacking side-by-side panels on a phone, keeps it under the
    last panel instead of under the middle one."""
    return dict(
        name=FIGURE_NOTE,
        text=text,
        x=0.5,
        y=y,
        xref="paper",
        yref="paper",
        xanchor="center",
        yanchor="top",
        showarrow=False,
        font=dict(size=12, color="#4b5563"),
    )


def style(fig: go.Figure, title: str | None = None, height: int = 420, width: int | None = None) -> go.Figure:
    """The book's look: its template, and either a fixed ``width`` (small figures) or, by default, the width of the
    text column it is drawn in (``autosize``), so that nothing is clipped."""
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        margin=dict(l=70, r=30, t=80, b=60),
        width=None if width is None else min(width, MAX_WIDTH),
        autosize=width is None,
    )
    if title is not None:
        fig.update_layout(title=dict(text=title, x=0.02, xanchor="left"))
    label_every_category(fig)
    return fig


# A Chinese character is about as wide as its font size; a Latin letter, on average, 0.62 of it.
_WIDE = re.compile("[\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
LETTER_WIDTH = 0.62  # of the font size


def text_width(text: str, font_size: float) -> float:
    """About how many px ``text`` takes at ``font_size``: each Chinese character (or full-width mark) the font size,
    any other character :data:`LETTER_WIDTH` of it."""
    text = html.unescape(str(text)).replace("\u200b", "")
    wide = len(_WIDE.findall(text))
    return font_size * (wide + LETTER_WIDTH * (len(text) - wide))


_CLOSING = frozenset("，。、；：！？）》」』”’")  # never at the start of a line


def wrap_text(text: str, columns: int) -> list[str]:
    """``text`` in lines at most ``columns`` columns wide (:func:`text_columns`), for labels plotly does not wrap.
    Latin text wraps as ``textwrap.wrap`` wraps it; in text with Chinese a line may break between any two Chinese
    characters but never before closing punctuation, and runs of ASCII (words, shapes, code) stay whole.
    ``wrapText`` in book/_ext/figures.js wraps titles in the browser by a rule of the same kind."""
    if not _WIDE.search(text):
        return textwrap.wrap(text, columns)
    lines, line, used = [], "", 0
    for token in re.findall(r"[!-~]+|.", text):
        size = text_columns(token)
        if line and used + size > columns and token not in _CLOSING:
            lines.append(line.rstrip())
            line, used = "", 0
        if line or not token.isspace():
            line, used = line + token, used + size
    return [*lines, line.rstrip()] if line.strip() else lines


def row_label_spacing(labels: list[str], font_size: int = 11, width: int = MAX_WIDTH - 100) -> float:
    """``horizontal_spacing`` for panels side by side that each show their own row labels (``labels``): room for the
    longest at ``font_size`` px, as a fraction of a plot ``width`` px wide. Every panel keeps its labels, because on a
    phone the static book stacks the panels, and a panel without them would show rows no one can name."""
    longest = max((text_width(label, font_size) for label in labels), default=LETTER_WIDTH * font_size)
    return min(0.2, (longest + TICK_STANDOFF + 10) / width)


def label_every_category(fig: go.Figure) -> go.Figure:
    """Every row and column of a heatmap of categories (tokens) labelled: plotly's automatic ticks thin a category axis
    to every 2nd or 3rd label on a narrow screen, and the reader could not tell which column is which token. One tick
    per category (``dtick=1``). Column labels that would not fit side by side in a phone's plot (``PHONE_PLOT`` px, a
    space between neighbours) stand on end, at 10 px; the others are turned by plotly only where they do not fit (on end, not at
    30 degrees, where long labels of a dense axis still touch)."""
    for trace in fig.data:
        if trace.type != "heatmap":
            continue
        for letter, values in (("x", trace.x), ("y", trace.y)):
            if values is None or not len(values) or not isinstance(values[0], str):
                continue
            axis = fig.layout[(getattr(trace, f"{letter}axis") or letter).replace(letter, f"{letter}axis", 1)]
            axis.update(dtick=1, tick0=0, autotickangles=[0, -90])
            size = axis.tickfont.size or FONT["size"]
            widest = max(text_width(value, size) for value in values)
            if letter == "x" and axis.tickangle is None and widest + 4 > PHONE_PLOT / len(values):
                axis.update(tickangle=-90, tickfont_size=min(size, 10))  # on end, 10 px: a column of a phone's plot
    return fig


__all__ = [
    "BLUE",
    "FIGURE_NOTE",
    "FONT",
    "GREEN",
    "GREY",
    "MASK_SCALE",
    "MAX_WIDTH",
    "ORANGE",
    "RED",
    "SIGNED_SCALE",
    "TEMPLATE",
    "TICK_STANDOFF",
    "TITLE_FONT",
    "WEIGHTS_SCALE",
    "figure_note",
    "label_every_category",
    "row_label_spacing",
    "style",
    "text_columns",
    "text_width",
    "wrap_text",
]
