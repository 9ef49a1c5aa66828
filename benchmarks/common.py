"""Shared plumbing for the benchmark scripts: timing, machine info, command-line options and one JSON format.

Every script compares against a reference measured in the same run and prints ratios, never absolute pass/fail
timings: machines are shared and noisy. Results go to ``benchmarks/results/<name>.json`` (or ``--out DIR``):
``{"name", "machine": {...}, "results": [{...}, ...]}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict:
    """What the numbers were measured on, including how busy the machine was (1-minute load average)."""
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
    }
    if hasattr(os, "getloadavg"):
        info["load_average_1min"] = round(os.getloadavg()[0], 2)
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
    return info


def synchronize(device: torch.device | str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def time_call(fn: Callable[[], object], device: torch.device | str = "cpu", warmup: int = 2, repeat: int = 7) -> float:
    """Median wall time of ``fn()`` in seconds, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_pair(
    ours: Callable[[], object], reference: Callable[[], object], device: torch.device | str = "cpu", rounds: int = 5
) -> tuple[float, float]:
    """Median times of two functions measured in alternating rounds, so that drifting machine load hits both."""
    ours_times, reference_times = [], []
    for _ in range(rounds):
        ours_times.append(time_call(ours, device, warmup=1, repeat=3))
        reference_times.append(time_call(reference, device, warmup=1, repeat=3))
    return statistics.median(ours_times), statistics.median(reference_times)


def time_many(
    fns: dict[str, Callable[[], object]],
    device: torch.device | str = "cpu",
    rounds: int = 7,
    warmup: int = 1,
    min_time: float = 0.02,
) -> dict[str, float]:
    """Median seconds per call of each function, measured in interleaved rounds (a, b, c, a, b, c, ...).

    Interleaving makes drifting machine load hit every function alike, so their ratios stay meaningful on a shared
    machine. Each measurement repeats a fast call until it lasts about ``min_time`` (timer resolution, overheads).
    """
    numbers = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        numbers[name] = max(1, math.ceil(min_time / max(time.perf_counter() - start, 1e-9)))
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(numbers[name]):
                fn()
            synchronize(device)
            times[name].append((time.perf_counter() - start) / numbers[name])
    return {name: statistics.median(values) for name, values in times.items()}


def parser(description: str) -> argparse.ArgumentParser:
    """The options every benchmark script takes: ``--quick`` (seconds, for smoke tests), ``--out DIR``, ``--threads N``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="tiny sizes and few repeats: checks the script, not the speed")
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help=f"folder for the JSON results (default {RESULTS_DIR})")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: PyTorch's choice)")
    return p


def parse_args(p: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse the command line and apply ``--threads`` before anything is measured."""
    args = p.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return args


def write_results(name: str, results: list[dict], extra: dict | None = None, out_dir: Path | str | None = None) -> Path:
    """Write ``<out_dir or benchmarks/results>/<name>.json`` and return its path."""
    folder = Path(out_dir) if out_dir is not None else RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    payload = {"name": name, "machine": machine_info(), "results": results, **(extra or {})}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
