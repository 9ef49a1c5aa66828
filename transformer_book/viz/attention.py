"""Figures of attention: heatmaps of weights, heads side by side, a head picker, the step-by-step computation of
scaled dot-product attention and the sqrt(d_k) scaling experiment.

Every builder returns a plotly ``go.Figure`` whose controls (dropdowns, buttons, sliders) switch between states
computed in advance, so the figures stay interactive in the static book, with no kernel. The heatmap helpers take
the weights any attention module of the package returns: ``(T_q, T_k)``, ``(H, T_q, T_k)`` or ``(G, H, T_q, T_k)``
(``G`` groups: layers, masks, inputs...).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch import Tensor

from transformer.attention import scaled_dot_product_attention
from transformer_book.i18n import tr

from .controls import dropdown
from .style import MASK_SCALE, SIGNED_SCALE, WEIGHTS_SCALE, row_label_spacing, style


def token_labels(tokens: Sequence[object]) -> list[str]:
    """Axis labels for tokens: HTML-escaped (plotly reads ``<s>`` or ``<pad>`` as markup) and made unique with
    zero-width spaces (plotly merges equal category names, so a repeated word would otherwise lose its row)."""
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        label = html.escape(str(token), quote=False)
        labels.append(label + "\u200b" * seen.get(label, 0))
        seen[label] = seen.get(label, 0) + 1
    return labels


def to_numpy(x: Tensor | np.ndarray) -> np.ndarray:
    """A float numpy copy of a tensor or array (detached, on the CPU)."""
    if isinstance(x, Tensor):
        return x.detach().to("cpu", torch.float32).numpy()
    return np.asarray(x, dtype=np.float32)


def attention_heatmap(
    weights: Tensor | np.ndarray,
    q_tokens: Sequence[object],
    k_tokens: Sequence[object],
    title: str | None = None,
    show_values: bool | None = None,
) -> go.Figure:
    """One ``(T_q, T_k)`` map of attention weights: a row per query, a column per key, each row summing to 1.

    ``show_values`` writes the weights in the cells (default: when the map has at most 100 cells).
    """
    w = to_numpy(weights)
    _check_tokens(w.shape, q_tokens, k_tokens, ndim=2)
    show_values = w.size <= 100 if show_values is None else show_values
    trace = _weights_heatmap(w, token_labels(q_tokens), token_labels(k_tokens), show_values=show_values)
    fig = go.Figure(trace)
    fig.update_xaxes(title_text=tr("key"), side="bottom", tickfont=dict(size=11))
    fig.update_yaxes(title_text=tr("query"), autorange="reversed")
    height = int(min(640, 200 + 34 * len(q_tokens)))
    return style(fig, title, height=height, width=260 + 44 * len(k_tokens))


def attention_heads(
    weights: Tensor | np.ndarray,
    q_tokens: Sequence[object],
    k_tokens: Sequence[object],
    group_names: Sequence[str] | None = None,
    group_label: str | None = None,
    cols: int = 4,
    title: str | None = None,
) -> go.Figure:
    """Every head side by side, one small map each; for ``(G, H, T_q, T_k)`` weights a dropdown picks the group
    (the layer, the mask, the input...). Heads share one colour scale, so their sharpness can be compared.

    ``group_label`` names the groups (default: "layer", in the reader's language); pass it translated (``tr("mask")``).
    """
    group_label = tr("layer") if group_label is None else group_label
    w = _grouped(weights)  # (G, H, T_q, T_k)
    G, H = w.shape[:2]
    _check_tokens(w.shape, q_tokens, k_tokens, ndim=4)
    names = _names(group_names, G, group_label)
    cols = min(cols, H)
    rows = math.ceil(H / cols)
    q_labels, k_labels = token_labels(q_tokens), token_labels(k_tokens)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[tr("head {h}", h=h) for h in range(H)],
        horizontal_spacing=row_label_spacing(q_labels),
        vertical_spacing=0.12 if rows > 1 else 0.0,
        shared_yaxes=True,
    )
    for g in range(G):
        for h in range(H):
            name = tr("{group}, head {h}", group=names[g], h=h)
            trace = _weights_heatmap(w[g, h], q_labels, k_labels, name=name, coloraxis="coloraxis")
            trace.visible = g == 0
            fig.add_trace(trace, row=h // cols + 1, col=h % cols + 1)
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=11), showticklabels=True)
    fig.update_xaxes(tickfont=dict(size=11))
    for r in range(rows):
        fig.update_yaxes(title_text=tr("query"), row=r + 1, col=1)
    for c in range(cols):
        fig.update_xaxes(title_text=tr("key"), row=rows, col=c + 1)
    fig.update_layout(
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0, cmax=1, colorbar=dict(title=tr("weight"), thickness=12))
    )
    height = int(min(900, 160 + rows * (60 + 22 * len(q_tokens))))
    style(fig, title, height=height)
    if G > 1:
        buttons = [
            dict(label=names[g], method="restyle", args=[{"visible": [i // H == g for i in range(G * H)]}])
            for g in range(G)
        ]
        menu = dropdown(buttons, x=1.0, y=_above(fig, 36), xanchor="right", name=group_label, pad=dict(t=0, b=0))
        fig.update_layout(margin=dict(t=120), updatemenus=[menu])
    return fig


def attention_picker(
    weights: Tensor | np.ndarray,
    q_tokens: Sequence[object],
    k_tokens: Sequence[object],
    group_names: Sequence[str] | None = None,
    group_label: str | None = None,
    head_label: str | None = None,
    title: str | None = None,
    group: int = 0,
    head: int = 0,
) -> go.Figure:
    """One large map with a head picker (buttons) and, for ``(G, H, T_q, T_k)`` weights, a group picker (dropdown),
    showing ``group`` and ``head`` first.

    The two controls combine without a kernel because each changes a different attribute: the group picker shows one
    trace per group (``visible``), the head picker rewrites every group trace's data (``z``) with that head's weights
    and names the head in the title (``title · head 2``).

    ``group_label`` and ``head_label`` default to "layer" and "head" in the reader's language; pass others translated.
    """
    group_label = tr("layer") if group_label is None else group_label
    head_label = tr("head") if head_label is None else head_label
    w = _grouped(weights)  # (G, H, T_q, T_k)
    G, H = w.shape[:2]
    _check_tokens(w.shape, q_tokens, k_tokens, ndim=4)
    if not (0 <= group < G and 0 <= head < H):
        raise ValueError(
            f"group and head must index the weights' {G} groups and {H} heads; got group={group}, head={head}"
        )
    names = _names(group_names, G, group_label)
    q_labels, k_labels = token_labels(q_tokens), token_labels(k_tokens)
    show_values = w.shape[2] * w.shape[3] <= 100
    fig = go.Figure()
    for g in range(G):
        trace = _weights_heatmap(w[g, head], q_labels, k_labels, name=names[g], show_values=show_values)
        trace.visible = g == group
        fig.add_trace(trace)

    def titled(h: int) -> str:
        return tr("{title} · {head} {h}", title=title, head=head_label, h=h) if title else _numbered(head_label, h)

    head_buttons = [
        dict(
            label=_numbered(head_label, h),
            method="update",
            args=[{"z": [np.round(w[g, h], 4) for g in range(G)]}, {"title.text": titled(h)}, list(range(G))],
        )
        for h in range(H)
    ]
    fig.update_xaxes(
        title_text=tr("key"), tickfont=dict(size=11)
    )  # plotly stands the labels on end where they do not fit
    fig.update_yaxes(title_text=tr("query"), autorange="reversed")
    style(fig, titled(head), height=int(min(720, 280 + 36 * len(q_tokens))))
    fig.update_layout(margin=dict(t=120))
    y = _above(fig, 12)
    menus = [
        dict(
            type="buttons",
            direction="right",
            buttons=head_buttons,
            showactive=True,
            active=head,
            x=0.0,
            xanchor="left",
            y=y,
            yanchor="bottom",
            pad=dict(r=4, t=0),
            name=head_label,
        )
    ]
    if G > 1:
        group_buttons = [
            dict(label=names[g], method="restyle", args=[{"visible": [i == g for i in range(G)]}]) for g in range(G)
        ]
        menus.append(
            dropdown(group_buttons, x=1.0, y=y, xanchor="right", active=group, name=group_label, pad=dict(t=0, b=0))
        )
    fig.update_layout(updatemenus=menus)
    return fig


def attention_steps(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    q_tokens: Sequence[object] | None = None,
    k_tokens: Sequence[object] | None = None,
) -> go.Figure:
    """Scaled dot-product attention one step at a time, with a slider: ``Q Kᵀ``, ``/ sqrt(d_k)``, the mask (when
    given), softmax, ``weights V``. ``q (T_q, d_k)``, ``k (T_k, d_k)``, ``v (T_k, d_v)``, ``mask (T_q, T_k)`` bool.

    The weights and the output are those of the package's :func:`~transformer.scaled_dot_product_attention`; every
    cell shows its value.
    """
    T_q, d_k = q.shape
    T_k, d_v = v.shape
    q_labels = token_labels(q_tokens if q_tokens is not None else [f"q{i}" for i in range(T_q)])
    k_labels = token_labels(k_tokens if k_tokens is not None else [f"k{j}" for j in range(T_k)])
    dims = [f"d{i}" for i in range(d_k)]
    v_dims = [f"d{i}" for i in range(d_v)]
    scores = q @ k.T  # (T_q, T_k)
    scaled = scores / math.sqrt(d_k)  # (T_q, T_k)
    weights_mask = None if mask is None else mask.bool()
    output, weights = scaled_dot_product_attention(q, k, v, weights_mask)  # (T_q, d_v), (T_q, T_k)

    M = _Matrix
    query, key, feature = tr("query"), tr("key"), tr("feature")
    steps = [
        (
            tr("1. scores = Q Kᵀ: one dot product per (query, key) pair"),
            M(q, q_labels, dims, "Q", query, feature),
            M(k.T, dims, k_labels, "Kᵀ", feature, key),
            M(scores, q_labels, k_labels, tr("scores = Q Kᵀ"), query, key),
        ),
        (
            tr("2. scale: divide by √d_k = √{d_k} = {root:.3g}", d_k=d_k, root=math.sqrt(d_k)),
            M(scores, q_labels, k_labels, tr("scores"), query, key),
            f"÷ √{d_k}<br>→",
            M(scaled, q_labels, k_labels, tr("scores / √{d_k}", d_k=d_k), query, key),
        ),
    ]
    softmax_input = scaled
    if weights_mask is not None:
        hidden = torch.finfo(scaled.dtype).min
        masked = scaled.masked_fill(~weights_mask, hidden)  # (T_q, T_k)
        steps.append(
            (
                tr("3. mask: hidden keys get the most negative float, so exp() makes them 0"),
                M(scaled, q_labels, k_labels, tr("scaled scores"), query, key),
                M(weights_mask, q_labels, k_labels, tr("mask (True = may attend)"), query, key, kind="mask"),
                M(masked, q_labels, k_labels, tr("masked scores"), query, key),
            )
        )
        softmax_input = masked
    n = len(steps) + 1
    steps += [
        (
            tr("{n}. softmax over the keys: each row becomes weights that sum to 1", n=n),
            M(
                softmax_input,
                q_labels,
                k_labels,
                tr("scores (scaled, masked)") if mask is not None else tr("scaled scores"),
                query,
                key,
            ),
            tr("softmax<br>along each row<br>→"),
            M(weights, q_labels, k_labels, tr("weights = softmax(row)"), query, key, kind="weights"),
        ),
        (
            tr("{n}. output = weights V: each query gets a weighted average of the value rows", n=n + 1),
            M(weights, q_labels, k_labels, tr("weights"), query, key, kind="weights"),
            M(v, k_labels, v_dims, "V", key, feature),
            M(output, q_labels, v_dims, tr("output"), query, feature),
        ),
    ]
    return _step_figure(steps)


@dataclass
class ScalingStats:
    """Scores of unit-variance queries and keys, without and with the ``1/sqrt(d_k)`` scale, and what softmax makes
    of them. ``raw`` and ``scaled`` are ``(n_queries, n_keys)``; statistics are means over the queries."""

    d_k: int
    raw: Tensor
    scaled: Tensor
    var_raw: float
    var_scaled: float
    max_weight_raw: float
    max_weight_scaled: float
    entropy_raw: float
    entropy_scaled: float
    jacobian_raw: float
    jacobian_scaled: float


def scaling_experiment(d_k: int, n_queries: int = 500, n_keys: int = 16, seed: int = 0) -> ScalingStats:
    """Draw ``q``, ``k`` with i.i.d. N(0, 1) entries, so ``Var(q·k) = d_k``; measure the variance of the scores with
    and without dividing by ``sqrt(d_k)``, and the softmax they give: mean largest weight, mean entropy (nats; a
    uniform row has ``log(n_keys)``), and mean Frobenius norm of the softmax Jacobian (how far the weights move per
    unit change of the scores)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_queries, 1, d_k, generator=g)  # (N, 1, d_k)
    k = torch.randn(n_queries, n_keys, d_k, generator=g)  # (N, n_keys, d_k)
    raw = (q @ k.transpose(-2, -1)).squeeze(1)  # (N, n_keys)
    scaled = raw / math.sqrt(d_k)  # (N, n_keys)
    stats = {}
    for name, scores in (("raw", raw), ("scaled", scaled)):
        p = torch.softmax(scores, dim=-1)  # (N, n_keys)
        jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # (N, n_keys, n_keys)
        stats[f"var_{name}"] = scores.var().item()
        stats[f"max_weight_{name}"] = p.max(dim=-1).values.mean().item()
        stats[f"entropy_{name}"] = -(p * p.clamp_min(1e-30).log()).sum(-1).mean().item()
        stats[f"jacobian_{name}"] = torch.linalg.matrix_norm(jacobian).mean().item()
    return ScalingStats(d_k=d_k, raw=raw, scaled=scaled, **stats)


