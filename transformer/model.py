"""The encoder and decoder stacks and the full encoder-decoder Transformer."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .attention import KVCache
from .checks import check_decoder_inputs, check_device, check_length, check_mask, check_tokens, checking_inputs
from .config import TransformerConfig
from .embeddings import LearnedPositionalEncoding, SinusoidalPositionalEncoding, TokenEmbedding
from .layers import DecoderLayer, EncoderLayer
from .masks import padding_mask, target_mask


class Encoder(nn.Module):
    """A stack of encoder layers on already embedded inputs, with an optional final layer norm.

    Computes what ``torch.nn.Transformer.encoder`` computes: ``encoder(x (B, S, d_model), mask)[0] -> (B, S,
    d_model)``. Like its layers, it returns the attention weights beside the output (a list of ``None`` unless asked).
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = config
        self.n_heads = c.n_heads
        self.layers = nn.ModuleList(EncoderLayer.from_config(c) for _ in range(c.n_encoder_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.use_final_norm else None

    def forward(
        self, x: Tensor, mask: Tensor | None = None, *, need_weights: bool = False
    ) -> tuple[Tensor, list[Tensor | None]]:
        """``x (B, S, d_model)``, ``mask`` bool broadcastable to ``(B, H, S, S)`` -> ``(x, weights)``: one
        ``(B, H, S, S)`` weight tensor per layer with ``need_weights``, else ``None`` per layer."""
        if mask is not None and checking_inputs():
            check_mask(mask, "src_mask", x.size(0), x.size(1), x.size(1), heads=self.n_heads)
        maps = []
        for layer in self.layers:
            x, weights = layer(x, mask, need_weights=need_weights)
            maps.append(weights)
        if self.norm is not None:
            x = self.norm(x)
        return x, maps  # (B, S, d_model), [(B, H, S, S) or None] * n_layers


@dataclass
class DecoderCache:
    """Everything incremental decoding keeps between steps: per layer, the self-attention keys and values of the
    positions decoded so far and the cross-attention keys and values of the encoder memory."""

    layers: list[tuple[KVCache, KVCache]] = field(default_factory=list)
    length: int = 0

    @classmethod
    def empty(cls, n_layers: int, capacity: int = 0) -> DecoderCache:
        """A cache for ``n_layers`` decoder layers, with room for ``capacity`` target positions (it grows if needed)."""
        return cls([(KVCache(capacity=capacity), KVCache(static=True)) for _ in range(n_layers)])

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` in every layer's cache (beam search)."""
        for self_cache, cross_cache in self.layers:
            self_cache.reorder(index)
            cross_cache.reorder(index)


class Decoder(nn.Module):
    """A stack of decoder layers on already embedded targets, with an optional final layer norm.

    Computes what ``torch.nn.Transformer.decoder`` computes: ``decoder(y (B, T, d_model), memory (B, S, d_model),
    src_mask, tgt_mask)[0] -> (B, T, d_model)``, and returns the self- and cross-attention weights beside it.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = config
        self.n_heads = c.n_heads
        self.layers = nn.ModuleList(DecoderLayer.from_config(c) for _ in range(c.n_decoder_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.use_final_norm else None

    def forward(
        self,
        y: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        *,
        need_weights: bool = False,
        cache: DecoderCache | None = None,
    ) -> tuple[Tensor, list[Tensor | None], list[Tensor | None]]:
        """``y (B, T, d_model)``, ``memory (B, S, d_model)``; ``src_mask`` broadcastable to ``(B, H, T, S)``,
        ``tgt_mask`` to ``(B, H, T, T_total)``. With ``cache``, ``y`` holds only the new positions. Returns ``(y,
        self weights, cross weights)``: per layer ``(B, H, T, T)`` and ``(B, H, T, S)`` with ``need_weights``, else
        ``None``."""
        if checking_inputs():
            past = cache.length if cache is not None else 0
            check_decoder_inputs(y, memory, src_mask, tgt_mask, past, heads=self.n_heads)
        self_maps, cross_maps = [], []
        for i, layer in enumerate(self.layers):
            layer_cache = cache.layers[i] if cache is not None else None
            y, self_weights, cross_weights = layer(
                y, memory, src_mask, tgt_mask, need_weights=need_weights, cache=layer_cache
            )
            self_maps.append(self_weights)
            cross_maps.append(cross_weights)
        if cache is not None:
            cache.length += y.size(1)
        if self.norm is not None:
            y = self.norm(y)
        return y, self_maps, cross_maps  # (B, T, d_model), [(B, H, T, T)], [(B, H, T, S)]


class Transformer(nn.Module):
    """The encoder-decoder Transformer of "Attention Is All You Need".

    ``forward(src (B, S), tgt (B, T)) -> logits (B, T, tgt_vocab_size)``: logits, never probabilities, so that
    ``F.cross_entropy`` applies the (log-)softmax once. Masks default to the padding mask of ``src`` and the padding
    plus causal mask of ``tgt``, built from ``config.pad_id``. ``lm_head`` is the final linear layer that turns the
    decoder's output into a score per target token (the paper's "learned linear transformation", section 3.4).
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig; got {type(config).__name__}")
        self.config = c = config
        self.src_embed = TokenEmbedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = self.src_embed if c.share_embeddings else TokenEmbedding(c.tgt_vocab_size, c.d_model)
        positional = (
            SinusoidalPositionalEncoding if c.positional_encoding == "sinusoidal" else LearnedPositionalEncoding
        )
        self.positional = positional(c.d_model, c.max_positions)
        self.embed_dropout = nn.Dropout(c.dropout)
        self.encoder = Encoder(c)
        self.decoder = Decoder(c)
        self.lm_head = nn.Linear(c.d_model, c.tgt_vocab_size)
        nn.init.xavier_uniform_(self.lm_head.weight)
        nn.init.zeros_(self.lm_head.bias)
        if c.tie_output_embedding:
            self.lm_head.weight = self.tgt_embed.weight

    def embed_source(self, src: Tensor) -> Tensor:
        """``(B, S)`` ids -> ``(B, S, d_model)``: scaled token embedding + position, then dropout."""
        return self.embed_dropout(self.positional(self.src_embed(src)))

    def embed_target(self, tgt: Tensor, offset: int = 0) -> Tensor:
        """``(B, T)`` ids at positions ``offset ..`` -> ``(B, T, d_model)``."""
        return self.embed_dropout(self.positional(self.tgt_embed(tgt), offset))

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``src (B, S)`` -> ``(memory (B, S, d_model), src_mask)``. ``src_mask`` defaults to the padding mask of
        ``src``, ``(B, 1, 1, S)``; it is returned because the decoder's cross-attention needs it too (its keys are the
        source positions)."""
        if checking_inputs():
            self._check_source(src, src_mask)
        if src_mask is None:
            src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        return self.encoder(self.embed_source(src), src_mask)[0], src_mask  # (B, S, d_model)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """``tgt (B, T)``, ``memory (B, S, d_model)`` -> ``(B, T, d_model)``.

        ``src_mask`` should be the source padding mask (``None`` lets every position be seen). Without a cache,
        ``tgt_mask`` defaults to padding + causal. With a :class:`DecoderCache`, ``tgt`` holds only the next
        positions: earlier keys and values come from the cache, so causality holds without a mask.
        """
        offset = cache.length if cache is not None else 0
        if checking_inputs():
            self._check_target(tgt, memory, offset, src_mask=src_mask, tgt_mask=tgt_mask)
        if tgt_mask is None and cache is None:
            tgt_mask = target_mask(tgt, self.config.pad_id)  # (B, 1, T, T)
        y, _, _ = self.decoder(self.embed_target(tgt, offset), memory, src_mask, tgt_mask, cache=cache)
        return y  # (B, T, d_model)

    def forward(
        self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None
    ) -> Tensor:
        """``src (B, S)``, ``tgt (B, T)`` (the decoder input, shifted right) -> logits ``(B, T, tgt_vocab_size)``.

        Masks not given are built from ``config.pad_id``: the source's padding mask, for the encoder's
        self-attention and for the decoder's cross-attention (whose keys are source positions too), and the target's
        padding + causal mask (in :meth:`decode`)."""
        memory, src_mask = self.encode(src, src_mask)  # (B, S, d_model), (B, 1, 1, S)
        return self.lm_head(self.decode(tgt, memory, src_mask, tgt_mask))  # (B, T, V)

    def new_cache(self, capacity: int = 0) -> DecoderCache:
        """An empty cache for incremental decoding with :meth:`decode`, with room for ``capacity`` target positions
        (the longest decoder input expected; it grows if more come)."""
        return DecoderCache.empty(len(self.decoder.layers), capacity)

    @torch.no_grad()
    def attention_maps(
        self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None
    ) -> dict[str, list[Tensor]]:
        """Every attention map, taken before dropout: ``{"encoder": [...], "decoder": [...], "cross": [...]}`` with
        one ``(B, H, T_q, T_k)`` tensor per layer. Select one batch item (``[m[i:i+1] for m in maps["encoder"]]``)
        to pass them to bertviz's ``head_view(encoder_attention=, decoder_attention=, cross_attention=)``."""
        if checking_inputs():
            self._check_source(src, src_mask)
            self._check_target(tgt, src, 0, src_mask=src_mask, tgt_mask=tgt_mask)
        src_mask = padding_mask(src, self.config.pad_id) if src_mask is None else src_mask  # (B, 1, 1, S)
        tgt_mask = target_mask(tgt, self.config.pad_id) if tgt_mask is None else tgt_mask  # (B, 1, T, T)
        memory, encoder_maps = self.encoder(self.embed_source(src), src_mask, need_weights=True)
        _, decoder_maps, cross_maps = self.decoder(
            self.embed_target(tgt), memory, src_mask, tgt_mask, need_weights=True
        )
        return {"encoder": encoder_maps, "decoder": decoder_maps, "cross": cross_maps}

    def num_parameters(self) -> int:
        """Trainable parameters, counting shared (tied) tensors once."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _check_source(self, src: Tensor, src_mask: Tensor | None) -> None:
        check_tokens(src, "src", self.config.src_vocab_size)
        check_length("src", src.size(1), self.config.max_positions)
        check_device(src, "src", self.src_embed.weight.device)
        check_device(src_mask, "src_mask", self.src_embed.weight.device)

    def _check_target(self, tgt: Tensor, source: Tensor, offset: int, **tensors: Tensor | None) -> None:
        """Check the decoder input ``tgt`` and the tensors that go with it; ``source`` is the memory or the source
        ids, whose batch size ``tgt`` must share."""
        check_tokens(tgt, "tgt", self.config.tgt_vocab_size)
        check_length("tgt", offset + tgt.size(1), self.config.max_positions)
        if isinstance(source, Tensor) and source.size(0) != tgt.size(0):
            raise ValueError(f"src and tgt must have the same batch size; got {source.size(0)} and {tgt.size(0)}")
        for name, x in (("tgt", tgt), ("memory", source), *tensors.items()):
            check_device(x, name, self.tgt_embed.weight.device)
