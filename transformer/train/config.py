"""How to train, in two validated dataclasses: what the optimisation is (:class:`TrainConfig`) and where and how a run
goes (:class:`RunConfig`). What the model learns from is the third part: the batches handed to
:func:`~transformer.train.train`; for the synthetic tasks, :class:`~transformer.train.tasks.TaskConfig` says which."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from ..checks import check_bool, check_choice, check_int, check_positive, check_probability, check_real
from ..utils import DEVICES
from .schedule import SCHEDULES


@dataclass
class TrainConfig:
    """How to optimise. The defaults are the documented small configuration for the synthetic tasks: on a CPU, 500
    steps brought copy and reverse to 100 % exact match on 1,000 fresh sequences for every one of 20 seeds, first at
    step 400 at the latest (how they were chosen, what they cost, and what else was tried: ``benchmarks/README.md``)."""

    steps: int = 500  # a margin after the last of those 20 seeds first reached 100 % (benchmarks/README.md)
    batch_size: int = 64  # sequences per step, over all data-parallel ranks together
    lr: float = 1e-2  # the peak rate, reached after the warm-up: high, which pre-norm and a small model tolerate
    warmup: int = 30  # a short warm-up is enough for a pre-norm model
    schedule: str = "quadratic"  # decays to 0 by the last step, low well before it; "linear", or "noam": the paper's
    betas: tuple[float, float] = (0.9, 0.98)  # the paper's Adam
    eps: float = 1e-9  # the paper's Adam
    label_smoothing: float = 0.1  # the paper's: keeps the model from growing over-confident while still wrong
    clip_norm: float | None = 1.0  # one bad batch cannot throw the model off; None: no clipping
    eval_every: int = 100  # score the model on the held-out batches every so many steps (and at the end)
    stop_at_exact_match: float | None = None  # stop at the first evaluation whose exact match reaches this

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "warmup", "eval_every"):
            check_int(name, getattr(self, name), minimum=1)
        if self.clip_norm is not None:
            check_positive("clip_norm", self.clip_norm)
        if self.stop_at_exact_match is not None:
            check_real("stop_at_exact_match", self.stop_at_exact_match)
            if not 0 < self.stop_at_exact_match <= 1:
                raise ValueError(f"stop_at_exact_match must be in (0, 1]; got {self.stop_at_exact_match!r}")
        check_probability("label_smoothing", self.label_smoothing)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_positive("lr", self.lr)
        self.betas = tuple(self.betas)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class RunConfig:
    """Where and how a run goes: its seed (the initial weights, the batches' order or draws, dropout), its device and
    speed settings, and its training checkpoints. Of these, only the seed and ``bf16`` change what is learned; a
    resumed run may change the others."""

    seed: int = 0
    device: str = "auto"  # CUDA, then MPS, then the CPU (transformer.utils.select_device)
    bf16: bool = False  # bfloat16 autocast: faster on GPUs that have it; fp32 is exact enough and fast on a CPU
    threads: int | None = 1  # PyTorch's CPU threads while training: one is the safe choice on a shared machine
    compile: bool = False  # torch.compile the training steps: faster steps after a compilation of tens of seconds
    distributed: bool = False  # data-parallel over an initialised process group (torchrun)
    save_to: str | Path | None = None  # a training checkpoint here every save_every steps and when interrupted
    save_every: int | None = None
    resume_from: str | Path | None = None  # continue the run that saved this training checkpoint

    def __post_init__(self) -> None:
        check_int("seed", self.seed, minimum=0)
        if not isinstance(self.device, str) or self.device.split(":")[0] not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES} (optionally 'cuda:N'); got {self.device!r}")
        if self.threads is not None:
            check_int("threads", self.threads, minimum=1)
        for name in ("bf16", "compile", "distributed"):
            check_bool(name, getattr(self, name))
        if self.save_every is not None:
            check_int("save_every", self.save_every, minimum=1)
            if self.save_to is None:
                raise ValueError(f"save_every={self.save_every} needs save_to, the path of the training checkpoint")

    def to_dict(self) -> dict:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
