"""transformer_book.runs: a run is trained once (a study's results computed once), kept under a key of everything that
decides it, and loaded as it was."""

from __future__ import annotations

import dataclasses
import datetime
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch

from transformer.train import History, RunConfig, TaskConfig, TrainConfig, train_task
from transformer.train.evaluation import EvalResult
from transformer.train.tokenizer import Vocabulary
from transformer_book import i18n, runs
from transformer_book.runs import kept, run_key, run_path, runs_folder, trained

ROOT = Path(__file__).resolve().parents[2]
TINY = TrainConfig(steps=4, batch_size=8, warmup=1, eval_every=2)  # a run of a fraction of a second
TASK = TaskConfig("copy", eval_size=16)
CALLS: list[tuple] = []  # what counted_training was called with


def counted_training(data, config, run, progress=False):
    """train_task, noting each call: what a test reads to tell a training from a load."""
    CALLS.append((data, config, run))
    return train_task(data, config, run, progress=progress)


def training_left_in_train_mode(data, config, run, progress=False):
    model, history = train_task(data, config, run, progress=progress)
    return model.train(), history


@pytest.fixture(autouse=True)
def folder(tmp_path, monkeypatch) -> Path:
    """Every test keeps its runs in a folder of its own, and counts its own trainings."""
    monkeypatch.setenv(runs.RUNS_ENV, str(tmp_path / "runs"))
    CALLS.clear()
    return tmp_path / "runs"


def outputs(model) -> torch.Tensor:
    batch = TASK.eval_batches()[0]
    with torch.no_grad():
        return model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)


def test_a_second_call_loads_the_run_with_the_same_outputs_history_device_and_mode(folder, capsys):
    model, history = trained(counted_training, TASK, TINY, RunConfig(seed=3, device="cpu"))
    assert len(CALLS) == 1 and capsys.readouterr().out == ""  # training says nothing of its own
    path = run_path(counted_training, TASK, TINY, RunConfig(seed=3, device="cpu"))
    assert path.parent == folder and path.is_file()
    rng = torch.get_rng_state()
    loaded, loaded_history = trained(counted_training, TASK, TINY, RunConfig(seed=3, device="cpu"))
    assert len(CALLS) == 1, "the second call trained again"
    said = capsys.readouterr().out
    assert f"loaded the copy model trained earlier with these settings ({runs._shown(path)}; delete it" in said
    assert loaded is not model and torch.equal(outputs(loaded), outputs(model))
    assert loaded_history == history and isinstance(loaded_history, History)
    assert loaded_history.loss == history.loss and loaded_history.seconds == history.seconds
    assert loaded.training is model.training is False and next(loaded.parameters()).device == torch.device("cpu")
    assert torch.equal(torch.get_rng_state(), rng), "loading drew from the global generator"


def test_a_run_left_in_train_mode_is_loaded_in_train_mode():
    model, _ = trained(training_left_in_train_mode, TASK, TINY, RunConfig(device="cpu"))
    loaded, _ = trained(training_left_in_train_mode, TASK, TINY, RunConfig(device="cpu"))
    assert model.training and loaded.training


def test_a_model_of_the_book_kit_is_kept_and_loaded_as_its_own_class():
    from transformer_book.descendants import GPT, GPTConfig, small_gpt_config, train_gpt

    config = small_gpt_config(n_layers=1)
    model, history = trained(train_gpt, config, TASK, TINY, RunConfig(seed=3, device="cpu"), progress=False)
    loaded, loaded_history = trained(train_gpt, config, TASK, TINY, RunConfig(seed=3, device="cpu"), progress=False)
    rows = torch.tensor([[3, 4, 5, 1, 3, 4]])
    assert type(loaded) is GPT and type(loaded.config) is GPTConfig and loaded.config == model.config
    assert loaded is not model and torch.equal(loaded(rows), model(rows)) and loaded_history == history
    assert loaded.lm_head.weight is loaded.tok_embed.weight  # still tied, as a freshly built GPT is


