"""Training checkpoints: everything a run needs to go on exactly where it stopped, and stopping cleanly on Ctrl-C.

A model checkpoint (:func:`transformer.save_checkpoint`) holds what a user of the trained model needs. A training
checkpoint holds what the *run* needs: the weights, Adam's moment estimates, the schedule's position, the random
states (PyTorch's global generator, which dropout draws from, the device's, and the data stream's), and the history
so far. :func:`transformer.train.train` writes one every ``save_every`` steps and when it is asked to stop
(``SIGINT``, Ctrl-C or a notebook's interrupt button, or ``SIGTERM``): it finishes the step it is in, saves, and
raises :class:`TrainingInterrupted`. ``train(..., resume_from=path)`` restores all of it, so that on one machine
the resumed run computes what the uninterrupted run would have, bit for bit.

Files are written atomically (:func:`transformer.checkpoint.atomic_save`), and a checkpoint is only resumed by the
run it belongs to: another package version, task, data, model or training setting is refused with a message that
names each difference. Only where and how fast the run goes may change (all of :class:`~.config.RunConfig` but
:data:`MUST_MATCH`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from .. import __version__
from ..checkpoint import FORMAT as MODEL_FORMAT
from ..checkpoint import atomic_save, load_file
from ..model import Transformer
from .config import RunConfig, TrainConfig

FORMAT = "transformer-interactive/training-checkpoint-v1"
# The RunConfig fields that change what a run computes; a resumed run may change the others, which say where and how
# fast it goes and where it saves. (Data-parallel or not, the gradient is the mean over the same global batch: the
# same run up to float rounding.)
MUST_MATCH = ("seed", "bf16")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ResumeError(ValueError):
    """A training checkpoint that cannot be resumed: missing, unreadable, not a training checkpoint, or another run's."""


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped on a signal after ``step`` of ``steps`` and saved a training checkpoint at ``path``."""

    def __init__(self, step: int, steps: int, path: Path):
        super().__init__(
            f"training stopped after step {step} of {steps} and saved {str(path)!r}; "
            "resume it with train(..., resume_from=that path) and the same settings"
        )
        self.step, self.steps, self.path = step, steps, path


@dataclass
class RunState:
    """A run in progress, as much of it as a training checkpoint saves and a resumed run puts back: what it trains
    (``task``: the data's name, ``model``), how (``config``, ``run``), and where it is (the optimizer, the schedule,
    the training batches' iterator ``stream``, whose ``state_dict()`` is saved, and the ``device``'s random state)."""

    task: str | None
    model: Transformer
    config: TrainConfig
    run: RunConfig
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    stream: object
    device: torch.device


def save_training_checkpoint(path: str | Path, step: int, state: RunState, history: dict) -> Path:
    """Write ``state`` after ``step`` steps, with the run's ``history`` (a dict), to ``path``, atomically."""
    return atomic_save(
        {
            "format": FORMAT,
            "package_version": __version__,
            "task": state.task,
            "step": step,
            "model_config": state.model.config.to_dict(),
            "train_config": state.config.to_dict(),
            "run_config": state.run.to_dict(),
            "model": {name: tensor.detach().cpu() for name, tensor in state.model.state_dict().items()},
            "optimizer": state.optimizer.state_dict(),
            "scheduler": state.scheduler.state_dict(),
            "rng": {
                "torch": torch.get_rng_state(),
                "device_type": state.device.type,
                "device": _device_rng_state(state.device),
            },
            "data": state.stream.state_dict(),
            "history": history,
        },
        path,
    )


