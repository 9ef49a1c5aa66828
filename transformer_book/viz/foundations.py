"""Figures of chapter 5's foundations (see :mod:`transformer_book.foundations`): one attention map at a time, picked
from several with a dropdown above the plot, so that maps of different shapes or origins (one head against two, no
projection against learned ones) can be compared on a phone's width."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from torch import Tensor

from transformer_book.i18n import tr

from .attention import _above, _check_tokens, _weights_heatmap, style, to_numpy, token_labels
from .controls import dropdown

__all__ = ["weights_dropdown"]


def weights_dropdown(
    maps: Mapping[str, Tensor | np.ndarray],
    q_tokens: Sequence[object],
    k_tokens: Sequence[object],
    title: str | None = None,
    label: str = "map",
) -> go.Figure:
    """One ``(T_q, T_k)`` map of attention weights per entry of ``maps`` (name -> weights), shown one at a time; a
    dropdown above the plot picks which. Every map has the same colour scale, 0 (white) to 1 (dark blue)."""
    if not maps:
        raise ValueError("maps must hold at least one map; got none")
    names = list(maps)
    q_labels, k_labels = token_labels(q_tokens), token_labels(k_tokens)
    fig = go.Figure()
    for i, name in enumerate(names):
        w = to_numpy(maps[name])
        _check_tokens(w.shape, q_tokens, k_tokens, ndim=2)
        trace = _weights_heatmap(w, q_labels, k_labels, name=name, show_values=w.size <= 100)
        trace.visible = i == 0
        fig.add_trace(trace)
    fig.update_xaxes(title_text=tr("key"), tickangle=-45 if len(k_tokens) > 6 else 0)
    fig.update_yaxes(title_text=tr("query"), autorange="reversed")
    style(fig, title, height=int(min(640, 260 + 36 * len(q_tokens))))
    fig.update_layout(margin=dict(t=110))
    if len(names) > 1:
        buttons = [
            dict(label=name, method="restyle", args=[{"visible": [j == i for j in range(len(names))]}])
            for i, name in enumerate(names)
        ]
        fig.update_layout(updatemenus=[dropdown(buttons, x=0.0, y=_above(fig, 12), name=label, pad=dict(t=0, b=0))])
    return fig
