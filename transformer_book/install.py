"""Install what the chapters need into a running kernel without changing anything that is installed already.

A chapter's first cell, on Colab or wherever a library is missing, installs this package from its repository with
``pip install --no-deps`` (which adds the package and touches nothing else), then calls :func:`install_extra`, which
installs the package's ``live`` extra with every installed distribution held at its version: pip gets one constraint
``name===version`` per installed distribution (``===`` compares the version string exactly, so local versions such
as torch's ``2.11.0+cpu`` hold too). Colab's kernel packages (IPython, ipykernel, ipywidgets, traitlets, tornado)
must never be upgraded under a running kernel: the runtime then asks for a restart, and an IPython that pulls a newer
traitlets can keep Colab's runtime from starting again (googlecolab/colabtools#5580). With every installed version
held, pip adds what is missing or fails; it never replaces anything, so no restart is needed. When it fails, the
error names the installed packages that stand in the way and the versions that would do (from pip's resolution with
nothing held), not pip's backtracking through old releases of some dependency.

A few libraries come with the extra without the dependencies they declare (:data:`WITHOUT_DEPENDENCIES`), which an
extra cannot say: bertviz's ``head_view`` and ``model_view``, all the chapters use of it, import only IPython and
torch, while bertviz declares ``transformers`` (129 MB installed), ``boto3`` (with ``botocore``, 32 MB),
``sentencepiece``, ``regex`` and ``requests`` for its neuron view. README.md's local path, ``make setup`` and
``make lock`` install them the same way (``pip install --no-deps``; tests/notebooks/test_install.py keeps them in step).

This module uses the standard library only: the first cell imports it before the extra's libraries are installed. What
it says to a reader comes in the notebook's language (:func:`tr`): the first cell imports it from the package that pip
has just installed, whose :mod:`transformer_book.i18n` needs nothing else either; run on its own (``runpy``, as
``scripts/colab_env.py`` runs it in a Python without the package), it speaks English.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

__all__ = ["WITHOUT_DEPENDENCIES", "InstallConflict", "install_extra", "installed_versions"]

DISTRIBUTION = "transformer-interactive"
# (distribution, extra) -> requirements installed with that extra, each without the dependencies it declares
WITHOUT_DEPENDENCIES = {(DISTRIBUTION, "live"): ("bertviz>=1.4",)}


def tr(text: str, **values: object) -> str:
    """``text`` in the reader's language, filled with ``values``: :func:`transformer_book.i18n.tr` where this module
    was imported from the package (the templates are in the book's catalogue with the chapters'); the English where it
    runs on its own, without the package."""
    if __package__:
        from .i18n import tr as translated

        return translated(text, **values)
    return text.format(**values) if values else text


class InstallConflict(RuntimeError):
    """pip could not install what was asked without replacing a package that is installed already."""


def normalized(name: str) -> str:
    """A distribution's name as pip compares it (PEP 503): lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_versions() -> dict[str, str]:
    """The version of every installed distribution, by normalized name; where a name is installed twice, the one
    found first on ``sys.path``, which is the one Python imports."""
    versions: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:  # a distribution whose metadata is broken has no name: nothing to hold
            versions.setdefault(normalized(name), dist.version)
    return versions


def held_constraints(versions: dict[str, str]) -> str:
    """pip constraints that hold each distribution at exactly its installed version."""
    return "".join(f"{name}==={version}\n" for name, version in sorted(versions.items()))


def conflict_lines(pip_output: str) -> str:
    """What pip says caused a failed install: its "The conflict is caused by" section, else its ERROR lines."""
    lines = pip_output.splitlines()
    if "The conflict is caused by:" in lines:
        start = lines.index("The conflict is caused by:") + 1
        section = []
        for line in lines[start:]:
            if not line.strip():
                break
            section.append(line.strip())
        if section:
            return "\n".join(section)
    return "\n".join(line for line in lines if line.startswith("ERROR")) or pip_output.strip()[-2000:]


def pip_install(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *args], capture_output=True, text=True
    )


