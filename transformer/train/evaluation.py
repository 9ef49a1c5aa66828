"""Scoring a model: teacher-forced loss and token accuracy, and exact match of greedy decoding, on fixed batches
of any task or on fresh sequences of a synthetic one."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import torch

from ..checks import check_int, renamed_keywords
from ..decoding import greedy_decode
from ..model import Transformer
from ..utils import eval_mode, make_rng
from .objective import exact_match, sequence_loss, token_accuracy
from .tasks import DEFAULT_VOCAB_SIZE, Batch, task_batch

EVAL_SEED = 1_000_003  # evaluation sequences come from their own generator, never from the training stream


@dataclass
class EvalResult:
    """Exact match (greedy decoding reproduces the whole target and stops), teacher-forced token accuracy and loss."""

    exact_match: float
    token_accuracy: float
    loss: float
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


@renamed_keywords(min_len="min_seq_len", max_len="max_seq_len")
def evaluate(
    model: Transformer, task: str = "copy", n: int = 1000, vocab_size: int = DEFAULT_VOCAB_SIZE, min_seq_len: int = 1,
    max_seq_len: int = 10, seed: int = EVAL_SEED, batch_size: int = 500,
) -> EvalResult:
    """Score ``model`` on ``n`` fresh random sequences of ``task``, drawn from their own seeded generator."""
    check_int("n", n, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    rng = make_rng(seed)
    sizes = [min(batch_size, n - done) for done in range(0, n, batch_size)]
    return evaluate_batches(model, (task_batch(task, size, vocab_size, min_seq_len, max_seq_len, rng) for size in sizes))


def evaluate_batches(model: Transformer, batches: Iterable[Batch]) -> EvalResult:
    """Score ``model`` on ``batches`` of any task: teacher-forced loss and token accuracy over the real target
    tokens, and exact match of greedy decoding (up to the target's length plus EOS) over the sequences."""
    device = next(model.parameters()).device
    matches, correct, total, loss_sum, n = 0, 0.0, 0, 0.0, 0
    with eval_mode(model), torch.no_grad():
        for batch in batches:
            batch = batch.to(device)
            logits = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask).float()  # (B, T, V)
            loss_sum += float(sequence_loss(logits, batch.tgt_out)) * batch.n_tokens
            correct += token_accuracy(logits, batch.tgt_out) * batch.n_tokens
            total += batch.n_tokens
            predicted = greedy_decode(model, batch.src, batch.tgt_out.size(1), src_mask=batch.src_mask)
            matches += int(exact_match(predicted, batch.tgt_out).sum())
            n += len(batch)
    if not n:
        raise ValueError("batches must hold at least one batch; got none")
    return EvalResult(exact_match=matches / n, token_accuracy=correct / total, loss=loss_sum / total, n=n)
