"""The figure of the training chapter's regularisation experiment: each combination of dropout and label smoothing,
each seed, scored on its training set and on held-out sequences, so the gap between the two is seen per run."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..i18n import tr, translatable
from ..regularisation import RegularisedRun
from .style import BLUE, GREY, ORANGE, figure_note, style

PANELS = (  # (title, score of an EvalResult, y-axis title, y-axis format); titles shown through tr
    (translatable("cross-entropy, no smoothing"), "loss", translatable("nats per token"), ".2f"),
    (translatable("exact match"), "exact_match", translatable("sequences entirely right"), ".0%"),
)


def regularisation_figure(runs: Mapping[str, Sequence[RegularisedRun]], title: str | None = None) -> go.Figure:
    """For every combination (``runs[name]``, one run per seed) and each score (plain cross-entropy, exact match):
    the training set's score (hollow) and the held-out score (filled) of every seed side by side, joined by a line,
    whose length is that run's train/held-out gap. A combination's name is shown through ``tr`` (those of
    :data:`~transformer_book.regularisation.REGULARISERS` are translated)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14, subplot_titles=[tr(p[0]) for p in PANELS])
    names = list(runs)
    for col, (_, score, axis_title, fmt) in enumerate(PANELS, start=1):
        for i, name in enumerate(names):
            label = html.escape(tr(name))
            for seed, run in enumerate(runs[name]):
                x = i + 0.2 * (seed - (len(runs[name]) - 1) / 2)  # the seeds side by side within the combination
                values = [getattr(run.train, score), getattr(run.held_out, score)]
                fig.add_trace(
                    go.Scatter(
                        x=[x, x],
                        y=values,
                        mode="lines",
                        line=dict(color=GREY, width=1.5),
                        showlegend=False,
                        hoverinfo="skip",
                    ),
                    row=1,
                    col=col,
                )
                for where, value, colour, symbol in (
                    (tr("training set"), values[0], BLUE, "circle-open"),
                    (tr("held-out"), values[1], ORANGE, "circle"),
                ):
                    fig.add_trace(
                        go.Scatter(
                            x=[x],
                            y=[value],
                            mode="markers",
                            marker=dict(color=colour, symbol=symbol, size=9, line=dict(width=2, color=colour)),
                            name=where,
                            legendgroup=where,
                            showlegend=col == 1 and i == 0 and seed == 0,
                            hovertemplate=tr(
                                "{name}, seed {seed}<br>{where}: {value}",
                                name=label,
                                seed=run.seed,
                                where=where,
                                value=f"%{{y:{fmt}}}",
                            )
                            + "<extra></extra>",
                        ),
                        row=1,
                        col=col,
                    )
        fig.update_yaxes(title_text=tr(axis_title), tickformat=fmt, rangemode="tozero", row=1, col=col)
        fig.update_xaxes(
            title_text=tr("regularisation"),
            tickvals=list(range(len(names))),
            ticktext=[html.escape(tr(n)).replace(" 0.1", "<br>0.1").replace("label ", "label<br>") for n in names],
            tickfont=dict(size=11),
            row=1,
            col=col,
        )
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    fig = style(fig, title, height=470)
    fig.update_layout(
        legend=dict(orientation="h", x=0, y=-0.32),
        annotations=[
            *fig.layout.annotations,
            figure_note(tr("one pair of dots per seed; the line is its train/held-out gap"), -0.44),
        ],
        margin=dict(l=60, r=20, t=80, b=150),
    )
    return fig


__all__ = ["regularisation_figure"]
