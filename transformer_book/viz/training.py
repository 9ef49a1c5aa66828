"""Figures for the training chapter: a batch and its right shift, label smoothing, learning-rate schedules, training
curves and the length-generalisation experiment. Every control switches between states computed in advance, so the
figures work in the static book without a kernel."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
import torch.nn.functional as F
from plotly.subplots import make_subplots

from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.loop import History
from transformer.train.objective import smoothed_targets
from transformer.train.tasks import Batch, token_label

from ..i18n import tr
from .style import style

# Token kinds, coloured alike in every figure of the chapter.
KIND_COLOURS = {"pad": "#e5e7eb", "bos": "#16a34a", "eos": "#dc2626", "symbol": "#2563eb"}
OTHER_COLOUR = "#93c5fd"  # a token or hypothesis not chosen (the chosen one is KIND_COLOURS["eos"], red)
EDGE_COLOUR = "#cbd5e1"  # the beam figure's edges between hypotheses
KIND_SCALE = [  # discrete colour scale for z = 0 (pad), 1 (bos), 2 (eos), 3 (symbol)
    [0.0, KIND_COLOURS["pad"]],
    [0.25, KIND_COLOURS["pad"]],
    [0.25, KIND_COLOURS["bos"]],
    [0.5, KIND_COLOURS["bos"]],
    [0.5, KIND_COLOURS["eos"]],
    [0.75, KIND_COLOURS["eos"]],
    [0.75, KIND_COLOURS["symbol"]],
    [1.0, KIND_COLOURS["symbol"]],
]
LINE_COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c")


def _kind(token: int) -> int:
    return {PAD_ID: 0, BOS_ID: 1, EOS_ID: 2}.get(int(token), 3)


def _label(token: int) -> str:
    return html.escape(token_label(token), quote=False)


def shift_figure(batch: Batch, examples: int = 4) -> go.Figure:
    """One example of ``batch`` at a time (pick it in the menu): the source, the decoder input (BOS + target) and the
    decoder output (target + EOS) aligned by position, with arrows showing that each output token is the next
    position's input (the right shift)."""
    examples = min(examples, len(batch))
    T = batch.tgt_in.size(1)
    width = max(batch.src.size(1), T)
    rows = [tr("source"), tr("decoder<br>input"), tr("decoder<br>output")]
    fig = go.Figure()
    buttons = []
    for i in range(examples):
        grid = [batch.src[i].tolist(), batch.tgt_in[i].tolist(), batch.tgt_out[i].tolist()]
        grid = [r + [PAD_ID] * (width - len(r)) for r in grid]
        fig.add_trace(
            go.Heatmap(
                z=[[_kind(t) for t in r] for r in grid],
                x=list(range(width)),
                y=rows,
                text=[["" if t == PAD_ID else _label(t) for t in r] for r in grid],  # grey says PAD
                customdata=[[_label(t) for t in r] for r in grid],
                texttemplate="%{text}",
                textfont=dict(size=13, color="white"),
                colorscale=KIND_SCALE,
                zmin=0,
                zmax=3,
                showscale=False,
                xgap=3,
                ygap=3,
                visible=i == 0,
                hovertemplate=tr("%{y}, position %{x}: %{customdata}") + "<extra></extra>",
            )
        )
        length = int((batch.tgt_out[i] != PAD_ID).sum())  # real output tokens, EOS included
        arrows = [
            dict(
                x=t + 1,
                y=rows[1],
                ax=t,
                ay=rows[2],
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                showarrow=True,
                arrowhead=2,
                arrowsize=1.2,
                arrowwidth=1.5,
                arrowcolor="#6b7280",
                standoff=12,
                startstandoff=12,
            )
            for t in range(length - 1)
        ]
        visible = [j == i for j in range(examples)]
        buttons.append(
            dict(
                label=tr("example {n}", n=i + 1), method="update", args=[{"visible": visible}, {"annotations": arrows}]
            )
        )
        if i == 0:
            fig.update_layout(annotations=arrows)
    fig.update_layout(
        updatemenus=[
            dict(buttons=buttons, direction="down", x=1.0, xanchor="right", y=1.32, yanchor="top", name="example")
        ]
    )
    fig.update_xaxes(title_text=tr("position"), dtick=1)
    fig.update_yaxes(title_text="", autorange="reversed")
    title = (
        tr("Teacher forcing: the output is the input shifted by one")
        + "<br><span style='font-size:12px;color:#4b5563'>"
        + tr("grey: PAD · green: BOS · red: EOS · blue: symbols · arrow: output t is input t + 1")
        + "</span>"
    )
    fig = style(fig, title, height=340)
    fig.update_layout(margin=dict(l=80, r=20, t=100, b=50))
    return fig


