"""Switch attention heads off and measure what the model loses.

An attention map shows where a head looks, not whether the model needs what it finds there. Ablation answers the
second question: silence a head (its output is multiplied by 0 before the heads are concatenated and projected, through
:attr:`transformer.MultiHeadAttention.head_mask`) and measure the task again.

Zeroing a head is itself an intervention: the layers after it never saw the head output 0 in training, so part of
what the model loses is that surprise. Mean ablation (:func:`mean_ablate_heads`) replaces the head's output with its
mean over a set of inputs instead (:func:`head_means`): what the head adds on average stays, and only what it reads
from this input is gone.

Heads are named by attention type, layer and head index: ``("encoder", 0)``, ``("decoder", 1)``, ``("cross", 1)``
name the encoder self-attention, the decoder (masked) self-attention and the encoder-decoder (cross) attention of a
layer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.attention import MultiHeadAttention, masked_heads
from transformer.model import Transformer
from transformer.tokens import PAD_ID
from transformer.train.evaluation import evaluate
from transformer.train.tasks import DEFAULT_VOCAB_SIZE, MAX_SEQ_LEN, Batch, source_positions, task_batch
from transformer.utils import make_rng

from .i18n import tr, translatable

KINDS = (translatable("encoder"), translatable("decoder"), translatable("cross"))  # names shown through tr()

HeadSelection = Mapping[tuple[str, int], Iterable[int]]


def attention_modules(model: Transformer) -> dict[tuple[str, int], MultiHeadAttention]:
    """Every multi-head attention of ``model`` by ``(kind, layer)``, in the order encoder, decoder, cross."""
    modules = {("encoder", i): layer.self_attn for i, layer in enumerate(model.encoder.layers)}
    modules.update({("decoder", i): layer.self_attn for i, layer in enumerate(model.decoder.layers)})
    modules.update({("cross", i): layer.cross_attn for i, layer in enumerate(model.decoder.layers)})
    return modules


@contextmanager
def ablate_heads(model: Transformer, heads: HeadSelection) -> Iterator[Transformer]:
    """Silence the chosen heads inside a ``with`` block, then restore every head mask as it was.

    ``heads`` maps ``(kind, layer)`` to head indices, e.g. ``{("cross", 1): [0, 2]}``. Heads already silenced stay
    silenced. The previous masks come back on exit, also when the block raises.
    """
    modules = attention_modules(model)
    masks = {}
    for key, indices in heads.items():
        module, indices = _selected(modules, key, indices)
        old = module.head_mask
        mask = torch.ones(module.n_heads, device=module.out_proj.weight.device) if old is None else old.clone()  # (H,)
        mask[indices] = 0.0
        masks[key] = mask
    with masked_heads([modules[key] for key in masks], list(masks.values())):
        yield model


def _selected(
    modules: Mapping[tuple[str, int], MultiHeadAttention], key: tuple[str, int], indices: Iterable[int]
) -> tuple[MultiHeadAttention, list[int]]:
    """The attention named ``key`` and the head ``indices`` as a list, checked."""
    if key not in modules:
        raise KeyError(f"no attention {key!r}; the model has {sorted(modules)}")
    module, indices = modules[key], list(indices)
    if any(not 0 <= h < module.n_heads for h in indices):
        raise IndexError(f"head indices for {key!r} must be in [0, {module.n_heads}); got {indices}")
    return module, indices


@torch.no_grad()
def head_means(model: Transformer, batch: Batch) -> dict[tuple[str, int], Tensor]:
    """Each head's mean output over the real positions of ``batch`` (teacher forcing, the model in eval mode): per
    attention ``(kind, layer)``, ``(H, d_k)``, the mean of what each head hands to the output projection, over the
    non-padding queries (source positions for the encoder, target positions for the decoder and cross-attention).
    These are the values :func:`mean_ablate_heads` puts in place of the heads' outputs."""
    modules = attention_modules(model)
    inputs: dict[tuple[str, int], Tensor] = {}

    def keeper(key: tuple[str, int]) -> Callable:
        def keep(_: nn.Module, args: tuple[Tensor]) -> None:
            inputs[key] = args[0]  # (B, T_q, d_model): the heads side by side, before W^O

        return keep

    handles = [module.out_proj.register_forward_pre_hook(keeper(key)) for key, module in modules.items()]
    try:
        model.eval()(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)
    finally:
        for handle in handles:
            handle.remove()
    pad = model.config.pad_id
    real = {"encoder": batch.src != pad, "decoder": batch.tgt_in != pad, "cross": batch.tgt_in != pad}  # (B, T_q)
    means = {}
    for (kind, layer), module in modules.items():
        valid = real[kind][..., None].to(inputs[kind, layer].dtype)  # (B, T_q, 1)
        mean = (inputs[kind, layer] * valid).sum(dim=(0, 1)) / valid.sum().clamp(min=1)  # (d_model,)
        means[kind, layer] = mean.view(module.n_heads, module.d_k)  # (H, d_k)
    return means


