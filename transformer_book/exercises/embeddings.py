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
    count_mistake,
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


def _vocabulary_mistakes(configs: list[TransformerConfig]) -> dict[str, list[int]]:
    """What each classic mistake adds to the count of each configuration (negative: what it leaves out)."""
    each = lambda added: [added(c) for c in configs]  # noqa: E731
    return {
        tr("share_embeddings=True makes the target embedding the source embedding's matrix: count it once"): each(
            lambda c: c.share_embeddings * c.src_vocab_size * c.d_model
        ),
        tr(
            "tie_output_embedding=True makes the output projection's weight the target embedding's matrix: count it "
            "once"
        ): each(lambda c: c.tie_output_embedding * c.tgt_vocab_size * c.d_model),
        tr(
            "it leaves out the output projection's weight, tgt_vocab_size x d_model, a matrix of its own unless "
            "tie_output_embedding=True"
        ): each(lambda c: -(not c.tie_output_embedding) * c.tgt_vocab_size * c.d_model),
        tr(
            "it leaves out the target embedding, tgt_vocab_size x d_model, a matrix of its own unless "
            "share_embeddings=True"
        ): each(lambda c: -(not c.share_embeddings) * c.tgt_vocab_size * c.d_model),
        tr(
            "it gives a target matrix src_vocab_size rows: the target embedding and the output projection have one "
            "row per target token, tgt_vocab_size"
        ): each(
            lambda c: (
                ((not c.share_embeddings) + (not c.tie_output_embedding))
                * (c.src_vocab_size - c.tgt_vocab_size)
                * c.d_model
            )
        ),
        tr("it counts the output projection's bias, tgt_vocab_size numbers: a vector, not a vocabulary matrix"): each(
            lambda c: c.tgt_vocab_size
        ),
        tr(
            "it counts the positional table, max_positions x d_model: it is not a vocabulary matrix (and a "
            "sinusoidal one holds no parameters at all)"
        ): each(lambda c: c.max_positions * c.d_model),
    }


def grade_vocabulary_parameters(count: Callable[[TransformerConfig], int]) -> None:
    """``count(config)`` must be the number of parameters in the source embedding, the target embedding and the
    output projection's weight, a matrix shared by two of them counted once, for configurations with and without
    ``share_embeddings`` and ``tie_output_embedding`` and with two vocabularies of different sizes. It names a shared
    or tied matrix counted twice, a matrix left out, a target matrix of the source's size, the output's bias and the
    positional table."""
    configs = count_cases(small=True)
    answers, expected = [count(c) for c in configs], [_vocabulary_matrices(c) for c in configs]
    if answers == expected:
        return
    wrong = next(i for i, (a, e) in enumerate(zip(answers, expected, strict=True)) if a != e)
    config = configs[wrong]
    values = dict(config=describe_config(config), mine=answers[wrong], expected=expected[wrong])
    hint = count_mistake(answers, expected, _vocabulary_mistakes(configs))
    if hint:
        raise AssertionError(
            tr(
                "count({config}) is {mine:,}, but its vocabulary matrices hold {expected:,} parameters: {hint}",
                hint=hint,
                **values,
            )
        )
    raise AssertionError(
        tr(
            "count({config}) is {mine:,}, but its vocabulary matrices hold {expected:,} parameters "
            "({rows:,} rows of d_model = {d_model})",
            rows=expected[wrong] // config.d_model,
            d_model=config.d_model,
            **values,
        )
    )


def _cosine_mistakes(E: Tensor) -> dict[str, Tensor]:
    """What each classic mistake makes of the cosine similarities of the rows of ``E``, by the hint that names it."""
    dots = E @ E.T  # (V, V)
    norms = E.norm(dim=-1)  # (V,)
    columns = F.normalize(E, dim=0)
    return {
        tr("the dot products are not divided by the norms: divide each by the norms of both rows"): dots,
        tr(
            "each dot product is divided by one row's norm only: a cosine divides by the norms of both rows, "
            "|E[i]| |E[j]|"
        ): dots / norms[:, None],
        tr("the columns are normalised (dim=0): each *row* is a token's embedding; normalise along dim=-1"): columns
        @ columns.T,
        tr(
            "everything is divided by the norm of the whole matrix: each row by its own norm, E.norm(dim=-1, "
            "keepdim=True)"
        ): dots / E.norm() ** 2,
    }


def grade_cosine_similarity(similarity: Callable[[Tensor], Tensor]) -> None:
    """``similarity(E (V, d))`` must be the ``(V, V)`` cosine similarities of the rows of ``E`` (to within 1e-5):
    ``E[i] . E[j] / (|E[i]| |E[j]|)``, for several seeds and shapes. It names dot products left undivided or divided
    by one norm, columns normalised instead of rows and the whole matrix's norm."""
    for seed, (V, d) in zip(SEEDS, ((5, 8), (12, 3), (1, 4)), strict=True):
        E = 3 * torch.randn(V, d, generator=make_rng(seed))
        call = tr("similarity(E of shape {shape})", shape=(V, d))
        mine = returned_tensor(similarity(E), call)
        check_shape(mine, (V, V), call, tr("one row and one column per token"))
        expected = F.cosine_similarity(E[:, None], E[None], dim=-1)  # (V, V)
        if torch.allclose(mine, expected, atol=1e-5):
            continue
        for hint, wrong in _cosine_mistakes(E).items():
            if torch.allclose(mine, wrong, atol=1e-5):
                raise AssertionError(tr("{call}: {hint}", call=call, hint=hint))
        if not torch.allclose(mine.diagonal().double(), torch.ones(V, dtype=torch.float64), atol=1e-5):
            raise AssertionError(
                tr(
                    "{call} has {diagonal:.3f} on the diagonal, not 1: a vector's cosine "
                    "with itself is 1 (divide each dot product by the norms of both rows)",
                    call=call,
                    diagonal=float(mine[0, 0]),
                )
            )
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
