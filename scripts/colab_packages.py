"""Colab's published package list, kept in the repository (tests/colab/), read, and refreshed.

    python scripts/colab_packages.py                 # fetch the newest list from GitHub, say what changed
    python scripts/colab_packages.py --from DIR      # the same from a clone of googlecolab/backend-info

Google publishes what a Colab runtime has installed in https://github.com/googlecolab/backend-info: ``pip-freeze.txt``
(``python3 -m pip freeze`` of the CPU runtime) and ``os-info.txt`` (the Ubuntu and Python versions). ``make
colab-test`` builds a Colab-like environment from the copies in ``tests/colab/`` (``scripts/colab_env.py``); this
script replaces those copies with the newest ones, writes where and when they came from into
``tests/colab/source.json``, and prints every package that was added, removed or moved, and Python's version.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "colab"
REPOSITORY = "googlecolab/backend-info"
FILES = ("pip-freeze.txt", "os-info.txt")
RAW = "https://raw.githubusercontent.com/googlecolab/backend-info/main/{name}"


def normalized(name: str) -> str:
    """A distribution's name as pip compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_freeze(text: str) -> tuple[dict[str, str], list[str]]:
    """Colab's ``pip freeze``: the version of each package (by normalized name), and the lines that name no version
    PyPI can serve (a package built from a git commit or a local file).

    ``name==version`` lines are taken as they are. Colab installs torch and its kin from PyTorch's CPU index
    (``torch @ https://download.pytorch.org/whl/cpu/torch-2.11.0%2Bcpu-....whl``): the wheel's file name gives the
    version, without its local part (``2.11.0``), which is the release PyPI serves.
    """
    versions, unpinnable = {}, []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "==" in line:
            name, version = line.split("==", 1)
            versions[normalized(name)] = version.strip()
            continue
        name, _, url = (part.strip() for part in line.partition(" @ "))
        file = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
        if file.endswith(".whl"):
            versions[normalized(name)] = file.split("-")[1].split("+")[0]
        else:
            unpinnable.append(line)
    return versions, unpinnable


def python_version(os_info: str) -> str:
    """The ``major.minor`` of the Python that ``os-info.txt`` names (``Python 3.13.15`` -> ``3.13``)."""
    found = re.search(r"^Python (\d+)\.(\d+)", os_info, re.MULTILINE)
    if found is None:
        raise ValueError("os-info.txt names no Python version")
    return f"{found.group(1)}.{found.group(2)}"


def colab_versions() -> dict[str, str]:
    """The kept copy of Colab's list: each package's version."""
    return parse_freeze((FOLDER / "pip-freeze.txt").read_text(encoding="utf-8"))[0]


def colab_python() -> str:
    """The ``major.minor`` of the kept copy's Python."""
    return python_version((FOLDER / "os-info.txt").read_text(encoding="utf-8"))


def changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """One line per package added, removed or moved between two lists."""
    lines = [f"+ {name} {new[name]}" for name in sorted(new.keys() - old.keys())]
    lines += [f"- {name} {old[name]}" for name in sorted(old.keys() - new.keys())]
    lines += [
        f"  {name} {old[name]} -> {new[name]}" for name in sorted(old.keys() & new.keys()) if old[name] != new[name]
    ]
    return lines


def fetch(source: str | None) -> tuple[dict[str, str], dict]:
    """The files' texts from a clone of the repository (``source``, its newest commit) or from GitHub, and where they
    came from."""
    today = datetime.date.today().isoformat()
    if source:

        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", source, *args], check=True, capture_output=True, text=True).stdout

        texts = {name: git("show", f"HEAD:{name}") for name in FILES}
        commit, date = git("log", "-1", "--format=%H %cs", "--", FILES[0]).split()
        return texts, {"repository": REPOSITORY, "commit": commit, "committed": date, "copied": today}
    texts = {}
    for name in FILES:
        with urllib.request.urlopen(RAW.format(name=name), timeout=60) as response:
            texts[name] = response.read().decode("utf-8")
    return texts, {"repository": REPOSITORY, "commit": "main", "committed": None, "copied": today}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", help="a clone of googlecolab/backend-info instead of GitHub")
    args = parser.parse_args(argv)
    old_versions, old_python = colab_versions(), colab_python()
    texts, origin = fetch(args.source)
    new_versions, new_python = parse_freeze(texts["pip-freeze.txt"])[0], python_version(texts["os-info.txt"])
    for name, text in texts.items():
        (FOLDER / name).write_text(text, encoding="utf-8")
    (FOLDER / "source.json").write_text(json.dumps(origin, indent=1) + "\n", encoding="utf-8")
    moved = changes(old_versions, new_versions)
    print(
        f"Colab's package list from {REPOSITORY} ({origin['commit']}, {origin['committed'] or 'newest'}): "
        f"{len(new_versions)} packages, Python {new_python}"
        + (f" (was {old_python})" if new_python != old_python else "")
    )
    print("\n".join(moved) if moved else "no package changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
