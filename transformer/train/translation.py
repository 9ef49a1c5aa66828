"""English -> German pairs written by Unicode CLDR (through Babel) and num2words: the paper's language pair, offline.

Every string on either side comes from a library that knows how each language writes a value; none is written by
hand here. Seven kinds of value (:data:`KINDS`, one example each in :data:`KIND_EXAMPLES`):

    number    num2words            "three hundred and forty-two"    ->  "dreihundertzweiundvierzig"
    date      CLDR date formats    "Wednesday, November 25, 2026"   ->  "Mittwoch, 25. November 2026"
    time      CLDR time formats    "3:45 PM"                        ->  "15:45"
    relative  CLDR relative times  "in 3 days", "3 days ago"        ->  "in 3 Tagen", "vor 3 Tagen"
    unit      CLDR unit patterns   "12.5 kilograms"                 ->  "12,5 Kilogramm"
    money     CLDR currencies      "€1,234.50", "3.00 British pounds"  ->  "1.234,50 €", "3,00 Britische Pfund"
    list      CLDR names and lists "Germany, France, and Italy"     ->  "Deutschland, Frankreich und Italien"

A pair is written from a **value** (its :attr:`Pair.key`: a number, a date, an amount in a currency, a set of
countries...) in a **style** (a date format, a word order...). :func:`is_held_out` puts every value on one side of
the split by a hash of the seed and the value, so a value of the test set appears in no style in training: the test
measures whether a model learned how German writes numbers, dates and lists, not which strings it saw. The words a
model cannot guess (the numbers below 20 and the tens, the singular of a unit, each country's name) are never held
out; only their combinations are.

CLDR separates some parts with typographic spaces (a no-break space in "12,50 €", a narrow one in "3:45 PM"); both
sides use plain spaces here, as a reader types them (:func:`plain_spaces`).
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from babel import Locale
from babel.dates import format_date, format_time, format_timedelta
from babel.lists import format_list
from babel.numbers import format_currency
from babel.units import format_unit
from num2words import num2words

from ..checks import check_choice, check_int
from ..config import TransformerConfig
from ..model import Transformer
from .bucketing import text_batches
from .config import RunConfig, TrainConfig
from .evaluation import text_scores, translate
from .loop import History
from .progress import Progress
from .recipes import small_model_config, train_on_pairs, translation_train_config
from .registry import REGISTRY, OptionError
from .subwords import SubwordVocabulary
from .tasks import Batch
from .text import TextTask

LANGUAGES = ("en", "de")  # source, target
TEST_FRACTION = 0.1  # the share of values held out for the test set
KINDS = ("number", "date", "time", "relative", "unit", "money", "list")
KIND_EXAMPLES = {
    "number": ("three hundred and forty-two", "dreihundertzweiundvierzig"),
    "date": ("Wednesday, November 25, 2026", "Mittwoch, 25. November 2026"),
    "time": ("3:45 PM", "15:45"),
    "relative": ("in 3 days", "in 3 Tagen"),
    "unit": ("12.5 kilograms", "12,5 Kilogramm"),
    "money": ("€1,234.50", "1.234,50 €"),
    "list": ("Germany, France, and Italy", "Deutschland, Frankreich und Italien"),
}
KIND_SHARES = {  # the share of each kind in the data: numbers, the hardest, get the most
    "number": 0.30,
    "date": 0.20,
    "time": 0.05,
    "relative": 0.10,
    "unit": 0.15,
    "money": 0.10,
    "list": 0.10,
}
DATE_FORMATS = ("full", "long", "medium", "short")  # CLDR's four date lengths
FIRST_DATE, LAST_DATE = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)  # a century: "5/16/30" is one date
MAX_NUMBER = 999_999  # num2words writes up to "neunhundertneunundneunzigtausendneunhundertneunundneunzig"
RELATIVE_UNITS = ("year", "month", "week", "day", "hour", "minute", "second")  # babel.dates.TIMEDELTA_UNITS
MEASURES = (  # CLDR unit identifiers
    "length-kilometer",
    "length-meter",
    "length-centimeter",
    "length-mile",
    "length-foot",
    "length-inch",
    "mass-kilogram",
    "mass-gram",
    "mass-pound",
    "mass-tonne",
    "volume-liter",
    "volume-milliliter",
    "duration-hour",
    "duration-minute",
    "duration-day",
    "duration-week",
    "duration-year",
    "temperature-celsius",
    "speed-kilometer-per-hour",
    "area-square-meter",
    "energy-kilowatt-hour",
    "digital-gigabyte",
    "percent",
)
CURRENCIES = ("EUR", "USD", "GBP", "CHF")
COUNTRIES = (  # ISO 3166 codes; CLDR names them in each language
    "DE",
    "FR",
    "IT",
    "ES",
    "PT",
    "NL",
    "BE",
    "AT",
    "CH",
    "PL",
    "CZ",
    "DK",
    "SE",
    "NO",
    "FI",
    "IE",
    "GB",
    "GR",
    "HU",
    "RO",
    "HR",
    "US",
    "CA",
    "MX",
    "BR",
    "JP",
    "CN",
    "IN",
    "AU",
    "EG",
    "TR",
    "RU",
)
LANGUAGE_NAMES = (  # ISO 639 codes; CLDR names them in each language
    "en",
    "de",
    "fr",
    "it",
    "es",
    "pt",
    "nl",
    "pl",
    "ru",
    "zh",
    "ja",
    "ar",
    "tr",
    "sv",
    "el",
    "da",
    "fi",
    "cs",
)
_SECONDS = {
    "year": 31_536_000,
    "month": 2_592_000,
    "week": 604_800,
    "day": 86_400,
    "hour": 3_600,
    "minute": 60,
    "second": 1,
}  # babel's own lengths, so that format_timedelta picks the unit asked for
_LOCALES = {language: Locale.parse(language) for language in LANGUAGES}
_TYPOGRAPHIC_SPACES = str.maketrans({"\u00a0": " ", "\u202f": " "})  # no-break space, narrow no-break space


@dataclass(frozen=True)
class Pair:
    """One English sentence and its German translation, the kind of value they write, and the value itself
    (``key``: what :func:`is_held_out` holds out, in every style)."""

    english: str
    german: str
    kind: str
    key: tuple


def plain_spaces(text: str) -> str:
    """``text`` with CLDR's no-break and narrow no-break spaces as plain spaces."""
    return text.translate(_TYPOGRAPHIC_SPACES)


