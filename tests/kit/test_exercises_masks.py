"""The exercises of chapter 4 (transformer_book.exercises.masks): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import pytest
import torch
from exercise_checks import accepted, refused

from transformer import causal_mask, padding_mask
from transformer_book.exercises import grade_causal_mask, grade_padding_mask, grade_target_mask


def by_loop(T):
    mask = torch.zeros(1, 1, T, T, dtype=torch.bool)
    for i in range(T):
        mask[0, 0, i, : i + 1] = True
    return mask


@pytest.mark.parametrize(
    "right",
    [
        by_loop,
        lambda T: torch.ones(T, T, dtype=torch.bool).tril()[None, None],
        lambda T: torch.tril(torch.ones(T, T)).bool().unsqueeze(0).unsqueeze(0),
        lambda T: ~torch.ones(1, 1, T, T, dtype=torch.bool).triu(1),  # the complement of the strict future
        lambda T: (torch.arange(T)[None, :] <= torch.arange(T)[:, None]).expand(1, 1, T, T),
    ],
    ids=["loop", "tril", "float tril made bool", "not triu(1)", "arange comparison"],
)
def test_causal_mask_check_passes_right_answers(right):
    accepted(grade_causal_mask, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda T: torch.ones(T, T, dtype=torch.bool).tril(), r"shape \(5, 5\)"),
        (lambda T: torch.ones(1, 1, T, T).tril(), "dtype torch.float32"),
        (lambda T: ~causal_mask(T), "inverted"),
        (lambda T: torch.ones(1, 1, T, T, dtype=torch.bool).triu(1), "inverted"),
        (lambda T: causal_mask(T).transpose(-2, -1), r"the future.*tril, not triu"),
        (lambda T: torch.ones(1, 1, T, T, dtype=torch.bool).tril(-1), "False on the diagonal"),
        (lambda T: torch.ones(1, 1, T, T, dtype=torch.bool).tril(1), r"off by one: query i also sees key i \+ 1"),
        (lambda T: torch.ones(1, 1, T, T, dtype=torch.bool), "True everywhere"),
        (lambda T: torch.eye(T, dtype=torch.bool)[None, None], r"causal\(5\)\[0, 0, 1, 0\] is False"),
    ],
    ids=["no leading axes", "float", "inverted", "triu(1)", "triu", "tril(-1)", "tril(1)", "all True", "eye"],
)
def test_causal_mask_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_causal_mask, wrong, message)


@pytest.mark.parametrize(
    "right",
    [
        lambda tokens, pad_id: (tokens != pad_id)[:, None, None, :],
        lambda tokens, pad_id: tokens.ne(pad_id).unsqueeze(1).unsqueeze(2),
        lambda tokens, pad_id: ~(tokens == pad_id).view(tokens.size(0), 1, 1, -1),
    ],
    ids=["!= and None", "ne and unsqueeze", "not == and view"],
)
def test_padding_mask_check_passes_right_answers(right):
    accepted(grade_padding_mask, right)


def from_lengths(tokens, pad_id):
    lengths = (tokens != pad_id).sum(dim=1)  # (B,): right padding assumed
    return (torch.arange(tokens.size(1))[None, :] < lengths[:, None])[:, None, None, :]


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda tokens, pad_id: (tokens != pad_id)[:, None, :, None], r"padding \*queries\*"),
        (lambda tokens, pad_id: tokens != pad_id, r"shape \(2, 5\)"),
        (lambda tokens, pad_id: (tokens == pad_id)[:, None, None, :], "True on the padding"),
        (lambda tokens, pad_id: (tokens != 0)[:, None, None, :], r"pad_id=3\).*is pad_id used, or 0 written in"),
        (lambda tokens, pad_id: (tokens != pad_id)[:, None, None, :].long(), "dtype torch.int64"),
        (from_lengths, r"assumes the padding comes last, but a row may start with padding \(row 1"),
    ],
    ids=["query mask", "2-D", "inverted", "0 written in", "int", "from lengths"],
)
def test_padding_mask_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_padding_mask, wrong, message)


def real_keys(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, S)


@pytest.mark.parametrize(
    "right",
    [
        lambda tokens, pad_id: real_keys(tokens, pad_id) & torch.ones(tokens.size(1), tokens.size(1)).tril().bool(),
        lambda tokens, pad_id: torch.logical_and(causal_mask(tokens.size(1)), padding_mask(tokens, pad_id)),
        lambda tokens, pad_id: torch.stack([real_keys(t[None], pad_id)[0] & by_loop(t.size(0))[0] for t in tokens]),
    ],
    ids=["& with a 2-D tril", "logical_and", "row by row"],
)
def test_target_mask_check_passes_right_answers(right):
    accepted(grade_target_mask, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda tokens, pad_id: padding_mask(tokens, pad_id) | causal_mask(tokens.size(1)), r"not \|"),
        (lambda tokens, pad_id: padding_mask(tokens, pad_id), r"shape \(2, 1, 1, 5\)"),
        (lambda tokens, pad_id: causal_mask(tokens.size(1)).expand(tokens.size(0), 1, -1, -1), "causal mask alone"),
        (lambda tokens, pad_id: padding_mask(tokens, pad_id).expand(-1, 1, tokens.size(1), -1), "padding mask alone"),
        (
            lambda tokens, pad_id: (
                real_keys(tokens, pad_id) & real_keys(tokens, pad_id).transpose(-2, -1) & causal_mask(tokens.size(1))
            ),
            r"also hides the padding \*queries\*' rows.*NaN",
        ),
        (
            lambda tokens, pad_id: real_keys(tokens, pad_id) & causal_mask(tokens.size(1)).transpose(-2, -1),
            "upper triangle",
        ),
        (lambda tokens, pad_id: (padding_mask(tokens, pad_id) & causal_mask(tokens.size(1))).float(), "dtype"),
    ],
    ids=["|", "padding only, 4-D", "causal alone", "padding alone", "queries hidden", "triu", "float"],
)
def test_target_mask_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_target_mask, wrong, message)
