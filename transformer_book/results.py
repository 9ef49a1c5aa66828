"""Benchmark results without figures: file digests that tell a current result (of the JSON files that ``benchmarks/``
writes) from a stale one, and a profile of the PyTorch operations a call runs.

Plotly-free on purpose: the benchmark scripts import this module to record what their numbers depend on, and
a timing script should load nothing it does not measure. ``benchmarks/README.md`` summarises the results.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path


def file_digest(path: Path | str) -> str:
    """A short digest of what in ``path`` can change a measurement: a notebook's code cells (outputs and metadata do
    not change what runs, as for jupyter-cache), any other file's text with its line endings normalised."""
    path = Path(path)
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    if path.suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        sources = (
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells
            if c["cell_type"] == "code"
        )
        text = "\n\0\n".join(sources)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def source_digests(root: Path | str, paths: Iterable[str]) -> dict[str, str]:
    """``{path: file_digest}`` for ``paths`` relative to ``root`` (sorted, so the JSON stays diff-friendly)."""
    root = Path(root)
    return {p: file_digest(root / p) for p in sorted(set(paths))}


def changed_sources(recorded: Mapping[str, str], root: Path | str) -> list[str]:
    """The recorded paths whose file under ``root`` is gone or differs from the digest recorded with the results."""
    root = Path(root)
    return [p for p, digest in recorded.items() if not (root / p).is_file() or file_digest(root / p) != digest]


def result_status(payload: Mapping, root: Path | str) -> dict:
    """Whether a result still describes the code under ``root``: ``state`` is ``"current"``, ``"stale"`` (a file
    it depends on changed since: ``changed`` lists them), ``"unrecorded"`` (written before results recorded their
    sources) or ``"quick"`` (a ``--quick`` smoke run: tiny sizes, not a measurement); ``failed`` lists what failed
    while it was measured (the book benchmark's notebooks and build)."""
    failed = [r.get("notebook", r["kind"]) for r in payload["results"] if r.get("ok") is False]
    if "sources" not in payload:
        return dict(state="unrecorded", changed=[], failed=failed)
    changed = changed_sources(payload["sources"], root)
    state = "quick" if payload.get("quick") else "stale" if changed else "current"
    return dict(state=state, changed=changed, failed=failed)


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Keep the profiler back-end's log lines (written to the process's file descriptor 2) off the page."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)


def profile_ops(fn: Callable[[], object]) -> dict[str, tuple[int, float]]:
    """``{operation: (calls, self CPU microseconds)}`` for the PyTorch operations (``aten::*``, nested ones
    included) that one call of ``fn`` runs, profiled with ``torch.profiler`` on the CPU."""
    from torch.profiler import ProfilerActivity, profile

    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return {e.key: (e.count, e.self_cpu_time_total) for e in prof.key_averages() if e.key.startswith("aten::")}
