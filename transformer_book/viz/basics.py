"""One quantity along a sequence (steps of an optimiser, layers of a stack), one line per setting: the figures of the
page "Before you start" (01a_foundations; see :mod:`transformer_book.training_basics`) and of chapter 15's runs."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from .style import BLUE, GREEN, GREY, ORANGE, RED, style

__all__ = ["lines_figure"]

PALETTE = (BLUE, ORANGE, GREEN, RED, GREY)
DASHES = ("solid", "dash", "dot", "dashdot")  # plotly's: the members of a group of lines


def lines_figure(
    series: Mapping[str, Sequence[float]],
    x_title: str,
    y_title: str,
    title: str,
    log_y: bool = False,
    x: Sequence[float] | None = None,
    groups: Sequence[int] | None = None,
) -> go.Figure:
    """One line per entry of ``series`` (name -> values at ``x``, by default 0, 1, 2, ...), the legend below the
    plot, clear of the title on a phone; ``log_y`` for quantities that grow or fade geometrically. With ``groups``
    (one int per series), series of one group share a colour and tell themselves apart by their dash (solid, dashed,
    dotted, ...), so that more series than colours stay distinct: the runs of several seeds, the heads of a layer."""
    if not series:
        raise ValueError("series must hold at least one series; got none")
    if groups is not None and len(groups) != len(series):
        raise ValueError(f"groups must give one group per series ({len(series)}); got {len(groups)}")
    groups = list(range(len(series))) if groups is None else list(groups)
    members = [groups[:i].count(group) for i, group in enumerate(groups)]  # each series' place in its group
    lengths = {name: len(values) for name, values in series.items()}
    if x is not None and set(lengths.values()) != {len(x)}:
        raise ValueError(f"every series must hold len(x) = {len(x)} values; got {lengths}")
    fig = go.Figure()
    for i, (name, values) in enumerate(series.items()):
        fig.add_trace(
            go.Scatter(
                x=list(range(len(values))) if x is None else list(x),
                y=[float(v) for v in values],
                name=name,
                mode="lines",
                line=dict(color=PALETTE[groups[i] % len(PALETTE)], width=2.5, dash=DASHES[members[i] % len(DASHES)]),
                hovertemplate="%{x}: %{y:.3g}<extra>" + html.escape(name) + "</extra>",
            )
        )
    style(fig, title, height=420)
    fig.update_layout(
        margin=dict(l=70, r=15, t=60, b=120), legend=dict(orientation="h", x=0, xanchor="left", y=-0.26, yanchor="top")
    )
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear", exponentformat="power")
    return fig
