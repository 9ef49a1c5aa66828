"""The mistakes that widely read Transformer write-ups ship, reproduced on purpose, and the checks that catch them
(the chapter "Pitfalls", book/12_pitfalls.ipynb), in three modules:

- :mod:`.variants`: the faulty variants, DELIBERATELY WRONG, each the package's own code with the smallest change
  that reproduces one mistake of public code and tutorials (each docstring names its source), and whole models with
  one mistake built in (:func:`build_model`);
- :mod:`.checks`: short checks a reader could have written, each failing on a faulty variant and passing on the
  package (:func:`run_check` runs one);
- :mod:`.cases`: the catalogue, :data:`CASES`: every (mistake, faulty variant, correct version, check).

The chapter reads them as ``from transformer_book import pitfalls as P``: the names below are that interface.
"""

from .cases import CASES, cross_mask_from_source
from .checks import (
    check_causal_mask_builder,
    check_decoder_is_causal,
    check_loss_gradient,
    check_loss_ignores_padding,
    check_matches_per_head_attention,
    check_padding_is_invisible,
    check_parameter_count,
    check_runs_in_half_precision,
    check_runs_on_another_device,
    check_runs_on_the_cpu,
    check_snippet_runs,
    check_source_padding_is_invisible,
    run_check,
    small_model,
)
from .variants import (
    MODEL_MISTAKES,
    SNIPPETS,
    AttentionGivenTheFunction,
    ConvFeedForwardWrongShape,
    CudaLayerNormPerCall,
    EncoderLayerPassesFunction,
    FreshLayerNormPerCall,
    GlobalSizesAttention,
    SharedAttentionDecoderLayer,
    SplitHeadsWithoutTranspose,
    StdPlusEpsLayerNorm,
    WrongScaleAttention,
    attention_if_mask,
    attention_step,
    attention_with_fill,
    attention_with_tensor_scale,
    build_model,
    cross_mask_from_target,
    d_k,
    double_softmax_logits,
    fresh_layer_norm_per_call,
    multiply_mask_attention,
    n_heads,
    replace_attention,
    share_cross_attention,
)

__all__ = [
    "AttentionGivenTheFunction",
    "CASES",
    "ConvFeedForwardWrongShape",
    "CudaLayerNormPerCall",
    "EncoderLayerPassesFunction",
    "FreshLayerNormPerCall",
    "GlobalSizesAttention",
    "MODEL_MISTAKES",
    "SNIPPETS",
    "SharedAttentionDecoderLayer",
    "SplitHeadsWithoutTranspose",
    "StdPlusEpsLayerNorm",
    "WrongScaleAttention",
    "attention_if_mask",
    "attention_step",
    "attention_with_fill",
    "attention_with_tensor_scale",
    "build_model",
    "check_causal_mask_builder",
    "check_decoder_is_causal",
    "check_loss_gradient",
    "check_loss_ignores_padding",
    "check_matches_per_head_attention",
    "check_padding_is_invisible",
    "check_parameter_count",
    "check_runs_in_half_precision",
    "check_runs_on_another_device",
    "check_runs_on_the_cpu",
    "check_snippet_runs",
    "check_source_padding_is_invisible",
    "cross_mask_from_source",
    "cross_mask_from_target",
    "d_k",
    "double_softmax_logits",
    "fresh_layer_norm_per_call",
    "multiply_mask_attention",
    "n_heads",
    "replace_attention",
    "run_check",
    "share_cross_attention",
    "small_model",
]
