"""The diagram of chapter 6 ("The full model"): one encoder layer and one decoder layer of the paper's Figure 1, drawn
from the package's own arrangement of sub-layers. A menu highlights one sub-layer (what it attends to, its mask, its
shapes and its parameter count for the configuration given) or redraws both layers in the pre-norm arrangement.

Every state is computed in advance and switched by plotly's ``relayout``, so the diagram works in the static book
without a kernel; the figure's height follows each state, at one scale, so that no box changes size.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from transformer.config import TransformerConfig

from ..i18n import tr, translatable
from ..parameters import sublayer_parameters
from .controls import dropdown
from .overview import COLOURS, arrow
from .style import style, wrap_text

__all__ = ["layer_diagram"]


@dataclass(frozen=True)
class _Box:
    x: float
    y0: float
    y1: float
    label: str  # English, drawn through tr
    role: str  # "self", "masked", "cross", "ffn", "norm", "io"


_EXPLAIN = {  # templates, filled (and translated) by tr
    "overview": translatable(
        "Post-norm, as in the paper: each sub-layer's output is added to its input, then layer-normalised."
    ),
    "self": translatable(
        "Encoder self-attention: queries, keys and values all come from the source positions. "
        "Mask: source padding (B, 1, 1, S). Weights: (B, H, S, S). {attention} parameters per layer."
    ),
    "masked": translatable(
        "Decoder masked self-attention: Q, K, V from the target positions. Mask: padding and causal, "
        "(B, 1, T, T), so position t sees 0..t. Its own weights, not the cross-attention's. {attention} parameters."
    ),
    "cross": translatable(
        "Cross-attention: queries from the decoder, keys and values from the encoder's memory. "
        "Mask: source padding (B, 1, 1, S). Weights: (B, H, T, S). {attention} parameters."
    ),
    "ffn": translatable(
        "Feed-forward: the same d_model -> d_ff -> d_model network at every position, alone (two 1x1 convolutions). "
        "{ffn} parameters per layer, two thirds of an encoder layer."
    ),
    "norm": translatable(
        "Add & norm: x = LayerNorm(x + Dropout(Sublayer(x))). The sum keeps the input; the norm rescales each "
        "position to mean 0, variance 1, then applies its gain and bias ({norm} parameters)."
    ),
    "pre": translatable(
        "Pre-norm: x = x + Dropout(Sublayer(LayerNorm(x))). The residual path from the embeddings to the top is "
        "never normalised (an identity path); one final LayerNorm closes each stack."
    ),
}


def _column(x: float, sublayers: Sequence[tuple[str, str]], norm_first: bool) -> tuple[list[_Box], list[tuple]]:
    """The boxes of one layer, bottom to top, and its residual paths ``(x_from, y_from, y_to)``; in pre-norm the
    last box is the stack's final LayerNorm (outside the repeated layer)."""
    boxes, residuals, y = [], [], 1.0
    for label, role in sublayers:
        start = y - 0.25
        if norm_first:
            boxes += [
                _Box(x, y, y + 0.4, translatable("LayerNorm"), "norm"),
                _Box(x, y + 0.6, y + 1.4, label, role),
                _Box(x, y + 1.6, y + 2.0, "+", "norm"),
            ]
            residuals.append((x, start, y + 1.8))
            y += 2.5
        else:
            boxes += [
                _Box(x, y, y + 0.8, label, role),
                _Box(x, y + 1.05, y + 1.5, translatable("Add & LayerNorm"), "norm"),
            ]
            residuals.append((x, start, y + 1.275))
            y += 2.0
    if norm_first:
        boxes.append(
            _Box(x, y + 0.5, y + 0.9, translatable("final LayerNorm"), "norm")
        )  # outside the (× N) frame: once per stack
    return boxes, residuals


_UNIT_PX = 48  # px per unit of the diagram's y-axis: a LayerNorm box (0.4) holds its 13 px label
_DIAGRAM_BOTTOM = -0.45  # y: just under the token labels (at -0.1)
_EXPLANATION_GAP = 4  # px between the drawing and its explanation
_EXPLANATION_LINE = 17  # px per line of the explanation (12.5 px text)


