"""A vocabulary built from text: tokenize, map tokens to ids and back, with an id for tokens it has never seen.

The ids follow :mod:`transformer.tokens`: ``PAD_ID``, ``BOS_ID`` and ``EOS_ID`` come first, then ``UNK_ID`` for any
token the vocabulary does not hold, then the tokens of the text it was built from, the most frequent first (ties in
alphabetical order, so that the same text always gives the same ids).

Two levels of tokens:

- ``"word"``: lower-cased words, punctuation marks and single digits: ``"March 23rd, 1999"`` ->
  ``march 2 3 rd , 1 9 9 9``. Numbers written with digits become one token per digit, so any year is spelled with ten
  tokens instead of needing one of its own; words joined by a hyphen are two words and the hyphen
  (``twenty - third``).
- ``"char"``: one token per character, case kept: ``"1999-03-23"`` -> ``1 9 9 9 - 0 3 - 2 3``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

from ..tokens import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK, UNK_ID

LEVELS = ("word", "char")
_WORD = re.compile(r"[^\W\d_]+|\d|[^\w\s]|_")  # runs of letters, single digits, single punctuation marks


def tokenize(text: str, level: str = "word") -> list[str]:
    """Split ``text`` into tokens at ``level`` ("word": lower-cased letters, digits one by one, punctuation alone;
    "char": every character, spaces included)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}: {text!r}")
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}; got {level!r}")
    return _WORD.findall(text.lower()) if level == "word" else list(text)


def text_ids(ids: Sequence[int] | Tensor, vocab_size: int) -> list[int]:
    """The ids of ``ids`` that stand for text: up to the first EOS, without PAD and BOS. Each must be an int in
    ``[0, vocab_size)``."""
    ids = ids.tolist() if isinstance(ids, Tensor) else list(ids)
    kept = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < vocab_size:
            raise ValueError(f"ids must be ints in [0, {vocab_size}) (this vocabulary's size); got {i!r}")
        if i == EOS_ID:
            break
        if i not in (PAD_ID, BOS_ID):
            kept.append(i)
    return kept


class IdVocabulary:
    """What every vocabulary has once it has ``itos`` (id -> token), ``stoi`` (token -> id), ``encode`` and ``decode``:
    its size, membership, and the batched forms of encoding and decoding."""

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def encode_batch(self, texts: Sequence[str]) -> Tensor:
        """``(B, L)`` long: the ids of every text, right-padded with ``PAD_ID`` to the longest (``L >= 1``)."""
        if isinstance(texts, str) or not len(texts):
            raise ValueError(f"texts must be a non-empty sequence of strings; got {texts!r}")
        encoded = [self.encode(text) for text in texts]
        out = torch.full((len(encoded), max(1, *map(len, encoded))), PAD_ID, dtype=torch.long)  # (B, L)
        for row, ids in enumerate(encoded):
            out[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        return out

    def decode_batch(self, ids: Tensor) -> list[str]:
        """One text per row of ``ids (B, L)``, each decoded as ``decode`` does (so up to its first EOS)."""
        if not isinstance(ids, Tensor) or ids.dim() != 2:
            raise ValueError(f"ids must be a 2-D tensor (B, L); got {getattr(ids, 'shape', type(ids).__name__)}")
        return [self.decode(row) for row in ids]


class Vocabulary(IdVocabulary):
    """Tokens and their ids: ``PAD_ID``, ``BOS_ID``, ``EOS_ID``, ``UNK_ID`` first, then ``tokens`` in order.

    Build one from text with :meth:`build`; ``len(vocab)`` is the vocabulary size a model's embedding needs.
    """

    def __init__(self, tokens: Sequence[str], level: str = "word"):
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}; got {level!r}")
        tokens = list(tokens)
        specials = [*SPECIAL_TOKENS.values(), UNK]
        if any(not isinstance(t, str) or not t for t in tokens):
            raise ValueError(
                f"tokens must be non-empty strings; got {[t for t in tokens if not isinstance(t, str) or not t]!r}"
            )
        if len(set(tokens)) != len(tokens) or set(tokens) & set(specials):
            repeated = sorted({t for t in tokens if tokens.count(t) > 1} | (set(tokens) & set(specials)))
            raise ValueError(f"tokens must be distinct and not special ({specials}); repeated or special: {repeated}")
        self.level = level
        self.itos = specials + tokens  # id -> token
        self.stoi = {token: i for i, token in enumerate(self.itos)}  # token -> id

    @classmethod
    def build(cls, texts: Iterable[str], level: str = "word", min_count: int = 1) -> Vocabulary:
        """The vocabulary of ``texts``: every token seen at least ``min_count`` times, the most frequent first."""
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of strings, not one string (wrap it in a list)")
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"min_count must be a positive int; got {min_count!r}")
        counts = Counter(token for text in texts for token in tokenize(text, level))
        if not counts:
            raise ValueError("texts must hold at least one token; got no text, or only empty ones")
        kept = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        return cls(kept, level)

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} ids, level={self.level!r})"

    def tokenize(self, text: str) -> list[str]:
        """``text`` split at this vocabulary's level (see :func:`tokenize`)."""
        return tokenize(text, self.level)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``'s tokens; a token the vocabulary does not hold becomes ``UNK_ID``. No BOS or EOS."""
        return [self.stoi.get(token, UNK_ID) for token in self.tokenize(text)]

    def unknown(self, text: str) -> list[str]:
        """The tokens of ``text`` that the vocabulary does not hold (those :meth:`encode` turns into ``UNK_ID``)."""
        return [token for token in self.tokenize(text) if token not in self.stoi]

    def decode(self, ids: Sequence[int] | Tensor) -> str:
        """Text from ids: stops at the first EOS, skips PAD and BOS; words are joined by spaces, characters by nothing.

        For text whose tokens the vocabulary holds, ``tokenize(decode(encode(text))) == tokenize(text)``; at the
        character level ``decode(encode(text)) == text``.
        """
        tokens = [self.itos[i] for i in text_ids(ids, len(self))]
        return ("" if self.level == "char" else " ").join(tokens)
