"""The exercises of chapter 10 (``book/10_translation.ipynb``): one step of byte-pair encoding, and BLEU's clipped
n-gram counts (:func:`clipped_matches`)."""

from __future__ import annotations

import functools
import operator
from collections import Counter
from collections.abc import Callable, Sequence

from transformer.train.bpe import apply_merges, learn_merges, pre_tokenize
from transformer_book.i18n import tr

__all__ = ["clipped_matches", "grade_clipped_precision", "grade_merge_step"]

Words = dict[tuple[str, ...], int]  # byte-pair encoding's working state: each piece as its symbols, and its count

_NUMBER_TEXTS = (
    "dreihundertzweiundvierzig",
    "fünfundzwanzig",
    "vierundsechzigtausendfünfundzwanzig",
    "zweiundzwanzig",
    "three hundred and forty-two",
    "twenty-five",
    "sixty-four thousand and twenty-five",
    "twenty-two",
)
_MERGE_CASES = (  # (texts, merges learned before the step to take)
    (("in 3 Stunden", "in 5 Minuten", "in 2 Sekunden", "in 1 Jahr", "in 4 Wochen", "in 6 Monaten"), 0),
    (("the",) * 3 + ("and",) * 3, 0),  # a tie: six pairs, each 3 times
    (("Schifffahrt",) * 3 + ("Kaffee",), 0),  # f f f: a pair that overlaps itself
    (_NUMBER_TEXTS, 0),  # "nd" three times in one word
    (_NUMBER_TEXTS, 7),  # symbols already merged ("nd", "und"): the next merge, a + n, must not take a + nd
)


def _merge_step_case(
    texts: Sequence[str], k: int
) -> tuple[list[tuple[tuple[str, ...], tuple[str, ...], int]], tuple[str, str]]:
    """The pieces of ``texts`` as ``(symbols after k merges, symbols after k + 1, count)`` and merge k + 1, all as
    ``learn_merges`` learns them and ``apply_merges`` applies them."""
    pieces = Counter(piece for text in texts for piece in pre_tokenize(text))
    merges = learn_merges(texts, k + 1)
    rows = [
        (tuple(apply_merges(piece, merges[:k])), tuple(apply_merges(piece, merges)), n) for piece, n in pieces.items()
    ]
    return rows, (merges[k].left, merges[k].right)


def _pair_counts(words: Words, weighted: bool = True) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for symbols, n in words.items():
        for pair in zip(symbols, symbols[1:], strict=False):
            counts[pair] += n if weighted else 1
    return counts


def _most_frequent(counts: Counter[tuple[str, str]]) -> tuple[str, str]:
    return min(counts, key=lambda pair: (-counts[pair], pair))


def _spelled(symbols: Sequence[str]) -> str:
    return " ".join(symbols)


def _merge_mistake(before: tuple[str, ...], mine: tuple[str, ...], pair: tuple[str, str]) -> str:
    """The hint for a word merged wrongly, naming the classic mistakes."""
    left, right = pair
    if tuple(_spelled(before).replace(f"{left} {right}", left + right).split()) == mine:
        return tr(
            "str.replace on the symbols joined by spaces also matches '{left} {right}' inside longer symbols; "
            "Sennrich et al.'s code bounds the pattern by spaces, re.sub(r'(?<!\\S)' + re.escape(bigram) + "
            "r'(?!\\S)', ...), or merge symbol by symbol",
            left=left,
            right=right,
        )
    if left == right and any(before[i : i + 3] == (left,) * 3 for i in range(len(before) - 2)):
        return tr(
            "'{left} {right}' overlaps itself in '{word}': merge from the left, each symbol at most once, and move "
            "past the merged pair",
            left=left,
            right=right,
            word=_spelled(before),
        )
    first = list(before)
    i = next((i for i, p in enumerate(zip(before, before[1:], strict=False)) if p == pair), None)
    if i is not None:
        first[i : i + 2] = [left + right]
    if tuple(first) == mine:
        return tr("only the first occurrence is merged: merge the pair everywhere in the word")
    return ""


