"""The figure of the chapter "Pitfalls": the models with one mistake of :mod:`transformer_book.pitfalls` built in,
trained next to the correct one.

Its dropdown switches between states computed in advance, so the figure works in the static book without a kernel.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..i18n import tr
from .style import style, wrap_text

if TYPE_CHECKING:
    from transformer.train.loop import History

CORRECT_COLOUR, FAULTY_COLOUR = "#2563eb", "#dc2626"


def _picker_layout(
    fig: go.Figure,
    names: Sequence[str],
    notes: Mapping[str, str],
    visible: list[list[bool]],
    plot_height: int,
    bottom: int,
    gap: int = 0,
) -> None:
    """A dropdown over ``names`` (state ``i`` shows the traces ``visible[i]``): each state's title (the name and its
    wrapped note) at the top, the dropdown under the longest title, the plot ``gap`` pixels under the dropdown
    (room for subplot titles). The figure grows with the title, so that nothing overlaps and the plot keeps
    ``plot_height`` pixels."""
    titles = [_title(name, notes) for name in names]
    title_px = 12 + 22 + 24 * max(t.count("<br>") for t in titles)  # top padding, bold line, note lines
    menu_top, top = title_px + 8, title_px + 8 + 34 + 8 + gap
    height = top + plot_height + bottom
    buttons = [
        dict(label=html.escape(tr(name)), method="update", args=[{"visible": v}, {"title.text": title}])
        for name, v, title in zip(names, visible, titles, strict=True)
    ]
    fig.update_layout(
        height=height,
        margin=dict(t=top, b=bottom),
        title=dict(text=titles[0], x=0.02, xanchor="left", y=1 - 12 / height, yanchor="top"),
        updatemenus=[
            dict(
                type="dropdown",
                buttons=buttons,
                active=0,
                showactive=True,
                direction="down",
                x=0.0,
                xanchor="left",
                y=1 + (top - menu_top) / plot_height,
                yanchor="top",
                pad=dict(t=0, b=0),
                name="variant",
            )
        ],
    )


def _title(name: str, notes: Mapping[str, str]) -> str:
    """The figure title for one dropdown state: ``name`` in bold, its note (if any) under it in small type, wrapped
    to the figure's width (plotly does not wrap titles, so a long line would run off the figure)."""
    lines = "<br>".join(html.escape(line) for line in wrap_text(notes.get(name, ""), 100))
    return f"<b>{html.escape(tr(name))}</b>" + (f"<br><span style='font-size:12px'>{lines}</span>" if lines else "")


def _moving_average(values: Sequence[float], window: int) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if len(v) < window:
        return v
    kernel = np.ones(window) / window
    head = np.cumsum(v[: window - 1]) / np.arange(1, window)  # average of what exists so far
    return np.concatenate([head, np.convolve(v, kernel, mode="valid")])


def training_picker(
    runs: Mapping[str, History], baseline: str, notes: Mapping[str, str] | None = None, window: int = 10
) -> go.Figure:
    """Training of each faulty model against the correct one, one mistake at a time (dropdown).

    Left: the training loss the loop prints (moving average over ``window`` steps, log scale). Right: the last
    evaluation on fresh sequences, teacher-forced token accuracy next to greedy-decoding exact match, the two numbers
    a mistake can pull apart. ``runs`` maps names to :class:`~transformer.train.loop.History`; ``baseline`` names the
    correct run, drawn in every state; ``notes`` adds one line per mistake under the title.
    """
    if baseline not in runs:
        raise KeyError(f"baseline {baseline!r} is not among the runs {list(runs)}")
    faulty = [name for name in runs if name != baseline]
    notes = notes or {}
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        horizontal_spacing=0.14,  # room for the right panel's axis title beside the left panel
        subplot_titles=(tr("training loss (moving average)"), tr("after training, on fresh sequences")),
    )
    metrics = [tr("token accuracy,<br>teacher forcing"), tr("exact match,<br>greedy decoding")]

    def add(name: str, colour: str, visible: bool, showlegend: bool) -> None:
        h = runs[name]
        label = html.escape(tr(name))
        fig.add_trace(
            go.Scatter(
                x=h.step,
                y=np.round(_moving_average(h.loss, window), 4),
                mode="lines",
                name=label,
                line=dict(color=colour, width=2),
                visible=visible,
                legendgroup=name,
                showlegend=showlegend,
                hovertemplate=tr("step %{x}<br>loss %{y:.3f}") + "<extra>" + label + "</extra>",
            ),
            row=1,
            col=1,
        )
        values = [h.eval_token_accuracy[-1], h.eval_exact_match[-1]]
        fig.add_trace(
            go.Bar(
                x=metrics,
                y=np.round(values, 3),
                name=label,
                marker_color=colour,
                visible=visible,
                legendgroup=name,
                showlegend=False,
                text=[f"{v:.0%}" for v in values],
                textposition="outside",
                hovertemplate="%{x}: %{y:.1%}<extra>" + label + "</extra>",
            ),
            row=1,
            col=2,
        )

    add(baseline, CORRECT_COLOUR, True, True)
    for i, name in enumerate(faulty):
        add(name, FAULTY_COLOUR, i == 0, True)
    fig.update_yaxes(
        title_text=tr("cross-entropy (log scale)"),
        type="log",
        tickvals=[0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3],
        row=1,
        col=1,
    )
    fig.update_xaxes(title_text=tr("training step"), row=1, col=1)
    fig.update_yaxes(
        title_text=tr("share correct"),
        range=[0, 1.15],
        tickvals=[0, 0.25, 0.5, 0.75, 1],
        tickformat=".0%",
        row=1,
        col=2,
    )
    fig.update_xaxes(title_text=tr("metric"), tickangle=0, tickfont=dict(size=11), row=1, col=2)
    style(fig)
    fig.update_layout(barmode="group", legend=dict(orientation="h", x=0.0, y=-0.28, yanchor="top"))
    visible = [[True, True] + [j == i for j in range(len(faulty)) for _ in range(2)] for i in range(len(faulty))]
    _picker_layout(fig, faulty, notes, visible, plot_height=270, bottom=70, gap=30)
    return fig
