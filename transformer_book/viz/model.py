"""Figures for the chapter on the full model: layer norm against batch norm, post-norm against pre-norm through depth,
and where the parameters are; the diagram of the encoder and decoder layers is its own module
(:mod:`transformer_book.viz.layer_diagram`), which the chapter reaches through this one (``viz.layer_diagram``).

Every number comes from the package (its layers, a model built on PyTorch's meta device, or the closed-form count
checked against it), and every control switches between states computed in advance, so the figures work in the
static book without a kernel.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
import torch
import torch.nn.functional as F
from plotly.subplots import make_subplots
from torch import Tensor, nn

from transformer.config import TransformerConfig
from transformer.model import Encoder
from transformer.utils import seeded

from ..i18n import tr, translatable
from ..parameters import parameter_formula
from .controls import dropdown
from .layer_diagram import layer_diagram
from .overview import COLOURS, meta_model
from .style import SIGNED_SCALE, style

VARIANT_COLOURS = {False: "#d62728", True: "#1f77b4"}  # post-norm red, pre-norm blue
VARIANT_NAMES = {False: translatable("post-norm (paper)"), True: translatable("pre-norm")}  # shown through tr


# ---------------------------------------------------------------------------------------------------------- parameters
_PARTS = {
    "self_attn": translatable("self-attention"),
    "cross_attn": translatable("cross-attention"),
    "feed_forward": translatable("feed-forward"),
}
# The other groups and parts parameter_tree names: English keys, which the figures show through tr.
_TREE_NAMES = (
    translatable("model"),
    translatable("embeddings"),
    translatable("encoder"),
    translatable("decoder"),
    translatable("output"),
    translatable("shared embedding"),
    translatable("shared embedding (+ output)"),
    translatable("source embedding"),
    translatable("target embedding"),
    translatable("target embedding (+ output)"),
    translatable("learned positions"),
    translatable("projection weight"),
    translatable("projection bias"),
    translatable("layer norms"),
    translatable("masked self-attention"),
)


def parameter_tree(config: TransformerConfig) -> dict[tuple[str, str], int]:
    """Parameters of ``Transformer(config)`` by ``(group, part)``, counted on a meta-device model (the package's real
    modules, no memory). ``named_parameters()`` yields a shared tensor once, so tied matrices are counted once, under
    the embedding (marked "+ output" when the output projection reuses it). The names are English keys (a figure
    shows them through ``tr``)."""
    c = config
    model = meta_model(config)
    if c.share_embeddings:
        embedding = "shared embedding" + (" (+ output)" if c.tie_output_embedding else "")
    else:
        embedding = "source embedding"
    counts: dict[tuple[str, str], int] = {}
    for name, param in model.named_parameters():
        parts = name.split(".")
        if parts[0] == "src_embed":
            key = ("embeddings", embedding)
        elif parts[0] == "tgt_embed":
            key = ("embeddings", "target embedding" + (" (+ output)" if c.tie_output_embedding else ""))
        elif parts[0] == "positional":
            key = ("embeddings", "learned positions")
        elif parts[0] == "lm_head":
            key = ("output", f"projection {parts[1]}")
        elif parts[1] == "norm":  # the final norm of a stack
            key = (parts[0], "layer norms")
        else:  # encoder.layers.3.feed_forward.linear1.weight
            sub = parts[3]
            part = "layer norms" if sub.startswith("norm") else _PARTS[sub]
            key = (parts[0], "masked self-attention" if (parts[0], part) == ("decoder", "self-attention") else part)
        counts[key] = counts.get(key, 0) + param.numel()
    return counts


def parameter_sunburst(configs: dict[str, TransformerConfig]) -> go.Figure:
    """Where the parameters are, as a sunburst (model -> group -> part), one configuration at a time (dropdown)."""
    fig = go.Figure()
    titles = []
    for i, (label, config) in enumerate(configs.items()):
        tree = parameter_tree(config)
        total = sum(tree.values())
        groups: dict[str, int] = {}
        for (group, _), n in tree.items():
            groups[group] = groups.get(group, 0) + n
        ids = ["model", *(f"model/{g}" for g in groups), *(f"model/{g}/{p}" for g, p in tree)]
        labels = [tr("model"), *(tr(g) for g in groups), *(tr(p) for _, p in tree)]
        parents = ["", *("model" for _ in groups), *(f"model/{g}" for g, _ in tree)]
        values = [total, *groups.values(), *tree.values()]
        fig.add_trace(
            go.Sunburst(
                ids=ids,
                labels=labels,
                parents=parents,
                values=values,
                branchvalues="total",
                visible=i == 0,
                customdata=[f"{v:,}" for v in values],
                insidetextorientation="auto",
                sort=False,
                texttemplate="%{label}<br>%{percentRoot:.1%}",
                hovertemplate=tr(
                    "<b>%{label}</b><br>%{customdata} parameters<br>%{percentRoot:.1%} of the model<extra></extra>"
                ),
                marker=dict(colors=[_group_colour(i) for i in ids]),
            )
        )
        titles.append(tr("{label}: {total:,} parameters", label=label, total=total))
    buttons = [
        dict(
            label=label,
            method="update",
            args=[{"visible": [j == i for j in range(len(configs))]}, {"title.text": titles[i]}],
        )
        for i, label in enumerate(configs)
    ]
    style(fig, titles[0], height=560)
    fig.update_layout(
        margin=dict(l=10, r=10, t=90, b=10),
        updatemenus=[dropdown(buttons, x=1.0, y=1.1, xanchor="right", name="model")],
        uniformtext=dict(minsize=9, mode="hide"),  # a slice too thin for a readable label leaves it to the hover
    )
    return fig


def _group_colour(node: str) -> str:
    if "attention" in node:
        return COLOURS["attention"]
    if "feed-forward" in node:
        return COLOURS["ffn"]
    if "norms" in node:
        return COLOURS["norm"]
    if "embedding" in node or "positions" in node:
        return COLOURS["embed"]
    if "output" in node or "projection" in node:
        return COLOURS["output"]
    return {"model": "#ffffff", "model/encoder": "#e8eef7", "model/decoder": "#eef5e8"}.get(node, "#f1f1f1")


def parameter_explorer():
    """An ipywidgets explorer (live kernel only): choose the sizes and see the parameter count by component, computed
    on a meta-device model. Wrap it with :func:`transformer_book.viz.live_only` in a chapter."""
    import ipywidgets as widgets

    d_model = widgets.Dropdown(options=[64, 128, 256, 512, 768, 1024], value=512, description="d_model")
    n_heads = widgets.Dropdown(options=[1, 2, 4, 8, 16], value=8, description=tr("heads"))
    ff_ratio = widgets.Dropdown(  # a label wider than ipywidgets' default width, which would cut it short
        options=[1, 2, 4, 8], value=4, description="d_ff / d_model", style={"description_width": "initial"}
    )
    layers = widgets.IntSlider(value=6, min=1, max=24, description=tr("layers"), continuous_update=False)
    vocab = widgets.BoundedIntText(value=37_000, min=2, max=500_000, step=1000, description=tr("vocabulary"))
    shared = widgets.Checkbox(value=True, description=tr("share and tie embeddings"))
    out = widgets.HTML()

    def update(_=None) -> None:
        try:
            config = TransformerConfig(
                vocab.value,
                vocab.value,
                d_model=d_model.value,
                n_heads=n_heads.value,
                d_ff=ff_ratio.value * d_model.value,
                n_encoder_layers=layers.value,
                n_decoder_layers=layers.value,
                share_embeddings=shared.value,
                tie_output_embedding=shared.value,
            )
        except ValueError as error:
            out.value = f"<p style='color:#b00'>{html.escape(str(error))}</p>"
            return
        tree = parameter_tree(config)
        total = sum(tree.values())
        cell = "<td style='padding:1px 1.2em 1px 0; text-align:{}'>{}</td>"
        header = "".join(
            f"<th style='padding:1px 1.2em 1px 0; text-align:{a}'>{t}</th>"
            for a, t in (
                ("left", tr("component")),
                ("left", tr("part")),
                ("right", tr("parameters")),
                ("right", tr("share")),
            )
        )
        rows = "".join(
            "<tr>"
            + cell.format("left", html.escape(tr(g)))
            + cell.format("left", html.escape(tr(p)))
            + cell.format("right", f"{n:,}")
            + cell.format("right", f"{n / total:.1%}")
            + "</tr>"
            for (g, p), n in tree.items()
        )
        out.value = (
            tr("<p><b>{total:,} parameters</b> ({millions:.1f} M)</p>", total=total, millions=total / 1e6)
            + f"<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"
        )

    for control in (d_model, n_heads, ff_ratio, layers, vocab, shared):
        control.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox([d_model, n_heads, ff_ratio]), widgets.HBox([layers, vocab, shared]), out])


# --------------------------------------------------------------------------------------------- layer norm, batch norm
def norm_figure(x: Tensor, eps: float = 1e-5) -> go.Figure:
    """What layer norm and batch norm normalise: ``x (B, T, d)`` as a grid of positions (rows) by features (columns),
    raw or normalised (dropdown), with each row's and each column's mean and standard deviation in the margins.

    Layer norm makes every *row* (one position) mean 0, std 1; batch norm makes every *column* (one feature, over
    all positions of the batch) mean 0, std 1. Both without their learned gain and bias.
    """
    x = x.detach().cpu()  # drawn from the CPU, whatever device x is on
    B, T, d = x.shape
    flat = x.reshape(B * T, d)  # (B*T, d): one row per position
    states = {
        tr("raw activations"): flat,
        tr("layer norm (each row)"): F.layer_norm(flat, (d,), eps=eps),
        tr("batch norm (each column)"): F.batch_norm(flat, None, None, training=True, eps=eps),
    }
    rows = [tr("seq {b} · pos {t}", b=b, t=t) for b in range(B) for t in range(T)]
    cols = [f"f{j}" for j in range(d)]
    fig = make_subplots(
        rows=2,
        cols=2,
        column_widths=[0.74, 0.26],
        row_heights=[0.28, 0.72],
        shared_xaxes="columns",
        shared_yaxes="rows",
        horizontal_spacing=0.03,
        vertical_spacing=0.04,
    )
    for i, values in enumerate(states.values()):
        v = values.detach().numpy()
        visible, limit = i == 0, float(abs(v).max())  # each state on its own symmetric scale
        fig.add_trace(
            go.Heatmap(
                z=v,
                x=cols,
                y=rows,
                colorscale=SIGNED_SCALE,
                zmid=0,
                zmin=-limit,
                zmax=limit,
                visible=visible,
                colorbar=dict(title=tr("value"), thickness=12, len=0.7, y=0.36),
                texttemplate="%{z:.1f}",
                hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>",
            ),
            row=2,
            col=1,
        )
        for axis, name, colour in ((0, translatable("mean"), "#4c78a8"), (0, translatable("std"), "#f58518")):
            stat, label = v.mean(axis) if name == "mean" else v.std(axis), tr(name)
            fig.add_trace(
                go.Scatter(
                    x=cols,
                    y=stat,
                    mode="markers+lines",
                    name=tr("column {name}", name=label),
                    marker=dict(color=colour, size=7),
                    line=dict(color=colour, width=1),
                    visible=visible,
                    legendgroup=name,
                    showlegend=False,
                    hovertemplate=f"%{{x}}: {label} %{{y:.3f}}<extra></extra>",
                ),
                row=1,
                col=1,
            )
        for axis, name, colour in ((1, translatable("mean"), "#4c78a8"), (1, translatable("std"), "#f58518")):
            stat, label = v.mean(axis) if name == "mean" else v.std(axis), tr(name)
            fig.add_trace(
                go.Scatter(
                    x=stat,
                    y=rows,
                    mode="markers+lines",
                    name=label,
                    marker=dict(color=colour, size=7),
                    line=dict(color=colour, width=1),
                    visible=visible,
                    legendgroup=name,
                    showlegend=visible,
                    hovertemplate=f"%{{y}}: {label} %{{x:.3f}}<extra></extra>",
                ),
                row=2,
                col=2,
            )
    per_state = 5
    buttons = [
        dict(
            label=label,
            method="restyle",
            args=[
                {
                    "visible": [j // per_state == i for j in range(per_state * len(states))],
                    "showlegend": [j // per_state == i and j % per_state >= 3 for j in range(per_state * len(states))],
                }
            ],
        )
        for i, label in enumerate(states)
    ]
    style(fig, tr("Each row's features, with the mean and spread of rows and columns"), height=560)
    fig.update_layout(
        margin=dict(l=110, r=30, t=110, b=60),
        legend=dict(orientation="h", x=1.0, xanchor="right", y=1.01, yanchor="bottom"),
        updatemenus=[dropdown(buttons, y=1.04, name=tr("show"))],
    )
    fig.update_yaxes(autorange="reversed", row=2, col=1, title_text=tr("position (row)"))
    fig.update_xaxes(
        title_text=tr("feature (column)"), tickangle=-90, row=2, col=1
    )  # on end: a phone's column is narrow
    fig.update_yaxes(title_text=tr("column"), row=1, col=1, range=[-2.5, 4], dtick=2)
    fig.update_xaxes(title_text=tr("row"), row=2, col=2, range=[-2.5, 4], dtick=2, tickangle=0, tickfont=dict(size=10))
    return fig


# ------------------------------------------------------------------------------------------ post-norm versus pre-norm
@dataclass
class DepthStatistics:
    """What flows through an encoder stack at initialisation, per layer (index 0 = the stack's input).

    ``activation_rms``: root mean square of the residual stream after each layer (``n_layers + 1`` values);
    ``input_gradient``: norm of the loss's gradient with respect to that stream (``n_layers + 1`` values);
    ``parameter_gradient``: norm of the gradient of each layer's parameters (``n_layers`` values).
    """

    norm_first: bool
    activation_rms: list[float]
    input_gradient: list[float]
    parameter_gradient: list[float]


def depth_statistics(
    norm_first: bool,
    n_layers: int = 12,
    d_model: int = 64,
    n_heads: int = 4,
    d_ff: int = 256,
    batch: int = 4,
    seq_len: int = 16,
    vocab_size: int = 100,
    seed: int = 0,
) -> DepthStatistics:
    """Run the package's encoder stack once at initialisation on unit-variance inputs (like scaled embeddings plus
    positions), with a linear read-out and a cross-entropy loss on random labels, and record :class:`DepthStatistics`.
    No dropout, so the numbers are deterministic for a seed."""
    config = TransformerConfig(
        vocab_size,
        vocab_size,
        d_model=d_model,
        n_heads=n_heads,
        d_ff=d_ff,
        n_encoder_layers=n_layers,
        n_decoder_layers=0,
        dropout=0.0,
        norm_first=norm_first,
    )
    with seeded(seed):
        encoder, readout = Encoder(config), nn.Linear(d_model, vocab_size)
        x = torch.randn(batch, seq_len, d_model, requires_grad=True)  # (B, T, d_model)
        labels = torch.randint(0, vocab_size, (batch, seq_len))
    stream: list[Tensor] = []

    def keep(module: nn.Module, inputs: tuple, output: tuple) -> None:
        output[0].retain_grad()
        stream.append(output[0])  # (B, T, d_model)

    hooks = [layer.register_forward_hook(keep) for layer in encoder.layers]
    try:
        logits = readout(encoder(x)[0])  # (B, T, V)
        F.cross_entropy(logits.flatten(0, 1), labels.flatten()).backward()
    finally:
        for hook in hooks:
            hook.remove()
    states = [x, *stream]
    return DepthStatistics(
        norm_first=norm_first,
        activation_rms=[s.detach().pow(2).mean().sqrt().item() for s in states],
        input_gradient=[s.grad.norm().item() for s in states],
        parameter_gradient=[
            torch.sqrt(sum(p.grad.pow(2).sum() for p in layer.parameters())).item() for layer in encoder.layers
        ],
    )


def depth_figure(statistics: Sequence[DepthStatistics]) -> go.Figure:
    """Three panels through depth (activation size, gradient reaching each layer, gradient of each layer's weights)
    for post-norm and pre-norm stacks; a dropdown shows both or one of them."""
    titles = (tr("residual stream RMS"), tr("‖∂loss/∂x‖ at each layer's output"), tr("‖∂loss/∂weights‖ of each layer"))
    fig = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.12)
    for stats in statistics:
        colour, name = VARIANT_COLOURS[stats.norm_first], tr(VARIANT_NAMES[stats.norm_first])
        series = (
            (range(len(stats.activation_rms)), stats.activation_rms),
            (range(len(stats.input_gradient)), stats.input_gradient),
            (range(1, len(stats.parameter_gradient) + 1), stats.parameter_gradient),
        )
        for col, (xs, ys) in enumerate(series, start=1):
            fig.add_trace(
                go.Scatter(
                    x=list(xs),
                    y=ys,
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    line=dict(color=colour),
                    marker=dict(size=5),
                    hovertemplate=tr("{name}<br>layer %{{x}}: %{{y:.4g}}<extra></extra>", name=name),
                ),
                row=1,
                col=col,
            )
    n = len(statistics)
    options = [(tr("both"), [True] * n)]
    options += [(tr(VARIANT_NAMES[s.norm_first]), [j == i for j in range(n)]) for i, s in enumerate(statistics)]
    buttons = [
        dict(label=label, method="restyle", args=[{"visible": [v for v in show for _ in range(3)]}])
        for label, show in options
    ]
    style(fig, tr("Post-norm and pre-norm through the depth of the stack"), height=430)
    fig.update_layout(
        margin=dict(l=60, r=20, t=140, b=100),
        legend=dict(orientation="h", x=0.5, xanchor="center", y=-0.28),
        updatemenus=[dropdown(buttons, y=1.22, name=tr("show"))],
    )
    fig.update_annotations(font=dict(size=12))
    for col in (1, 2, 3):
        fig.update_xaxes(title_text=tr("layer (0 = input)") if col < 3 else tr("layer"), row=1, col=col)
    fig.update_yaxes(title_text="RMS", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text=tr("gradient norm"), type="log", row=1, col=2)
    fig.update_yaxes(title_text=tr("gradient norm"), type="log", row=1, col=3)
    return fig


__all__ = [
    "DepthStatistics",
    "depth_figure",
    "depth_statistics",
    "layer_diagram",
    "norm_figure",
    "parameter_explorer",
    "parameter_formula",
    "parameter_sunburst",
    "parameter_tree",
]