def read_training_checkpoint(path: str | Path) -> dict:
    """The training checkpoint at ``path``, checked to be one (a model checkpoint is refused with a message that
    says which file to resume from instead)."""
    checkpoint = load_file(path, "training with save_to= (transformer-interactive train --save-every)")
    kind = checkpoint.get("format") if isinstance(checkpoint, dict) else None
    if kind == MODEL_FORMAT:
        raise ValueError(
            f"{str(path)!r} is a model checkpoint (the trained weights, for load_checkpoint); resuming "
            "needs the training checkpoint of the run, written every --save-every steps and when it is "
            "interrupted (the command line names it after --out: copy.pt -> copy.resume.pt)"
        )
    if kind != FORMAT:
        raise ValueError(f"{str(path)!r} is not a training checkpoint (format {kind!r}, expected {FORMAT!r})")
    return checkpoint


def read_on_every_rank(path: str | Path, distributed: bool) -> dict:
    """:func:`read_training_checkpoint` in one process, or data-parallel on rank 0, which sends it to every rank
    (the file need only be where rank 0 runs); an error is raised on every rank alike."""
    if not distributed:
        return read_training_checkpoint(path)
    payload: list[object] = [None]
    if dist.get_rank() == 0:
        try:
            payload = [read_training_checkpoint(path)]
        except (FileNotFoundError, ValueError) as error:
            payload = [error]
    dist.broadcast_object_list(payload, src=0)
    if isinstance(payload[0], Exception):
        raise payload[0]
    return payload[0]


def resume_run(path: str | Path, state: RunState) -> tuple[int, dict]:
    """Read the training checkpoint at ``path`` (on rank 0 when data-parallel), check that it belongs to the run of
    ``state`` and :func:`restore` it there. Returns the last step it completed and its history (a dict)."""
    try:
        checkpoint = read_on_every_rank(path, state.run.distributed)
    except (FileNotFoundError, ValueError) as error:
        raise ResumeError(f"cannot resume: {error}") from error
    differences = resume_differences(checkpoint, state)
    if differences:
        raise ResumeError(
            f"cannot resume from {str(path)!r}: it belongs to another run ("
            + "; ".join(differences)
            + "); resume with the settings it was written with, or start afresh"
        )
    return restore(checkpoint, state)


def resume_differences(checkpoint: dict, state: RunState) -> list[str]:
    """Every way the run that wrote ``checkpoint`` differs from the run of ``state`` (``[]``: it may be resumed)."""
    differences = [
        f"{name}: {saved!r} in the checkpoint, {here!r} here"
        for name, saved, here in (
            ("package version", checkpoint["package_version"], __version__),
            ("task", checkpoint["task"], state.task),
        )
        if saved != here
    ]
    differences += _differences("training setting", checkpoint["train_config"], state.config.to_dict())
    saved_run, this_run = ({k: c[k] for k in MUST_MATCH} for c in (checkpoint["run_config"], state.run.to_dict()))
    differences += _differences("run setting", saved_run, this_run)
    differences += _differences("model setting", checkpoint["model_config"], state.model.config.to_dict())
    differences += _differences("data", checkpoint["data"]["source"], state.stream.state_dict()["source"])
    return differences


def _differences(what: str, saved: dict, here: dict) -> list[str]:
    return [
        f"{what} {name}: {saved.get(name)!r} in the checkpoint, {here.get(name)!r} here"
        for name in sorted(saved.keys() | here.keys())
        if _plain(saved.get(name)) != _plain(here.get(name))
    ]


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value  # (0.9, 0.98) and [0.9, 0.98] are the same betas


def restore(checkpoint: dict, state: RunState) -> tuple[int, dict]:
    """Put the run of ``checkpoint`` back into ``state``: weights, optimizer, schedule, random states and data stream.
    Returns the last step it completed and its history (a dict)."""
    state.model.load_state_dict(checkpoint["model"])
    state.optimizer.load_state_dict(checkpoint["optimizer"])
    state.scheduler.load_state_dict(checkpoint["scheduler"])
    torch.set_rng_state(checkpoint["rng"]["torch"])
    if checkpoint["rng"]["device_type"] == state.device.type and checkpoint["rng"]["device"] is not None:
        _set_device_rng_state(state.device, checkpoint["rng"]["device"])
    state.stream.load_state_dict(checkpoint["data"])
    return checkpoint["step"], checkpoint["history"]


