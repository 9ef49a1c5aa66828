"""English -> German pairs from CLDR and num2words (transformer.train.translation) and the shared subword vocabulary
(transformer.train.subwords): the documented examples, the held-out split, determinism, and the tokenizer's round
trip and agreement with the hand-written algorithm."""

from __future__ import annotations

import datetime
import json
from collections import defaultdict
from decimal import Decimal

import pytest
import torch
from babel.dates import format_date
from babel.lists import format_list
from babel.numbers import format_currency
from hypothesis import given, settings
from hypothesis import strategies as st
from num2words import num2words

from transformer import Transformer
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.bpe import PIECE_PATTERN, SPACE, apply_merges, learn_merges, normalize, pre_tokenize
from transformer.train.config import RunConfig
from transformer.train.evaluation import translate
from transformer.train.subwords import SPECIALS, SubwordVocabulary
from transformer.train.tokenizer import UNK_ID
from transformer.train.translation import (
    KIND_EXAMPLES,
    KINDS,
    MAX_GERMAN_TOKENS,
    Pair,
    TranslationData,
    composition,
    is_held_out,
    plain_spaces,
    train_translation,
    translation_config,
    translation_data,
    translation_pairs,
    translation_train_config,
    write,
)

pytestmark = pytest.mark.live  # needs the live extra: make test runs it, make check does not

EXAMPLE_VALUES = {  # the value and style of each kind's documented example
    "number": ((342,), None),
    "date": ((datetime.date(2026, 11, 25),), "full"),
    "time": ((15, 45), None),
    "relative": ((3, "day"), "future"),
    "unit": ((125, "mass-kilogram"), None),
    "money": ((123450, "EUR"), "symbol"),
    "list": (("countries", ("DE", "FR", "IT")), (("DE", "FR", "IT"), "standard")),
}


@pytest.fixture(scope="module")
def pairs() -> tuple[list[Pair], list[Pair]]:
    return translation_pairs(6000, "train", seed=3), translation_pairs(1000, "test", seed=3)


@pytest.fixture(scope="module")
def vocab(pairs: tuple[list[Pair], list[Pair]]) -> SubwordVocabulary:
    train, _ = pairs
    return SubwordVocabulary.train([p.english for p in train] + [p.german for p in train], 600)


# ---------------------------------------------------------------------------------------------------------------
# The data


def test_every_kind_writes_its_documented_example() -> None:
    for kind in KINDS:
        key, style = EXAMPLE_VALUES[kind]
        pair = write(kind, key, style)
        assert (pair.english, pair.german) == KIND_EXAMPLES[kind], kind


def test_the_strings_are_the_libraries_own_with_plain_spaces() -> None:
    assert write("number", (2026,)).german == num2words(2026, lang="de") == "zweitausendsechsundzwanzig"
    day = datetime.date(2031, 5, 16)
    assert write("date", (day,), "long").german == format_date(day, "long", locale="de") == "16. Mai 2031"
    money = format_currency(Decimal("12.50"), "EUR", locale="de")
    assert money == "12,50\u00a0€" and write("money", (1250, "EUR"), "symbol").german == "12,50 €" == plain_spaces(
        money
    )
    assert write("time", (9, 5), None).english == "9:05 AM"  # CLDR: "9:05\u202fAM"
    lists = write("list", ("languages", ("de", "fr")), (("fr", "de"), "or"))
    assert (lists.english, lists.german) == ("French or German", "Französisch oder Deutsch")
    assert format_list(["Deutschland", "Frankreich"], locale="de") == "Deutschland und Frankreich"


def test_pairs_hold_no_typographic_spaces_and_every_kind(pairs: tuple[list[Pair], list[Pair]]) -> None:
    for pair in pairs[0] + pairs[1]:
        assert "\u00a0" not in pair.english + pair.german and "\u202f" not in pair.english + pair.german
        assert pair.english and pair.german and pair.english == pair.english.strip()
    assert all(count > 0 for count in composition(pairs[1]).values())


def test_same_seed_same_pairs_and_another_seed_other_pairs() -> None:
    assert translation_pairs(300, "train", seed=5) == translation_pairs(300, "train", seed=5)
    assert translation_pairs(300, "train", seed=5) != translation_pairs(300, "train", seed=6)
    assert translation_pairs(100, "test", seed=5) == translation_pairs(100, "test", seed=5)


