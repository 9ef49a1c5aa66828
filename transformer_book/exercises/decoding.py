"""The exercises of chapter 8 (``book/08_decoding.ipynb``): one step of greedy decoding, then the whole loop, checked
against :func:`transformer.decoding.greedy_decode` on a model given by the chapter."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from transformer.decoding import greedy_decode, greedy_steps
from transformer.tokens import BOS_ID, EOS_ID
from transformer_book.exercises.grading import check_shape, first_index, returned_tensor
from transformer_book.i18n import tr

__all__ = ["grade_greedy_decode", "grade_next_token"]


def grade_next_token(
    next_token: Callable, model: torch.nn.Module, sources: Iterable[Tensor], max_new_tokens: int
) -> None:
    """``next_token(model, src (B, S), decoder_input (B, t))`` must pick what greedy decoding picks at every step of
    every source in ``sources``: the most probable next token, ``<pad>`` and ``<s>`` excluded (never valid
    outputs). Rows that have already said ``</s>`` are not compared. Inputs are given on the model's device.

    A model that has learned its task rarely prefers ``<pad>`` or ``<s>``, so forgetting to exclude them would go
    unnoticed: the check also runs the step on a copy of ``model`` whose output bias favours them."""
    sources = list(sources)
    tempted = copy.deepcopy(model)
    with torch.no_grad():  # <s> most, <pad> next: a step that excludes only one of them still picks the other
        bias = tempted.lm_head.bias
        bias[[model.config.pad_id, BOS_ID]] = bias.max() + torch.tensor([1000.0, 2000.0]).to(bias)
    for m in (model, tempted):
        _grade_steps(next_token, m, sources, max_new_tokens, tempted=m is tempted)


def _grade_steps(
    next_token: Callable, model: torch.nn.Module, sources: list[Tensor], max_new_tokens: int, tempted: bool
) -> None:
    device = next(model.parameters()).device
    for src in sources:
        src = src.to(device)
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=device)
        for t, step in enumerate(
            greedy_steps(model, src, max_new_tokens, use_cache=False)
        ):  # the whole prefix, each step
            call = tr(
                "next_token({model}, src of shape {src_shape}, decoder_input of shape {input_shape})",
                model=tr("a model that favours <pad> and <s>") if tempted else "model",
                src_shape=tuple(src.shape),
                input_shape=tuple(step.decoder_input.shape),
            )
            with torch.no_grad():
                mine = returned_tensor(next_token(model, src, step.decoder_input.to(device)), call)
            check_shape(mine, (src.size(0),), call, tr("one id per row: the logits of the *last* position only"))
            differ = (mine.to(device) != step.next_tokens.to(device)) & ~finished
            if differ.any():
                b = int(differ.nonzero()[0])
                chosen = int(mine[b])
                hint = (
                    tr(
                        " ({token}, never a valid output: set the logits of <pad> and <s> to -inf before the argmax)",
                        token="<pad>" if chosen == model.config.pad_id else "<s>",
                    )
                    if chosen in (model.config.pad_id, BOS_ID)
                    else ""
                )
                raise AssertionError(
                    tr(
                        "at step {t} {call} chose {chosen} for row {b}{hint}; greedy decoding chose {expected}",
                        t=t,
                        call=call,
                        chosen=chosen,
                        b=b,
                        hint=hint,
                        expected=int(step.next_tokens[b]),
                    )
                )
            finished = step.finished.to(device)


def grade_greedy_decode(
    decode: Callable, model: torch.nn.Module, sources: Iterable[Tensor], max_new_tokens: int
) -> None:
    """``decode(model, src (B, S), max_new_tokens)`` must return what ``greedy_decode(model, src, max_new_tokens)`` does for every
    source in ``sources``: ``(B, L)`` ids after ``<s>``, each row ending with its ``</s>`` and ``<pad>`` after it, ``L``
    the step at which the last row finished (or ``max_new_tokens``). Inputs are given on the model's device."""
    device = next(model.parameters()).device
    for src in sources:
        src = src.to(device)
        call = tr(
            "decode(model, src of shape {shape}, max_new_tokens={max_new_tokens})",
            shape=tuple(src.shape),
            max_new_tokens=max_new_tokens,
        )
        with torch.no_grad():
            mine = returned_tensor(decode(model, src, max_new_tokens), call).to(device)
        expected = greedy_decode(model, src, max_new_tokens, use_cache=False)  # (B, L): the whole prefix, each step
        if (
            mine.dim() == 2
            and mine.size(0) == src.size(0)
            and mine.size(1) == expected.size(1) + 1
            and torch.equal(mine[:, 1:], expected)
        ):
            raise AssertionError(tr("{call} starts with <s>: return the generated ids only, after <s>", call=call))
        if (
            mine.dim() == 2
            and mine.size(0) == src.size(0)
            and mine.size(1) > expected.size(1)
            and torch.equal(mine[:, : expected.size(1)], expected)
        ):
            raise AssertionError(
                tr(
                    "{call} has {columns} columns, not {expected}: stop when every row has said </s>",
                    call=call,
                    columns=mine.size(1),
                    expected=expected.size(1),
                )
            )
        check_shape(mine, tuple(expected.shape), call, tr("one row per source, one column per step"))
        differ = mine != expected
        if differ.any():
            b, t = first_index(differ)
            after_eos = bool((expected[b, :t] == EOS_ID).any())
            hint = tr(": a row that has said </s> gets <pad> from then on") if after_eos else ""
            raise AssertionError(
                tr(
                    "{call}[{b}, {t}] is {mine}, greedy decoding gives {expected}{hint}",
                    call=call,
                    b=b,
                    t=t,
                    mine=int(mine[b, t]),
                    expected=int(expected[b, t]),
                    hint=hint,
                )
            )