def grade_merge_step(merge_step: Callable[[Words], tuple[tuple[str, str], Words]]) -> None:
    """``merge_step(words)`` must take one step of byte-pair encoding as ``transformer.train.bpe.learn_merges``
    does: ``words`` maps each piece, as a tuple of symbols, to its count; count every pair of neighbouring symbols,
    each word's pairs as often as the word occurs; return the most frequent pair and the words with that pair merged
    everywhere, from the left (``apply_merges``), every count kept. A tie goes to the pair whose symbols come first in
    code-point order (Python's string order, left symbol first): on characters, ``learn_merges``' and `tokenizers`'
    rule (they order a merged symbol by when it was made; no case here has a tie that the two orders break
    differently). For the pieces of sentences of the chapter's kinds, from characters and after 7 merges."""
    for texts, k in _MERGE_CASES:
        rows, pair = _merge_step_case(texts, k)
        words = {before: n for before, _, n in rows}
        shown = ", ".join(repr(text) for text in dict.fromkeys(texts))
        if k:
            call = tr("merge_step(the pieces of {texts}, after {k} merges)", texts=shown, k=k)
        else:
            call = tr("merge_step(the pieces of {texts})", texts=shown)
        result = merge_step(dict(words))  # a copy: the answer may change it in place
        assert isinstance(result, tuple) and len(result) == 2, tr(
            "{call} returned {kind}: return the pair (pair merged, words after the merge)",
            call=call,
            kind=type(result).__name__,
        )
        mine_pair, mine_words = result
        assert isinstance(mine_pair, tuple) and len(mine_pair) == 2 and all(isinstance(s, str) for s in mine_pair), tr(
            "{call} merged {mine!r}: a pair is a tuple of two symbols, such as {pair!r}",
            call=call,
            mine=mine_pair,
            pair=pair,
        )
        counts = _pair_counts(words)
        if mine_pair != pair:
            unweighted = _pair_counts(words, weighted=False)
            if counts[mine_pair] == counts[pair]:
                hint = tr(
                    "a tie: both occur {count} times, and a tie goes to the pair first in code-point order, {pair!r}, "
                    "as learn_merges and tokenizers break it (Counter.most_common and max keep the pair counted first)",
                    count=counts[pair],
                    pair=pair,
                )
            elif mine_pair == _most_frequent(unweighted):
                hint = tr(
                    "{mine!r} is in the most words ({words}), but a word counts as often as it occurs: {pair!r} occurs "
                    "{count} times, {mine!r} {mine_count}",
                    mine=mine_pair,
                    words=unweighted[mine_pair],
                    pair=pair,
                    count=counts[pair],
                    mine_count=counts[mine_pair],
                )
            elif counts[mine_pair] == 0:
                hint = tr("{mine!r} is not a pair of neighbouring symbols in any word", mine=mine_pair)
            else:
                hint = tr(
                    "{mine!r} occurs {mine_count} times, {pair!r} {count}",
                    mine=mine_pair,
                    mine_count=counts[mine_pair],
                    pair=pair,
                    count=counts[pair],
                )
            raise AssertionError(
                tr("{call} merges {mine!r}, not {pair!r}: {hint}", call=call, mine=mine_pair, pair=pair, hint=hint)
            )
        assert isinstance(mine_words, dict) and all(isinstance(w, tuple) for w in mine_words), tr(
            "{call} returned words of type {kind}: return a dict from each word's symbols (a tuple) to its count, as "
            "words is",
            call=call,
            kind=type(mine_words).__name__,
        )
        by_text = {"".join(word): word for word in mine_words}
        for before, after, n in rows:
            mine = by_text.get("".join(before))
            if mine is None:
                raise AssertionError(
                    tr(
                        "{call} has no word '{word}' (count {n}): keep every word, those without the pair as they are",
                        call=call,
                        word=_spelled(after),
                        n=n,
                    )
                )
            if mine != after:
                hint = _merge_mistake(before, mine, pair)
                values = dict(call=call, before=_spelled(before), mine=_spelled(mine), after=_spelled(after))
                if hint:
                    raise AssertionError(
                        tr("{call} turns '{before}' into '{mine}', not '{after}': {hint}", hint=hint, **values)
                    )
                raise AssertionError(tr("{call} turns '{before}' into '{mine}', not '{after}'", **values))
            assert mine_words[mine] == n, tr(
                "{call} counts '{word}' {count!r} times, not {n}: a merge keeps each word's count",
                call=call,
                word=_spelled(after),
                count=mine_words[mine],
                n=n,
            )
        assert len(mine_words) == len(rows), tr(
            "{call} returns {mine} words, not {expected}", call=call, mine=len(mine_words), expected=len(rows)
        )