def test_no_test_value_and_no_test_sentence_in_training(pairs: tuple[list[Pair], list[Pair]]) -> None:
    train, test = pairs
    assert not {(p.kind, p.key) for p in train} & {(p.kind, p.key) for p in test}
    assert not {p.english for p in train} & {p.english for p in test}
    assert len({p.english for p in test}) == len(test)  # distinct test pairs
    assert all(is_held_out(p.kind, p.key, seed=3) for p in test)
    assert not any(is_held_out(p.kind, p.key, seed=3) for p in train)


def test_every_english_sentence_has_one_german_translation() -> None:
    german = defaultdict(set)
    for pair in translation_pairs(20_000, "train", seed=0) + translation_pairs(2_000, "test", seed=0):
        german[pair.english].add(pair.german)
    ambiguous = {english: g for english, g in german.items() if len(g) > 1}
    assert not ambiguous  # e.g. "May 16, 2030" is CLDR's medium and long English date, two German ones


def test_the_split_holds_out_the_asked_share_but_never_the_atoms() -> None:
    held_out = [is_held_out("number", (n,), 0.1, seed=0) for n in range(20, 20_020)]
    assert 0.09 < sum(held_out) / len(held_out) < 0.11
    assert [is_held_out("number", (n,), 0.1, seed=0) for n in range(20, 60)] != [
        is_held_out("number", (n,), 0.1, seed=1) for n in range(20, 60)
    ]  # the seed chooses the values
    assert not any(
        is_held_out("number", (n,), 0.99, seed=s) for n in [*range(20), *range(20, 100, 10)] for s in range(5)
    )
    assert not any(is_held_out("relative", (1, unit), 0.99) for unit in ("day", "hour", "year"))
    assert not is_held_out("unit", (10, "length-mile"), 0.99)
    assert is_held_out("number", (342,), 0.1, seed=0) == is_held_out("number", (342,), 0.1, seed=0)


def test_bad_arguments_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="split must be one of"):
        translation_pairs(10, "dev")
    with pytest.raises(ValueError, match="n must be an int >= 1; got 0"):
        translation_pairs(0, "train")
    with pytest.raises(ValueError, match="test_fraction"):
        translation_pairs(10, "train", test_fraction=1.5)
    with pytest.raises(ValueError, match="shares must map kinds"):
        translation_pairs(10, "train", shares={"poems": 1.0})
    with pytest.raises(ValueError, match="kind must be one of"):
        write("poem", (1,))
    with pytest.raises(ValueError, match="fewer than n=500 distinct pairs"):
        translation_pairs(500, "test", shares={"time": 1.0})  # about 144 held-out times of day


# ---------------------------------------------------------------------------------------------------------------
# Byte-pair encoding by hand


def test_learn_merges_merges_the_most_frequent_pair_first() -> None:
    merges = learn_merges(["low lower lowest", "low"], 4)
    # four pairs occur 4 times; ties go to the symbols first in code-point order (l, o, w, then ▁ U+2581)
    assert [(m.left, m.right, m.count) for m in merges] == [
        ("l", "o", 4),
        (SPACE, "lo", 4),
        (f"{SPACE}lo", "w", 4),
        (f"{SPACE}low", "e", 2),
    ]
    assert apply_merges(f"{SPACE}lowest", merges) == [f"{SPACE}lowe", "s", "t"]
    assert apply_merges(f"{SPACE}lowest", merges[:3]) == [f"{SPACE}low", "e", "s", "t"]
    assert len(learn_merges(["ab"], 5)) == 2  # ▁ab is one symbol after two merges: nothing left to merge


def test_pre_tokenize_glues_spaces_to_words_and_isolates_digits_and_signs() -> None:
    assert pre_tokenize("Mittwoch, 25. November") == [f"{SPACE}Mittwoch", ",", SPACE, "2", "5", ".", f"{SPACE}November"]
    assert pre_tokenize("twenty-five") == [f"{SPACE}twenty", "-", "five"]
    assert pre_tokenize("  €12.50\u00a0\t x ") == [SPACE, "€", "1", "2", ".", "5", "0", f"{SPACE}x"]
    assert pre_tokenize("") == [] and normalize(" a \u2581 b ") == "a b"
    assert normalize("A\u0308") == "Ä"  # NFC: one code point


def test_hand_written_merges_are_the_libraries(pairs: tuple[list[Pair], list[Pair]], vocab: SubwordVocabulary) -> None:
    train, _ = pairs
    texts = [p.english for p in train] + [p.german for p in train]
    hand = learn_merges(texts, 150)
    assert [(m.left, m.right) for m in hand] == vocab.merges[:150]
    assert all(a.count >= b.count for a, b in zip(hand, hand[1:], strict=False))


