"""Create the reader's environment: a fresh virtual environment installed exactly as the README's local path says.

    python scripts/reader_env.py [_build/reader-venv]      # make reader-env

The README's section "Run the chapters on your machine" gives the commands in one ``bash`` block: create and activate
a virtual environment, ``pip install`` lines, then ``jupyter lab book/``. This script runs them: the environment is
created where it is told (the README's own path is a reader's choice), every ``pip install`` line runs verbatim with
that environment's pip, from the repository's folder (pip's cache makes a second run quick). In place of opening
JupyterLab it registers the environment's own kernel, the one JupyterLab started from it would run, as
``transformer-reader`` inside the environment (``share/jupyter/kernels``, with the absolute path of its Python), so
that a Jupyter client elsewhere runs the chapters in exactly that environment: nbval in ``make nbval-reader``, with
``JUPYTER_PATH=<environment>/share/jupyter``.

Nothing else is installed. A second run with the same commands, ``pyproject.toml`` and ``constraints.txt`` does
nothing; otherwise the environment is made afresh. A block with any other kind of line stops the script, so that the
README cannot say more than the test does.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SECTION = "Run the chapters on your machine"  # the README heading whose bash block a reader follows
KERNEL_NAME = "transformer-reader"
KERNEL_DISPLAY_NAME = "Python 3 (the reader's environment)"
INPUTS = ("pyproject.toml", "constraints.txt")  # besides the commands, what the installed environment depends on
STAMP = ".reader-env"  # inside the environment: the digest of what it was made from


@dataclass(frozen=True)
class ReaderSteps:
    """The README's local path, parsed: where the reader's environment goes, what to pip-install, how Jupyter opens."""

    venv: str  # the path in ``python3 -m venv <path>``, as the README writes it
    pip_installs: tuple[tuple[str, ...], ...]  # the arguments after ``pip install``, one tuple per line
    jupyter: tuple[str, ...]  # the command that opens the chapters, e.g. ("jupyter", "lab", "book/")


def readme_block(text: str, section: str = SECTION) -> str:
    """The first ``bash`` code block under the heading ``section`` (any level) of the Markdown ``text``."""
    heading = re.search(rf"^#+ +{re.escape(section)} *$", text, re.MULTILINE)
    if heading is None:
        raise ValueError(f"README.md has no heading {section!r}")
    block = re.search(r"^```bash\n(.*?)^```", text[heading.end() :], re.MULTILINE | re.DOTALL)
    if block is None:
        raise ValueError(f"README.md: no ```bash block under {section!r}")
    return block.group(1)


def parse_steps(block: str) -> ReaderSteps:
    """The commands of the README's block; any line that is not one of the three kinds raises ``ValueError``."""
    venv, installs, jupyter = None, [], None
    for raw in block.splitlines():
        line = raw.split(" #", 1)[0].strip()  # comments after the command explain it to the reader
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        created = re.fullmatch(r"python3? -m venv (\S+) && (?:source|\.) (\S+)/bin/activate", line)
        if created and created.group(1) == created.group(2):
            venv = created.group(1)
        elif words[:2] == ["pip", "install"] and len(words) > 2:
            installs.append(tuple(words[2:]))
        elif words[:1] == ["jupyter"]:
            jupyter = tuple(words)
        else:
            raise ValueError(f"README.md's local path: {line!r} is not a step the reader test knows how to run")
    if venv is None or not installs or jupyter is None:
        raise ValueError("README.md's local path must create and activate a venv, pip install, and open Jupyter")
    return ReaderSteps(venv, tuple(installs), jupyter)


def readme_steps(readme: Path = README) -> ReaderSteps:
    return parse_steps(readme_block(readme.read_text(encoding="utf-8")))


def digest(steps: ReaderSteps, root: Path = ROOT) -> str:
    """What the environment is made from: the pip lines, the Python that makes it, and the files they read."""
    h = hashlib.sha256(repr((steps.pip_installs, sys.version)).encode())
    for name in INPUTS:
        h.update((root / name).read_bytes())
    return h.hexdigest()


def make_env(target: Path, steps: ReaderSteps, root: Path = ROOT) -> bool:
    """Make the reader's environment at ``target`` unless it is up to date; True when it was made."""
    stamp = target / STAMP
    wanted = digest(steps, root)
    if stamp.is_file() and stamp.read_text() == wanted:
        return False
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    python = str(target.resolve() / "bin" / "python")
    quiet = {**os.environ, "PIP_QUIET": os.environ.get("PIP_QUIET", "1")}  # pip's verbosity, not what it installs
    for args in steps.pip_installs:
        subprocess.run([python, "-m", "pip", "install", *args], check=True, cwd=root, env=quiet)
    subprocess.run(
        [
            python,
            "-m",
            "ipykernel",
            "install",
            "--prefix",
            str(target.resolve()),
            "--name",
            KERNEL_NAME,
            "--display-name",
            KERNEL_DISPLAY_NAME,
        ],
        check=True,
        cwd=root,
        stdout=subprocess.DEVNULL,
    )
    stamp.write_text(wanted)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", type=Path, default=ROOT / "_build" / "reader-venv")
    args = parser.parse_args(argv)
    steps = readme_steps()
    started = time.perf_counter()
    if make_env(args.target, steps):
        print(
            f"reader-env: made {args.target} in {time.perf_counter() - started:.0f} s, as README.md says: "
            + "; ".join("pip install " + shlex.join(a) for a in steps.pip_installs),
            flush=True,
        )
    else:
        print(f"reader-env: {args.target} is up to date", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
