"""Weights from PyTorch's own modules, so that the package can be checked against them.

``copy_from_torch(ours, theirs)`` copies every weight of a ``torch.nn.Transformer`` (``batch_first=True``) into a
:class:`~transformer.Transformer`'s encoder and decoder stacks, or of one ``nn.MultiheadAttention`` into one
:class:`~transformer.MultiHeadAttention`. Embeddings, positional encoding and the output projection are not part of
``nn.Transformer`` and are left alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .layers import DecoderLayer, EncoderLayer
from .model import Decoder, Encoder, Transformer


def copy_from_torch(model: nn.Module, reference: nn.Module) -> nn.Module:
    """Copy ``reference``'s weights into ``model`` and return ``model``. Raises ``ValueError`` naming the first
    size, layer count or layout that differs, and ``TypeError`` for an unsupported pair of modules."""
    pairs = (
        (Transformer, nn.Transformer, _copy_transformer),
        (Encoder, nn.TransformerEncoder, lambda ours, theirs: _copy_stack("encoder", ours, theirs)),
        (Decoder, nn.TransformerDecoder, lambda ours, theirs: _copy_stack("decoder", ours, theirs)),
        (MultiHeadAttention, nn.MultiheadAttention, _copy_attention),
    )
    for ours, theirs, copy in pairs:
        if isinstance(model, ours) and isinstance(reference, theirs):
            with torch.no_grad():
                copy(model, reference)
            return model
    raise TypeError(
        "copy_from_torch copies nn.Transformer -> Transformer, nn.TransformerEncoder -> Encoder, "
        "nn.TransformerDecoder -> Decoder or nn.MultiheadAttention -> MultiHeadAttention; "
        f"got {type(reference).__name__} -> {type(model).__name__}"
    )


def _copy_transformer(model: Transformer, reference: nn.Transformer) -> None:
    _copy_stack("encoder", model.encoder, reference.encoder)
    _copy_stack("decoder", model.decoder, reference.decoder)


def _copy_stack(name: str, model: Encoder | Decoder, reference: nn.Module) -> None:
    _expect(f"number of {name} layers", len(model.layers), len(reference.layers))
    for ours, theirs in zip(model.layers, reference.layers, strict=True):
        _copy_layer(ours, theirs)
    _copy_norm(model.norm, reference.norm)


def _copy_layer(ours: EncoderLayer | DecoderLayer, theirs: nn.Module) -> None:
    """An encoder or a decoder layer: the self-attention, the cross-attention (decoder only, PyTorch's
    ``multihead_attn``), the feed-forward network and every norm."""
    _check_layer(ours, theirs)
    _copy_attention(ours.self_attn, theirs.self_attn)
    if isinstance(ours, DecoderLayer):
        _copy_attention(ours.cross_attn, theirs.multihead_attn)
    _copy_feed_forward(ours, theirs)
    for name in ("norm1", "norm2", "norm3")[: 3 if isinstance(ours, DecoderLayer) else 2]:
        _copy_norm(getattr(ours, name), getattr(theirs, name))


def _copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    _expect("embed_dim", ours.d_model, theirs.embed_dim)
    _expect("num_heads", ours.n_heads, theirs.num_heads)
    if not theirs._qkv_same_embed_dim:
        raise ValueError("the reference attention has kdim/vdim different from embed_dim, which this package lacks")
    if theirs.bias_k is not None:
        raise ValueError("the reference attention was built with add_bias_kv=True, which this package lacks")
    _expect("attention bias", ours.in_proj.bias is not None, theirs.in_proj_bias is not None)
    ours.in_proj.weight.copy_(theirs.in_proj_weight)
    ours.out_proj.weight.copy_(theirs.out_proj.weight)
    if ours.in_proj.bias is not None:
        ours.in_proj.bias.copy_(theirs.in_proj_bias)
        ours.out_proj.bias.copy_(theirs.out_proj.bias)


def _copy_feed_forward(ours: EncoderLayer | DecoderLayer, theirs: nn.Module) -> None:
    _expect("dim_feedforward", ours.feed_forward.linear1.out_features, theirs.linear1.out_features)
    for name in ("linear1", "linear2"):
        getattr(ours.feed_forward, name).weight.copy_(getattr(theirs, name).weight)
        getattr(ours.feed_forward, name).bias.copy_(getattr(theirs, name).bias)


def _copy_norm(ours: nn.LayerNorm | None, theirs: nn.LayerNorm | None) -> None:
    if (ours is None) != (theirs is None):
        raise ValueError(
            f"final layer norm: the model {'has none' if ours is None else 'has one'} but the reference "
            f"{'has none' if theirs is None else 'has one'}; set TransformerConfig(final_norm=...) to match"
        )
    if ours is not None:
        _expect("layer_norm_eps", ours.eps, theirs.eps)
        ours.weight.copy_(theirs.weight)
        ours.bias.copy_(theirs.bias)


def _check_layer(ours: EncoderLayer | DecoderLayer, theirs: nn.Module) -> None:
    if not theirs.self_attn.batch_first:
        raise ValueError("the reference must be built with batch_first=True, as this package's tensors are (B, T, C)")
    _expect("norm_first", ours.norm_first, theirs.norm_first)
    theirs_activation = _activation_name(theirs.activation)
    if theirs_activation is None:
        raise ValueError(
            f"the reference layer's activation {theirs.activation!r} is not one this package has (relu or exact gelu, "
            "as a string, F.relu/F.gelu or nn.ReLU/nn.GELU): its outputs could not match"
        )
    _expect("activation", ours.feed_forward.activation.__name__, theirs_activation)


def _activation_name(activation: object) -> str | None:
    """``"relu"`` or ``"gelu"`` for the activations this package has, ``None`` for any other callable. (Read from the
    callable: ``activation_relu_or_gelu`` is 0 for custom callables, and decoder layers do not set it at all.)"""
    if activation is F.relu or isinstance(activation, nn.ReLU):
        return "relu"
    if activation is F.gelu or (isinstance(activation, nn.GELU) and activation.approximate == "none"):
        return "gelu"
    return None


def _expect(what: str, ours: object, theirs: object) -> None:
    if ours != theirs:
        raise ValueError(f"{what} differs: the model has {ours!r}, the reference has {theirs!r}")
