"""Run every benchmark script, one after the other, each in its own process; ``--quick``, ``--out`` and ``--threads``
are passed through. A script that fails is reported and the others still run; the exit status says whether all
succeeded.

    python benchmarks/run_all.py                 # everything (the book benchmark alone takes minutes)
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
# The order results are produced in: the fast model benchmarks first, the book (which executes every chapter) last.
BENCHMARKS = ("train_step", "attention", "decoding", "copy_task", "book")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])  # the options of common.parser, without torch
    p.add_argument("--quick", action="store_true", help="pass --quick: tiny sizes, seconds per script")
    p.add_argument("--out", type=Path, default=HERE / "results", help="folder for the JSON results")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads for every script")
    p.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these benchmarks")
    p.add_argument("--skip", nargs="+", choices=BENCHMARKS, default=[], help="leave these benchmarks out")
    args = p.parse_args()
    names = [n for n in (args.only or BENCHMARKS) if n not in args.skip]
    passthrough = ["--out", str(args.out)] + (["--quick"] if args.quick else [])
    if args.threads is not None:
        passthrough += ["--threads", str(args.threads)]
    failed, summary = [], []
    for name in names:
        script = HERE / f"bench_{name}.py"
        if not script.exists():
            print(f"== {name}: {script.name} does not exist yet, skipped", flush=True)
            summary.append((name, "missing", 0.0))
            continue
        print(f"== {name}: {script.name} {' '.join(passthrough)}", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(script), *passthrough]).returncode
        seconds = time.perf_counter() - start
        summary.append((name, "ok" if code == 0 else f"FAILED (exit {code})", seconds))
        if code != 0:
            failed.append(name)
    print("\n== summary")
    for name, status, seconds in summary:
        print(f"{name:<12} {status:<18} {seconds:7.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
