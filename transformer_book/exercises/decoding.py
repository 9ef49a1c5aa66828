"""The exercises of chapter 8 (``book/08_decoding.ipynb``): one step of greedy decoding, then the whole loop, checked
against :func:`transformer.decoding.greedy_decode` on a model given by the chapter, and on copies of it biased
towards or away from some tokens, so that every case a loop must get right comes up whatever the model has learned."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from transformer.decoding import greedy_decode, greedy_steps
from transformer.masks import causal_mask
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS
from transformer_book.exercises.grading import check_shape, first_index, returned_tensor, varies
from transformer_book.i18n import tr, translatable

__all__ = ["grade_greedy_decode", "grade_next_token"]

TOKENS = dict(pad=SPECIAL_TOKENS[PAD_ID], bos=SPECIAL_TOKENS[BOS_ID], eos=SPECIAL_TOKENS[EOS_ID])  # their names


def _biased(model: torch.nn.Module, shifts: dict[int, float]) -> torch.nn.Module:
    """A copy of ``model`` whose output bias is moved by ``shifts`` (token id -> added to its logit)."""
    biased = copy.deepcopy(model)
    with torch.no_grad():
        for token, shift in shifts.items():
            biased.lm_head.bias[token] += shift
    return biased


def _logits(model: torch.nn.Module, src: Tensor, decoder_input: Tensor) -> Tensor:
    """``(B, t, V)``: the logits at every position of ``decoder_input``."""
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        causal = causal_mask(decoder_input.size(1), device=decoder_input.device)
        return model.lm_head(model.decode(decoder_input, memory, src_mask, causal))


def grade_next_token(
    next_token: Callable, model: torch.nn.Module, sources: Iterable[Tensor], max_new_tokens: int
) -> None:
    """``next_token(model, src (B, S), decoder_input (B, t))`` must pick what greedy decoding picks at every step of
    every source in ``sources``: the most probable next token, ``<pad>`` and ``<s>`` excluded (never valid
    outputs). Rows that have already said ``</s>`` are not compared. Inputs are given on the model's device.

    A model that has learned its task rarely prefers ``<pad>`` or ``<s>``, so forgetting to exclude them would go
    unnoticed: the check also runs the step on a copy of ``model`` whose output bias favours them, and on one that
    favours ``</s>`` (whose exclusion would go unnoticed by a model that never says it). It names the
    logits of the first position read instead of the last, ``<pad>`` or ``<s>`` picked, ``</s>`` excluded too and a
    sample taken instead of the argmax."""
    sources = list(sources)
    with torch.no_grad():  # <s> most, <pad> next: a step that excludes only one still picks the other
        top = float(model.lm_head.bias.max() - model.lm_head.bias.min())
    tempted = _biased(model, {model.config.pad_id: top + 1000.0, BOS_ID: top + 2000.0})
    finishing = _biased(model, {EOS_ID: top + 1000.0})  # says </s> at once: a step that excludes it shows
    names = ("model", tr("a model that favours {pad} and {bos}", **TOKENS), tr("a model that favours {eos}", **TOKENS))
    for name, m in zip(names, (model, tempted, finishing), strict=True):
        _grade_steps(next_token, m, sources, max_new_tokens, name)


def _step_mistakes(model: torch.nn.Module, src: Tensor, decoder_input: Tensor) -> dict[str, Tensor]:
    """What each classic mistake picks at this step, ``(B,)``, by the hint that names it."""
    logits = _logits(model, src, decoder_input).float()  # (B, t, V)
    excluded = [model.config.pad_id, BOS_ID]
    pick = lambda scores, banned: scores.index_fill(-1, torch.tensor(banned, device=scores.device), -torch.inf).argmax(
        -1
    )  # noqa: E731
    return {
        tr(
            "it reads the logits of the first position: the last one, hidden[:, -1], is the one that predicts the "
            "next token"
        ): pick(logits[:, 0], excluded),
        tr("it never picks {eos}: exclude {pad} and {bos} only; {eos} is how a row finishes", **TOKENS): pick(
            logits[:, -1], [*excluded, EOS_ID]
        ),
    }


def _grade_steps(
    next_token: Callable, model: torch.nn.Module, sources: list[Tensor], max_new_tokens: int, name: str
) -> None:
    device = next(model.parameters()).device
    for src in sources:
        src = src.to(device)
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=device)
        for t, step in enumerate(greedy_steps(model, src, max_new_tokens, use_cache=False)):  # the whole prefix
            call = tr(
                "next_token({model}, src of shape {src_shape}, decoder_input of shape {input_shape})",
                model=name,
                src_shape=tuple(src.shape),
                input_shape=tuple(step.decoder_input.shape),
            )
            decoder_input = step.decoder_input.to(device)
            with torch.no_grad():
                mine = returned_tensor(next_token(model, src, decoder_input), call)
            check_shape(mine, (src.size(0),), call, tr("one id per row: the logits of the *last* position only"))
            mine, expected = mine.to(device), step.next_tokens.to(device)
            differ = (mine != expected) & ~finished
            if differ.any():
                with torch.no_grad():
                    if varies(next_token, (model, src, decoder_input), (mine,)):
                        raise AssertionError(
                            tr(
                                "{call}: two calls give different tokens: it samples, where greedy decoding takes the "
                                "most probable token (argmax)",
                                call=call,
                            )
                        )
                for hint, wrong in _step_mistakes(model, src, decoder_input).items():
                    if torch.equal(mine[~finished], wrong[~finished]):
                        raise AssertionError(tr("at step {t} {call}: {hint}", t=t, call=call, hint=hint))
                b = int(differ.nonzero()[0])
                chosen = int(mine[b])
                hint = (
                    tr(
                        " ({token}, never a valid output: set the logits of {pad} and {bos} to -inf before the argmax)",
                        token=TOKENS["pad"] if chosen == model.config.pad_id else TOKENS["bos"],
                        **TOKENS,
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
                        expected=int(expected[b]),
                    )
                )
            finished = step.finished.to(device)


_NEVER = translatable("a model that never says {eos}")
_AT_ONCE = translatable("a model that says {eos} at once")
_SOONER = translatable("a model that says {eos} sooner")


def _finishing_steps(tokens: Tensor, max_new_tokens: int) -> list[int]:
    """Each row's step of ``</s>`` in greedy output ``tokens (B, L)``, ``max_new_tokens`` for a row that never says it."""
    said = tokens == EOS_ID
    return [int(row.nonzero()[0]) if row.any() else max_new_tokens for row in said]


