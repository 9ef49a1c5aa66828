"""What every chapter's exercises share: :func:`exercise`, which a chapter's check cell calls, and what the graders
build their cases and messages from: the returned value checked for a tensor of the right shape, random token ids
with padding, the model configurations a count must get right and the naming of the mistake a wrong count makes
(:func:`count_mistake`), and a second call that tells a random answer (:func:`varies`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import fields

import torch
from torch import Tensor

from transformer import TransformerConfig
from transformer.utils import make_rng
from transformer_book.i18n import tr

__all__ = [
    "SEEDS",
    "check_shape",
    "count_cases",
    "count_mistake",
    "describe_config",
    "exercise",
    "first_index",
    "random_tokens",
    "returned_tensor",
    "varies",
]

SEEDS = (0, 1, 2)


def exercise(check: Callable[..., None], answer: Callable, *args: object) -> None:
    """Run ``check(answer, *args)`` and say how the reader's ``answer`` did: "correct", or "not done yet" while it
    raises ``NotImplementedError`` (the starter); a wrong answer raises ``AssertionError`` naming what is wrong."""
    name = getattr(answer, "__name__", tr("your answer"))
    try:
        check(answer, *args)
    except NotImplementedError:
        print(
            tr(
                "{name}: not done yet (it raises NotImplementedError). Write it above, run that cell, then this one.",
                name=name,
            )
        )
        return
    except AssertionError as error:
        raise AssertionError(tr("{name} is not right yet: {error}", name=name, error=error)) from None
    print(tr("{name}: correct", name=name))


def returned_tensor(value: object, call: str) -> Tensor:
    assert isinstance(value, Tensor), tr(
        "{call} returned {kind}, not a torch.Tensor", call=call, kind=type(value).__name__
    )
    return value


def check_shape(value: Tensor, expected: tuple[int, ...], call: str, hint: str = "") -> None:
    shape = tuple(value.shape)
    assert shape == expected, tr(
        "{call} has shape {shape}, not {expected}", call=call, shape=shape, expected=expected
    ) + (f": {hint}" if hint else "")


def first_index(differ: Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in differ.nonzero()[0])


def random_tokens(seed: int, B: int, S: int, pad_id: int) -> Tensor:
    """``(B, S)`` random ids in 0..5 (``pad_id`` among them), with at least one pad, sometimes first."""
    tokens = torch.randint(0, 6, (B, S), generator=make_rng(seed))
    tokens[0, -1] = pad_id  # right padding
    tokens[-1, 0] = pad_id  # and padding first, which a write-up's mask may not expect
    return tokens


def describe_config(config: TransformerConfig) -> str:
    """The config's fields that differ from the defaults, as a constructor call."""
    changed = [
        f"{f.name}={getattr(config, f.name)!r}"
        for f in fields(config)
        if f.name in ("src_vocab_size", "tgt_vocab_size") or getattr(config, f.name) != f.default
    ]
    return f"TransformerConfig({', '.join(changed)})"


def count_cases(small: bool) -> list[TransformerConfig]:
    """Configurations that differ in every size and switch a count depends on (small ones, or the paper's)."""
    width = (
        dict(d_model=32, n_heads=4, d_ff=48, n_encoder_layers=2, n_decoder_layers=3, max_positions=64) if small else {}
    )
    return [
        TransformerConfig(11, 13, **width),
        TransformerConfig(37_000, 37_000, share_embeddings=True, tie_output_embedding=True),
        TransformerConfig(20, 20, tie_output_embedding=True, **width),
        TransformerConfig(20, 20, share_embeddings=True, **width),
        TransformerConfig(9, 14, tie_output_embedding=True, norm_first=True, **width),
        TransformerConfig(16, 16, positional_encoding="learned", final_norm=True, **width),
    ]


def count_mistake(answers: Sequence[int], expected: Sequence[int], mistakes: dict[str, Sequence[int]]) -> str:
    """The hint of the mistake, or of the two mistakes together, whose counts are the answer's in every case: each
    mistake is what it adds to the right count in each case (negative: what it leaves out). "" if none is."""
    gaps = [answer - right for answer, right in zip(answers, expected, strict=True)]
    made = [(hint, list(added)) for hint, added in mistakes.items() if any(added)]
    for hint, added in made:
        if added == gaps:
            return hint
    for (first, one), (second, other) in itertools.combinations(made, 2):
        if [a + b for a, b in zip(one, other, strict=True)] == gaps:
            return tr("{first}; and {second}", first=first, second=second)
    return ""


def varies(function: Callable[..., object], args: tuple, first: Sequence[Tensor]) -> bool:
    """Whether ``function(*args)`` gives other tensors than ``first`` on a second call: a random answer (dropout left
    on, a sample instead of an argmax)."""
    again = function(*args)
    again = again if isinstance(again, tuple) else (again,)
    return any(
        isinstance(a, Tensor) and a.shape == b.shape and not torch.equal(a.nan_to_num(), b.nan_to_num())
        for a, b in zip(again, first, strict=False)
    )
