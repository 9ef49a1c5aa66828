"""The parameter count of the architecture, written out by component from the sizes alone (no model is built): the
formula the model chapter derives and the pitfalls chapter checks a model against."""

from __future__ import annotations

from transformer.config import TransformerConfig

from .i18n import translatable


def sublayer_parameters(d_model: int, d_ff: int) -> dict[str, int]:
    """Parameters of one sub-layer of each kind: attention (four ``d x d`` projections with biases), the feed-forward
    network (``d -> d_ff -> d`` with biases) and a layer norm (gain and bias)."""
    d, f = d_model, d_ff
    return {"attention": 4 * d * d + 4 * d, "ffn": 2 * d * f + f + d, "norm": 2 * d}


def parameter_formula(config: TransformerConfig) -> dict[str, int]:
    """The parameter count written out by component, from the sizes alone (no model is built).

    Attention has four ``d x d`` projections with biases, the feed-forward network ``d -> d_ff -> d`` with biases, a
    layer norm ``2 d`` (gain and bias). Shared and tied matrices are counted once. The components' names are English
    keys; a chapter shows them through ``tr(name)``.
    """
    c, d = config, config.d_model
    attention, feed_forward, norm = sublayer_parameters(d, c.d_ff).values()
    final = norm if c.use_final_norm else 0
    return {
        translatable("token embeddings"): c.src_vocab_size * d + (0 if c.share_embeddings else c.tgt_vocab_size * d),
        translatable("learned positions"): c.max_positions * d if c.positional_encoding == "learned" else 0,
        translatable("encoder self-attention"): c.n_encoder_layers * attention,
        translatable("encoder feed-forward"): c.n_encoder_layers * feed_forward,
        translatable("encoder layer norms"): c.n_encoder_layers * 2 * norm + final,
        translatable("decoder masked self-attention"): c.n_decoder_layers * attention,
        translatable("decoder cross-attention"): c.n_decoder_layers * attention,
        translatable("decoder feed-forward"): c.n_decoder_layers * feed_forward,
        translatable("decoder layer norms"): c.n_decoder_layers * 3 * norm + final,
        translatable("output projection"): (0 if c.tie_output_embedding else d * c.tgt_vocab_size) + c.tgt_vocab_size,
    }
