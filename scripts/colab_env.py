"""Make a Colab-like environment and run the chapters' first cell in it, as a reader pressing "Launch on Colab" does.

    python scripts/colab_env.py [_build/colab-venv]      # make colab-env

1. **Python**: Colab's minor version (``tests/colab/os-info.txt``), found as ``python3.13`` on the PATH or under
   pyenv; where this machine has none, the running Python, and the script says so.
2. **Colab's list, whole**: this package's ``live`` extra, with the kernel and the classic Notebook that Colab runs,
   is resolved (``pip install --dry-run``) with every package of Colab's list (``tests/colab/pip-freeze.txt``) held at
   Colab's version. A new dependency, or a new lower bound, that would move any package Colab ships fails here.
3. **What Colab ships**: every package of that resolution that Colab's list has is installed at Colab's version
   (IPython, ipykernel, ipywidgets, traitlets, plotly, torch, numpy, protobuf, tokenizers, ...). Colab installs
   torch's CPU build from PyTorch's own index, which this machine cannot reach; PyPI's torch of the same release is
   the CUDA build, which brings CUDA libraries of its own (``nvidia-*``, ``cuda-*``, ``triton``): those are
   installed as torch asks and left out of the comparison with Colab's list.
4. **The first cell, as the chapters write it**: chapter 1's first code cell, its repository address replaced by this
   checkout, runs in the environment's IPython (its ``%pip`` magic too). It must install the package and its extra
   without changing the version of anything installed in step 3; what it installed, and how long it took, is printed.
   Anything left from an earlier run of the cell is removed first, so the cell always starts from what Colab ships.
5. **The kernel**: registered as ``transformer-colab`` inside the environment, with ``COLAB_RELEASE_TAG`` set as on
   Colab (the book's figures then use plotly's Colab renderer); ``make nbval-colab`` runs every chapter in it.
6. **The widgets' front end for the classic Notebook**: widgetsnbextension 3.6.6's files in ``classic-front-end``
   inside the environment (not importable; tests/notebooks/test_notebook_classic.py puts its ``share/jupyter`` first on
   ``JUPYTER_PATH``). Colab draws widgets with a manager of its own; the open front end closest to it is the classic
   Notebook with widgetsnbextension 3.6, and 3.6.7 to 3.6.10 (Colab's list has 3.6.10) cannot create an Output
   widget there (the page says ``TypeError: n._deserialize_state is not a function``), which every ``interactive``
   explorer has. 3.6.6 is the newest that can; it speaks ipywidgets 7.7's widget protocol (version 2).

Steps 1-3, 5 and 6 are skipped when nothing they read has changed since the environment was made, and step 4 when the
package's files and the first cell are those it last installed (stamps inside the environment).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from colab_packages import FOLDER, colab_python, colab_versions, normalized
from sync_repository_url import repository_url

ROOT = Path(__file__).resolve().parents[1]
KERNEL_NAME = "transformer-colab"
KERNEL_DISPLAY_NAME = "Python 3 (Colab's versions)"
COLAB_RELEASE_TAG = "transformer-book-colab-test"  # Colab sets this in its kernels; its value does not matter here
# What Colab runs besides the libraries the chapters import: the kernel, the widgets' front-end half, the Notebook.
FRONT_END = ("ipykernel", "ipython", "ipywidgets", "widgetsnbextension", "jupyter-client", "notebook", "traitlets")
# PyPI's torch is the CUDA build: its CUDA libraries are torch's business, not Colab's (whose torch is the CPU build).
TORCH_CUDA = re.compile(r"nvidia-.*|cuda-.*|triton")
FIRST_CHAPTER = ROOT / "book" / "01_introduction.ipynb"
PACKAGE = "transformer-interactive"  # pyproject.toml's name
INSTALL_MODULE = ROOT / "transformer_book" / "install.py"  # the standard library only: it runs in any Python
STAMP = ".colab-env"  # inside the environment: the digest of what steps 1-3 were made from
INSTALLED_STAMP = ".colab-first-cell"  # inside the environment: the digest of what step 4 installed
BASE = ".colab-base.json"  # inside the environment: every package's version after step 3
CLASSIC_FRONT_END = "classic-front-end"  # inside the environment: step 6
CLASSIC_WIDGETS = "3.6.6"  # widgetsnbextension: the newest whose classic-Notebook front end creates Output widgets


def find_python(version: str) -> tuple[str, bool]:
    """A Python of ``version`` (``"3.13"``) and True, or the running Python and False where there is none (a pyenv
    shim names a version it may not have: each candidate must run and say its version)."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(
        glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")), reverse=True
    )
    for candidate in filter(None, candidates):
        ran = subprocess.run([candidate, "--version"], capture_output=True, text=True)
        if ran.returncode == 0 and ran.stdout.startswith(f"Python {version}."):
            return candidate, True
    return sys.executable, False


def held_colab_versions() -> dict[str, str]:
    """Colab's list as pip constraints: every package at Colab's version, but for torch's CUDA libraries."""
    return {name: version for name, version in colab_versions().items() if not TORCH_CUDA.fullmatch(name)}


