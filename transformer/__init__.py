"""The original encoder-decoder Transformer ("Attention Is All You Need"), readable and checked against PyTorch."""

from .attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from .checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from .config import TransformerConfig
from .data import BOS_ID, EOS_ID, PAD_ID, TASKS, Batch, make_batch, random_sequences, task_batch, task_target
from .decoding import beam_search, greedy_decode, greedy_steps
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
from .training import (
    EvalResult,
    History,
    TrainConfig,
    evaluate,
    evaluate_batches,
    noam_scheduler,
    sequence_loss,
    small_model_config,
    train,
    train_task,
)
from .utils import seed_everything, select_device

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "PAD_ID",
    "TASKS",
    "Batch",
    "EvalResult",
    "History",
    "TrainConfig",
    "beam_search",
    "evaluate",
    "evaluate_batches",
    "greedy_decode",
    "greedy_steps",
    "load_checkpoint",
    "make_batch",
    "noam_scheduler",
    "random_sequences",
    "read_checkpoint",
    "save_checkpoint",
    "seed_everything",
    "select_device",
    "sequence_loss",
    "small_model_config",
    "task_batch",
    "task_target",
    "train",
    "train_task",
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
