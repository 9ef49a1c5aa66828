"""The exercises of chapter 2 (transformer_book.exercises.embeddings): each check passes right answers and refuses the
classic wrong ones with a message that names the mistake."""

import pytest
import torch.nn.functional as F

from transformer_book.exercises import grade_cosine_similarity, grade_vocabulary_parameters


def vocabulary_parameters(config):
    V_src, V_tgt, d = config.src_vocab_size, config.tgt_vocab_size, config.d_model
    return (
        (V_src * d) + (0 if config.share_embeddings else V_tgt * d) + (0 if config.tie_output_embedding else V_tgt * d)
    )


def test_vocabulary_parameters_check_passes_the_closed_form():
    grade_vocabulary_parameters(vocabulary_parameters)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda c: 3 * c.src_vocab_size * c.d_model, r"count\(TransformerConfig\(src_vocab_size=11, tgt_vocab_size=13"),
        (lambda c: (3 - c.share_embeddings - c.tie_output_embedding) * c.tgt_vocab_size * c.d_model, "vocab_size=11"),
        (lambda c: vocabulary_parameters(c) + c.tgt_vocab_size, r"hold [\d,]+ parameters"),  # the bias is not one
    ],
)
def test_vocabulary_parameters_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_vocabulary_parameters(wrong)


def test_cosine_similarity_check():
    grade_cosine_similarity(lambda E: F.normalize(E, dim=-1) @ F.normalize(E, dim=-1).T)
    with pytest.raises(AssertionError, match="not 1: a vector's cosine"):
        grade_cosine_similarity(lambda E: E @ E.T)
    with pytest.raises(AssertionError, match="not 1"):
        grade_cosine_similarity(lambda E: F.normalize(E, dim=0) @ F.normalize(E, dim=0).T)
    with pytest.raises(AssertionError, match=r"shape \(8, 8\)"):
        grade_cosine_similarity(lambda E: F.normalize(E, dim=-1).T @ F.normalize(E, dim=-1))
