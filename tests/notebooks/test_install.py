"""transformer_book.install: the chapters' first cells add what is missing and never replace what is installed.

Each test makes a virtual environment and small wheels of its own (no network: pip looks only in a folder of them),
installs some, then runs ``install_extra`` in that environment as a first cell does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from transformer_book.install import DISTRIBUTION, WITHOUT_DEPENDENCIES, conflict_lines, held_constraints, normalized

ROOT = Path(__file__).resolve().parents[2]


def make_wheel(
    folder: Path, name: str, version: str, requires: tuple[str, ...] = (), extras: dict | None = None
) -> Path:
    """A pure-Python wheel of ``name`` with one empty module and the given requirements (and extras' ones)."""
    module, dist_info = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {r}" for r in requires]
    for extra, reqs in (extras or {}).items():
        metadata += [f"Provides-Extra: {extra}"] + [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    files = {
        f"{module}/__init__.py": "",
        f"{dist_info}/METADATA": "\n".join(metadata) + "\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist_info}/RECORD"] = "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return wheel


@pytest.fixture(scope="module")
def template_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with pip and nothing else, made once: each test gets a copy (making one with pip takes
    seconds, copying it a fraction of one; a copy runs as its own environment, ``bin/python`` finding its folder)."""
    folder = tmp_path_factory.mktemp("template") / "venv"
    venv.create(folder, with_pip=True)
    return folder


@pytest.fixture
def env(tmp_path: Path, template_venv: Path):
    """A fresh virtual environment, pip confined to a folder of local wheels; ``run(code)`` runs Python there."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    shutil.copytree(template_venv, tmp_path / "venv", symlinks=True)
    python = str(tmp_path / "venv" / "bin" / "python")
    pip_env = {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_CONSTRAINT": "",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONPATH": str(ROOT),
    }

    def pip(*args: str) -> None:
        subprocess.run([python, "-m", "pip", "install", "-q", *args], check=True, env=pip_env)

    def run(code: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([python, "-c", code], capture_output=True, text=True, env={**pip_env, **env})

    def versions() -> dict[str, str]:
        out = run("import json; from transformer_book.install import installed_versions as v; print(json.dumps(v()))")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    return wheels, pip, run, versions


INSTALL = "from transformer_book.install import install_extra; print(install_extra('live', 'demo-book'))"


def test_the_extra_is_installed_and_what_was_installed_is_kept(env) -> None:
    wheels, pip, run, versions = env
    make_wheel(wheels, "held-lib", "1.0")
    make_wheel(wheels, "held-lib", "2.0")
    make_wheel(wheels, "new-lib", "1.0", requires=("held-lib",))
    make_wheel(wheels, "demo-book", "0.1", extras={"live": ["new-lib", "held-lib"]})
    pip("held-lib==1.0")
    pip("--no-deps", "demo-book")
    before = versions()

    out = run(INSTALL)

    assert out.returncode == 0, out.stderr
    assert "new-lib 1.0" in out.stdout and "kept at its version" in out.stdout
    after = versions()
    assert after["held-lib"] == "1.0" and after["new-lib"] == "1.0"
    assert {name: after[name] for name in before} == before


def test_a_chinese_notebook_s_first_cell_says_what_it_installed_in_chinese(env) -> None:
    """The first cell imports the module from the package pip has just installed: it speaks the notebook's language
    (here set by TRANSFORMER_BOOK_LANGUAGE, as the book's builds set it; strict: a missing translation is an error)."""
    wheels, pip, run, versions = env
    make_wheel(wheels, "new-lib", "1.0")
    make_wheel(wheels, "demo-book", "0.1", extras={"live": ["new-lib"]})
    pip("--no-deps", "demo-book")

    out = run(INSTALL, TRANSFORMER_BOOK_LANGUAGE="zh", TRANSFORMER_BOOK_STRICT_LANGUAGE="1")

    assert out.returncode == 0, out.stderr
    assert re.search(r"^安装用时 \d+ 秒，.*新装的：new-lib 1\.0$", out.stdout, re.MULTILINE), out.stdout
    assert "Installed in" not in out.stdout


def test_a_conflict_is_explained_in_the_notebook_s_language(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformer_book import i18n, install

    monkeypatch.setattr(install, "changes_needed", lambda requirements, installed: {"held-lib": ("1.0+cpu", "2.0")})
    monkeypatch.setattr(i18n, "_language", "zh")
    message = install.conflict_message("live", "demo-book", {"held-lib": "1.0+cpu"}, "")
    assert message.startswith("pip 无法在不替换这个 Python 已有的包的情况下安装 demo-book 的 'live' 附加依赖")
    assert "held-lib（这里是 1.0+cpu，需要 2.0）" in message and 'pip install "held-lib==2.0"' in message
    monkeypatch.setattr(i18n, "_language", "en")
    assert install.conflict_message("live", "demo-book", {"held-lib": "1.0+cpu"}, "").startswith(
        "pip cannot install the 'live' extra of demo-book without replacing packages this Python already has"
    )


def test_an_extra_that_needs_a_newer_installed_package_fails_clearly_and_changes_nothing(env) -> None:
    wheels, pip, run, versions = env
    make_wheel(wheels, "held-lib", "1.0+cpu")  # a local version, as Colab's torch 2.11.0+cpu
    make_wheel(wheels, "held-lib", "2.0")
    make_wheel(wheels, "needs-new", "1.0", requires=("held-lib>=2",))
    make_wheel(wheels, "demo-book", "0.1", extras={"live": ["needs-new"]})
    pip("held-lib==1.0+cpu")
    pip("--no-deps", "demo-book")
    before = versions()

    out = run(INSTALL)

    assert out.returncode != 0
    assert "InstallConflict: pip cannot install the 'live' extra of demo-book without replacing packages" in out.stderr
    assert "It needs other versions of: held-lib (here 1.0+cpu; it needs 2.0)" in out.stderr
    assert 'pip install "held-lib==2.0"' in out.stderr
    assert "ResolutionImpossible" not in out.stderr  # pip's own closing lines are left out
    assert versions() == before


def test_a_conflict_names_the_installed_package_in_the_way_not_pips_search_through_old_releases(env) -> None:
    """As bertviz's boto3 did with a python-dateutil newer than botocore accepts: pip, every installed version held,
    tries the dependency's older releases down to one that needs a package it cannot find, and says only that."""
    wheels, pip, run, versions = env
    make_wheel(wheels, "dateutil-lib", "2.9")
    make_wheel(wheels, "dateutil-lib", "3.0")
    make_wheel(wheels, "sdk", "1.40", requires=("dateutil-lib<3",))
    make_wheel(wheels, "sdk", "0.0.5", requires=("six-lib",))  # six-lib: in no folder pip looks in
    make_wheel(wheels, "demo-book", "0.1", extras={"live": ["sdk"]})
    pip("dateutil-lib==3.0")
    pip("--no-deps", "demo-book")
    before = versions()

    out = run(INSTALL)

    assert out.returncode != 0
    assert "It needs other versions of: dateutil-lib (here 3.0; it needs 2.9)" in out.stderr
    assert "six-lib" not in out.stderr and "sdk" not in out.stderr
    assert versions() == before


def test_libraries_without_dependencies_come_with_the_extra_and_nothing_they_declare(env) -> None:
    wheels, pip, run, versions = env
    make_wheel(wheels, "held-lib", "1.0")
    make_wheel(wheels, "views-lib", "1.4", requires=("huge-sdk",))  # huge-sdk: in no folder pip looks in
    make_wheel(wheels, "demo-book", "0.1", extras={"live": ["held-lib"]})
    pip("--no-deps", "demo-book")

    out = run(INSTALL.replace("'demo-book')", "'demo-book', without_dependencies=['views-lib>=1.4'])"))

    assert out.returncode == 0, out.stderr
    assert "held-lib 1.0, views-lib 1.4" in out.stdout
    assert versions().keys() >= {"held-lib", "views-lib"} and "huge-sdk" not in versions()


def test_every_install_of_the_live_extra_adds_its_libraries_without_their_dependencies() -> None:
    """A first cell (install_extra), the README's local path, `make setup` and `make lock` install bertviz alone."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from reader_env import readme_steps

    wanted = WITHOUT_DEPENDENCIES[(DISTRIBUTION, "live")]
    assert wanted == ("bertviz>=1.4",)
    readme = [args for args in readme_steps().pip_installs if "--no-deps" in args]
    assert readme == [("--no-deps", "-c", "constraints.txt", *wanted)]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    quoted = " ".join(f'"{r}"' for r in wanted)
    for target in ("$(PACKAGES_STAMP):", "lock:"):
        recipe = makefile.split(f"\n{target}", 1)[1].split("\n\n", 1)[0]
        assert f"--no-deps {quoted}" in recipe, f"the Makefile's {target} recipe must install {quoted} with --no-deps"
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert not re.search(r'"bertviz[^"]*"', pyproject), "bertviz in an extra brings transformers and boto3 again"


def test_the_package_itself_must_be_installed_first(env) -> None:
    _, _, run, _ = env
    out = run(INSTALL)
    assert out.returncode != 0 and "'demo-book' must be installed first" in out.stderr


def test_held_constraints_hold_exact_version_strings() -> None:
    assert held_constraints({"torch": "2.11.0+cpu", "ipython": "7.34.0"}) == "ipython===7.34.0\ntorch===2.11.0+cpu\n"
    assert normalized("Jupyter_Client") == normalized("jupyter.client") == "jupyter-client"


def test_conflict_lines_keep_pips_explanation_only() -> None:
    stderr = (
        "WARNING: Location 'x' is ignored\n\nThe conflict is caused by:\n    The user requested setuptools>=82\n"
        "    The user requested (constraint) setuptools===81.0.0\n\nTo fix this you could try to:\n"
        "1. loosen the range\n\nERROR: ResolutionImpossible: for help visit https://pip.pypa.io\n"
    )
    assert (
        conflict_lines(stderr)
        == "The user requested setuptools>=82\nThe user requested (constraint) setuptools===81.0.0"
    )
    assert (
        conflict_lines("ERROR: No matching distribution found for x\n") == "ERROR: No matching distribution found for x"
    )


def test_the_module_needs_only_the_standard_library() -> None:
    """The first cell imports it before the live extra's libraries are installed: it loads in a Python that sees
    the standard library alone (-S: no site-packages), and there, outside the package, speaks English."""
    path = ROOT / "transformer_book" / "install.py"
    code = (
        f"import importlib.util; spec = importlib.util.spec_from_file_location('install', {str(path)!r}); "
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); "
        "print(module.tr('{name} (here {have}; it needs {want})', name='a', have='1', want='2'))"
    )
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=ROOT / "zh" / "book")
    assert out.stdout.strip() == "a (here 1; it needs 2)", out.stderr
