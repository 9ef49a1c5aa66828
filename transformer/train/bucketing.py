"""Batching by length: put examples of similar length together, so that a batch holds less padding.

A batch is padded to its longest example. Drawn at random, a batch of short and long examples spends much of its
compute on ``PAD``; sorted by length first, neighbours have nearly the same length. Sorting the whole data set once
would make every epoch see the same batches, so :func:`length_batches` does what torchtext's ``BucketIterator``
did: shuffle, sort within pools of ``pool`` batches (torchtext used 100, this package 50), cut the pools into
batches and shuffle the batches: little padding, and still random batches. (fairseq sorts the whole data set by
length and shuffles only the order of the batches.)

The functions here work on indices and lengths; :func:`text_batch` turns text pairs into the package's
:class:`~transformer.train.tasks.Batch` with two :class:`~transformer.train.tokenizer.Vocabulary`, and
:func:`batch_stream` yields training batches for ever, bucketed afresh every epoch (a :class:`BatchStream`, which a
training checkpoint saves and resumes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import torch

from ..checks import check_int
from .tasks import Batch, check_same_source, make_batch
from .tokenizer import Vocabulary


def random_batches(n: int, batch_size: int, rng: torch.Generator | None = None) -> list[list[int]]:
    """The indices ``0 .. n - 1`` shuffled and cut into batches of ``batch_size`` (the last one may be smaller)."""
    check_int("n", n, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    order = torch.randperm(n, generator=rng).tolist()
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def length_batches(
    lengths: Sequence[int], batch_size: int, rng: torch.Generator | None = None, pool: int = 50
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
    sources: Sequence[str], targets: Sequence[str], source_vocab: Vocabulary, target_vocab: Vocabulary
) -> Batch:
    """One :class:`~transformer.train.tasks.Batch` from text pairs: each side encoded with its vocabulary and right-padded;
    ``make_batch`` adds BOS and EOS to the target and builds the masks."""
    if len(sources) != len(targets) or not len(sources):
        raise ValueError(
            f"sources and targets must be non-empty and as long as each other; got {len(sources)} and {len(targets)}"
        )
    return make_batch(source_vocab.encode_batch(sources), target_vocab.encode_batch(targets))


def text_batches(
    sources: Sequence[str],
    targets: Sequence[str],
    source_vocab: Vocabulary,
    target_vocab: Vocabulary,
    batch_size: int = 500,
) -> list[Batch]:
    """The text pairs in order, as batches of ``batch_size`` (the last one may be smaller): a task's fixed test
    batches."""
    check_int("batch_size", batch_size, minimum=1)
    return [
        text_batch(sources[i : i + batch_size], targets[i : i + batch_size], source_vocab, target_vocab)
        for i in range(0, len(sources), batch_size)
    ]


class BatchStream:
    """Training batches of text pairs for ever: each epoch is bucketed by source length (:func:`length_batches`)
    afresh from ``rng``, so batches differ from epoch to epoch and every pair is seen once per epoch.

    An iterator that can be saved and resumed: :meth:`state_dict` records the generator's state when the current
    epoch was drawn and how far into the epoch the stream is, and :meth:`load_state_dict` draws that epoch again
    and skips what was served, so a restored stream yields exactly the batches the saved one would have.
    """

    def __init__(
        self,
        sources: Sequence[str],
        targets: Sequence[str],
        source_vocab: Vocabulary,
        target_vocab: Vocabulary,
        batch_size: int,
        rng: torch.Generator | None = None,
        pool: int = 50,
    ):
        if len(sources) != len(targets):
            raise ValueError(
                f"sources and targets must be as long as each other; got {len(sources)} and {len(targets)}"
            )
        check_int("batch_size", batch_size, minimum=1)
        check_int("pool", pool, minimum=1)
        self.sources, self.targets, self.source_vocab, self.target_vocab = sources, targets, source_vocab, target_vocab
        self.batch_size, self.rng, self.pool = batch_size, rng, pool
        self.lengths = [len(source_vocab.tokenize(text)) for text in sources]
        self.epoch, self.position, self.batches, self.epoch_rng_state = 0, 0, [], None
        self._fingerprint: tuple[str, str] | None = None

    def __iter__(self) -> BatchStream:
        return self

    def __next__(self) -> Batch:
        if self.position == len(self.batches):  # the first epoch, or the last one is used up
            self._draw_epoch()
            self.epoch += 1
        batch = self.batches[self.position]
        self.position += 1
        return text_batch(
            [self.sources[i] for i in batch], [self.targets[i] for i in batch], self.source_vocab, self.target_vocab
        )

    def _draw_epoch(self) -> None:
        self.epoch_rng_state = None if self.rng is None else self.rng.get_state()
        self.batches, self.position = length_batches(self.lengths, self.batch_size, self.rng, self.pool), 0

    def source(self) -> dict:
        """What the stream draws from: the number of pairs, fingerprints of their text and of the vocabularies that
        turn it into ids (a vocabulary learned again elsewhere may differ), the batch and pool sizes."""
        if self._fingerprint is None:
            vocabularies = [
                (*vocab.itos, "\x01", *(" ".join(m) for m in getattr(vocab, "merges", ())))
                for vocab in (self.source_vocab, self.target_vocab)
            ]
            self._fingerprint = (
                _sha256((*self.sources, "\x01", *self.targets)),
                _sha256((*vocabularies[0], "\x02", *vocabularies[1])),
            )
        text, vocab = self._fingerprint
        return {
            "pairs": len(self.sources),
            "text_sha256": text,
            "vocab_sha256": vocab,
            "batch_size": self.batch_size,
            "pool": self.pool,
        }

    def state_dict(self) -> dict:
        """``{"source", "epoch", "position", "epoch_rng"}``: plain values and the generator's state as a tensor."""
        if self.rng is None:
            raise TypeError(
                "a stream that draws from the global generator (rng=None) cannot be saved; give it its "
                "own rng, e.g. torch.Generator().manual_seed(0)"
            )
        epoch_rng = self.rng.get_state() if self.epoch == 0 else self.epoch_rng_state
        return {"source": self.source(), "epoch": self.epoch, "position": self.position, "epoch_rng": epoch_rng}

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state`` (a :meth:`state_dict` of a stream over the same pairs and sizes)."""
        if self.rng is None:
            raise TypeError(
                "a stream that draws from the global generator (rng=None) cannot be restored; give it "
                "its own rng, e.g. torch.Generator().manual_seed(0)"
            )
        check_same_source(state["source"], self.source())
        self.rng.set_state(state["epoch_rng"])
        self.epoch, self.position, self.batches, self.epoch_rng_state = 0, 0, [], None
        if state["epoch"]:  # draw the current epoch again, from the generator's state when it was first drawn
            self._draw_epoch()
            self.epoch, self.position = state["epoch"], state["position"]


def _sha256(texts: Iterable[str]) -> str:
    """A short hash of ``texts`` in order."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\x00")
    return digest.hexdigest()[:16]


def batch_stream(
    sources: Sequence[str],
    targets: Sequence[str],
    source_vocab: Vocabulary,
    target_vocab: Vocabulary,
    batch_size: int,
    rng: torch.Generator | None = None,
    pool: int = 50,
) -> BatchStream:
    """Training batches of the text pairs for ever, bucketed by source length afresh every epoch: a
    :class:`BatchStream`, which a training checkpoint can save and resume (when it has its own ``rng``)."""
    return BatchStream(sources, targets, source_vocab, target_vocab, batch_size, rng, pool)
