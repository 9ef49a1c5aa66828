"""Shared plumbing for the benchmark scripts: timing, machine info, command-line options and one JSON format.

Every script compares against a reference measured in the same run and prints ratios, never absolute pass/fail
timings: machines are shared and noisy. Results go to ``benchmarks/results/<name>.json`` (or ``--out DIR``):
``{"name", "machine": {...}, "results": [{...}, ...], "sources": {path: digest}, ...}``; ``sources`` lets the book
tell a current result from a stale one (:func:`transformer_book.results.result_status`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import torch

from transformer_book.results import source_digests

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS_DIR = HERE / "results"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> float | None:
    """The 1-minute load average (how many processes wanted a core), where the system reports one."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def machine_info() -> dict:
    """What the numbers were measured on and when, including how busy the machine was (1-minute load average)."""
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "load_average_1min": load_average(),
        "measured_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
    return info


def synchronize(device: torch.device | str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def time_many(
    fns: dict[str, Callable[[], object]],
    device: torch.device | str = "cpu",
    rounds: int = 7,
    warmup: int = 1,
    min_time: float = 0.02,
) -> dict[str, list[float]]:
    """Seconds per call of each function in every round, measured in interleaved rounds whose order alternates
    (a b c, c b a, a b c, ...).

    Interleaving makes drifting machine load hit every function alike, and alternating the order cancels any
    advantage of running first or last, so the per-round ratios stay meaningful on a shared machine (see
    :func:`paired_ratio`). Each measurement repeats a fast call until it lasts about ``min_time`` (timer
    resolution, overheads); ``min_time=0`` times single calls (for calls that last seconds).
    """
    numbers = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        synchronize(device)
        numbers[name] = 1
        if min_time > 0:  # one timed call says how many calls last about min_time
            start = time.perf_counter()
            fn()
            synchronize(device)
            numbers[name] = max(1, math.ceil(min_time / max(time.perf_counter() - start, 1e-9)))
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns)
    for _ in range(rounds):
        for name in order:
            start = time.perf_counter()
            for _ in range(numbers[name]):
                fns[name]()
            synchronize(device)
            times[name].append((time.perf_counter() - start) / numbers[name])
        order.reverse()
    return times


def paired_ratio(numerator: list[float], denominator: list[float]) -> tuple[float, float, float]:
    """Median and quartiles (low, high) of the per-round ratios ``numerator[i] / denominator[i]``.

    Two calls of the same round ran seconds apart under the same load, so their ratio is steadier than a ratio of
    medians taken over the whole run; the quartiles say how much it moved from round to round.
    """
    ratios = [a / b for a, b in zip(numerator, denominator, strict=True)]
    if len(ratios) == 1:
        return ratios[0], ratios[0], ratios[0]
    low, middle, high = statistics.quantiles(ratios, n=4, method="inclusive")
    return middle, low, high


def median_ms(samples: list[float]) -> float:
    return round(1000 * statistics.median(samples), 3)


def parser(description: str, threads: bool = True) -> argparse.ArgumentParser:
    """The options every benchmark script takes: ``--quick`` (seconds, for smoke tests), ``--out DIR`` and, where
    PyTorch runs in the script's own process, ``--threads N``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="tiny sizes and few repeats: checks the script, not the speed")
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help=f"folder for the JSON results (default {RESULTS_DIR})")
    if threads:
        p.add_argument(
            "--threads",
            type=int,
            default=1,
            help="torch intra-op threads (default 1, the published setting; 0: PyTorch's default, one per core)",
        )
    return p


def parse_args(p: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse the command line and set the thread count before anything is measured."""
    args = p.parse_args()
    threads = getattr(args, "threads", 0)
    if threads < 0:
        p.error(f"--threads must be 0 (PyTorch's default) or positive; got {threads}")
    if threads:
        torch.set_num_threads(threads)
    return args


def imported_package_files(include_viz: bool = False) -> list[str]:
    """The source files of the model package and the book kit that this process imported (``transformer/...py``,
    ``transformer_book/...py``, relative to the repository root): what a benchmark's numbers depend on. The figures
    (``transformer_book/viz``) do not change a measurement, so they count only with ``include_viz``."""
    files = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        top = name.split(".")[0]
        if not path or top not in ("transformer", "transformer_book"):
            continue
        if include_viz or not (name == "transformer_book.viz" or name.startswith("transformer_book.viz.")):
            files.append(Path(path).resolve())
    root = Path(sys.modules["transformer"].__file__).resolve().parent.parent
    return [f.relative_to(root).as_posix() for f in files]


def write_results(
    name: str,
    results: list[dict],
    extra: dict | None = None,
    out_dir: Path | str | None = None,
    sources: Iterable[str] | None = None,
) -> Path:
    """Write ``<out_dir or benchmarks/results>/<name>.json`` and return its path.

    ``sources`` (paths relative to the repository root) are the files the numbers depend on; by default the package
    modules the script imported. The script itself and this module are always added.
    """
    folder = Path(out_dir) if out_dir is not None else RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    files = list(imported_package_files() if sources is None else sources)
    files += [f"benchmarks/bench_{name}.py", "benchmarks/common.py"]
    payload = {
        "name": name,
        "machine": machine_info(),
        "results": results,
        **(extra or {}),
        "sources": source_digests(ROOT, files),
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