@contextmanager
def mean_ablate_heads(
    model: Transformer, heads: HeadSelection, means: Mapping[tuple[str, int], Tensor]
) -> Iterator[Transformer]:
    """Replace the chosen heads' outputs with their means inside a ``with`` block, at every position and decoding
    step; the model is as it was after the block, also when it raises.

    ``heads`` maps ``(kind, layer)`` to head indices, as in :func:`ablate_heads`; ``means`` maps the same keys to
    ``(H, d_k)`` mean outputs, from :func:`head_means` on the intact model. Zeroing (:func:`ablate_heads`) removes a
    head's average contribution too, which the later layers never had to do without; the mean keeps it.
    """
    modules = attention_modules(model)
    handles = []
    try:
        for key, indices in heads.items():
            module, indices = _selected(modules, key, indices)
            if key not in means or tuple(means[key].shape) != (module.n_heads, module.d_k):
                shape = None if key not in means else tuple(means[key].shape)
                raise ValueError(
                    f"means[{key!r}] must be ({module.n_heads}, {module.d_k}), one row per head; got {shape}"
                )
            replaced = torch.zeros(module.n_heads, module.d_k, dtype=torch.bool)  # (H, d_k)
            replaced[indices] = True
            handle = module.out_proj.register_forward_pre_hook(_replacer(replaced.flatten(), means[key].flatten()))
            handles.append(handle)
        yield model
    finally:
        for handle in handles:
            handle.remove()


def _replacer(replaced: Tensor, fill: Tensor) -> Callable:
    """A forward pre-hook for ``out_proj`` that puts ``fill (d_model,)`` where ``replaced (d_model,)`` is True."""

    def replace(_: nn.Module, args: tuple[Tensor]) -> tuple[Tensor]:
        x = args[0]  # (B, T_q, d_model): the heads side by side
        return (torch.where(replaced.to(x.device), fill.to(x.device, x.dtype), x),)

    return replace


@dataclass
class AblationResult:
    """One ablation: which heads were silenced and the score without them."""

    kind: str
    layer: int
    heads: tuple[int, ...]
    score: float

    @property
    def label(self) -> str:
        """A short name, e.g. ``"cross L1 H2"`` or ``"cross L1 (all heads)"``, in the reader's language."""
        if len(self.heads) == 1:
            return tr("{kind} L{layer} H{head}", kind=tr(self.kind), layer=self.layer, head=self.heads[0])
        return tr("{kind} L{layer} (all heads)", kind=tr(self.kind), layer=self.layer)


def ablation_study(model: Transformer, evaluate: Callable[[Transformer], float]) -> tuple[float, list[AblationResult]]:
    """Score ``model`` intact, then with each single head and each whole layer of heads silenced in turn.

    ``evaluate(model) -> float`` is any score of the whole model, e.g. the exact match of greedy decoding on fixed
    sequences, as :func:`head_ablation` uses. Returns ``(baseline, results)``: per attention ``(kind, layer)``, one
    result per head followed by one with all its heads.
    """
    baseline = float(evaluate(model))
    results = []
    for (kind, layer), module in attention_modules(model).items():
        for heads in [(h,) for h in range(module.n_heads)] + [tuple(range(module.n_heads))]:
            with ablate_heads(model, {(kind, layer): heads}):
                results.append(AblationResult(kind, layer, heads, float(evaluate(model))))
    return baseline, results


def head_ablation(
    model: Transformer, task: str, n: int = 200, max_seq_len: int = MAX_SEQ_LEN, seed: int | None = None
) -> tuple[float, list[AblationResult]]:
    """:func:`ablation_study` scored by exact match of greedy decoding on ``n`` fresh sequences of ``task``
    (:func:`transformer.train.evaluation.evaluate`; the same sequences for every ablation)."""
    seed_kwargs = {} if seed is None else {"seed": seed}

    def exact_match(m: Transformer) -> float:
        return evaluate(m, task, n=n, max_seq_len=max_seq_len, **seed_kwargs).exact_match

    return ablation_study(model, exact_match)


