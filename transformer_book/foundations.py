"""Foundations a reader needs beside the model: teaching code for chapter 5 (attention).

- :class:`AdditiveAttention`: the score function of Bahdanau et al. (2015), ``v^T tanh(W q + U k)``, to compare with
  the dot product of Vaswani et al. (2017, §3.2.1); :func:`score_cost` and :func:`attention_flops` count what each
  costs, exactly, and :func:`counted_matmul_flops` counts the matrix products PyTorch actually runs;
- :func:`retrieval_attention`: a multi-head attention written by hand in which one query needs two positions, with
  one head or with two (the paper's "averaging reduces resolution", §2 and §3.2.2);
- :func:`query_gradient_norms`: how much gradient reaches a query through the softmax, with and without the
  ``1 / sqrt(d_k)`` scale;
- the checks of the chapter's exercises (:func:`check_rows_are_distributions`, :func:`check_weights_depend_on_query`,
  :func:`check_not_drawn_to_itself`) and :func:`compare`, which runs one on a faulty variant and on a correct one.

None of this is part of the model (:mod:`transformer`), which uses scaled dot-product attention only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

from transformer import MultiHeadAttention
from transformer.utils import make_rng
from transformer_book.i18n import tr, translatable
from transformer_book.pitfalls import run_check

__all__ = [
    "AdditiveAttention",
    "ScoreCost",
    "attention_flops",
    "check_not_drawn_to_itself",
    "check_rows_are_distributions",
    "check_weights_depend_on_query",
    "compare",
    "counted_matmul_flops",
    "dot_product_attention",
    "median_seconds",
    "retrieval_attention",
    "score_cost",
]


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Softmax over the keys (the last axis) of ``scores (..., T_q, T_k)``, with the package's mask convention
    (bool, ``True`` = may attend) and fill (the dtype's most negative number)."""
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1)  # (..., T_q, T_k)


class AdditiveAttention(nn.Module):
    """Additive attention (Bahdanau et al. 2015, appendix A.1.2): ``score(q, k) = v^T tanh(W q + U k)``.

    A feed-forward network with one hidden layer of ``d_hidden`` tanh units scores every (query, key) pair; the
    softmax and the weighted average of the values are the same as in dot-product attention. ``q (..., T_q, d_q)``
    and ``k (..., T_k, d_k)`` may have different sizes (the dot product needs ``d_q == d_k``).
    """

    def __init__(self, d_q: int, d_k: int, d_hidden: int):
        super().__init__()
        self.W = nn.Linear(d_q, d_hidden, bias=False)  # acts on the query
        self.U = nn.Linear(d_k, d_hidden, bias=False)  # acts on the key
        self.v = nn.Linear(d_hidden, 1, bias=False)  # reads the hidden layer: the vector v as a (1, d_hidden) matrix

    def scores(self, q: Tensor, k: Tensor) -> Tensor:
        """``(..., T_q, T_k)``: one hidden layer per (query, key) pair, read by ``v``."""
        hidden = torch.tanh(self.W(q).unsqueeze(-2) + self.U(k).unsqueeze(-3))  # (..., T_q, T_k, d_hidden)
        return self.v(hidden).squeeze(-1)  # (..., T_q, T_k)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``(output (..., T_q, d_v), weights (..., T_q, T_k))``, as :func:`transformer.scaled_dot_product_attention`."""
        weights = masked_softmax(self.scores(q, k), mask)  # (..., T_q, T_k)
        return weights @ v, weights  # (..., T_q, d_v)


def dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, scaled: bool = True
) -> tuple[Tensor, Tensor]:
    """Dot-product attention, scaled by ``1 / sqrt(d_k)`` (Vaswani et al.) or not (``scaled=False``, Luong et al.'s
    "dot" score). Returns ``(output (..., T_q, d_v), weights (..., T_q, T_k))``."""
    scores = q @ k.transpose(-2, -1)  # (..., T_q, T_k)
    if scaled:
        scores = scores / math.sqrt(q.size(-1))
    weights = masked_softmax(scores, mask)
    return weights @ v, weights


@dataclass(frozen=True)
class ScoreCost:
    """What one score function costs. FLOPs count a multiply and an add as one each (a multiply-add is 2, as PyTorch's
    ``FlopCounterMode`` counts matrix products) and a ``tanh`` as 1.

    ``per_score`` is paid for every (query, key) pair; ``per_query`` and ``per_key`` once per query or key (additive
    attention projects each of them once and reuses the projection for every pair). ``held_per_score`` is how many
    numbers the batched computation holds per pair before the softmax (1 for a score; the hidden layer and the score
    for additive attention)."""

    name: str
    parameters: int
    per_score: int
    per_query: int
    per_key: int
    held_per_score: int


