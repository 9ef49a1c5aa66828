"""The introduction's architecture diagram, and the model built on the meta device for counting."""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from transformer.config import TransformerConfig
from transformer.model import Transformer

from ..i18n import tr

# Block colours, close to the paper's figure 1.
COLOURS = {
    "embed": "#f8d7da",
    "position": "#e2e3e5",
    "attention": "#fde2c4",
    "norm": "#fff3bf",
    "ffn": "#cfe2f3",
    "output": "#d4edda",
    "tokens": "#ffffff",
}


def meta_model(config: TransformerConfig) -> Transformer:
    """The model built on PyTorch's meta device: real modules and shapes, no memory, no initialisation cost."""
    with torch.device("meta"):
        return Transformer(config)


def _block_params(model: Transformer) -> dict[str, int]:
    c = model.config
    enc, dec = model.encoder.layers, model.decoder.layers

    def n(module: torch.nn.Module | None) -> int:
        return sum(p.numel() for p in module.parameters()) if module is not None else 0

    def per_stack(layers: torch.nn.ModuleList, attr: str) -> int:
        return sum(n(getattr(layer, attr)) for layer in layers)

    norms = lambda layers: sum(
        n(m) for layer in layers for name, m in layer.named_children() if name.startswith("norm")
    )
    return {
        "src_embed": n(model.src_embed),
        "tgt_embed": 0 if c.share_embeddings else n(model.tgt_embed),
        "enc_attn": per_stack(enc, "self_attn"),
        "enc_ffn": per_stack(enc, "feed_forward"),
        "enc_norm": norms(enc),
        "dec_attn": per_stack(dec, "self_attn"),
        "dec_cross": per_stack(dec, "cross_attn"),
        "dec_ffn": per_stack(dec, "feed_forward"),
        "dec_norm": norms(dec),
        "lm_head": model.lm_head.bias.numel() + (0 if c.tie_output_embedding else model.lm_head.weight.numel()),
    }


def arrow(x0: float, y0: float, x1: float, y1: float, colour: str = "#555") -> dict:
    """A plotly annotation drawing an arrow from ``(x0, y0)`` to ``(x1, y1)`` in data coordinates (the diagrams' edges)."""
    return dict(
        x=x1,
        y=y1,
        ax=x0,
        ay=y0,
        xref="x",
        yref="y",
        axref="x",
        ayref="y",
        text="",
        showarrow=True,
        arrowhead=2,
        arrowsize=1.2,
        arrowwidth=1.4,
        arrowcolor=colour,
    )


