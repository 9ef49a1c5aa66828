"""The regularisation experiment of the training chapter: its data, its stream, that each regulariser acts where it
should (dropout in training only, label smoothing in the training loss only), and its figure; and the count of how
often a run's training sequences repeat, and of the test sequences it trained on."""

import pytest
import torch

from transformer import Transformer
from transformer.train import EvalResult, History, evaluate_batches, sequence_loss
from transformer.train.evaluation import EVAL_SEED
from transformer.train.recipes import small_model_config
from transformer.train.tasks import TaskConfig, make_batch, task_batch
from transformer_book import regularisation
from transformer_book.regularisation import (
    EpochStream,
    RegularisedRun,
    count_repeats,
    sources,
    split_sequences,
    train_regularised,
)
from transformer_book.viz.regularisation import regularisation_figure


def test_split_draws_distinct_training_sequences_and_keeps_every_one_of_them_out_of_the_held_out_set():
    training, held_out = split_sequences("copy", n_train=150, n_held_out=300, seed=3)
    seen = sources(training)
    assert len(seen) == len(set(seen)) == 150
    assert held_out.n_tokens and not set(sources(held_out)) & set(seen)
    everything = task_batch("copy", 300, rng=torch.Generator().manual_seed(EVAL_SEED))
    assert len(held_out) == sum(s not in set(seen) for s in sources(everything))  # only the seen ones left out


def test_split_is_the_same_for_the_same_seed_and_another_for_another():
    a, b, c = (split_sequences("reverse", 64, 50, seed=s)[0] for s in (0, 0, 1))
    assert torch.equal(a.src, b.src) and sources(a) != sources(c)


def test_epoch_stream_serves_every_training_row_once_per_epoch_in_a_new_order():
    training, _ = split_sequences("copy", n_train=96, n_held_out=10, seed=0)
    stream = EpochStream(training, 32, torch.Generator().manual_seed(0))
    epochs = [[s for _ in range(3) for s in sources(next(stream))] for _ in range(2)]
    assert sorted(epochs[0]) == sorted(epochs[1]) == sorted(sources(training))
    assert epochs[0] != epochs[1]


def test_epoch_stream_rejects_a_batch_larger_than_the_data():
    training, _ = split_sequences("copy", n_train=20, n_held_out=10, seed=0)
    with pytest.raises(ValueError, match="batch_size"):
        EpochStream(training, 21, torch.Generator())


def test_a_run_scores_the_held_out_set_after_its_last_step_and_reports_both_gaps():
    data = split_sequences("copy", n_train=64, n_held_out=40, seed=0)
    run = train_regularised(data, dropout=0.1, label_smoothing=0.1, seed=0, steps=3, batch_size=32)
    assert run.history.step == [1, 2, 3] and run.history.eval_step == [3]
    assert (
        run.held_out.n == len(data[1])
        and run.train.n == len(data[0])
        and run.held_out.loss == run.history.eval_loss[-1]
    )
    assert run.loss_gap == pytest.approx(run.held_out.loss - run.train.loss)
    assert run.exact_match_gap == pytest.approx(run.train.exact_match - run.held_out.exact_match)


def test_training_uses_the_smoothed_loss_and_the_logged_held_out_loss_is_plain(monkeypatch):
    data = split_sequences("copy", n_train=64, n_held_out=40, seed=0)
    models = []
    real_train = regularisation.train

    def keep(model, batches, eval_batches, config, *args, **kwargs):
        models.append(model)
        first = next(batches)  # the loop's first batch: what step 1's loss is computed on
        with torch.no_grad():
            logits = model(first.src, first.tgt_in, first.src_mask, first.tgt_mask)
        models.append((sequence_loss(logits, first.tgt_out, label_smoothing=0.1), sequence_loss(logits, first.tgt_out)))
        batches = iter([first, *(next(batches) for _ in range(config.steps - 1))])
        return real_train(model, batches, eval_batches, config, *args, **kwargs)

    monkeypatch.setattr(regularisation, "train", keep)
    run = train_regularised(data, dropout=0.0, label_smoothing=0.1, seed=0, steps=2, batch_size=32)
    model, (smoothed, plain) = models
    assert abs(run.history.loss[0] - float(smoothed)) < 1e-5
    assert abs(run.history.loss[0] - float(plain)) > 1e-4  # at initialisation the two differ little, but they differ
    assert not model.training  # handed back in evaluation mode: dropout off for the scores
    again = evaluate_batches(model, [data[1]])
    assert run.held_out.loss == pytest.approx(again.loss)  # the plain cross-entropy, as evaluate_batches computes it


def test_dropout_changes_the_logits_in_training_mode_only():
    torch.manual_seed(0)
    model = Transformer(small_model_config(dropout=0.1))
    batch = task_batch("copy", 4, rng=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.train()
        noisy = [model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask) for _ in range(2)]
        model.eval()
        clean = [model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask) for _ in range(2)]
    assert not torch.equal(*noisy) and torch.equal(*clean)


