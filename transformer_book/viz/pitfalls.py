"""Figures for the chapter "Pitfalls": what each mistake of :mod:`transformer_book.pitfalls` visibly does.

Every control (dropdowns) switches between states computed in advance, so the figures work in the static book
without a kernel.
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch import Tensor

from transformer.attention import MultiHeadAttention

from ..pitfalls import SplitHeadsWithoutTranspose, sinusoidal_table_with_base
from .attention import WEIGHTS_SCALE, style, to_numpy, token_labels

if TYPE_CHECKING:
    from transformer.training import History

CORRECT_COLOUR, FAULTY_COLOUR = "#2563eb", "#dc2626"


def _picker_layout(fig: go.Figure, names: Sequence[str], notes: Mapping[str, str], visible: list[list[bool]],
                   plot_height: int, bottom: int, gap: int = 0) -> None:
    """A dropdown over ``names`` (state ``i`` shows the traces ``visible[i]``): each state's title (the name and its
    wrapped note) at the top, the dropdown under the longest title, the plot ``gap`` pixels under the dropdown
    (room for subplot titles). The figure grows with the title, so that nothing overlaps and the plot keeps
    ``plot_height`` pixels."""
    titles = [_title(name, notes) for name in names]
    title_px = 12 + 22 + 24 * max(t.count("<br>") for t in titles)  # top padding, bold line, note lines
    menu_top, top = title_px + 8, title_px + 8 + 34 + 8 + gap
    height = top + plot_height + bottom
    buttons = [
        dict(label=html.escape(name), method="update", args=[{"visible": v}, {"title.text": title}])
        for name, v, title in zip(names, visible, titles, strict=True)
    ]
    fig.update_layout(
        height=height, margin=dict(t=top, b=bottom),
        title=dict(text=titles[0], x=0.02, xanchor="left", y=1 - 12 / height, yanchor="top"),
        updatemenus=[dict(
            type="dropdown", buttons=buttons, active=0, showactive=True, direction="down", x=0.0, xanchor="left",
            y=1 + (top - menu_top) / plot_height, yanchor="top", pad=dict(t=0, b=0),
        )],
    )


def _title(name: str, notes: Mapping[str, str], width: int = 100) -> str:
    """The figure title for one dropdown state: ``name`` in bold, its note (if any) under it in small type, wrapped
    at ``width`` characters (plotly does not wrap titles, so a long line would run off the figure)."""
    lines = "<br>".join(html.escape(line) for line in textwrap.wrap(notes.get(name, ""), width))
    return f"<b>{html.escape(name)}</b>" + (f"<br><span style='font-size:12px'>{lines}</span>" if lines else "")


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
    a mistake can pull apart. ``runs`` maps names to :class:`~transformer.training.History`; ``baseline`` names the
    correct run, drawn in every state; ``notes`` adds one line per mistake under the title.
    """
    if baseline not in runs:
        raise KeyError(f"baseline {baseline!r} is not among the runs {list(runs)}")
    faulty = [name for name in runs if name != baseline]
    notes = notes or {}
    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.62, 0.38], horizontal_spacing=0.12,
        subplot_titles=("training loss (moving average)", "after training, on fresh sequences"),
    )
    metrics = ["token accuracy,<br>teacher forcing", "exact match,<br>greedy decoding"]

    def add(name: str, colour: str, visible: bool, showlegend: bool) -> None:
        h = runs[name]
        fig.add_trace(go.Scatter(
            x=h.step, y=np.round(_moving_average(h.loss, window), 4), mode="lines", name=html.escape(name),
            line=dict(color=colour, width=2), visible=visible, legendgroup=name, showlegend=showlegend,
            hovertemplate="step %{x}<br>loss %{y:.3f}<extra>" + html.escape(name) + "</extra>",
        ), row=1, col=1)
        values = [h.eval_token_accuracy[-1], h.eval_exact_match[-1]]
        fig.add_trace(go.Bar(
            x=metrics, y=np.round(values, 3), name=html.escape(name), marker_color=colour, visible=visible,
            legendgroup=name, showlegend=False, text=[f"{v:.0%}" for v in values], textposition="outside",
            hovertemplate="%{x}: %{y:.1%}<extra>" + html.escape(name) + "</extra>",
        ), row=1, col=2)

    add(baseline, CORRECT_COLOUR, True, True)
    for i, name in enumerate(faulty):
        add(name, FAULTY_COLOUR, i == 0, True)
    fig.update_yaxes(
        title_text="cross-entropy (log scale)", type="log", tickvals=[0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3], row=1, col=1
    )
    fig.update_xaxes(title_text="training step", row=1, col=1)
    fig.update_yaxes(title_text="share correct", range=[0, 1.15], tickvals=[0, 0.25, 0.5, 0.75, 1], tickformat=".0%",
                     row=1, col=2)
    fig.update_xaxes(title_text="metric", tickangle=0, tickfont=dict(size=11), row=1, col=2)
    style(fig)
    fig.update_layout(barmode="group", legend=dict(orientation="h", x=0.0, y=-0.28, yanchor="top"))
    visible = [[True, True] + [j == i for j in range(len(faulty)) for _ in range(2)] for i in range(len(faulty))]
    _picker_layout(fig, faulty, notes, visible, plot_height=270, bottom=70, gap=30)
    return fig