def architecture_figure(config: TransformerConfig) -> go.Figure:
    """The encoder-decoder drawn with plotly shapes, labelled from ``config``; hover a block for its details.

    Post-norm (the paper) puts "Add & Norm" after each sub-layer, as drawn; pre-norm moves the norm to the front of
    each sub-layer's branch (a note in the figure says which one ``config`` uses).
    """
    c = config
    p = _block_params(meta_model(config))
    fmt = lambda k: tr("{n:,} parameters", n=p[k]) if p[k] else tr("no parameters of its own")
    in_layers = lambda k, n: tr("{parameters} in {n} layers", parameters=fmt(k), n=n)
    norm_kind = (
        tr("pre-norm: x + Sublayer(LayerNorm(x))") if c.norm_first else tr("post-norm: LayerNorm(x + Sublayer(x))")
    )
    positions = tr("+ sinusoidal positions") if c.positional_encoding == "sinusoidal" else tr("+ learned positions")
    fig = go.Figure()
    width = 3.6

    def block(xc: float, y0: float, y1: float, label: str, colour: str, hover: str, chapter: str = "") -> None:
        xs = [xc - width / 2, xc + width / 2, xc + width / 2, xc - width / 2, xc - width / 2]
        ys = [y0, y0, y1, y1, y0]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                fill="toself",
                fillcolor=colour,
                mode="lines",
                line=dict(color="#555", width=1.2),
                hoveron="fills",
                hoverinfo="text",
                showlegend=False,
                text=f"<b>{label}</b><br>{hover}" + (f"<br><i>{chapter}</i>" if chapter else ""),
            )
        )
        fig.add_annotation(x=xc, y=(y0 + y1) / 2, text=label, showarrow=False, font=dict(size=13, color="#222"))

    enc_x, dec_x = 2.6, 7.6
    # Inputs, embeddings, positions.
    for xc, tokens, what, embed_key in (
        (enc_x, tr("source tokens (B, S)"), "src", "src_embed"),
        (dec_x, tr("target tokens, shifted right (B, T)"), "tgt", "tgt_embed"),
    ):
        ids = tr("integer ids, padded with pad_id={pad_id}", pad_id=c.pad_id)
        block(xc, 0.0, 0.7, tokens, COLOURS["tokens"], ids, tr("Chapter: Masks"))
        shared = tr(" (shared with the source)") if what == "tgt" and c.share_embeddings else ""
        block(
            xc,
            1.2,
            1.9,
            tr("token embedding × √{d_model}", d_model=c.d_model),
            COLOURS["embed"],
            f"(B, {'S' if what == 'src' else 'T'}) → (B, {'S' if what == 'src' else 'T'}, {c.d_model}){shared}<br>"
            f"{fmt(embed_key)}",
            tr("Chapter: Embeddings"),
        )
        block(
            xc,
            2.4,
            3.1,
            positions,
            COLOURS["position"],
            tr("adds position information, max_positions={n}", n=c.max_positions),
            tr("Chapter: Positional encoding"),
        )
        fig.add_annotation(arrow(xc, 0.7, xc, 1.2))
        fig.add_annotation(arrow(xc, 1.9, xc, 2.4))
        fig.add_annotation(arrow(xc, 3.1, xc, 3.75))

    # Encoder stack.
    ne, nd = c.n_encoder_layers, c.n_decoder_layers
    fig.add_shape(
        type="rect",
        x0=enc_x - 2.3,
        x1=enc_x + 2.3,
        y0=3.75,
        y1=8.55,
        line=dict(color="#888", dash="dot"),
        fillcolor="rgba(0,0,0,0.03)",
        layer="below",
    )
    fig.add_annotation(x=enc_x - 2.4, y=6.15, text=f"{ne} ×", showarrow=False, xanchor="right", font=dict(size=15))
    fig.add_annotation(
        x=enc_x - 2.25, y=8.8, text=f"<b>{tr('Encoder')}</b>", showarrow=False, xanchor="left", font=dict(size=14)
    )
    block(
        enc_x,
        4.0,
        4.8,
        tr("multi-head self-attention"),
        COLOURS["attention"],
        tr("{h} heads of d_k={d_k}, padding mask on the keys", h=c.n_heads, d_k=c.d_k)
        + f"<br>{in_layers('enc_attn', ne)}",
        tr("Chapter: Attention"),
    )
    block(
        enc_x,
        5.1,
        5.6,
        tr("add & layer norm"),
        COLOURS["norm"],
        tr("residual + LayerNorm({d_model})", d_model=c.d_model)
        + f", {norm_kind}<br>"
        + tr("{parameters} (all norms, {n} layers)", parameters=fmt("enc_norm"), n=ne),
        tr("Chapter: The full model"),
    )
    block(
        enc_x,
        6.2,
        7.0,
        tr("feed-forward"),
        COLOURS["ffn"],
        tr(
            "{d_model} → {d_ff} → {d_model}, {activation}, each position alone",
            d_model=c.d_model,
            d_ff=c.d_ff,
            activation=c.activation,
        )
        + f"<br>{in_layers('enc_ffn', ne)}",
        tr("Chapter: The full model"),
    )
    block(
        enc_x,
        7.3,
        7.8,
        tr("add & layer norm"),
        COLOURS["norm"],
        tr("residual + LayerNorm({d_model})", d_model=c.d_model),
        tr("Chapter: The full model"),
    )
    for y0, y1 in ((4.8, 5.1), (5.6, 6.2), (7.0, 7.3)):
        fig.add_annotation(arrow(enc_x, y0, enc_x, y1))

    # Decoder stack.
    fig.add_shape(
        type="rect",
        x0=dec_x - 2.3,
        x1=dec_x + 2.3,
        y0=3.75,
        y1=11.05,
        line=dict(color="#888", dash="dot"),
        fillcolor="rgba(0,0,0,0.03)",
        layer="below",
    )
    fig.add_annotation(x=dec_x + 2.4, y=7.4, text=f"× {nd}", showarrow=False, xanchor="left", font=dict(size=15))
    fig.add_annotation(
        x=dec_x - 2.25, y=11.3, text=f"<b>{tr('Decoder')}</b>", showarrow=False, xanchor="left", font=dict(size=14)
    )
    block(
        dec_x,
        4.0,
        4.8,
        tr("masked self-attention"),
        COLOURS["attention"],
        tr("causal + padding mask: position t sees 0..t") + f"<br>{in_layers('dec_attn', nd)}",
        tr("Chapters: Masks, Attention"),
    )
    block(
        dec_x,
        5.1,
        5.6,
        tr("add & layer norm"),
        COLOURS["norm"],
        tr("residual + LayerNorm({d_model})", d_model=c.d_model)
        + f", {norm_kind}<br>"
        + tr("{parameters} (all norms, {n} layers)", parameters=fmt("dec_norm"), n=nd),
        tr("Chapter: The full model"),
    )
    block(
        dec_x,
        6.2,
        7.0,
        tr("cross-attention"),
        COLOURS["attention"],
        tr("queries from the decoder, keys and values from the encoder's memory (B, S, {d_model})", d_model=c.d_model)
        + f"<br>{in_layers('dec_cross', nd)}",
        tr("Chapter: Attention"),
    )
    block(
        dec_x,
        7.3,
        7.8,
        tr("add & layer norm"),
        COLOURS["norm"],
        tr("residual + LayerNorm({d_model})", d_model=c.d_model),
        tr("Chapter: The full model"),
    )
    block(
        dec_x,
        8.4,
        9.2,
        tr("feed-forward"),
        COLOURS["ffn"],
        f"{c.d_model} → {c.d_ff} → {c.d_model}, {c.activation}<br>{in_layers('dec_ffn', nd)}",
        tr("Chapter: The full model"),
    )
    block(
        dec_x,
        9.5,
        10.0,
        tr("add & layer norm"),
        COLOURS["norm"],
        tr("residual + LayerNorm({d_model})", d_model=c.d_model),
        tr("Chapter: The full model"),
    )
    for y0, y1 in ((4.8, 5.1), (5.6, 6.2), (7.0, 7.3), (7.8, 8.4), (9.2, 9.5)):
        fig.add_annotation(arrow(dec_x, y0, dec_x, y1))
    # Memory: encoder output into every decoder layer's cross-attention.
    # The label above the line that leaves the encoder (beside it, a narrow screen's line ran through its words).
    fig.add_annotation(
        x=enc_x,
        y=9.45,
        yanchor="bottom",
        yshift=2,
        text=tr("memory (B, S, {d_model})", d_model=c.d_model),
        showarrow=False,
        font=dict(size=12, color="#444"),
    )
    fig.add_annotation(arrow(enc_x, 7.8, enc_x, 9.2))
    bend = dec_x - 2.55
    fig.add_shape(
        type="path", path=f"M {enc_x},9.2 L {enc_x},9.45 L {bend},9.45 L {bend},6.6", line=dict(color="#555", width=1.4)
    )
    fig.add_annotation(arrow(bend, 6.6, dec_x - width / 2, 6.6))

    # Output.
    tied = tr(" (weights tied to the target embedding)") if c.tie_output_embedding else ""
    block(
        dec_x,
        11.6,
        12.3,
        tr("linear → logits (B, T, {vocab})", vocab=c.tgt_vocab_size),
        COLOURS["output"],
        tr("one score per vocabulary entry") + f"{tied}<br>{fmt('lm_head')}",
        tr("Chapter: The full model"),
    )
    block(
        dec_x,
        12.8,
        13.5,
        tr("softmax: in the loss or when decoding"),
        "#ffffff",
        tr("never inside the model: cross_entropy applies log-softmax itself"),
        tr("Chapters: Training, Decoding"),
    )
    fig.add_annotation(arrow(dec_x, 10.0, dec_x, 11.6))
    fig.add_annotation(arrow(dec_x, 12.3, dec_x, 12.8))

    fig.update_layout(
        title=dict(
            text=tr("The Transformer: the encoder (left), the decoder (right)"),
            x=0.02,
            xanchor="left",
            font=dict(size=16),
        ),
        height=800,
        margin=dict(l=10, r=10, t=50, b=10),
        plot_bgcolor="white",
        paper_bgcolor="white",
        xaxis=dict(visible=False, range=[-0.2, 10.4], fixedrange=True),
        yaxis=dict(visible=False, range=[-0.3, 13.8], fixedrange=True),
        hoverlabel=dict(align="left"),
        dragmode=False,
    )
    return fig
