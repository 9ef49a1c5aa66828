import subprocess
import sys

import pytest

from transformer.train.cli import main


def _run(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out + err


def test_help_lists_every_command_and_option(capsys):
    code, text = _run(capsys, "--help")
    assert code == 0 and "train" in text and "evaluate" in text and "examples:" in text
    code, text = _run(capsys, "train", "--help")
    assert code == 0
    for option in ("--task", "--steps", "--seed", "--device", "--bf16", "--compile", "--threads", "--eval-size", "--no-progress",
                   "--out", "copy", "reverse", "sort", "auto", "cuda"):
        assert option in text
    code, text = _run(capsys, "evaluate", "--help")
    assert code == 0
    for option in ("PATH", "--task", "--n", "--min-seq-len", "--max-seq-len", "--seed", "--device"):
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
        (["evaluate", "missing.pt"], "no checkpoint at 'missing.pt'"),
        (["evaluate", __file__], "is not a readable PyTorch checkpoint (torch.load with weights_only=True failed: "),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_bad_arguments_exit_with_status_2_and_say_what_is_wrong(capsys, argv, message):
    code, text = _run(capsys, *argv)
    assert code == 2 and message in text
    assert len(text.splitlines()[-1]) < 300 and text.splitlines()[-1].startswith("python -m transformer")  # one line


@pytest.mark.slow
def test_train_saves_a_checkpoint_that_evaluate_scores(capsys, tmp_path):
    path = tmp_path / "copy.pt"
    assert main(["train", "--task", "copy", "--steps", "5", "--eval-size", "20", "--no-progress", "--device", "cpu",
                 "--out", str(path)]) == 0
    out = capsys.readouterr().out
    assert "exact match on 20 fresh copy sequences" in out and path.is_file()
    assert main(["evaluate", str(path), "--n", "20", "--task", "reverse", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "reverse, 20 fresh sequences of length 1-10" in out and "exact match:" in out and "token accuracy:" in out
    code, text = _run(capsys, "evaluate", str(path), "--min-seq-len", "12", "--max-seq-len", "11")
    assert code == 2 and "must not exceed" in text


@pytest.mark.slow
def test_the_module_runs_as_a_script():
    result = subprocess.run([sys.executable, "-m", "transformer", "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "python -m transformer" in result.stdout
