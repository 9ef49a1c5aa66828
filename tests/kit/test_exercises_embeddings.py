"""The exercises of chapter 2 (transformer_book.exercises.embeddings): each check passes right answers, written in
several ways, and refuses the classic wrong ones with a message that names the mistake."""

import pytest
import torch
import torch.nn.functional as F
from exercise_checks import accepted, refused

from transformer import Transformer
from transformer_book.exercises import grade_cosine_similarity, grade_vocabulary_parameters


def vocabulary_parameters(config, shared=True, tied=True, output=True, target=True, target_rows=None, extra=0):
    """The closed form, optionally with one mistake: sharing or tying ignored, a matrix left out, the target's
    matrices given ``target_rows`` rows, ``extra`` parameters added."""
    V_src, d = config.src_vocab_size, config.d_model
    V_tgt = config.tgt_vocab_size if target_rows is None else target_rows(config)
    share, tie = config.share_embeddings and shared, config.tie_output_embedding and tied
    return V_src * d + (0 if share or not target else V_tgt * d) + (0 if tie or not output else V_tgt * d) + extra


def by_the_model(config):
    """The model built (on the meta device: shapes, no numbers) and its embedding matrices counted, each distinct
    tensor once."""
    with torch.device("meta"):
        model = Transformer(config)
    matrices = {id(p): p for p in (model.src_embed.weight, model.tgt_embed.weight, model.lm_head.weight)}
    return sum(p.numel() for p in matrices.values())


@pytest.mark.parametrize("right", [vocabulary_parameters, by_the_model], ids=["closed form", "the model's tensors"])
def test_vocabulary_parameters_check_passes_right_answers(right):
    accepted(grade_vocabulary_parameters, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda c: vocabulary_parameters(c, shared=False), r"share_embeddings=True makes .*: count it once"),
        (lambda c: vocabulary_parameters(c, tied=False), r"tie_output_embedding=True makes .*: count it once"),
        (
            lambda c: vocabulary_parameters(c, shared=False, tied=False),
            r"src_vocab_size=37000.*share_embeddings=True makes.*; and tie_output_embedding=True makes",
        ),
        (lambda c: vocabulary_parameters(c, output=False), "leaves out the output projection's weight"),
        (lambda c: vocabulary_parameters(c, target=False), "leaves out the target embedding"),
        (
            lambda c: vocabulary_parameters(c, target_rows=lambda c: c.src_vocab_size),
            r"count\(TransformerConfig\(src_vocab_size=11, tgt_vocab_size=13.*src_vocab_size rows",
        ),
        (lambda c: vocabulary_parameters(c, extra=c.tgt_vocab_size), "counts the output projection's bias"),
        (lambda c: vocabulary_parameters(c, extra=c.max_positions * c.d_model), "counts the positional table"),
        (lambda c: 3 * c.src_vocab_size * c.d_model, r"is 1,056, but its vocabulary matrices hold 1,184 parameters \("),
    ],
    ids=[
        "shared twice",
        "tied twice",
        "both twice",
        "no output",
        "no target",
        "source rows",
        "bias",
        "positions",
        "three source matrices",
    ],
)
def test_vocabulary_parameters_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_vocabulary_parameters, wrong, message)


@pytest.mark.parametrize(
    "right",
    [
        lambda E: F.normalize(E, dim=-1) @ F.normalize(E, dim=-1).T,
        lambda E: (E @ E.T) / (E.norm(dim=1)[:, None] * E.norm(dim=1)[None, :]),
        lambda E: F.cosine_similarity(E[:, None, :], E[None, :, :], dim=-1),
        lambda E: torch.stack([torch.stack([a @ b / (a.norm() * b.norm()) for b in E]) for a in E]),
    ],
    ids=["normalize", "divide by the outer product of norms", "F.cosine_similarity broadcast", "pair by pair"],
)
def test_cosine_similarity_check_passes_right_answers(right):
    accepted(grade_cosine_similarity, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda E: E @ E.T, "not divided by the norms"),
        (lambda E: E @ E.T / E.norm(dim=-1, keepdim=True), "divided by one row's norm only"),
        (lambda E: F.normalize(E, dim=0) @ F.normalize(E, dim=0).T, r"columns are normalised \(dim=0\)"),
        (lambda E: E @ E.T / E.norm() ** 2, "norm of the whole matrix"),
        (lambda E: 1 - F.normalize(E, dim=-1) @ F.normalize(E, dim=-1).T, "0.000 on the diagonal, not 1"),
        (lambda E: F.normalize(E, dim=-1).T @ F.normalize(E, dim=-1), r"shape \(8, 8\)"),
        (lambda E: F.cosine_similarity(E, E), r"shape \(5,\)"),
    ],
    ids=["dot products", "one norm", "columns", "whole matrix", "a distance", "(d, d)", "row with itself"],
)
def test_cosine_similarity_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_cosine_similarity, wrong, message)