# ---------------------------------------------------------------------------------------------------------------
# The subword vocabulary


def test_ids_start_with_the_special_tokens(vocab: SubwordVocabulary) -> None:
    assert tuple(vocab.itos[:4]) == SPECIALS
    assert [vocab.stoi[t] for t in SPECIALS] == [PAD_ID, BOS_ID, EOS_ID, UNK_ID]
    assert len(vocab) == 600 and len(set(vocab.itos)) == len(vocab)


def test_decode_encode_is_the_identity_for_both_languages(
    pairs: tuple[list[Pair], list[Pair]], vocab: SubwordVocabulary
) -> None:
    for pair in pairs[0][:2000] + pairs[1]:
        for text in (pair.english, pair.german):
            ids = vocab.encode(text)
            assert UNK_ID not in ids and vocab.decode(ids) == text
            assert vocab.decode([BOS_ID, *ids, EOS_ID, PAD_ID, 7]) == text  # stops at EOS, skips BOS


def test_the_library_cuts_text_as_the_hand_written_algorithm(
    pairs: tuple[list[Pair], list[Pair]], vocab: SubwordVocabulary
) -> None:
    awkward = [
        "THREE Hundred",
        "Zürich, Österreich, Straße",
        "in 3  days\n",
        "€1,234.50 and ½ of 2²",
        "naïve café",
        "日本 and Ελλάδα",
        "tab\tand\u00a0nbsp",
        "a\u2581b",
        "",
        " ",
        "twenty-five!?",
        "x" * 40,
        "A\u0308rger",
    ]
    for text in [p.english for p in pairs[1][:300]] + [p.german for p in pairs[1][:300]] + awkward:
        assert vocab.reference_encode(text) == vocab.encode(text), text
        assert [vocab.itos[i] for i in vocab.encode(text)] == vocab.tokenize(text)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs", "Cn", "Co")), max_size=30))
def test_the_library_and_the_algorithm_agree_on_any_text(text: str) -> None:
    vocab = _SMALL_VOCAB()
    assert vocab.reference_encode(text) == vocab.encode(text)


def test_unknown_characters_become_unk_and_are_reported(vocab: SubwordVocabulary) -> None:
    ids = vocab.encode("in 3 日")
    assert ids[-1] == UNK_ID and UNK_ID not in ids[:-1]
    assert vocab.unknown("in 3 日 Tagen") == ["日"]
    assert vocab.unknown("Zebra quiz XYZ") == []  # every printable ASCII character is in the alphabet


def test_the_json_holds_the_whole_tokenizer(vocab: SubwordVocabulary) -> None:
    saved = json.loads(vocab.to_json())
    assert saved["pre_tokenizer"]["pattern"]["Regex"] == PIECE_PATTERN
    again = SubwordVocabulary.from_json(vocab.to_json())
    assert again.itos == vocab.itos and again.encode("dreihundertzweiundvierzig") == vocab.encode(
        "dreihundertzweiundvierzig"
    )


def test_batches_pad_and_decode_back(vocab: SubwordVocabulary) -> None:
    texts = ["in 3 Tagen", "dreihundertzweiundvierzig Kilometer"]
    ids = vocab.encode_batch(texts)
    assert ids.dtype == torch.long and ids.shape == (2, max(len(vocab.encode(t)) for t in texts))
    assert vocab.decode_batch(ids) == texts
    with pytest.raises(ValueError, match="ids must be ints"):
        vocab.decode([len(vocab)])
    with pytest.raises(ValueError, match="vocab_size must be an int >= 5"):
        SubwordVocabulary.train(["a b"], 4)


def test_translation_data_shares_one_vocabulary_trained_on_both_languages() -> None:
    data = translation_data(n_train=3000, n_test=200, vocab_size=500, seed=1)
    assert len(data.train) == 3000 and len(data.test) == 200 and len(data.vocab) == 500
    assert {"▁and", "▁und", "▁hundred", "hundert"} <= set(data.vocab.itos)  # words of both languages
    batches = data.test_batches(batch_size=150)
    assert [len(b) for b in batches] == [150, 50]
    assert data.vocab.decode_batch(batches[1].src)[0] == data.test[150].english


def _small_vocab_factory():
    cache = []

    def get() -> SubwordVocabulary:
        if not cache:
            train = translation_pairs(2000, "train", seed=0)
            cache.append(SubwordVocabulary.train([p.english for p in train] + [p.german for p in train], 400))
        return cache[0]

    return get


