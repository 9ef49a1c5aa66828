"""Figures (and the small analysis they rest on) for the sinusoidal positional encoding chapter.

The encoding of :func:`transformer.sinusoidal_table` is absolute: row ``pos`` depends on ``pos`` alone. What makes it
useful for relative position is that shifting by ``k`` positions is a fixed linear map: a rotation of each
(sin, cos) pair by ``k`` times its frequency, the same for every ``pos``. :func:`offset_matrix` builds that map; the
figures draw the table, its wavelengths, the rotation and the dot products it implies. Every control (dropdowns,
sliders, play buttons) runs in the browser, so the figures work in the static book without a kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch import Tensor

from transformer.embeddings import sinusoidal_table
from transformer_book.i18n import tr

from .controls import dropdown
from .style import FONT, SIGNED_SCALE, TEMPLATE

SQUARE = 600  # width of square figures; the others fill the page's column (plotly autosize)

BASE = 10000.0


def frequencies(d_model: int) -> Tensor:
    """The angular frequency of each (sin, cos) pair, ``omega_i = 1 / 10000^(2i / d_model)``: shape ``(d_model // 2,)``,
    float64, from 1 (pair 0) down to ``10000^(-(d_model - 2) / d_model)``."""
    _check_even(d_model)
    return BASE ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d_model // 2,)


def wavelengths(d_model: int) -> Tensor:
    """The period, in positions, of each pair: ``2 pi / omega_i``, a geometric progression from ``2 pi`` with ratio
    ``10000^(2 / d_model)``."""
    return 2 * math.pi / frequencies(d_model)  # (d_model // 2,)


def offset_matrix(k: int, d_model: int) -> Tensor:
    """The ``(d_model, d_model)`` matrix ``M_k`` with ``PE(pos + k) = M_k @ PE(pos)`` for every ``pos``.

    Pair ``i`` holds ``(sin(pos w), cos(pos w))``; by the angle-addition formulas, moving to ``pos + k`` rotates it by
    the angle ``k w``. ``M_k`` is block-diagonal with one 2x2 rotation per pair and depends on ``k`` only, not on
    ``pos``. Float64, so the identity can be checked far below float32 rounding.
    """
    angles = k * frequencies(d_model)  # (d_model // 2,)
    cos, sin = torch.cos(angles), torch.sin(angles)
    blocks = torch.stack([torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)], -2)  # (d_model // 2, 2, 2)
    return torch.block_diag(*blocks)  # (d_model, d_model)


def sinusoid_table_figure(d_models: Sequence[int] = (16, 64, 128), n_positions: int = 80) -> go.Figure:
    """Heatmap of the first ``n_positions`` rows of the table, with a dropdown that picks ``d_model``.

    Columns on the left (fast pairs) oscillate quickly down the positions, columns on the right hardly move: each row
    is a different mix of fast and slow waves.
    """
    fig = go.Figure()
    for n, d_model in enumerate(d_models):
        table = sinusoidal_table(n_positions, d_model).numpy()  # (n_positions, d_model)
        fig.add_trace(
            go.Heatmap(
                z=_packed(table),
                colorscale=SIGNED_SCALE,
                zmin=-1,
                zmax=1,
                zmid=0,
                visible=n == 0,
                colorbar=dict(title=dict(text=tr("value")), thickness=14),
                hovertemplate=tr("position %{y}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>"),
                name=f"d_model = {d_model}",
            )
        )
    buttons = [
        dict(
            label=f"d_model = {d_model}",
            method="update",
            args=[{"visible": [m == n for m in range(len(d_models))]}, {"title.text": _table_title(d_model)}],
        )
        for n, d_model in enumerate(d_models)
    ]
    fig.update_layout(
        template=TEMPLATE,
        height=520,
        font=FONT,
        title=dict(text=_table_title(d_models[0]), x=0.0, xanchor="left"),
        margin=dict(l=70, r=20, t=100, b=60),
        updatemenus=[dropdown(buttons, y=1.04, name=tr("model width"))],
    )
    fig.update_xaxes(title_text=tr("dimension (even: sin, odd: cos)"))
    fig.update_yaxes(title_text=tr("position"), autorange="reversed")
    return fig


def wavelength_figure(d_model: int = 32, n_positions: int = 64, pairs: Sequence[int] | None = None) -> go.Figure:
    """A slider picks the pair ``i``: the top panel draws its sin and cos dimensions against position (the curves the
    formula continues between integer positions, markers where the model reads them), the bottom panel puts its
    wavelength on the geometric progression of all pairs (log scale: a straight line)."""
    omegas, lambdas = frequencies(d_model), wavelengths(d_model)
    pairs = list(range(d_model // 2)) if pairs is None else list(pairs)
    x_fine = np.linspace(0, n_positions, 4 * n_positions + 1)
    x_int = np.arange(n_positions + 1)
    table = sinusoidal_table(n_positions + 1, d_model).numpy()  # (n_positions + 1, d_model)

    def ys_for(i: int) -> list:
        omega = float(omegas[i])
        curves = [np.sin(omega * x_fine), np.cos(omega * x_fine), table[:, 2 * i], table[:, 2 * i + 1]]
        return [_listed(curve) for curve in curves]

    fig = make_subplots(rows=2, cols=1, row_heights=[0.6, 0.4], vertical_spacing=0.16)
    styles = [
        dict(name=tr("sin (dim 2i)"), mode="lines", line=dict(color="#1f77b4", width=1.5)),
        dict(name=tr("cos (dim 2i+1)"), mode="lines", line=dict(color="#d62728", width=1.5)),
        dict(name="PE[pos, 2i]", mode="markers", marker=dict(color="#1f77b4", size=6), showlegend=False),
        dict(name="PE[pos, 2i+1]", mode="markers", marker=dict(color="#d62728", size=6), showlegend=False),
    ]
    for x, y, style in zip([x_fine, x_fine, x_int, x_int], ys_for(pairs[0]), styles, strict=True):
        hover = tr("position %{x}<br>value %{y:.3f}")
        fig.add_trace(go.Scatter(x=x, y=y, hovertemplate=hover, **style), row=1, col=1)
    fig.add_trace(
        go.Scatter(
            x=np.arange(d_model // 2),
            y=_packed(lambdas),
            mode="lines+markers",
            name=tr("wavelength"),
            marker=dict(color="#7f7f7f", size=6),
            line=dict(color="#7f7f7f", width=1),
            showlegend=False,
            hovertemplate=tr("pair %{x}<br>wavelength %{y:,.1f} positions<extra></extra>"),
        ),
        row=2,
        col=1,
    )
    for value, text in ((2 * math.pi, "2π"), (BASE * 2 * math.pi, "10000·2π")):
        fig.add_hline(y=value, line=dict(color="#aaaaaa", dash="dot", width=1), row=2, col=1)
        fig.add_annotation(
            text=text,
            x=d_model // 2 - 1,
            y=math.log10(value),
            xref="x2",
            yref="y2",
            showarrow=False,
            xanchor="right",
            yanchor="bottom",
            font=dict(size=11, color="#555555"),
        )
    fig.add_vline(x=pairs[0], line=dict(color="#ff7f0e", width=2), row=2, col=1)
    highlight = len(fig.layout.shapes) - 1
    steps = [
        dict(
            label=str(i),
            method="update",
            args=[
                {"y": ys_for(i)},
                {
                    "title.text": _wavelength_title(i, d_model, float(omegas[i]), float(lambdas[i])),
                    f"shapes[{highlight}].x0": i,
                    f"shapes[{highlight}].x1": i,
                },
                [0, 1, 2, 3],
            ],
        )
        for i in pairs
    ]
    fig.update_layout(
        template=TEMPLATE,
        height=620,
        font=FONT,
        title=dict(text=_wavelength_title(pairs[0], d_model, float(omegas[pairs[0]]), float(lambdas[pairs[0]])), x=0.0),
        margin=dict(l=70, r=20, t=110, b=130),
        legend=dict(orientation="h", x=1.0, xanchor="right", y=1.02, yanchor="bottom"),
        sliders=[dict(active=0, currentvalue=dict(prefix=tr("pair i = ")), pad=dict(t=50), steps=steps)],
    )
    fig.update_xaxes(title_text=tr("position"), range=[0, n_positions], row=1, col=1)
    fig.update_yaxes(title_text=tr("value"), range=[-1.1, 1.1], row=1, col=1)
    fig.update_xaxes(title_text=tr("pair i"), row=2, col=1)
    fig.update_yaxes(title_text=tr("wavelength (positions)"), type="log", row=2, col=1)
    return fig


def offset_rotation_figure(
    d_model: int = 64, pos: int = 3, pairs: Sequence[int] = (0, 4, 8, 16), max_offset: int = 30
) -> go.Figure:
    """Each panel is one (sin, cos) pair drawn as a point on the unit circle (x = cos, y = sin, so its angle is
    ``pos * omega_i``). Play or drag the slider over the offset ``k``: ``PE(pos + k)`` is ``PE(pos)`` rotated by
    ``k * omega_i`` in every pair, fast pairs turning a lot, slow pairs barely; the positions in between trail
    behind it."""
    omegas = frequencies(d_model)
    table = sinusoidal_table(pos + max_offset + 1, d_model).numpy()  # (pos + max_offset + 1, d_model)
    fig = make_subplots(rows=1, cols=len(pairs), horizontal_spacing=0.04)
    circle = np.linspace(0, 2 * math.pi, 121)

    def moving(k: int) -> list[go.Scatter]:
        out = []
        for i in pairs:
            sin, cos = table[pos : pos + k + 1, 2 * i], table[pos : pos + k + 1, 2 * i + 1]  # positions pos .. pos+k
            out.append(go.Scatter(x=_listed(cos), y=_listed(sin)))  # a few points: text is smaller than base64
            out.append(go.Scatter(x=_listed(cos[-1:]), y=_listed(sin[-1:])))
        return out

    start = moving(0)
    for n, i in enumerate(pairs):
        col = n + 1
        fig.add_trace(
            go.Scatter(
                x=_packed(np.cos(circle)),
                y=_packed(np.sin(circle)),
                mode="lines",
                hoverinfo="skip",
                line=dict(color="#cccccc", width=1),
                showlegend=False,
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=[float(table[pos, 2 * i + 1])],
                y=[float(table[pos, 2 * i])],
                mode="markers",
                name="PE(pos)",
                marker=dict(size=12, color="white", line=dict(color="#1f77b4", width=2)),
                showlegend=n == 0,
                hovertemplate="PE(pos)<br>cos %{x:.3f}<br>sin %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=start[2 * n].x,
                y=start[2 * n].y,
                mode="lines+markers",
                name=tr("positions in between"),
                line=dict(color="#9ecae1", width=1),
                marker=dict(size=4, color="#9ecae1"),
                showlegend=n == 0,
                hoverinfo="skip",
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=start[2 * n + 1].x,
                y=start[2 * n + 1].y,
                mode="markers",
                name="PE(pos + k)",
                marker=dict(size=11, color="#d62728"),
                showlegend=n == 0,
                hovertemplate="PE(pos + k)<br>cos %{x:.3f}<br>sin %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    moving_traces = [t for n in range(len(pairs)) for t in (4 * n + 2, 4 * n + 3)]
    frames = [
        go.Frame(
            name=str(k),
            data=moving(k),
            traces=moving_traces,
            layout=dict(annotations=_rotation_annotations(fig, pairs, omegas, k)),
        )
        for k in range(max_offset + 1)
    ]
    fig.frames = frames
    fig.update_layout(
        template=TEMPLATE,
        height=470,
        font=FONT,
        title=dict(
            text=tr(
                "Shifting by k positions rotates every (sin, cos) pair (d_model = {d_model}, pos = {pos})",
                d_model=d_model,
                pos=pos,
            ),
            x=0.0,
        ),
        margin=dict(l=50, r=20, t=90, b=150),
        legend=dict(orientation="h", x=0.0, y=-0.17, yanchor="top"),
        annotations=_rotation_annotations(fig, pairs, omegas, 0),
        updatemenus=[_play_button(duration=400, y=-0.3)],
        sliders=[
            dict(
                active=0,
                currentvalue=dict(prefix=tr("offset k = ")),
                x=0.14,
                len=0.86,
                y=-0.3,
                yanchor="top",
                pad=dict(t=30),
                steps=[
                    dict(label=str(k), method="animate", args=[[str(k)], _animation(duration=0)])
                    for k in range(max_offset + 1)
                ],
            )
        ],
    )
    fig.update_xaxes(range=[-1.25, 1.25], title_text=tr("cos (dim 2i+1)"), zeroline=True, showticklabels=False)
    fig.update_yaxes(range=[-1.25, 1.25], scaleanchor="x", showticklabels=False, zeroline=True)
    fig.update_yaxes(title_text=tr("sin (dim 2i)"), row=1, col=1)
    for col in range(2, len(pairs) + 1):
        fig.update_yaxes(scaleanchor=f"x{col}", row=1, col=col)
    return fig


def offset_matrix_figure(d_model: int = 16, offsets: Sequence[int] = tuple(range(0, 21))) -> go.Figure:
    """Heatmap of ``M_k`` with a slider over ``k``: block-diagonal, one 2x2 rotation per pair, nothing else."""
    offsets = list(offsets)
    fig = go.Figure(
        go.Heatmap(
            z=_packed(offset_matrix(offsets[0], d_model)),
            colorscale=SIGNED_SCALE,
            zmin=-1,
            zmax=1,
            zmid=0,
            colorbar=dict(title=dict(text=tr("entry")), thickness=14),
            hovertemplate=tr("row %{y}<br>column %{x}<br>entry %{z:.3f}<extra></extra>"),
        )
    )
    steps = [
        dict(
            label=str(k),
            method="update",
            args=[{"z": [_listed(offset_matrix(k, d_model))]}, {"title.text": _matrix_title(k, d_model)}],
        )
        for k in offsets
    ]
    fig.update_layout(
        template=TEMPLATE,
        width=SQUARE - 40,
        height=600,
        font=FONT,
        title=dict(text=_matrix_title(offsets[0], d_model), x=0.0),
        margin=dict(l=70, r=20, t=80, b=60),
        sliders=[dict(active=0, currentvalue=dict(prefix="k = "), pad=dict(t=60), steps=steps)],
    )
    fig.update_xaxes(title_text=tr("column (dimension of PE(pos))"), dtick=2, constrain="domain")
    fig.update_yaxes(
        title_text=tr("row (dimension of PE(pos + k))"),
        dtick=2,
        autorange="reversed",
        scaleanchor="x",
        constrain="domain",
    )
    return fig


def offset_dot_product_figure(
    d_models: Sequence[int] = (16, 64, 128, 512),
    n_positions: int = 48,
    max_offset: int = 50,
    positions: Sequence[int] = (50, 500, 2000, 4000),
) -> go.Figure:
    """Left: ``PE(p) . PE(q)`` for positions ``p, q < n_positions``, constant along every diagonal. Right:
    ``PE(pos) . PE(pos + k)`` against ``k`` for several ``pos``: the curves coincide (only ``k`` matters) and are
    symmetric in ``k``, matching ``sum_i cos(k omega_i)``. A dropdown picks ``d_model``."""
    if min(positions) < max_offset:
        raise ValueError(f"every pos must be >= max_offset={max_offset} so that pos - k >= 0; got {list(positions)}")
    offsets = np.arange(-max_offset, max_offset + 1)
    symbols = ["circle-open", "square-open", "diamond-open", "cross-thin-open", "x-thin-open", "triangle-up-open"]
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.4, 0.6],
        horizontal_spacing=0.25,
        subplot_titles=["PE(p) · PE(q)", "PE(pos) · PE(pos + k)"],
    )
    per_d = 2 + len(positions)
    for n, d_model in enumerate(d_models):
        table = sinusoidal_table(max(positions) + max_offset + 1, d_model).double()  # (L, d_model)
        gram = table[:n_positions] @ table[:n_positions].T  # (n_positions, n_positions)
        half = d_model / 2
        fig.add_trace(
            go.Heatmap(
                z=_packed(gram),
                colorscale=SIGNED_SCALE,
                zmin=-half,
                zmax=half,
                zmid=0,
                visible=n == 0,
                colorbar=dict(title=dict(text=tr("dot")), thickness=12, x=0.32, xanchor="left"),
                hovertemplate="p %{y}<br>q %{x}<br>PE(p)·PE(q) %{z:.2f}<extra></extra>",
                showlegend=False,
            ),
            row=1,
            col=1,
        )
        analytic = torch.cos(torch.as_tensor(offsets, dtype=torch.float64)[:, None] * frequencies(d_model)).sum(-1)
        fig.add_trace(
            go.Scatter(
                x=offsets,
                y=_packed(analytic),
                mode="lines",
                name="Σ<sub>i</sub> cos(k ω<sub>i</sub>)",
                visible=n == 0,
                line=dict(color="#7f7f7f", width=2),
                legendgroup="analytic",
            ),
            row=1,
            col=2,
        )
        for m, pos in enumerate(positions):
            dots = table[pos + offsets] @ table[pos]  # (2 * max_offset + 1,)
            fig.add_trace(
                go.Scatter(
                    x=offsets,
                    y=_packed(dots),
                    mode="markers",
                    name=f"pos = {pos}",
                    visible=n == 0,
                    marker=dict(symbol=symbols[m % len(symbols)], size=7),
                    legendgroup=str(pos),
                    hovertemplate=tr("pos {pos}<br>k %{{x}}<br>dot %{{y:.3f}}<extra></extra>", pos=pos),
                ),
                row=1,
                col=2,
            )
    buttons = [
        dict(
            label=f"d_model = {d_model}",
            method="update",
            args=[{"visible": [k // per_d == n for k in range(per_d * len(d_models))]}],
        )
        for n, d_model in enumerate(d_models)
    ]
    fig.update_layout(
        template=TEMPLATE,
        height=460,
        font=FONT,
        title=dict(text=tr("The dot product of two encodings depends only on their offset"), x=0.0),
        margin=dict(l=60, r=20, t=110, b=120),
        legend=dict(orientation="h", x=0.0, y=-0.2, yanchor="top"),
        updatemenus=[dropdown(buttons, x=1.0, y=1.16, xanchor="right", name=tr("model width"))],
    )
    fig.update_xaxes(title_text=tr("position q"), row=1, col=1, constrain="domain")
    fig.update_yaxes(
        title_text=tr("position p"), autorange="reversed", scaleanchor="x", constrain="domain", row=1, col=1
    )
    fig.update_xaxes(title_text=tr("offset k"), row=1, col=2)
    fig.update_yaxes(title_text=tr("dot product"), row=1, col=2)
    return fig


def position_similarity_figure(tables: Mapping[str, Tensor], n_positions: int = 48) -> go.Figure:
    """Cosine similarity between the encodings of the first ``n_positions`` positions, one heatmap per table (e.g.
    sinusoidal against a learned table at initialisation), picked with a dropdown."""
    names = list(tables)
    fig = go.Figure()
    for n, name in enumerate(names):
        table = tables[name][:n_positions].detach().cpu().double()  # (n_positions, d_model), on the CPU
        unit = table / table.norm(dim=-1, keepdim=True)
        fig.add_trace(
            go.Heatmap(
                z=_packed(unit @ unit.T),
                colorscale=SIGNED_SCALE,
                zmin=-1,
                zmax=1,
                zmid=0,
                visible=n == 0,
                colorbar=dict(title=dict(text=tr("cosine")), thickness=14),
                name=name,
                hovertemplate=tr("position %{y}<br>position %{x}<br>cosine %{z:.3f}<extra></extra>"),
            )
        )
    buttons = [
        dict(label=name, method="update", args=[{"visible": [m == n for m in range(len(names))]}])
        for n, name in enumerate(names)
    ]
    fig.update_layout(
        template=TEMPLATE,
        width=SQUARE,
        height=600,
        font=FONT,
        title=dict(text=tr("Cosine similarity between positions"), x=0.0),
        margin=dict(l=70, r=20, t=110, b=60),
        updatemenus=[dropdown(buttons, y=1.04, name=tr("encoding"))],
    )
    fig.update_xaxes(title_text=tr("position"), constrain="domain")
    fig.update_yaxes(title_text=tr("position"), autorange="reversed", scaleanchor="x", constrain="domain")
    return fig


def _packed(values: object) -> np.ndarray:
    """Float32 numpy array: plotly stores it in the page as compact base64 (figure data and frames)."""
    return np.asarray(_on_cpu(values), dtype=np.float32)


def _listed(values: object, decimals: int = 3) -> list:
    """Rounded nested list, for data inside layout (slider and dropdown arguments), which plotly writes as text."""
    return np.round(np.asarray(_on_cpu(values), dtype=np.float64), decimals).tolist()


def _on_cpu(values: object) -> object:
    """A tensor detached and copied to the CPU (numpy cannot read one on a GPU); anything else as it is."""
    return values.detach().cpu() if isinstance(values, torch.Tensor) else values


def _check_even(d_model: int) -> None:
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be even (one sin and one cos per frequency); got {d_model}")


def _animation(duration: int) -> dict:
    return dict(mode="immediate", frame=dict(duration=duration, redraw=True), transition=dict(duration=0))


def _play_button(duration: int, y: float) -> dict:
    return dict(
        type="buttons",
        direction="left",
        x=0.14,
        y=y,
        xanchor="right",
        yanchor="top",
        pad=dict(t=55, r=10),
        showactive=False,
        buttons=[
            dict(label=tr("▶ play"), method="animate", args=[None, {**_animation(duration), "fromcurrent": True}]),
            dict(label="❚❚", method="animate", args=[[None], _animation(0)]),
        ],
    )


def _rotation_annotations(fig: go.Figure, pairs: Sequence[int], omegas: Tensor, k: int) -> list[dict]:
    notes = []
    for n, i in enumerate(pairs):
        domain = fig.get_subplot(1, n + 1).xaxis.domain
        omega = float(omegas[i])
        notes.append(
            dict(
                text=tr("pair {i}: ω = {omega:.3g}<br>angle k·ω = {angle:.2f} rad", i=i, omega=omega, angle=k * omega),
                x=(domain[0] + domain[1]) / 2,
                y=1.0,
                xref="paper",
                yref="paper",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=12),
            )
        )
    return notes


def _table_title(d_model: int) -> str:
    return tr("Sinusoidal positional encoding table (d_model = {d_model})", d_model=d_model)


def _wavelength_title(i: int, d_model: int, omega: float, wavelength: float) -> str:
    return tr(
        "Pair i = {i}: dimensions {sin_dim} (sin) and {cos_dim} (cos)<br>"
        "<sub>ω = 10000<sup>−{sin_dim}/{d_model}</sup> = {omega:.4g}, wavelength 2π/ω = {wavelength:,.1f} positions</sub>",
        i=i,
        sin_dim=2 * i,
        cos_dim=2 * i + 1,
        d_model=d_model,
        omega=omega,
        wavelength=wavelength,
    )


def _matrix_title(k: int, d_model: int) -> str:
    return tr(
        "M<sub>k</sub> with PE(pos + k) = M<sub>k</sub> PE(pos), k = {k} (d_model = {d_model})", k=k, d_model=d_model
    )
