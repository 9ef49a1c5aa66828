"""The model's sizes and choices in one validated dataclass."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .checks import check_bool, check_choice, check_heads, check_int, check_positive, check_probability

ACTIVATIONS = ("relu", "gelu")
POSITIONAL_ENCODINGS = ("sinusoidal", "learned")


@dataclass
class TransformerConfig:
    """Everything needed to build a :class:`transformer.Transformer`.

    The defaults are the base model of "Attention Is All You Need" (Vaswani et al., 2017): d_model 512, 8 heads,
    d_ff 2048, 6 + 6 layers, dropout 0.1, post-norm residual blocks.

    ``final_norm`` says whether each stack ends with an extra layer norm. ``None`` picks the usual choice: none for
    post-norm (the paper), one for pre-norm (where the last block's output is otherwise never normalised). ``True``
    reproduces the layout of ``torch.nn.Transformer``, which always adds one.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512  # the paper's base model: width of every token vector
    n_heads: int = 8  # the paper's: 8 heads of d_model // n_heads = 64 dimensions
    d_ff: int = 2048  # the paper's: 4 x d_model inside the feed-forward network
    n_encoder_layers: int = 6  # the paper's
    n_decoder_layers: int = 6  # the paper's
    dropout: float = 0.1  # the paper's rate, on embeddings and sub-layer outputs (and attention weights, as PyTorch)
    max_positions: int = 5000  # rows of the positional table: the longest source or target the model accepts
    norm_first: bool = False  # post-norm, as in the paper; True: pre-norm, which trains without long warm-up
    pad_id: int = 0  # the id whose positions every mask hides (transformer.tokens.PAD_ID)
    final_norm: bool | None = None  # None: a final norm for pre-norm only; True: torch.nn.Transformer's layout
    activation: str = "relu"  # the paper's; "gelu" as in BERT and GPT
    layer_norm_eps: float = 1e-5  # nn.LayerNorm's and nn.Transformer's default
    positional_encoding: str = "sinusoidal"  # the paper's fixed table; "learned": a trained vector per position
    share_embeddings: bool = False  # True: one table for source and target (one shared vocabulary, as the paper's)
    tie_output_embedding: bool = (
        False  # True: the output layer (lm_head) reuses the target embedding, as the paper does
    )

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_positions"):
            check_int(name, getattr(self, name), minimum=1)
        for name in ("n_encoder_layers", "n_decoder_layers"):
            check_int(name, getattr(self, name), minimum=0)
        check_int("pad_id", self.pad_id, minimum=0)
        check_heads(self.d_model, self.n_heads)
        check_probability("dropout", self.dropout)
        for name in ("src_vocab_size", "tgt_vocab_size"):
            if self.pad_id >= getattr(self, name):
                raise ValueError(
                    f"pad_id must be a valid id below {name}={getattr(self, name)}; got pad_id={self.pad_id}"
                )
        for name in ("norm_first", "share_embeddings", "tie_output_embedding"):
            check_bool(name, getattr(self, name))
        check_bool("final_norm", self.final_norm, none_allowed=True)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("positional_encoding", self.positional_encoding, POSITIONAL_ENCODINGS)
        check_positive("layer_norm_eps", self.layer_norm_eps)
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                "share_embeddings needs one vocabulary for source and target; got "
                f"src_vocab_size={self.src_vocab_size}, tgt_vocab_size={self.tgt_vocab_size}"
            )

    @property
    def d_k(self) -> int:
        """Dimensions per attention head."""
        return self.d_model // self.n_heads

    @property
    def use_final_norm(self) -> bool:
        """Whether each stack ends with a layer norm (``final_norm`` resolved)."""
        return self.norm_first if self.final_norm is None else self.final_norm

    def to_dict(self) -> dict:
        return asdict(self)
