"""What dropout and label smoothing buy when the data run out: a synthetic task learned from a fixed, small training
set, read again epoch after epoch, trained with and without the paper's regularisers (dropout 0.1 and label smoothing
0.1, section 5.4), several seeds each, and scored on the training set and on held-out sequences; and how often a
stream of fresh random sequences comes back to one it has drawn before.

- :func:`split_sequences`: a training set of ``n_train`` distinct sequences of a task, drawn with a seed, and held-out
  sequences from the evaluation generator with every source of the training set left out;
- :class:`EpochStream`: the training set for ever, reshuffled every epoch, one :class:`~transformer.train.tasks.Batch`
  per step (what :func:`~transformer.train.train` takes as ``batches``);
- :func:`train_regularised`: the chapter's small model with a given dropout, trained on that stream with a given label
  smoothing by the package's own loop, and scored on both sets with the plain (unsmoothed) cross-entropy in evaluation
  mode (dropout off), so that the four combinations are compared on the same measure;
- :func:`regularisation_runs`: every combination of :data:`REGULARISERS`, on every seed;
- :func:`sources` and :func:`count_repeats`: the sequences a run trained on, and how many of them (and of a test set)
  it had drawn before, by length.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch

from transformer import Transformer
from transformer.checks import check_int, check_probability
from transformer.tokens import EOS_ID, PAD_ID
from transformer.train import EvalResult, History, RunConfig, TrainConfig, evaluate_batches, make_batch, train
from transformer.train.evaluation import EVAL_SEED
from transformer.train.recipes import small_model_config
from transformer.train.tasks import MAX_SEQ_LEN, Batch, task_batch
from transformer.utils import make_rng, seeded

from .i18n import translatable

# The four combinations, each (dropout, label smoothing): none, and the paper's values alone and together. Their
# names are shown through tr(name) (tables, figure).
REGULARISERS = {
    translatable("none"): (0.0, 0.0),
    translatable("dropout 0.1"): (0.1, 0.0),
    translatable("label smoothing 0.1"): (0.0, 0.1),
    translatable("both"): (0.1, 0.1),
}


def _rows(batch: Batch, rows: torch.Tensor) -> Batch:
    """The ``rows`` of ``batch`` as a batch of their own, trimmed to their longest source and target."""
    src, tgt_out = batch.src[rows], batch.tgt_out[rows]
    tgt = tgt_out.masked_fill(tgt_out == EOS_ID, PAD_ID)  # the bare target symbols: make_batch adds EOS again
    src_width, tgt_width = int((src != PAD_ID).sum(1).max()), int((tgt != PAD_ID).sum(1).max())
    return make_batch(src[:, :src_width], tgt[:, :tgt_width])


def _symbols(row: list[int]) -> tuple[int, ...]:
    """A source row without its padding: the same sequence whatever width its batch was padded to."""
    return tuple(token for token in row if token != PAD_ID)


def sources(batch: Batch) -> list[tuple[int, ...]]:
    """The source sequences of ``batch``, in order, each without its padding."""
    return [_symbols(row) for row in batch.src.tolist()]


@dataclass
class Repeats:
    """How often a run's training sequences repeat one drawn before them, and how many sequences of a test set the run
    trained on, by length (each a ``Counter`` from a sequence's length to a number of sequences)."""

    trained: Counter  # training sequences of each length
    repeated: Counter  # ... of which an earlier training sequence was the same
    tested: Counter  # test sequences of each length
    seen: Counter  # ... of which some training sequence was the same

    @property
    def repeated_share(self) -> float:
        """The share of the training sequences that repeat an earlier one."""
        return sum(self.repeated.values()) / sum(self.trained.values())

    @property
    def seen_share(self) -> float:
        """The share of the test sequences that the run trained on."""
        if not self.tested:
            raise ValueError("no test sequences were counted: pass them to count_repeats as tested")
        return sum(self.seen.values()) / sum(self.tested.values())

    def share_repeated(self, length: int) -> float:
        """The share of the training sequences of ``length`` that repeat an earlier one."""
        return self.repeated[length] / self.trained[length]

    @property
    def longest_repeated(self) -> int:
        """The longest length of which some training sequence repeats an earlier one (0: none repeats)."""
        return max((length for length, n in self.repeated.items() if n), default=0)

    @property
    def longest_seen(self) -> int:
        """The longest length of which some test sequence was trained on (0: none was)."""
        return max((length for length, n in self.seen.items() if n), default=0)


def count_repeats(trained_on: Iterable[tuple[int, ...]], tested: Iterable[tuple[int, ...]] = ()) -> Repeats:
    """:class:`Repeats` of the training sequences ``trained_on`` (in the order the run read them) and of the test
    sequences ``tested`` (sequences as :func:`sources` gives them)."""
    drawn: set[tuple[int, ...]] = set()
    counts = Repeats(Counter(), Counter(), Counter(), Counter())
    for sequence in trained_on:
        counts.trained[len(sequence)] += 1
        counts.repeated[len(sequence)] += sequence in drawn
        drawn.add(sequence)
    for sequence in tested:
        counts.tested[len(sequence)] += 1
        counts.seen[len(sequence)] += sequence in drawn
    if not counts.trained:
        raise ValueError("trained_on must hold at least one sequence; got none")
    return counts


def split_sequences(
    task: str = "copy", n_train: int = 256, n_held_out: int = 500, seed: int = 0, max_seq_len: int = MAX_SEQ_LEN
) -> tuple[Batch, Batch]:
    """``(training set, held-out set)`` of ``task``: ``n_train`` distinct sequences drawn with ``seed``, and up to
    ``n_held_out`` sequences from the evaluation generator (``EVAL_SEED``) whose source is not in the training set, so
    that the held-out score is on sequences never trained on. Lengths 1 to ``max_seq_len``, the chapter's symbols."""
    check_int("n_train", n_train, minimum=1)
    check_int("n_held_out", n_held_out, minimum=1)
    rng = torch.Generator().manual_seed(seed)
    pool = task_batch(task, 2 * n_train, max_seq_len=max_seq_len, rng=rng)  # twice as many: room for duplicates
    seen, keep = set(), []
    for i, row in enumerate(pool.src.tolist()):
        if _symbols(row) not in seen and len(keep) < n_train:
            seen.add(_symbols(row))
            keep.append(i)
    if len(keep) < n_train:
        raise ValueError(
            f"n_train={n_train} is more distinct sequences than a draw of {2 * n_train} gave ({len(keep)})"
        )
    held_out = task_batch(task, n_held_out, max_seq_len=max_seq_len, rng=torch.Generator().manual_seed(EVAL_SEED))
    unseen = [i for i, row in enumerate(held_out.src.tolist()) if _symbols(row) not in seen]
    if not unseen:
        raise ValueError(
            f"every one of the {n_held_out} held-out sequences is in the training set: draw more "
            "(n_held_out) or longer ones (max_seq_len)"
        )
    return _rows(pool, torch.tensor(keep)), _rows(held_out, torch.tensor(unseen))


class EpochStream:
    """Batches of ``batch_size`` rows of ``data`` for ever: every epoch a fresh permutation from ``rng``, cut into
    full batches (the last ``len(data) % batch_size`` rows of a permutation are left out of that epoch)."""

    def __init__(self, data: Batch, batch_size: int, rng: torch.Generator):
        check_int("batch_size", batch_size, minimum=1, maximum=len(data))
        self.data, self.batch_size, self.rng = data, batch_size, rng
        self.order: list[int] = []

    def __iter__(self) -> EpochStream:
        return self

    def __next__(self) -> Batch:
        if len(self.order) < self.batch_size:
            self.order = torch.randperm(len(self.data), generator=self.rng).tolist()
        rows, self.order = self.order[: self.batch_size], self.order[self.batch_size :]
        return _rows(self.data, torch.tensor(rows))


@dataclass
class RegularisedRun:
    """One run: its regularisers, seed and training history, and the plain cross-entropy, token accuracy and exact
    match of the trained model (evaluation mode, dropout off) on the training set and on the held-out set."""

    dropout: float
    label_smoothing: float
    seed: int
    history: History
    train: EvalResult
    held_out: EvalResult
    seconds: float  # processor time of the whole run: training and the two evaluations

    @property
    def loss_gap(self) -> float:
        """Held-out minus training cross-entropy: how much worse the model does on what it has not seen."""
        return self.held_out.loss - self.train.loss

    @property
    def exact_match_gap(self) -> float:
        """Training minus held-out exact match."""
        return self.train.exact_match - self.held_out.exact_match


def train_regularised(
    data: tuple[Batch, Batch],
    dropout: float = 0.0,
    label_smoothing: float = 0.0,
    seed: int = 0,
    steps: int = 300,
    batch_size: int = 64,
    eval_every: int | None = None,
    device: str = "cpu",
) -> RegularisedRun:
    """The chapter's small model (:func:`~transformer.train.recipes.small_model_config`) with ``dropout``, built with
    ``seed`` and trained by :func:`~transformer.train.train` for ``steps`` on the training set of ``data`` (an
    :class:`EpochStream` drawn with ``seed``) with ``label_smoothing`` and otherwise the chapter's settings, scored on
    the held-out set every ``eval_every`` steps and after the last, then on the training set."""
    check_probability("dropout", dropout)
    check_probability("label_smoothing", label_smoothing)
    training, held_out = data
    start = time.process_time()
    with seeded(seed):
        model = Transformer(small_model_config(dropout=dropout))
    config = TrainConfig(
        steps=steps, batch_size=batch_size, label_smoothing=label_smoothing, eval_every=eval_every or steps
    )
    stream = EpochStream(training, batch_size, make_rng(seed))
    history = train(
        model, stream, [held_out], config, RunConfig(seed=seed, device=device), progress=False
    )  # ends in eval
    final = EvalResult(
        history.eval_exact_match[-1], history.eval_token_accuracy[-1], history.eval_loss[-1], len(held_out)
    )  # the loop's last evaluation: the held-out set, after the last step
    return RegularisedRun(
        dropout, label_smoothing, seed, history, evaluate_batches(model, [training]), final, time.process_time() - start
    )


def regularisation_runs(
    task: str = "copy",
    n_train: int = 256,
    seeds: Sequence[int] = (0, 1, 2),
    regularisers: Mapping[str, tuple[float, float]] = REGULARISERS,
    **options,
) -> dict[str, list[RegularisedRun]]:
    """``{name: [run of seed s for s in seeds]}`` for every ``(dropout, label smoothing)`` of ``regularisers``; seed s
    draws the training set (:func:`split_sequences`), the initial weights and the batches, the same for every
    combination. ``options`` go to :func:`train_regularised`."""
    if not seeds:
        raise ValueError("seeds must hold at least one seed; got none")
    splits = {seed: split_sequences(task, n_train, seed=seed) for seed in seeds}
    return {
        name: [train_regularised(splits[seed], dropout, smoothing, seed, **options) for seed in seeds]
        for name, (dropout, smoothing) in regularisers.items()
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def summary(runs: Mapping[str, Sequence[RegularisedRun]]) -> dict[str, dict[str, float]]:
    """Per combination, the mean over its seeds of each score: ``train_loss``, ``held_out_loss``, ``loss_gap``,
    ``train_exact_match``, ``held_out_exact_match``, ``exact_match_gap`` and ``held_out_token_accuracy``."""
    scores = {
        "train_loss": lambda r: r.train.loss,
        "held_out_loss": lambda r: r.held_out.loss,
        "loss_gap": lambda r: r.loss_gap,
        "train_exact_match": lambda r: r.train.exact_match,
        "held_out_exact_match": lambda r: r.held_out.exact_match,
        "exact_match_gap": lambda r: r.exact_match_gap,
        "held_out_token_accuracy": lambda r: r.held_out.token_accuracy,
    }
    return {
        name: {score: _mean([value(r) for r in rs]) for score, value in scores.items()} for name, rs in runs.items()
    }


__all__ = [
    "REGULARISERS",
    "EpochStream",
    "RegularisedRun",
    "Repeats",
    "count_repeats",
    "regularisation_runs",
    "sources",
    "split_sequences",
    "summary",
    "train_regularised",
]