def label_smoothing_figure(
    vocab_size: int = 13, target: int = 5, smoothings: Sequence[float] = (0.0, 0.1, 0.3)
) -> go.Figure:
    """Left: the target distribution the loss trains towards for each smoothing (menu). Right: the label-smoothed
    cross-entropy as a function of the probability the model puts on the right token (the rest spread evenly):
    without smoothing it keeps falling towards p = 1; with smoothing it has a minimum below 1, where the KL form
    (the cross-entropy minus the target's entropy) is 0."""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.14,
        subplot_titles=(tr("target distribution q"), tr("loss against confidence")),
    )
    labels = [_label(i) for i in range(vocab_size)]
    p_right = np.linspace(0.02, 0.999, 300)
    for i, eps in enumerate(smoothings):
        q = smoothed_targets(torch.tensor(target), vocab_size, eps).numpy()
        fig.add_trace(
            go.Bar(
                x=labels,
                y=q,
                marker_color=[KIND_COLOURS["eos"] if j == target else OTHER_COLOUR for j in range(vocab_size)],
                name=tr("q, smoothing {eps}", eps=eps),
                showlegend=False,
                visible=i == 1 or len(smoothings) == 1,
                hovertemplate=tr("token %{x}: q = %{y:.4f}") + "<extra></extra>",
            ),
            row=1,
            col=1,
        )
    for i, eps in enumerate(smoothings):
        q = smoothed_targets(torch.tensor(target), vocab_size, eps)
        probs = torch.tensor((1 - p_right)[:, None] / (vocab_size - 1)).float().repeat(1, vocab_size)
        probs[:, target] = torch.tensor(p_right).float()
        loss = F.cross_entropy(probs.log(), torch.full((len(p_right),), target), label_smoothing=eps)  # mean only
        per_point = -(q[None, :] * probs.log()).sum(-1).numpy()  # (N,): the same loss, point by point
        assert np.isclose(per_point.mean(), float(loss), rtol=1e-4)
        fig.add_trace(
            go.Scatter(
                x=p_right,
                y=per_point,
                mode="lines",
                name=tr("smoothing {eps}", eps=eps),
                line=dict(color=LINE_COLOURS[i], width=2.5),
                hovertemplate=tr("p(right) %{x:.3f}<br>loss %{y:.3f}")
                + "<extra>"
                + tr("smoothing {eps}", eps=eps)
                + "</extra>",
            ),
            row=1,
            col=2,
        )
        best = int(per_point.argmin())
        if eps > 0:
            fig.add_trace(
                go.Scatter(
                    x=[p_right[best]],
                    y=[per_point[best]],
                    mode="markers",
                    marker=dict(color=LINE_COLOURS[i], size=9),
                    showlegend=False,
                    hovertemplate=tr("minimum at p(right) = %{x:.3f}") + "<extra></extra>",
                ),
                row=1,
                col=2,
            )
    n = len(smoothings)
    lines_visible = [True] * (len(fig.data) - n)
    buttons = [
        dict(
            label=tr("smoothing {eps}", eps=eps),
            method="update",
            args=[{"visible": [j == i for j in range(n)] + lines_visible}],
        )
        for i, eps in enumerate(smoothings)
    ]
    fig.update_layout(
        updatemenus=[
            dict(
                buttons=buttons,
                active=1 if n > 1 else 0,
                direction="down",
                x=0.0,
                xanchor="left",
                y=1.28,
                yanchor="top",
                name="smoothing",
            )
        ]
    )
    fig.update_xaxes(title_text=tr("token"), tickangle=-90, row=1, col=1)
    fig.update_yaxes(title_text=tr("probability (log scale)"), type="log", range=[-3, 0.05], row=1, col=1)
    fig.update_xaxes(title_text=tr("model's probability on the right token"), range=[0, 1], row=1, col=2)
    fig.update_yaxes(title_text=tr("cross-entropy"), range=[0, 4], row=1, col=2)
    fig = style(fig, tr("Label smoothing: the target and its loss"), height=450)
    # The legend under the axis titles (the token names stand on end under the left panel).
    fig.update_layout(
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.42, yanchor="top"), margin=dict(l=60, r=20, t=140, b=120)
    )
    return fig