_SHIFTS = tuple(2.0 ** (k / 2) for k in range(-4, 13))  # what _sooner adds to </s>'s logit: 0.25 to 64


def _sooner(
    model: torch.nn.Module, sources: list[Tensor], max_new_tokens: int
) -> tuple[torch.nn.Module, Tensor] | None:
    """A copy of ``model`` favouring ``</s>`` just enough that the rows of one of ``sources`` finish at steps at least
    two apart, the first before the last step (what stopping and padding must get right, a loop that stops at the
    first ``</s>`` told apart from one that drops the last step), and that source; None if no shift tried does."""
    for shift in _SHIFTS:
        biased = _biased(model, {EOS_ID: shift})
        for src in sources:
            steps = _finishing_steps(greedy_decode(biased, src, max_new_tokens, use_cache=False), max_new_tokens)
            if max(steps) - min(steps) >= 2 and min(steps) < max_new_tokens - 1:
                return biased, src
    return None


def _decode_cases(
    model: torch.nn.Module, sources: list[Tensor], max_new_tokens: int
) -> Iterable[tuple[str, torch.nn.Module, Tensor]]:
    """``(the model's name, model, src)``: ``model`` on every source, then, on the first, copies of it that never say
    ``</s>`` (every row runs to ``max_new_tokens``) and that say it at once, and one that says it sooner."""
    with torch.no_grad():
        span = float(model.lm_head.bias.max() - model.lm_head.bias.min()) + 1000.0
    for src in sources:
        yield "model", model, src
    yield tr(_NEVER, **TOKENS), _biased(model, {EOS_ID: -span}), sources[0]
    yield tr(_AT_ONCE, **TOKENS), _biased(model, {EOS_ID: span}), sources[0]
    sooner = _sooner(model, sources, max_new_tokens)
    if sooner is not None:
        yield tr(_SOONER, **TOKENS), *sooner


