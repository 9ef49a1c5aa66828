"""Synthetic sequence tasks (copy, reverse, sort) and the batches a Transformer trains on. (The tasks as the command line
trains and scores them: :mod:`.synthetic`.)

Three ids are reserved (:mod:`transformer.tokens`): ``PAD_ID`` fills short sequences up to the batch's width,
``BOS_ID`` starts every decoder input, ``EOS_ID`` ends every decoder output. The task's symbols are the ids
``FIRST_SYMBOL .. vocab_size - 1``, so a real symbol is never mistaken for padding or for the start signal.

A training pair for the target ``y1 .. yn`` is the decoder input ``BOS y1 .. yn`` and the decoder output
``y1 .. yn EOS``: the output is the input shifted left by one, so position t learns to predict token t + 1 from the
tokens up to t (teacher forcing), and learns to say when to stop.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import torch
from torch import Tensor

from ..checks import check_choice, check_int
from ..masks import padding_mask, target_mask
from ..tokens import BOS_ID, EOS_ID, FIRST_SYMBOL, PAD_ID, SPECIAL_TOKENS
from ..utils import make_rng

TASKS = ("copy", "reverse", "sort")
DEFAULT_VOCAB_SIZE = 13  # the three special ids + 10 symbols
MIN_SEQ_LEN, MAX_SEQ_LEN = 1, 10  # sequence lengths, drawn uniformly: short enough for a CPU, long enough for attention
EVAL_SEED = 1_000_003  # evaluation sequences come from their own generator, never from the training stream


@dataclass
class Batch:
    """One batch of a sequence-to-sequence task, every tensor on the same device.

    ``src (B, S)``, ``tgt_in (B, T)`` (BOS + target: the decoder input, shifted right), ``tgt_out (B, T)``
    (target + EOS: what each decoder position must predict), ``src_mask (B, 1, 1, S)``, ``tgt_mask (B, 1, T, T)``
    and ``n_tokens``, the number of real (non-pad) tokens in ``tgt_out``, which is what the loss averages over.
    """

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    src_mask: Tensor
    tgt_mask: Tensor
    n_tokens: int

    def to(self, device: torch.device | str) -> Batch:
        tensors = {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Tensor)}
        return replace(self, **{name: tensor.to(device) for name, tensor in tensors.items()})

    def __len__(self) -> int:
        return self.src.size(0)

    def inputs(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """What the model reads: ``model(*batch.inputs())`` gives the logits that ``tgt_out`` scores (the training
        loop and the evaluation call it; a batch for a model of one stack answers with its own inputs)."""
        return self.src, self.tgt_in, self.src_mask, self.tgt_mask


def random_sequences(
    n: int,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    min_seq_len: int = MIN_SEQ_LEN,
    max_seq_len: int = MAX_SEQ_LEN,
    rng: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """``n`` random symbol sequences with lengths drawn uniformly from ``min_seq_len .. max_seq_len``.

    Returns ``(tokens (n, L), lengths (n,))``: symbols in ``[FIRST_SYMBOL, vocab_size)``, right-padded with PAD_ID
    to the longest drawn length ``L``.
    """
    check_task_sizes(n, vocab_size, min_seq_len, max_seq_len)
    lengths = torch.randint(min_seq_len, max_seq_len + 1, (n,), generator=rng)  # (n,)
    width = int(lengths.max())
    symbols = torch.randint(FIRST_SYMBOL, vocab_size, (n, width), generator=rng)  # (n, L)
    real = torch.arange(width)[None, :] < lengths[:, None]  # (n, L)
    return symbols.masked_fill(~real, PAD_ID), lengths


def source_positions(task: str, src: Tensor, lengths: Tensor) -> Tensor:
    """Where each symbol of the target of ``src (n, L)`` comes from: ``(n, L)``, the source position that target
    position ``t`` holds (copy: ``t``; reverse: the mirrored one; sort: the ``t``-th smallest symbol's, ties in source
    order). Positions past a sequence's length hold 0."""
    check_choice("task", task, TASKS)
    positions = torch.arange(src.size(1), device=src.device)[None, :].expand_as(src)  # (n, L)
    real = positions < lengths[:, None]  # (n, L)
    if task == "copy":
        found = positions
    elif task == "reverse":
        found = lengths[:, None] - 1 - positions  # (n, L): read row i from its end
    else:
        padding_last = src.masked_fill(~real, torch.iinfo(src.dtype).max)  # sort padding behind every symbol
        found = padding_last.sort(dim=1, stable=True).indices
    return found.masked_fill(~real, 0)


