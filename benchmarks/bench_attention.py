"""Multi-head self-attention: the package's fused path, its readable path and ``torch.nn.MultiheadAttention``.

All three hold the same weights (copied with ``transformer.interop.copy_from_torch``), get the same padded batch
(the package's ``(B, 1, 1, S)`` mask, converted to PyTorch's ``key_padding_mask``) and are checked to agree before
timing. Two modes: ``train`` (forward + backward) and ``inference`` (eval mode, no autograd, where
``nn.MultiheadAttention`` may take its own fused fast path). Calls alternate between the three in many rounds (order
reversed every round), and each round's time is divided by ``nn.MultiheadAttention``'s in the same round: the median
and quartiles of those ratios are reported (ratio < 1: ours is faster).

- fused: ``MultiHeadAttention(..., need_weights=False)``, PyTorch's ``F.scaled_dot_product_attention`` inside;
- readable: ``need_weights=True``, the step-by-step ``softmax(q k^T / sqrt(d_k)) v`` that also returns the weights;
- torch: ``nn.MultiheadAttention(..., need_weights=False)``.

Run ``python benchmarks/bench_attention.py`` (about 2 minutes on 2 cores, one thread unless ``--threads`` says
otherwise; ``--quick`` for a smoke run); writes ``results/attention.json``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_average, median_ms, paired_ratio, parse_args, parser, time_many, write_results  # noqa: E402

from transformer import MultiHeadAttention  # noqa: E402
from transformer.interop import copy_from_torch  # noqa: E402
from transformer.masks import key_padding_mask, padding_mask_from_lengths  # noqa: E402

PATHS = ("fused", "readable", "torch")


def build(d_model: int, n_heads: int, device: torch.device) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(d_model, n_heads, dropout=0.0, batch_first=True).to(device)
    ours = copy_from_torch(MultiHeadAttention(d_model, n_heads, dropout=0.0).to(device), reference)
    return ours, reference


def calls(ours: MultiHeadAttention, reference: nn.MultiheadAttention, x: Tensor, mask: Tensor) -> dict[str, Callable]:
    """The three ways to attend, each returning ``(B, T, d_model)``."""
    padding = key_padding_mask(mask)  # (B, S), True = padding
    return {
        "fused": lambda: ours(x, x, x, mask)[0],
        "readable": lambda: ours(x, x, x, mask, need_weights=True)[0],
        "torch": lambda: reference(x, x, x, key_padding_mask=padding, need_weights=False)[0],
    }


def max_difference(fns: dict[str, Callable], x: Tensor) -> float:
    """Largest |difference| from ``nn.MultiheadAttention`` over the paths (real query rows)."""
    with torch.no_grad():
        outputs = {name: fn() for name, fn in fns.items()}
    return max((outputs[name] - outputs["torch"]).abs().max().item() for name in ("fused", "readable"))


def timed(fn: Callable[[], Tensor], mode: str) -> Callable[[], None]:
    if mode == "train":
        return lambda: fn().sum().backward()

    def infer() -> None:
        with torch.no_grad():
            fn()

    return infer


def settings(quick: bool) -> dict:
    if quick:
        return dict(d_models=(32,), seq_lens=(16,), tokens_per_batch=64, rounds=3)
    return dict(d_models=(64, 512), seq_lens=(32, 64, 256), tokens_per_batch=2048, rounds=11)


def main() -> None:
    args = parse_args(parser(__doc__.splitlines()[0]))
    s = settings(args.quick)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    results = []
    print(
        f"{'device':>6} {'mode':>9} {'d_model':>7} {'seq':>4} {'batch':>5}"
        + "".join(f"{p + ' ms':>12}" for p in PATHS)
        + f"{'fused/torch':>12}{'readable/torch':>15}"
    )
    for device in devices:
        for mode in ("train", "inference"):
            for d_model in s["d_models"]:
                for seq_len in s["seq_lens"]:
                    n_heads = max(4, d_model // 64)
                    batch = max(1, s["tokens_per_batch"] // seq_len)
                    ours, reference = build(d_model, n_heads, device)
                    ours.train(mode == "train"), reference.train(mode == "train")
                    generator = torch.Generator().manual_seed(seq_len)
                    x = torch.randn(batch, seq_len, d_model, generator=generator).to(device)  # (B, T, d_model)
                    lengths = torch.randint(seq_len // 2, seq_len + 1, (batch,), generator=generator)
                    lengths[0] = seq_len  # at least one row without padding
                    mask = padding_mask_from_lengths(lengths, seq_len).to(device)  # (B, 1, 1, T)
                    fns = calls(ours, reference, x.requires_grad_(mode == "train"), mask)
                    difference = max_difference(fns, x)
                    load_before = load_average()
                    times = time_many({name: timed(fn, mode) for name, fn in fns.items()}, device, rounds=s["rounds"])
                    load = max(load_before, load_average()) if load_before is not None else None
                    ratios = {name: paired_ratio(times[name], times["torch"]) for name in ("fused", "readable")}
                    print(
                        f"{device.type:>6} {mode:>9} {d_model:>7} {seq_len:>4} {batch:>5}"
                        + "".join(f"{median_ms(times[p]):12.3f}" for p in PATHS)
                        + f"{ratios['fused'][0]:12.2f}{ratios['readable'][0]:15.2f}",
                        flush=True,
                    )
                    results.append(
                        dict(
                            device=device.type,
                            mode=mode,
                            d_model=d_model,
                            n_heads=n_heads,
                            seq_len=seq_len,
                            batch=batch,
                            rounds=s["rounds"],
                            **{f"{name}_ms": median_ms(times[name]) for name in PATHS},
                            **{
                                f"{name}_ratio{suffix}": round(value, 4)
                                for name, values in ratios.items()
                                for suffix, value in zip(("", "_low", "_high"), values, strict=True)
                            },
                            max_abs_diff=difference,
                            load_1min=load,
                        )
                    )
    path = write_results(
        "attention",
        results,
        extra=dict(
            what="multi-head self-attention time per call, relative to nn.MultiheadAttention; lower is better",
            modes={"train": "forward + backward", "inference": "eval mode, torch.no_grad()"},
            quick=args.quick,
        ),
        out_dir=args.out,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
