"""The exercises of chapter 10 (transformer_book.exercises.translation): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import random
from collections import Counter

import pytest
from exercise_checks import refused

from transformer.train.bpe import SPACE, apply_merges
from transformer_book.exercises import clipped_matches, grade_clipped_precision, grade_merge_step
from transformer_book.exercises.translation import _MERGE_CASES, _PRECISION_CASES, _merge_step_case


def merge_step(words, tie="code point", weighted=True, direction="left", replace=False, everywhere=True, keep_all=True):
    """One step of byte-pair encoding, as a reader might write it (optionally with one mistake)."""
    counts = Counter()
    for symbols, n in words.items():
        for pair in zip(symbols, symbols[1:], strict=False):
            counts[pair] += n if weighted else 1
    pair = min(counts, key=lambda p: (-counts[p], p)) if tie == "code point" else counts.most_common(1)[0][0]
    left, right = pair
    merged = {}
    for symbols, n in words.items():
        if replace:  # the symbols joined by spaces, the pair replaced as text
            new = tuple(" ".join(symbols).replace(f"{left} {right}", left + right).split())
        else:
            new, i = list(symbols), 0 if direction == "left" else len(symbols) - 2
            while 0 <= i < len(new) - 1:
                if (new[i], new[i + 1]) == pair:
                    new[i : i + 2] = [left + right]
                    if not everywhere:
                        break
                i += 1 if direction == "left" else -1
            new = tuple(new)
        if keep_all or new != symbols:
            merged[new] = n
    return pair, merged


def test_merge_step_check_passes_a_right_step():
    grade_merge_step(merge_step)


def test_merge_step_cases_are_learn_merges_steps_whose_ties_code_point_order_breaks_as_learn_merges_does():
    for texts, k in _MERGE_CASES:
        rows, pair = _merge_step_case(texts, k)
        assert merge_step({before: n for before, _, n in rows}) == (pair, {after: n for _, after, n in rows})
    assert apply_merges(SPACE + "Schifffahrt", [("f", "f")]) == [
        SPACE,
        "S",
        "c",
        "h",
        "i",
        "ff",
        "f",
        "a",
        "h",
        "r",
        "t",
    ]


@pytest.mark.parametrize(
    "options, message",
    [
        (
            dict(weighted=False),
            r"merges \('e', 'n'\), not \('i', 'n'\): \('e', 'n'\) is in the most words \(5\), but a "
            r"word counts as often as it occurs: \('i', 'n'\) occurs 7 times",
        ),
        (
            dict(tie="counted first"),
            r"the pieces of 'the', 'and'\) merges \('▁', 't'\), not \('a', 'n'\): a tie: both "
            r"occur 3 times",
        ),
        (
            dict(direction="right"),
            r"turns '▁ S c h i f f f a h r t' into '▁ S c h i f ff a h r t', not "
            r"'▁ S c h i ff f a h r t': 'f f' overlaps itself",
        ),
        (dict(everywhere=False), "only the first occurrence is merged"),
        (dict(replace=True), r"after 7 merges\) turns '▁ a nd' into '▁ and', not '▁ a nd': str\.replace"),
        (dict(keep_all=False), r"has no word '▁' \(count 6\): keep every word, those without the pair as they are"),
    ],
)
def test_merge_step_check_catches_classic_mistakes(options, message):
    refused(grade_merge_step, lambda words: merge_step(words, **options), message)


def test_merge_step_check_wants_the_counts_kept_and_the_pair_as_a_tuple():
    refused(
        grade_merge_step,
        lambda words: (merge_step(words)[0], dict.fromkeys(merge_step(words)[1], 1)),
        "counts '▁ in' 1 times, not 6: a merge keeps each word's count",
    )
    refused(
        grade_merge_step,
        lambda words: ("".join(merge_step(words)[0]), merge_step(words)[1]),
        r"merged 'in': a pair is a tuple of two symbols, such as \('i', 'n'\)",
    )


def clipped(hypothesis, references, n, clip="max", total="hypothesis", lower=False, distinct=False):
    """BLEU's clipped n-gram counts, as a reader might write them (optionally with one mistake)."""

    def ngrams(text):
        words = text.lower().split() if lower else text.split()
        stop = len(words) - n + (0 if total == "one short" else 1)
        grams = Counter(tuple(words[i : i + n]) for i in range(stop))
        return Counter(set(grams)) if distinct else grams

    mine, each = ngrams(hypothesis), [ngrams(r) for r in references]
    if clip == "max":
        matches = sum(min(c, max(r[g] for r in each)) for g, c in mine.items())
    elif clip == "none":
        matches = sum(c for g, c in mine.items() if any(g in r for r in each))
    elif clip == "sum":
        matches = sum(min(c, sum(r[g] for r in each)) for g, c in mine.items())
    elif clip == "min":
        matches = sum(min(c, min(r[g] for r in each)) for g, c in mine.items())
    elif clip == "first":
        matches = sum(min(c, each[0][g]) for g, c in mine.items())
    else:  # the best single reference
        matches = max(sum(min(c, r[g]) for g, c in mine.items()) for r in each)
    return matches, sum(each[0].values()) if total == "reference" else sum(mine.values())