def test_runs_cover_every_combination_and_seed_and_summary_takes_their_means():
    runs = regularisation.regularisation_runs("copy", n_train=40, seeds=(0, 1), steps=1, batch_size=20)
    assert list(runs) == list(regularisation.REGULARISERS)
    for name, (dropout, smoothing) in regularisation.REGULARISERS.items():
        assert [(r.dropout, r.label_smoothing, r.seed) for r in runs[name]] == [
            (dropout, smoothing, 0),
            (dropout, smoothing, 1),
        ]
    means = regularisation.summary(runs)
    assert means["both"]["held_out_loss"] == pytest.approx(sum(r.held_out.loss for r in runs["both"]) / 2)
    with pytest.raises(ValueError, match="seeds"):
        regularisation.regularisation_runs(seeds=())


def test_bad_regulariser_values_are_named():
    data = split_sequences("copy", n_train=20, n_held_out=10, seed=0)
    with pytest.raises(ValueError, match="dropout"):
        train_regularised(data, dropout=1.5)
    with pytest.raises(ValueError, match="label_smoothing"):
        train_regularised(data, label_smoothing=-0.1)


def fake_run(seed: int, train_loss: float, held_loss: float, train_em: float, held_em: float) -> RegularisedRun:
    return RegularisedRun(
        0.0,
        0.0,
        seed,
        History(),
        EvalResult(train_em, 1.0, train_loss, 10),
        EvalResult(held_em, 0.9, held_loss, 10),
        0.0,
    )


def test_figure_shows_each_seeds_training_and_held_out_score_joined_by_its_gap():
    runs = {
        "none": [fake_run(0, 0.01, 0.6, 1.0, 0.5), fake_run(1, 0.02, 0.8, 1.0, 0.4)],
        "dropout 0.1": [fake_run(0, 0.05, 0.3, 0.95, 0.6), fake_run(1, 0.04, 0.35, 0.97, 0.55)],
    }
    fig = regularisation_figure(runs, title="t")
    assert fig.layout.title.text == "t"
    gaps = [t for t in fig.data if t.mode == "lines"]
    assert len(gaps) == 2 * 4  # two panels, four runs
    assert [list(g.y) for g in gaps[:4]] == [[0.01, 0.6], [0.02, 0.8], [0.05, 0.3], [0.04, 0.35]]
    assert [list(g.y) for g in gaps[4:]] == [[1.0, 0.5], [1.0, 0.4], [0.95, 0.6], [0.97, 0.55]]
    assert len({g.x[0] for g in gaps[:4]}) == 4  # every seed at a place of its own
    assert [t.name for t in fig.data if t.showlegend] == ["training set", "held-out"]
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text and fig.layout.yaxis2.title.text


def test_sources_are_the_rows_without_their_padding_whatever_the_batch_width():
    narrow = make_batch(torch.tensor([[5, 6], [7, 0]]), torch.tensor([[5, 6], [7, 0]]))
    wide = make_batch(torch.tensor([[5, 6, 0, 0], [7, 0, 0, 0]]), torch.tensor([[5, 6], [7, 0]]))
    assert sources(narrow) == sources(wide) == [(5, 6), (7,)]


def test_count_repeats_counts_each_sequence_that_an_earlier_one_equals_and_the_test_sequences_trained_on():
    trained = [(3,), (4, 5), (3,), (3,), (4, 5), (4, 6)]
    tested = [(3,), (4, 6), (5, 5), (6, 7, 8)]
    counts = count_repeats(iter(trained), tested)
    assert dict(counts.trained) == {1: 3, 2: 3} and dict(counts.repeated) == {1: 2, 2: 1}
    assert dict(counts.tested) == {1: 1, 2: 2, 3: 1} and dict(counts.seen) == {1: 1, 2: 1, 3: 0}
    assert counts.repeated_share == pytest.approx(3 / 6) and counts.seen_share == pytest.approx(2 / 4)
    assert counts.share_repeated(1) == pytest.approx(2 / 3) and counts.share_repeated(2) == pytest.approx(1 / 3)
    assert counts.longest_repeated == 2 and counts.longest_seen == 2
    assert count_repeats([(3,), (4,)]).longest_repeated == 0


def test_count_repeats_names_what_is_missing():
    with pytest.raises(ValueError, match="trained_on"):
        count_repeats([])
    with pytest.raises(ValueError, match="tested"):
        _ = count_repeats([(3,)]).seen_share


def test_a_stream_of_fresh_sequences_repeats_its_short_ones_and_never_its_long_ones():
    data = TaskConfig("copy")
    stream = data.stream(64, seed=0)
    counts = count_repeats(s for _ in range(100) for s in sources(next(stream)))
    assert counts.share_repeated(1) > 0.9  # 10 sequences of length 1, about 640 drawn
    assert counts.repeated[data.max_seq_len] == 0  # 10**10 of length 10
