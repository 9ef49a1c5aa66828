"""A shared subword vocabulary: byte-pair encoding (Sennrich et al., 2016), learned by hand and with `tokenizers`.

A word vocabulary (:mod:`transformer.train.tokenizer`) gives every word an id, so a word it has not seen, such as the
German number "dreihundertzweiundvierzig", is ``<unk>``. Byte-pair encoding starts from characters and learns
**merges**: count every pair of neighbouring symbols in the training text, merge the most frequent pair into a new
symbol, count again, and repeat. Frequent words end up whole, rarer ones as a few frequent pieces (after 300 symbols
learned from the translation task's pairs, ``▁drei hundert zwei undvier zig``), and any word of known characters can
be written.

The text is first cut into **pieces** that merges never cross (:func:`pre_tokenize`): a space becomes ``▁`` (U+2581)
glued to the word after it, as in SentencePiece (so decoding knows where the spaces were), every digit stands alone
(numbers are read digit by digit, as in the dates chapter), and so does every other sign. :func:`learn_merges` and
:func:`apply_merges` (:mod:`transformer.train.bpe`) are the algorithm written out; :class:`SubwordVocabulary` trains
and applies the same algorithm with Hugging Face's `tokenizers` (fast, and saved as one JSON file that other languages
can read), and the tests check that both learn the same merges and cut every text the same way.

A port of the tokenizer to another language (a web page) needs what :meth:`SubwordVocabulary.reference_encode`
does, with the vocabulary and the merges of :meth:`SubwordVocabulary.to_json`: Unicode NFC; ``▁`` read as a space;
every run of the :data:`WHITESPACE` characters one space, none at either end; spaces to ``▁`` and one ``▁`` in front
(unless the text is empty); the pieces :data:`PIECE_PATTERN` finds (a regular expression with Unicode property
classes, as JavaScript's ``u`` flag reads them); in each piece, the merge of lowest rank among neighbouring pairs,
leftmost first, until none applies; each symbol's id, or ``UNK_ID`` for a symbol not in the vocabulary (a character
never seen). Text that spells a special token ("<pad>") is plain text. Decoding joins the symbols, turns ``▁`` into
spaces and drops the first one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from torch import Tensor

from ..checks import check_int
from ..tokens import SPECIAL_TOKENS, UNK, UNK_ID
from .bpe import PIECE_PATTERN, SPACE, WHITESPACE, apply_merges, normalize, pre_tokenize
from .tokenizer import IdVocabulary, text_ids

SPECIALS = (*SPECIAL_TOKENS.values(), UNK)  # ids PAD_ID, BOS_ID, EOS_ID, UNK_ID
INITIAL_ALPHABET = tuple(chr(c) for c in range(0x21, 0x7F)) + tuple("ÄÖÜäöüß€£")  # known even when unseen


# ----------------------------------------------------------------------------------------------------------------
# The library


class SubwordVocabulary(IdVocabulary):
    """A byte-pair vocabulary shared by both languages, trained and applied by Hugging Face's `tokenizers`.

    Ids follow the package: ``PAD_ID``, ``BOS_ID``, ``EOS_ID`` and ``UNK_ID`` first (``<unk>`` for a character the
    vocabulary has never seen), then the characters, then the merged symbols in the order they were learned. It has
    the interface of :class:`~transformer.train.tokenizer.Vocabulary` (``tokenize``, ``encode``, ``decode``, their
    batch forms, ``len``), so batching by length and the training loop take it unchanged.
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
        check_int("vocab_size", vocab_size, minimum=len(SPECIALS) + 1)  # room for a character after the special ids
        tokenizer = Tokenizer(models.BPE(unk_token=UNK))
        tokenizer.normalizer = normalizers.Sequence(
            [
                normalizers.NFC(),
                normalizers.Replace(SPACE, " "),
                normalizers.Replace(Regex(f"[{WHITESPACE}]+"), " "),
                normalizers.Strip(),
                normalizers.Replace(" ", SPACE),
                normalizers.Prepend(SPACE),
            ]
        )
        tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(PIECE_PATTERN), behavior="isolated")
        tokenizer.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="always", split=False)
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=list(SPECIALS),
            show_progress=False,
            initial_alphabet=list(INITIAL_ALPHABET),
        )
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

    def __repr__(self) -> str:
        return f"SubwordVocabulary({len(self)} ids)"

    def tokenize(self, text: str) -> list[str]:
        """The subword tokens of ``text``, e.g. ``"dreihundertzweiundvierzig"`` -> ``▁drei hundertzweiundvierzig``."""
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
        return self.tokenizer.decode(text_ids(ids, len(self)), skip_special_tokens=False)
