"""What the model costs, counted exactly and measured: teaching code for chapter 13.

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

from transformer import MultiHeadAttention, Transformer
from transformer.attention import scaled_dot_product_attention
from transformer.embeddings import TokenEmbedding
from transformer.layers import FeedForward
from transformer.train.objective import sequence_loss
from transformer_book.foundations import attention_flops, score_cost
from transformer_book.i18n import translatable
from transformer_book.results import quiet_stderr

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

COMPONENTS = (  # figures show them through tr()
    translatable("embeddings"),
    translatable("attention projections"),
    translatable("attention scores"),
    translatable("feed-forward"),
    translatable("layer norms"),
    translatable("output projection"),
    translatable("loss"),
)


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
    return {
        "projections": 4 * 2 * T * d_model * d_model,
        "attention": scores + weighted_sum,
        "feed-forward": 2 * 2 * T * d_model * d_ff,
    }


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
        return translatable("attention")  # step_times' component (its projections and scores together)
    if isinstance(module, FeedForward):
        return "feed-forward"
    if isinstance(module, nn.LayerNorm):
        return "layer norms"
    if name == "lm_head":
        return "output projection"
    return None


def forward_flops_by_component(model: Transformer, src: Tensor, tgt: Tensor) -> dict[str, int]:
    """Matrix-product FLOPs of ``model(src, tgt[:, :-1])`` and its loss, by component (:data:`COMPONENTS`), counted
    by ``FlopCounterMode`` with the readable attention plugged in (into ``model`` itself, which keeps it:
    :func:`readable_attention`). Components without matrix products count 0."""
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


RANGE = "component: "  # the profiler ranges that step_times opens around each component's forward pass


def _component_of(event: object) -> str | None:
    """The component whose profiler range encloses ``event`` (a ``torch.profiler`` event), if any."""
    while event is not None:
        if event.name.startswith(RANGE):
            return event.name.removeprefix(RANGE)
        event = event.cpu_parent
    return None


def step_times(model: Transformer, src: Tensor, tgt: Tensor, steps: int = 3) -> dict[str, float]:
    """Seconds of ``steps`` training steps (forward pass, loss, backward pass; no optimizer update) spent in each
    component, profiled with ``torch.profiler`` after one warm-up step.

    Hooks open a profiler range around every component module's forward pass (and the loss); an operation of the
    forward pass belongs to the range it runs in, and an operation of the backward pass to the component whose
    forward operation created it (the autograd engine records that operation's sequence number with it). Times are
    the operations' CPU time on a CPU and their kernels' time on a GPU. ``"step"`` is the wall-clock time of the
    steps; ``"rest"`` what the components leave of it (residual additions, dropout between the sub-layers, masks,
    the optimizer-free bookkeeping of autograd, Python and the profiler itself)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int; got {steps!r}")
    cuda = src.device.type == "cuda"
    open_ranges: dict[nn.Module, list[record_function]] = {}

    def enter(component: str) -> Callable[..., None]:
        def hook(module: nn.Module, *_) -> None:
            open_ranges.setdefault(module, []).append(record_function(RANGE + component).__enter__())

        return hook

    def leave(module: nn.Module, *_) -> None:
        open_ranges[module].pop().__exit__(None, None, None)

    handles = []
    for name, module in model.named_modules():
        if (component := _component(name, module)) is not None:
            handles += [module.register_forward_pre_hook(enter(component)), module.register_forward_hook(leave)]

    def step() -> None:
        logits = model(src, tgt[:, :-1])  # (B, T, V)
        with record_function(RANGE + "loss"):
            loss = sequence_loss(logits, tgt[:, 1:])
        loss.backward()
        model.zero_grad(set_to_none=True)

    model.train()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    try:
        step()
        with quiet_stderr(), profile(activities=activities) as prof:
            start = time.perf_counter()
            for _ in range(steps):
                step()
            if cuda:
                torch.cuda.synchronize(src.device)
            total = time.perf_counter() - start
    finally:
        for handle in handles:
            handle.remove()
    events = prof.events()
    created_in = {}  # sequence number of a forward operation -> its component
    for event in events:
        if event.sequence_nr >= 0 and not event.name.startswith("autograd::engine"):
            created_in.setdefault(event.sequence_nr, _component_of(event))
    micros: dict[str, float] = {}
    for event in events:
        if event.name.startswith(RANGE):
            component = event.name.removeprefix(RANGE)
        elif event.name.startswith("autograd::engine::evaluate_function"):
            component = created_in.get(event.sequence_nr)
        else:
            continue
        if component is not None:
            micros[component] = micros.get(component, 0.0) + (event.device_time_total if cuda else event.cpu_time_total)
    times = {component: us / 1e6 / steps for component, us in micros.items()}
    step_seconds = total / steps
    return {**times, translatable("rest"): max(0.0, step_seconds - sum(times.values())), "step": step_seconds}