def head_split_figure(n_heads: int = 4, length: int = 6) -> go.Figure:
    """Which token each head's row holds after the split, for the package's ``split_heads`` and for the ``view`` without a
    transpose (:class:`~transformer_book.pitfalls.SplitHeadsWithoutTranspose`).

    The input holds, at position ``t`` and feature block ``c``, the number ``t * H + c``; the figure colours every
    (head, row) of the split by the position it came from and writes ``t<position> b<block>`` in the cell. Correct: row
    ``t`` of every head is token ``t`` (block = head). Faulty: rows mix positions and blocks.
    """
    H, T = n_heads, length
    x = torch.arange(T * H, dtype=torch.float32).view(1, T, H)  # (1, T, H): d_model = H, so d_k = 1
    splits = {
        "package: view(B, T, H, d_k).transpose(1, 2)": MultiHeadAttention(H, H).split_heads(x)[0, :, :, 0],  # (H, T)
        "004: view(B * H, T, d_k), no transpose": SplitHeadsWithoutTranspose(H, H).split_heads(x)[0, :, :, 0],  # (H, T)
    }
    fig = make_subplots(rows=2, cols=1, subplot_titles=list(splits), vertical_spacing=0.25)
    for row, values in enumerate(splits.values(), start=1):
        v = values.long().numpy()
        position, block = v // H, v % H
        fig.add_trace(go.Heatmap(
            z=position, x=[f"row {t}" for t in range(T)], y=[f"head {h}" for h in range(H)],
            text=[[f"t{p} b{b}" for p, b in zip(ps, bs, strict=True)] for ps, bs in zip(position, block, strict=True)],
            texttemplate="%{text}", textfont=dict(size=13), colorscale="Viridis", zmin=0, zmax=T - 1, xgap=2, ygap=2,
            showscale=row == 1, colorbar=dict(title="token<br>position", thickness=12, len=0.9),
            hovertemplate="%{y}, %{x}: %{text} (token position t, feature block b)<extra></extra>",
        ), row=row, col=1)
        fig.update_yaxes(title_text="head", autorange="reversed", row=row, col=1)
        fig.update_xaxes(title_text="row inside the head (should be the token position)", row=row, col=1)
    return style(fig, f"Where each head's rows come from ({H} heads, {T} tokens; t = token, b = feature block)", height=560)


def mask_picker(
    maps: Mapping[str, Tensor | np.ndarray], q_tokens: Sequence[object], k_tokens: Sequence[object],
    notes: Mapping[str, str] | None = None, query_label: str = "query", key_label: str = "key",
) -> go.Figure:
    """One ``(T_q, T_k)`` map of attention weights per way of masking, picked with a dropdown.

    ``maps`` maps a name to its weights; ``notes`` adds a line under the title for each name. Weights share the
    sequential scale [0, 1] and are written in the cells.
    """
    notes = notes or {}
    names = list(maps)
    q_labels, k_labels = token_labels(q_tokens), token_labels(k_tokens)
    fig = go.Figure()
    for i, name in enumerate(names):
        w = to_numpy(maps[name])
        if w.shape != (len(q_tokens), len(k_tokens)):
            raise ValueError(f"{name!r}: weights of shape {w.shape} do not match {len(q_tokens)} x {len(k_tokens)} tokens")
        fig.add_trace(go.Heatmap(
            z=np.round(w, 3), x=k_labels, y=q_labels, colorscale=WEIGHTS_SCALE, zmin=0, zmax=1, visible=i == 0,
            texttemplate="%{z:.2f}", textfont=dict(size=12), xgap=1, ygap=1, name=html.escape(name),
            colorbar=dict(title="weight", thickness=12),
            hovertemplate=f"{query_label} %{{y}}<br>{key_label} %{{x}}<br>weight %{{z:.3f}}<extra></extra>",
        ))

    fig.update_xaxes(title_text=key_label)
    fig.update_yaxes(title_text=query_label, autorange="reversed")
    style(fig)
    visible = [[j == i for j in range(len(names))] for i in range(len(names))]
    _picker_layout(fig, names, notes, visible, plot_height=min(430, 110 + 40 * len(q_tokens)), bottom=60)
    return fig


