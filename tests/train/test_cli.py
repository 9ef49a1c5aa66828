import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from transformer import Transformer, save_checkpoint
from transformer.train import registry
from transformer.train.cli import main, resume_path
from transformer.train.recipes import small_model_config


def _run(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv), prog="python -m transformer")
    out, err = capsys.readouterr()
    return exit_info.value.code, out + err


def test_help_lists_every_command_and_option(capsys):
    code, text = _run(capsys, "--help")
    assert code == 0 and "train" in text and "evaluate" in text and "examples (" in text
    code, text = _run(capsys, "train", "--help")
    assert code == 0
    for option in (
        "--task",
        "--steps",
        "--seed",
        "--device",
        "--bf16",
        "--compile",
        "--threads",
        "--eval-size",
        "--no-progress",
        "--out",
        "--save-every",
        "--resume",
        "copy",
        "reverse",
        "sort",
        "dates",
        "translation",
        "auto",
        "cuda",
    ):
        assert option in text
    code, text = _run(capsys, "evaluate", "--help")
    assert code == 0
    for option in (
        "PATH",
        "--task",
        "--n",
        "--min-seq-len",
        "--max-seq-len",
        "--seed",
        "--beam-size",
        "--device",
        "dates",
        "translation",
    ):
        assert option in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--task", "shuffle", "--out", "x.pt"], "invalid choice: 'shuffle'"),
        (["train", "--steps", "0", "--out", "x.pt"], "expected a positive integer, got 0"),
        (["train", "--steps", "many", "--out", "x.pt"], "expected a positive integer, got 'many'"),
        (["train", "--task", "copy"], "the following arguments are required: --out"),
        (["train", "--out", "/no/such/folder/x.pt"], "does not exist"),
        (["train", "--device", "tpu", "--out", "x.pt"], "invalid choice: 'tpu'"),
        (["train", "--save-every", "0", "--out", "x.pt"], "--save-every: expected a positive integer, got 0"),
        (
            ["train", "--resume", "missing.resume.pt", "--out", "x.pt", "--device", "cpu"],
            "--resume: cannot resume: no checkpoint at 'missing.resume.pt'",
        ),
        (["evaluate", "missing.pt"], "no checkpoint at 'missing.pt'"),
        (["evaluate", __file__], "is not a readable PyTorch checkpoint (torch.load with weights_only=True failed: "),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_bad_arguments_exit_with_status_2_and_say_what_is_wrong(capsys, argv, message):
    code, text = _run(capsys, *argv)
    assert code == 2 and message in text
    assert len(text.splitlines()[-1]) < 300 and text.splitlines()[-1].startswith("python -m transformer")  # one line


def test_the_training_checkpoint_lives_beside_the_model() -> None:
    assert resume_path(Path("runs/copy.pt")) == Path("runs/copy.resume.pt")
    assert resume_path(Path("model")) == Path("model.resume.pt")


def test_resuming_from_the_model_checkpoint_names_the_file_to_resume_from(capsys, tmp_path):
    path = save_checkpoint(Transformer(small_model_config()), tmp_path / "copy.pt")
    code, text = _run(capsys, "train", "--device", "cpu", "--no-progress", "--out", str(path), "--resume", str(path))
    assert code == 2 and "is a model checkpoint" in text and "copy.pt -> copy.resume.pt" in text


def test_a_model_of_one_task_of_text_is_scored_on_that_task_only(capsys, tmp_path):
    path = save_checkpoint(Transformer(small_model_config()), tmp_path / "copy.pt", task="copy")
    code, text = _run(capsys, "evaluate", str(path), "--task", "dates")
    assert code == 2 and "this checkpoint was trained on 'copy'" in text
    code, text = _run(capsys, "evaluate", str(path), "--beam-size", "4")
    assert code == 2 and "--beam-size 4: the synthetic tasks are scored with greedy decoding" in text


def test_the_translation_task_names_the_libraries_it_lacks(capsys, monkeypatch):
    libraries = ("torch", "no_such_library_here", "another_missing_one")
    monkeypatch.setitem(
        registry.REGISTRY, "translation", replace(registry.REGISTRY["translation"], libraries=libraries)
    )
    code, text = _run(capsys, "train", "--task", "translation", "--device", "cpu", "--out", "x.pt")
    assert code == 2 and "--task translation: needs torch, no_such_library_here, another_missing_one" in text
    assert "no_such_library_here, another_missing_one are not installed: pip install no_such_library_here" in text