def scaling_figure(d_ks: Sequence[int] = (1, 4, 16, 64, 256, 1024), n_keys: int = 16, seed: int = 0) -> go.Figure:
    """A d_k slider over the scaling experiment. Left: the distribution of the scores ``q·k`` (spreading like
    ``sqrt(d_k)``) and of ``q·k / sqrt(d_k)`` (staying at unit variance). Right: the softmax weights of a query,
    sorted, averaged over queries: without scaling they collapse onto one key as d_k grows (saturation)."""
    results = [scaling_experiment(d_k, n_keys=n_keys, seed=seed) for d_k in d_ks]
    edge = 4 * math.sqrt(max(d_ks))
    bins = np.linspace(-edge, edge, 161)
    centres = (bins[:-1] + bins[1:]) / 2
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.58, 0.42],
        horizontal_spacing=0.12,
        subplot_titles=[
            tr("distribution of the scores"),
            tr("sorted weights of a query ({n_keys} keys)", n_keys=n_keys),
        ],
    )
    colours = {"raw": "#dc2626", "scaled": "#2563eb"}
    labels = {"raw": tr("q·k (no scaling)"), "scaled": "q·k / √d_k"}
    for i, r in enumerate(results):
        for name in ("raw", "scaled"):
            scores = getattr(r, name).flatten().numpy()
            density, _ = np.histogram(np.clip(scores, -edge, edge), bins=bins, density=True)
            fig.add_bar(
                x=np.round(centres, 3),
                y=np.round(density, 5),
                name=labels[name],
                marker_color=colours[name],
                opacity=0.7,
                visible=i == 0,
                legendgroup=name,
                showlegend=True,
                hovertemplate=tr("score %{x:.1f}<br>density %{y:.3f}") + "<extra>" + labels[name] + "</extra>",
                row=1,
                col=1,
            )
        for name in ("raw", "scaled"):
            sorted_weights = torch.softmax(getattr(r, name), -1).sort(-1, descending=True).values.mean(0).numpy()
            fig.add_scatter(
                x=list(range(1, n_keys + 1)),
                y=np.round(sorted_weights, 4),
                mode="lines+markers",
                line=dict(color=colours[name], width=2),
                visible=i == 0,
                legendgroup=name,
                showlegend=False,
                name=labels[name],
                hovertemplate=tr("rank %{x}<br>mean weight %{y:.3f}") + "<extra>" + labels[name] + "</extra>",
                row=1,
                col=2,
            )
    steps = []
    for i, r in enumerate(results):
        visible = [j // 4 == i for j in range(4 * len(results))]
        summary = tr(
            "d_k = {d_k}: Var(q·k) = {var_raw:.3g}, Var(q·k/√d_k) = {var_scaled:.2f}<br>"
            "largest weight: {max_raw:.2f} unscaled vs {max_scaled:.2f} scaled; "
            "entropy {entropy_raw:.2f} vs {entropy_scaled:.2f} nats (uniform: {uniform:.2f})",
            d_k=r.d_k,
            var_raw=r.var_raw,
            var_scaled=r.var_scaled,
            max_raw=r.max_weight_raw,
            max_scaled=r.max_weight_scaled,
            entropy_raw=r.entropy_raw,
            entropy_scaled=r.entropy_scaled,
            uniform=math.log(n_keys),
        )
        steps.append(dict(label=str(r.d_k), method="update", args=[{"visible": visible}, {"title.text": summary}]))
    # The legend right under the axis titles, the slider under it (the static book shows it above the figure).
    plot_height = 560 - 110 - 170
    fig.update_layout(
        barmode="overlay",
        bargap=0,
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="d_k = "), pad=dict(t=95), x=0.0, len=1.0)],
        legend=dict(orientation="h", x=0.0, y=-58 / plot_height, xanchor="left", yanchor="top"),
    )
    fig.update_xaxes(title_text=tr("score"), range=[-edge, edge], row=1, col=1)
    decades = [10.0**e for e in range(-4, 1)]
    fig.update_yaxes(
        title_text=tr("density (log scale)"),
        type="log",
        range=[-4, 0.3],
        tickvals=decades,
        ticktext=[f"{d:g}" for d in decades],
        row=1,
        col=1,
    )
    fig.update_xaxes(title_text=tr("rank of the key"), tickangle=0, row=1, col=2)
    fig.update_yaxes(title_text=tr("mean weight"), range=[0, 1.02], row=1, col=2)
    style(fig, steps[0]["args"][1]["title.text"], height=560)
    fig.update_layout(margin=dict(t=110, b=170), title_font_size=13)
    return fig