_SMALL_VOCAB = _small_vocab_factory()


# ---------------------------------------------------------------------------------------------------------------
# The model, its training and its scores


@pytest.fixture(scope="module")
def small_data() -> TranslationData:
    return translation_data(n_train=600, n_test=60, vocab_size=300, seed=2)


def test_the_model_shares_one_table_for_both_languages_and_the_output(small_data: TranslationData) -> None:
    config = translation_config(len(small_data.vocab))
    model = Transformer(config)
    assert not config.norm_first  # the paper's post-norm
    assert model.src_embed is model.tgt_embed and model.lm_head.weight is model.tgt_embed.weight
    assert config.src_vocab_size == config.tgt_vocab_size == len(small_data.vocab)


def test_train_translation_is_seeded_and_learns(small_data: TranslationData) -> None:
    config, run = translation_train_config(steps=6, batch_size=32, warmup=2, eval_every=6), RunConfig(seed=1)
    (model, history), (again, repeat) = (train_translation(small_data, config, run, progress=False) for _ in range(2))
    assert history.loss == repeat.loss and history.step[-1] == 6 and history.loss[-1] < history.loss[0]
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True))
    assert translation_train_config().schedule == "linear" and translation_train_config().label_smoothing == 0.1


def test_the_wings_translate_takes_the_subword_vocabulary(small_data: TranslationData) -> None:
    torch.manual_seed(0)
    model = Transformer(translation_config(len(small_data.vocab))).eval()
    texts, vocab = [p.english for p in small_data.test[:7]], small_data.vocab
    greedy = translate(model, texts, vocab, vocab, MAX_GERMAN_TOKENS)
    assert greedy == translate(model, texts, vocab, vocab, MAX_GERMAN_TOKENS, batch_size=3)
    assert greedy == translate(model, texts, vocab, vocab, MAX_GERMAN_TOKENS, beam_size=1)
    assert len(translate(model, texts, vocab, vocab, MAX_GERMAN_TOKENS, beam_size=4)) == 7
    longest = max(len(vocab.encode(p.german)) for p in translation_pairs(5000, "train", seed=0))  # 300 ids
    assert longest < MAX_GERMAN_TOKENS < translation_config(len(vocab)).max_positions  # room for </s> and BOS


# ---------------------------------------------------------------------------------------------------------------
# The figures


def test_merges_figure_shows_each_word_cut_after_every_number_of_merges() -> None:
    from transformer_book.viz.subwords import merges_figure

    merges = learn_merges(["fünfundzwanzig dreiundzwanzig", "und"], 6)
    fig = merges_figure([f"{SPACE}fünfundzwanzig", f"{SPACE}und"], merges)
    assert len(fig.data) == 7 and [t.visible for t in fig.data] == [True] + [False] * 6
    for k, trace in enumerate(fig.data):  # the boxes of each word spell it, cut as apply_merges cuts it
        assert list(trace.text) == apply_merges(f"{SPACE}fünfundzwanzig", merges[:k]) + apply_merges(
            f"{SPACE}und", merges[:k]
        )
    (menu,) = fig.layout.updatemenus
    assert [b.args[0]["visible"].index(True) for b in menu.buttons] == list(range(7))
    assert menu.buttons[1].args[1]["title.text"].endswith(f"({merges[0].count:,} times)")


def test_lengths_figure_draws_one_line_per_language() -> None:
    from transformer_book.viz.subwords import lengths_figure

    fig = lengths_figure({"English": [9.0, 7.0], "German": [8.0, 6.0]}, [300, 1000], chosen=1000)
    assert [t.name for t in fig.data] == ["English", "German"] and list(fig.data[1].y) == [8.0, 6.0]
    assert fig.layout.xaxis.type == "log"


def test_html_table_escapes_cells_and_checks_their_number() -> None:
    from transformer_book.viz.tables import html_table

    page = html_table(["token", "count"], [["<s>", 3], ["und", 1_000]]).data
    assert "<td>&lt;s&gt;</td>" in page and '<td style="text-align: right">1000</td>' in page
    # a region the Tab key reaches, named by its columns: on a phone it scrolls sideways
    assert page.startswith(
        '<div class="book-table" role="region" tabindex="0" aria-label="table of token, count"><table class="table">'
    )
    with pytest.raises(ValueError, match="every row must have the header's 2 cells"):
        html_table(["token", "count"], [["<s>"]])