def schedule_figure(
    curves: Mapping[str, tuple[Sequence[int], Sequence[float]]], title: str | None = None, log_y: bool = False
) -> go.Figure:
    """Learning rate against step for each named schedule: ``curves[name] = (steps, rates)``."""
    fig = go.Figure()
    for i, (name, (steps, rates)) in enumerate(curves.items()):
        fig.add_trace(
            go.Scatter(
                x=list(steps),
                y=list(rates),
                mode="lines",
                name=html.escape(name),
                line=dict(color=LINE_COLOURS[i % len(LINE_COLOURS)], width=2.5),
                hovertemplate=tr("step %{x}<br>lr %{y:.2e}") + "<extra>" + html.escape(name) + "</extra>",
            )
        )
    fig.update_xaxes(title_text=tr("step"))
    fig.update_yaxes(title_text=tr("learning rate"), type="log" if log_y else "linear", exponentformat="e")
    fig = style(fig, title, height=380)
    fig.update_layout(legend=dict(orientation="h", x=0, y=-0.25), margin=dict(l=70, r=20, t=60, b=100))
    return fig


def history_figure(histories: Mapping[str, History], title: str | None = None, floor: float | None = None) -> go.Figure:
    """Training curves of one or more runs against the step: the training loss, accuracy and exact match on fresh
    sequences, and the learning rate. ``floor`` draws the lowest loss possible (dashed): with label smoothing, the
    entropy of the smoothed target, which the smoothed cross-entropy approaches but cannot go below."""
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.07,
        row_heights=[0.38, 0.38, 0.24],
        subplot_titles=(tr("training loss"), tr("accuracy on fresh sequences"), tr("learning rate")),
    )
    for i, (name, h) in enumerate(histories.items()):
        colour, label = LINE_COLOURS[i % len(LINE_COLOURS)], html.escape(name)
        fig.add_trace(
            go.Scatter(
                x=h.step,
                y=np.round(h.loss, 5),
                mode="lines",
                line=dict(color=colour, width=1.5),
                name=label,
                legendgroup=label,
                hovertemplate=tr("step %{x}<br>loss %{y:.4f}") + "<extra>" + label + "</extra>",
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=h.eval_step,
                y=h.eval_exact_match,
                mode="lines+markers",
                line=dict(color=colour, width=2.5),
                name=tr("{name}: exact match", name=label),
                legendgroup=label,
                showlegend=False,
                hovertemplate=tr("step %{x}<br>exact match %{y:.1%}") + "<extra>" + label + "</extra>",
            ),
            row=2,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=h.eval_step,
                y=h.eval_token_accuracy,
                mode="lines+markers",
                line=dict(color=colour, width=1.5, dash="dot"),
                name=tr("{name}: token accuracy", name=label),
                legendgroup=label,
                showlegend=False,
                hovertemplate=tr("step %{x}<br>token accuracy %{y:.2%}") + "<extra>" + label + "</extra>",
            ),
            row=2,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=h.step,
                y=h.lr,
                mode="lines",
                line=dict(color=colour, width=1.5),
                name=tr("{name}: lr", name=label),
                legendgroup=label,
                showlegend=False,
                hovertemplate=tr("step %{x}<br>lr %{y:.2e}") + "<extra>" + label + "</extra>",
            ),
            row=3,
            col=1,
        )
    if floor is not None:
        steps = [s for h in histories.values() for s in h.step]
        fig.add_trace(
            go.Scatter(
                x=[min(steps), max(steps)],
                y=[floor, floor],
                mode="lines",
                line=dict(color="#6b7280", width=1.5, dash="dash"),
                name=tr("lowest possible loss ({floor:.3f})", floor=floor),
                hovertemplate=tr("lowest possible loss {floor:.4f}", floor=floor) + "<extra></extra>",
            ),
            row=1,
            col=1,
        )
    lowest = min((v for h in histories.values() for v in h.eval_exact_match + h.eval_token_accuracy), default=0.0)
    fig.update_yaxes(title_text=tr("loss"), rangemode="tozero", row=1, col=1)
    fig.update_yaxes(
        title_text=tr("share right"), tickformat=".0%", range=[max(0.0, lowest - 0.05), 1.01], row=2, col=1
    )
    fig.update_yaxes(title_text=tr("lr"), exponentformat="e", row=3, col=1)
    fig.update_xaxes(title_text=tr("step"), row=3, col=1)
    fig = style(fig, title, height=640)
    fig.add_annotation(
        text=tr("solid: exact match · dotted: token accuracy"),
        xref="x2 domain",
        yref="y2 domain",
        x=0.98,
        y=0.06,
        xanchor="right",
        showarrow=False,
        font=dict(size=12, color="#4b5563"),
    )
    fig.update_layout(legend=dict(orientation="h", x=0, y=-0.1), margin=dict(l=70, r=20, t=60, b=90))
    return fig