# ----------------------------------------------------------------------------------------------------- helpers


@dataclass
class _Matrix:
    """One panel of the step figure: a matrix, its row and column labels, a title and how to colour it."""

    values: Tensor
    rows: list[str]
    cols: list[str]
    title: str
    row_title: str
    col_title: str
    kind: str = "signed"  # "signed" (diverging at 0), "weights" ([0, 1]) or "mask" (bool)


def _step_figure(steps: list[tuple]) -> go.Figure:
    """Three panels per step (input, second input or the operation in words, result); a slider shows one step at a
    time."""
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.13)
    layouts = []
    for i, (caption, *panels) in enumerate(steps):
        layout = {"title.text": caption, "annotations": []}
        for col, panel in enumerate(panels, start=1):
            axis = "" if col == 1 else str(col)
            if isinstance(panel, str):  # an operation between the panels, written in the middle one
                fig.add_trace(go.Heatmap(z=[[None]], showscale=False, visible=i == 0, hoverinfo="skip"), row=1, col=col)
                layout.update({f"xaxis{axis}.visible": False, f"yaxis{axis}.visible": False})
                layout["annotations"].append(
                    dict(
                        text=panel,
                        x=0.5,
                        y=0.5,
                        xref=f"x{axis} domain",
                        yref=f"y{axis} domain",
                        showarrow=False,
                        font=dict(size=16),
                    )
                )
                continue
            fig.add_trace(_panel_heatmap(panel, visible=i == 0), row=1, col=col)
            layout.update(
                {
                    f"xaxis{axis}.visible": True,
                    f"yaxis{axis}.visible": True,
                    f"xaxis{axis}.title.text": panel.col_title,
                    f"yaxis{axis}.title.text": panel.row_title,
                    f"xaxis{axis}.tickvals": list(range(len(panel.cols))),
                    f"xaxis{axis}.ticktext": panel.cols,
                    f"yaxis{axis}.tickvals": list(range(len(panel.rows))),
                    f"yaxis{axis}.ticktext": panel.rows,
                    f"xaxis{axis}.range": [-0.5, len(panel.cols) - 0.5],
                    f"yaxis{axis}.range": [len(panel.rows) - 0.5, -0.5],
                }
            )
            layout["annotations"].append(
                dict(
                    text=f"<b>{panel.title}</b>",
                    x=0.5,
                    y=1.0,
                    xref=f"x{axis} domain",
                    yref=f"y{axis} domain",
                    xanchor="center",
                    yanchor="bottom",
                    showarrow=False,
                    font=dict(size=13),
                )
            )
        layouts.append(layout)
    n_traces = 3
    sliders = [
        dict(
            active=0,
            currentvalue=dict(prefix=tr("step ")),
            pad=dict(t=40),
            x=0.0,
            len=1.0,
            steps=[
                dict(
                    label=str(i + 1),
                    method="update",
                    args=[{"visible": [j // n_traces == i for j in range(n_traces * len(steps))]}, layouts[i]],
                )
                for i in range(len(steps))
            ],
        )
    ]
    style(fig, None, height=400)
    fig.update_layout(sliders=sliders, margin=dict(t=90, b=110, l=60, r=20), title=dict(x=0.02, font=dict(size=14)))
    fig.update_layout(layouts[0])
    return fig


def _panel_heatmap(panel: _Matrix, visible: bool) -> go.Heatmap:
    values = to_numpy(panel.values)
    x, y = list(range(values.shape[1])), list(range(values.shape[0]))
    if panel.kind == "mask":
        text = np.where(values > 0, "✓", "✗")
        return go.Heatmap(
            z=values.astype(int),
            x=x,
            y=y,
            text=text,
            texttemplate="%{text}",
            colorscale=MASK_SCALE,
            zmin=0,
            zmax=1,
            showscale=False,
            visible=visible,
            hoverinfo="skip",
            xgap=1,
            ygap=1,
        )
    finite = np.abs(values) < 1e30  # masked scores hold the dtype's min: shown as "min", left uncoloured
    shown = np.where(finite, values, 0.0)
    text = np.where(finite, np.char.mod("%.2f", shown + 0.0), "min")
    z = np.where(finite, np.round(shown, 4), np.nan)
    if panel.kind == "weights":
        scale = dict(colorscale=WEIGHTS_SCALE, zmin=0, zmax=1)
    else:
        bound = float(np.abs(z[finite]).max()) if finite.any() else 1.0
        scale = dict(colorscale=SIGNED_SCALE, zmid=0, zmin=-bound, zmax=bound)
    return go.Heatmap(
        z=z,
        x=x,
        y=y,
        text=text,
        texttemplate="%{text}",
        showscale=False,
        visible=visible,
        hovertemplate=tr("row %{y}, column %{x}: %{text}") + "<extra></extra>",
        xgap=1,
        ygap=1,
        **scale,
    )


def _weights_heatmap(
    w: np.ndarray, q_labels: list[str], k_labels: list[str], name: str = "", show_values: bool = False, **kwargs
) -> go.Heatmap:
    if "coloraxis" not in kwargs:
        kwargs.update(colorscale=WEIGHTS_SCALE, zmin=0, zmax=1, colorbar=dict(title=tr("weight"), thickness=12))
    if show_values:
        kwargs.update(texttemplate="%{z:.2f}", textfont=dict(size=11))
    return go.Heatmap(
        z=np.round(w, 4),
        x=k_labels,
        y=q_labels,
        name=name,
        hovertemplate=tr("query %{y}<br>key %{x}<br>weight %{z:.3f}") + "<extra>" + html.escape(name) + "</extra>",
        **kwargs,
    )


def _grouped(weights: Tensor | np.ndarray) -> np.ndarray:
    w = to_numpy(weights)
    if w.ndim == 3:
        w = w[None]
    if w.ndim != 4:
        raise ValueError(f"weights must be (H, T_q, T_k) or (G, H, T_q, T_k); got shape {w.shape}")
    return w


def _check_tokens(shape: tuple, q_tokens: Sequence[object], k_tokens: Sequence[object], ndim: int) -> None:
    if len(shape) != ndim:
        raise ValueError(f"weights must have {ndim} dimensions; got shape {shape}")
    if (len(q_tokens), len(k_tokens)) != tuple(shape[-2:]):
        raise ValueError(
            f"weights end in (T_q, T_k) = {tuple(shape[-2:])} but got {len(q_tokens)} query and {len(k_tokens)} key tokens"
        )


def _names(names: Sequence[str] | None, n: int, label: str) -> list[str]:
    names = [_numbered(label, i) for i in range(n)] if names is None else [str(name) for name in names]
    if len(names) != n:
        raise ValueError(f"expected {n} group names; got {len(names)}")
    return names


def _numbered(label: str, i: int) -> str:
    """``label`` (already in the reader's language) and a number: "head 2", "layer 0"."""
    return tr("{label} {i}", label=label, i=i)


def _above(fig: go.Figure, pixels: int) -> float:
    """The paper coordinate ``pixels`` above the top of the plotting area (controls go there, clear of titles)."""
    plot_height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    return 1.0 + pixels / plot_height
