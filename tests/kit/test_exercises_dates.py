"""The exercises of chapter 9 (transformer_book.exercises.dates): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import pytest
import torch
from exercise_checks import refused

from transformer.train.bucketing import length_batches, random_batches
from transformer_book.exercises import grade_length_batches, grade_ordinal_words

ONES = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
IRREGULAR = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}


def ordinal(n, irregular=True, ieth=True, hyphen="-", every_word=False):
    words = (
        [*ONES, *TEENS][n - 1]
        if n < 20
        else ["twenty", "thirty"][n // 10 - 2] + (f"-{ONES[n % 10 - 1]}" if n % 10 else "")
    ).split("-")

    def th(word):
        if irregular and word in IRREGULAR:
            return IRREGULAR[word]
        return word[:-1] + "ieth" if ieth and word.endswith("y") else word + "th"

    return hyphen.join([th(w) if every_word else w for w in words[:-1]] + [th(words[-1])])


def test_ordinal_words_check_passes_a_right_answer():
    grade_ordinal_words(ordinal)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda n: ordinal(n, irregular=False), r"ordinal\(1\) is 'oneth'.*irregular"),
        (lambda n: ordinal(n, ieth=False), r"ordinal\(20\) is 'twentyth'.*-ieth"),
        (lambda n: ordinal(n, hyphen=" "), r"ordinal\(21\) is 'twenty first'.*hyphen"),
        (lambda n: ordinal(n, every_word=True), r"'twentieth-first'.*only the last word"),
        (lambda n: ordinal(n).capitalize(), "lower case"),
        (lambda n: f"{n}{'st' if n == 1 else 'th'}", "in words"),
        (lambda n: ordinal(n) if n != 31 else "thirty-one", r"ordinal\(31\) is 'thirty-one', not 'thirty-first'$"),
        (lambda n: n, "not a str"),
    ],
)
def test_ordinal_words_check_catches_classic_mistakes(wrong, message):
    refused(grade_ordinal_words, wrong, message)


def sorted_batches(lengths, batch_size, generator, shuffle_first=True, shuffle_batches=True, drop_last=False):
    order = torch.randperm(len(lengths), generator=generator).tolist() if shuffle_first else list(range(len(lengths)))
    order.sort(key=lambda i: lengths[i])  # stable: ties keep the shuffled order
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if drop_last and len(batches[-1]) < batch_size:
        batches = batches[:-1]
    if shuffle_batches:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]
    return batches


def test_length_batches_check_passes_a_whole_sort():
    grade_length_batches(sorted_batches)
    grade_length_batches(lambda *a: [torch.tensor(b) for b in sorted_batches(*a)])


def one_batch_per_length(lengths, batch_size, generator):
    by_length = {}
    for i in torch.randperm(len(lengths), generator=generator).tolist():
        by_length.setdefault(lengths[i], []).append(i)
    batches = [same[i : i + batch_size] for same in by_length.values() for i in range(0, len(same), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator)]


def test_the_packages_pooled_length_batches_meet_the_exercises_specification():
    """The check never calls length_batches: it tests properties (every example once, full batches, half the padding
    of random batches, shuffled batches, another rng another order), which the package's pools must meet too."""
    grade_length_batches(length_batches)
    grade_length_batches(lambda *a: length_batches(*a, pool=4))


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda lengths, b, g: random_batches(len(lengths), b, g), "sort examples by length"),
        (lambda *a: sorted_batches(*a, shuffle_batches=False), "in order of length"),
        (lambda *a: sorted_batches(*a, shuffle_first=False, shuffle_batches=False)[::-1], "in order of length"),
        (lambda lengths, b, g: sorted_batches(lengths, b, torch.Generator().manual_seed(0)), "another rng"),
        (
            lambda lengths, b, g: sorted_batches(lengths, b, None),
            "other batches from the same rng: shuffle with the rng",
        ),
        (lambda *a: sorted_batches(*a, drop_last=True), "8 missing, 0 repeated .*smaller batch dropped"),
        (lambda *a: [b + b[:1] for b in sorted_batches(*a)], "0 missing, 32 repeated"),
        (lambda *a: [[i] for i in range(len(a[0]))], "1000 batches, not 32"),
        (one_batch_per_length, "batches, not 32: .*a batch per length"),
        (lambda lengths, b, g: [list(range(len(lengths)))], "at most batch_size = 32"),
        (lambda lengths, b, g: {"batches": []}, "not a list of batches"),
    ],
)
def test_length_batches_check_catches_classic_mistakes(wrong, message):
    refused(grade_length_batches, wrong, message)
