"""Shared plumbing for the benchmark scripts: timing, machine info and one JSON format.

Every script compares against a reference measured in the same run and prints ratios, never absolute pass/fail
timings: machines are shared and noisy. Results go to ``benchmarks/results/<name>.json``:
``{"name", "machine": {...}, "results": [{...}, ...]}``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def machine_info() -> dict:
    """What the numbers were measured on."""
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
    }
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


def write_results(name: str, results: list[dict], extra: dict | None = None) -> Path:
    """Write ``benchmarks/results/<name>.json`` and return its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    payload = {"name": name, "machine": machine_info(), "results": results, **(extra or {})}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
