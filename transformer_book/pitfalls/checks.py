"""The checks that catch the mistakes of :mod:`.variants` (chapter "Pitfalls", book/12_pitfalls.ipynb): short
functions a reader could have written, each raising ``AssertionError`` (or the error the faulty code itself raises)
for a faulty variant and passing for the package; :func:`run_check` runs one and says what happened."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer.config import TransformerConfig
from transformer.layers import EncoderLayer
from transformer.masks import causal_mask, padding_mask_from_lengths
from transformer.model import Transformer
from transformer.tokens import PAD_ID
from transformer.utils import seeded
from transformer_book.i18n import tr
from transformer_book.parameters import parameter_formula

from .variants import SNIPPET_SETUP


def _generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def check_matches_per_head_attention(attention: MultiHeadAttention) -> None:
    """Multi-head attention must equal the paper's definition computed one head at a
    time: head ``h`` uses rows ``h * d_k .. (h + 1) * d_k`` of W_Q, W_K, W_V, attends on
    its own, and the heads are concatenated then projected."""
    d, H = attention.d_model, attention.n_heads
    dk = d // H
    g = _generator()
    query, memory = torch.randn(2, 5, d, generator=g), torch.randn(2, 7, d, generator=g)
    with torch.no_grad():
        out, _ = attention.eval()(query, memory, memory)  # (B, T, d)
        w_q, w_k, w_v = attention.in_proj.weight.chunk(3)  # (d, d) each
        b_q, b_k, b_v = attention.in_proj.bias.chunk(3)
        heads = []
        for h in range(H):
            rows = slice(h * dk, (h + 1) * dk)
            q = query @ w_q[rows].T + b_q[rows]  # (B, T, d_k)
            k = memory @ w_k[rows].T + b_k[rows]  # (B, S, d_k)
            v = memory @ w_v[rows].T + b_v[rows]  # (B, S, d_k)
            weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dk), dim=-1)
            heads.append(weights @ v)  # (B, T, d_k)
        expected = attention.out_proj(torch.cat(heads, dim=-1))  # (B, T, d)
    message = tr("multi-head attention != per-head attention")
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5, msg=message)


def check_scores_have_unit_variance(attention: MultiHeadAttention) -> None:
    """With unit-variance queries and keys, the scaled scores ``q . k / sqrt(d_k)`` must
    have variance about 1.

    The projections are set to the identity (on a copy) so that q and k are the
    unit-variance inputs themselves. The scores are read back from the weights:
    ``log(softmax(s)) = s - logsumexp(s)``, so each row of log-weights has the variance
    of its scores."""
    probe = copy.deepcopy(attention).eval()
    d = probe.d_model
    with torch.no_grad():
        probe.in_proj.weight.copy_(torch.eye(d).repeat(3, 1))
        probe.in_proj.bias.zero_()
        g = _generator()
        query = torch.randn(4, 32, d, generator=g)  # (B, T_q, d)
        key = torch.randn(4, 64, d, generator=g)  # (B, T_k, d)
        _, weights = probe(query, key, key, need_weights=True)  # (B, H, T_q, T_k)
    variance = float(weights.log().var(dim=-1).mean())
    assert 0.8 < variance < 1.25, tr("scaled scores have variance {variance:.3g}, not about 1", variance=variance)


def check_parameter_count(model: Transformer) -> None:
    """The model must have exactly the trainable parameters the architecture implies: no
    sub-layer missing, shared by accident or created outside the model's parameters."""
    got, expected = model.num_parameters(), sum(parameter_formula(model.config).values())
    assert got == expected, tr(
        "{got:,} parameters, the architecture implies {expected:,} ({difference:+,})",
        got=got,
        expected=expected,
        difference=got - expected,
    )


