"""The training objective: cross-entropy over the real target tokens, with label smoothing, and the scores that go
with it (token accuracy under teacher forcing, exact match of whole outputs).

The loss is the cross-entropy of the logits against the decoder output, averaged over real target tokens only
(padding is ignored). Label smoothing (the paper uses 0.1, section 5.4) trains against a softened target; it is
PyTorch's built-in ``label_smoothing``, and :func:`label_smoothing_kl` writes out the paper's KL form to show they
differ only by a constant.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from ..tokens import PAD_ID


def sequence_loss(logits: Tensor, target: Tensor, pad_id: int = PAD_ID, label_smoothing: float = 0.0) -> Tensor:
    """Mean cross-entropy over the real tokens of ``target (B, T)`` for ``logits (B, T, V)``; padding is ignored.

    ``logits`` are raw scores: ``F.cross_entropy`` applies the log-softmax itself (a model that already returned
    probabilities would be softmaxed twice).
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=pad_id, label_smoothing=label_smoothing
    )


def smoothed_targets(target: Tensor, vocab_size: int, smoothing: float) -> Tensor:
    """The distribution that ``F.cross_entropy(label_smoothing=smoothing)`` trains towards, ``(..., V)``:
    ``1 - smoothing`` on the right token plus ``smoothing / V`` spread over every token (the right one included)."""
    one_hot = F.one_hot(target, vocab_size).float()  # (..., V)
    return one_hot * (1.0 - smoothing) + smoothing / vocab_size


def label_smoothing_kl(logits: Tensor, target: Tensor, smoothing: float, pad_id: int = PAD_ID) -> Tensor:
    """The paper's form of label smoothing: the mean over real tokens of KL(q || p), with q the smoothed target.

    Since KL(q || p) = H(q, p) - H(q) and the entropy H(q) does not depend on the model, this is the label-smoothed
    cross-entropy minus a constant: the same gradients, but a loss that reaches 0 for a perfect fit.
    """
    real = target != pad_id  # (B, T)
    log_p = F.log_softmax(logits[real].float(), dim=-1)  # (N, V)
    q = smoothed_targets(target[real], logits.size(-1), smoothing)  # (N, V)
    return F.kl_div(log_p, q, reduction="batchmean")


def token_accuracy(logits: Tensor, target: Tensor, pad_id: int = PAD_ID) -> float:
    """Fraction of real target tokens whose argmax prediction is right (teacher forcing)."""
    real = target != pad_id
    return float((logits.argmax(dim=-1) == target)[real].float().mean())


def exact_match(predicted: Tensor, target: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """``(B,)`` bool: row i of ``predicted`` equals row i of ``target`` token for token (both right-padded)."""
    width = max(predicted.size(1), target.size(1))
    predicted = F.pad(predicted, (0, width - predicted.size(1)), value=pad_id)
    target = F.pad(target, (0, width - target.size(1)), value=pad_id)
    return (predicted == target).all(dim=1)