def _top(layout: tuple) -> float:
    """Where the taller of the two layers of ``layout`` ends (its last box)."""
    return max(boxes[-1].y1 for boxes, _ in layout)


def layer_diagram(config: TransformerConfig) -> go.Figure:
    """One encoder layer and one decoder layer; a dropdown highlights a sub-layer (with what it attends to, its mask
    and its parameters for ``config``) or redraws both layers in the pre-norm arrangement."""
    numbers = {name: f"{count:,}" for name, count in sublayer_parameters(config.d_model, config.d_ff).items()}
    encoder = [(translatable("Multi-head self-attention"), "self"), (translatable("Feed-forward"), "ffn")]
    decoder = [
        (translatable("Masked multi-head self-attention"), "masked"),
        (translatable("Multi-head cross-attention"), "cross"),
        (translatable("Feed-forward"), "ffn"),
    ]
    layouts = {
        norm_first: (_column(2.3, encoder, norm_first), _column(7.3, decoder, norm_first))
        for norm_first in (False, True)
    }
    states = [(tr("overview (post-norm, the paper)"), False, None, "overview")]
    states += [
        (label, False, role, role)
        for label, role in (
            (tr("encoder self-attention"), "self"),
            (tr("decoder masked self-attention"), "masked"),
            (tr("cross-attention"), "cross"),
            (tr("feed-forward"), "ffn"),
            (tr("add & norm"), "norm"),
        )
    ]
    states.append((tr("pre-norm instead"), True, None, "pre"))
    explanations = [[html.escape(line) for line in wrap_text(tr(_EXPLAIN[key], **numbers), 72)] for *_, key in states]
    drawings = [
        _drawing(layouts[norm_first], role, lines)
        for (_, norm_first, role, _), lines in zip(states, explanations, strict=True)
    ]
    # One scale (px per unit) in every state, so that switching states never resizes a box: each state's y-range
    # ends where its own drawing does, and the figure's height follows (the post-norm drawing is shorter).
    ranges = [[_DIAGRAM_BOTTOM, _top(layouts[norm_first]) + 1.2] for _, norm_first, _, _ in states]
    margin = dict(l=10, r=10, t=90, b=_EXPLANATION_GAP + _EXPLANATION_LINE * max(map(len, explanations)) + 10)
    heights = [round(margin["t"] + margin["b"] + (top - bottom) * _UNIT_PX) for bottom, top in ranges]
    fig = go.Figure()
    fig.update_layout(shapes=drawings[0][0], annotations=drawings[0][1])
    buttons = [
        dict(
            label=label,
            method="relayout",
            args=[{"shapes": shapes, "annotations": notes, "yaxis.range": y_range, "height": height}],
        )
        for (label, *_), (shapes, notes), y_range, height in zip(states, drawings, ranges, heights, strict=True)
    ]
    style(fig, tr("One encoder layer and one decoder layer"), height=heights[0])
    fig.update_layout(
        margin=margin,
        dragmode=False,
        xaxis=dict(visible=False, range=[-0.2, 9.8], fixedrange=True),
        yaxis=dict(visible=False, range=ranges[0], fixedrange=True),
        updatemenus=[dropdown(buttons, y=1.0, name=tr("show"))],
    )
    return fig


_FRAME_FILL = "#fafafa"  # a layer's frame, on the figure's white