def check_feed_forward(ffn: nn.Module, d_model: int = 512, d_ff: int = 2048) -> None:
    """The feed-forward block maps ``(B, T, d_model)`` to ``(B, T, d_model)`` through
    ``d_ff`` hidden units: ``2 * d_model * d_ff + d_ff + d_model`` parameters."""
    x = torch.randn(2, 3, d_model, generator=_generator())  # (B, T, d_model)
    out = ffn(x)
    assert out.shape == x.shape, tr("output {output} != input {input}", output=tuple(out.shape), input=tuple(x.shape))
    got = sum(p.numel() for p in ffn.parameters())
    expected = 2 * d_model * d_ff + d_ff + d_model
    assert got == expected, tr(
        "{got:,} parameters, d_ff={d_ff} implies {expected:,}", got=got, d_ff=d_ff, expected=expected
    )


def check_loss_gradient(output_fn: Callable[[Tensor], Tensor]) -> None:
    """The gradient of ``F.cross_entropy`` with respect to the logits must be
    ``(softmax(logits) - one_hot) / N`` when the model hands its logits
    (``output_fn(logits)``) to the loss."""
    g = _generator()
    logits = torch.randn(6, 10, generator=g).requires_grad_()  # (N, V)
    target = torch.randint(0, 10, (6,), generator=g)  # (N,)
    F.cross_entropy(output_fn(logits), target).backward()
    expected = (torch.softmax(logits.detach(), -1) - F.one_hot(target, 10)) / 6
    message = tr("the loss does not see the logits")
    torch.testing.assert_close(logits.grad, expected, msg=message)


def check_runs_on_another_device(attend: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """Attention must run wherever its inputs are. Without a GPU, the ``meta`` device
    (shapes only, no data) applies the same rule as CUDA: a CPU tensor of shape ``(1,)``
    may not join the computation, a 0-dim scalar may."""
    device = "cuda" if torch.cuda.is_available() else "meta"
    q = torch.randn(2, 4, 5, 8, device=device)  # (B, H, T, d_k)
    out, _ = attend(q, q, q, causal_mask(5, device=device))
    assert out.device.type == device and out.shape == q.shape


def check_runs_on_the_cpu(norm: nn.Module, d_model: int = 16) -> None:
    """A module must run on the device its input is on. Every machine has a CPU, so
    start there: a hard-coded ``.cuda()`` fails on it, with or without a GPU."""
    x = torch.randn(2, 3, d_model, generator=_generator())  # (B, T, d_model) on the CPU
    out = norm(x)
    assert out.device == x.device, tr("input on {input}, output on {output}", input=x.device, output=out.device)


def check_padding_is_invisible(layer: EncoderLayer) -> None:
    """Whatever sits at padded positions must not change the outputs at real
    positions."""
    d = layer.norm1.normalized_shape[0]
    g = _generator()
    x = torch.randn(2, 6, d, generator=g)  # (B, S, d)
    mask = padding_mask_from_lengths(torch.tensor([6, 4]), 6)  # row 1: 2 padded
    changed = x.clone()
    changed[1, 4:] = torch.randn(2, d, generator=g)
    with torch.no_grad():
        out, _ = layer.eval()(x, mask)
        out_changed, _ = layer(changed, mask)
    message = tr("padding changed the real positions")
    torch.testing.assert_close(out[1, :4], out_changed[1, :4], msg=message)


def check_source_padding_is_invisible(make_cross_mask: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """Whatever the encoder puts at padded source positions must not reach the decoder's
    output.

    ``make_cross_mask(src, tgt, pad_id)`` builds the encoder-decoder attention mask.
    Source and target have the same length here, so a mask built from the wrong sequence
    still has a valid shape."""
    model = small_model()
    src = torch.tensor([[3, 4, 5, 6, 7, 8], [3, 4, 5, 6, 0, 0]])  # row 1: 2 padded
    tgt = torch.tensor([[1, 9, 9, 9, 9, 9], [1, 9, 9, 9, 9, 0]])  # row 1: 1 padded
    with torch.no_grad():
        memory, _ = model.encode(src)  # (B, S, d)
        mask = make_cross_mask(src, tgt, 0)
        out = model.decode(tgt, memory, src_mask=mask)
        changed = memory.masked_fill((src == 0)[..., None], 5.0)  # only at padding
        out_changed = model.decode(tgt, changed, src_mask=mask)
    message = tr("source padding reached the decoder")
    torch.testing.assert_close(out, out_changed, msg=message)


def check_decoder_is_causal(model: Transformer) -> None:
    """The output at position i may depend on target tokens 0..i only: changing the
    tokens from position 4 on, or cutting them off, must leave the outputs at positions
    0..3 unchanged (greedy decoding relies on the second)."""
    g = _generator()
    V = model.config.tgt_vocab_size
    src = torch.randint(1, model.config.src_vocab_size, (2, 6), generator=g)
    tgt = torch.randint(1, V, (2, 7), generator=g)
    changed = tgt.clone()
    changed[:, 4:] = torch.randint(1, V, (2, 3), generator=g)
    with torch.no_grad():
        logits = model.eval()(src, tgt)  # (B, T, V)
        logits_changed, logits_cut = model(src, changed), model(src, tgt[:, :4])
    message = tr("future tokens changed earlier outputs")
    torch.testing.assert_close(logits[:, :4], logits_changed[:, :4], msg=message)
    message = tr("earlier outputs change when the sequence is cut short")
    torch.testing.assert_close(logits[:, :4], logits_cut, msg=message)


def check_padding_mask_hides_pad_keys(make_mask: Callable[[Tensor, int], Tensor]) -> None:
    """With the mask that ``make_mask(tokens, pad_id)`` builds, the package's attention
    must give padding keys weight 0 and real keys all the weight."""
    tokens = torch.tensor([[4, 5, 6, 0, 0], [4, 5, 6, 7, 8]])
    q = torch.randn(2, 1, 5, 8, generator=_generator())  # (B, H, T, d_k)
    mask = make_mask(tokens, 0)
    _, weights = scaled_dot_product_attention(q, q, q, mask)  # (B, H, T, T)
    pad = (tokens == 0)[:, None, None, :].expand_as(weights)
    assert float(weights[pad].sum()) == 0.0, tr("padding keys get weight")
    message = tr("weights of real keys do not sum to 1")
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 1, 5), msg=message)


