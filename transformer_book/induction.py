"""Induction heads (Olsson et al., 2022, "In-context Learning and Induction Heads"): where a decoder-only model copies.

An induction head attends from the current token to the token that followed the previous occurrence of the current
token, and so predicts that the sequence repeats. In the copy task written for a decoder-only model,
``x <sep> x </s>`` (:func:`transformer.train.language_model.decoder_only_batch`), ``x`` has length ``n``: the
copy's token at position ``q = n + 1 + j`` is ``x[j]``, its previous occurrence is at ``j`` (``n + 1`` before), and
the token after that, at ``j + 1 = q - n``, is the one to write next. So an induction head's weights lie on the
diagonal ``k = q - n`` of the copy's rows: :func:`induction_pattern` marks it, and :func:`induction_scores` measures,
per layer and head, the share of attention on it (1: a perfect induction head; a head spread evenly over ``q + 1``
keys gets about ``1 / (q + 1)``).

Queries are the copy's own tokens (``q = n + 1 .. 2n``), those with a previous occurrence, as in Olsson et al.'s
prefix-matching score; the separator's query, which must find ``x[0]``, is not one. (At ``n = 1`` the diagonal is
the previous token's, so a previous-token head scores too; the tasks draw longer rows as well.)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from transformer.checks import check_int
from transformer.tokens import BOS_ID, PAD_ID
from transformer.train.tasks import token_label

from .viz.inspect import AttentionExample, AttentionRecorder


def separator_positions(tokens: Tensor, sep_id: int = BOS_ID) -> Tensor:
    """``(B,)``: where each row of ``tokens (B, T)`` has its first ``sep_id``, which is ``n``, the length of ``x``.
    Every row must hold one."""
    is_sep = tokens == sep_id  # (B, T)
    if not bool(is_sep.any(dim=1).all()):
        raise ValueError(f"every row of tokens must hold the separator sep_id={sep_id}; some rows have none")
    return is_sep.int().argmax(dim=1)  # (B,)


def induction_pattern(lengths: Tensor, width: int, offset: int = 0) -> Tensor:
    """``(B, width, width)`` bool: True at ``(q, q - n)`` for the copy's queries ``q = n + 1 .. 2n`` of each row,
    where ``n = lengths[b]`` (positions past ``width`` are left out); with ``offset``, at ``(q, q - n + offset)``
    instead (a key before the first or after the query is left out): ``-1`` is the previous occurrence of the
    current token itself, ``+1`` the token after the one to copy."""
    if not isinstance(lengths, Tensor) or lengths.dim() != 1 or lengths.is_floating_point():
        got = f"shape {tuple(lengths.shape)}" if isinstance(lengths, Tensor) else type(lengths).__name__
        raise ValueError(f"lengths must be a 1-D integer tensor (batch,) of the lengths of x; got {got}")
    if lengths.numel() and int(lengths.min()) < 1:
        raise ValueError(f"lengths must be >= 1 (x holds at least one token); got min {int(lengths.min())}")
    n = lengths[:, None, None]  # (B, 1, 1)
    q = torch.arange(width, device=lengths.device)[None, :, None]  # (1, T, 1)
    k = torch.arange(width, device=lengths.device)[None, None, :]  # (1, 1, T)
    check_int("offset", offset, minimum=-width)
    return (q > n) & (q <= 2 * n) & (k == q - n + offset) & (k >= 0) & (k <= q)  # (B, T, T)


def induction_scores(maps: Sequence[Tensor], lengths: Tensor, offset: int = 0) -> Tensor:
    """``(L, H)``: per layer and head, the mean over every row's copy queries of the attention weight on the
    induction diagonal (shifted by ``offset``: :func:`induction_pattern`). ``maps`` holds one ``(B, H, T, T)`` weight
    tensor per layer (a model's ``attention_maps``), ``lengths (B,)`` the lengths of ``x``
    (:func:`separator_positions`)."""
    if not len(maps):
        raise ValueError("maps must hold at least one layer's (B, H, T, T) attention weights; got none")
    B, _, T, _ = maps[0].shape
    if lengths.shape != (B,):
        raise ValueError(f"lengths must have one entry per row, shape ({B},); got {tuple(lengths.shape)}")
    pattern = induction_pattern(lengths.to(maps[0].device), T, offset)[:, None]  # (B, 1, T, T)
    queries = induction_pattern(lengths.to(maps[0].device), T).sum().clamp(min=1)  # how many (row, query) pairs
    scores = []
    for weights in maps:
        if weights.dim() != 4 or weights.shape[0] != B or weights.shape[2:] != (T, T):
            raise ValueError(f"every map must have shape ({B}, H, {T}, {T}); got {tuple(weights.shape)}")
        scores.append((weights.float() * pattern).sum(dim=(0, 2, 3)) / queries)  # (H,)
    return torch.stack(scores)  # (L, H)


class InductionRecorder(AttentionRecorder):
    """:class:`~transformer_book.viz.AttentionRecorder` for a model of one stack (:class:`~.descendants.GPT`): at
    each training step in ``steps``, every layer's attention maps of the copy rows ``rows (B, T)`` (``x <sep> x
    </s>``, padded), taken by the same hook. :meth:`scores` gives the induction score of every head at each step,
    :attr:`examples` the maps of row ``item`` as :class:`~transformer_book.viz.AttentionExample` frames."""

    def __init__(self, model: nn.Module, rows: Tensor, steps: Sequence[int], item: int = 0, sep_id: int = BOS_ID):
        self._watch(model, steps)
        self.rows, self.lengths = rows, separator_positions(rows, sep_id)  # (B, T), (B,)
        check_int("item", item, minimum=0, maximum=len(rows) - 1)
        self.item = item

    def snapshot(self) -> list[Tensor]:
        """Every layer's ``(B, H, T, T)`` weights of the rows, on the CPU."""
        device = next(self.model.parameters()).device
        return [weights.cpu() for weights in self.model.attention_maps(self.rows.to(device))]

    def scores(self) -> Tensor:
        """``(S, L, H)``: :func:`induction_scores` at each of the ``S`` recorded steps."""
        return torch.stack([induction_scores(self.snapshots[step], self.lengths) for step in self.steps])

    @property
    def examples(self) -> list[AttentionExample]:
        """Row ``item``'s maps at each recorded step, padding trimmed, as the decoder's self-attention (what a GPT
        block's causal attention is) of :class:`~transformer_book.viz.AttentionExample`."""
        tokens = [token_label(int(i)) for i in self.rows[self.item] if int(i) != PAD_ID]
        return [
            AttentionExample.from_maps(
                {"encoder": [], "decoder": self.snapshots[step], "cross": []}, [], tokens, self.item, f"step {step}"
            )
            for step in self.steps
        ]