def write_constraints(versions: dict[str, str], path: Path) -> Path:
    path.write_text("".join(f"{name}=={version}\n" for name, version in sorted(versions.items())), encoding="utf-8")
    return path


def pip(python: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "pip", *args], **{"check": True, "text": True, **kwargs})


def uv_install(python: str, *args: str) -> subprocess.CompletedProcess:
    """``uv pip install`` into the environment of ``python``: the packages and versions pip would install there, in a
    quarter of pip's time and a third of its processor time (measured on torch with its CUDA libraries, 3.5 GB): uv
    unpacks in parallel. For step 3, which installs pinned versions only; what a reader's cell runs (step 4) and the
    resolution against Colab's list (step 2) stay pip's.

    uv leaves the bytecode to Python, which compiles a module the first time it is imported and keeps it: of the
    environment's 25,000 source files, a chapter's kernel imports about a quarter (by size), and compiling them all
    up front costs about 40 s of processor time. Where PYTHONDONTWRITEBYTECODE is set, Python would compile every
    import anew in every kernel (torch: two seconds more for each chapter), so uv compiles everything then."""
    uv = Path(sys.executable).with_name("uv")  # the test extra's, beside this environment's Python
    compile_bytecode = ["--compile-bytecode"] if os.environ.get("PYTHONDONTWRITEBYTECODE") else []
    command = [str(uv), "pip", "install", "--quiet", *compile_bytecode, "--python", python, *args]
    return subprocess.run(command, check=True, text=True)


def installed(python: str) -> dict[str, str]:
    """Every distribution installed in the environment of ``python``, by normalized name."""
    code = f"import json, runpy; print(json.dumps(runpy.run_path({str(INSTALL_MODULE)!r})['installed_versions']()))"
    out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True, cwd=Path(python).parent)
    return json.loads(out.stdout)


def resolve_with_colab(python: str, constraints: Path) -> dict[str, str]:
    """What installing the live extra and the front end would install, every package of Colab's list held at Colab's
    version; exits with pip's explanation when that is impossible."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        run = pip(
            python,
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            "-c",
            str(constraints),
            f"{ROOT}[live]",
            *FRONT_END,
            check=False,
            capture_output=True,
        )
        if run.returncode != 0:
            from transformer_book.install import conflict_lines

            sys.exit(
                f"colab-env: the live extra cannot be installed with Colab's packages at Colab's versions "
                f"(tests/colab/pip-freeze.txt):\n{conflict_lines(run.stdout + run.stderr)}"
            )
        items = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {normalized(i["metadata"]["name"]): i["metadata"]["version"] for i in items}


def make_base(target: Path, python: str) -> None:
    """Steps 1-3: a fresh environment with what Colab ships that the chapters' install would use."""
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(target)], check=True)
    venv_python = str(target / "bin" / "python")
    colab = held_colab_versions()
    constraints = write_constraints(colab, target / "colab-constraints.txt")
    uv_install(venv_python, f"torch=={colab['torch']}")  # with its CUDA libraries (see above)
    resolved = resolve_with_colab(venv_python, constraints)
    shipped = sorted(f"{name}=={version}" for name, version in resolved.items() if name in colab)
    uv_install(venv_python, "-c", str(constraints), *shipped)
    (target / BASE).write_text(json.dumps(installed(venv_python), indent=1, sort_keys=True), encoding="utf-8")
    print(
        f"colab-env: {len(shipped)} of Colab's packages installed at Colab's versions; "
        f"{len(resolved) - len(shipped)} more come with the package: "
        + ", ".join(sorted(name for name in resolved if name not in colab)),
        flush=True,
    )


def first_cell(chapter: Path, address: str) -> str:
    """``chapter``'s first code cell with the repository's address replaced by ``address``."""
    cells = json.loads(chapter.read_text(encoding="utf-8"))["cells"]
    source = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
    url = f"git+{repository_url(ROOT)}"
    if url not in source:
        raise ValueError(f"{chapter.name}'s first code cell does not install from {url}")
    return source.replace(url, address)