def test_clipped_matches_are_sacrebleus_counts_and_totals():
    sacrebleu = pytest.importorskip("sacrebleu")  # the live extra's; the book's build and make test have it
    bleu = sacrebleu.metrics.BLEU(tokenize="none", effective_order=True)  # words split at spaces, as the exercise's
    g = random.Random(0)
    words = ["in", "drei", "Tagen", "fünf", "und", "zwanzig", "vor"]
    random_cases = [
        (
            " ".join(g.choices(words, k=g.randint(1, 9))),
            [" ".join(g.choices(words, k=g.randint(1, 9))) for _ in range(g.randint(1, 3))],
        )
        for _ in range(50)
    ]
    cases = [(h, list(r)) for h, r, _ in _PRECISION_CASES] + random_cases
    for hypothesis, references in cases:
        score = bleu.sentence_score(hypothesis, references)
        for n in range(1, 5):
            assert clipped_matches(hypothesis, references, n) == (score.counts[n - 1], score.totals[n - 1])


def test_clipped_precision_check_passes_a_right_answer():
    grade_clipped_precision(clipped)


@pytest.mark.parametrize(
    "options, message",
    [
        (
            dict(clip="none"),
            r"precision\('the the the the the the the', .*n=1\) is \(7, 7\), not \(2, 7\): the counts "
            "are not clipped",
        ),
        (
            dict(clip="sum"),
            r"is \(3, 7\), not \(2, 7\): each n-gram is clipped by its count in all references together",
        ),
        (dict(clip="first"), r"n=1\) is \(1, 7\), not \(2, 7\): only the first reference is used"),
        (dict(clip="min"), r"n=1\) is \(1, 7\), not \(2, 7\): each n-gram is clipped by its smallest count"),
        (dict(clip="best"), r"is \(6, 7\), not \(7, 7\): the references are taken one at a time"),
        (
            dict(lower=True),
            r"precision\('In drei Tagen', .*\) is \(3, 3\), not \(2, 3\): the words are compared in "
            "lower case",
        ),
        (dict(distinct=True), r"is \(1, 1\), not \(2, 7\): each distinct n-gram is counted once"),
        (dict(total="one short"), r"n=1\) is \(2, 6\), not \(2, 7\): a text of L = 7 words has L - n \+ 1 = 7 n-grams"),
        (dict(total="reference"), r"is \(7, 5\), not \(7, 7\): the total counts a reference's n-grams"),
    ],
)
def test_clipped_precision_check_catches_classic_mistakes(options, message):
    refused(grade_clipped_precision, lambda *a: clipped(*a, **options), message)


def test_clipped_precision_check_wants_two_ints():
    refused(
        grade_clipped_precision,
        lambda *a: clipped(*a)[0] / clipped(*a)[1],
        r"returned 0\.2857142857142857: return the pair of counts",
    )
