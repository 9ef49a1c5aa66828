"""Figures for the token-embedding chapter: the lookup, the sqrt(d_model) scaling, similarity between embeddings and
what sharing the embedding matrices saves.

Each builder takes the package's own objects (an embedding weight, token ids, models) and returns a plotly
``go.Figure`` whose controls (sliders, dropdowns) switch between states computed in advance, so the figures work in
the static book without a kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch import Tensor, nn

from transformer.embeddings import TokenEmbedding, sinusoidal_table
from transformer.utils import seeded
from transformer_book.i18n import tr

from .attention import to_numpy, token_labels
from .controls import dropdown
from .style import FONT, SIGNED_SCALE, TEMPLATE, label_every_category

HIGHLIGHT = "#ff7f0e"
SQUARE = 600  # the largest width of a square figure; the others fill the page's column (plotly autosize)
LABEL_ROOM = 80  # px under a plot for tick labels standing on end and the axis title


def lookup_figure(weight: Tensor, ids: Sequence[int], vocab: Sequence[str]) -> go.Figure:
    """Left: the ``(V, d_model)`` embedding table; right: the ``(T, d_model)`` rows a sentence of ids looks up. A
    slider walks through the sentence, framing token ``t``'s row in the table and row ``t`` of the result: the lookup
    is plain row indexing (``TokenEmbedding`` then multiplies the rows by ``sqrt(d_model)``)."""
    table = to_numpy(weight)  # (V, d_model)
    ids = [int(i) for i in ids]
    if not ids or min(ids) < 0 or max(ids) >= len(table):
        raise ValueError(f"ids must be non-empty and in [0, {len(table)}); got {ids}")
    if len(vocab) != len(table):
        raise ValueError(f"vocab has {len(vocab)} entries but the table has {len(table)} rows")
    looked_up = table[ids]  # (T, d_model)
    limit = float(np.abs(table).max())
    vocab_labels = [f"{i} {label}" for i, label in enumerate(token_labels(vocab))]
    sentence_labels = [f"{t}: {label}" for t, label in enumerate(token_labels([vocab[i] for i in ids]))]
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.2,
        subplot_titles=[
            tr("embedding table ({rows} × {width})", rows=len(table), width=table.shape[1]),
            tr("looked up ({rows} × {width})", rows=len(ids), width=table.shape[1]),
        ],
    )
    common = dict(colorscale=SIGNED_SCALE, zmin=-limit, zmax=limit, zmid=0)
    fig.add_trace(
        go.Heatmap(
            z=table,
            y=vocab_labels,
            colorbar=dict(title=dict(text=tr("weight")), thickness=12),
            **common,
            hovertemplate=tr("token %{y}<br>dimension %{x}<br>weight %{z:.3f}<extra></extra>"),
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Heatmap(
            z=looked_up,
            y=sentence_labels,
            showscale=False,
            **common,
            hovertemplate=tr("position %{y}<br>dimension %{x}<br>weight %{z:.3f}<extra></extra>"),
        ),
        row=1,
        col=2,
    )
    width = table.shape[1]

    def frames_for(t: int) -> list[dict]:
        box = dict(type="rect", line=dict(color=HIGHLIGHT, width=3), fillcolor="rgba(0,0,0,0)", x0=-0.5, x1=width - 0.5)
        return [
            dict(box, xref="x", yref="y", y0=ids[t] - 0.5, y1=ids[t] + 0.5),
            dict(box, xref="x2", yref="y2", y0=t - 0.5, y1=t + 0.5),
        ]

    steps = [
        dict(
            label=html_label,
            method="relayout",
            args=[{"shapes": frames_for(t), "title.text": _lookup_title(t, vocab[ids[t]], ids[t])}],
        )
        for t, html_label in enumerate(token_labels([vocab[i] for i in ids]))
    ]
    fig.update_layout(
        shapes=frames_for(0),
        title=dict(text=_lookup_title(0, vocab[ids[0]], ids[0]), x=0.0),
        template=TEMPLATE,
        height=max(420, 170 + 16 * len(table)),
        font=FONT,
        margin=dict(l=90, r=20, t=90, b=100),
        sliders=[dict(active=0, currentvalue=dict(prefix=tr("token ")), pad=dict(t=50), steps=steps)],
    )
    fig.update_xaxes(title_text=tr("dimension"))
    fig.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=11))
    return fig


def embedding_scale_figure(
    d_models: Sequence[int] = (16, 64, 256, 512, 1024), vocab_size: int = 1000, n_positions: int = 1000, seed: int = 0
) -> go.Figure:
    """Why ``TokenEmbedding`` multiplies by ``sqrt(d_model)``. Left (a dropdown picks ``d_model``): the distribution
    of the raw weights (N(0, 1/d_model) at initialisation), of the scaled embeddings and of the positional encoding
    they are added to. Right: mean squared value per dimension against ``d_model``; raw weights shrink as
    ``1/d_model`` while the positional encoding stays at 1/2, the scaled embeddings at 1."""
    stats = {d: _scale_samples(d, vocab_size, n_positions, seed) for d in d_models}
    names = {"raw": tr("raw weights"), "scaled": tr("weights × √d_model"), "position": tr("positional encoding")}
    colours = {"raw": "#9467bd", "scaled": "#1f77b4", "position": "#d62728"}
    edges = np.linspace(-4, 4, 81)
    centres = (edges[:-1] + edges[1:]) / 2
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.55, 0.45],
        horizontal_spacing=0.14,
        subplot_titles=[tr("values (one d_model)"), tr("mean square per dimension")],
    )
    for n, d_model in enumerate(d_models):
        for key, values in stats[d_model].items():
            counts, _ = np.histogram(values, bins=edges)
            fig.add_trace(
                go.Scatter(
                    x=centres,
                    y=np.maximum(counts / len(values), 1e-6).astype(np.float32),
                    mode="lines",
                    line=dict(color=colours[key], width=2, shape="hvh"),
                    name=names[key],
                    visible=n == 0,
                    legendgroup=key,
                    hovertemplate=tr("value %{x:.1f}<br>fraction %{y:.4f}<extra>") + names[key] + "</extra>",
                ),
                row=1,
                col=1,
            )
    for key in names:
        fig.add_trace(
            go.Scatter(
                x=list(d_models),
                y=[float(np.mean(stats[d][key] ** 2)) for d in d_models],
                mode="lines+markers",
                line=dict(color=colours[key], width=2),
                name=names[key],
                legendgroup=key,
                showlegend=False,
                hovertemplate=tr("d_model %{x}<br>mean square %{y:.4f}<extra>") + names[key] + "</extra>",
            ),
            row=1,
            col=2,
        )
    per_d = len(names)
    always = [True] * len(names)
    buttons = [
        dict(
            label=f"d_model = {d_model}",
            method="update",
            args=[{"visible": [k // per_d == n for k in range(per_d * len(d_models))] + always}],
        )
        for n, d_model in enumerate(d_models)
    ]
    fig.update_layout(
        template=TEMPLATE,
        height=440,
        font=FONT,
        title=dict(text=tr("Scaled embeddings and positions live on the same scale"), x=0.0),
        margin=dict(l=70, r=20, t=110, b=110),
        legend=dict(orientation="h", x=0.0, y=-0.2, yanchor="top"),
        updatemenus=[dropdown(buttons, x=1.0, y=1.17, xanchor="right", name=tr("model width"))],
    )
    fig.update_xaxes(title_text=tr("value"), range=[-3.5, 3.5], row=1, col=1)
    fig.update_yaxes(
        title_text=tr("fraction of values (log)"),
        type="log",
        range=[-4, 0],
        dtick=1,
        exponentformat="power",
        row=1,
        col=1,
    )
    fig.update_xaxes(title_text=tr("d_model (log)"), type="log", tickvals=list(d_models), row=1, col=2)
    fig.update_yaxes(title_text=tr("mean square (log)"), type="log", dtick=1, exponentformat="power", row=1, col=2)
    return fig


def similarity_figure(embeddings: Mapping[str, Tensor], labels: Sequence[str]) -> go.Figure:
    """Cosine similarity between the rows of one or more ``(N, d)`` embedding matrices (e.g. at initialisation and
    after training), labelled by ``labels`` and picked with a dropdown. The diverging scale is centred at 0."""
    names = list(embeddings)
    ticks = token_labels(labels)
    fig = go.Figure()
    size = min(SQUARE, 260 + 22 * len(ticks))
    for n, name in enumerate(names):
        vectors = embeddings[name].detach().cpu().double()  # (N, d), on the CPU (MPS has no float64)
        if vectors.size(0) != len(ticks):
            raise ValueError(f"{name!r} has {vectors.size(0)} rows but there are {len(ticks)} labels")
        unit = vectors / vectors.norm(dim=-1, keepdim=True)
        fig.add_trace(
            go.Heatmap(
                z=to_numpy(unit @ unit.T),
                x=ticks,
                y=ticks,
                colorscale=SIGNED_SCALE,
                zmin=-1,
                zmax=1,
                zmid=0,
                visible=n == 0,
                name=name,
                # under the plot, as wide as it: beside it, it would leave a phone's column too little room for a
                # label per token
                colorbar=dict(
                    title=dict(text=tr("cosine"), side="bottom"),
                    orientation="h",
                    thickness=10,
                    len=1,
                    x=0.5,
                    xanchor="center",
                    y=-LABEL_ROOM / (size - 110 - 160),
                    yanchor="top",
                ),
                hovertemplate=tr("%{y} · %{x}<br>cosine %{z:.2f}<extra></extra>"),
            )
        )
    buttons = [
        dict(label=name, method="update", args=[{"visible": [m == n for m in range(len(names))]}])
        for n, name in enumerate(names)
    ]
    fig.update_layout(
        template=TEMPLATE,
        width=size,
        height=size,
        font=FONT,
        title=dict(text=tr("Cosine similarity between token embeddings"), x=0.0),
        margin=dict(l=60, r=10, t=110, b=160),
        updatemenus=[dropdown(buttons, y=1.02, name=tr("embeddings"))] if len(names) > 1 else [],
    )
    # A label per token, standing on end under the columns (9 px: 25 of them fit a phone's column).
    fig.update_xaxes(title_text=tr("token"), tickfont=dict(size=9), tickangle=-90)
    fig.update_yaxes(title_text=tr("token"), autorange="reversed", tickfont=dict(size=11))
    return label_every_category(fig)


def embedding_parameters(model: nn.Module) -> tuple[int, int]:
    """``(embedding, rest)``: the parameters of the source and target embeddings and of the output projection's
    weight (each shared tensor counted once), and all the others. Works on the meta device (shapes only)."""
    parts = [model.src_embed.weight, model.tgt_embed.weight, model.lm_head.weight]
    embedding_ids = {id(p) for p in parts}
    embedding = sum(p.numel() for p in {id(p): p for p in parts}.values())
    rest = sum(p.numel() for p in model.parameters() if id(p) not in embedding_ids)
    return embedding, rest


def _scale_samples(d_model: int, vocab_size: int, n_positions: int, seed: int) -> dict[str, np.ndarray]:
    """Flattened values of a fresh ``TokenEmbedding``'s raw weights and scaled outputs, and of the sinusoid table."""
    with seeded(seed):
        embedding = TokenEmbedding(vocab_size, d_model)
    with torch.no_grad():
        scaled = embedding(torch.arange(vocab_size)[None])  # (1, V, d_model)
    return {
        "raw": embedding.weight.detach().flatten().numpy(),
        "scaled": scaled.flatten().numpy(),
        "position": sinusoidal_table(n_positions, d_model).flatten().numpy(),
    }


def _lookup_title(t: int, token: str, token_id: int) -> str:
    return tr(
        "Token {t}, “{token}”, has id {token_id}: the lookup returns row {token_id}",
        t=t,
        token=token_labels([token])[0],
        token_id=token_id,
    )