def task_target(task: str, src: Tensor, lengths: Tensor) -> Tensor:
    """What the model must output for ``src (n, L)``: the copy, the reversal or the sorted sequence, right-padded."""
    real = torch.arange(src.size(1), device=src.device)[None, :] < lengths[:, None]  # (n, L)
    return src.gather(1, source_positions(task, src, lengths)).masked_fill(~real, PAD_ID)


def make_batch(src: Tensor, tgt: Tensor, pad_id: int = PAD_ID) -> Batch:
    """Build the decoder input and output and the masks from right-padded ``src (B, S)`` and ``tgt (B, T)``.

    ``tgt`` holds the bare target symbols; BOS and EOS are added here: ``tgt_in = BOS + tgt`` and
    ``tgt_out = tgt + EOS``, both ``(B, T + 1)``.
    """
    if src.dim() != 2 or tgt.dim() != 2 or src.size(0) != tgt.size(0):
        raise ValueError(
            f"src and tgt must be 2-D with the same batch size; got {tuple(src.shape)} and {tuple(tgt.shape)}"
        )
    B = tgt.size(0)
    lengths = (tgt != pad_id).sum(dim=1)  # (B,)
    bos = torch.full((B, 1), BOS_ID, dtype=tgt.dtype, device=tgt.device)
    tgt_in = torch.cat([bos, tgt], dim=1)  # (B, T + 1): shifted right
    tgt_out = torch.cat([tgt, torch.full_like(bos, pad_id)], dim=1)  # (B, T + 1)
    tgt_out = tgt_out.scatter(1, lengths[:, None], EOS_ID)  # EOS right after the last real symbol
    return Batch(
        src=src,
        tgt_in=tgt_in,
        tgt_out=tgt_out,
        src_mask=padding_mask(src, pad_id),  # (B, 1, 1, S)
        tgt_mask=target_mask(tgt_in, pad_id),  # (B, 1, T + 1, T + 1)
        n_tokens=int((tgt_out != pad_id).sum()),
    )


def task_batch(
    task: str,
    batch_size: int,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    min_seq_len: int = MIN_SEQ_LEN,
    max_seq_len: int = MAX_SEQ_LEN,
    rng: torch.Generator | None = None,
) -> Batch:
    """A fresh random batch of ``task`` ("copy", "reverse" or "sort"), drawn from ``rng``."""
    check_choice("task", task, TASKS)
    src, lengths = random_sequences(batch_size, vocab_size, min_seq_len, max_seq_len, rng)
    return make_batch(src, task_target(task, src, lengths))


