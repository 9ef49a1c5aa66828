"""The exercises of chapter 11 (``book/11_inside_the_model.ipynb``): a head's mean weight on the previous token, and the
attention output with one head silenced."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from transformer import MultiHeadAttention
from transformer.attention import scaled_dot_product_attention
from transformer.utils import make_rng, seeded
from transformer_book.ablation import aligned_weight
from transformer_book.exercises.grading import SEEDS, check_shape, returned_tensor
from transformer_book.i18n import tr

__all__ = ["grade_previous_token_weight", "grade_silenced_head"]


def _previous_mistakes(weights: Tensor, valid: Tensor) -> dict[str, Tensor]:
    """What each classic mistake makes of the heads' mean weight on the previous token, by the hint that names it."""
    B, H, T, _ = weights.shape
    t = torch.arange(T)[None, :].expand(B, T)  # (B, T): each query's position
    has_previous = valid & (t >= 1)
    on = lambda keys, queries: aligned_weight(weights, keys, queries)  # noqa: E731
    diagonal = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1): query t on key t - 1
    per_sequence = (diagonal * has_previous[:, None, 1:]).sum(-1) / has_previous[:, None, 1:].sum(-1)  # (B, H)
    return {
        tr("it averages over padding queries too: keep the queries where valid is True"): on(t - 1, t >= 1),
        tr(
            "it reads key t + 1, the next token (diagonal offset=1, or the map transposed): the previous token is key "
            "t - 1, weights[..., t, t - 1], the diagonal offset=-1"
        ): on(t + 1, valid & (t + 1 < T)),
        tr("it reads each query's weight on itself (the diagonal): the previous token is key t - 1, offset=-1"): on(
            t, valid
        ),
        tr(
            "query 0 is counted, on key -1 (torch.roll wraps it round to the last key): query 0 has no previous "
            "token; keep the queries t >= 1"
        ): on((t - 1) % T, valid),
        tr(
            "query 0 is counted, as a weight of 0: it has no previous token; divide by the number of valid queries "
            "with t >= 1"
        ): on(t - 1, has_previous) * has_previous.sum() / valid.sum(),
        tr(
            "it keeps the queries whose previous *key* is valid, one padding query per sequence too: keep the queries "
            "where valid is True, valid[:, 1:]"
        ): on(t - 1, (t >= 1) & valid.roll(1, dims=1)),
        tr(
            "it is the mean of each sequence's mean: a short sequence then counts as much as a long one; average over "
            "all the valid queries together, each counting once"
        ): per_sequence.mean(0),
    }


def grade_previous_token_weight(previous: Callable[[Tensor, Tensor], Tensor]) -> None:
    """``previous(weights (B, H, T, T), valid (B, T))`` must give each head's mean weight on the key just before the
    query, ``(H,)``, averaged over the queries where ``valid`` is True and that have a previous token (t >= 1), for
    several seeds and shapes (with padding). It names padding queries kept, the next key or the query's own, query 0
    counted (wrapped round or as 0), the keys' validity for the queries', and a mean of means."""
    for seed, (B, H, T) in zip(SEEDS, ((2, 4, 6), (3, 1, 9), (1, 8, 3)), strict=True):
        g = make_rng(seed)
        weights = torch.softmax(3 * torch.randn(B, H, T, T, generator=g), dim=-1)
        lengths = torch.randint(2, T + 1, (B,), generator=g)
        t = torch.arange(T)[None, :]  # (1, T)
        valid = t < lengths[:, None]  # (B, T)
        call = tr("previous(weights of shape {shape}, valid)", shape=(B, H, T, T))
        mine = returned_tensor(previous(weights, valid), call)
        check_shape(mine, (H,), call, tr("one number per head"))
        expected = aligned_weight(weights, (t - 1).expand(B, T), valid & (t >= 1))
        if torch.allclose(mine.double(), expected.double(), atol=1e-5):
            continue
        for hint, wrong in _previous_mistakes(weights, valid).items():
            if not torch.allclose(wrong, expected, atol=1e-5) and torch.allclose(mine.float(), wrong, atol=1e-5):
                raise AssertionError(tr("{call}: {hint}", call=call, hint=hint))
        raise AssertionError(
            tr(
                "{call} is {mine}, not {expected} (the weight of query t on key t - 1, averaged over the valid queries "
                "with t >= 1)",
                call=call,
                mine=[round(float(w), 3) for w in mine],
                expected=[round(float(w), 3) for w in expected],
            )
        )


