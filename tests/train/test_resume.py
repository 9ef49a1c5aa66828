"""Training survives interruption: resumable data streams, training checkpoints that only their own run may resume,
and resumed runs that end with the uninterrupted run's weights, bit for bit (in one process, on the command line,
killed with SIGKILL or stopped with Ctrl-C, data-parallel and under bfloat16)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from transformer import Transformer, save_checkpoint
from transformer.checkpoint import read_checkpoint
from transformer.train.bucketing import BatchStream, batch_stream, length_batches, text_batch
from transformer.train.cli import main
from transformer.train.config import RunConfig, TrainConfig
from transformer.train.dates import dates_data, train_dates
from transformer.train.loop import History, train
from transformer.train.recipes import small_model_config, train_task
from transformer.train.resume import (
    FORMAT,
    Checkpointer,
    ResumeError,
    RunState,
    TrainingInterrupted,
    read_training_checkpoint,
    resume_differences,
    save_training_checkpoint,
)
from transformer.train.schedule import make_scheduler
from transformer.train.tasks import TaskConfig, TaskStream, task_batch
from transformer.train.tokenizer import Vocabulary

TINY = dict(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
DATA = TaskConfig("copy", eval_size=20)
CONFIG = TrainConfig(steps=12, batch_size=16, eval_every=4)
RUN = RunConfig(seed=3, device="cpu")


def _train(model: Transformer, config: TrainConfig = CONFIG, data: TaskConfig = DATA, **run) -> History:
    """``model`` trained on ``data`` with ``config``, as :data:`RUN` with ``run`` in place of its settings."""
    return train_task(data, config, replace(RUN, **run), model=model, progress=False)[1]


def _same_batches(a, b) -> bool:
    return torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out) and torch.equal(a.tgt_mask, b.tgt_mask)


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


# ---------------------------------------------------------------------------------------------------------------
# Data streams that can be saved and resumed


def test_a_task_stream_draws_what_task_batch_draws_and_resumes_where_it_was_saved() -> None:
    stream, rng = TaskStream("reverse", 8, rng=torch.Generator().manual_seed(1)), torch.Generator().manual_seed(1)
    for _ in range(3):
        assert _same_batches(next(stream), task_batch("reverse", 8, rng=rng))
    state = stream.state_dict()
    ahead = [next(stream) for _ in range(3)]
    restored = TaskStream("reverse", 8, rng=torch.Generator().manual_seed(99))
    restored.load_state_dict(state)
    assert all(_same_batches(a, b) for a, b in zip(ahead, (next(restored) for _ in range(3)), strict=True))
    with pytest.raises(ValueError, match="task: 'reverse' saved, 'sort' here; .*vocab_size: 13 saved, 20 here"):
        TaskStream("sort", 8, vocab_size=20, rng=torch.Generator()).load_state_dict(state)
    with pytest.raises(TypeError, match="rng must be a torch.Generator"):
        TaskStream("copy", 8, rng=None)


def _pairs(n: int = 50) -> tuple[list[str], list[str], object, object]:
    data = dates_data(n_train=n, n_test=5)
    return [e.text for e in data.train], [e.iso for e in data.train], data.source_vocab, data.target_vocab


def test_batch_stream_yields_the_batches_of_the_generator_it_replaced() -> None:
    """batch_stream used to be a generator function: bucket an epoch with length_batches, serve it, repeat."""
    sources, targets, source_vocab, target_vocab = _pairs()
    lengths = [len(source_vocab.tokenize(text)) for text in sources]

    def before(rng: torch.Generator):
        while True:
            for batch in length_batches(lengths, 16, rng, pool=2):
                yield text_batch([sources[i] for i in batch], [targets[i] for i in batch], source_vocab, target_vocab)

    old, new = (
        before(torch.Generator().manual_seed(4)),
        batch_stream(sources, targets, source_vocab, target_vocab, 16, torch.Generator().manual_seed(4), pool=2),
    )
    assert isinstance(new, BatchStream)
    assert all(_same_batches(next(old), next(new)) for _ in range(4 * 3 + 1))  # four batches an epoch, three epochs


@pytest.mark.parametrize("served", [0, 2, 4, 5, 9])  # before the first epoch, inside one, at its end, after it
def test_a_restored_batch_stream_serves_exactly_what_the_saved_one_would_have(served: int) -> None:
    sources, targets, source_vocab, target_vocab = _pairs()
    stream = BatchStream(sources, targets, source_vocab, target_vocab, 16, torch.Generator().manual_seed(5), pool=2)
    for _ in range(served):
        next(stream)
    state = stream.state_dict()
    ahead = [next(stream) for _ in range(6)]
    restored = BatchStream(sources, targets, source_vocab, target_vocab, 16, torch.Generator().manual_seed(0), pool=2)
    restored.load_state_dict(state)
    assert all(_same_batches(a, next(restored)) for a in ahead)


def test_a_batch_stream_refuses_the_state_of_other_pairs_and_needs_its_own_generator() -> None:
    sources, targets, source_vocab, target_vocab = _pairs()
    state = BatchStream(sources, targets, source_vocab, target_vocab, 16, torch.Generator()).state_dict()
    other = BatchStream(
        sources[:-1] + ["the first of May, 1999"], targets, source_vocab, target_vocab, 16, torch.Generator()
    )
    with pytest.raises(ValueError, match="text_sha256: '[0-9a-f]{16}' saved, '[0-9a-f]{16}' here"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match="batch_size: 16 saved, 8 here"):
        BatchStream(sources, targets, source_vocab, target_vocab, 8, torch.Generator()).load_state_dict(state)
    relearned = Vocabulary(source_vocab.itos[:3:-1], "word")  # the same words (after the 4 special ids), other ids
    with pytest.raises(ValueError, match="vocab_sha256: '[0-9a-f]{16}' saved, '[0-9a-f]{16}' here") as error:
        BatchStream(sources, targets, relearned, target_vocab, 16, torch.Generator()).load_state_dict(state)
    assert "text_sha256" not in str(error.value)
    global_rng = BatchStream(sources, targets, source_vocab, target_vocab, 16)
    with pytest.raises(TypeError, match="cannot be saved; give it its own rng"):
        global_rng.state_dict()


# ---------------------------------------------------------------------------------------------------------------
# Training checkpoints: refused when they belong to another run


def _untrained_checkpoint(path: Path) -> Path:
    """A training checkpoint of the run of :data:`DATA`, :data:`CONFIG` and :data:`RUN` that has not taken a step
    (nothing is trained, so the test stays fast)."""
    torch.manual_seed(RUN.seed)
    model = Transformer(small_model_config(**TINY))
    optimizer = torch.optim.Adam(model.parameters(), lr=CONFIG.lr)
    stream = DATA.stream(CONFIG.batch_size, RUN.seed)
    scheduler = make_scheduler(optimizer, CONFIG.schedule, CONFIG.warmup, CONFIG.steps)
    state = RunState(DATA.task, model, CONFIG, RUN, optimizer, scheduler, stream, torch.device("cpu"))
    return save_training_checkpoint(path, 0, state, History().to_dict())


def test_a_checkpoint_of_another_run_is_refused_with_every_difference_named(tmp_path: Path) -> None:
    path = _untrained_checkpoint(tmp_path / "run.pt")
    assert read_training_checkpoint(path)["format"] == FORMAT
    other = replace(CONFIG, steps=24, lr=1e-3)
    with pytest.raises(ResumeError) as error:
        _train(
            Transformer(small_model_config(**{**TINY, "d_ff": 64})),
            other,
            TaskConfig("reverse"),
            seed=4,
            bf16=True,
            resume_from=path,
        )
    message = str(error.value)
    for difference in (
        "task: 'copy' in the checkpoint, 'reverse' here",
        "training setting steps: 12 in the checkpoint, 24 here",
        f"training setting lr: {CONFIG.lr!r} in the checkpoint, 0.001 here",
        "run setting seed: 3 in the checkpoint, 4 here",
        "run setting bf16: False in the checkpoint, True here",
        "model setting d_ff: 32 in the checkpoint, 64 here",
        "data task: 'copy' in the checkpoint, 'reverse' here",
    ):
        assert difference in message, message
    assert message.startswith(f"cannot resume from {str(path)!r}: it belongs to another run") and "\n" not in message


def test_where_and_how_fast_a_run_goes_may_change_on_resume(tmp_path: Path) -> None:
    checkpoint = read_training_checkpoint(_untrained_checkpoint(tmp_path / "run.pt"))
    moved = replace(
        RUN,
        device="auto",
        threads=2,
        compile=True,
        distributed=True,
        save_to=tmp_path / "elsewhere.pt",
        save_every=3,
        resume_from=tmp_path / "run.pt",
    )
    stream = TaskStream("copy", 16, rng=torch.Generator())
    model = Transformer(small_model_config(**TINY))
    state = RunState("copy", model, CONFIG, moved, None, None, stream, torch.device("cpu"))  # nothing restored here
    assert resume_differences(checkpoint, state) == []


def test_a_checkpoint_of_another_package_version_is_refused(tmp_path: Path, monkeypatch) -> None:
    path = _untrained_checkpoint(tmp_path / "run.pt")
    monkeypatch.setattr("transformer.train.resume.__version__", "9.9.9")
    with pytest.raises(ResumeError, match=r"package version: '0\.1\.0' in the checkpoint, '9\.9\.9' here"):
        _train(Transformer(small_model_config(**TINY)), resume_from=path)


def test_resuming_from_a_model_checkpoint_or_nothing_says_which_file_to_use(tmp_path: Path) -> None:
    model = save_checkpoint(Transformer(small_model_config(**TINY)), tmp_path / "copy.pt")
    with pytest.raises(ResumeError, match="is a model checkpoint .* copy.pt -> copy.resume.pt"):
        _train(Transformer(small_model_config(**TINY)), resume_from=model)
    with pytest.raises(ResumeError, match="cannot resume: no checkpoint at"):
        _train(Transformer(small_model_config(**TINY)), resume_from=tmp_path / "missing.pt")
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(ResumeError, match="is not a training checkpoint"):
        _train(Transformer(small_model_config(**TINY)), resume_from=tmp_path / "other.pt")


def test_checkpointing_needs_a_path_and_batches_that_can_be_saved(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="save_every=5 needs save_to"):
        RunConfig(save_every=5)
    with pytest.raises(ValueError, match="save_every must be an int >= 1; got 0"):
        RunConfig(save_to=tmp_path / "run.pt", save_every=0)
    generator = (task_batch("copy", 16) for _ in range(12))
    with pytest.raises(TypeError, match="batches must be an iterator that can be saved.*got generator"):
        train(
            Transformer(small_model_config(**TINY)),
            generator,
            [task_batch("copy", 4)],
            CONFIG,
            replace(RUN, save_to=tmp_path / "run.pt"),
            progress=False,
        )


@pytest.fixture
def sigint_as_in_a_terminal():
    """SIGINT raises KeyboardInterrupt, as Python sets it up in a process started from a terminal, whatever this one
    inherited: a background job of a script or of `nohup ... &` in one starts with SIGINT ignored, and so do its
    pytest workers."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("sigint_as_in_a_terminal")
