"""Batches for models of one stack: a decoder-only model (GPT's layout) reading a task written as one sequence, and an
encoder-only model (BERT's) filling in masked tokens. (The models themselves are the book kit's
:mod:`transformer_book.descendants`; the training loop takes these batches as it takes the encoder-decoder's.)

A decoder-only model has no source: the task is written as one row, ``x <sep> y </s>``, and the model learns to
continue it. The separator is ``BOS``, the token that starts every output of this package, so the vocabulary is the
encoder-decoder model's. Only ``y </s>`` is scored (the predictions made from the separator on); the model reads
``x`` but is never asked to predict it, as the encoder-decoder model is not.

An encoder-only model sees the whole row. Trained to fill in masked tokens (Devlin et al., 2019, section 3.1), it
learns from both sides of each gap; :func:`mask_tokens` corrupts rows as BERT does, and :func:`masked_token_batch`
applies it to the same rows ``x <sep> y``. There the right-hand context decides: a symbol masked in ``x`` is written
again in ``y``, to its right (copy: ``len(x) + 1`` positions on; reverse: mirrored; sort: the one symbol of ``y``
that ``x`` lacks), which a model that reads only the left cannot see. (Sorted sequences alone make a weak test at
these sizes: with 10 symbols and rows of 1 to 10, seeing the right-hand side raises the best possible accuracy on
one hidden symbol only from about 34 % to 39 %, ``tests/train/test_language_model.py``.)
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch
from torch import Tensor

from ..checks import check_choice, check_int, check_real
from ..masks import padding_mask
from ..tokens import BOS_ID, FIRST_SYMBOL, PAD_ID
from ..utils import make_rng
from .tasks import (
    DEFAULT_VOCAB_SIZE,
    EVAL_SEED,
    MAX_SEQ_LEN,
    MIN_SEQ_LEN,
    TASKS,
    Batch,
    TaskStream,
    check_task_sizes,
    make_batch,
    random_sequences,
    task_target,
)

MASK_RATE = 0.15  # BERT's share of each row's words chosen for prediction
MASK_SPLIT = (0.8, 0.1, 0.1)  # BERT's: of the chosen, replaced by [MASK], by a random word, left as they are


@dataclass
class LMBatch:
    """One batch for a model that reads each row whole, every tensor on the same device.

    ``tokens (B, T)`` right-padded, ``mask (B, 1, 1, T)`` their padding mask (a decoder-only model adds its causal
    mask itself), ``tgt_out (B, T)``: what the model's output at each position must be, ``PAD_ID`` where nothing is
    scored, and ``n_tokens``, the number of scored positions, which is what the loss averages over.
    """

    tokens: Tensor
    mask: Tensor
    tgt_out: Tensor
    n_tokens: int

    def to(self, device: torch.device | str) -> LMBatch:
        tensors = {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Tensor)}
        return replace(self, **{name: tensor.to(device) for name, tensor in tensors.items()})

    def __len__(self) -> int:
        return self.tokens.size(0)

    def inputs(self) -> tuple[Tensor, Tensor]:
        """What the model reads: ``model(*batch.inputs())`` gives the logits that ``tgt_out`` scores."""
        return self.tokens, self.mask


def lm_batch(tokens: Tensor, tgt_out: Tensor, pad_id: int = PAD_ID) -> LMBatch:
    """An :class:`LMBatch` of ``tokens (B, T)`` and ``tgt_out (B, T)`` (``pad_id`` where nothing is scored)."""
    if tokens.dim() != 2 or tokens.shape != tgt_out.shape:
        raise ValueError(
            f"tokens and tgt_out must be 2-D and of one shape; got {tuple(tokens.shape)} and {tuple(tgt_out.shape)}"
        )
    return LMBatch(tokens, padding_mask(tokens, pad_id), tgt_out, int((tgt_out != pad_id).sum()))


def decoder_only_batch(batch: Batch, pad_id: int = PAD_ID, sep_id: int = BOS_ID) -> LMBatch:
    """``batch``, a sequence-to-sequence task's, written for a decoder-only model: each row ``x <sep> y`` as one
    sequence (``x`` the source, ``y`` the target), scored on ``y </s>``, the predictions made from the separator on.

    ``batch.tgt_in`` (``BOS y``) and ``batch.tgt_out`` (``y EOS``) are what the encoder-decoder model reads and
    predicts; here they follow the source in the same row, ``BOS`` as the separator: position ``len(x) + t`` reads
    ``tgt_in[t]`` and predicts ``tgt_out[t]``. Rows are packed to the left (no padding between ``x`` and ``y``), so
    the copy of ``x[i]`` stands ``len(x) + 1`` positions after it in every row.
    """
    src, tgt_in, tgt_out = batch.src, batch.tgt_in.clone(), batch.tgt_out
    tgt_in[:, 0] = sep_id
    n = (src != pad_id).sum(dim=1, keepdim=True)  # (B, 1): the source lengths
    m = (tgt_out != pad_id).sum(dim=1, keepdim=True)  # (B, 1): the target lengths with EOS (tgt_in's with BOS)
    width = int((n + m).max())
    p = torch.arange(width, device=src.device)[None, :]  # (1, W): positions in the row
    t = p - n  # (B, W): position in the target part
    in_source, in_target = p < n, (t >= 0) & (t < m)  # (B, W) each
    from_source = src.gather(1, p.clamp(max=src.size(1) - 1).expand(src.size(0), -1))  # (B, W)
    t_index = t.clamp(0, tgt_in.size(1) - 1)
    tokens = torch.where(in_source, from_source, torch.where(in_target, tgt_in.gather(1, t_index), pad_id))
    scored = torch.where(in_target, tgt_out.gather(1, t_index), pad_id)  # (B, W)
    return lm_batch(tokens, scored, pad_id)


class DecoderOnlyStream(TaskStream):
    """Training batches of a synthetic task for ever, written for a decoder-only model (:func:`decoder_only_batch`):
    the sequences a :class:`~transformer.train.tasks.TaskStream` of the same generator draws, saved and resumed as it
    is."""

    def __next__(self) -> LMBatch:
        return decoder_only_batch(super().__next__())

    def source(self) -> dict:
        return {**self.sizes, "form": "decoder-only"}


def mask_tokens(
    tokens: Tensor,
    vocab_size: int,
    mask_id: int | None = None,
    rate: float = MASK_RATE,
    rng: torch.Generator | None = None,
    pad_id: int = PAD_ID,
) -> tuple[Tensor, Tensor]:
    """BERT's masked-token corruption (Devlin et al., 2019, section 3.1 and appendix A.1) of ``tokens (B, T)``.

    In each row, ``round(rate * n)`` of its ``n`` symbols (at least one; ids ``FIRST_SYMBOL .. vocab_size - 1``, so
    never padding, BOS, EOS or the mask) are chosen for prediction, uniformly at random: 80 % of them become
    ``mask_id`` (default ``vocab_size``, the first id after the symbols), 10 % a random symbol, 10 % stay as they are
    (the model cannot tell which of its inputs are real, so it must predict every position from its context). Draws
    come from ``rng`` (a ``torch.Generator``; the global one without it).

    Returns ``(corrupted (B, T), tgt_out (B, T))``: ``tgt_out`` holds the original symbol where one was chosen and
    ``pad_id`` elsewhere, so the loss (:func:`~transformer.train.objective.sequence_loss`) scores the chosen ones
    only. The count per row is the original code's (``max(1, round(rate * n))``); Hugging Face's collator chooses each
    position with probability ``rate`` instead, and draws replacements from the whole vocabulary.
    """
    mask_id = vocab_size if mask_id is None else mask_id
    _check_masking(tokens, vocab_size, mask_id, rate, rng)
    symbol = (tokens >= FIRST_SYMBOL) & (tokens < vocab_size)  # (B, T): may be chosen
    n = symbol.sum(dim=1, keepdim=True)  # (B, 1)
    k = torch.where(n > 0, (rate * n).round().long().clamp(min=1), 0)  # (B, 1): how many to choose in each row
    order = torch.rand(tokens.shape, generator=rng, device=tokens.device).masked_fill(~symbol, 2.0)  # symbols first
    rank = order.argsort(dim=1).argsort(dim=1)  # (B, T): each position's place in its row's random order
    chosen = rank < k  # (B, T): the first k symbols of that order
    action = torch.rand(tokens.shape, generator=rng, device=tokens.device)  # (B, T): which of the three happens
    random_symbols = torch.randint(FIRST_SYMBOL, vocab_size, tokens.shape, generator=rng, device=tokens.device)
    masked_below, random_below = MASK_SPLIT[0], MASK_SPLIT[0] + MASK_SPLIT[1]
    to_mask = chosen & (action < masked_below)
    to_random = chosen & (action >= masked_below) & (action < random_below)
    corrupted = torch.where(to_mask, mask_id, torch.where(to_random, random_symbols, tokens))
    return corrupted, torch.where(chosen, tokens, pad_id)


def masked_token_batch(
    task: str = "copy",
    batch_size: int = 64,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    min_seq_len: int = MIN_SEQ_LEN,
    max_seq_len: int = MAX_SEQ_LEN,
    rate: float = MASK_RATE,
    mask_id: int | None = None,
    rng: torch.Generator | None = None,
) -> LMBatch:
    """A batch of the synthetic task's rows ``x <sep> y`` (as :func:`decoder_only_batch` writes them, without the
    final EOS), corrupted by :func:`mask_tokens`, for a model that fills in the chosen symbols. Sequences and masks
    are drawn from ``rng``."""
    check_choice("task", task, TASKS)
    src, lengths = random_sequences(batch_size, vocab_size, min_seq_len, max_seq_len, rng)
    rows = decoder_only_batch(make_batch(src, task_target(task, src, lengths))).tokens  # (B, T): x <sep> y
    tokens, tgt_out = mask_tokens(rows, vocab_size, mask_id, rate, rng)
    return lm_batch(tokens, tgt_out)


class MaskedTokenStream(TaskStream):
    """Training batches of :func:`masked_token_batch` for ever, drawn from ``rng``; saved and resumed as a
    :class:`~transformer.train.tasks.TaskStream` is."""

    def __init__(
        self,
        task: str,
        batch_size: int,
        vocab_size: int = DEFAULT_VOCAB_SIZE,
        min_seq_len: int = MIN_SEQ_LEN,
        max_seq_len: int = MAX_SEQ_LEN,
        rate: float = MASK_RATE,
        mask_id: int | None = None,
        *,
        rng: torch.Generator,
    ):
        super().__init__(task, batch_size, vocab_size, min_seq_len, max_seq_len, rng=rng)
        self.masking = {"rate": rate, "mask_id": vocab_size if mask_id is None else mask_id}
        _check_masking(None, vocab_size, **self.masking)

    def __next__(self) -> LMBatch:
        return masked_token_batch(**self.sizes, **self.masking, rng=self.rng)

    def source(self) -> dict:
        return {**self.sizes, **self.masking, "form": "masked tokens"}


def masked_token_eval_batches(
    task: str = "copy",
    n: int = 1000,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    min_seq_len: int = MIN_SEQ_LEN,
    max_seq_len: int = MAX_SEQ_LEN,
    rate: float = MASK_RATE,
    mask_id: int | None = None,
    seed: int = EVAL_SEED,
    batch_size: int = 500,
) -> list[LMBatch]:
    """``n`` held-out rows of :func:`masked_token_batch`, sequences and masks from their own generator seeded with
    ``seed``: the same rows every time, and none drawn from a training stream."""
    check_task_sizes(n, vocab_size, min_seq_len, max_seq_len)
    check_int("batch_size", batch_size, minimum=1)
    rng = make_rng(seed)
    sizes = [min(batch_size, n - done) for done in range(0, n, batch_size)]
    return [masked_token_batch(task, size, vocab_size, min_seq_len, max_seq_len, rate, mask_id, rng) for size in sizes]


def _check_masking(
    tokens: Tensor | None, vocab_size: int, mask_id: int, rate: float, rng: torch.Generator | None = None
) -> None:
    """Raise a clear error unless the arguments of :func:`mask_tokens` make sense together."""
    if tokens is not None and (not isinstance(tokens, Tensor) or tokens.dim() != 2 or tokens.is_floating_point()):
        got = f"{tokens.dtype} of shape {tuple(tokens.shape)}" if isinstance(tokens, Tensor) else type(tokens).__name__
        raise ValueError(f"tokens must be a 2-D integer tensor (batch, seq_len); got {got}")
    check_int("vocab_size", vocab_size, minimum=FIRST_SYMBOL + 1)
    check_int("mask_id", mask_id, minimum=0)
    if FIRST_SYMBOL <= mask_id < vocab_size:
        raise ValueError(
            f"mask_id must not be one of the symbols [{FIRST_SYMBOL}, {vocab_size}) it hides; got {mask_id}"
        )
    check_real("rate", rate)
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], the share of each row's symbols to choose; got {rate!r}")
    if rng is not None and not isinstance(rng, torch.Generator):
        raise TypeError(f"rng must be a torch.Generator or None; got {type(rng).__name__}")