def seeds_figure(runs: Mapping[str, Sequence[History]], title: str | None = None) -> go.Figure:
    """Several configurations, each trained on several seeds: the training loss of every run (one colour per
    configuration, one line per seed) and, beside it, the exact match on fresh sequences at the end of each run (one
    dot per seed, a bar at the mean), so the spread between seeds is seen next to the gap between configurations."""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.52, 0.48],  # room for four two-line labels of five Chinese characters
        horizontal_spacing=0.12,
        subplot_titles=(tr("training loss"), tr("exact match at the end")),
    )
    names = list(runs)
    categories = [re.sub(r", |，", "<br>", html.escape(name)) for name in names]  # a line per part, in either language
    for i, (name, histories) in enumerate(runs.items()):
        colour, label = LINE_COLOURS[i % len(LINE_COLOURS)], html.escape(name)
        for seed, h in enumerate(histories):
            fig.add_trace(
                go.Scatter(
                    x=h.step,
                    y=np.round(h.loss, 5),
                    mode="lines",
                    line=dict(color=colour, width=1.2),
                    opacity=0.8,
                    name=label,
                    legendgroup=label,
                    showlegend=seed == 0,
                    hovertemplate=tr("run {seed}", seed=seed)
                    + "<br>"
                    + tr("step %{x}<br>loss %{y:.4f}")
                    + "<extra>"
                    + label
                    + "</extra>",
                ),
                row=1,
                col=1,
            )
        finals = [h.eval_exact_match[-1] for h in histories]
        fig.add_trace(
            go.Bar(
                x=[categories[i]],
                y=[float(np.mean(finals))],
                marker=dict(color=colour, opacity=0.25),
                width=0.6,
                name=tr("{name}: mean", name=label),
                legendgroup=label,
                showlegend=False,
                hovertemplate=tr("mean %{y:.1%}") + "<extra>" + label + "</extra>",
            ),
            row=1,
            col=2,
        )
        fig.add_trace(
            go.Scatter(
                x=[categories[i]] * len(finals),
                y=finals,
                mode="markers",
                marker=dict(color=colour, size=9),
                name=tr("{name}: runs", name=label),
                legendgroup=label,
                showlegend=False,
                hovertemplate="%{y:.1%}<extra>" + label + "</extra>",
            ),
            row=1,
            col=2,
        )
    fig.update_yaxes(title_text=tr("loss"), rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text=tr("step"), row=1, col=1)
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02], row=1, col=2)
    fig.update_xaxes(tickfont=dict(size=11), row=1, col=2)
    fig = style(fig, title, height=460)
    fig.update_layout(legend=dict(orientation="h", x=0, y=-0.3), margin=dict(l=60, r=20, t=80, b=130))
    return fig


def length_figure(
    results: Mapping[str, Mapping[str, Sequence[float]]], trained_max: int = 10, title: str | None = None
) -> go.Figure:
    """Exact match (and token accuracy, in the menu) against sequence length for each model; the lengths seen in
    training are shaded. ``results[name] = {"length": [...], "exact_match": [...], "token_accuracy": [...]}``."""
    fig = go.Figure()
    metrics = ("exact_match", "token_accuracy")
    shown = {"exact_match": tr("exact match"), "token_accuracy": tr("token accuracy")}  # in the menu and on the axis
    for metric in metrics:
        for i, (name, r) in enumerate(results.items()):
            label = html.escape(name)
            fig.add_trace(
                go.Scatter(
                    x=list(r["length"]),
                    y=list(r[metric]),
                    mode="lines+markers",
                    name=label,
                    line=dict(color=LINE_COLOURS[i % len(LINE_COLOURS)], width=2.5),
                    visible=metric == "exact_match",
                    hovertemplate=tr("length %{x}<br>%{y:.1%}") + "<extra>" + label + "</extra>",
                )
            )
    n = len(results)
    buttons = [
        dict(
            label=shown[metric],
            method="update",
            args=[{"visible": [m == metric for m in metrics for _ in range(n)]}, {"yaxis.title.text": shown[metric]}],
        )
        for metric in metrics
    ]
    lengths = [x for r in results.values() for x in r["length"]]
    fig.add_vrect(
        x0=min(lengths) - 0.5,
        x1=trained_max + 0.5,
        fillcolor="#16a34a",
        opacity=0.08,
        line_width=0,
        annotation_text=tr("lengths seen in training"),
        annotation_position="bottom left",
    )
    fig.update_layout(
        updatemenus=[
            dict(buttons=buttons, direction="down", x=1.0, xanchor="right", y=1.25, yanchor="top", name=tr("show"))
        ]
    )
    fig.update_xaxes(title_text=tr("sequence length"), dtick=1, range=[min(lengths) - 0.5, max(lengths) + 0.5])
    fig.update_yaxes(title_text=shown["exact_match"], tickformat=".0%", range=[0, 1.05])
    fig = style(fig, title, height=420)
    fig.update_layout(legend=dict(orientation="h", x=0, y=-0.22), margin=dict(l=70, r=20, t=100, b=100))
    return fig
