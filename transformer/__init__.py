"""The original encoder-decoder Transformer ("Attention Is All You Need"), readable and checked against PyTorch.

``import transformer`` loads the model and what a user of a trained model needs; training and data live in the
wing :mod:`transformer.train`, which this never imports.
"""

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here); training checkpoints record it

from .attention import MultiHeadAttention
from .checkpoint import load_checkpoint, save_checkpoint
from .config import TransformerConfig
from .decoding import beam_search, greedy_decode
from .layers import DecoderLayer, EncoderLayer
from .masks import causal_mask, padding_mask, target_mask
from .model import Transformer

__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "MultiHeadAttention",
    "Transformer",
    "TransformerConfig",
    "beam_search",
    "causal_mask",
    "greedy_decode",
    "load_checkpoint",
    "padding_mask",
    "save_checkpoint",
    "target_mask",
]