def run_first_cell(target: Path) -> dict[str, str]:
    """Step 4: the first cell in the environment's IPython, from what Colab ships; returns what it installed."""
    venv_python = str(target / "bin" / "python")
    base = json.loads((target / BASE).read_text(encoding="utf-8"))
    leftover = sorted(set(installed(venv_python)) - set(base))
    if leftover:  # an earlier run's installs
        pip(venv_python, "uninstall", "--yes", "--quiet", *leftover)
    # pip caches the wheel it builds from the checkout's file: address under that address: an earlier run's build of
    # the package would be installed, not the checkout as it is now (no cache, nothing to remove: pip says so, harmless)
    pip(venv_python, "cache", "remove", PACKAGE.replace("-", "_"), check=False, capture_output=True)
    cell = first_cell(FIRST_CHAPTER, ROOT.as_uri())
    started = time.monotonic()
    ipython = [str(target / "bin" / "ipython"), "--quick", "--no-banner", "--no-term-title", "-c", cell]
    run = subprocess.run(
        ipython,
        cwd=ROOT / "book",
        capture_output=True,
        text=True,
        env={**os.environ, "COLAB_RELEASE_TAG": COLAB_RELEASE_TAG},
    )
    seconds = time.monotonic() - started
    print(run.stdout, end="", flush=True)
    if run.returncode != 0 or "Traceback" in run.stdout:
        sys.exit(f"colab-env: the chapters' first cell failed at Colab's versions:\n{run.stderr}")
    after = installed(venv_python)
    moved = sorted(
        f"{name} {base[name]} -> {after.get(name, 'removed')}" for name in base if after.get(name) != base[name]
    )
    if moved:
        sys.exit("colab-env: the first cell changed packages that Colab ships: " + "; ".join(moved))
    added = {name: after[name] for name in sorted(set(after) - set(base))}
    colab = colab_versions()
    unshipped = sorted(f"{name} {added[name]} (Colab: {colab[name]})" for name in added if name in colab)
    if unshipped:
        sys.exit(
            "colab-env: the first cell installed packages that Colab ships but this environment lacked, so it "
            "would find them installed on Colab at other versions: " + ", ".join(unshipped)
        )
    print(
        f"colab-env: the first cell installed {len(added)} packages in {seconds:.0f} s and changed none of the "
        f"{len(base)} installed: " + ", ".join(f"{n} {v}" for n, v in added.items()),
        flush=True,
    )
    return added


def register_kernel(target: Path) -> None:
    """Step 5: the environment's kernel, with Colab's environment variable, inside the environment."""
    prefix = str(target.resolve())
    subprocess.run(
        [
            str(target / "bin" / "python"),
            "-m",
            "ipykernel",
            "install",
            "--prefix",
            prefix,
            "--name",
            KERNEL_NAME,
            "--display-name",
            KERNEL_DISPLAY_NAME,
        ],
        check=True,
        capture_output=True,
    )
    spec = target / "share" / "jupyter" / "kernels" / KERNEL_NAME / "kernel.json"
    kernel = json.loads(spec.read_text(encoding="utf-8"))
    kernel["env"] = {"COLAB_RELEASE_TAG": COLAB_RELEASE_TAG}
    spec.write_text(json.dumps(kernel, indent=1), encoding="utf-8")


def install_classic_front_end(target: Path) -> None:
    """Step 6: widgetsnbextension's classic-Notebook files at CLASSIC_WIDGETS, beside the environment (see above)."""
    folder = target / CLASSIC_FRONT_END
    shutil.rmtree(folder, ignore_errors=True)
    quiet = {**os.environ, "PIP_QUIET": os.environ.get("PIP_QUIET", "2")}  # pip's errors only
    pip(
        str(target / "bin" / "python"),
        "install",
        "--no-deps",
        "--target",
        str(folder),
        f"widgetsnbextension=={CLASSIC_WIDGETS}",
        env=quiet,
    )


def digest(python: str) -> str:
    """What steps 1-3 are made from: Colab's list, the package's requirements, the Python, this script."""
    h = hashlib.sha256(subprocess.run([python, "--version"], capture_output=True, text=True).stdout.encode())
    for path in (FOLDER / "pip-freeze.txt", FOLDER / "os-info.txt", ROOT / "pyproject.toml", Path(__file__)):
        h.update(path.read_bytes())
    return h.hexdigest()


def package_digest(base: str) -> str:
    """What step 4 installs: the environment it starts from (``base``), the first cell, and the package's files (its
    modules, catalogues and the JavaScript its bertviz views carry)."""
    h = hashlib.sha256(base.encode())
    h.update(first_cell(FIRST_CHAPTER, ROOT.as_uri()).encode())
    for folder in ("transformer", "transformer_book"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".json", ".js"):  # the modules, the Chinese edition's catalogues, d3 and jQuery
                h.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", type=Path, default=ROOT / "_build" / "colab-venv")
    target = parser.parse_args(argv).target.resolve()
    version = colab_python()
    python, exact = find_python(version)
    ran = subprocess.run([python, "--version"], capture_output=True, text=True).stdout.strip()
    print(
        f"colab-env: Colab runs Python {version}; this environment runs {ran}"
        + ("" if exact else f" (no Python {version} on this machine)"),
        flush=True,
    )
    stamp, wanted = target / STAMP, digest(python)
    started = time.monotonic()
    if not (stamp.is_file() and stamp.read_text() == wanted):
        make_base(target, python)
        register_kernel(target)
        install_classic_front_end(target)
        stamp.write_text(wanted)
        print(f"colab-env: made {target} in {time.monotonic() - started:.0f} s", flush=True)
    installed_stamp, installed_wanted = target / INSTALLED_STAMP, package_digest(wanted)
    if installed_stamp.is_file() and installed_stamp.read_text() == installed_wanted:
        print("colab-env: the first cell has installed this checkout's package already", flush=True)
        return 0
    run_first_cell(target)
    installed_stamp.write_text(installed_wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
