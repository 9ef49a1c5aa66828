"""The original encoder-decoder Transformer ("Attention Is All You Need"), readable and checked against PyTorch."""

from .attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from .config import TransformerConfig
from .embeddings import (
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    sinusoidal_table,
)
from .layers import DecoderLayer, EncoderLayer, FeedForward
from .masks import (
    causal_mask,
    from_hf_attention_mask,
    from_torch_mask,
    key_padding_mask,
    padding_mask,
    padding_mask_from_lengths,
    target_mask,
    to_additive_mask,
    to_torch_mask,
)
from .model import Decoder, DecoderCache, Encoder, Transformer

__all__ = [
    "Decoder",
    "DecoderCache",
    "DecoderLayer",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "KVCache",
    "LearnedPositionalEncoding",
    "MultiHeadAttention",
    "SinusoidalPositionalEncoding",
    "TokenEmbedding",
    "Transformer",
    "TransformerConfig",
    "causal_mask",
    "from_hf_attention_mask",
    "from_torch_mask",
    "key_padding_mask",
    "padding_mask",
    "padding_mask_from_lengths",
    "scaled_dot_product_attention",
    "sinusoidal_table",
    "target_mask",
    "to_additive_mask",
    "to_torch_mask",
]
