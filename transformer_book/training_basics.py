"""What training needs, written out and measured: teaching code for the page "Before you start" (01a_foundations),
and for chapter 06's stack of blocks at initialisation.

- :func:`cross_entropy_gradient`: the gradient of softmax cross-entropy with respect to the logits, ``softmax(z) - q``;
- :func:`adam_steps`: the steps ``torch.optim.Adam`` takes on one parameter (or several side by side) for a given
  sequence of gradients, for a choice of ``betas`` and ``eps``;
- :func:`initialise` and :func:`signal_through`: re-initialise a stack's linear layers as Glorot & Bengio (2010,
  "Xavier") or He et al. (2015) propose, and measure the signal and its gradient through the stack;
- :func:`initial_attention_scores`: the scaled scores of the package's attention as initialised, whose query, key and
  value projections share one Xavier-initialised ``(3 d_model, d_model)`` matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.attention import MultiHeadAttention
from transformer.utils import seeded

INITIALISATIONS = ("xavier", "he")


def cross_entropy_gradient(logits: Tensor, target: Tensor, smoothing: float = 0.0) -> Tensor:
    """``d/dlogits`` of ``F.cross_entropy(logits (N, V), target (N,), label_smoothing=smoothing, reduction="sum")``:
    ``softmax(logits) - q`` row by row, ``q`` the (smoothed) target distribution."""
    V = logits.size(-1)
    q = (1 - smoothing) * F.one_hot(target, V).to(logits.dtype) + smoothing / V  # (N, V)
    return logits.softmax(dim=-1) - q  # (N, V)


def adam_steps(
    gradients: Sequence[float] | Sequence[Sequence[float]] | Tensor,
    betas: tuple[float, float] = (0.9, 0.98),
    eps: float = 1e-9,
) -> list:
    """The steps ``torch.optim.Adam(lr=1)`` takes when fed ``gradients`` one step after another, in float64:
    ``m_hat / (sqrt(v_hat) + eps)``. ``gradients (steps,)`` feeds one parameter, ``(steps, n)`` n parameters at once,
    each with its own averages; the steps come back as (nested) lists of the same shape."""
    gradients = torch.as_tensor(gradients, dtype=torch.float64)  # (steps, ...)
    parameter = nn.Parameter(torch.zeros(gradients.shape[1:], dtype=torch.float64))
    optimizer = torch.optim.Adam([parameter], lr=1.0, betas=betas, eps=eps)
    steps = []
    for gradient in gradients:
        before = parameter.detach().clone()
        parameter.grad = gradient.clone()
        optimizer.step()
        steps.append(before - parameter.detach())
    return torch.stack(steps).tolist()


def initialise(module: nn.Module, scheme: str) -> nn.Module:
    """Re-initialise every ``nn.Linear`` in ``module`` (biases to 0) and return it. ``"xavier"``: Glorot & Bengio's
    uniform ``Var(W) = 2 / (fan_in + fan_out)``, what the package uses; ``"he"``: He et al.'s ``Var(W) = 2 / fan_in``
    for ReLU layers (``kaiming_uniform_``), applied to every layer, as is common."""
    if scheme not in INITIALISATIONS:
        raise ValueError(f"scheme must be one of {INITIALISATIONS}; got {scheme!r}")
    for linear in (m for m in module.modules() if isinstance(m, nn.Linear)):
        if scheme == "xavier":
            nn.init.xavier_uniform_(linear.weight)
        else:
            nn.init.kaiming_uniform_(linear.weight, nonlinearity="relu")
        if linear.bias is not None:
            nn.init.zeros_(linear.bias)
    return module


@dataclass
class Signal:
    """What a stack does to its input at initialisation."""

    rms: list[float]  # the root mean square of the signal: the input, then after each block
    input_gradient: float  # the norm of the gradient that reaches the input (a random read-out at the top)


def signal_through(
    blocks: Sequence[Callable[[Tensor], Tensor]], x: Tensor, residual: bool, readout: Tensor | None = None
) -> Signal:
    """Run ``x`` through ``blocks``, ``h = h + block(h)`` with ``residual``, else ``h = block(h)``; the gradient at
    the input is that of ``(h * readout).sum()`` (a fixed random direction, drawn from the global generator when
    ``readout`` is ``None``)."""
    x = x.detach().requires_grad_()
    h, rms = x, [float(x.detach().pow(2).mean().sqrt())]
    for block in blocks:
        h = h + block(h) if residual else block(h)
        rms.append(float(h.detach().pow(2).mean().sqrt()))
    readout = torch.randn_like(h) if readout is None else readout
    (gradient,) = torch.autograd.grad((h * readout).sum(), x)
    return Signal(rms, float(gradient.norm()))


def initial_attention_scores(d_model: int, n_heads: int, n_tokens: int = 256, seed: int = 0) -> Tensor:
    """The scaled scores ``q·k / sqrt(d_k)``, ``(H, T, T)``, of a freshly initialised :class:`MultiHeadAttention` in
    self-attention over ``n_tokens`` inputs with independent unit-variance components (what a layer norm hands it).
    Module and inputs are drawn from ``seed``; the global generator is left as it was."""
    with seeded(seed), torch.no_grad():
        attention = MultiHeadAttention(d_model, n_heads)
        x = torch.randn(1, n_tokens, d_model)  # (1, T, d_model)
        q, k, _ = attention.in_proj(x).chunk(3, dim=-1)  # (1, T, d_model) each
        q, k = attention.split_heads(q)[0], attention.split_heads(k)[0]  # (H, T, d_k) each
        return q @ k.transpose(-2, -1) / attention.d_k**0.5  # (H, T, T)
