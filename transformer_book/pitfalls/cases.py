"""The catalogue of the chapter "Pitfalls" (book/12_pitfalls.ipynb): every mistake, its faulty variant(s) from
:mod:`.variants`, the correct version and the check from :mod:`.checks` that tells them apart (:data:`CASES`;
``tests/kit/test_pitfalls.py`` runs every check on both)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from torch import Tensor, nn

from transformer.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer.embeddings import sinusoidal_table
from transformer.layers import EncoderLayer, FeedForward
from transformer.masks import causal_mask, padding_mask
from transformer.model import Transformer
from transformer.tokens import PAD_ID
from transformer.utils import seeded
from transformer_book.i18n import translatable

from .checks import (
    check_causal_mask_builder,
    check_decoder_is_causal,
    check_feed_forward,
    check_loss_gradient,
    check_matches_per_head_attention,
    check_matches_torch_layer_norm,
    check_padding_is_invisible,
    check_padding_mask_hides_pad_keys,
    check_parameter_count,
    check_query_with_nothing_to_see,
    check_runs_in_half_precision,
    check_runs_on_another_device,
    check_runs_on_the_cpu,
    check_scores_have_unit_variance,
    check_sinusoidal_table,
    check_snippet_runs,
    check_source_padding_is_invisible,
    small_model,
)
from .variants import (
    FFN_DIM_TYPO,
    SNIPPETS,
    ConvFeedForwardWrongShape,
    CudaLayerNormPerCall,
    EncoderLayerPassesFunction,
    GlobalSizesAttention,
    IfMaskAttention,
    MultiplyMaskAttention,
    SplitHeadsWithoutTranspose,
    StdPlusEpsLayerNorm,
    WrongScaleAttention,
    attention_with_fill,
    attention_with_tensor_scale,
    cross_mask_from_target,
    double_softmax_logits,
    fresh_layer_norm_per_call,
    padding_mask_true_is_pad,
    replace_attention,
    share_cross_attention,
    sinusoidal_table_base_1000,
    uint8_subsequent_mask,
)


def _attention(cls: type[MultiHeadAttention] = MultiHeadAttention, d_model: int = 64, n_heads: int = 8, **kw):
    with seeded(0):
        return cls(d_model, n_heads, **kw)


def _model_with(cls: type[MultiHeadAttention]) -> Transformer:
    return replace_attention(small_model(), cls)


def _encoder_layer(cls: type[EncoderLayer]) -> EncoderLayer:
    with seeded(0):
        return cls(16, 2, 32, dropout=0.0)


def cross_mask_from_source(src: Tensor, tgt: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """The correct counterpart of :func:`cross_mask_from_target`: the keys of
    cross-attention are source positions, so the mask comes from the source, as the
    package's :class:`~transformer.Transformer` builds it. ``(B, 1, 1, S)``."""
    return padding_mask(src, pad_id)


@dataclass(frozen=True)
class Case:
    """One faulty variant of one mistake: ``check(faulty())`` fails with ``error``,
    ``check(correct())`` passes."""

    mistake: int
    name: str
    faulty: Callable[[], object]
    correct: Callable[[], object]
    check: Callable[[object], None]
    error: type[Exception] | tuple[type[Exception], ...] = AssertionError


