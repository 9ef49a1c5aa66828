"""Batching by length: put examples of similar length together, so that a batch holds less padding.

A batch is padded to its longest example. Drawn at random, a batch of short and long examples spends much of its
compute on ``PAD``; sorted by length first, neighbours have nearly the same length. Sorting the whole data set would
make every epoch see the same batches in the same order of lengths, so, as torchtext's ``BucketIterator`` and
fairseq do, :func:`length_batches` shuffles, sorts within pools of a few dozen batches, cuts the pools into batches
and shuffles the batches: little padding, and still random batches.

The functions here work on indices and lengths; :func:`text_batches` turns text pairs into the package's
:class:`~transformer.data.Batch` with two :class:`~transformer.tokenizer.Vocabulary`, and :func:`batch_stream`
yields training batches for ever, bucketed afresh every epoch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from .data import Batch, make_batch
from .tokenizer import Vocabulary


def random_batches(n: int, batch_size: int, generator: torch.Generator | None = None) -> list[list[int]]:
    """The indices ``0 .. n - 1`` shuffled and cut into batches of ``batch_size`` (the last one may be smaller)."""
    _check_positive_int("n", n)
    _check_positive_int("batch_size", batch_size)
    order = torch.randperm(n, generator=generator).tolist()
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def length_batches(
    lengths: Sequence[int], batch_size: int, generator: torch.Generator | None = None, pool: int = 50,
) -> list[list[int]]:
    """Batches of indices of examples with similar ``lengths``, every index exactly once, in random order.

    Shuffle, take ``pool * batch_size`` examples at a time, sort them by length (stable, so ties keep the shuffled
    order), cut them into batches, then shuffle the order of all the batches. ``pool=1`` is plain random batching.
    """
    _check_positive_int("batch_size", batch_size)
    _check_positive_int("pool", pool)
    if not len(lengths):
        raise ValueError("lengths must hold at least one length; got none")
    order = torch.randperm(len(lengths), generator=generator).tolist()
    batches = []
    for start in range(0, len(order), pool * batch_size):
        chunk = sorted(order[start : start + pool * batch_size], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    shuffled = torch.randperm(len(batches), generator=generator).tolist()
    return [batches[i] for i in shuffled]


def padding_fraction(lengths: Sequence[int], batches: Sequence[Sequence[int]]) -> float:
    """The share of the padded tensors' slots that hold padding: each batch is ``len(batch) x`` its longest length."""
    slots = sum(len(batch) * max(lengths[i] for i in batch) for batch in batches)
    real = sum(lengths[i] for batch in batches for i in batch)
    return 1.0 - real / slots


def text_batch(
    sources: Sequence[str], targets: Sequence[str], source_vocab: Vocabulary, target_vocab: Vocabulary,
) -> Batch:
    """One :class:`~transformer.data.Batch` from text pairs: each side encoded with its vocabulary and right-padded;
    ``make_batch`` adds BOS and EOS to the target and builds the masks."""
    if len(sources) != len(targets) or not len(sources):
        raise ValueError(f"sources and targets must be non-empty and as long as each other; got {len(sources)} "
                         f"and {len(targets)}")
    return make_batch(source_vocab.encode_batch(sources), target_vocab.encode_batch(targets))


def batch_stream(
    sources: Sequence[str], targets: Sequence[str], source_vocab: Vocabulary, target_vocab: Vocabulary,
    batch_size: int, generator: torch.Generator | None = None, pool: int = 50,
) -> Iterator[Batch]:
    """Training batches of the text pairs for ever: each epoch is bucketed by source length (:func:`length_batches`)
    afresh from ``generator``, so batches differ from epoch to epoch and every pair is seen once per epoch."""
    if len(sources) != len(targets):
        raise ValueError(f"sources and targets must be as long as each other; got {len(sources)} and {len(targets)}")
    lengths = [len(source_vocab.tokenize(text)) for text in sources]
    while True:
        for batch in length_batches(lengths, batch_size, generator, pool):
            yield text_batch([sources[i] for i in batch], [targets[i] for i in batch], source_vocab, target_vocab)


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")
