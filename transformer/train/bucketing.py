"""Batching by length: put examples of similar length together, so that a batch holds less padding.

A batch is padded to its longest example. Drawn at random, a batch of short and long examples spends much of its
compute on ``PAD``; sorted by length first, neighbours have nearly the same length. Sorting the whole data set once
would make every epoch see the same batches, so :func:`length_batches` does what torchtext's ``BucketIterator``
did: shuffle, sort within pools of ``pool`` batches (torchtext used 100, this package 50), cut the pools into
batches and shuffle the batches: little padding, and still random batches. (fairseq sorts the whole data set by
length and shuffles only the order of the batches.)

The functions here work on indices and lengths; :func:`text_batch` turns text pairs into the package's
:class:`~transformer.train.tasks.Batch` with two :class:`~transformer.train.tokenizer.Vocabulary`, and
:func:`batch_stream` yields training batches for ever, bucketed afresh every epoch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from ..checks import check_int, renamed_keywords
from .tasks import Batch, make_batch
from .tokenizer import Vocabulary


@renamed_keywords(generator="rng")
def random_batches(n: int, batch_size: int, rng: torch.Generator | None = None) -> list[list[int]]:
    """The indices ``0 .. n - 1`` shuffled and cut into batches of ``batch_size`` (the last one may be smaller)."""
    check_int("n", n, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    order = torch.randperm(n, generator=rng).tolist()
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


@renamed_keywords(generator="rng")
def length_batches(
    lengths: Sequence[int], batch_size: int, rng: torch.Generator | None = None, pool: int = 50,
) -> list[list[int]]:
    """Batches of indices of examples with similar ``lengths``, every index exactly once, in random order.

    Shuffle, take ``pool * batch_size`` examples at a time, sort them by length (stable, so ties keep the shuffled
    order), cut them into batches, then shuffle the order of all the batches. ``pool=1`` is plain random batching.
    """
    check_int("batch_size", batch_size, minimum=1)
    check_int("pool", pool, minimum=1)
    if not len(lengths):
        raise ValueError("lengths must hold at least one length; got none")
    order = torch.randperm(len(lengths), generator=rng).tolist()
    batches = []
    for start in range(0, len(order), pool * batch_size):
        chunk = sorted(order[start : start + pool * batch_size], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    shuffled = torch.randperm(len(batches), generator=rng).tolist()
    return [batches[i] for i in shuffled]


def padding_fraction(lengths: Sequence[int], batches: Sequence[Sequence[int]]) -> float:
    """The share of the padded tensors' slots that hold padding: each batch is ``len(batch) x`` its longest length."""
    slots = sum(len(batch) * max(lengths[i] for i in batch) for batch in batches)
    real = sum(lengths[i] for batch in batches for i in batch)
    return 1.0 - real / slots


def text_batch(
    sources: Sequence[str], targets: Sequence[str], source_vocab: Vocabulary, target_vocab: Vocabulary,
) -> Batch:
    """One :class:`~transformer.train.tasks.Batch` from text pairs: each side encoded with its vocabulary and right-padded;
    ``make_batch`` adds BOS and EOS to the target and builds the masks."""
    if len(sources) != len(targets) or not len(sources):
        raise ValueError(f"sources and targets must be non-empty and as long as each other; got {len(sources)} "
                         f"and {len(targets)}")
    return make_batch(source_vocab.encode_batch(sources), target_vocab.encode_batch(targets))


@renamed_keywords(generator="rng")
def batch_stream(
    sources: Sequence[str], targets: Sequence[str], source_vocab: Vocabulary, target_vocab: Vocabulary,
    batch_size: int, rng: torch.Generator | None = None, pool: int = 50,
) -> Iterator[Batch]:
    """Training batches of the text pairs for ever: each epoch is bucketed by source length (:func:`length_batches`)
    afresh from ``rng``, so batches differ from epoch to epoch and every pair is seen once per epoch."""
    if len(sources) != len(targets):
        raise ValueError(f"sources and targets must be as long as each other; got {len(sources)} and {len(targets)}")
    lengths = [len(source_vocab.tokenize(text)) for text in sources]
    while True:
        for batch in length_batches(lengths, batch_size, rng, pool):
            yield text_batch([sources[i] for i in batch], [targets[i] for i in batch], source_vocab, target_vocab)
