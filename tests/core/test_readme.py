"""The README's Python examples run as printed."""

import re
import subprocess
from pathlib import Path

import pytest

from transformer import Transformer, save_checkpoint
from transformer.train.recipes import small_model_config

README = Path(__file__).resolve().parents[2] / "README.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def test_readme_has_python_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_readme_python_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the decoding example loads copy.pt, which `python -m transformer train` writes
    save_checkpoint(Transformer(small_model_config()), tmp_path / "copy.pt")
    exec(compile(EXAMPLES[index], f"README.md example {index + 1}", "exec"), {})


def test_the_torch_version_the_readme_names_is_the_makefiles() -> None:
    """The Makefile's TORCH_VERSION is the one place the version is chosen; the README's commands must name it."""
    makefile = (README.parent / "Makefile").read_text()
    version = re.search(r"^TORCH_VERSION \?= (\S+)$", makefile, re.MULTILINE)[1]
    named = set(re.findall(r"torch==([0-9][0-9.]*[0-9])", README.read_text()))
    assert named == {version}, f"the README names torch {sorted(named)}; the Makefile installs {version}"


def tracked_files(root: Path) -> list[str]:
    """The repository's files as git tracks them (not what builds and installs leave beside them: _build, build,
    *.egg-info); every file under ``root`` where it is not a git checkout."""
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=False)
    if listed.returncode == 0:
        return listed.stdout.splitlines()
    return [path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()]


def test_the_readme_s_map_names_every_folder_and_only_paths_that_exist() -> None:
    """The map under "Where things are": each path it names exists, and every folder of the repository is on it."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"^## Where things are\n\n```\n(.*?)^```", text, re.MULTILINE | re.DOTALL)[1]
    named = {path.strip(",") for line in block.splitlines() if line[:1].strip() for path in line[:22].split()}
    root = README.parent
    missing = sorted(path for path in named if not (root / path).exists())
    assert not missing, f"the README's map names {missing}, which do not exist"
    folders = {path.split("/")[0] for path in tracked_files(root) if "/" in path}
    folders = {name for name in folders if not name.startswith((".", "_"))}  # not .ci, .github: the machinery's
    listed = {path.split("/")[0] for path in named}
    assert folders <= listed, f"folders missing from the README's map: {sorted(folders - listed)}"
