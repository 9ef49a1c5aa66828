"""Figures of attention masks: padding, causal and their combination with sliders for the lengths, and what each way
of masking does to one row of scores and to its softmax.

The masks are the package's own (:mod:`transformer.masks`, ``True`` = may attend), and the correct masking is the
package's :func:`~transformer.scaled_dot_product_attention`. Every control switches between states computed in
advance, so the figures work in the static book without a kernel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch import Tensor

from transformer.attention import scaled_dot_product_attention
from transformer.masks import causal_mask, padding_mask, target_mask
from transformer.tokens import FIRST_SYMBOL, PAD_ID, SPECIAL_TOKENS
from transformer_book.i18n import tr, translatable

from .attention import to_numpy, token_labels
from .controls import dropdown
from .style import figure_note, row_label_spacing, style

# Why a cell is hidden, as a number for one discrete colour scale.
FUTURE, PADDING, BOTH, VISIBLE = 0, 1, 2, 3
REASONS = {
    FUTURE: translatable("hidden: future"),
    PADDING: translatable("hidden: padding key"),
    BOTH: translatable("hidden: both"),
    VISIBLE: translatable("may attend"),
}
REASON_COLOURS = {FUTURE: "#d1d5db", PADDING: "#fdba74", BOTH: "#a8a29e", VISIBLE: "#2563eb"}
PANELS = ("padding", "causal", "combined")
HIDDEN_COLOUR, VISIBLE_COLOUR = "#9ca3af", "#2563eb"


def mask_reasons(ids: Sequence[int] | Tensor, pad_id: int = PAD_ID) -> dict[str, np.ndarray]:
    """For one sentence of token ids (padding anywhere, even first), the padding mask (broadcast over the queries), the
    causal mask and the combined ``target_mask``, each ``(T, T)`` with every cell coded by why it is hidden
    (``FUTURE``, ``PADDING``, ``BOTH``) or ``VISIBLE``. Built with the package's masks."""
    tokens = torch.as_tensor(ids).cpu().reshape(1, -1)  # (1, T), on the CPU whatever device ids are on
    T = tokens.size(1)
    if T == 0:
        raise ValueError("ids must hold at least one token; got none")
    pad_visible = padding_mask(tokens, pad_id)[0, 0].expand(T, T)  # (T, T): the key is not padding
    causal_visible = causal_mask(T)[0, 0]  # (T, T)
    combined = target_mask(tokens, pad_id)[0, 0]  # (T, T)
    assert torch.equal(combined, pad_visible & causal_visible)
    code = torch.full((T, T), VISIBLE)
    code[~pad_visible & causal_visible] = PADDING
    code[pad_visible & ~causal_visible] = FUTURE
    code[~pad_visible & ~causal_visible] = BOTH
    return {
        "padding": np.where(pad_visible.numpy(), VISIBLE, PADDING),
        "causal": np.where(causal_visible.numpy(), VISIBLE, FUTURE),
        "combined": code.numpy(),
    }


def masks_figure(tokens: Sequence[str], pad_token: str = SPECIAL_TOKENS[PAD_ID]) -> go.Figure:
    """The padding mask, the causal mask and their combination for one sentence of ``tokens`` (``pad_token`` marks
    padding, anywhere), side by side, every cell coloured by why it is hidden; a query row with no visible key at
    all is labelled "empty"."""
    tokens = [str(t) for t in tokens]
    if not tokens:
        raise ValueError("tokens must hold at least one token; got none")
    codes = mask_reasons([PAD_ID if t == pad_token else FIRST_SYMBOL for t in tokens])
    labels = token_labels(tokens)
    fig = _mask_panels(labels)
    for col, name in enumerate(PANELS, start=1):
        fig.add_trace(
            go.Heatmap(
                z=codes[name],
                x=labels,
                y=labels,
                coloraxis="coloraxis",
                xgap=1,
                ygap=1,
                customdata=np.vectorize(lambda code: tr(REASONS[code]))(codes[name]),
                hovertemplate=tr("query %{y}<br>key %{x}<br>%{customdata}<extra></extra>"),
            ),
            row=1,
            col=col,
        )
    empty = [i for i, row in enumerate(codes["combined"]) if (row != VISIBLE).all()]
    for i in empty:  # rows with no visible key: the fully-masked-row case
        fig.add_annotation(
            text=tr("empty"),
            x=1.0,
            y=labels[i],
            xref="x3 domain",
            yref="y3",
            xanchor="left",
            showarrow=False,
            font=dict(size=11, color="#b91c1c"),
        )
    fig.update_xaxes(title_text=tr("key"), tickfont=dict(size=11))
    # every panel its row labels, whatever plotly's version hides on shared axes (5.x does: Colab's)
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=11), showticklabels=True)
    fig.update_yaxes(title_text=tr("query"), row=1, col=1)
    height = int(min(640, 300 + 20 * len(tokens)))
    style(fig, tr("Why each score is hidden: the padding mask, the causal mask, both"), height=height + 40)
    plot_height = height - 70 - 150
    fig.update_layout(margin=dict(t=110, b=150, l=70, r=50), coloraxis_colorbar=dict(y=-95 / plot_height))
    return fig