def aligned_weight(weights: Tensor, expected: Tensor, valid: Tensor) -> Tensor:
    """How much each head looks where the task says it should: the mean weight on the expected key.

    ``weights (B, H, T_q, T_k)`` (e.g. a layer of cross-attention maps), ``expected (B, T_q)`` the key index each
    query should read (copy: the same position; reverse: the mirrored one), ``valid (B, T_q)`` bool, the queries to
    average over. Returns ``(H,)``: 1 for a head that puts all its weight on the expected key, about ``1 / T_k`` for
    a uniform one.
    """
    B, H, T_q, T_k = weights.shape
    expected, valid = expected.to(weights.device), valid.to(weights.device)  # e.g. made on the CPU, maps on a GPU
    index = expected.clamp(0, T_k - 1)[:, None, :, None].expand(B, H, T_q, 1)  # (B, H, T_q, 1)
    on_expected = weights.gather(3, index).squeeze(-1)  # (B, H, T_q)
    valid = valid[:, None, :].to(weights.dtype)  # (B, 1, T_q)
    return (on_expected * valid).sum(dim=(0, 2)) / valid.sum(dim=(0, 2)).clamp(min=1)  # (H,)


def _task_maps(
    model: Transformer, task: str, n: int, max_seq_len: int, seed: int, vocab_size: int
) -> tuple[Batch, dict[str, list[Tensor]]]:
    """``n`` random sequences of ``task`` (seeded) and the model's attention maps on them, teacher-forced."""
    device = next(model.parameters()).device
    batch = task_batch(task, n, vocab_size, max_seq_len=max_seq_len, rng=make_rng(seed)).to(device)
    return batch, model.eval().attention_maps(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)


@torch.no_grad()
def source_alignment(
    model: Transformer,
    task: str,
    n: int = 500,
    max_seq_len: int = MAX_SEQ_LEN,
    seed: int = 0,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
) -> Tensor:
    """``(n_decoder_layers, H)``: for each cross-attention head, the mean weight that a decoder position puts on the
    source token it is about to write (teacher forcing, ``n`` random sequences of ``task``).

    Decoder position ``t`` (it reads ``BOS y1 .. yt``) predicts ``y(t+1)``, whose place in the source the task says
    (:func:`~transformer.train.tasks.source_positions`: ``t`` for copy, ``n - 1 - t`` for reverse, ``n`` the sequence
    length). A head that follows this alignment scores near 1: the diagonal (copy) or the anti-diagonal (reverse) of
    its map. The last position, which predicts ``EOS``, is left out.
    """
    batch, maps = _task_maps(model, task, n, max_seq_len, seed, vocab_size)
    lengths = (batch.src != PAD_ID).sum(dim=1)  # (B,)
    expected = source_positions(task, batch.src, lengths)  # (B, S): the target's symbols, one per decoder position
    expected = F.pad(expected, (0, batch.tgt_in.size(1) - expected.size(1)))  # (B, T): and the position of EOS
    valid = torch.arange(batch.tgt_in.size(1), device=batch.src.device)[None, :] < lengths[:, None]  # (B, T)
    return torch.stack([aligned_weight(w, expected, valid) for w in maps["cross"]])  # (L, H)


@torch.no_grad()
def attention_sharpness(
    model: Transformer,
    task: str,
    n: int = 500,
    max_seq_len: int = MAX_SEQ_LEN,
    seed: int = 0,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
) -> dict[str, Tensor]:
    """How focused each head is: per attention type, ``(layers, H)`` of the largest weight in a query's row,
    averaged over the real (non-padding) queries of ``n`` random sequences of ``task``. 1 means every query looks
    at one key only; a head that spreads evenly over ``k`` keys scores ``1 / k``."""
    batch, maps = _task_maps(model, task, n, max_seq_len, seed, vocab_size)
    queries = {"encoder": batch.src != PAD_ID, "decoder": batch.tgt_in != PAD_ID, "cross": batch.tgt_in != PAD_ID}
    sharpness = {}
    for kind in KINDS:
        valid = queries[kind][:, None, :].float()  # (B, 1, T_q)
        peaks = [w.max(dim=-1).values for w in maps[kind]]  # (B, H, T_q) per layer
        sharpness[kind] = torch.stack([(p * valid).sum(dim=(0, 2)) / valid.sum(dim=(0, 2)) for p in peaks])  # (L, H)
    return sharpness