def test_a_signal_asks_for_a_save_and_a_stop_after_the_step_and_a_second_one_stops_at_once(tmp_path: Path) -> None:
    saved: list[int] = []
    checkpointer = Checkpointer(tmp_path / "run.pt", 4, 100, saved.append, torch.device("cpu"), distributed=False)
    before = signal.getsignal(signal.SIGINT)
    with checkpointer:
        assert [checkpointer.step_done(step) for step in range(1, 6)] == [False] * 5 and saved == [4]  # every 4 steps
        signal.raise_signal(signal.SIGINT)  # the stop button: nothing stops yet
        assert checkpointer.stop_requested and saved == [4]
        assert checkpointer.step_done(6) and saved == [4, 6] and checkpointer.stopped_at == 6  # saved, and stop
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)  # pressed again: at once, as without a checkpointer
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(TrainingInterrupted, match="training stopped after step 6 of 100 and saved"):
        checkpointer.raise_if_stopped()


def test_a_run_started_with_sigint_ignored_keeps_ignoring_it_and_sigterm_still_saves_it(tmp_path: Path) -> None:
    """A shell starts a script's background jobs with SIGINT ignored, so that the terminal's Ctrl-C does not reach
    them (Python itself then installs no KeyboardInterrupt); training keeps it so, and stops on SIGTERM (kill PID)."""
    terminated: list[int] = []
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda number, frame: terminated.append(number))  # stands in for the default: exit
    try:
        saved: list[int] = []
        with Checkpointer(
            tmp_path / "run.pt", None, 100, saved.append, torch.device("cpu"), distributed=False
        ) as checkpointer:
            signal.raise_signal(signal.SIGINT)
            assert not checkpointer.stop_requested and not checkpointer.step_done(1) and saved == []
            signal.raise_signal(signal.SIGTERM)
            assert checkpointer.stop_requested and checkpointer.step_done(2) and saved == [2] and terminated == []
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        signal.raise_signal(signal.SIGTERM)  # outside training: what it did before
        assert terminated == [signal.SIGTERM]
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


