"""Figures of subword tokenization: words cut into byte-pair symbols as merges are learned, and sequence lengths
against vocabulary size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from transformer.train.bpe import Merge, apply_merges
from transformer_book.i18n import tr

from .attention import token_labels
from .controls import dropdown
from .style import BLUE, GREY, ORANGE, style

_FILLS = ("#dbe7f3", "#fde3c8")  # neighbouring symbols alternate, so a word's cuts show


def merges_figure(pieces: Sequence[str], merges: Sequence[Merge], title: str | None = None) -> go.Figure:
    """Each of ``pieces`` (pre-tokenized words, e.g. ``"▁fünfundzwanzig"``) as a row of boxes, one per symbol, after
    0, 1, ... ``len(merges)`` merges; a menu picks how many, and the title names the last merge and its count."""
    if not pieces or not merges:
        raise ValueError(f"pieces and merges must both be non-empty; got {len(pieces)} pieces, {len(merges)} merges")
    labels = token_labels(pieces)
    fig = go.Figure()
    for k in range(len(merges) + 1):
        ys, bases, widths, texts, fills = [], [], [], [], []
        for label, piece in zip(labels, pieces, strict=True):
            start = 0
            for i, symbol in enumerate(apply_merges(piece, merges[:k])):
                ys.append(label)
                bases.append(start)
                widths.append(len(symbol))
                texts.append(symbol)
                fills.append(_FILLS[i % 2])
                start += len(symbol)
        fig.add_trace(
            go.Bar(
                y=ys,
                x=widths,
                base=bases,
                orientation="h",
                text=texts,
                textposition="inside",
                insidetextanchor="middle",
                textfont=dict(size=13),
                marker=dict(color=fills, line=dict(color="#555555", width=1)),
                visible=k == 0,
                name=tr("after {k} merges", k=k),
                hovertemplate="%{text}<extra></extra>",
                textangle=0,
            )
        )
    titles = [_merge_title(merges, k) for k in range(len(merges) + 1)]
    buttons = [
        dict(
            label=tr("{k} merge", k=k) if k == 1 else tr("{k} merges", k=k),
            method="update",
            args=[{"visible": [i == k for i in range(len(merges) + 1)]}, {"title.text": titles[k]}],
        )
        for k in range(len(merges) + 1)
    ]
    style(fig, titles[0] if title is None else title, height=130 + 44 * len(pieces))
    fig.update_layout(
        barmode="overlay",
        bargap=0.25,
        showlegend=False,
        margin=dict(l=20, r=20, t=110, b=30),
        updatemenus=[dropdown(buttons, x=0.0, y=1.02, name=tr("merges learned"))],
        uniformtext=dict(minsize=10, mode="show"),
    )
    fig.update_xaxes(visible=False, range=[-0.05, max(len(piece) for piece in pieces) + 0.05])
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    return fig


def _merge_title(merges: Sequence[Merge], k: int) -> str:
    if k == 0:
        return tr("Before any merge: one symbol per character")
    m = merges[k - 1]
    return tr(
        "After {k} merges; the last: {left} + {right} → {merged} ({count:,} times)",
        k=k,
        left=m.left,
        right=m.right,
        merged=m.left + m.right,
        count=m.count,
    )


def lengths_figure(
    lengths: Mapping[str, Sequence[float]], sizes: Sequence[int], chosen: int | None = None, title: str | None = None
) -> go.Figure:
    """Mean tokens per sentence (one line per language in ``lengths``) against the vocabulary size ``sizes``: each
    merge adds an id and shortens the sentences it applies to. ``chosen`` marks the size the chapter trains with."""
    fig = go.Figure()
    for (name, values), colour in zip(lengths.items(), (BLUE, ORANGE, GREY), strict=False):
        fig.add_trace(
            go.Scatter(
                x=list(sizes),
                y=list(values),
                mode="lines+markers",
                name=name,
                line=dict(color=colour),
                hovertemplate=tr("%{x} ids: %{y:.1f} tokens") + "<extra>" + name + "</extra>",
            )
        )
    if chosen is not None:
        fig.add_vline(x=chosen, line=dict(color=GREY, dash="dot"))
    style(fig, title, height=380)
    fig.update_layout(legend=dict(orientation="h", x=1.0, xanchor="right", y=1.0, yanchor="bottom"))
    # Ticks at the measured sizes, written out: plotly's own log ticks label 200 as "2" and crowd "9" against "1000".
    fig.update_xaxes(
        title_text=tr("vocabulary size (ids)"),
        type="log",
        tickvals=list(sizes),
        ticktext=[f"{size:,}" for size in sizes],
        tickfont=dict(size=11),
    )
    fig.update_yaxes(title_text=tr("tokens per sentence"), rangemode="tozero")
    return fig