def score_cost(kind: str, d_q: int, d_k: int, d_hidden: int | None = None) -> ScoreCost:
    """The cost of ``"dot"`` (``q . k``, ``d_q == d_k``; the ``1 / sqrt(d_k)`` can be folded into the query, ``d_k``
    multiplies per query, as PyTorch's fused kernels do) or ``"additive"`` (``v^T tanh(W q + U k)``)."""
    if kind == "dot":
        if d_q != d_k:
            raise ValueError(f"the dot product needs d_q == d_k; got d_q={d_q}, d_k={d_k}")
        return ScoreCost(
            translatable("dot product"), parameters=0, per_score=2 * d_k, per_query=d_k, per_key=0, held_per_score=1
        )
    if kind == "additive":
        if d_hidden is None:
            raise ValueError("additive attention needs d_hidden")
        return ScoreCost(
            translatable("additive"),
            parameters=d_hidden * (d_q + d_k + 1),
            per_score=d_hidden + d_hidden + 2 * d_hidden,  # add W q + U k, tanh, dot with v
            per_query=2 * d_hidden * d_q,
            per_key=2 * d_hidden * d_k,
            held_per_score=d_hidden + 1,
        )
    raise ValueError(f"kind must be 'dot' or 'additive'; got {kind!r}")


def attention_flops(cost: ScoreCost, T_q: int, T_k: int, matmul_only: bool = False) -> int:
    """FLOPs of all ``T_q * T_k`` scores. ``matmul_only`` keeps what a matrix product computes (what
    :func:`counted_matmul_flops` sees): for additive attention, the projections and the product with ``v``, not the
    addition and the tanh (``2 * d_hidden`` per score); for the dot product, ``q @ k^T`` without the scale."""
    per_score, per_query = cost.per_score, cost.per_query
    if matmul_only and cost.name == "additive":
        per_score -= 2 * (cost.held_per_score - 1)  # the add and the tanh are elementwise
    if matmul_only and cost.name == "dot product":
        per_query = 0  # the scale is elementwise
    return T_q * T_k * per_score + T_q * per_query + T_k * cost.per_key