# ---------------------------------------------------------------------------------------------------------------
# Resumed runs end where uninterrupted runs end


@pytest.mark.slow
@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16"])
def test_a_resumed_run_ends_with_the_uninterrupted_runs_weights_bit_for_bit(
    tmp_path, keep_every_checkpoint, bf16
) -> None:
    torch.manual_seed(3)
    whole = Transformer(small_model_config(**TINY))
    history = _train(whole, bf16=bf16, save_to=tmp_path / "run.pt", save_every=5)  # saves at 5 and 10
    for step in (5, 10):
        resumed = Transformer(small_model_config(**TINY))  # other initial weights: the checkpoint replaces them
        again = _train(resumed, bf16=bf16, resume_from=tmp_path / f"run.{step}.pt")
        assert _same_weights(whole.state_dict(), resumed.state_dict())
        assert again.loss == history.loss and again.eval_exact_match == history.eval_exact_match
        assert again.step == list(range(1, 13)) and again.eval_step == [4, 8, 12]


@pytest.mark.slow
@pytest.mark.parametrize("saved_at", [4, 7])  # inside the first epoch of 7 batches, and at its end
def test_a_resumed_dates_run_continues_its_bucketed_stream(tmp_path, keep_every_checkpoint, saved_at) -> None:
    data = dates_data(n_train=100, n_test=20)
    config, run = TrainConfig(steps=10, batch_size=16, eval_every=5), RunConfig(seed=2, device="cpu")
    model, history = train_dates(
        data, config, replace(run, save_to=tmp_path / "run.pt", save_every=saved_at), progress=False
    )
    resumed, again = train_dates(
        data, config, replace(run, resume_from=tmp_path / f"run.{saved_at}.pt"), progress=False
    )
    assert _same_weights(model.state_dict(), resumed.state_dict()) and again.loss == history.loss
    assert read_training_checkpoint(tmp_path / f"run.{saved_at}.pt")["task"] == "dates"