def _device_rng_state(device: torch.device) -> torch.Tensor | None:
    if device.type == "cuda":
        return torch.cuda.get_rng_state(device)
    if device.type == "mps":
        return torch.mps.get_rng_state()
    return None


def _set_device_rng_state(device: torch.device, state: torch.Tensor) -> None:
    if device.type == "cuda":
        torch.cuda.set_rng_state(state, device)
    elif device.type == "mps":
        torch.mps.set_rng_state(state)


def check_resumable(stream) -> None:
    """Raise a TypeError unless ``stream`` can be saved and restored (``state_dict`` and ``load_state_dict``)."""
    if not (callable(getattr(stream, "state_dict", None)) and callable(getattr(stream, "load_state_dict", None))):
        raise TypeError(
            "to save or resume a training checkpoint, batches must be an iterator that can be saved: one with "
            "state_dict() and load_state_dict(), such as transformer.train.bucketing.BatchStream (what batch_stream "
            f"returns); got {type(stream).__name__}"
        )


class Checkpointer:
    """Saves a run every ``every`` steps (``None``: never) and when a signal asks it to stop; ``save(step)`` writes
    the file. Used as a context manager around the training loop: inside it, SIGINT and SIGTERM no longer stop the
    process at once, they ask the loop to stop after its current step (a second signal stops it at once, as usual).
    Data-parallel, every rank learns whether any rank was asked to stop, rank 0 saves, and all stop at the same step."""

    def __init__(
        self,
        path: Path,
        every: int | None,
        steps: int,
        save: Callable[[int], Path],
        device: torch.device,
        distributed: bool,
    ):
        self.path, self.every, self.steps, self.save = path, every, steps, save
        self.device, self.distributed = device, distributed
        self.rank = dist.get_rank() if distributed else 0
        self.stop_requested, self.stopped_at, self.previous_handlers = False, None, {}

    def __enter__(self) -> Checkpointer:
        if threading.current_thread() is threading.main_thread():  # Python runs signal handlers in the main thread only
            for number in STOP_SIGNALS:
                if signal.getsignal(number) != signal.SIG_IGN:  # a signal the process was told to ignore stays ignored
                    self.previous_handlers[number] = signal.signal(number, self._request_stop)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._restore_handlers()

    def _restore_handlers(self) -> None:
        for number, handler in self.previous_handlers.items():
            signal.signal(number, handler)
        self.previous_handlers = {}

    def _request_stop(self, number: int, frame: object) -> None:
        if not self.stop_requested:
            self.stop_requested = True
            if self.rank == 0:
                print(
                    f"\n{signal.Signals(number).name}: stopping after this step to save {str(self.path)!r} "
                    "(send it again to stop at once)",
                    file=sys.stderr,
                    flush=True,
                )
            return
        previous = self.previous_handlers.get(number, signal.SIG_DFL)
        self._restore_handlers()  # a second signal: what it would have done without us
        if callable(previous):
            previous(number, frame)
        elif previous == signal.SIG_DFL:
            os.kill(os.getpid(), number)

    def step_done(self, step: int) -> bool:
        """After ``step``: save if it is time or a stop was asked for; returns whether the loop must stop now."""
        stop = self.stop_requested
        if self.distributed:  # stop where any rank was asked to, all at the same step
            flag = torch.tensor([float(stop)], device=self.device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            stop = bool(flag.item())
        if stop or (self.every is not None and step % self.every == 0):
            if self.rank == 0:
                self.save(step)
            if stop and self.distributed:
                dist.barrier()  # the others wait for the file before they leave
        if stop:
            self.stopped_at = step
        return stop

    def raise_if_stopped(self) -> None:
        if self.stopped_at is not None:
            raise TrainingInterrupted(self.stopped_at, self.steps, self.path)