def test_the_same_settings_written_differently_are_one_run():
    first = run_key(train_task, "copy", None, RunConfig(seed=0, device="cpu"))
    assert run_key(train_task, "copy", run=RunConfig(seed=0, device="cpu")) == first  # positional or by name
    assert run_key(train_task, data="copy", run=RunConfig(seed=0, device="cpu"), progress=True) == first
    assert run_key(train_task, "copy", run=RunConfig(seed=0, device="cpu"), progress="text") == first
    # progress is how a run is shown, not what it learns: a run shown with a bar loads where one ran without
    trained(counted_training, TASK, TINY, RunConfig(device="cpu"), progress=False)
    trained(counted_training, TASK, TINY, RunConfig(device="cpu"), progress="text")
    assert len(CALLS) == 1


@pytest.mark.parametrize(
    "change",
    [
        dict(run=RunConfig(seed=1, device="cpu")),
        dict(config=dataclasses.replace(TINY, lr=TINY.lr * (1 + 1e-12))),  # the last bits of a float count
        dict(data=dataclasses.replace(TASK, task="reverse")),
    ],
    ids=["seed", "learning rate", "task"],
)
def test_a_changed_argument_trains_again(change):
    settings = dict(data=TASK, config=TINY, run=RunConfig(device="cpu"))
    trained(counted_training, **settings)
    trained(counted_training, **{**settings, **change})
    assert len(CALLS) == 2
    trained(counted_training, **{**settings, **change})
    assert len(CALLS) == 2


def test_a_changed_package_source_trains_again(monkeypatch):
    trained(counted_training, TASK, TINY, RunConfig(device="cpu"))
    monkeypatch.setattr(runs, "package_source", lambda: "an edited transformer/")
    trained(counted_training, TASK, TINY, RunConfig(device="cpu"))
    assert len(CALLS) == 2


def test_the_package_source_digest_follows_every_python_file_of_the_package(tmp_path, monkeypatch):
    package = tmp_path / "transformer"
    (package / "train").mkdir(parents=True)
    (package / "__init__.py").write_text("x = 1\n")
    (package / "train" / "loop.py").write_text("steps = 500\n")
    monkeypatch.setattr(runs, "transformer", types.SimpleNamespace(__file__=str(package / "__init__.py")))
    before = runs.package_source()
    (package / "notes.txt").write_text("not code")
    assert runs.package_source() == before
    (package / "train" / "loop.py").write_text("steps = 400\n")
    edited = runs.package_source()
    assert edited != before
    (package / "train" / "loop.py").write_text("steps = 400\r\n")  # line endings are not an edit
    assert runs.package_source() == edited
    (package / "train" / "new.py").write_text("")
    assert runs.package_source() != edited


def test_retrain_trains_even_when_the_run_is_kept_and_keeps_the_new_one(capsys):
    trained(counted_training, TASK, TINY, RunConfig(device="cpu"))
    model, history = trained(counted_training, TASK, TINY, RunConfig(device="cpu"), retrain=True)
    assert len(CALLS) == 2 and "loaded" not in capsys.readouterr().out
    loaded, loaded_history = trained(counted_training, TASK, TINY, RunConfig(device="cpu"))
    assert len(CALLS) == 2 and loaded_history == history  # its timings are the second run's


def test_a_run_trained_elsewhere_is_loaded_from_the_folder_named_for_it_the_first_trained_of_them(
    tmp_path, folder, monkeypatch, capsys
):
    """TRANSFORMER_BOOK_RUNS_FROM: a run there with the same settings, trained under another PyTorch or on another
    machine, is loaded (the oldest, when there are several) and the message names its PyTorch; another setting, or no
    such folder, trains here."""
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv(runs.RUNS_ENV, str(elsewhere))
    _, here_history = trained(counted_training, TASK, TINY, RunConfig(seed=1, device="cpu"))  # this machine's run
    here = run_path(counted_training, TASK, TINY, RunConfig(seed=1, device="cpu"))
    monkeypatch.setattr(runs, "_machine", lambda: "cpu another-machine")
    monkeypatch.setattr(runs.torch, "__version__", "2.99.0")
    _, first_history = trained(counted_training, TASK, TINY, RunConfig(seed=1, device="cpu"))
    first = run_path(counted_training, TASK, TINY, RunConfig(seed=1, device="cpu"))
    monkeypatch.undo()
    assert first != here and first.name.split("-")[0] == here.name.split("-")[0] and len(CALLS) == 2
    os.utime(first, ns=(here.stat().st_mtime_ns - 10**9,) * 2)  # trained first
    monkeypatch.setenv(runs.RUNS_ENV, str(folder))
    capsys.readouterr()

    _, history = trained(counted_training, TASK, TINY, RunConfig(seed=1, device="cpu"))  # no folder named: trains
    assert len(CALLS) == 3 and "loaded" not in capsys.readouterr().out

    monkeypatch.setenv(runs.FROM_ENV, str(elsewhere))
    _, loaded_history = trained(counted_training, TASK, TINY, RunConfig(seed=1, device="cpu"))
    assert len(CALLS) == 3 and loaded_history == first_history != here_history  # the first trained: its timings
    said = capsys.readouterr().out
    assert "loaded the copy model trained earlier with these settings under PyTorch 2.99.0" in said, said
    trained(counted_training, TASK, TINY, RunConfig(seed=2, device="cpu"))  # other settings: trained here
    assert len(CALLS) == 4 and not list(
        elsewhere.glob(f"{run_key(counted_training, TASK, TINY, RunConfig(seed=2, device='cpu'))}*")
    )


def counted_study(seeds, steps=2):
    """A study's results: runs' histories and evaluations by setting, a tuple, numbers and None."""
    CALLS.append((seeds, steps))
    histories = [History(step=[1, steps], loss=[2.5, 0.1 * seed], seconds=0.25) for seed in seeds]
    return {
        ("copy", 0.1): histories,
        "scores": EvalResult(exact_match=0.5, token_accuracy=0.75, loss=1 / 3, n=16),
        3: (1, 2.5, None, "x", [True]),
    }


def test_a_study_is_computed_once_and_its_results_loaded_as_they_were(folder, capsys):
    results = kept(counted_study, (0, 1))
    assert len(CALLS) == 1 and capsys.readouterr().out == "" and run_path(counted_study, (0, 1)).is_file()
    loaded = kept(counted_study, (0, 1))
    assert len(CALLS) == 1, "the second call computed it again"
    assert loaded == results and list(loaded) == list(results) and type(loaded[3]) is tuple
    assert isinstance(loaded[("copy", 0.1)][1], History) and isinstance(loaded["scores"], EvalResult)
    said = capsys.readouterr().out
    assert "loaded the results computed earlier with these settings" in said and str(folder) in said, said
    kept(counted_study, (0, 1), steps=3)  # another setting: computed
    assert len(CALLS) == 2


def test_results_computed_elsewhere_are_loaded_and_say_under_which_pytorch(tmp_path, monkeypatch, capsys):
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv(runs.RUNS_ENV, str(elsewhere))
    monkeypatch.setattr(runs.torch, "__version__", "2.99.0")
    results = kept(counted_study, (2,))
    monkeypatch.undo()
    monkeypatch.setenv(runs.RUNS_ENV, str(tmp_path / "here"))
    monkeypatch.setenv(runs.FROM_ENV, str(elsewhere))
    capsys.readouterr()
    assert kept(counted_study, (2,)) == results and len(CALLS) == 1
    assert "computed earlier with these settings under PyTorch 2.99.0" in capsys.readouterr().out


def a_tensor_study():
    return {"weights": [torch.zeros(2)]}


def test_a_result_that_cannot_be_kept_is_named_and_nothing_is_saved(folder):
    with pytest.raises(TypeError) as raised:
        kept(a_tensor_study)
    assert "results['weights'][0] is a torch.Tensor" in str(raised.value), str(raised.value)
    assert not list(folder.glob("*.pt"))


def test_a_file_naming_a_class_from_elsewhere_is_not_loaded(folder):
    kept(counted_study, (0,))
    path = run_path(counted_study, (0,))
    saved = torch.load(path, weights_only=True)
    saved["results"] = {"dataclass": "subprocess.Popen", "fields": {"args": "true"}}
    torch.save(saved, path)
    with pytest.raises(ValueError, match="names the class subprocess.Popen, outside transformer and transformer_book"):
        kept(counted_study, (0,))


def test_a_change_anywhere_in_the_book_kit_changes_the_key_of_a_kit_function(monkeypatch):
    from transformer_book.regularisation import regularisation_runs

    before = run_key(regularisation_runs, "copy")
    monkeypatch.setattr(runs, "kit_source", lambda: "an edited transformer_book/")
    assert run_key(regularisation_runs, "copy") != before


@dataclasses.dataclass(frozen=True)
class Data:
    """Stands in for the dates and translation data: a dataclass of lists, a set, dates and a vocabulary."""

    texts: list[str]
    words: frozenset[str]
    days: tuple[datetime.date, ...]
    vocab: Vocabulary
    weights: torch.Tensor


def data(tokens=("march", "april", "may")) -> Data:
    words = frozenset(f"word{i}" for i in range(50))  # iterated in an order that differs from process to process
    days = (datetime.date(2024, 2, 29), datetime.date(1999, 12, 31))
    return Data(["the first of march"], words, days, Vocabulary(list(tokens)), torch.arange(6.0).reshape(2, 3))


def train_on(data, progress=False):
    raise AssertionError("run_key does not train")


def key_of(value) -> str:
    return run_key(train_on, value)


def test_data_is_keyed_by_its_content_not_by_its_repr_or_its_address():
    assert key_of(data()) == key_of(data())
    other_tokens = data(("march", "april", "june"))
    assert repr(other_tokens.vocab) == repr(data().vocab)  # Vocabulary's repr holds its size only
    assert key_of(other_tokens) != key_of(data())
    assert key_of(dataclasses.replace(data(), weights=torch.arange(6.0).reshape(3, 2))) != key_of(data())
    assert key_of(dataclasses.replace(data(), days=(datetime.date(2024, 2, 28),))) != key_of(data())
    assert key_of({"a": 1, "b": 2}) == key_of({"b": 2, "a": 1}) != key_of({"a": 2, "b": 1})
    assert key_of([1, 2]) != key_of((1, 2)) and key_of(1) != key_of(1.0) and key_of(1) != key_of(True)


def test_the_key_is_the_same_in_another_process_with_another_hash_seed(tmp_path):
    script = tmp_path / "key.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            import test_runs
            print(test_runs.key_of(test_runs.data()))
            """
        )
    )
    keys = {
        subprocess.run(
            [sys.executable, str(script)],
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert keys == {key_of(data())}


WORKER = """
import sys, time
from pathlib import Path

from transformer.train import RunConfig, TaskConfig, TrainConfig, train_task
from transformer_book.runs import trained

folder = Path(sys.argv[1])


def slow_training(data, config, run, progress=False):
    with open(folder / "trainings", "a") as count:
        count.write("trained\\n")
    time.sleep(1.5)  # long enough for the other process to ask for the same run meanwhile
    return train_task(data, config, run, progress=progress)


(folder / f"ready-{sys.argv[2]}").touch()
while len(list(folder.glob("ready-*"))) < 2:  # both start asking at once
    time.sleep(0.01)
model, history = trained(slow_training, TaskConfig("copy", eval_size=16),
                         TrainConfig(steps=4, batch_size=8, warmup=1, eval_every=2), RunConfig(device="cpu"))
print("weights", sum(float(p.sum()) for p in model.parameters()), history.loss)
"""


def test_two_processes_asking_for_one_run_at_once_train_it_once_and_get_the_same_run(tmp_path, folder):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), str(n)], env=env, stdout=subprocess.PIPE, text=True
        )
        for n in range(2)
    ]
    out = [worker.communicate(timeout=300)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    assert (tmp_path / "trainings").read_text() == "trained\n", "both processes trained the run"
    results = [next(line for line in text.splitlines() if line.startswith("weights")) for text in out]
    assert results[0] == results[1]
    said = "\n".join(out)
    assert "waiting for another process that is training the same model" in said and "loaded the copy model" in said
    assert sorted(p.suffix for p in folder.iterdir()) == [".lock", ".pt"]  # no temporary file left behind


def test_the_folder_is_the_environment_s_else_the_user_cache(monkeypatch, tmp_path, folder):
    trained(counted_training, TASK, TINY, RunConfig(device="cpu"))
    assert len(list(folder.glob("*.pt"))) == 1
    monkeypatch.setenv(runs.RUNS_ENV, "~/elsewhere")
    assert runs_folder() == Path.home() / "elsewhere"
    monkeypatch.delenv(runs.RUNS_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert runs_folder() == tmp_path / "cache" / "transformer-interactive" / "runs"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # not absolute: ignored, as the XDG specification says
    assert runs_folder() == Path.home() / ".cache" / "transformer-interactive" / "runs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert runs_folder() == Path.home() / ".cache" / "transformer-interactive" / "runs"


def test_the_message_is_in_the_reader_s_language(monkeypatch, capsys):
    trained(counted_training, TASK, TINY, RunConfig(device="cpu"))
    monkeypatch.setattr(i18n, "_language", "zh")
    trained(counted_training, TASK, TINY, RunConfig(device="cpu"))
    assert "已载入先前以相同设置训练好的复制模型" in capsys.readouterr().out


def test_a_run_is_named_by_its_task_or_its_function():
    from transformer.train.dates import train_dates

    assert runs._run_name(train_task, "reverse") == "reverse"
    assert runs._run_name(train_task, TaskConfig("sort")) == "sort"
    assert runs._run_name(train_dates, None) == "dates"


def not_a_pair(data, progress=False):
    return "model", "history"


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: trained("train_task", "copy"), TypeError, ["train_fn must be a function", "'train_task'"]),
        (lambda: trained(train_task, "copy", retrain="yes"), TypeError, ["retrain must be True or False", "'yes'"]),
        (lambda: trained(train_task, "copy", steps=3), TypeError, ["train_task cannot be called", "steps"]),
        (lambda: trained(lambda data: None, "copy"), TypeError, ["train_fn must be a function defined at the top"]),
        (
            lambda: trained(train_task, "copy", model=torch.nn.Linear(2, 2)),
            TypeError,
            ["model is a Linear", "builds its own model"],
        ),
        (
            lambda: trained(train_task, "copy", config=object()),
            TypeError,
            ["config is a object", "cannot read to make a key"],
        ),
        (
            lambda: key_of({"lengths": [1, types.SimpleNamespace()]}),
            TypeError,
            ["data['lengths'][1] is a SimpleNamespace"],
        ),
        (lambda: trained(not_a_pair, "copy"), TypeError, ["must return (model, History)", "(str, str)"]),
    ],
    ids=["not callable", "retrain", "unknown argument", "lambda", "model", "object", "nested", "result"],
)
def test_bad_input_is_named_with_what_was_expected_and_what_came(call, error, words):
    with pytest.raises(error) as raised:
        call()
    assert all(word in str(raised.value) for word in words), str(raised.value)