def _ngrams(words: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def clipped_matches(hypothesis: str, references: Sequence[str], n: int) -> tuple[int, int]:
    """BLEU's modified n-gram precision as its two counts, ``(matches, total)`` (Papineni et al., 2002, section 2.1;
    sacrebleu's ``counts`` and ``totals``): the words are the texts split at spaces; each n-gram of the hypothesis
    matches at most as often as it occurs in the one reference that holds it most; the total is the hypothesis'
    number of n-grams."""
    mine = _ngrams(hypothesis.split(), n)
    most: Counter[tuple[str, ...]] = Counter()
    for reference in references:
        most |= _ngrams(reference.split(), n)  # the union of Counters keeps the larger count
    return sum((mine & most).values()), sum(mine.values())


_PRECISION_CASES = (  # (hypothesis, references, n)
    ("the the the the the the the", ("there is a cat on the mat", "the cat is on the mat"), 1),  # Papineni et al.
    ("in fünf Tagen oder in fünf Wochen", ("fünf Tage oder fünf Wochen", "in sechs Tagen oder in fünf Wochen"), 1),
    ("in fünf Tagen oder in fünf Wochen", ("fünf Tage oder fünf Wochen", "in sechs Tagen oder in fünf Wochen"), 2),
    ("In drei Tagen", ("in drei Tagen",), 1),
    ("vor drei Tagen", ("vor drei Tagen",), 3),
    ("vor drei Tagen", ("vor drei Tagen",), 4),
    ("Mittwoch, 25. November 2026", ("Mittwoch, 25. November 2026", "Mittwoch, den 25. November 2026"), 2),
)


def _match_mistakes(hypothesis: str, references: Sequence[str], n: int) -> dict[str, int]:
    """What each classic mistake makes of the clipped matches (the first count), by the hint that names it."""
    ngrams = _ngrams(hypothesis.split(), n)
    each = [_ngrams(r.split(), n) for r in references]
    return {
        tr(
            "the counts are not clipped: an n-gram matches at most as often as the reference that holds it most "
            "holds it (else seven times 'the' would score 7 of 7 against 'the cat is on the mat')"
        ): sum(c for g, c in ngrams.items() if any(g in r for r in each)),
        tr(
            "each n-gram is clipped by its count in all references together: clip by its largest count in any "
            "single reference"
        ): sum((ngrams & sum(each, Counter())).values()),
        tr(
            "each n-gram is clipped by its smallest count among the references: clip by its largest, in any "
            "single reference"
        ): sum((ngrams & functools.reduce(operator.and_, each)).values()),
        tr("only the first reference is used: clip by an n-gram's largest count in any of them"): sum(
            (ngrams & each[0]).values()
        ),
        tr(
            "the references are taken one at a time, the best one kept: clip n-gram by n-gram, by its largest "
            "count in any reference (two references can each supply different n-grams)"
        ): max(sum((ngrams & r).values()) for r in each),
        tr("the words are compared in lower case: BLEU as sacrebleu computes it by default is case-sensitive"): (
            clipped_matches(hypothesis.lower(), [r.lower() for r in references], n)[0]
        ),
    }


def grade_clipped_precision(precision: Callable[[str, Sequence[str], int], tuple[int, int]]) -> None:
    """``precision(hypothesis, references, n)`` must return BLEU's clipped n-gram counts ``(matches, total)`` as
    :func:`clipped_matches` (and sacrebleu) computes them, for one and two references, n from 1 to 4, a hypothesis
    with fewer than n words, and capitals. It names a total one short, a reference's total, distinct n-grams, and
    matches not clipped, clipped by the references' sum or smallest count, by the first or the best reference only,
    or compared in lower case."""
    for hypothesis, references, n in _PRECISION_CASES:
        call = f"precision({hypothesis!r}, {list(references)!r}, n={n})"
        mine = precision(hypothesis, list(references), n)
        assert (
            isinstance(mine, tuple)
            and len(mine) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in mine)
        ), tr("{call} returned {mine!r}: return the pair of counts (matches, total), two ints", call=call, mine=mine)
        expected = clipped_matches(hypothesis, references, n)
        if mine == expected:
            continue
        length = len(hypothesis.split())
        if mine[1] != expected[1]:
            if mine[1] == max(0, length - n):
                hint = tr(
                    "a text of L = {length} words has L - n + 1 = {total} n-grams (the last one is missed)",
                    length=length,
                    total=expected[1],
                )
            elif mine[1] in {sum(_ngrams(r.split(), n).values()) for r in references}:
                hint = tr(
                    "the total counts a reference's n-grams (that is recall): precision divides by the hypothesis' "
                    "n-grams, L - n + 1 = {total}",
                    total=expected[1],
                )
            elif mine[1] == len(_ngrams(hypothesis.split(), n)):
                hint = tr("each distinct n-gram is counted once: an n-gram that occurs twice counts twice")
            else:
                hint = tr("the total is the hypothesis' number of n-grams, L - n + 1 = {total}", total=expected[1])
            raise AssertionError(
                tr("{call} is {mine}, not {expected}: {hint}", call=call, mine=mine, expected=expected, hint=hint)
            )
        answers = {case: precision(case[0], list(case[1]), case[2]) for case in _PRECISION_CASES}
        hint = next(
            (
                hint
                for hint, wrong in _match_mistakes(hypothesis, references, n).items()
                if wrong == mine[0] != expected[0]
                and all(  # the same mistake in every case: two mistakes that give one count here are told apart
                    answer[0] == _match_mistakes(*case)[hint]
                    for case, answer in answers.items()
                    if isinstance(answer, tuple) and answer[1:] == clipped_matches(*case)[1:]
                )
            ),
            "",
        )
        if hint:
            raise AssertionError(
                tr("{call} is {mine}, not {expected}: {hint}", call=call, mine=mine, expected=expected, hint=hint)
            )
        raise AssertionError(tr("{call} is {mine}, not {expected}", call=call, mine=mine, expected=expected))