CASES: list[Case] = [
    Case(
        1,
        translatable("heads split without transpose"),
        lambda: _attention(SplitHeadsWithoutTranspose),
        lambda: _attention(),
        check_matches_per_head_attention,
    ),
    Case(
        1,
        translatable("heads split without transpose (whole model)"),
        lambda: _model_with(SplitHeadsWithoutTranspose),
        small_model,
        check_decoder_is_causal,
    ),
    Case(
        2,
        translatable("`if mask:` on a tensor"),
        lambda: _model_with(IfMaskAttention),
        small_model,
        check_decoder_is_causal,
        RuntimeError,
    ),
    Case(
        3,
        translatable("scale by sqrt(d_model)"),
        lambda: _attention(WrongScaleAttention, 512, 8, score_dim="d_model"),
        lambda: _attention(MultiHeadAttention, 512, 8),
        check_scores_have_unit_variance,
    ),
    Case(
        3,
        translatable("scale by sqrt(d_k // h)"),
        lambda: _attention(WrongScaleAttention, 512, 8, score_dim="d_k // n_heads"),
        lambda: _attention(MultiHeadAttention, 512, 8),
        check_scores_have_unit_variance,
    ),
    Case(
        4,
        translatable("cross-attention shares self-attention"),
        lambda: share_cross_attention(small_model()),
        small_model,
        check_parameter_count,
    ),
    Case(
        5,
        translatable("second convolution declared (d_model, d_ff)"),
        lambda: ConvFeedForwardWrongShape(512, 2048),
        lambda: FeedForward(512, 2048),
        check_feed_forward,
        RuntimeError,
    ),
    Case(
        5,
        translatable("ffn_dim=2018"),
        lambda: FeedForward(512, FFN_DIM_TYPO),
        lambda: FeedForward(512, 2048),
        check_feed_forward,
    ),
    Case(
        6,
        translatable("softmax in the model, log-softmax in the loss"),
        lambda: double_softmax_logits,
        lambda: lambda logits: logits,
        check_loss_gradient,
    ),
    Case(
        7,
        translatable("fresh LayerNorm per call"),
        lambda: fresh_layer_norm_per_call(small_model()),
        small_model,
        check_parameter_count,
    ),
    Case(
        7,
        translatable("hard-coded .cuda()"),
        lambda: CudaLayerNormPerCall(16),
        lambda: nn.LayerNorm(16),
        check_runs_on_the_cpu,
        (AssertionError, RuntimeError),  # no CUDA at all / a GPU, input on the CPU
    ),
    Case(
        7,
        translatable("scale as a 1-element CPU tensor"),
        lambda: attention_with_tensor_scale,
        lambda: scaled_dot_product_attention,
        check_runs_on_another_device,
        RuntimeError,
    ),
    Case(
        8,
        translatable("cross-attention mask from the target"),
        lambda: cross_mask_from_target,
        lambda: cross_mask_from_source,
        check_source_padding_is_invisible,
    ),
    Case(
        8,
        translatable("the function padding_mask passed as the mask"),
        lambda: _encoder_layer(EncoderLayerPassesFunction),
        lambda: _encoder_layer(EncoderLayer),
        check_padding_is_invisible,
        TypeError,
    ),
    Case(
        9,
        translatable("mask multiplied into the scores"),
        lambda: _model_with(MultiplyMaskAttention),
        small_model,
        check_decoder_is_causal,
    ),
    Case(
        10,
        translatable("True = pad mask given to True = keep code"),
        lambda: padding_mask_true_is_pad,
        lambda: padding_mask,
        check_padding_mask_hides_pad_keys,
    ),
    Case(
        10,
        translatable("uint8 subsequent mask"),
        lambda: uint8_subsequent_mask,
        lambda: causal_mask,
        check_causal_mask_builder,
        TypeError,  # the package's attention refuses non-bool masks
    ),
    Case(
        11,
        translatable("fill -1e9 in float16"),
        lambda: partial(attention_with_fill, fill=-1e9),
        lambda: scaled_dot_product_attention,
        check_runs_in_half_precision,
        RuntimeError,
    ),
    Case(
        11,
        translatable("fill -1e18 in float16"),
        lambda: partial(attention_with_fill, fill=-1e18),
        lambda: scaled_dot_product_attention,
        check_runs_in_half_precision,
        RuntimeError,
    ),
    Case(
        11,
        translatable("fill -inf, query with no visible key"),
        lambda: partial(attention_with_fill, fill=float("-inf")),
        lambda: scaled_dot_product_attention,
        check_query_with_nothing_to_see,
    ),
    Case(
        11,
        translatable("fill -1e9, query with no visible key"),
        lambda: partial(attention_with_fill, fill=-1e9),
        lambda: scaled_dot_product_attention,
        check_query_with_nothing_to_see,
    ),
    Case(
        12,
        translatable("LayerNorm with std + eps"),
        lambda: StdPlusEpsLayerNorm(512),
        lambda: nn.LayerNorm(512),
        check_matches_torch_layer_norm,
    ),
    Case(
        13,
        translatable("sinusoid base 1000"),
        lambda: sinusoidal_table_base_1000,
        lambda: sinusoidal_table,
        check_sinusoidal_table,
    ),
    Case(
        14,
        translatable("undefined seq_embedding"),
        lambda: SNIPPETS["undefined seq_embedding"][0],
        lambda: SNIPPETS["undefined seq_embedding"][1],
        check_snippet_runs,
    ),
    Case(
        14,
        translatable("numpy and torch concatenated"),
        lambda: SNIPPETS["numpy and torch concatenated"][0],
        lambda: SNIPPETS["numpy and torch concatenated"][1],
        check_snippet_runs,
    ),
    Case(
        14,
        translatable("sizes read from globals"),
        lambda: _attention(GlobalSizesAttention, 512, 4),
        lambda: _attention(MultiHeadAttention, 512, 4),
        check_matches_per_head_attention,
    ),
]
"""Every faulty variant with the check that catches it. ``np.pow`` (14) is left out: it
fails only with numpy < 2.0."""