def _silenced_by(
    attention: MultiHeadAttention, x: Tensor, head: int, where: str = "output", bias: bool = True
) -> Tensor:
    """Self-attention with ``head`` silenced right (``where`` "output": its output zeroed before the projection), or
    with a classic mistake: its "queries" or "keys" zeroed instead, or the head's columns of the "projected" output;
    ``bias=False``: the output projection's bias left out."""
    B, T, d = x.shape
    H, d_k = attention.n_heads, attention.d_k
    q, k, v = (p.view(B, T, H, d_k).transpose(1, 2).clone() for p in attention.in_proj(x).chunk(3, dim=-1))
    if where in ("queries", "keys"):
        (q if where == "queries" else k)[:, head] = 0
    out, _ = scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)
    if where == "output":
        out[:, head] = 0
    merged = out.transpose(1, 2).reshape(B, T, d)
    projected = merged @ attention.out_proj.weight.T + (attention.out_proj.bias if bias else 0.0)
    if where == "projected":
        projected[..., head * d_k : (head + 1) * d_k] = 0
    return projected


def grade_silenced_head(silenced: Callable[[MultiHeadAttention, Tensor, int], Tensor]) -> None:
    """``silenced(attention, x (B, T, d_model), head)`` must be the self-attention output of ``attention`` with
    ``head`` silenced, as the package computes it with ``attention.head_mask`` (to within 1e-5): the head's output is
    zeroed *before* the heads are concatenated and projected. For several seeds, shapes and heads (biases random). It
    names the head's columns zeroed after the projection, its queries or keys zeroed (which leaves it averaging the
    values), another head silenced, no head silenced, the projection's bias dropped, and a module changed in place."""
    for seed, (B, T, d, H) in zip(SEEDS, ((2, 5, 16, 4), (1, 7, 8, 2), (3, 4, 32, 8)), strict=True):
        with seeded(seed), torch.no_grad():
            attention = MultiHeadAttention(d, H).eval()
            attention.in_proj.bias.normal_(), attention.out_proj.bias.normal_()  # random biases show a forgotten one
        x = torch.randn(B, T, d, generator=make_rng(seed))
        for head in (0, H - 1):
            call = tr(
                "silenced(attention with {H} heads, x of shape {shape}, head={head})", H=H, shape=(B, T, d), head=head
            )
            with torch.no_grad():
                attention.head_mask = torch.ones(H).index_fill(0, torch.tensor([head]), 0.0)
                expected = attention(x, x, x)[0]  # the package's silencing, before the answer can change anything
                attention.head_mask = None
                before = {name: p.clone() for name, p in attention.state_dict().items()}
                mine = returned_tensor(silenced(attention, x, head), call)
                changed = attention.head_mask is not None or any(
                    not torch.equal(p, before[name]) for name, p in attention.state_dict().items()
                )
                attention.head_mask = None
                attention.load_state_dict(before)
            assert not changed, tr(
                "{call} leaves attention changed (its weights, or its head_mask, set and not reset): the next call "
                "would silence the head too; compute the output without changing the module, or restore it",
                call=call,
            )
            check_shape(mine, (B, T, d), call, tr("the attention's output, (B, T, d_model)"))
            if torch.allclose(mine, expected, atol=1e-5):
                continue
            mistakes = {
                tr(
                    "{call} zeroes the head's columns of the *projected* output; silence the head's output "
                    "before out_proj, which mixes every head into every column",
                    call=call,
                ): dict(where="projected"),
                tr(
                    "{call} zeroes the head's queries: its weights become uniform and it still passes on the mean of "
                    "its values; zero the head's output",
                    call=call,
                ): dict(where="queries"),
                tr(
                    "{call} zeroes the head's keys: its weights become uniform and it still passes on the mean of "
                    "its values; zero the head's output",
                    call=call,
                ): dict(where="keys"),
                tr("{call} is the output with every head: head {head} is not silenced", call=call, head=head): dict(
                    where="none"
                ),
                tr(
                    "{call} leaves out the output projection's bias: out_proj adds it whatever the heads say", call=call
                ): dict(bias=False),
                **{
                    tr("{call} silences head {other}, not head {head}", call=call, other=other, head=head): dict(
                        head=other
                    )
                    for other in range(H)
                    if other != head
                },
            }
            with torch.no_grad():
                for hint, how in mistakes.items():
                    if torch.allclose(mine, _silenced_by(attention, x, **(dict(head=head) | how)), atol=1e-5):
                        raise AssertionError(hint)
            error = float((mine - expected).abs().max())
            raise AssertionError(tr("{call} differs from the package's by up to {error:.2g}", call=call, error=error))