# ----------------------------------------------------------------------------------------------------------------
# Each kind: draw a value and a style, and write them in a language


def _draw_number(rng: random.Random) -> tuple[tuple, object]:
    digits = rng.randint(1, len(str(MAX_NUMBER)))  # as many one-digit as six-digit numbers (not 1 in 100,000)
    return (rng.randint(0 if digits == 1 else 10 ** (digits - 1), 10**digits - 1),), None


def write_number(key: tuple, style: object, language: str) -> str:
    """``(342,)`` -> "three hundred and forty-two", "dreihundertzweiundvierzig" (num2words; no styles)."""
    return num2words(key[0], lang=language)


def _draw_date(rng: random.Random) -> tuple[tuple, object]:
    date = FIRST_DATE + datetime.timedelta(days=rng.randrange((LAST_DATE - FIRST_DATE).days + 1))
    style = rng.choice(DATE_FORMATS)
    if style == "medium" and date.month == 5:  # English "May 16, 2030" is both medium and long: write it long
        style = "long"
    return (date,), style


def write_date(key: tuple, style: object, language: str) -> str:
    """``(date,)`` in one of CLDR's :data:`DATE_FORMATS`: "full" writes "Wednesday, November 25, 2026",
    "Mittwoch, 25. November 2026"; "short" "11/25/26", "25.11.26"."""
    return format_date(key[0], style, locale=_LOCALES[language])


def _draw_time(rng: random.Random) -> tuple[tuple, object]:
    return (rng.randrange(24), rng.randrange(60)), None


