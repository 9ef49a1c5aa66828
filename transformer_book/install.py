"""Install what the chapters need into a running kernel without changing anything that is installed already.

A chapter's first cell, on Colab or wherever a library is missing, installs this package from its repository with
``pip install --no-deps`` (which adds the package and touches nothing else), then calls :func:`install_extra`, which
installs the package's ``live`` extra with every installed distribution held at its version: pip gets one constraint
``name===version`` per installed distribution (``===`` compares the version string exactly, so local versions such
as torch's ``2.11.0+cpu`` hold too). Colab's kernel packages (IPython, ipykernel, ipywidgets, traitlets, tornado)
must never be upgraded under a running kernel: the runtime then asks for a restart, and an IPython that pulls a newer
traitlets can keep Colab's runtime from starting again (googlecolab/colabtools#5580). With every installed version
held, pip adds what is missing or fails; it never replaces anything, so no restart is needed.

This module uses the standard library only: the first cell imports it before the extra's libraries are installed.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import subprocess
import sys
import tempfile
import time

__all__ = ["InstallConflict", "install_extra", "installed_versions"]

DISTRIBUTION = "transformer-interactive"


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


def install_extra(extra: str = "live", distribution: str = DISTRIBUTION) -> dict[str, str]:
    """Install what ``distribution[extra]`` requires into this Python, holding every installed distribution at its
    version. Returns what was installed (name -> version) and prints it; raises :class:`InstallConflict`, naming
    what conflicts, when that is impossible (then nothing was changed)."""
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(f"install_extra: {distribution!r} must be installed first (pip install --no-deps)") from None
    before = installed_versions()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        held = os.path.join(folder, "held.txt")
        with open(held, "w", encoding="utf-8") as f:
            f.write(held_constraints(before))
        pip = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "-c",
                held,
                f"{distribution}[{extra}]",
            ],
            capture_output=True,
            text=True,
        )
    if pip.returncode != 0:
        raise InstallConflict(
            f"pip cannot install the {extra!r} extra of {distribution} without replacing packages this Python already "
            f"has, and nothing was changed. What conflicts (from pip):\n{conflict_lines(pip.stdout + pip.stderr)}"
        )
    importlib.invalidate_caches()
    after = installed_versions()
    changed = sorted(name for name in before if after.get(name) != before[name])
    if changed:  # pip honours the constraints; a change here means something else ran meanwhile
        raise InstallConflict(f"installing {distribution}[{extra}] changed {', '.join(changed)}")
    added = {name: after[name] for name in sorted(set(after) - set(before))}
    listed = ", ".join(f"{name} {version}" for name, version in added.items()) or "nothing (all was there)"
    print(f"Installed in {time.monotonic() - started:.0f} s, every package that was here kept at its version: {listed}")
    return added
