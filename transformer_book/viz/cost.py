"""Figures of chapter 13 (what the model costs, :mod:`transformer_book.cost`): cost against sequence length or width
on log-log axes, and where a training step's work and time go, by component.

Made for a phone's width too: short titles, legends above the plot, one tick label per power of two with short
numbers (``1k``, ``4k``) on the horizontal axis and one per power of ten on the vertical one, and value labels
beside bars that carry no error bars.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence

import plotly.graph_objects as go

from ..i18n import tr
from .controls import dropdown
from .style import BLUE, GREEN, GREY, ORANGE, RED, style

__all__ = ["breakdown_figure", "loglog_figure", "short_number"]

PALETTE = (BLUE, ORANGE, GREEN, RED, GREY)


def short_number(value: float) -> str:
    """``512`` -> ``"512"``, ``2048`` -> ``"2k"`` (lengths in powers of two, as "a 2k context"), ``3e6`` -> ``"3M"``:
    tick labels that fit a phone's width."""
    if value >= 1024 and value < 1e6 and value % 1024 == 0:
        return f"{int(value) // 1024}k"
    for size, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}"


def _powers(values: Sequence[float], base: int) -> list[float]:
    """The powers of ``base`` that span ``values`` (positive), one tick each."""
    low, high = math.floor(math.log(min(values), base)), math.ceil(math.log(max(values), base))
    return [float(base) ** e for e in range(low, high + 1)]


def loglog_figure(
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    x_title: str,
    y_title: str,
    title: str,
    y_format: Callable[[float], str] = short_number,
    dashed: Sequence[str] = (),
    marker: tuple[float, str] | None = None,
    y_tick_base: int = 10,
) -> go.Figure:
    """One line per entry of ``series`` (name -> values at ``x``) on log-log axes: a cost that grows as ``x^p`` is a
    straight line of slope ``p``. Names in ``dashed`` are drawn dashed and grey-free of markers (reference slopes);
    ``marker = (x, text)`` draws a dotted vertical line there with its text. The vertical axis has a tick at each
    power of ``y_tick_base`` (16 suits bytes: 64 KiB, 1 MiB, 16 MiB), labelled by ``y_format``; the legend sits
    below the plot, clear of the title on a phone. The names are shown through :func:`~transformer_book.i18n.tr`
    (mark them ``translatable`` where they are written); the titles as given."""
    if not series or any(len(values) != len(x) for values in series.values()):
        raise ValueError(
            f"series must hold at least one series of len(x) = {len(x)} values; got "
            f"{ {name: len(values) for name, values in series.items()} }"
        )
    fig = go.Figure()
    solid = [name for name in series if name not in dashed]
    for name, values in series.items():
        is_dashed = name in dashed
        colour = GREY if is_dashed else PALETTE[solid.index(name) % len(PALETTE)]
        fig.add_trace(
            go.Scatter(
                x=list(x),
                y=list(values),
                name=tr(name),
                mode="lines" if is_dashed else "lines+markers",
                line=dict(color=colour, dash="dash" if is_dashed else "solid", width=1.5 if is_dashed else 2.5),
                hovertemplate="%{x}: %{y:.3s}<extra>" + html.escape(tr(name)) + "</extra>",
            )
        )
    if marker is not None:
        fig.add_vline(x=marker[0], line_dash="dot", line_color="#555")
        fig.add_annotation(
            x=math.log10(marker[0]),
            y=1.0,
            yref="paper",
            yanchor="bottom",
            xanchor="right",
            text=marker[1],
            showarrow=False,
            font=dict(size=11),
        )
    style(fig, title, height=460)
    fig.update_layout(
        margin=dict(l=70, r=15, t=60, b=130), legend=dict(orientation="h", x=0, xanchor="left", y=-0.2, yanchor="top")
    )
    fig.update_xaxes(type="log", title_text=x_title, tickvals=list(x), ticktext=[short_number(v) for v in x])
    values = [v for vs in series.values() for v in vs if v > 0]
    ticks = _powers(values, y_tick_base)
    fig.update_yaxes(type="log", title_text=y_title, tickvals=ticks, ticktext=[y_format(t) for t in ticks])
    return fig


def breakdown_figure(shares: Mapping[str, Mapping[str, Mapping[str, float]]], title: str) -> go.Figure:
    """Horizontal bars, one row per component: its share of the FLOPs and of the time of a training step, for each
    model in ``shares`` (``{model: {measure: {component: share}}}``, shares in [0, 1]), one model at a time, picked
    in a menu above the plot when there are several. Each bar's percentage is written beside it. Models, measures and
    components are shown through :func:`~transformer_book.i18n.tr` (mark them ``translatable`` where they are
    written); the title is shown as given."""
    if not shares:
        raise ValueError("shares must hold at least one model; got none")
    models = list(shares)
    measures = list(shares[models[0]])
    fig = go.Figure()
    for m, model in enumerate(models):
        components = list(dict.fromkeys(c for measure in shares[model].values() for c in measure))
        for measure, colour in zip(measures, PALETTE, strict=False):
            values = [100 * shares[model][measure].get(c, 0.0) for c in components]
            fig.add_trace(
                go.Bar(
                    y=[tr(c) for c in components],
                    x=values,
                    name=tr(measure),
                    orientation="h",
                    marker_color=colour,
                    visible=m == 0,
                    text=[f"{v:.0f}%" for v in values],
                    textposition="outside",
                    cliponaxis=False,
                    textfont=dict(size=11),
                    hovertemplate="%{y}: %{x:.1f}%<extra>" + html.escape(tr(measure)) + "</extra>",
                )
            )
    style(fig, title, height=500)
    fig.update_layout(
        barmode="group",
        margin=dict(l=130, r=40, t=95 if len(models) > 1 else 60, b=110),
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.15, yanchor="top", traceorder="normal"),
    )
    if len(models) > 1:
        n = len(measures)
        buttons = [
            dict(label=tr(model), method="restyle", args=[{"visible": [i // n == m for i in range(n * len(models))]}])
            for m, model in enumerate(models)
        ]
        fig.update_layout(updatemenus=[dropdown(buttons, x=0.0, y=1.02, name=tr("model"))])
    fig.update_xaxes(title_text=tr("share of a training step (%)"), range=[0, 100])
    fig.update_yaxes(autorange="reversed")
    return fig
