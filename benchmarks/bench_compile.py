"""Training-step time of ``torch.compile(model)`` against the same model run eagerly (``RunConfig(compile=True)``).

Two copies of one model (same weights) train on the same fixed batch of a synthetic task with the package's
``train_step`` (forward, label-smoothed loss, backward, gradient clipping, Adam): one eager, one compiled. The first
compiled steps pay the compilation, reported on its own (``compile_s``); then steps alternate between the two in many
rounds (order reversed every round) and the ratio ``compiled / eager`` of each round is kept; its median and quartiles
are reported (lower is better). Rows: the documented small configuration and a d_model 512 model, on the CPU in fp32
with one thread unless ``--threads`` says otherwise, and on a CUDA GPU when one is present. ``--backend`` picks the
``torch.compile`` backend (default ``inductor``, which generates kernels; ``--quick`` uses ``aot_eager``, which only
traces, to stay within seconds). Run ``python benchmarks/bench_compile.py`` (a few minutes on 2 cores, most of it
compiling); results go to ``benchmarks/results/compile.json``.
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_average, median_ms, paired_ratio, parse_args, parser, synchronize, time_many, write_results  # noqa: E402

from transformer import Transformer  # noqa: E402
from transformer.train.loop import train_step  # noqa: E402
from transformer.train.recipes import small_model_config  # noqa: E402
from transformer.train.tasks import Batch, task_batch  # noqa: E402


def settings(quick: bool) -> dict:
    if quick:
        return dict(models={"tiny": dict(d_model=32, n_heads=4, d_ff=64)}, batch=16, rounds=3, warmup_steps=2)
    return dict(
        models={"small (documented)": {}, "d_model 512": dict(d_model=512, n_heads=8, d_ff=2048)},
        batch=64,
        rounds=15,
        warmup_steps=3,
    )


def training_step(model: torch.nn.Module, batch: Batch, optimizer: torch.optim.Optimizer, losses: list[float]):
    """A closure taking one training step of ``model`` on ``batch`` (label smoothing 0.1, clipping at 1, as
    ``TrainConfig``) and keeping its loss in ``losses``."""
    return lambda: losses.append(train_step(model, batch, optimizer, 0.1, 1.0)[0])


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--backend", default=None, help="torch.compile backend (default: inductor; aot_eager with --quick)")
    args = parse_args(p)
    backend = args.backend or ("aot_eager" if args.quick else "inductor")
    s = settings(args.quick)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    results = []
    print(
        f"{'device':>6} {'model':>20} {'compile s':>9} {'eager ms':>9} {'compiled ms':>11} {'ratio (quartiles)':>19} "
        f"{'max |loss diff|':>15} {'load':>5}"
    )
    for device in devices:
        for name, overrides in s["models"].items():
            torch.manual_seed(0)
            eager = Transformer(small_model_config(**overrides)).to(device).train()
            compiled_weights = copy.deepcopy(eager)
            compiled = torch.compile(compiled_weights, backend=backend)
            batch = task_batch("copy", s["batch"], rng=torch.Generator().manual_seed(0)).to(device)
            optimizers = {
                "eager": torch.optim.Adam(eager.parameters(), lr=1e-4),
                "compiled": torch.optim.Adam(compiled_weights.parameters(), lr=1e-4),
            }
            models = {"eager": eager, "compiled": compiled}
            losses = {key: [] for key in models}
            steps = {key: training_step(models[key], batch, optimizers[key], losses[key]) for key in models}
            start = time.perf_counter()
            for _ in range(s["warmup_steps"]):  # the first steps compile (forward, backward, then steady state)
                steps["compiled"]()
                steps["eager"]()
            synchronize(device)
            compile_s = time.perf_counter() - start
            difference = max(abs(a - b) for a, b in zip(losses["eager"], losses["compiled"], strict=True))
            load_before = load_average()
            times = time_many(steps, device, rounds=s["rounds"], warmup=0, min_time=0.05)
            load = max(load_before, load_average()) if load_before is not None else None
            ratio, low, high = paired_ratio(times["compiled"], times["eager"])
            row = dict(
                device=device.type,
                model=name,
                backend=backend,
                d_model=eager.config.d_model,
                layers=eager.config.n_encoder_layers,
                batch=s["batch"],
                rounds=s["rounds"],
                compile_s=round(compile_s, 2),
                eager_ms=median_ms(times["eager"]),
                compiled_ms=median_ms(times["compiled"]),
                ratio=round(ratio, 4),
                ratio_low=round(low, 4),
                ratio_high=round(high, 4),
                max_abs_loss_diff=difference,
                load_1min=load,
            )
            print(
                f"{device.type:>6} {name:>20} {compile_s:9.1f} {row['eager_ms']:9.1f} {row['compiled_ms']:11.1f} "
                f"{ratio:6.2f} ({low:.2f}-{high:.2f}) {difference:15.2e} {load}",
                flush=True,
            )
            results.append(row)
    path = write_results(
        "compile",
        results,
        extra=dict(
            what="one training step, torch.compile(model) / eager model; lower is better (compile_s paid once)",
            backend=backend,
            quick=args.quick,
        ),
        out_dir=args.out,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
