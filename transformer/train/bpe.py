"""Byte-pair encoding (Sennrich et al., 2016) written out: the pieces a text is cut into, learning merges, applying them.

Byte-pair encoding starts from characters and learns **merges**: count every pair of neighbouring symbols in the
training text, merge the most frequent pair into a new symbol, count again, and repeat. The text is first cut into
**pieces** that merges never cross (:func:`pre_tokenize`): a space becomes ``▁`` (U+2581) glued to the word after it,
as in SentencePiece, every digit stands alone, and so does every other sign. Plain Python, no library:
:class:`transformer.train.subwords.SubwordVocabulary` trains and applies the same algorithm with Hugging Face's
`tokenizers`, and the tests check that both learn the same merges and cut every text the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..checks import check_int

SPACE = "\u2581"  # ▁, which stands for the space before a word
WHITESPACE = "\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"  # Unicode's White_Space, as a regex class
PIECE_PATTERN = rf"{SPACE}?[\p{{L}}\p{{M}}]+|\p{{N}}|{SPACE}|[^\p{{L}}\p{{M}}\p{{N}}{SPACE}]"  # what pre_tokenize finds
_WHITESPACE_RUN = re.compile(f"[{WHITESPACE}]+")


def normalize(text: str) -> str:
    """What both tokenizers read: Unicode NFC (one code point for "ä"), every run of whitespace (and ``▁``) one
    space, no space at either end."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}: {text!r}")
    return _WHITESPACE_RUN.sub(" ", unicodedata.normalize("NFC", text).replace(SPACE, " ")).strip(" ")


def _is_letter(char: str) -> bool:
    return unicodedata.category(char)[0] in "LM"  # letters and combining marks: \p{L} and \p{M}


def pre_tokenize(text: str) -> list[str]:
    """The pieces of ``text`` that merges never cross: ``"Mittwoch, 25. November"`` ->
    ``▁Mittwoch , ▁ 2 5 . ▁November``. Each space becomes ``▁`` glued to the word after it (and one ``▁`` starts
    the text); a run of letters is one piece, every digit and every other sign one piece of its own: the
    pieces :data:`PIECE_PATTERN` finds."""
    text = normalize(text)
    marked = SPACE + text.replace(" ", SPACE) if text else ""
    pieces, i = [], 0
    while i < len(marked):
        start = i + 1 if marked[i] == SPACE else i  # a ▁ joins the letters after it
        end = start
        while end < len(marked) and _is_letter(marked[end]):
            end += 1
        end = end if end > start else i + 1  # no letters: the ▁, the digit or the sign alone
        pieces.append(marked[i:end])
        i = end
    return pieces


@dataclass(frozen=True)
class Merge:
    """One step of learning: the pair of symbols merged, and how often it occurred when it was chosen."""

    left: str
    right: str
    count: int


def learn_merges(texts: Iterable[str], n_merges: int) -> list[Merge]:
    """Learn up to ``n_merges`` merges from ``texts``, as Sennrich et al. (2016) do: count the pieces
    (:func:`pre_tokenize`), start each from its characters, then repeatedly merge the most frequent pair of
    neighbouring symbols everywhere it occurs. Ties go to the pair whose symbols came first (characters in
    code-point order, merged symbols in the order they were made), the rule of `tokenizers`' trainer."""
    check_int("n_merges", n_merges, minimum=0)
    pieces = Counter(piece for text in texts for piece in pre_tokenize(text))
    order = {char: i for i, char in enumerate(sorted({char for piece in pieces for char in piece}))}
    words = [(list(piece), count) for piece, count in pieces.items()]
    merges: list[Merge] = []
    while len(merges) < n_merges:
        pairs: Counter[tuple[str, str]] = Counter()
        for symbols, count in words:
            for pair in zip(symbols, symbols[1:], strict=False):
                pairs[pair] += count
        if not pairs:
            break
        (left, right), count = min(pairs.items(), key=lambda item: (-item[1], order[item[0][0]], order[item[0][1]]))
        merges.append(Merge(left, right, count))
        order.setdefault(left + right, len(order))
        for symbols, _ in words:
            _merge_pair(symbols, left, right)
    return merges


def _merge_pair(symbols: list[str], left: str, right: str) -> None:
    """Replace every ``left, right`` neighbours in ``symbols`` with ``left + right``, from the left, in place."""
    i = 0
    while i < len(symbols) - 1:
        if symbols[i] == left and symbols[i + 1] == right:
            symbols[i : i + 2] = [left + right]
        i += 1


def apply_merges(piece: str, merges: Sequence[Merge] | Sequence[tuple[str, str]]) -> list[str]:
    """The symbols of ``piece`` after the merges: start from its characters and, while any neighbouring pair is a
    merge, merge the pair that was learned first. (Applying the merges in the order they were learned, each
    everywhere, gives the same result; this is how tokenizers apply them, and faster.)"""
    rank = {(m.left, m.right) if isinstance(m, Merge) else tuple(m): i for i, m in enumerate(merges)}
    symbols = list(piece)
    while len(symbols) > 1:
        ranked = [(rank.get(pair, len(rank)), i) for i, pair in enumerate(zip(symbols, symbols[1:], strict=False))]
        best, i = min(ranked)
        if best == len(rank):
            break
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols
