"""The English-German task of chapter 10 on the command line: ``python -m transformer train --task translation`` and
``evaluate``. It needs Babel, num2words and tokenizers (the live extra): marked ``live``, left out of ``make check``."""

from __future__ import annotations

import functools

import pytest
import torch

from transformer.checkpoint import atomic_save, read_checkpoint
from transformer.train import registry, translation
from transformer.train.cli import main
from transformer.train.resume import read_training_checkpoint
from transformer.train.subwords import SubwordVocabulary

pytestmark = pytest.mark.live  # needs the live extra: make test runs it, make check does not

SMALL = [
    "--task",
    "translation",
    "--steps",
    "4",
    "--batch-size",
    "16",
    "--eval-size",
    "40",
    "--device",
    "cpu",
    "--no-progress",
]


@pytest.fixture
def small_data(monkeypatch):
    """The chapter's data with 600 training pairs and 200 subword ids instead of 40,000 and 1,000: the same code,
    fast enough for a test."""
    monkeypatch.setattr(
        translation, "translation_data", functools.partial(translation.translation_data, n_train=600, vocab_size=200)
    )


def _run(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out + err


def test_the_help_gives_the_chapters_recipe(capsys) -> None:
    assert registry.get_task("translation").train_config() == translation.translation_train_config()
    code, text = _run(capsys, "train", "--help")
    text = " ".join(text.split())  # as argparse wraps it for the terminal's width
    assert code == 0 and "1200 for translation" in text and "128 for translation" in text


@pytest.mark.slow
def test_translation_trains_and_evaluate_reports_the_chapters_scores(capsys, tmp_path, small_data) -> None:
    path = tmp_path / "en-de.pt"
    assert main(["train", *SMALL, "--out", str(path)]) == 0
    out = capsys.readouterr().out
    assert "training the English-to-German model of chapter 10 for 4 steps" in out
    assert "held-out test examples (40, of values never seen in training): exact match" in out
    assert "greedy decoding: exact match" in out and ", BLEU " in out and ", chrF " in out
    assert "exact match by kind: number " in out
    metadata = read_checkpoint(path)["metadata"]
    assert metadata["task"] == "translation" and metadata["train_config"]["steps"] == 4
    assert metadata["run_config"]["seed"] == 0 and metadata["run_config"]["device"] == "cpu"
    assert metadata["data"]["n_train"] == 600 and metadata["data"]["n_test"] == 40
    assert len(SubwordVocabulary.from_json(metadata["vocab"])) == 200  # the vocabulary travels with the model
    assert set(metadata["scores"]["exact_match_by_kind"]) <= set(translation.KINDS)

    assert main(["evaluate", str(path), "--device", "cpu", "--n", "40"]) == 0  # the same pairs, the same scores
    out = capsys.readouterr().out
    assert "translation, 40 held-out test examples (of values never seen in training)" in out
    assert f"exact match of the subword ids: {metadata['result']['exact_match']:.1%}" in out
    greedy = (
        f"greedy decoding: exact match {metadata['scores']['exact_match']:.1%}, BLEU {metadata['scores']['bleu']:.1f}"
    )
    assert greedy in out
    assert main(["evaluate", str(path), "--device", "cpu", "--n", "25", "--beam-size", "4"]) == 0
    out = capsys.readouterr().out
    assert "translation, 25 held-out test examples" in out and "beam search of 4: exact match" in out


@pytest.mark.slow
def test_evaluate_refuses_other_test_pairs_and_options_that_do_not_apply(capsys, tmp_path, small_data) -> None:
    path = tmp_path / "en-de.pt"
    assert main(["train", *SMALL, "--steps", "1", "--out", str(path)]) == 0
    capsys.readouterr()
    for option in (["--seed", "1"], ["--min-seq-len", "2"], ["--max-seq-len", "9"]):
        code, text = _run(capsys, "evaluate", str(path), *option)
        assert code == 2 and f"{' '.join(option)}: the translation task is scored on its held-out test examples" in text
    code, text = _run(capsys, "evaluate", str(path), "--task", "dates")
    assert code == 2 and "this checkpoint was trained on 'translation'" in text

    checkpoint = read_checkpoint(path)
    checkpoint["metadata"]["data"]["test_sha256"] = "0" * 16  # as if Babel or num2words now wrote them otherwise
    atomic_save(checkpoint, tmp_path / "other.pt")
    code, text = _run(capsys, "evaluate", str(tmp_path / "other.pt"))
    assert code == 2 and "trained beside test pairs that this machine writes differently" in text
    assert "babel " in text and "train it again here" in text


@pytest.mark.slow
def test_a_resumed_translation_run_ends_as_the_uninterrupted_run(
    capsys, tmp_path, small_data, keep_every_checkpoint, monkeypatch
) -> None:
    """Saved after step 3 of 6 and resumed from there, the run ends with the whole run's weights, bit for bit, and
    the same scores; the training checkpoint is the one the chapter's train_translation writes (task "translation")."""
    monkeypatch.chdir(tmp_path)
    whole = ["train", *SMALL, "--steps", "6", "--save-every", "3"]
    assert main([*whole, "--out", "whole.pt"]) == 0
    assert read_training_checkpoint("whole.resume.3.pt")["task"] == "translation"
    assert main([*whole, "--out", "run.pt", "--resume", "whole.resume.3.pt"]) == 0
    capsys.readouterr()
    a, b = read_checkpoint("whole.pt"), read_checkpoint("run.pt")
    assert a["state_dict"].keys() == b["state_dict"].keys()
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    assert a["metadata"]["result"] == b["metadata"]["result"] and a["metadata"]["scores"] == b["metadata"]["scores"]

    code, text = _run(capsys, *whole, "--batch-size", "8", "--out", "other.pt", "--resume", "whole.resume.3.pt")
    assert code == 2 and "--resume: cannot resume from 'whole.resume.3.pt': it belongs to another run" in text
    assert "training setting batch_size: 16 in the checkpoint, 8 here" in text and "data batch_size" in text
    code, text = _run(capsys, *whole, "--seed", "1", "--out", "other.pt", "--resume", "whole.resume.3.pt")
    assert code == 2 and "run setting seed: 0 in the checkpoint, 1 here" in text and "data text_sha256" in text
    dates = ["train", "--task", "dates", "--steps", "6", "--batch-size", "16", "--device", "cpu", "--no-progress"]
    code, text = _run(capsys, *dates, "--out", "dates.pt", "--resume", "whole.resume.3.pt")
    assert code == 2 and "task: 'translation' in the checkpoint, 'dates' here" in text
