"""The exercises of chapter 2 (``book/02_embeddings.ipynb``): count the parameters of the vocabulary matrices, shared or
not, and compare embeddings by their cosine similarity."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer import TransformerConfig
from transformer.utils import make_rng
from transformer_book.exercises.grading import (
    SEEDS,
    check_shape,
    count_cases,
    describe_config,
    first_index,
    returned_tensor,
)
from transformer_book.i18n import tr
from transformer_book.viz.overview import meta_model

__all__ = ["grade_cosine_similarity", "grade_vocabulary_parameters"]


def _vocabulary_matrices(config: TransformerConfig) -> int:
    model = meta_model(config)
    parts = {id(p): p for p in (model.src_embed.weight, model.tgt_embed.weight, model.lm_head.weight)}
    return sum(p.numel() for p in parts.values())


def grade_vocabulary_parameters(count: Callable[[TransformerConfig], int]) -> None:
    """``count(config)`` must be the number of parameters in the source embedding, the target embedding and the
    output projection's weight, a matrix shared by two of them counted once, for configurations with and without
    ``share_embeddings`` and ``tie_output_embedding`` and with two vocabularies of different sizes."""
    for config in count_cases(small=True):
        mine, expected = count(config), _vocabulary_matrices(config)
        assert mine == expected, tr(
            "count({config}) is {mine:,}, but its vocabulary matrices hold {expected:,} parameters "
            "({rows:,} rows of d_model = {d_model})",
            config=describe_config(config),
            mine=mine,
            expected=expected,
            rows=expected // config.d_model,
            d_model=config.d_model,
        )


def grade_cosine_similarity(similarity: Callable[[Tensor], Tensor]) -> None:
    """``similarity(E (V, d))`` must be the ``(V, V)`` cosine similarities of the rows of ``E`` (to within 1e-5):
    ``E[i] . E[j] / (|E[i]| |E[j]|)``, for several seeds and shapes."""
    for seed, (V, d) in zip(SEEDS, ((5, 8), (12, 3), (1, 4)), strict=True):
        E = 3 * torch.randn(V, d, generator=make_rng(seed))
        call = tr("similarity(E of shape {shape})", shape=(V, d))
        mine = returned_tensor(similarity(E), call)
        check_shape(mine, (V, V), call, tr("one row and one column per token"))
        expected = F.cosine_similarity(E[:, None], E[None], dim=-1)  # (V, V)
        if not torch.allclose(mine.diagonal().double(), torch.ones(V, dtype=torch.float64), atol=1e-5):
            raise AssertionError(
                tr(
                    "{call} has {diagonal:.3f} on the diagonal, not 1: a vector's cosine "
                    "with itself is 1 (divide each dot product by the norms of both rows)",
                    call=call,
                    diagonal=float(mine[0, 0]),
                )
            )
        if not torch.allclose(mine, expected, atol=1e-5):
            i, j = first_index((mine - expected).abs() > 1e-5)
            raise AssertionError(
                tr(
                    "{call}[{i}, {j}] is {mine:.4f}, not {expected:.4f}",
                    call=call,
                    i=i,
                    j=j,
                    mine=float(mine[i, j]),
                    expected=float(expected[i, j]),
                )
            )