class TaskStream:
    """Training batches of ``task`` for ever, each drawn fresh from the generator ``rng`` (:func:`task_batch`): an
    iterator that can be saved and resumed. ``state_dict()`` holds the generator's state, so a stream restored with
    ``load_state_dict`` yields exactly the batches the saved one would have yielded next."""

    def __init__(
        self,
        task: str,
        batch_size: int,
        vocab_size: int = DEFAULT_VOCAB_SIZE,
        min_seq_len: int = MIN_SEQ_LEN,
        max_seq_len: int = MAX_SEQ_LEN,
        *,
        rng: torch.Generator,
    ):
        check_choice("task", task, TASKS)
        check_task_sizes(batch_size, vocab_size, min_seq_len, max_seq_len)
        if not isinstance(rng, torch.Generator):
            raise TypeError(
                f"rng must be a torch.Generator (its state is what a checkpoint saves); got {type(rng).__name__}"
            )
        self.sizes = dict(
            task=task, batch_size=batch_size, vocab_size=vocab_size, min_seq_len=min_seq_len, max_seq_len=max_seq_len
        )
        self.rng = rng

    def __iter__(self) -> TaskStream:
        return self

    def __next__(self) -> Batch:
        return task_batch(**self.sizes, rng=self.rng)

    def source(self) -> dict:
        """What the stream draws, as plain values: a stream resumes only from the state of one that drew the same."""
        return dict(self.sizes)

    def state_dict(self) -> dict:
        """``{"source": what is drawn, "rng": the generator's state}``: plain values and one tensor."""
        return {"source": self.source(), "rng": self.rng.get_state()}

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state`` (a :meth:`state_dict`), which must come from a stream of the same task and sizes."""
        check_same_source(state["source"], self.source())
        self.rng.set_state(state["rng"])


def task_eval_batches(
    task: str,
    n: int,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    min_seq_len: int = MIN_SEQ_LEN,
    max_seq_len: int = MAX_SEQ_LEN,
    seed: int = EVAL_SEED,
    batch_size: int = 500,
) -> list[Batch]:
    """``n`` random sequences of ``task`` from their own generator seeded with ``seed``, in batches of ``batch_size``:
    the same sequences every time, and none drawn from a training stream."""
    check_task_sizes(n, vocab_size, min_seq_len, max_seq_len)
    check_int("batch_size", batch_size, minimum=1)
    rng = make_rng(seed)
    sizes = [min(batch_size, n - done) for done in range(0, n, batch_size)]
    return [task_batch(task, size, vocab_size, min_seq_len, max_seq_len, rng) for size in sizes]


@dataclass
class TaskConfig:
    """What a model of a synthetic task learns from: the task and the sequences' sizes, and how many held-out
    sequences score it during training (the same ones at every evaluation)."""

    task: str = "copy"  # copy, reverse or sort random symbol sequences
    vocab_size: int = DEFAULT_VOCAB_SIZE  # 10 symbols after the special ids: enough to make copying non-trivial
    min_seq_len: int = MIN_SEQ_LEN  # sequence lengths drawn uniformly from [min_seq_len, max_seq_len]
    max_seq_len: int = MAX_SEQ_LEN
    eval_size: int = 200  # sequences per periodic evaluation: cheap, and enough to see progress

    def __post_init__(self) -> None:
        check_choice("task", self.task, TASKS)
        check_int("eval_size", self.eval_size, minimum=1)
        check_task_sizes(self.eval_size, self.vocab_size, self.min_seq_len, self.max_seq_len)

    def stream(self, batch_size: int, seed: int) -> TaskStream:
        """Training batches of ``batch_size`` fresh sequences, drawn from a generator seeded with ``seed``."""
        return TaskStream(
            self.task, batch_size, self.vocab_size, self.min_seq_len, self.max_seq_len, rng=make_rng(seed)
        )

    def eval_batches(self) -> list[Batch]:
        """The ``eval_size`` held-out sequences that score the model during training."""
        return task_eval_batches(self.task, self.eval_size, self.vocab_size, self.min_seq_len, self.max_seq_len)

    def to_dict(self) -> dict:
        return asdict(self)


def check_same_source(saved: dict, here: dict) -> None:
    """Raise a ValueError naming every difference between a saved stream's ``source`` and this stream's."""
    differences = [
        f"{name}: {saved.get(name)!r} saved, {here.get(name)!r} here"
        for name in sorted(saved.keys() | here.keys())
        if saved.get(name) != here.get(name)
    ]
    if differences:
        raise ValueError("the saved stream drew other batches: " + "; ".join(differences))


def token_label(token_id: int) -> str:
    """A readable name for an id: ``<pad>``, ``<s>``, ``</s>``, or the symbol's number."""
    return SPECIAL_TOKENS.get(int(token_id), str(int(token_id)))


def check_task_padding(pad_id: int) -> None:
    """Raise a clear error unless a model whose padding id is ``pad_id`` reads the synthetic tasks' sequences as they
    are written: padded with ``PAD_ID`` (every other id is a symbol, BOS or EOS)."""
    if pad_id != PAD_ID:
        raise ValueError(
            f"the synthetic tasks pad with PAD_ID={PAD_ID}; the model was built with pad_id={pad_id}: "
            "train and score it on batches of your own, padded with its pad_id (make_batch(src, tgt, "
            "pad_id))"
        )


def check_task_sizes(n: int, vocab_size: int, min_seq_len: int, max_seq_len: int) -> None:
    """Raise a clear error unless ``n`` sequences of ``min_seq_len .. max_seq_len`` symbols from a vocabulary of
    ``vocab_size`` ids (the special ids included) can be drawn."""
    check_int("n", n, minimum=1)
    check_int("vocab_size", vocab_size, minimum=FIRST_SYMBOL + 1)
    check_int("min_seq_len", min_seq_len, minimum=1)
    check_int("max_seq_len", max_seq_len, minimum=min_seq_len)