def _decode_mistakes(mine: Tensor, expected: Tensor, max_new_tokens: int) -> list[str]:
    """The hints of every classic mistake that turns greedy decoding's ``expected (B, L)`` into ``mine``."""
    B, L = expected.shape
    if mine.dim() != 2 or mine.size(0) != B:
        return []
    hints = []
    ends = _finishing_steps(expected, max_new_tokens)
    shorter = mine.size(1) < L and torch.equal(mine, expected[:, : mine.size(1)])
    if mine.size(1) == L + 1 and torch.equal(mine[:, 1:], expected):
        hints.append(tr("it starts with {bos}: return the generated ids only, after {bos}", **TOKENS))
    if mine.size(1) > L and torch.equal(mine[:, :L], expected) and not bool((mine[:, :1] == BOS_ID).all()):
        hints.append(tr("stop when every row has said {eos}", **TOKENS))
    if shorter and mine.size(1) == L - 1 and max(ends) == max_new_tokens == L:
        hints.append(
            tr(
                "it stops one step early: a row that never says {eos} runs max_new_tokens = {n} steps (is the loop "
                "range(max_new_tokens - 1), or does it test the length before a step?)",
                n=max_new_tokens,
                **TOKENS,
            )
        )
    if shorter and mine.size(1) == min(ends) + 1:
        hints.append(
            tr("it stops when the first row says {eos}: stop when every row has (finished.all(), not .any())", **TOKENS)
        )
    if shorter and mine.size(1) == L - 1 and max(ends) < max_new_tokens:
        hints.append(
            tr("the last step's tokens are missing: append them, the last {eos} among them, before stopping", **TOKENS)
        )
    if mine.shape == expected.shape:
        ended = torch.cumsum(expected == EOS_ID, dim=1) - (expected == EOS_ID).long() > 0  # after a row's </s>
        if torch.equal(mine[~ended], expected[~ended]):
            if bool((mine[ended] == EOS_ID).all()):
                hints.append(tr("after {eos} a row gets {pad}, not {eos} again", **TOKENS))
            else:
                hints.append(tr("a row that has said {eos} gets {pad} from then on", **TOKENS))
    return hints


def grade_greedy_decode(
    decode: Callable, model: torch.nn.Module, sources: Iterable[Tensor], max_new_tokens: int
) -> None:
    """``decode(model, src (B, S), max_new_tokens)`` must return what ``greedy_decode(model, src, max_new_tokens)``
    does for every source in ``sources``: ``(B, L)`` ids after ``<s>``, each row ending with its ``</s>`` and ``<pad>``
    after it, ``L`` the step at which the last row finished (or ``max_new_tokens``). Inputs are given on the model's
    device. Whatever ``model`` has learned, the first source is also decoded by copies of it that never say ``</s>``,
    say it at once, and say it sooner (rows finishing at different steps), so that a loop one step short, one that
    never stops, stops at the first ``</s>`` or drops the last step, and one that does not pad after ``</s>`` are each
    named (from the first case that tells the mistake apart from the others)."""
    sources = list(sources)
    device = next(model.parameters()).device
    ambiguous = None  # the first failure that more than one mistake explains
    for name, m, src in _decode_cases(model, sources, max_new_tokens):
        src = src.to(device)
        call = tr(
            "decode({model}, src of shape {shape}, max_new_tokens={max_new_tokens})",
            model=name,
            shape=tuple(src.shape),
            max_new_tokens=max_new_tokens,
        )
        with torch.no_grad():
            mine = returned_tensor(decode(m, src, max_new_tokens), call).to(device)
        expected = greedy_decode(m, src, max_new_tokens, use_cache=False)  # (B, L): the whole prefix, each step
        if mine.shape == expected.shape and torch.equal(mine, expected):
            continue
        hints = _decode_mistakes(mine, expected, max_new_tokens)
        named = tr(
            "{call} gives {columns} columns, greedy decoding {expected}: {hint}",
            call=call,
            columns=mine.size(-1),
            expected=expected.size(1),
            hint=hints[0] if hints else "",
        )
        if len(hints) == 1:
            raise AssertionError(named)
        if hints:
            ambiguous = ambiguous or named
            continue
        check_shape(mine, tuple(expected.shape), call, tr("one row per source, one column per step"))
        b, t = first_index(mine != expected)
        raise AssertionError(
            tr(
                "{call}[{b}, {t}] is {mine}, greedy decoding gives {expected}",
                call=call,
                b=b,
                t=t,
                mine=int(mine[b, t]),
                expected=int(expected[b, t]),
            )
        )
    if ambiguous:
        raise AssertionError(ambiguous)