def counted_matmul_flops(fn: Callable[[], object]) -> int:
    """The FLOPs of the matrix products ``fn()`` runs, as ``torch.utils.flop_counter.FlopCounterMode`` counts them
    (2 per multiply-add; elementwise operations such as tanh or a division are not counted)."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def median_seconds(fn: Callable[[], object], repeats: int = 15) -> float:
    """The median wall-clock time of ``fn()`` over ``repeats`` runs, after one warm-up run (synchronising a GPU)."""

    def sync() -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def query_gradient_norms(d_k: int, n_keys: int = 16, draws: int = 300, seed: int = 0) -> tuple[Tensor, Tensor]:
    """``(unscaled, scaled)``, each ``(draws,)``: the norm of the gradient that reaches a query ``q`` through
    ``L = g · softmax(K q / c)``, for unit-variance ``q`` and ``n_keys`` keys and a random upstream gradient ``g`` on
    the weights, without the scale (``c = 1``) and with it (``c = sqrt(d_k)``). In float64, so that saturated rows keep
    their tiny gradients instead of rounding them to 0. The gradient is written out: the softmax's Jacobian
    ``diag(w) - w w^T`` applied to ``g``, then ``K^T / c``."""
    rng = make_rng(seed)
    q = torch.randn(draws, d_k, generator=rng, dtype=torch.float64)  # (N, d_k)
    K = torch.randn(draws, n_keys, d_k, generator=rng, dtype=torch.float64)  # (N, n_keys, d_k)
    upstream = torch.randn(draws, n_keys, generator=rng, dtype=torch.float64)  # (N, n_keys): dL/dw

    def norm(c: float) -> Tensor:
        w = torch.softmax((K @ q[..., None])[..., 0] / c, dim=-1)  # (N, n_keys)
        d_scores = w * (upstream - (w * upstream).sum(-1, keepdim=True))  # (diag(w) - w w^T) g
        return ((K.transpose(1, 2) @ d_scores[..., None])[..., 0] / c).norm(dim=-1)  # (N,)

    return norm(1.0), norm(math.sqrt(d_k))


def retrieval_attention(
    words: Sequence[str],
    tokens: Sequence[str],
    query_position: int,
    wanted: Sequence[int],
    n_heads: int,
    sharpness: float = 50.0,
) -> tuple[MultiHeadAttention, Tensor]:
    """A hand-written :class:`~transformer.MultiHeadAttention` in which the query at ``query_position`` needs the
    words at the positions ``wanted`` (two of them), and its input ``x (1, T, d_model)``.

    The input of position ``t`` is the one-hot identity of its word, then the one-hot ``t``, then a constant 1.
    Every head matches on position only (its key is the one-hot position) and passes on the word (its value is the
    one-hot word). With ``n_heads=1`` the one head's query asks for both wanted positions at once; with ``n_heads=2``
    head ``h`` asks for ``wanted[h]`` alone. ``sharpness`` times the match is the score before the ``1 / sqrt(d_k)``.
    The output projection is the identity, so the output is the heads' outputs side by side.
    """
    if n_heads not in (1, 2) or len(wanted) != 2:
        raise ValueError(f"n_heads must be 1 or 2 and wanted two positions; got {n_heads}, {list(wanted)}")
    n_words, T = len(words), len(tokens)
    d_head = n_words + T  # one head must fit a word and a position
    d_model = 2 * d_head
    WORD, POS, ONE = slice(0, n_words), slice(n_words, n_words + T), n_words + T
    x = torch.zeros(1, T, d_model)  # (B, T, d_model)
    x[0, torch.arange(T), [words.index(t) for t in tokens]] = 1.0
    x[0, :, POS] = torch.eye(T)
    x[0, :, ONE] = 1.0

    attention = MultiHeadAttention(d_model, n_heads).eval()
    d_k = d_model // n_heads
    W = torch.zeros(3 * d_model, d_model)  # stacked (W_Q; W_K; W_V), rows = output features
    Wq, Wk, Wv = W[:d_model], W[d_model : 2 * d_model], W[2 * d_model :]
    for h in range(n_heads):
        rows = h * d_k
        asked = list(wanted) if n_heads == 1 else [wanted[h]]
        Wq[[rows + p for p in asked], ONE] = sharpness  # the query: "the positions I want", whatever the input
        Wk[rows : rows + T, POS] = torch.eye(T)  # the key: "I am position t"
        Wv[rows : rows + n_words, WORD] = torch.eye(n_words)  # the value: "my word is ..."
    with torch.no_grad():
        attention.in_proj.weight.copy_(W)
        attention.in_proj.bias.zero_()
        attention.out_proj.weight.copy_(torch.eye(d_model))
        attention.out_proj.bias.zero_()
    return attention, x


# ---------------------------------------------------------------------------------------------------------------
# Checks for the chapter's exercises. Each raises AssertionError (or whatever the variant raises) when it fails.


def check_rows_are_distributions(attend: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """``attend(q, k, v) -> (output, weights)`` must give every query a distribution over the keys: weights
    ``(B, T_q, T_k)`` with non-negative rows that sum to 1 (checked with ``T_q != T_k``, so no axis passes for another)."""
    g = make_rng(0)
    q, k, v = torch.randn(2, 3, 8, generator=g), torch.randn(2, 5, 8, generator=g), torch.randn(2, 5, 4, generator=g)
    with torch.no_grad():
        out, weights = attend(q, k, v)
    assert weights.shape == (2, 3, 5), tr(
        "weights have shape {shape}, not (B, T_q, T_k) = (2, 3, 5)", shape=tuple(weights.shape)
    )
    assert out.shape == (2, 3, 4), tr("output has shape {shape}, not (B, T_q, d_v) = (2, 3, 4)", shape=tuple(out.shape))
    assert (weights >= 0).all(), tr("some weights are negative")
    sums = weights.sum(-1)
    assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5), tr(
        "the weights of a query sum to {sums} over the keys, not to 1", sums=[round(float(s), 2) for s in sums[0]]
    )


def check_weights_depend_on_query(attend: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """Different queries over the same keys must be able to get different weights: ``attend(q, k, v)`` for 4
    random queries against the same 6 keys must not give every query the same row of weights."""
    g = make_rng(0)
    q, k, v = torch.randn(1, 4, 8, generator=g), torch.randn(1, 6, 8, generator=g), torch.randn(1, 6, 8, generator=g)
    with torch.no_grad():
        _, weights = attend(q, k, v)  # (1, 4, 6)
    spread = float((weights - weights[:, :1]).abs().max())
    assert spread > 1e-3, tr("every query gets the same weights (to within 1e-3): the query is ignored")


def check_not_drawn_to_itself(self_attention: Callable[[Tensor], Tensor], d_model: int = 64) -> None:
    """A freshly initialised self-attention ``self_attention(x (B, T, d_model)) -> weights (B, H, T, T)`` must not
    make (nearly) every token attend most to itself: with 16 random tokens, the share of queries whose largest weight
    is on their own position must stay below 1/2 (separate random W_Q and W_K give about 1/16; Q = K gives nearly 1)."""
    g = make_rng(0)
    x = torch.randn(8, 16, d_model, generator=g)  # (B, T, d_model)
    with torch.no_grad():
        weights = self_attention(x)  # (B, H, T, T)
    itself = (weights.argmax(-1) == torch.arange(16)).float().mean().item()
    assert itself < 0.5, tr("{share:.0%} of the tokens attend most to themselves", share=itself)


def compare(check: Callable[[object], None], faulty: object, correct: object) -> None:
    """Run ``check`` on a faulty variant and on a correct one, print what happened, and insist that it catches the
    first and passes the second (as chapter 12 does)."""
    caught, message = run_check(check, faulty)
    passed, problem = run_check(check, correct)
    print(tr("faulty :"), tr("passes") if caught else tr("CAUGHT  {message}", message=message))
    print(tr("correct:"), tr("passes") if passed else tr("FAILS   {problem}", problem=problem))
    assert not caught and passed