@pytest.mark.slow
def test_train_saves_a_checkpoint_that_evaluate_scores(capsys, tmp_path):
    path = tmp_path / "copy.pt"
    assert (
        main(
            [
                "train",
                "--task",
                "copy",
                "--steps",
                "5",
                "--eval-size",
                "20",
                "--no-progress",
                "--device",
                "cpu",
                "--out",
                str(path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "exact match on 20 fresh copy sequences" in out and path.is_file()
    assert main(["evaluate", str(path), "--n", "20", "--task", "reverse", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "reverse, 20 fresh sequences of length 1-10" in out and "exact match:" in out and "token accuracy:" in out
    code, text = _run(capsys, "evaluate", str(path), "--min-seq-len", "12", "--max-seq-len", "11")
    assert code == 2 and "--min-seq-len 12: must not exceed the longest length, 11" in text
    code, text = _run(capsys, "evaluate", str(path), "--max-seq-len", "80")
    assert code == 2 and "--max-seq-len 80: too long for this model's positional table (max_positions=64" in text


def test_messages_name_the_program_that_was_run(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/somewhere/bin/transformer-interactive", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith("usage: transformer-interactive [-h]")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "usage"),
    [
        (["-m", "transformer"], "usage: python -m transformer [-h]"),
        (["transformer-interactive"], "usage: transformer-interactive [-h]"),
    ],
    ids=["module", "console-script"],
)
def test_each_way_to_run_the_command_line_names_itself(command, usage):
    """``python -m transformer`` and the console script that installing the package makes (beside this Python)."""
    if command[0] == "-m":
        command = [sys.executable, *command]
    else:
        command = [str(Path(sys.executable).parent / command[0])]
    result = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith(usage), result.stdout + result.stderr


@pytest.mark.slow
def test_importing_the_modules_of_the_command_line_runs_nothing():
    """The console script imports ``transformer.__main__``: importing it (or the command line) must not exit."""
    code = "import transformer.__main__, transformer.train.cli; print('imported')"
    result = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout == "imported\n", result.stdout + result.stderr


@pytest.mark.slow
def test_the_dates_task_trains_and_evaluates_with_the_chapters_scores(capsys, tmp_path, monkeypatch):
    path = tmp_path / "dates.pt"
    assert (
        main(
            [
                "train",
                "--task",
                "dates",
                "--steps",
                "3",
                "--batch-size",
                "16",
                "--eval-size",
                "40",
                "--no-progress",
                "--device",
                "cpu",
                "--out",
                str(path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "training the dates model of chapter 9 for 3 steps" in out
    assert "held-out test examples (40, of dates never seen in training): exact match" in out
    assert "greedy decoding: exact match" in out and ", BLEU " in out and ", chrF " in out
    assert main(["evaluate", str(path), "--n", "40", "--beam-size", "2", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "dates, 40 held-out test examples" in out and "beam search of 2: exact match" in out
    monkeypatch.setitem(sys.modules, "sacrebleu", None)  # as if it were not installed: exact match still comes
    assert main(["evaluate", str(path), "--n", "40", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "exact match:" in out and "BLEU and chrF: not computed (BLEU and chrF need sacrebleu" in out
    code, text = _run(capsys, "evaluate", str(path), "--seed", "3")
    assert code == 2 and "--seed 3: the dates task is scored on its held-out test examples" in text


@pytest.mark.parametrize("name", ["copy", "reverse", "sort", "dates"])
def test_a_task_trains_with_its_recipe_which_help_gives_without_importing_the_task(name, capsys):
    """Each recipe has one home (transformer.train.recipes), which the task and --help both read. (Translation, which
    needs the live extra: tests/train/test_translation_cli.py.)"""
    task = registry.get_task(name)
    assert isinstance(task, registry.Task) and task.name == name
    assert task.train_config() == registry.recipe(name) and task.train_config(steps=7).steps == 7
    code, text = _run(capsys, "train", "--help")
    text = " ".join(text.split())  # as argparse wraps it for the terminal's width
    config = registry.recipe(name)
    assert code == 0 and f"{config.steps} for " in text and f"{config.batch_size} for " in text


def test_the_command_line_trains_and_scores_every_task_through_the_registry_alone():
    """Outside a task's own module no code compares anything with a task's name: the command line, the loop, the
    registry and the book kit only look tasks up, or ask the task's module (where a synthetic task reads its source:
    transformer.train.tasks.source_positions)."""
    own = {"tasks.py", "synthetic.py", "dates.py", "translation.py"}  # the modules that define the tasks
    root = Path(__file__).resolve().parents[2]
    for path in sorted([*(root / "transformer").rglob("*.py"), *(root / "transformer_book").rglob("*.py")]):
        if path.name in own and path.parent.name == "train":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                values = {c.value for c in operands if isinstance(c, ast.Constant)}
                values |= {
                    e.value
                    for c in operands
                    if isinstance(c, (ast.Tuple, ast.List, ast.Set))
                    for e in c.elts
                    if isinstance(e, ast.Constant)
                }
                assert not values & set(registry.REGISTRY), (
                    f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}"
                )


def test_evaluate_asks_for_the_task_of_a_checkpoint_that_records_none(tmp_path, capsys) -> None:
    path = save_checkpoint(Transformer(small_model_config()), tmp_path / "mine.pt")  # saved from Python, no metadata
    with pytest.raises(SystemExit):
        main(["evaluate", str(path), "--device", "cpu", "--n", "4"])
    assert "does not record the task it was trained on: name it with --task" in capsys.readouterr().err
    assert main(["evaluate", str(path), "--task", "reverse", "--device", "cpu", "--n", "4"]) == 0
    assert "reverse, 4 fresh sequences of length 1-10" in capsys.readouterr().out
