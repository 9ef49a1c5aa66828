"""How to train: every choice of a training run in one validated dataclass."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..checks import check_bool, check_choice, check_int, check_positive, check_probability
from ..tokens import FIRST_SYMBOL
from .schedule import SCHEDULES
from .tasks import DEFAULT_VOCAB_SIZE, TASKS


@dataclass
class TrainConfig:
    """How to train on a synthetic task. The defaults are the documented small configuration: 500 steps bring copy
    and reverse to 100 % exact match on 1,000 fresh sequences for every one of 20 seeds, first at step 400 at the
    latest (how they were chosen, what they cost, and what else was tried: ``benchmarks/README.md``)."""

    task: str = "copy"  # copy, reverse or sort random symbol sequences (transformer.train.tasks.TASKS)
    vocab_size: int = DEFAULT_VOCAB_SIZE  # 10 symbols after the special ids: enough to make copying non-trivial
    min_seq_len: int = 1  # sequence lengths drawn uniformly from [min_seq_len, max_seq_len] ...
    max_seq_len: int = 10  # ... 10 positions, short enough for a CPU, long enough to need attention
    steps: int = 500  # every seed is first 100 % right by step 400: the last 100 steps are the margin
    batch_size: int = 64  # sequences per step
    lr: float = 1e-2  # the peak rate, reached after the warm-up: high, which pre-norm and a small model tolerate
    warmup: int = 30  # a short warm-up is enough for a pre-norm model
    schedule: str = "quadratic"  # decays to 0 by the last step, low well before it; "linear", or "noam": the paper's
    betas: tuple[float, float] = (0.9, 0.98)  # the paper's Adam
    eps: float = 1e-9  # the paper's Adam
    label_smoothing: float = 0.1  # the paper's: keeps the model from growing over-confident while still wrong
    clip_norm: float | None = 1.0  # one bad batch cannot throw the model off; None: no clipping
    eval_every: int = 100  # exact match on fresh sequences every so many steps (and at the end)
    eval_size: int = 200  # sequences per periodic evaluation: cheap, and enough to see progress
    seed: int = 0  # the initial weights and the training data
    device: str = "auto"  # CUDA, then MPS, then the CPU (transformer.utils.select_device)
    bf16: bool = False  # bfloat16 autocast: faster on GPUs that have it; fp32 is exact enough and fast on a CPU
    threads: int | None = 1  # PyTorch's CPU threads while training: one is the safe choice on a shared machine
    compile: bool = False  # torch.compile the training steps: faster steps after a compilation of tens of seconds
    distributed: bool = False  # data-parallel over an initialised process group (torchrun); batch_size stays global

    def __post_init__(self) -> None:
        check_choice("task", self.task, TASKS)
        for name in ("steps", "batch_size", "warmup", "eval_every", "eval_size", "min_seq_len"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("max_seq_len", self.max_seq_len, minimum=self.min_seq_len)
        check_int("vocab_size", self.vocab_size, minimum=FIRST_SYMBOL + 1)  # the symbols come after the special ids
        if self.clip_norm is not None:
            check_positive("clip_norm", self.clip_norm)
        check_probability("label_smoothing", self.label_smoothing)
        if self.threads is not None:
            check_int("threads", self.threads, minimum=1)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_positive("lr", self.lr)
        for name in ("bf16", "compile", "distributed"):
            check_bool(name, getattr(self, name))
        self.betas = tuple(self.betas)

    def to_dict(self) -> dict:
        return asdict(self)
