"""Export for serving: the encoder and one decoder step as ONNX graphs with dynamic batch and lengths.

Two graphs, as a browser or a server decodes: ``encoder.onnx`` runs once per source, ``decoder_step.onnx`` once per
generated token (it re-reads the whole target so far: no cache to carry between calls). Both return their attention
weights, taken before dropout, and take a head mask (1 keeps a head, 0 silences it) so that a page can ablate heads.

=================  =====================================================  ================================================
graph              inputs                                                 outputs
=================  =====================================================  ================================================
``encoder``        ``src (B, S)`` int64, ``head_mask (L_enc, H)`` float   ``memory (B, S, d_model)``,
                                                                          ``attention (L_enc, B, H, S, S)``
``decoder_step``   ``tgt (B, T)`` int64 (BOS + ids so far),               ``logits (B, V)`` for the next token,
                   ``memory (B, S, d_model)``, ``src_mask (B, S)`` bool   ``self_attention (L_dec, B, H, T, T)``,
                   (True = real token), ``self_head_mask (L_dec, H)``,    ``cross_attention (L_dec, B, H, T, S)``
                   ``cross_head_mask (L_dec, H)`` float
=================  =====================================================  ================================================
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor, nn
from torch.export import Dim

from .attention import masked_heads
from .masks import padding_mask, target_mask
from .model import Transformer
from .utils import eval_mode


class EncoderGraph(nn.Module):
    """``model``'s encoder as one graph: source ids in, memory and every self-attention map out."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model
        self.train(model.training)

    def forward(self, src: Tensor, head_mask: Tensor) -> tuple[Tensor, Tensor]:
        model = self.model
        src_mask = padding_mask(src, model.config.pad_id)  # (B, 1, 1, S)
        with masked_heads([layer.self_attn for layer in model.encoder.layers], head_mask):
            memory, maps = model.encoder(model.embed_source(src), src_mask, need_weights=True)
        return memory, torch.stack(maps)  # (B, S, d_model), (L, B, H, S, S)


class DecoderStepGraph(nn.Module):
    """One decoding step of ``model`` as one graph: the target so far in, the next token's logits and every self-
    and cross-attention map out."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model
        self.train(model.training)

    def forward(
        self, tgt: Tensor, memory: Tensor, src_mask: Tensor, self_head_mask: Tensor, cross_head_mask: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        model, layers = self.model, self.model.decoder.layers
        tgt_mask = target_mask(tgt, model.config.pad_id)  # (B, 1, T, T)
        with (
            masked_heads([layer.self_attn for layer in layers], self_head_mask),
            masked_heads([layer.cross_attn for layer in layers], cross_head_mask),
        ):
            y, self_maps, cross_maps = model.decoder(
                model.embed_target(tgt), memory, src_mask[:, None, None, :], tgt_mask, need_weights=True
            )
        logits = model.lm_head(y[:, -1])  # (B, V): the next token's scores
        return logits, torch.stack(self_maps), torch.stack(cross_maps)  # (L, B, H, T, T), (L, B, H, T, S)


def export_onnx(model: Transformer, path_prefix: str | Path) -> tuple[Path, Path]:
    """Write ``encoder.onnx`` and ``decoder_step.onnx`` into the folder ``path_prefix`` (created if needed) and
    return their paths. Batch size and lengths are dynamic (up to ``config.max_positions``); the weights are exported
    in evaluation mode (no dropout) on the model's device and dtype."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer.Transformer; got {type(model).__name__}")
    c = model.config
    if c.n_encoder_layers < 1 or c.n_decoder_layers < 1:
        raise ValueError(
            f"export needs at least one encoder and one decoder layer; got {c.n_encoder_layers} and {c.n_decoder_layers}"
        )
    folder = Path(path_prefix)
    folder.mkdir(parents=True, exist_ok=True)
    device = next(model.parameters()).device
    batch = Dim("batch", min=1, max=1024)
    src_len = Dim("src_len", min=1, max=c.max_positions)
    tgt_len = Dim("tgt_len", min=1, max=c.max_positions)
    src = torch.full((2, 5), c.pad_id + 1, device=device)  # example inputs; any valid ids of these shapes would do
    tgt = torch.full((2, 3), c.pad_id + 1, device=device)
    encoder_heads = torch.ones(c.n_encoder_layers, c.n_heads, device=device)
    decoder_heads = torch.ones(
        c.n_decoder_layers, c.n_heads, device=device
    )  # cloned for the second mask: distinct inputs
    with eval_mode(model), torch.no_grad():
        memory, _ = EncoderGraph(model)(src, encoder_heads)
        encoder_path = folder / "encoder.onnx"
        decoder_path = folder / "decoder_step.onnx"
        export_graph(
            EncoderGraph(model),
            (src, encoder_heads),
            encoder_path,
            inputs=["src", "head_mask"],
            outputs=["memory", "attention"],
            dynamic_shapes={"src": {0: batch, 1: src_len}, "head_mask": None},
        )
        export_graph(
            DecoderStepGraph(model),
            (tgt, memory, src != c.pad_id, decoder_heads, decoder_heads.clone()),
            decoder_path,
            inputs=["tgt", "memory", "src_mask", "self_head_mask", "cross_head_mask"],
            outputs=["logits", "self_attention", "cross_attention"],
            dynamic_shapes={
                "tgt": {0: batch, 1: tgt_len},
                "memory": {0: batch, 1: src_len},
                "src_mask": {0: batch, 1: src_len},
                "self_head_mask": None,
                "cross_head_mask": None,
            },
        )
    return encoder_path, decoder_path


def export_graph(
    graph: nn.Module, args: tuple[Tensor, ...], path: Path, inputs: list[str], outputs: list[str], dynamic_shapes: dict
) -> None:
    """Write ``graph`` (called on the example ``args``) to ``path`` as one ONNX file, through ``torch.export``
    (``dynamo=True``), its inputs and outputs named, the sizes ``dynamic_shapes`` names left free: how every graph of
    the book is exported (the encoder-decoder's above, the GPT-style model's in ``transformer_book.playground_gpt``)."""
    program = torch.onnx.export(
        graph,
        args,
        dynamo=True,
        input_names=inputs,
        output_names=outputs,
        dynamic_shapes=dynamic_shapes,
        external_data=False,
        verbose=False,
    )
    program.save(str(path))