# ---------------------------------------------------------------------------------------------------------------
# The command line: killed with SIGKILL, stopped with Ctrl-C, data-parallel

# Runs the command line in this process (SIGINT raising KeyboardInterrupt, as in a process started from a terminal, even
# where this test was started with SIGINT ignored); with KILL_AT_STEP, the process kills itself with SIGKILL as it starts that
# step (after the checkpoints of the steps before: nothing of the step in progress survives); with STORE, it first
# joins a gloo process group of WORLD_SIZE processes as RANK (a file store: nothing listens on the network).
RUNNER = """
import os, signal, sys
import torch.distributed as dist
from transformer.train import loop
from transformer.train.cli import main

signal.signal(signal.SIGINT, signal.default_int_handler)
kill_at, original, calls = int(os.environ.get("KILL_AT_STEP", 0)), loop.train_step, []

def train_step(*args, **kwargs):
    calls.append(1)
    if len(calls) == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)

loop.train_step = train_step
if "STORE" in os.environ:
    dist.init_process_group("gloo", init_method="file://" + os.environ["STORE"], rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]))
sys.exit(main(sys.argv[1:], prog="python -m transformer"))  # as `python -m transformer` runs it
"""
TIMEOUT = 240


def _launch(argv: list[str], folder: Path, ranks: int = 1, **environment: str) -> list[subprocess.Popen]:
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", **environment}
    if ranks > 1:
        env.update(STORE=str(folder / f"store-{time.monotonic_ns()}"), WORLD_SIZE=str(ranks))
    return [
        subprocess.Popen(
            [sys.executable, "-c", RUNNER, *argv],
            cwd=folder,
            env={**env, "RANK": str(rank)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(ranks)
    ]


def _finish(processes: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    results = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
            pytest.fail(f"a training process did not finish in {TIMEOUT} s")
        results.append((process.returncode, out, err))
    return results


def _train_argv(out: str, *options: str) -> list[str]:
    return [
        "train",
        "--task",
        "copy",
        "--steps",
        "12",
        "--batch-size",
        "16",
        "--eval-size",
        "50",
        "--device",
        "cpu",
        "--no-progress",
        "--save-every",
        "6",
        "--out",
        out,
        *options,
    ]


def _run_here_or_in(ranks: int, argv: list[str], folder: Path, monkeypatch) -> None:
    """Run the command line to completion: in this process, or data-parallel in ``ranks`` processes."""
    if ranks == 1:
        monkeypatch.chdir(folder)
        assert main(argv) == 0
        return
    results = _finish(_launch(argv, folder, ranks))
    assert [code for code, _, _ in results] == [0] * ranks, results


@pytest.mark.slow
@pytest.mark.parametrize("options", [[], ["--bf16"], ["--distributed"]], ids=["fp32", "bf16", "distributed"])
def test_a_run_killed_after_its_checkpoint_and_resumed_ends_as_the_whole_run(
    tmp_path, monkeypatch, capsys, options
) -> None:
    """The run is killed with SIGKILL in step 9, after its step-6 checkpoint; resumed from it, it ends with the same
    weights as a run of all 12 steps (bit for bit: one machine runs the same kernels on the same inputs in the same
    order, gloo's all-reduce of two ranks included) and the same final exact match."""
    ranks = 2 if "--distributed" in options else 1
    killed = _finish(_launch(_train_argv("run.pt", *options), tmp_path, ranks, KILL_AT_STEP="9"))
    assert [code for code, _, _ in killed] == [-signal.SIGKILL] * ranks
    assert not (tmp_path / "run.pt").exists() and read_training_checkpoint(tmp_path / "run.resume.pt")["step"] == 6
    _run_here_or_in(ranks, _train_argv("run.pt", *options, "--resume", "run.resume.pt"), tmp_path, monkeypatch)
    _run_here_or_in(ranks, _train_argv("whole.pt", *options), tmp_path, monkeypatch)
    a, b = read_checkpoint(tmp_path / "whole.pt"), read_checkpoint(tmp_path / "run.pt")
    assert _same_weights(a["state_dict"], b["state_dict"])
    assert a["metadata"]["result"] == b["metadata"]["result"]  # exact match, token accuracy and loss
    histories = [read_training_checkpoint(tmp_path / name)["history"] for name in ("whole.resume.pt", "run.resume.pt")]
    assert histories[0]["loss"] == histories[1]["loss"] and histories[0]["step"] == list(range(1, 13))


@pytest.mark.slow
def test_ctrl_c_saves_the_run_and_prints_the_command_that_resumes_it(tmp_path: Path) -> None:
    """SIGINT, as Ctrl-C sends it: the step in progress finishes, the run is saved, the command that resumes it is
    printed, and no traceback; run as printed, the command resumes it (and can be stopped and saved again)."""
    argv = first = [
        "train",
        "--task",
        "copy",
        "--steps",
        "100000",
        "--batch-size",
        "8",
        "--device",
        "cpu",
        "--no-progress",
        "--save-every",
        "3",
        "--out",
        "copy.pt",
    ]
    resumed_from = 0
    for attempt in range(2):
        checkpoint = tmp_path / "copy.resume.pt"
        before = checkpoint.stat().st_mtime_ns if checkpoint.exists() else None
        (process,) = _launch(argv, tmp_path)
        deadline = time.monotonic() + TIMEOUT
        while not checkpoint.exists() or checkpoint.stat().st_mtime_ns == before:  # a checkpoint of this run: training
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        ((code, out, err),) = _finish([process])
        step = read_training_checkpoint(checkpoint)["step"]
        assert code == 130 and "Traceback" not in err and "SIGINT: stopping after this step" in err, err
        assert f"interrupted after step {step} of 100000: saved the run to 'copy.resume.pt'; resume it with" in out
        assert step > resumed_from and not (tmp_path / "copy.pt").exists()
        command = out.strip().splitlines()[-1].split()
        assert command[:3] == ["python", "-m", "transformer"] and command[-2:] == ["--resume", "copy.resume.pt"]
        assert command[3:-2] == first
        if attempt == 1:
            history = read_training_checkpoint(checkpoint)["history"]
            assert history["step"] == list(range(1, step + 1))  # the steps before and after the interruption
        argv, resumed_from = command[3:], step
    assert not list(tmp_path.glob(".*.tmp"))  # every save finished