def write_time(key: tuple, style: object, language: str) -> str:
    """``(hour, minute)`` in CLDR's short time format: ``(15, 45)`` -> "3:45 PM", "15:45"."""
    return format_time(datetime.time(*key), "short", locale=_LOCALES[language])


def _draw_relative(rng: random.Random) -> tuple[tuple, object]:
    return (rng.randint(1, 99), rng.choice(RELATIVE_UNITS)), rng.choice(("future", "past"))


def write_relative(key: tuple, style: object, language: str) -> str:
    """``(n, unit)`` from now, in the ``style`` "future" or "past": "in 3 days", "in 3 Tagen"; "3 days ago",
    "vor 3 Tagen" (CLDR's relative time patterns, through ``format_timedelta``)."""
    n, unit = key
    seconds = n * _SECONDS[unit] * (1 if style == "future" else -1)
    return format_timedelta(
        seconds, granularity=unit, threshold=math.inf, add_direction=True, locale=_LOCALES[language]
    )


def _draw_unit(rng: random.Random) -> tuple[tuple, object]:
    tenths = rng.randint(1, 999) * 10 if rng.random() < 0.5 else rng.randint(1, 9999)  # 1 to 999, or 0.1 to 999.9
    return (tenths, rng.choice(MEASURES)), None


def write_unit(key: tuple, style: object, language: str) -> str:
    """``(tenths, unit)``: ``(125, "mass-kilogram")`` -> "12.5 kilograms", "12,5 Kilogramm" (CLDR's long unit
    patterns, with the plural each number takes)."""
    tenths, unit = key
    return format_unit(Decimal(tenths).scaleb(-1).normalize(), unit, length="long", locale=_LOCALES[language])


def _draw_money(rng: random.Random) -> tuple[tuple, object]:
    digits = rng.randint(1, 6)  # whole units from 0 to 999,999
    whole = rng.randint(0 if digits == 1 else 10 ** (digits - 1), 10**digits - 1)
    cents = 0 if rng.random() < 0.3 else rng.randrange(100)
    return (100 * whole + cents, rng.choice(CURRENCIES)), rng.choice(("symbol", "name"))


def write_money(key: tuple, style: object, language: str) -> str:
    """``(cents, currency)`` with the currency's ``style`` "symbol" ("€1,234.50", "1.234,50 €") or "name"
    ("1,234.50 euros", "1.234,50 Euro"), CLDR's currency formats."""
    cents, currency = key
    format_type = "standard" if style == "symbol" else "name"
    return format_currency(Decimal(cents).scaleb(-2), currency, locale=_LOCALES[language], format_type=format_type)


def _draw_list(rng: random.Random) -> tuple[tuple, object]:
    domain = rng.choice(("countries", "languages"))
    codes = rng.sample(COUNTRIES if domain == "countries" else LANGUAGE_NAMES, rng.randint(2, 4))
    return (domain, tuple(sorted(codes))), (tuple(codes), rng.choice(("standard", "or")))


def write_list(key: tuple, style: object, language: str) -> str:
    """``(domain, codes)`` in the ``style`` ``(order, conjunction)``: CLDR's names of the countries or languages,
    joined as CLDR's list patterns join them ("Germany, France, and Italy", "Deutschland, Frankreich und Italien";
    "or" lists too)."""
    domain, (codes, conjunction) = key[0], style
    locale = _LOCALES[language]
    names = locale.territories if domain == "countries" else locale.languages
    return format_list([names[code] for code in codes], style=conjunction, locale=locale)