def changes_needed(requirements: Sequence[str], installed: dict[str, str]) -> dict[str, tuple[str, str]]:
    """The installed distributions that pip would replace to install ``requirements`` with nothing held, each with
    its installed version and the one pip would install: ``{name: (installed, wanted)}``; empty where pip finds no
    way at all (nothing is installed: pip only resolves)."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.json")
        if pip_install("--dry-run", "--quiet", "--report", report, *requirements).returncode != 0:
            return {}
        with open(report, encoding="utf-8") as f:
            items = json.load(f)["install"]
    wanted = {normalized(item["metadata"]["name"]): item["metadata"]["version"] for item in items}
    return {name: (installed[name], wanted[name]) for name in sorted(wanted) if name in installed}


def install_extra(
    extra: str = "live", distribution: str = DISTRIBUTION, without_dependencies: Sequence[str] | None = None
) -> dict[str, str]:
    """Install what ``distribution[extra]`` requires into this Python, holding every installed distribution at its
    version, then ``without_dependencies`` (by default, this package's :data:`WITHOUT_DEPENDENCIES` for ``extra``)
    without their declared dependencies. Returns what was installed (name -> version) and prints it; raises
    :class:`InstallConflict`, naming what stands in the way, when that is impossible (nothing was changed where the
    extra itself could not be installed)."""
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(f"install_extra: {distribution!r} must be installed first (pip install --no-deps)") from None
    if without_dependencies is None:
        without_dependencies = WITHOUT_DEPENDENCIES.get((distribution, extra), ())
    before = installed_versions()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        held = os.path.join(folder, "held.txt")
        with open(held, "w", encoding="utf-8") as f:
            f.write(held_constraints(before))
        requirement = f"{distribution}[{extra}]"
        pip = pip_install("-c", held, requirement)
        if pip.returncode != 0:
            raise InstallConflict(conflict_message(extra, distribution, before, pip.stdout + pip.stderr))
        if without_dependencies:
            pip = pip_install("--no-deps", "-c", held, *without_dependencies)
            if pip.returncode != 0:
                raise InstallConflict(
                    tr(
                        "pip installed {requirement} but cannot install {packages} (without their dependencies). "
                        "From pip:\n{pip}",
                        requirement=requirement,
                        packages=tr(", ").join(without_dependencies),
                        pip=conflict_lines(pip.stdout + pip.stderr),
                    )
                )
    importlib.invalidate_caches()
    after = installed_versions()
    changed = sorted(name for name in before if after.get(name) != before[name])
    if changed:  # pip honours the constraints; a change here means something else ran meanwhile
        raise InstallConflict(
            tr("installing {requirement} changed {names}", requirement=requirement, names=tr(", ").join(changed))
        )
    added = {name: after[name] for name in sorted(set(after) - set(before))}
    listed = tr(", ").join(f"{name} {version}" for name, version in added.items()) or tr("nothing (all was there)")
    seconds = time.monotonic() - started
    print(
        tr(
            "Installed in {seconds:.0f} s, every package that was here kept at its version: {listed}",
            seconds=seconds,
            listed=listed,
        )
    )
    return added


def conflict_message(extra: str, distribution: str, installed: dict[str, str], pip_output: str) -> str:
    """Why ``distribution[extra]`` cannot be installed with every installed distribution held: the ones pip would
    have to replace (and with which versions), found by resolving again with nothing held; pip's own explanation only
    where that names none (pip's message about a held version can be a search through a dependency's old releases,
    which names packages that are not the cause)."""
    start = tr(
        "pip cannot install the {extra!r} extra of {distribution} without replacing packages this Python already has, "
        "and nothing was changed.",
        extra=extra,
        distribution=distribution,
    )
    changes = changes_needed([f"{distribution}[{extra}]"], installed)
    if not changes:
        return tr("{start} What conflicts (from pip):\n{pip}", start=start, pip=conflict_lines(pip_output))
    names = tr(", ").join(
        tr("{name} (here {have}; it needs {want})", name=name, have=have, want=want)
        for name, (have, want) in changes.items()
    )
    pins = " ".join(f'"{name}=={want}"' for name, (_, want) in changes.items())
    return tr(
        "{start} It needs other versions of: {names}. Install those (pip install {pins}), restart the kernel and run "
        "this cell again, or use a fresh environment.",
        start=start,
        names=names,
        pins=pins,
    )
