"""Scoring a model: teacher-forced loss and token accuracy, and exact match of greedy decoding, on fixed batches
of any task or on fresh sequences of a synthetic one; for tasks of text, its translations and the scores of machine
translation (BLEU and chrF, with sacrebleu)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import torch

from ..checks import check_int
from ..decoding import beam_search, greedy_decode
from ..model import Transformer
from ..utils import eval_mode
from .language_model import LMBatch
from .objective import exact_match, sequence_loss, token_accuracy
from .tasks import DEFAULT_VOCAB_SIZE, EVAL_SEED, MAX_SEQ_LEN, MIN_SEQ_LEN, Batch, check_task_padding, task_eval_batches


@dataclass
class EvalResult:
    """Exact match (greedy decoding reproduces the whole target and stops), teacher-forced token accuracy and loss."""

    exact_match: float
    token_accuracy: float
    loss: float
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def evaluate(
    model: Transformer,
    task: str = "copy",
    n: int = 1000,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    min_seq_len: int = MIN_SEQ_LEN,
    max_seq_len: int = MAX_SEQ_LEN,
    seed: int = EVAL_SEED,
    batch_size: int = 500,
) -> EvalResult:
    """Score ``model`` on ``n`` fresh random sequences of ``task``, drawn from their own seeded generator."""
    check_task_padding(model.config.pad_id)
    return evaluate_batches(model, task_eval_batches(task, n, vocab_size, min_seq_len, max_seq_len, seed, batch_size))


def evaluate_batches(model: Transformer, batches: Iterable[Batch]) -> EvalResult:
    """Score ``model`` on ``batches`` of any task: teacher-forced loss and token accuracy over the real target
    tokens, and exact match of greedy decoding (up to the target's length plus EOS) over the sequences. The batches
    are padded with the model's ``config.pad_id``.

    A model of one stack (:class:`~transformer.train.language_model.LMBatch`) reads each row whole, so one pass
    decides its exact match: greedy decoding (the argmax at every step) reproduces the target if and only if the
    argmax at every scored position is the target token (each step then sees the prefix teacher forcing gave it)."""
    device, pad_id = next(model.parameters()).device, model.config.pad_id
    matches, correct, total, loss_sum, n = 0, 0.0, 0, 0.0, 0
    with eval_mode(model), torch.no_grad():
        for batch in batches:
            batch = batch.to(device)
            logits = model(*batch.inputs()).float()  # (B, T, V)
            loss_sum += float(sequence_loss(logits, batch.tgt_out, pad_id)) * batch.n_tokens
            correct += token_accuracy(logits, batch.tgt_out, pad_id) * batch.n_tokens
            total += batch.n_tokens
            if isinstance(batch, LMBatch):
                predicted = logits.argmax(dim=-1).masked_fill(batch.tgt_out == pad_id, pad_id)  # (B, T)
            else:
                predicted = greedy_decode(model, batch.src, batch.tgt_out.size(1), src_mask=batch.src_mask)
            matches += int(exact_match(predicted, batch.tgt_out, pad_id).sum())
            n += len(batch)
    if not n:
        raise ValueError("batches must hold at least one batch; got none")
    return EvalResult(exact_match=matches / n, token_accuracy=correct / total, loss=loss_sum / total, n=n)


def translate(
    model: Transformer,
    texts: Sequence[str],
    source_vocab,
    target_vocab,
    max_new_tokens: int,
    beam_size: int = 1,
    batch_size: int = 500,
) -> list[str]:
    """``texts`` translated by ``model``, greedily (``beam_size`` 1) or with beam search (the paper's length penalty
    0.6), in batches of ``batch_size``: encoded with ``source_vocab``, decoded with ``target_vocab`` (any vocabulary
    with ``encode_batch`` and ``decode_batch``), each output up to its first EOS."""
    check_int("beam_size", beam_size, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    outputs = []
    for start in range(0, len(texts), batch_size):
        src = source_vocab.encode_batch(texts[start : start + batch_size])  # (B, S)
        if beam_size == 1:
            ids = greedy_decode(model, src, max_new_tokens)  # (B, <= max_new_tokens)
        else:
            ids, _ = beam_search(model, src, beam_size, max_new_tokens)
        outputs += target_vocab.decode_batch(ids)
    return outputs


def text_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """``{"exact_match", "bleu", "chrf"}``: the share of hypotheses equal to their reference, and corpus BLEU and chrF
    (0 to 100) with sacrebleu's defaults (13a tokenization, one reference each), as the chapters report them.
    sacrebleu is optional for the training wing (``pip install sacrebleu``; the book's ``live`` extra has it)."""
    try:
        import sacrebleu
    except ImportError:
        raise ImportError("BLEU and chrF need sacrebleu, which is not installed: pip install sacrebleu") from None
    if len(hypotheses) != len(references) or not len(references):
        raise ValueError(
            f"hypotheses and references must be non-empty and as long as each other; got "
            f"{len(hypotheses)} and {len(references)}"
        )
    return {
        "exact_match": sum(h == r for h, r in zip(hypotheses, references, strict=True)) / len(references),
        "bleu": sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score,
        "chrf": sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score,
    }
