"""Run every benchmark script, one after the other, each in its own process; ``--quick`` and ``--out`` are passed
through, and ``--threads`` to every script that runs PyTorch in its own process (the book's kernels keep PyTorch's
default, as in the book build). A script that fails is reported and the others still run; the exit status says
whether all succeeded.

    python benchmarks/run_all.py                 # everything: about 30 minutes on 2 cores (see README.md)
    python benchmarks/run_all.py --skip book     # the model benchmarks only
    python benchmarks/run_all.py --quick --out /tmp/bench
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The order results are produced in: the model benchmarks, shortest first, then the book, which executes every
# chapter.
BENCHMARKS = ("train_step", "attention", "compile", "decoding", "copy_task", "book")
NO_THREADS = ("book",)  # scripts without --threads


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])  # the options of common.parser, without torch
    p.add_argument("--quick", action="store_true", help="pass --quick: tiny sizes, seconds per script")
    p.add_argument("--out", type=Path, default=HERE / "results", help="folder for the JSON results")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: each script's, 1)")
    p.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these benchmarks")
    p.add_argument("--skip", nargs="+", choices=BENCHMARKS, default=[], help="leave these benchmarks out")
    args = p.parse_args()
    names = [n for n in (args.only or BENCHMARKS) if n not in args.skip]
    failed, summary = [], []
    for name in names:
        script = HERE / f"bench_{name}.py"
        options = ["--out", str(args.out)] + (["--quick"] if args.quick else [])
        if args.threads is not None and name not in NO_THREADS:
            options += ["--threads", str(args.threads)]
        print(f"== {name}: {script.name} {' '.join(options)}", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(script), *options]).returncode
        seconds = time.perf_counter() - start
        summary.append((name, "ok" if code == 0 else f"FAILED (exit {code})", seconds))
        if code != 0:
            failed.append(name)
    print("\n== summary")
    for name, status, seconds in summary:
        print(f"{name:<12} {status:<18} {seconds:7.1f} s")
    print(f"{'total':<12} {'':<18} {sum(s for _, _, s in summary):7.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
