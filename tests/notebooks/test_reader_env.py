"""scripts/reader_env.py runs the README's local path, and only that: what it reads from the README, what it refuses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from reader_env import STAMP, ReaderSteps, digest, make_env, parse_steps, readme_block, readme_steps  # noqa: E402


def test_the_readme_local_path_is_a_venv_torch_and_the_lab_extra_under_constraints() -> None:
    steps = readme_steps()
    assert [args[0] for args in steps.pip_installs] == ["torch==2.13.0", "-c", "--no-deps"]
    assert steps.pip_installs[1] == ("-c", "constraints.txt", "-e", ".[lab]")  # jupyterlab pinned by constraints.txt
    assert steps.pip_installs[2] == ("--no-deps", "-c", "constraints.txt", "bertviz>=1.4")  # without transformers
    assert steps.jupyter == ("jupyter", "lab", "book/")


def test_comments_are_skipped_and_an_unknown_step_is_refused() -> None:
    block = "python3 -m venv v && source v/bin/activate\npip install x  # why\n# a note\njupyter lab book/\n"
    assert parse_steps(block) == ReaderSteps("v", (("x",),), ("jupyter", "lab", "book/"))
    with pytest.raises(ValueError, match="conda install y"):
        parse_steps(block + "conda install y\n")
    with pytest.raises(ValueError, match="must create and activate a venv"):
        parse_steps("pip install x\njupyter lab book/\n")


def test_the_block_is_the_first_bash_block_under_its_heading() -> None:
    text = (
        "## Other\n```bash\nnot this\n```\n## Run the chapters on your machine\ntext\n"
        "```bash\nthis\n```\n```bash\nnor this\n```\n"
    )
    assert readme_block(text) == "this\n"
    with pytest.raises(ValueError, match="no heading"):
        readme_block("## Something else\n")


def test_an_environment_made_from_the_same_steps_is_left_alone(tmp_path: Path) -> None:
    steps = readme_steps()
    (tmp_path / STAMP).write_text(digest(steps))
    assert make_env(tmp_path, steps) is False  # nothing run: no venv, no pip
    assert digest(steps) != digest(ReaderSteps(steps.venv, (("other",),), steps.jupyter))
