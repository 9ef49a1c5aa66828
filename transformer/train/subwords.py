"""A shared subword vocabulary: byte-pair encoding (Sennrich et al., 2016), learned by hand and with `tokenizers`.

A word vocabulary (:mod:`transformer.tokenizer`) gives every word an id, so a word it has not seen, such as the
German number "dreihundertzweiundvierzig", is ``<unk>``. Byte-pair encoding starts from characters and learns
**merges**: count every pair of neighbouring symbols in the training text, merge the most frequent pair into a new
symbol, count again, and repeat. Frequent words end up whole, rarer ones as a few frequent pieces
(``▁drei hundert zwei und vierzig``), and any word of known characters can be written.

The text is first cut into **pieces** that merges never cross (:func:`pre_tokenize`): a space becomes ``▁`` (U+2581)
glued to the word after it, as in SentencePiece (so decoding knows where the spaces were), every digit stands alone
(numbers are read digit by digit, as in the dates chapter), and so does every other sign. :func:`learn_merges` and
:func:`apply_merges` are the algorithm written out; :class:`SubwordVocabulary` trains and applies the same
algorithm with Hugging Face's `tokenizers` (fast, and saved as one JSON file that other languages can read), and the
tests check that both cut every text the same way.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ..data import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS
from ..tokenizer import UNK, UNK_ID

SPACE = "\u2581"  # ▁, which stands for the space before a word
WHITESPACE = "\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"  # Unicode's White_Space, as a regex class
PIECE_PATTERN = rf"{SPACE}?[\p{{L}}\p{{M}}]+|\p{{N}}|{SPACE}|[^\p{{L}}\p{{M}}\p{{N}}{SPACE}]"  # what pre_tokenize finds
SPECIALS = (*SPECIAL_TOKENS.values(), UNK)  # ids PAD_ID, BOS_ID, EOS_ID, UNK_ID
_WHITESPACE_RUN = re.compile(f"[{WHITESPACE}]+")
INITIAL_ALPHABET = tuple(chr(c) for c in range(0x21, 0x7F)) + tuple("ÄÖÜäöüß€£")  # known even when unseen


# ----------------------------------------------------------------------------------------------------------------
# The algorithm, by hand


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
    if isinstance(n_merges, bool) or not isinstance(n_merges, int) or n_merges < 0:
        raise ValueError(f"n_merges must be a non-negative int; got {n_merges!r}")
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


# ----------------------------------------------------------------------------------------------------------------
# The library


class SubwordVocabulary:
    """A byte-pair vocabulary shared by both languages, trained and applied by Hugging Face's `tokenizers`.

    Ids follow the package: ``PAD_ID``, ``BOS_ID``, ``EOS_ID`` and ``UNK_ID`` first (``<unk>`` for a character the
    vocabulary has never seen), then the characters, then the merged symbols in the order they were learned. It has
    the interface of :class:`~transformer.tokenizer.Vocabulary` (``tokenize``, ``encode``, ``decode``, their batch
    forms, ``len``), so batching by length and the training loop take it unchanged.
    """

    def __init__(self, tokenizer: object):
        from tokenizers import Tokenizer

        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a tokenizers.Tokenizer; got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer
        tokenizer.encode_special_tokens = True  # "<pad>" typed in a text is five characters, not PAD_ID
        vocab = tokenizer.get_vocab()
        self.itos = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]  # id -> token
        self.stoi = vocab  # token -> id
        if tuple(self.itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"the tokenizer's first ids must be {SPECIALS}; got {self.itos[: len(SPECIALS)]}")
        merges = json.loads(tokenizer.to_str())["model"]["merges"]  # in the order they were learned
        self.merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int) -> SubwordVocabulary:
        """Learn merges from ``texts`` until the vocabulary holds ``vocab_size`` ids (fewer if the texts run out of
        pairs): the special ids, every character of :data:`INITIAL_ALPHABET` and of the texts, then the merges."""
        from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of strings, not one string (wrap it in a list)")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= len(SPECIALS):
            raise ValueError(f"vocab_size must be an int above {len(SPECIALS)} (the special ids); got {vocab_size!r}")
        tokenizer = Tokenizer(models.BPE(unk_token=UNK))
        tokenizer.normalizer = normalizers.Sequence([
            normalizers.NFC(), normalizers.Replace(SPACE, " "), normalizers.Replace(Regex(f"[{WHITESPACE}]+"), " "),
            normalizers.Strip(), normalizers.Replace(" ", SPACE), normalizers.Prepend(SPACE),
        ])
        tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(PIECE_PATTERN), behavior="isolated")
        tokenizer.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="always", split=False)
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), show_progress=False,
                                      initial_alphabet=list(INITIAL_ALPHABET))
        tokenizer.train_from_iterator(texts, trainer)
        return cls(tokenizer)

    @classmethod
    def from_json(cls, text: str) -> SubwordVocabulary:
        """The vocabulary saved by :meth:`to_json`."""
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_str(text))

    def to_json(self) -> str:
        """Everything needed to tokenize as this vocabulary does, as `tokenizers`' JSON (merges in order)."""
        return self.tokenizer.to_str()

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def __repr__(self) -> str:
        return f"SubwordVocabulary({len(self)} ids)"

    def tokenize(self, text: str) -> list[str]:
        """The subword tokens of ``text``: ``"dreihundertzweiundvierzig"`` -> ``▁drei hundert zwei und vierzig``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__}: {text!r}")
        return self.tokenizer.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``'s tokens (``UNK_ID`` for a character the vocabulary has never seen). No BOS or EOS."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__}: {text!r}")
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def reference_encode(self, text: str) -> list[int]:
        """The ids of ``text`` by the algorithm written out: :func:`pre_tokenize`, :func:`apply_merges` with this
        vocabulary's merges, then each symbol's id (``UNK_ID`` for an unknown character). The same ids as
        :meth:`encode` (the tests check it on any text): what a port of the tokenizer to another language computes."""
        symbols = [symbol for piece in pre_tokenize(text) for symbol in apply_merges(piece, self.merges)]
        return [self.stoi.get(symbol, UNK_ID) for symbol in symbols]

    def unknown(self, text: str) -> list[str]:
        """The characters of ``text`` that the vocabulary does not hold (those :meth:`encode` turns into ``UNK_ID``)."""
        return [char for char in normalize(text) if char != " " and char not in self.stoi]

    def decode(self, ids: Sequence[int] | Tensor) -> str:
        """Text from ids: stops at the first EOS, skips PAD and BOS, joins the tokens and turns ``▁`` back into
        spaces. ``decode(encode(text)) == text`` for text of known characters in :func:`normalize`'s form."""
        ids = ids.tolist() if isinstance(ids, Tensor) else list(ids)
        kept = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self):
                raise ValueError(f"ids must be ints in [0, {len(self)}) (this vocabulary's size); got {i!r}")
            if i == EOS_ID:
                break
            if i not in (PAD_ID, BOS_ID):
                kept.append(i)
        return self.tokenizer.decode(kept, skip_special_tokens=False)

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
        """One text per row of ``ids (B, L)``, each decoded as :meth:`decode` does (so up to its first EOS)."""
        if not isinstance(ids, Tensor) or ids.dim() != 2:
            raise ValueError(f"ids must be a 2-D tensor (B, L); got {getattr(ids, 'shape', type(ids).__name__)}")
        return [self.decode(row) for row in ids]