_DRAW: Mapping[str, Callable[[random.Random], tuple[tuple, object]]] = {
    "number": _draw_number,
    "date": _draw_date,
    "time": _draw_time,
    "relative": _draw_relative,
    "unit": _draw_unit,
    "money": _draw_money,
    "list": _draw_list,
}
_WRITE: Mapping[str, Callable[[tuple, object, str], str]] = {
    "number": write_number,
    "date": write_date,
    "time": write_time,
    "relative": write_relative,
    "unit": write_unit,
    "money": write_money,
    "list": write_list,
}
_ALWAYS_TRAINING: Mapping[str, Callable[[tuple], bool]] = {  # values whose words no other value teaches
    "number": lambda key: key[0] < 20 or key[0] < 100 and key[0] % 10 == 0,  # "null" ... "neunzehn", "zwanzig" ...
    "relative": lambda key: key[0] == 1,  # the singular: "in 1 Tag", "vor 1 Tag"
    "unit": lambda key: key[0] == 10,  # the singular: "1 Meile", "1 Stunde"
}


@functools.cache  # values repeat in training (a number below 1,000, a date): write each once
def write(kind: str, key: tuple, style: object = None) -> Pair:
    """The pair that writes value ``key`` of ``kind`` in ``style``, in English and in German."""
    check_choice("kind", kind, KINDS)
    english, german = (plain_spaces(_WRITE[kind](key, style, language)) for language in LANGUAGES)
    return Pair(english, german, kind, key)