def mask_explorer(max_real: int = 8, max_pad: int = 4, real: int = 5, pad: int = 2) -> go.Figure:
    """The padding mask, the causal mask and their combination side by side, with one slider for the number of real
    tokens and one for the number of padding tokens. Cells outside the padded length stay empty.

    The two sliders combine without a kernel because each changes a different attribute: the first shows the traces
    of one sentence length (``visible``), the second rewrites every trace's data (``z``) for a padding length.
    """
    N = max_real + max_pad
    fig = _mask_panels([str(N - 1)])

    def grids(n_real: int, n_pad: int) -> list[list[list[int]]]:
        """The three ``(T, T)`` panels as small-integer lists; the axes keep the full ``N x N`` canvas."""
        codes = mask_reasons([FIRST_SYMBOL] * n_real + [PAD_ID] * n_pad)
        return [codes[name].astype(int).tolist() for name in PANELS]

    for n_real in range(1, max_real + 1):
        for col, z in enumerate(grids(n_real, pad), start=1):
            fig.add_trace(
                go.Heatmap(
                    z=z,
                    coloraxis="coloraxis",
                    xgap=1,
                    ygap=1,
                    visible=n_real == real,
                    hovertemplate=tr("query position %{y}<br>key position %{x}<extra></extra>"),
                ),
                row=1,
                col=col,
            )
    n_traces = 3 * max_real
    real_steps = [
        dict(label=str(n), method="restyle", args=[{"visible": [i // 3 == n - 1 for i in range(n_traces)]}])
        for n in range(1, max_real + 1)
    ]
    pad_steps = [
        dict(
            label=str(p),
            method="restyle",
            args=[{"z": [z for n in range(1, max_real + 1) for z in grids(n, p)]}, list(range(n_traces))],
        )
        for p in range(max_pad + 1)
    ]
    # The colour key right under the axis titles, the sliders under it (the static book shows them above the figure).
    plot_height = 470 - 70 - 200
    fig.update_layout(
        coloraxis_colorbar=dict(y=-58 / plot_height),
        sliders=[
            dict(
                active=real - 1,
                steps=real_steps,
                currentvalue=dict(prefix=tr("real tokens: ")),
                x=0.0,
                len=0.48,
                pad=dict(t=110),
            ),
            dict(
                active=pad,
                steps=pad_steps,
                currentvalue=dict(prefix=tr("padding tokens: ")),
                x=0.52,
                len=0.48,
                pad=dict(t=110),
            ),
        ],
    )
    ticks = dict(tickvals=list(range(N)), range=[-0.5, N - 0.5], tickfont=dict(size=10), tickangle=0)
    fig.update_xaxes(title_text=tr("key position"), constrain="domain", **ticks)
    fig.update_yaxes(autorange=False, showticklabels=True, **{**ticks, "range": [N - 0.5, -0.5]})
    fig.update_yaxes(title_text=tr("query position"), row=1, col=1)
    style(fig, tr("The padding mask, the causal mask and both, for any lengths"), height=510)
    fig.update_layout(margin=dict(t=110, b=200, l=60, r=20))
    return fig


def _mask_panels(row_labels: list[str]) -> go.Figure:
    """Three subplots (padding, causal, combined) sharing one colour axis: a band of colour per reason, explained by a
    horizontal colour bar below them; each panel shows its ``row_labels`` (the queries)."""
    fig = make_subplots(
        rows=1,
        cols=3,
        horizontal_spacing=row_label_spacing(row_labels),
        shared_yaxes=True,
        subplot_titles=[
            tr("padding mask<br>(B, 1, 1, S) broadcast"),
            tr("causal mask<br>(1, 1, T, T)"),
            tr("padding & causal<br>target_mask (B, 1, T, T)"),
        ],
    )
    scale = [[(code + side) / 4, REASON_COLOURS[code]] for code in sorted(REASONS) for side in (0, 1)]  # one band each
    fig.update_layout(
        coloraxis=dict(
            colorscale=scale,
            cmin=-0.5,
            cmax=3.5,
            colorbar=dict(
                tickvals=list(REASONS),
                ticktext=[tr(reason) for reason in REASONS.values()],
                orientation="h",
                thickness=14,
                len=0.9,
                x=0.5,
                xanchor="center",
                y=-0.45,
                yanchor="top",
                tickfont=dict(size=12),
            ),
        )
    )
    return fig


@dataclass
class MaskedRow:
    """One way of masking a row of scores: the scores after masking and the softmax weights that follow."""

    label: str
    description: str
    visible: np.ndarray  # (T,) bool
    masked: np.ndarray  # (T,) the scores after masking (may hold -inf or the dtype's min)
    weights: np.ndarray  # (T,) softmax of the masked scores (may hold NaN)


def masking_methods(scores: Tensor, visible: Tensor) -> list[MaskedRow]:
    """Every way of masking one row of ``scores (T,)`` with ``visible (T,)`` bool that the chapter compares, computed
    with torch in float32. The correct ones use the package's :func:`~transformer.scaled_dot_product_attention`
    (with ``q = 1``, ``k = scores`` and ``d_k = 1`` its scores are exactly ``scores``)."""
    scores = scores.float()
    none = torch.zeros_like(visible, dtype=torch.bool)

    def package(mask: Tensor) -> tuple[Tensor, Tensor]:
        _, weights = scaled_dot_product_attention(
            torch.ones(1, 1), scores[:, None], torch.eye(len(scores)), mask[None, :]
        )  # weights (1, T)
        return scores.masked_fill(~mask, torch.finfo(scores.dtype).min), weights[0]

    def fill(mask: Tensor, value: float) -> tuple[Tensor, Tensor]:
        masked = scores.masked_fill(~mask, value)
        return masked, torch.softmax(masked, dim=-1)

    rows = [
        (
            tr("masked_fill(dtype min): correct"),
            tr("Hidden scores become the most negative float32 (−3.4e38): exp() turns them into exactly 0."),
            visible,
            *package(visible),
        ),
        (
            tr("scores × mask: wrong"),
            tr("Multiplying sets hidden scores to 0, and exp(0) = 1: the padding keys still get weight."),
            visible,
            scores * visible,
            torch.softmax(scores * visible, dim=-1),
        ),
        (
            tr("additive −inf mask: correct here"),
            tr("scores + (0 or −inf), PyTorch's float mask: fine as long as the row keeps one visible key."),
            visible,
            *fill(visible, float("-inf")),
        ),
        (
            tr("no visible key, −inf fill: NaN"),
            tr("Every key hidden with −inf: softmax computes 0 / 0 and the whole row is NaN, which then spreads."),
            none,
            *fill(none, float("-inf")),
        ),
        (
            tr("no visible key, −1e9 fill: uniform"),
            tr(
                "A finite fill on a row with every key hidden: all scores equal, so softmax silently averages the padding."
            ),
            none,
            *fill(none, -1e9),
        ),
        (
            tr("no visible key, this package: zeros"),
            tr("The package fills with the dtype's min, then zeroes rows with no visible key: weights 0, output 0."),
            none,
            *package(none),
        ),
    ]
    return [
        MaskedRow(label, text, to_numpy(mask).astype(bool), to_numpy(masked), to_numpy(weights))
        for label, text, mask, masked, weights in rows
    ]


def masking_methods_figure(scores: Tensor, visible: Tensor, tokens: Sequence[object], active: int = 0) -> go.Figure:
    """Scores, masked scores and softmax weights of one query row, with a dropdown for the masking method.

    Hidden keys are grey and hatched. A masked score far below the axis (``-inf``, the dtype's min, ``-1e9``) is drawn
    down to the axis' floor and labelled with its value; a NaN weight is labelled ``NaN``.
    """
    methods = masking_methods(scores, visible)
    labels = token_labels(tokens)
    raw = to_numpy(scores)
    bound = float(np.ceil(np.abs(raw).max() + 0.5))
    fig = make_subplots(
        rows=1,
        cols=3,
        horizontal_spacing=0.11,
        subplot_titles=[tr("1. scores of one query"), tr("2. after masking"), tr("3. softmax weights")],
    )

    def bars(method: MaskedRow) -> list[dict]:
        off_axis = ~(np.abs(method.masked) <= bound)  # -inf, the dtype's min, -1e9: drawn down to the floor
        masked_y = np.where(off_axis, -bound, method.masked)
        weights_y = np.nan_to_num(method.weights, nan=0.0)
        return [
            dict(y=raw, text=[_score_text(s) for s in raw], position=["outside"] * len(raw)),
            dict(
                y=masked_y,
                text=[_score_text(s) for s in method.masked],
                position=np.where(off_axis, "inside", "outside").tolist(),
            ),
            dict(y=weights_y, text=[_weight_text(w) for w in method.weights], position=["outside"] * len(raw)),
        ]

    def colours(method: MaskedRow) -> dict:
        return {
            "marker.color": np.where(method.visible, VISIBLE_COLOUR, HIDDEN_COLOUR).tolist(),
            "marker.pattern.shape": np.where(method.visible, "", "/").tolist(),
        }

    first = methods[active]
    for col, panel in enumerate(bars(first), start=1):
        fig.add_bar(
            x=labels,
            y=np.round(panel["y"], 4),
            text=panel["text"],
            textposition=panel["position"],
            insidetextanchor="middle",
            textangle=0,
            constraintext="none",
            cliponaxis=False,
            showlegend=False,
            row=1,
            col=col,
            marker=dict(
                color=colours(first)["marker.color"],
                pattern=dict(shape=colours(first)["marker.pattern.shape"], fgcolor="#4b5563", bgcolor=HIDDEN_COLOUR),
            ),
            hovertemplate=tr("key %{x}: %{text}<extra></extra>"),
            textfont=dict(size=11),
        )
    buttons = []
    for method in methods:
        panels = bars(method)
        look = colours(method)
        buttons.append(
            dict(
                label=method.label,
                method="update",
                args=[
                    {
                        "y": [np.round(p["y"], 4) for p in panels],
                        "text": [p["text"] for p in panels],
                        "textposition": [p["position"] for p in panels],
                        "marker.color": [look["marker.color"]] * 3,
                        "marker.pattern.shape": [look["marker.pattern.shape"]] * 3,
                    },
                    {"title.text": method.description},
                ],
            )
        )
    fig.update_layout(updatemenus=[dropdown(buttons, y=1.45, active=active, name=tr("masking"))])
    fig.update_yaxes(title_text=tr("score"), range=[-bound, bound], row=1, col=1)
    fig.update_yaxes(title_text=tr("masked score"), range=[-bound, bound], row=1, col=2)
    fig.update_yaxes(title_text=tr("weight"), range=[0, 1.1], row=1, col=3)
    fig.update_xaxes(title_text=tr("key"), tickangle=-45)
    fig.add_annotation(figure_note(tr("blue: visible key · grey, hatched: hidden key"), y=-0.36))
    style(fig, methods[active].description, height=480)
    fig.update_layout(margin=dict(t=150, b=110, l=60, r=20), title=dict(y=0.82, yanchor="bottom", font=dict(size=13)))
    return fig


def _score_text(s: float) -> str:
    if math.isinf(s):
        return "−inf"
    if s <= torch.finfo(torch.float32).min:
        return "min"
    if s <= -1e8:
        return f"−1e{round(math.log10(-s))}"  # short enough to fit in a bar
    return f"{s + 0.0:.2f}"  # + 0.0 turns -0.0 into 0.0


def _weight_text(w: float) -> str:
    return "NaN" if math.isnan(w) else f"{w:.2f}"