def _drawing(layout: tuple, highlight: str | None, explanation: list[str]) -> tuple[list[dict], list[dict]]:
    """Shapes and annotations for one state of :func:`layer_diagram`; ``explanation``: its lines, under the drawing."""
    (enc_boxes, enc_res), (dec_boxes, dec_res) = layout
    width = 3.2
    shapes, notes = [], []
    colour = {
        "self": COLOURS["attention"],
        "masked": COLOURS["attention"],
        "cross": COLOURS["attention"],
        "ffn": COLOURS["ffn"],
        "norm": COLOURS["norm"],
    }

    for title, x, boxes, residuals, tokens in (
        (tr("Encoder layer"), 2.3, enc_boxes, enc_res, tr("source x (B, S, d_model)")),
        (tr("Decoder layer"), 7.3, dec_boxes, dec_res, tr("target y (B, T, d_model)")),
    ):
        top = boxes[-1].y1
        layer_top = max(b.y1 for b in boxes if not b.label.startswith("final"))
        shapes.append(
            dict(
                type="rect",
                x0=x - 2.1,
                x1=x + 2.0,
                y0=0.35,
                y1=layer_top + 0.75,
                line=dict(color="#999", dash="dot"),
                fillcolor=_FRAME_FILL,
                layer="below",
            )
        )
        notes.append(dict(x=x, y=-0.1, text=tokens, showarrow=False, font=dict(size=12, color="#444")))
        notes.append(arrow(x, 0.05, x, boxes[0].y0))
        for below, above in zip(boxes, boxes[1:], strict=False):
            notes.append(arrow(x, below.y1, x, above.y0))
        notes.append(arrow(x, top, x, top + 0.9))
        notes.append(  # after the arrows, on the frame's colour: the layer's output runs behind it, not through it
            dict(
                x=x - 2.0,
                y=layer_top + 0.45,
                text=f"<b>{title}</b> (× N)",
                showarrow=False,
                xanchor="left",
                font=dict(size=14),
                bgcolor=_FRAME_FILL,
            )
        )
        for x0, y_from, y_to in residuals:
            side = x0 - width / 2 - 0.35
            shapes.append(
                dict(
                    type="path",
                    path=f"M {x0},{y_from} L {side},{y_from} L {side},{y_to}",
                    line=dict(color="#888", width=1.4),
                )
            )
            notes.append(arrow(side, y_to, x0 - width / 2, y_to, "#888"))
        for box in boxes:
            on = highlight is None or box.role == highlight
            shapes.append(
                dict(
                    type="rect",
                    x0=box.x - width / 2,
                    x1=box.x + width / 2,
                    y0=box.y0,
                    y1=box.y1,
                    layer="below",
                    fillcolor=colour.get(box.role, "#fff"),
                    opacity=1.0 if on else 0.3,
                    line=dict(
                        color="#222" if highlight is not None and on else "#666", width=2.5 if highlight and on else 1
                    ),
                )
            )
            notes.append(
                dict(
                    x=box.x,
                    y=(box.y0 + box.y1) / 2,
                    text=box.label if box.label == "+" else tr(box.label),
                    showarrow=False,
                    font=dict(size=13 if box.label != "+" else 16, color="#222" if on else "#999"),
                )
            )
    # Memory: the encoder's output feeds every decoder layer's cross-attention.
    cross = next((b for b in dec_boxes if b.role == "cross"), None)
    enc_top = enc_boxes[-1].y1 + 0.9
    notes.append(
        dict(
            x=2.3,
            y=enc_top,
            yanchor="bottom",
            yshift=3,
            text=tr("memory (B, S, d_model)"),
            showarrow=False,
            font=dict(size=12),
        )
    )  # above its line, never crossed by it
    if cross is not None:
        y = (cross.y0 + cross.y1) / 2
        bend = 5.0
        on = highlight in (None, "cross")
        memory_colour = "#c2410c" if highlight == "cross" else "#555"
        shapes.append(
            dict(
                type="path",
                path=f"M 3.9,{enc_top} L {bend},{enc_top} L {bend},{y}",
                line=dict(color=memory_colour, width=2.5 if highlight == "cross" else 1.4),
                opacity=1 if on else 0.5,
            )
        )
        notes.append(arrow(bend, y, 7.3 - width / 2, y, memory_colour))
    dec_top = dec_boxes[-1].y1 + 0.9
    notes.append(
        dict(x=7.3, y=dec_top + 0.25, text="→ lm_head → logits (B, T, V)", showarrow=False, font=dict(size=12))
    )
    notes.append(  # under the plot area, in the bottom margin: a figure as tall as its explanation's lines
        dict(
            x=0.0,
            y=_DIAGRAM_BOTTOM,
            yshift=-_EXPLANATION_GAP,
            xanchor="left",
            yanchor="top",
            align="left",
            showarrow=False,
            text="<br>".join(explanation),  # 72 columns fit a phone once the diagram is scaled to it
            font=dict(size=12.5, color="#333"),
            xref="x",
            yref="y",
        )
    )
    return shapes, notes