def check_causal_mask_builder(make_causal: Callable[[int], Tensor]) -> None:
    """With the mask ``make_causal(T)``, the package's attention must give every future
    key weight 0."""
    q = torch.randn(1, 2, 5, 8, generator=_generator())  # (B, H, T, d_k)
    _, weights = scaled_dot_product_attention(q, q, q, make_causal(5))  # (B, H, T, T)
    assert float(weights.triu(diagonal=1).sum()) == 0.0, tr("future keys get weight")


def check_query_with_nothing_to_see(attend: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """A query whose keys are all hidden (e.g. cross-attention on an empty, fully padded
    source) must return a finite result that does not depend on the hidden values."""
    g = _generator()
    q, v = torch.randn(1, 1, 3, 4, generator=g), torch.randn(1, 1, 3, 4, generator=g)
    mask = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    mask[..., 0, :] = False  # query 0 may see nothing
    out, _ = attend(q, q, v, mask)
    out_changed, _ = attend(q, q, v + 1.0, mask)
    assert torch.isfinite(out).all(), tr("a query with no visible key gives {values}", values=out[0, 0, 0].tolist())
    message = tr("hidden values leak into an empty row")
    torch.testing.assert_close(out[..., 0, :], out_changed[..., 0, :], msg=message)


def check_runs_in_half_precision(attend: Callable[..., tuple[Tensor, Tensor]]) -> None:
    """Masked attention must run in float16 (mixed-precision training) and give finite
    outputs."""
    q = torch.randn(1, 2, 5, 8, generator=_generator()).half()  # (B, H, T, d_k)
    out, _ = attend(q, q, q, causal_mask(5))
    assert torch.isfinite(out).all(), tr("non-finite outputs in float16")


def check_matches_torch_layer_norm(norm: nn.Module, d_model: int = 512) -> None:
    """A layer norm written by hand must compute what ``nn.LayerNorm`` computes (both
    start with gain 1, bias 0)."""
    x = 3.0 * torch.randn(4, d_model, generator=_generator()) + 1.0
    with torch.no_grad():
        expected = F.layer_norm(x, (d_model,))
        torch.testing.assert_close(norm(x), expected, msg=tr("not nn.LayerNorm"))


def check_sinusoidal_table(table_fn: Callable[[int, int], Tensor]) -> None:
    """The table must match the paper's formula, PE[pos, 2i] = sin(pos / 10000^(2i/d)),
    PE[pos, 2i+1] = cos(...)."""
    d = 16
    table = table_fn(50, d)
    for pos, i in [(1, 0), (7, 3), (49, 7)]:
        angle = pos / 10000 ** (2 * i / d)
        got = (float(table[pos, 2 * i]), float(table[pos, 2 * i + 1]))
        expected = (math.sin(angle), math.cos(angle))
        assert np.allclose(got, expected, atol=1e-6), tr(
            "PE[{pos}, {start}:{end}] = ({got0:.4f}, {got1:.4f}), paper: ({expected0:.4f}, {expected1:.4f})",
            pos=pos,
            start=2 * i,
            end=2 * i + 2,
            got0=got[0],  # 4 decimals: the same on every CPU
            got1=got[1],
            expected0=expected[0],
            expected1=expected[1],
        )


def check_loss_ignores_padding(loss_fn: Callable[[Tensor, Tensor], Tensor], pad_id: int = PAD_ID) -> None:
    """Appending padding to a batch must not change its loss: ``loss_fn(logits (B, T,
    V), target (B, T))`` must average over the real tokens only."""
    g = _generator()
    logits = torch.randn(2, 4, 7, generator=g)  # (B, T, V)
    target = torch.randint(1, 7, (2, 4), generator=g)  # (B, T), no padding
    padded_logits = torch.cat([logits, torch.randn(2, 3, 7, generator=g)], dim=1)
    padded_target = F.pad(target, (0, 3), value=pad_id)  # 3 padding tokens per row
    message = tr("padding changed the loss")
    torch.testing.assert_close(loss_fn(padded_logits, padded_target), loss_fn(logits, target), msg=message)


def check_snippet_runs(code: str) -> None:
    """Code printed in a tutorial must run as printed (after :data:`SNIPPET_SETUP`)."""
    namespace: dict = {}
    exec(SNIPPET_SETUP, namespace)
    try:
        exec(code, namespace)
    except Exception as error:
        raise AssertionError(f"{type(error).__name__}: {error}") from error


def small_model() -> Transformer:
    """A seeded, untrained two-head model (d_model 16, 1 + 1 layers, 10 tokens): big
    enough for every model-level check, small enough that each runs in milliseconds."""
    config = TransformerConfig(
        src_vocab_size=10,
        tgt_vocab_size=10,
        d_model=16,
        n_heads=2,
        d_ff=32,
        n_encoder_layers=1,
        n_decoder_layers=1,
        dropout=0.0,
    )
    with seeded(0):
        return Transformer(config).eval()


def run_check(check: Callable[[object], None], variant: object) -> tuple[bool, str]:
    """Run ``check`` on ``variant``: ``(True, "passes")`` or ``(False, "ErrorType:
    message")`` (first line)."""
    try:
        check(variant)
    except Exception as error:  # the faulty variants fail in many ways
        lines = str(error).strip().splitlines()
        return False, f"{type(error).__name__}: {lines[0] if lines else ''}"
    return True, "passes"
