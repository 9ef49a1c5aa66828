"""The exercises of chapter 9 (``book/09_dates.ipynb``): ordinals in words, and batches cut by length."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from transformer.train.bucketing import padding_fraction, random_batches
from transformer.train.dates import number_words, ordinal_suffix, ordinal_words
from transformer.utils import make_rng
from transformer_book.exercises.grading import SEEDS
from transformer_book.i18n import tr

__all__ = ["grade_length_batches", "grade_ordinal_words"]


def grade_ordinal_words(ordinal: Callable[[int], str]) -> None:
    """``ordinal(n)`` must write every day of a month, 1 to 31, as an English ordinal in words, as
    ``transformer.train.dates.ordinal_words`` does: "first", "twelfth", "twentieth", "twenty-third", "thirty-first"."""
    for n in range(1, 32):
        call = f"ordinal({n})"
        mine, expected = ordinal(n), ordinal_words(n)
        assert isinstance(mine, str), tr(
            "{call} returned {kind} {mine!r}, not a str", call=call, kind=type(mine).__name__, mine=mine
        )
        if mine == expected:
            continue
        last = number_words(n).split("-")[-1]
        if mine == ordinal_suffix(n):
            hint = tr("that is the numeric style's digits; write the ordinal in words")
        elif mine.replace(" ", "-") == expected:
            hint = tr("a ten and a unit are joined by a hyphen")
        elif mine.lower() == expected:
            hint = tr("the dates write ordinals in lower case")
        elif mine.endswith("yth"):
            hint = tr("a ten ending in -y becomes -ieth: twentieth, thirtieth")
        elif mine.split("-")[-1] == last + "th":
            hint = tr("some ordinals are irregular: first, second, third, fifth, eighth, ninth, twelfth")
        elif "-" in expected and mine.split("-")[0] != expected.split("-")[0]:
            hint = tr("only the last word becomes an ordinal: twenty-first, not twentieth-first")
        else:
            hint = ""
        if hint:
            raise AssertionError(
                tr("{call} is {mine!r}, not {expected!r}: {hint}", call=call, mine=mine, expected=expected, hint=hint)
            )
        raise AssertionError(tr("{call} is {mine!r}, not {expected!r}", call=call, mine=mine, expected=expected))


def _index_batches(batches: object, call: str) -> list[list[int]]:
    assert isinstance(batches, Sequence) and all(isinstance(b, Sequence | Tensor) for b in batches), tr(
        "{call} returned {kind}, not a list of batches (lists of indices)", call=call, kind=type(batches).__name__
    )
    return [[int(i) for i in batch] for batch in batches]


def grade_length_batches(batches_of: Callable[[Sequence[int], int, torch.Generator], Sequence[Sequence[int]]]) -> None:
    """``batches_of(lengths, batch_size, rng)`` must cut the examples ``0 .. n - 1`` into batches by length:
    every example exactly once, ``ceil(n / batch_size)`` batches of at most ``batch_size``, at most half the padding
    of random batches (``transformer.train.bucketing.padding_fraction``), the batches not served in order of length, and
    the same batches from the same rng (so that a seeded run repeats) and other batches from another (so that every
    epoch differs), for several data sets and batch sizes."""
    for seed, (n, batch_size, low, high) in zip(
        SEEDS, ((1000, 32, 5, 11), (500, 16, 1, 40), (37, 8, 2, 9)), strict=True
    ):
        lengths = torch.randint(low, high + 1, (n,), generator=make_rng(seed)).tolist()
        call = tr("batches_of(lengths of {n} examples, batch_size={batch_size}, rng)", n=n, batch_size=batch_size)
        mine = _index_batches(batches_of(lengths, batch_size, make_rng(seed)), call)
        seen = [i for batch in mine for i in batch]
        missing, repeated = n - len(set(seen) & set(range(n))), len(seen) - len(set(seen))
        if missing or repeated or sorted(seen) != list(range(n)):
            hint = tr(" (is the last, smaller batch dropped?)") if 0 < missing < batch_size and not repeated else ""
            raise AssertionError(
                tr(
                    "{call} does not hold every index 0..{last} exactly once: {missing} missing, {repeated} repeated"
                    "{hint}",
                    call=call,
                    last=n - 1,
                    missing=missing,
                    repeated=repeated,
                    hint=hint,
                )
            )
        sizes = sorted(len(batch) for batch in mine)
        assert sizes[0] >= 1 and sizes[-1] <= batch_size, tr(
            "{call} has batches of {smallest} to {largest} examples: at most batch_size = {batch_size}, none empty",
            call=call,
            smallest=sizes[0],
            largest=sizes[-1],
            batch_size=batch_size,
        )
        assert len(mine) == math.ceil(n / batch_size), tr(
            "{call} makes {made} batches, not {expected}: cut full batches of {batch_size}, at most one smaller (a "
            "batch per length leaves many batches half empty)",
            call=call,
            made=len(mine),
            expected=math.ceil(n / batch_size),
            batch_size=batch_size,
        )
        mine_padding = padding_fraction(lengths, mine)
        random_padding = padding_fraction(lengths, random_batches(n, batch_size, make_rng(seed)))
        assert mine_padding <= random_padding / 2, tr(
            "{call} pads {mine:.1%} of the slots, random batches {random:.1%}: sort examples by length before cutting "
            "them into batches",
            call=call,
            mine=mine_padding,
            random=random_padding,
        )
        longest = [max(lengths[i] for i in batch) for batch in mine]
        assert len(mine) < 10 or longest not in (sorted(longest), sorted(longest, reverse=True)), tr(
            "{call} serves its batches in order of length, every epoch the same way: shuffle the batches", call=call
        )
        same_rng = _index_batches(batches_of(lengths, batch_size, make_rng(seed)), call)
        assert same_rng == mine, tr(
            "{call} gives other batches from the same rng: shuffle with the rng given (torch.randperm(n, "
            "generator=rng)), not with Python's random or torch's global generator, so that a seeded run repeats",
            call=call,
        )
        again = _index_batches(batches_of(lengths, batch_size, make_rng(seed + 10)), call)
        assert again != mine, tr(
            "{call} gives the same batches with another rng: every epoch would see the same batches in the same "
            "order; shuffle with the rng (before sorting within pools, and the batches after)",
            call=call,
        )