def scale_figure(weights: Mapping[str, Tensor | np.ndarray], entropy: Mapping[str, float] | None = None) -> go.Figure:
    """One query's attention weights over its keys under different scalings, as grouped bars. ``entropy`` (nats,
    averaged over many queries) goes into the legend: too flat is high, too sharp is low."""
    colours = [CORRECT_COLOUR, "#f59e0b", FAULTY_COLOUR, "#7c3aed"]
    fig = go.Figure()
    for i, (name, w) in enumerate(weights.items()):
        w = to_numpy(w)
        label = html.escape(name) + (f" (mean entropy {entropy[name]:.2f} nats)" if entropy and name in entropy else "")
        fig.add_trace(go.Bar(
            x=[f"k{j}" for j in range(len(w))], y=np.round(w, 4), name=label, marker_color=colours[i % len(colours)],
            hovertemplate="key %{x}: weight %{y:.3f}<extra>" + html.escape(name) + "</extra>",
        ))
    fig.update_xaxes(title_text="key")
    fig.update_yaxes(title_text="attention weight", rangemode="tozero")
    style(fig, "One query, the same scores, three scalings", height=440)
    fig.update_layout(barmode="group", legend=dict(orientation="h", x=0.0, y=-0.2, yanchor="top"), margin=dict(b=110))
    return fig


def wavelength_figure(d_model: int = 512, bases: Sequence[float] = (10000.0, 1000.0), max_len: int = 5000) -> go.Figure:
    """The wavelength (in positions) of every (sin, cos) pair of the sinusoid table for each base, on a log scale,
    with the model's ``max_len`` for reference. The wavelengths are measured on the tables themselves: the period
    of pair ``i`` is ``2 pi`` divided by the angle it advances per position."""
    fig = go.Figure()
    colours = [CORRECT_COLOUR, FAULTY_COLOUR, "#7c3aed"]
    for i, base in enumerate(bases):
        table = sinusoidal_table_with_base(2, d_model, base).double()  # positions 0 and 1
        step = torch.atan2(table[1, 0::2], table[1, 1::2])  # angle advanced per position, pair by pair
        wavelength = (2 * math.pi / step).numpy()
        fig.add_trace(go.Scatter(
            x=np.arange(len(wavelength)), y=np.round(wavelength, 2), mode="lines", line=dict(width=3, color=colours[i]),
            name=f"base {base:g}: 2\u03c0 \u2026 {wavelength[-1]:,.0f} positions",
            hovertemplate="pair %{x}: wavelength %{y:,.0f} positions<extra></extra>",
        ))
    fig.add_hline(y=max_len, line=dict(color="#6b7280", dash="dot"))
    fig.add_annotation(  # on a log axis an annotation's y is log10 of the value (a shape's is the value itself)
        text=f"max_len = {max_len:,}", x=0, xref="x domain", xanchor="left", y=math.log10(max_len), yref="y",
        yanchor="bottom", showarrow=False,
    )
    fig.update_xaxes(title_text="(sin, cos) pair i (dimensions 2i, 2i+1)")
    fig.update_yaxes(title_text="wavelength in positions (log scale)", type="log")
    style(fig, f"Wavelengths of the sinusoid table, d_model = {d_model}", height=420)
    fig.update_layout(legend=dict(x=0.98, xanchor="right", y=0.04, yanchor="bottom", bgcolor="rgba(255,255,255,0.8)"))
    return fig
