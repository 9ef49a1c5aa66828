"""Figures for the decoding chapter: greedy decoding step by step, cached against uncached timings, and the
hypotheses of a beam search. Every control switches between states computed in advance, so the figures work in
the static book without a kernel."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer.decoding import BeamStep, GreedyStep
from transformer.tokens import BOS_ID, PAD_ID
from transformer.train.tasks import token_label
from transformer_book.i18n import tr

from .attention import to_numpy
from .style import style
from .training import EDGE_COLOUR, KIND_COLOURS, KIND_SCALE, LINE_COLOURS, OTHER_COLOUR, _kind, _label


def greedy_stepper(
    runs: Mapping[str, Sequence[GreedyStep]],
    row: int = 0,
    source: Sequence[int] | None = None,
    target_probability: float | None = None,
) -> go.Figure:
    """Greedy decoding of batch row ``row`` by one or more models (pick one in the menu), one frame per step (slider
    or Play): the decoder's input so far (top) and the probability of every possible next token (bottom), the chosen
    one in red with its value. The next frame's input is this frame's input with the chosen token appended; a run
    that has already finished keeps showing its last step. ``target_probability`` draws, dashed, the probability that
    label smoothing trains the right token towards (said in the panel's title, where no bar's label can cover it)."""
    names = list(runs)
    if not names or any(len(runs[name]) == 0 for name in names):
        raise ValueError(f"runs must map names to non-empty lists of greedy steps; got {[len(runs[n]) for n in names]}")
    n_steps = max(len(runs[name]) for name in names)
    vocab = runs[names[0]][0].log_probs.size(-1)
    width = n_steps + 1
    labels = [_label(t) for t in range(vocab)]
    probabilities = tr("probability of each next token")
    if target_probability is not None:
        probabilities += tr(
            "<br><span style='font-size:12px'>dashed: label smoothing's target, {p:.3f}</span>", p=target_probability
        )
    fig = make_subplots(
        rows=2,
        cols=1,
        row_heights=[0.24, 0.76],
        vertical_spacing=0.3,
        subplot_titles=(tr("decoder input so far"), probabilities),
    )

    def state(steps: Sequence[GreedyStep], i: int) -> tuple[go.Heatmap, go.Bar]:
        step = steps[min(i, len(steps) - 1)]
        tokens = step.decoder_input[row].tolist()
        shown = tokens + [PAD_ID] * (width - len(tokens))
        text = [_label(t) if j < len(tokens) else "" for j, t in enumerate(shown)]
        probs = to_numpy(step.log_probs[row].exp())  # on the CPU, whatever device the model decoded on
        chosen = int(step.next_tokens[row])
        inputs = go.Heatmap(
            z=[[_kind(t) if j < len(tokens) else 0 for j, t in enumerate(shown)]],
            x=list(range(width)),
            y=[tr("input")],
            text=[text],
            texttemplate="%{text}",
            textfont=dict(size=13, color="white"),
            colorscale=KIND_SCALE,
            zmin=0,
            zmax=3,
            showscale=False,
            xgap=3,
            ygap=3,
            hovertemplate=tr("position %{x}: %{text}<extra></extra>"),
        )
        bars = go.Bar(
            x=labels,
            y=np.round(probs, 4),
            text=[f"{p:.2f}" if t == chosen else "" for t, p in enumerate(probs)],
            textposition="outside",
            cliponaxis=False,
            marker_color=[KIND_COLOURS["eos"] if t == chosen else OTHER_COLOUR for t in range(vocab)],
            hovertemplate=tr("next token %{x}: p = %{y:.4f}<extra></extra>"),
            showlegend=False,
        )
        return inputs, bars

    for k, name in enumerate(names):  # frames leave each trace's visibility alone: the menu alone sets it
        for trace, subplot_row in zip(state(runs[name], 0), (1, 2), strict=True):
            fig.add_trace(trace.update(visible=k == 0), row=subplot_row, col=1)
    fig.frames = [
        go.Frame(
            data=[t for name in names for t in state(runs[name], i)], traces=list(range(2 * len(names))), name=str(i)
        )
        for i in range(n_steps)
    ]
    menus = [
        dict(
            type="buttons",
            x=0.0,
            y=-0.13,
            xanchor="left",
            yanchor="top",
            showactive=False,
            buttons=[
                dict(
                    label=tr("▶ Play"),
                    method="animate",
                    args=[
                        None,
                        dict(frame=dict(duration=900, redraw=True), fromcurrent=True, transition=dict(duration=0)),
                    ],
                )
            ],
        )
    ]
    if len(names) > 1:
        menus.append(
            dict(
                buttons=[
                    dict(
                        label=html.escape(name),
                        method="restyle",
                        args=[{"visible": [k == shown for k in range(len(names)) for _ in range(2)]}],
                    )
                    for shown, name in enumerate(names)
                ],
                direction="down",
                x=1.0,
                xanchor="right",
                y=1.0,
                yanchor="bottom",
                name=tr("model"),
            )
        )
    fig.update_layout(
        sliders=[
            dict(
                active=0,
                x=0.12,
                len=0.88,
                y=-0.13,
                currentvalue=dict(prefix=tr("step "), font=dict(size=13)),
                steps=[
                    dict(
                        label=str(i + 1),
                        method="animate",
                        args=[
                            [str(i)],
                            dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0)),
                        ],
                    )
                    for i in range(n_steps)
                ],
            )
        ],
        updatemenus=menus,
    )
    if target_probability is not None:
        fig.add_hline(y=target_probability, line=dict(color="#6b7280", width=1.5, dash="dash"), row=2, col=1)
    fig.update_xaxes(title_text=tr("position"), dtick=1, range=[-0.5, width - 0.5], row=1, col=1)
    fig.update_yaxes(title_text="", row=1, col=1)
    fig.update_xaxes(title_text=tr("next token"), type="category", row=2, col=1)
    fig.update_yaxes(title_text=tr("probability"), range=[0, 1.12], row=2, col=1)
    title = tr("Greedy decoding, one token per step")
    if source is not None:
        title += tr(
            "<br><span style='font-size:13px'>source: {source}</span>", source=" ".join(_label(t) for t in source)
        )
    fig = style(fig, title, height=600)
    fig.update_layout(margin=dict(l=70, r=20, t=110, b=140))
    return fig


def timing_figure(rows: Sequence[Mapping[str, float]], title: str | None = None) -> go.Figure:
    """Milliseconds to decode n tokens with and without the cache (log-log), each point's speed-up in its hover and
    written next to the cached point. ``rows``: ``{"tokens", "cached_ms", "uncached_ms"}`` each."""
    tokens = [r["tokens"] for r in rows]
    fig = go.Figure()
    for i, (key, name) in enumerate((("uncached_ms", tr("without cache")), ("cached_ms", tr("with cache")))):
        fig.add_trace(
            go.Scatter(
                x=tokens,
                y=[r[key] for r in rows],
                mode="lines+markers",
                name=name,
                line=dict(color=LINE_COLOURS[i + 1 if i == 0 else 0], width=2.5),
                marker=dict(size=9),
                customdata=[r["uncached_ms"] / r["cached_ms"] for r in rows],
                hovertemplate=tr("%{x} tokens: %{y:.1f} ms<br>speed-up %{customdata:.1f}x<extra>") + name + "</extra>",
            )
        )
    for r in rows:
        fig.add_annotation(
            x=np.log10(r["tokens"]),
            y=np.log10(r["cached_ms"]),
            text=f"{r['uncached_ms'] / r['cached_ms']:.1f}x",
            showarrow=False,
            yshift=-16,
            font=dict(size=12, color=LINE_COLOURS[0]),
        )
    fig.update_xaxes(title_text=tr("tokens generated"), type="log", tickvals=tokens)
    fig.update_yaxes(
        title_text=tr("time to decode (ms)"), type="log", dtick="D2"
    )  # labels at 1, 2 and 5 of each decade
    fig = style(fig, title, height=400)
    fig.update_layout(legend=dict(orientation="h", x=0, y=-0.22), margin=dict(l=70, r=20, t=60, b=100))
    return fig


def beam_figure(steps: Sequence[BeamStep], source_index: int = 0, title: str | None = None) -> go.Figure:
    """The beam search of one source (``list(beam_steps(...))``): a column per step; in the upper rows the live
    hypotheses, best first (a node per hypothesis: its newest token, its summed log-probability in the hover, an edge
    to the hypothesis it extended); in the lower rows the finished hypotheses the search kept at the end, each at
    the step where it ended (its length-penalised score in the hover). The returned one and its path are red."""
    b, K = source_index, steps[0].scores.size(1)
    live = [s.tokens[b].tolist() for s in steps]  # [t][k]: the tokens of live hypothesis k after step t
    scores = [s.scores[b].tolist() for s in steps]
    final = steps[-1]
    finished = [[int(x) for x in row if x != PAD_ID] for row in final.finished[b].tolist()]
    finished_scores = final.finished_scores[b].tolist()

    def parent_slot(prefix: list[int]) -> int:
        """The live slot, at the step before, of the hypothesis that ``prefix`` extends (BOS, slot 0, at step 0)."""
        return live[len(prefix) - 1].index(prefix) if prefix else 0

    on_best = set()  # (step, slot) of the live hypotheses on the returned one's path
    winner = finished[0]
    for t in range(len(winner) - 1, 0, -1):
        on_best.add((t, parent_slot(winner[:t])))
    edges = {False: ([], []), True: ([], [])}  # on the returned path or not -> (x, y)
    xs, ys, texts, hovers, colours = (
        [0],
        [0],
        [_label(BOS_ID)],
        [tr("the decoder's first input")],
        [KIND_COLOURS["bos"]],
    )

    def node(x: int, y: int, token: int, hover: str, parent: int, best: bool) -> None:
        xs.append(x)
        ys.append(y)
        texts.append(_label(token))
        hovers.append(hover)
        colours.append(KIND_COLOURS["eos"] if best else OTHER_COLOUR)
        edge_x, edge_y = edges[best]
        edge_x += [x - 1, x, None]  # from the hypothesis it extended
        edge_y += [parent, y, None]

    for t in range(len(steps)):
        for k in range(K):
            if not np.isfinite(scores[t][k]):
                continue  # an empty slot (the first steps of a beam wider than the choices)
            tokens = live[t][k]
            node(
                t + 1,
                k,
                tokens[-1],
                tr(
                    "step {step}, live {k}: {token}<br>log-probability {score:.3f}",
                    step=t + 1,
                    k=k + 1,
                    token=_label(tokens[-1]),
                    score=scores[t][k],
                ),
                parent_slot(tokens[:-1]),
                (t + 1, k) in on_best,
            )
    for rank, (tokens, score) in enumerate(zip(finished, finished_scores, strict=True)):
        if np.isfinite(score):
            node(
                len(tokens),
                K + rank,
                tokens[-1],
                tr(
                    "finished {rank}, ended at step {step}: {tokens}<br>penalised score {score:.3f}",
                    rank=rank + 1,
                    step=len(tokens),
                    tokens=html.escape(" ".join(token_label(x) for x in tokens)),
                    score=score,
                ),
                parent_slot(tokens[:-1]),
                rank == 0,
            )
    fig = go.Figure()
    for best, width in ((False, 2), (True, 3)):
        fig.add_trace(
            go.Scatter(
                x=edges[best][0],
                y=edges[best][1],
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line=dict(color=KIND_COLOURS["eos"] if best else EDGE_COLOUR, width=width),
            )
        )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers+text",
            text=texts,
            textfont=dict(size=12, color="white"),
            marker=dict(size=28, color=colours, line=dict(color="white", width=1)),
            hovertext=hovers,
            hovertemplate="%{hovertext}<extra></extra>",
            showlegend=False,
        )
    )
    fig.add_hline(y=K - 0.5, line=dict(color=EDGE_COLOUR, dash="dot", width=1))
    fig.update_xaxes(title_text=tr("step (tokens generated)"), dtick=1, range=[-0.6, len(steps) + 0.6])
    fig.update_yaxes(
        autorange="reversed",
        tickvals=list(range(2 * K)),
        ticktext=[tr("live {k}", k=k + 1) for k in range(K)] + [tr("finished {k}", k=k + 1) for k in range(K)],
    )
    return style(fig, title, height=max(300, 120 + 45 * 2 * K))
