"""The book's one figure style: fonts, title, margins, colour scales, palette (every figure builder uses it).

Where controls go is decided here too, by convention: the builders put plotly menus above the plot (never on it), and
in the static book ``book/_ext/figures.js`` turns them into HTML controls above the figure, stacks side-by-side panels
in a narrow column and wraps long titles, so one figure reads from a 360 px phone to a wide desktop.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

MAX_WIDTH = 680  # the book's text column is about 700 px wide: wider figures are clipped
FONT = dict(family="Inter, Helvetica, Arial, sans-serif", size=13)
TITLE_FONT = dict(size=16)
WEIGHTS_SCALE = "Blues"  # weights live in [0, 1]: sequential, zmin=0, zmax=1
SIGNED_SCALE = "RdBu_r"  # scores and activations are signed: diverging, centred at 0
MASK_SCALE = [[0.0, "#e5e7eb"], [0.5, "#e5e7eb"], [0.5, "#2563eb"], [1.0, "#2563eb"]]  # hidden grey, visible blue
BLUE, ORANGE, GREEN, RED, GREY = "#4c78a8", "#f58518", "#54a24b", "#d62728", "#9d9d9d"

# Registered under a name (no default is changed): figures ask for it with template=TEMPLATE.
pio.templates["book"] = go.layout.Template(layout=dict(
    font=FONT, title=dict(x=0.02, xanchor="left", font=TITLE_FONT), hoverlabel=dict(font_size=12),
    legend=dict(font=dict(size=12)),
))
TEMPLATE = "plotly_white+book"


def style(fig: go.Figure, title: str | None = None, height: int = 420, width: int | None = None) -> go.Figure:
    """The book's look: its template, and either a fixed ``width`` (small figures) or, by default, the width of the
    text column it is drawn in (``autosize``), so that nothing is clipped."""
    fig.update_layout(
        template=TEMPLATE, height=height, margin=dict(l=70, r=30, t=80, b=60),
        width=None if width is None else min(width, MAX_WIDTH), autosize=width is None,
    )
    if title is not None:
        fig.update_layout(title=dict(text=title, x=0.02, xanchor="left"))
    return fig


__all__ = ["BLUE", "FONT", "GREEN", "GREY", "MASK_SCALE", "MAX_WIDTH", "ORANGE", "RED", "SIGNED_SCALE", "TEMPLATE",
           "TITLE_FONT", "WEIGHTS_SCALE", "style"]
