"""What the model costs, counted exactly and measured: teaching code for chapter 11.

- :func:`encoder_layer_flops` counts the matrix-product FLOPs of one encoder layer's forward pass term by term (the
  projections and the feed-forward network grow as ``T d^2``, the attention scores and their weighted sum as
  ``T^2 d``: the paper's Table 1), reusing chapter 5's count of the scores (:func:`~transformer_book.foundations.
  attention_flops`); :func:`crossover_length` is the length at which the ``T^2`` term overtakes the rest;
- :func:`score_bytes` is the size of the ``(B, H, T_q, T_k)`` score tensor the readable attention materialises, and
  :func:`saved_bytes` measures the memory autograd keeps for the backward pass;
- :func:`forward_flops_by_component` and :func:`step_times` say where a training step's work and time go, by
  component of the model (embeddings, attention, feed-forward, norms, output projection, loss).

FLOPs count a multiply-add as 2, as ``torch.utils.flop_counter.FlopCounterMode`` counts matrix products; the
element-wise work (softmax, norms, additions) is not counted, which is exactly why FLOPs and time part ways.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

from transformer import MultiHeadAttention, Transformer, scaled_dot_product_attention
from transformer.embeddings import TokenEmbedding
from transformer.layers import FeedForward
from transformer.training import sequence_loss
from transformer_book.foundations import attention_flops, score_cost

__all__ = [
    "COMPONENTS",
    "crossover_length",
    "encoder_layer_flops",
    "forward_flops_by_component",
    "readable_attention",
    "saved_bytes",
    "score_bytes",
    "step_times",
]

COMPONENTS = ("embeddings", "attention projections", "attention scores", "feed-forward", "layer norms",
              "output projection", "loss")


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int; got {value!r}")


def encoder_layer_flops(T: int, d_model: int, d_ff: int, n_heads: int) -> dict[str, int]:
    """Matrix-product FLOPs of one encoder layer's forward pass over one sequence of ``T`` positions, by term:

    - ``"projections"``: ``W_Q, W_K, W_V`` and ``W_O``, four ``d_model x d_model`` products per position, ``8 T d^2``;
    - ``"attention"``: the scores ``Q K^T`` of every head (chapter 5's count) and the weighted sum of the values,
      ``2 T^2 d_k`` each per head, ``4 T^2 d`` in all;
    - ``"feed-forward"``: ``d_model -> d_ff -> d_model``, ``4 T d d_ff``.
    """
    _check_positive(T=T, d_model=d_model, d_ff=d_ff, n_heads=n_heads)
    if d_model % n_heads:
        raise ValueError(f"d_model must be divisible by n_heads; got d_model={d_model}, n_heads={n_heads}")
    d_k = d_model // n_heads
    scores = n_heads * attention_flops(score_cost("dot", d_k, d_k), T, T, matmul_only=True)  # Q K^T
    weighted_sum = n_heads * 2 * T * T * d_k  # weights @ V
    return {"projections": 4 * 2 * T * d_model * d_model, "attention": scores + weighted_sum,
            "feed-forward": 2 * 2 * T * d_model * d_ff}


def crossover_length(d_model: int, d_ff: int) -> int:
    """The sequence length at which the attention term of :func:`encoder_layer_flops` equals the other two:
    ``4 T^2 d = 8 T d^2 + 4 T d d_ff``, so ``T = 2 d + d_ff`` (``6 d`` with the paper's ``d_ff = 4 d``)."""
    _check_positive(d_model=d_model, d_ff=d_ff)
    return 2 * d_model + d_ff


def score_bytes(batch: int, n_heads: int, T_q: int, T_k: int, dtype: torch.dtype = torch.float32) -> int:
    """Bytes of the ``(B, H, T_q, T_k)`` score (or weight) tensor: what the readable attention holds per matrix."""
    _check_positive(batch=batch, n_heads=n_heads, T_q=T_q, T_k=T_k)
    return batch * n_heads * T_q * T_k * torch.empty((), dtype=dtype).element_size()


def saved_bytes(fn: Callable[[], object]) -> int:
    """Bytes of the distinct storages autograd saves for the backward pass while ``fn()`` runs (the parameters
    included when a product saves them): the memory a training step holds between its forward and backward pass."""
    storages: dict[int, int] = {}

    def pack(t: Tensor) -> Tensor:
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(storages.values())


def readable_attention(model: nn.Module) -> nn.Module:
    """Plug the package's readable :func:`~transformer.scaled_dot_product_attention` into every attention module of
    ``model`` (in place; returns it), so that ``FlopCounterMode`` sees the score products as matrix products on
    every device (it does not count PyTorch's fused attention kernel on a CPU)."""
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.attention = scaled_dot_product_attention
    return model


def _component(name: str, module: nn.Module) -> str | None:
    """The component a module belongs to, or None for a container (or a module counted under its parent)."""
    if isinstance(module, TokenEmbedding) or name == "positional":
        return "embeddings"
    if isinstance(module, MultiHeadAttention):
        return "attention"
    if isinstance(module, FeedForward):
        return "feed-forward"
    if isinstance(module, nn.LayerNorm):
        return "layer norms"
    if name == "generator":
        return "output projection"
    return None


def forward_flops_by_component(model: Transformer, src: Tensor, tgt: Tensor) -> dict[str, int]:
    """Matrix-product FLOPs of ``model(src, tgt[:, :-1])`` and its loss, by component (:data:`COMPONENTS`), counted
    by ``FlopCounterMode`` with the readable attention plugged in. Components without matrix products count 0."""
    readable_attention(model)
    with FlopCounterMode(display=False) as counter:
        sequence_loss(model(src, tgt[:, :-1]), tgt[:, 1:])
    counts = counter.get_flop_counts()  # {module path: {operation: FLOPs}}
    root = type(model).__name__
    flops = dict.fromkeys(COMPONENTS, 0)
    for name, module in model.named_modules():
        component, ops = _component(name, module), counts.get(f"{root}.{name}", {})
        if component == "attention":  # batched products over the heads (bmm) are the scores, the rest projections
            scores = sum(n for op, n in ops.items() if "bmm" in str(op))
            flops["attention scores"] += scores
            flops["attention projections"] += sum(ops.values()) - scores
        elif component is not None:
            flops[component] += sum(ops.values())
    if sum(flops.values()) != counter.get_total_flops():
        raise RuntimeError("some matrix products ran outside the model's components")
    return flops


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_times(model: Transformer, src: Tensor, tgt: Tensor, steps: int = 5) -> dict[str, float]:
    """Seconds of one training step's forward pass, loss and backward pass (no optimizer update) spent in each
    component, measured inside the real step: hooks before and after every component module's forward and backward
    pass read the clock (synchronising a GPU), and the loss is timed from its call to the output projection's
    backward. ``"step"`` is the whole step, ``"rest"`` what the components leave of it (residual additions, dropout
    between sub-layers, masks, Python, and the token embeddings' backward pass, which has no input gradient to hook
    on). The step of median length among ``steps``, after one warm-up step."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int; got {steps!r}")
    device, clock = src.device, time.perf_counter
    started: dict[nn.Module, float] = {}
    spent = dict.fromkeys(("embeddings", "attention", "feed-forward", "layer norms", "output projection", "loss"), 0.0)
    handles = []

    def start(module: nn.Module, *_) -> None:
        _sync(device)
        started[module] = clock()

    def stop(component: str) -> Callable[..., None]:
        def hook(module: nn.Module, *_) -> None:
            _sync(device)
            spent[component] += clock() - started.pop(module)
        return hook

    for name, module in model.named_modules():
        if (component := _component(name, module)) is not None:
            handles += [module.register_forward_pre_hook(start), module.register_forward_hook(stop(component))]
            if not isinstance(module, TokenEmbedding):  # its input, token ids, has no gradient to hook
                handles += [module.register_full_backward_pre_hook(start),
                            module.register_full_backward_hook(stop(component))]
    loss_started = [0.0]

    def loss_backward_done(module: nn.Module, *_) -> None:  # the output projection's backward starts
        spent["loss"] += clock() - loss_started[0]
        started[module] = clock()

    def step() -> dict[str, float]:
        for key in spent:
            spent[key] = 0.0
        _sync(device)
        begin = clock()
        logits = model(src, tgt[:, :-1])  # (B, T, V)
        _sync(device)
        loss_begin = clock()
        loss = sequence_loss(logits, tgt[:, 1:])
        _sync(device)
        spent["loss"] += clock() - loss_begin
        loss_started[0] = clock()
        loss.backward()
        _sync(device)
        total = clock() - begin
        model.zero_grad(set_to_none=True)
        return {**spent, "rest": total - sum(spent.values()), "step": total}

    model.train()
    handles.append(model.generator.register_full_backward_pre_hook(loss_backward_done, prepend=True))
    try:
        step()
        runs = [step() for _ in range(steps)]
    finally:
        for handle in handles:
            handle.remove()
    return sorted(runs, key=lambda run: run["step"])[steps // 2]
