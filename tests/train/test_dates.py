"""The dates task: dates written in words (transformer.train.dates), the vocabulary built from them (transformer.train.tokenizer)
and batching by length (transformer.train.bucketing), down to training on them with the package's loop."""

from __future__ import annotations

import datetime

import pytest
import torch

from transformer import Transformer
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.bucketing import batch_stream, length_batches, padding_fraction, random_batches, text_batch
from transformer.train.config import RunConfig, TrainConfig
from transformer.train.dates import (
    STYLE_EXAMPLES,
    STYLES,
    all_dates,
    date_examples,
    date_in_words,
    dates_data,
    iso,
    number_words,
    ordinal_suffix,
    ordinal_words,
    split_dates,
    train_dates,
    year_words,
)
from transformer.train.evaluation import evaluate, evaluate_batches
from transformer.train.loop import train
from transformer.train.recipes import small_model_config
from transformer.train.tasks import task_batch
from transformer.train.tokenizer import UNK_ID, Vocabulary, tokenize

# ---------------------------------------------------------------------------------------------------------------
# Dates in words


def test_numbers_ordinals_and_years_in_words() -> None:
    assert [number_words(n) for n in (0, 7, 13, 20, 42, 99)] == [
        "zero",
        "seven",
        "thirteen",
        "twenty",
        "forty-two",
        "ninety-nine",
    ]
    assert [ordinal_words(n) for n in (1, 2, 3, 5, 8, 9, 12, 20, 21, 23, 30, 31)] == [
        "first",
        "second",
        "third",
        "fifth",
        "eighth",
        "ninth",
        "twelfth",
        "twentieth",
        "twenty-first",
        "twenty-third",
        "thirtieth",
        "thirty-first",
    ]
    assert [ordinal_suffix(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "23rd",
        "31st",
    ]
    assert [year_words(y) for y in (1900, 1905, 1999, 2000, 2005, 2010, 2023)] == [
        "nineteen hundred",
        "nineteen oh five",
        "nineteen ninety-nine",
        "two thousand",
        "two thousand and five",
        "twenty ten",
        "twenty twenty-three",
    ]


def test_every_style_writes_the_documented_example() -> None:
    day = datetime.date(1999, 3, 23)
    assert {style: date_in_words(day, style) for style in STYLES} == STYLE_EXAMPLES
    assert date_in_words(datetime.date(2023, 7, 4), "weekday") == "Tuesday, 4 July 2023"
    assert iso(day) == "1999-03-23"


def test_every_generated_date_is_a_real_calendar_date_and_its_iso_form() -> None:
    dates = all_dates(1900, 2099)
    assert len(dates) == 200 * 365 + 49  # 1900 and 2100 are no leap years, 2000 is
    assert datetime.date(2000, 2, 29) in dates and datetime.date(1900, 2, 28) + datetime.timedelta(1) == dates[59]
    for example in date_examples(dates, 2000, seed=1):
        parsed = datetime.date.fromisoformat(example.iso)  # raises for 30 February
        assert date_in_words(parsed, example.style) == example.text


def test_split_dates_keeps_test_dates_out_of_training() -> None:
    train_dates, test_dates = split_dates(0.1, 1990, 1999, seed=3)
    assert not set(train_dates) & set(test_dates)
    assert sorted(train_dates + test_dates) == all_dates(1990, 1999)
    assert len(test_dates) == round(0.1 * len(all_dates(1990, 1999)))


def test_seeds_repeat_and_differ() -> None:
    dates = all_dates(2000, 2001)
    assert date_examples(dates, 50, seed=4) == date_examples(dates, 50, seed=4)
    assert date_examples(dates, 50, seed=4) != date_examples(dates, 50, seed=5)
    assert split_dates(seed=1) == split_dates(seed=1) and split_dates(seed=1) != split_dates(seed=2)


def test_styles_are_drawn_from_those_asked_for() -> None:
    examples = date_examples(all_dates(2000, 2000), 200, styles=("numeric", "weekday"), seed=0)
    assert {e.style for e in examples} == {"numeric", "weekday"}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: number_words(100), "n must be an int in \\[0, 99\\]; got 100"),
        (lambda: ordinal_words(0), "n must be an int in \\[1, 99\\]; got 0"),
        (lambda: year_words(999), "year must be"),
        (lambda: date_in_words(datetime.date(2000, 1, 1), "french"), "style must be one of"),
        (lambda: all_dates(2000, 1999), "last_year must be an int in \\[2000, 9999\\]; got 1999"),
        (lambda: split_dates(1.0), "test_fraction must be a float in \\(0, 1\\)"),
        (lambda: date_examples([], 3), "dates must hold at least one date"),
        (lambda: date_examples(all_dates(2000, 2000), 3, styles="long"), "styles must be"),
        (lambda: date_examples(all_dates(2000, 2000), 0), "n must be an int >= 1; got 0"),
    ],
)
def test_bad_arguments_are_named(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_a_date_must_be_a_date() -> None:
    with pytest.raises(TypeError, match="date must be a datetime.date; got str"):
        date_in_words("1999-03-23", "long")


# ---------------------------------------------------------------------------------------------------------------
# Tokenizer and vocabulary


def test_tokenize_words_digits_and_punctuation() -> None:
    assert tokenize("The twenty-third of March, 1999") == [
        "the",
        "twenty",
        "-",
        "third",
        "of",
        "march",
        ",",
        "1",
        "9",
        "9",
        "9",
    ]
    assert tokenize("March 23rd") == ["march", "2", "3", "rd"]
    assert tokenize("1999-03-23", "char") == list("1999-03-23")


def test_the_vocabulary_is_built_from_the_data_after_the_special_ids() -> None:
    texts = ["b a a", "c a b"]
    vocab = Vocabulary.build(texts)
    assert vocab.itos == ["<pad>", "<s>", "</s>", "<unk>", "a", "b", "c"]  # most frequent first, ties alphabetical
    assert (vocab.stoi["<pad>"], vocab.stoi["<s>"], vocab.stoi["</s>"], vocab.stoi["<unk>"]) == (
        PAD_ID,
        BOS_ID,
        EOS_ID,
        UNK_ID,
    )
    assert Vocabulary.build(texts, min_count=2).itos[4:] == ["a", "b"]


def test_the_date_vocabularies_hold_exactly_the_tokens_of_the_data() -> None:
    examples = date_examples(all_dates(1900, 2099), 3000, seed=0)
    source = Vocabulary.build(e.text for e in examples)
    target = Vocabulary.build((e.iso for e in examples), level="char")
    assert set(source.itos[4:]) == {t for e in examples for t in tokenize(e.text)}
    assert set(target.itos[4:]) == set("0123456789-")
    assert {"march", "twenty", "tuesday", "thousand", "oh", "hundred", "1", ","} <= set(source.itos)


def test_encode_decode_round_trips() -> None:
    examples = date_examples(all_dates(1900, 2099), 500, seed=2)
    source = Vocabulary.build(e.text for e in examples)
    target = Vocabulary.build((e.iso for e in examples), level="char")
    for e in examples:
        assert target.decode(target.encode(e.iso)) == e.iso
        assert tokenize(source.decode(source.encode(e.text))) == tokenize(e.text)
        assert UNK_ID not in source.encode(e.text)


def test_decode_stops_at_eos_and_skips_padding_and_bos() -> None:
    vocab = Vocabulary(["1", "2"], level="char")
    assert vocab.decode([BOS_ID, 4, 5, EOS_ID, 4, PAD_ID]) == "12"
    assert vocab.decode_batch(torch.tensor([[4, EOS_ID, PAD_ID], [5, 5, 4]])) == ["1", "221"]


def test_unknown_tokens_become_unk() -> None:
    vocab = Vocabulary.build(["the first of march"])
    assert vocab.encode("the first of mars") == [vocab.stoi["the"], vocab.stoi["first"], vocab.stoi["of"], UNK_ID]
    assert vocab.unknown("The first of MARS") == ["mars"]
    assert vocab.decode(vocab.encode("of mars")) == "of <unk>"


def test_encode_batch_pads_to_the_longest() -> None:
    vocab = Vocabulary.build(["a b c"])
    batch = vocab.encode_batch(["a", "a b c", "c b"])
    assert batch.tolist() == [[4, 0, 0], [4, 5, 6], [6, 5, 0]]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: tokenize(3), TypeError, "text must be a str; got int"),
        (lambda: tokenize("a", "byte"), ValueError, "level must be one of"),
        (lambda: Vocabulary.build("abc"), TypeError, "texts must be an iterable of strings, not one string"),
        (lambda: Vocabulary.build([""]), ValueError, "texts must hold at least one token"),
        (lambda: Vocabulary.build(["a"], min_count=0), ValueError, "min_count must be a positive int; got 0"),
        (lambda: Vocabulary(["a", "a"]), ValueError, "tokens must be distinct"),
        (lambda: Vocabulary(["<unk>"]), ValueError, "tokens must be distinct and not special"),
        (lambda: Vocabulary(["a"]).decode([9]), ValueError, "ids must be ints in \\[0, 5\\).*got 9"),
        (lambda: Vocabulary(["a"]).encode_batch([]), ValueError, "texts must be a non-empty sequence"),
        (lambda: Vocabulary(["a"]).decode_batch(torch.tensor([4])), ValueError, "ids must be a 2-D tensor"),
    ],
)
def test_tokenizer_errors_name_the_argument(call, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------------------------------------------------------
# Batching by length


def test_length_batches_keep_every_example_once_and_cut_padding() -> None:
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(3, 15, (2000,), generator=generator).tolist()
    bucketed = length_batches(lengths, 32, generator)
    shuffled = random_batches(len(lengths), 32, generator)
    assert sorted(i for batch in bucketed for i in batch) == list(range(2000))
    assert sorted(i for batch in shuffled for i in batch) == list(range(2000))
    assert all(len(batch) <= 32 for batch in bucketed)
    assert padding_fraction(lengths, bucketed) < 0.05 < 0.3 < padding_fraction(lengths, shuffled)
    plain = length_batches(lengths, 32, torch.Generator().manual_seed(1), pool=1)  # pool 1: random batches
    assert padding_fraction(lengths, plain) > 0.3


def test_length_batches_repeat_with_the_seed_and_come_in_random_order() -> None:
    lengths = list(range(1, 101)) * 10
    first = length_batches(lengths, 10, torch.Generator().manual_seed(5))
    assert first == length_batches(lengths, 10, torch.Generator().manual_seed(5))
    assert first != length_batches(lengths, 10, torch.Generator().manual_seed(6))
    longest = [max(lengths[i] for i in batch) for batch in first]
    assert longest != sorted(longest)  # the batches are not served shortest first


def test_padding_fraction_counts_the_slots_of_each_padded_batch() -> None:
    assert padding_fraction([1, 3, 2, 2], [[0, 1], [2, 3]]) == pytest.approx(1 - 8 / 10)


def test_text_batch_is_the_package_batch() -> None:
    source = Vocabulary.build(["the first of may"])
    target = Vocabulary.build(["2000-05-01"], level="char")
    batch = text_batch(["the first of may", "may"], ["2000-05-01", "2000-05-01"], source, target)
    assert batch.src.tolist()[1] == [source.stoi["may"], PAD_ID, PAD_ID, PAD_ID]
    assert batch.tgt_in[0, 0] == BOS_ID and batch.tgt_out[0, -1] == EOS_ID
    assert target.decode(batch.tgt_out[0]) == "2000-05-01" and batch.n_tokens == 22
    with pytest.raises(
        ValueError, match="sources and targets must be non-empty and as long as each other; got 2 and 1"
    ):
        text_batch(["may", "may"], ["2000-05-01"], source, target)


def test_batch_stream_sees_every_pair_once_per_epoch() -> None:
    examples = date_examples(all_dates(2000, 2000), 100, seed=0)
    sources, targets = [e.text for e in examples], [e.iso for e in examples]
    source = Vocabulary.build(sources)
    target = Vocabulary.build(targets, level="char")
    stream = batch_stream(sources, targets, source, target, 16, torch.Generator().manual_seed(0))
    epoch = [next(stream) for _ in range(7)]  # 100 pairs: 6 batches of 16 and one of 4
    assert sorted(len(b) for b in epoch) == [4] + [16] * 6
    seen = sorted(source.decode(row) for b in epoch for row in b.src)
    assert seen == sorted(source.decode(source.encode(text)) for text in sources)


# ---------------------------------------------------------------------------------------------------------------
# Training on it with the package's loop


@pytest.mark.slow
def test_train_takes_a_task_of_its_own_as_batches() -> None:
    train_dates, test_dates = split_dates(0.1, 2000, 2009, seed=0)
    examples = date_examples(train_dates, 2000, styles=("numeric",), seed=0)
    held_out = date_examples(test_dates, 64, styles=("numeric",), seed=1)
    source = Vocabulary.build(e.text for e in examples)
    target = Vocabulary.build((e.iso for e in examples), level="char")
    stream = batch_stream(
        [e.text for e in examples], [e.iso for e in examples], source, target, 32, torch.Generator().manual_seed(0)
    )
    eval_batches = [text_batch([e.text for e in held_out], [e.iso for e in held_out], source, target)]
    torch.manual_seed(0)
    model = Transformer(small_model_config(src_vocab_size=len(source), tgt_vocab_size=len(target)))
    history = train(
        model, stream, eval_batches, TrainConfig(steps=40, eval_every=40), RunConfig(device="cpu"), progress=False
    )
    assert history.eval_step == [40] and history.eval_loss[-1] < history.loss[0] / 2  # scored on the held-out batch
    again = evaluate_batches(model, eval_batches)
    assert again.n == 64 and again.loss == pytest.approx(history.eval_loss[-1], rel=1e-4)


def test_train_refuses_batches_it_cannot_train_on() -> None:
    model = Transformer(small_model_config())
    held_out = [task_batch("copy", 4)]
    with pytest.raises(TypeError, match="batches must be an iterator of Batch"):
        train(model, [], held_out, TrainConfig(steps=1), progress=False)
    with pytest.raises(ValueError, match="eval_batches must hold at least one batch"):
        train(model, iter([]), [], TrainConfig(steps=1), progress=False)
    with pytest.raises(ValueError, match="batches ran out after 0 steps; config.steps asks for 1"):
        train(model, iter([]), held_out, TrainConfig(steps=1), RunConfig(device="cpu"), progress=False)


def test_evaluate_is_evaluate_batches_on_the_task_batches() -> None:
    torch.manual_seed(0)
    model = Transformer(small_model_config())
    generator = torch.Generator().manual_seed(7)
    batches = [task_batch("reverse", size, rng=generator) for size in (4, 4, 2)]
    assert evaluate(model, "reverse", n=10, seed=7, batch_size=4) == evaluate_batches(model, batches)
    with pytest.raises(ValueError, match="batches must hold at least one batch"):
        evaluate_batches(model, [])


def test_training_on_given_batches_reports_without_a_task_name(capsys) -> None:
    examples = date_examples(all_dates(2000, 2000), 32, styles=("numeric",), seed=0)
    sources, targets = [e.text for e in examples], [e.iso for e in examples]
    source, target = Vocabulary.build(sources), Vocabulary.build(targets, level="char")
    stream = batch_stream(sources, targets, source, target, 16, torch.Generator().manual_seed(0))
    model = Transformer(small_model_config(src_vocab_size=len(source), tgt_vocab_size=len(target)))
    train(
        model,
        stream,
        [text_batch(sources[:8], targets[:8], source, target)],
        TrainConfig(steps=2),
        RunConfig(device="cpu"),
        progress="text",
    )
    assert capsys.readouterr().out.startswith("training: 2 steps in ")


def test_dates_data_is_the_split_the_examples_and_the_vocabularies_of_the_training_text() -> None:
    data = dates_data(n_train=300, n_test=120, seed=3)
    training_dates, test_dates = split_dates(0.1, seed=3)
    assert (data.train_dates, data.test_dates) == (training_dates, test_dates)
    assert data.train == date_examples(training_dates, 300, seed=3) and data.test == date_examples(
        test_dates, 120, seed=4
    )
    assert data.source_vocab.itos == Vocabulary.build(e.text for e in data.train).itos
    assert data.target_vocab.itos == Vocabulary.build((e.iso for e in data.train), level="char").itos
    batches = data.test_batches(50)
    assert [b.src.size(0) for b in batches] == [50, 50, 20]
    first = text_batch(
        [e.text for e in data.test[:50]], [e.iso for e in data.test[:50]], data.source_vocab, data.target_vocab
    )
    assert torch.equal(batches[0].src, first.src) and torch.equal(batches[0].tgt_out, first.tgt_out)
    with pytest.raises(ValueError, match="batch_size must be an int >= 1; got 0"):
        data.test_batches(0)


def test_train_dates_is_seeded_and_sizes_the_model_to_the_vocabularies() -> None:
    data = dates_data(n_train=400, n_test=40)
    config, run = TrainConfig(steps=4, batch_size=16, eval_every=4), RunConfig(seed=1)
    (model, history), (again, repeat) = (train_dates(data, config, run, progress=False) for _ in range(2))
    c = model.config
    assert (c.src_vocab_size, c.tgt_vocab_size) == (len(data.source_vocab), len(data.target_vocab))
    assert history.loss == repeat.loss and history.step[-1] == 4
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True))