def is_held_out(kind: str, key: tuple, test_fraction: float = TEST_FRACTION, seed: int = 0) -> bool:
    """Whether value ``key`` of ``kind`` belongs to the test set: a hash of ``seed``, ``kind`` and ``key`` below
    ``test_fraction``, the same on every machine and in every Python (unlike ``hash()``). Values whose words no
    other value teaches (the numbers below 20 and the tens, a unit's singular) are always training values."""
    check_choice("kind", kind, KINDS)
    if kind in _ALWAYS_TRAINING and _ALWAYS_TRAINING[kind](key):
        return False
    digest = hashlib.blake2b(repr((seed, kind, key)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < test_fraction


def translation_pairs(
    n: int, split: str, test_fraction: float = TEST_FRACTION, seed: int = 0, shares: Mapping[str, float] = KIND_SHARES
) -> list[Pair]:
    """``n`` pairs of the ``split`` ("train" or "test") side of :func:`is_held_out`, drawn with a
    ``random.Random(seed)``: each pair's kind with probability ``shares[kind]``, then a value of that kind (drawn
    again until it falls on ``split``'s side) and a style. Training pairs may repeat; test pairs are distinct."""
    check_choice("split", split, ("train", "test"))
    check_int("n", n, minimum=1)
    if not isinstance(test_fraction, float) or not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be a float in (0, 1); got {test_fraction!r}")
    if (
        not shares
        or set(shares) - set(KINDS)
        or any(not share >= 0 for share in shares.values())
        or not sum(shares.values()) > 0
    ):
        raise ValueError(f"shares must map kinds from {KINDS} to non-negative weights, not all 0; got {shares!r}")
    rng = random.Random(f"{seed}-{split}")  # the same split for both sides, different draws
    kinds, weights = list(shares), list(shares.values())
    pairs: list[Pair] = []
    seen: set[str] = set()
    repeats = 0  # test pairs drawn again in a row: too many, and the test side has run out of pairs
    while len(pairs) < n:
        kind = rng.choices(kinds, weights)[0]
        key, style = _DRAW[kind](rng)
        while is_held_out(kind, key, test_fraction, seed) != (split == "test"):
            key, style = _DRAW[kind](rng)
        pair = write(kind, key, style)
        if split == "test":
            if pair.english in seen:
                repeats += 1
                if repeats > 100 * n:
                    raise ValueError(
                        f"the test side holds fewer than n={n} distinct pairs of these shares; ask for "
                        "fewer, or a larger test_fraction"
                    )
                continue
            seen.add(pair.english)
            repeats = 0
        pairs.append(pair)
    return pairs


def pairs_fingerprint(pairs: Sequence[Pair]) -> str:
    """A short hash of ``pairs``' kinds and text, in order: equal on every machine where the data libraries write the
    same strings, so a checkpoint can tell whether the pairs it is scored on are those it was trained beside."""
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(f"{pair.kind}\x00{pair.english}\x00{pair.german}\x01".encode())
    return digest.hexdigest()[:16]


def composition(pairs: Sequence[Pair]) -> dict[str, int]:
    """How many of ``pairs`` are of each kind, in the order of :data:`KINDS`."""
    return {kind: sum(pair.kind == kind for pair in pairs) for kind in KINDS}


@dataclass(frozen=True)
class TranslationData:
    """The task's data for one seed: training and test pairs written from disjoint sets of values, and the subword
    vocabulary both languages share, learned from the training pairs (English and German together)."""

    train: list[Pair]
    test: list[Pair]
    vocab: SubwordVocabulary

    def test_batches(self, batch_size: int = 500) -> list[Batch]:
        """The test pairs in order, as batches of ``batch_size`` (the last one may be smaller)."""
        return text_batches(
            [p.english for p in self.test], [p.german for p in self.test], self.vocab, self.vocab, batch_size
        )


def translation_data(
    n_train: int = 40_000,
    n_test: int = 1_000,
    vocab_size: int = 1_000,
    test_fraction: float = TEST_FRACTION,
    seed: int = 0,
) -> TranslationData:
    """``n_train`` training and ``n_test`` test pairs (:func:`translation_pairs`) of ``seed``'s split, and a
    :class:`~transformer.train.subwords.SubwordVocabulary` of ``vocab_size`` ids trained on both sides of the
    training pairs."""
    train = translation_pairs(n_train, "train", test_fraction, seed)
    test = translation_pairs(n_test, "test", test_fraction, seed)
    vocab = SubwordVocabulary.train([p.english for p in train] + [p.german for p in train], vocab_size)
    return TranslationData(train, test, vocab)


# ----------------------------------------------------------------------------------------------------------------
# The model, its training and its translations


def translation_config(vocab_size: int, **overrides) -> TransformerConfig:
    """The model of the translation chapter: the small model of the training chapter, twice as wide (d_model 64,
    4 heads, d_ff 128, 2 + 2 layers, no dropout), with the paper's post-norm layout, and, as the paper's section 3.4,
    one embedding table for both languages that is also the output layer."""
    values = dict(d_model=64, n_heads=4, norm_first=False, share_embeddings=True, tie_output_embedding=True)
    values.update(overrides)
    return small_model_config(src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, **values)


MAX_GERMAN_TOKENS = (
    48  # decoding stops here at the latest: longer than any German sentence, in subwords of 300 ids or more
)


def translation_scores(
    model: Transformer, pairs: Sequence[Pair], vocab: SubwordVocabulary, beam_size: int = 1
) -> dict[str, object]:
    """The chapter's scores of ``model``'s translations of ``pairs``, greedy (``beam_size`` 1) or with beam search:
    exact match, BLEU and chrF (:func:`~.evaluation.text_scores`), and ``"exact_match_by_kind"``, the share of each
    kind's pairs translated exactly, in the order of :data:`KINDS` (kinds with no pair left out)."""
    hypotheses = translate(model, [p.english for p in pairs], vocab, vocab, MAX_GERMAN_TOKENS, beam_size)
    scores: dict[str, object] = dict(text_scores(hypotheses, [p.german for p in pairs]))
    right = [h == p.german for h, p in zip(hypotheses, pairs, strict=True)]
    scores["exact_match_by_kind"] = {
        kind: sum(r for r, p in zip(right, pairs, strict=True) if p.kind == kind) / n
        for kind, n in composition(pairs).items()
        if n
    }
    return scores


def train_translation(
    data: TranslationData,
    config: TrainConfig | None = None,
    run: RunConfig | None = None,
    model_config: TransformerConfig | None = None,
    progress: Progress = True,
) -> tuple[Transformer, History]:
    """A model (:func:`translation_config` unless ``model_config``; its initial weights drawn with ``run.seed``)
    trained on ``data.train`` with ``config`` (default: the chapter's, :func:`~.recipes.translation_train_config`) in
    batches bucketed by source length, drawn with ``run.seed``, and evaluated on ``data.test``."""
    return train_on_pairs(
        model_config or translation_config(len(data.vocab)),
        [p.english for p in data.train],
        [p.german for p in data.train],
        data.vocab,
        data.vocab,
        data.test_batches(),
        config or translation_train_config(),
        run or RunConfig(),
        "translation",
        progress,
    )


def library_versions() -> dict[str, str]:
    """The versions of the libraries that write the pairs and cut them into subwords."""
    from importlib.metadata import version

    return {name: version(name) for name in REGISTRY["translation"].libraries}


class TranslationTask(TextTask):
    """The English-to-German task of chapter 10 on the command line: :func:`translation_train_config`,
    :func:`train_translation` on :func:`translation_data` of the run's seed, :func:`translation_scores`. The subword
    vocabulary travels with the model (its ids are the model's), and the test pairs are rebuilt from the seed and
    checked against their fingerprint: a model is never scored on pairs other than those it was held out from."""

    title = "the English-to-German model of chapter 10"
    unseen = "of values never seen in training"
    # What evaluate_batches' exact match compares: the ids. Subwords can cut the right German into other pieces (the
    # model writes "tausend" + "acht" where the vocabulary has "tausendacht"), which it counts as wrong and the text's
    # does not.
    id_match = "exact match of the subword ids"

    def data(self, n_test: int, seed: int) -> TranslationData:
        return translation_data(n_test=n_test, seed=seed)

    def fit(self, data: TranslationData, config: TrainConfig, run: RunConfig, progress: bool) -> tuple:
        return train_translation(data, config, run, progress=progress)

    def scores(self, model: Transformer, data: TranslationData, beam_size: int) -> dict:
        return translation_scores(model, data.test, data.vocab, beam_size)

    def saved_data(self, data: TranslationData) -> dict:
        return {
            "vocab": data.vocab.to_json(),
            "data": {
                "n_train": len(data.train),
                "n_test": len(data.test),
                "test_fraction": TEST_FRACTION,
                "test_sha256": pairs_fingerprint(data.test),
                "libraries": library_versions(),
            },
        }

    def test_data(self, metadata: dict, n: int, checkpoint: Path, model: Transformer) -> TranslationData:
        """The first ``n`` test pairs of the checkpoint's split with the subword vocabulary it was trained with
        (stored in it); refused if the pairs it was scored on when it was trained are not written the same way
        here."""
        saved = metadata["data"]
        try:
            vocab = SubwordVocabulary.from_json(metadata["vocab"])
        except Exception as error:  # tokenizers raises a bare Exception for JSON it cannot read
            raise OptionError(
                f"{str(checkpoint)!r}: tokenizers {library_versions()['tokenizers']} cannot read the "
                f"subword vocabulary saved with the model (saved with tokenizers "
                f"{saved['libraries']['tokenizers']}): {error}"
            ) from error
        if len(vocab) != model.config.tgt_vocab_size:
            raise OptionError(
                f"{str(checkpoint)!r}: its vocabulary holds {len(vocab)} ids and its model "
                f"{model.config.tgt_vocab_size}; the file is not one that 'train' wrote"
            )
        try:  # the test pairs of n and of more share their first n: rebuild enough to check the saved ones too
            pairs = translation_pairs(
                max(n, saved["n_test"]), "test", saved["test_fraction"], metadata["run_config"]["seed"]
            )
        except ValueError as error:
            raise OptionError(str(error), "n", n) from error
        if pairs_fingerprint(pairs[: saved["n_test"]]) != saved["test_sha256"]:
            versions = ", ".join(f"{name} {version}" for name, version in library_versions().items())
            then = ", ".join(f"{name} {version}" for name, version in saved["libraries"].items())
            raise OptionError(
                f"{str(checkpoint)!r} was trained beside test pairs that this machine writes differently "
                f"(the libraries that write them: {then} then, {versions} now); scores would be of other "
                "data: train it again here"
            )
        return TranslationData(train=[], test=pairs[:n], vocab=vocab)  # scoring needs no training pairs
