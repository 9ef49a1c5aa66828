"""The training loop: Adam, the schedule, one step at a time, with periodic evaluation.

With ``RunConfig(distributed=True)`` the same loop runs data-parallel under PyTorch's own engine
(``torchrun ... --distributed``, :class:`~torch.nn.parallel.DistributedDataParallel`): every rank draws the same
global batch from the shared seeded generator and trains on its own slice of the rows, DDP averages the gradients,
and rank 0 evaluates, shows progress and (in the command line) saves the checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ..model import Transformer
from ..utils import seeded, select_device
from .config import RunConfig, TrainConfig
from .distributed import shard
from .evaluation import EvalResult, evaluate_batches
from .objective import sequence_loss, token_accuracy
from .progress import Progress, progress_bar
from .resume import Checkpointer, RunState, check_resumable, resume_run, save_training_checkpoint
from .schedule import make_scheduler
from .tasks import Batch


@dataclass
class History:
    """What happened during training, for plotting: every step's loss, token accuracy (on its training batch) and
    learning rate, and every evaluation's exact match, token accuracy and loss on fresh sequences, with the training
    wall time (evaluations excluded) at which it ran. ``cpu_seconds`` is the processor time the steps took: on a machine
    that other work keeps busy it stays near what the steps would take alone, where ``seconds`` grows."""

    step: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    token_accuracy: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    eval_step: list[int] = field(default_factory=list)
    eval_exact_match: list[float] = field(default_factory=list)
    eval_token_accuracy: list[float] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)
    eval_seconds: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def log_step(self, step: int, loss: float, token_accuracy: float, lr: float) -> None:
        self.step.append(step)
        self.loss.append(loss)
        self.token_accuracy.append(token_accuracy)
        self.lr.append(lr)

    def log_evaluation(self, step: int, result: EvalResult) -> None:
        self.eval_step.append(step)
        self.eval_exact_match.append(result.exact_match)
        self.eval_token_accuracy.append(result.token_accuracy)
        self.eval_loss.append(result.loss)
        self.eval_seconds.append(self.seconds)

    def to_dict(self) -> dict:
        return asdict(self)


def train_step(
    model: Transformer | DistributedDataParallel,
    batch: Batch,
    optimizer: torch.optim.Optimizer,
    label_smoothing: float = 0.0,
    clip_norm: float | None = None,
    bf16: bool = False,
    loss_weight: float = 1.0,
) -> tuple[float, float]:
    """One optimisation step on ``batch``; returns its (loss, token accuracy). The model reads ``batch.inputs()``:
    source, decoder input and masks of a :class:`~transformer.train.tasks.Batch` for the encoder-decoder model, the
    tokens and padding mask of a :class:`~transformer.train.language_model.LMBatch` for a model of one stack.

    The gradient is that of ``loss_weight`` times the loss: a data-parallel rank weights the mean over its own tokens
    by its share of the global batch's tokens times the number of ranks, so that the gradients DDP averages add up to
    the gradient of the mean over all the batch's tokens (ranks hold different numbers of real tokens).
    """
    pad_id = getattr(model, "module", model).config.pad_id  # DistributedDataParallel wraps the model as .module
    with torch.autocast(batch.tgt_out.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = model(*batch.inputs())  # (B, T, V)
    loss = sequence_loss(logits.float(), batch.tgt_out, pad_id, label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    (loss * loss_weight).backward()
    if clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    return loss.item(), token_accuracy(logits.detach(), batch.tgt_out, pad_id)


def train(
    model: Transformer,
    batches: Iterator[Batch],
    eval_batches: Sequence[Batch],
    config: TrainConfig | None = None,
    run: RunConfig | None = None,
    progress: Progress = True,
    task: str | None = None,
) -> History:
    """Train ``model`` on ``batches`` with Adam and ``config.schedule``; returns the :class:`History`.

    ``batches`` yields one :class:`~transformer.train.tasks.Batch` per step (the same on every rank when distributed:
    :meth:`TaskConfig.stream <transformer.train.tasks.TaskConfig.stream>` for a synthetic task,
    :func:`transformer.train.bucketing.batch_stream` for pairs of text); every ``config.eval_every`` steps (and at the
    end) the model is scored on the fixed ``eval_batches``, and with ``config.stop_at_exact_match`` training stops as
    soon as that score is reached. Dropout draws from PyTorch's global generator, seeded with ``run.seed`` for the
    run and put back as it was afterwards: a run repeats bit for bit on the same machine. ``task`` names the data
    in the progress bar and in training checkpoints. ``progress=True`` shows a live tqdm bar (a widget in notebooks,
    text in terminals); ``"text"`` prints one line when training ends (for pages that cannot redraw a line, such as
    the static book), ``False`` shows nothing; a callable ``(steps, description)`` returns a bar of its own
    (:func:`~transformer.train.progress.progress_bar`).

    With ``run.save_to``, a training checkpoint (:mod:`transformer.train.resume`) is written there every
    ``run.save_every`` steps and when the run is interrupted (Ctrl-C, SIGTERM: the step in progress finishes, the
    checkpoint is saved, and :class:`~transformer.train.resume.TrainingInterrupted` is raised). ``run.resume_from``
    continues the run such a checkpoint saved, with the same settings and a model of the same configuration; on the
    same machine the result is the uninterrupted run's, bit for bit. ``batches`` must then be resumable (such as
    :class:`~transformer.train.tasks.TaskStream` or :class:`~transformer.train.bucketing.BatchStream`).
    """
    config, run = config or TrainConfig(), run or RunConfig()
    if not (callable(progress) or progress in (True, False, "text")):
        raise ValueError(f"progress must be True, False, 'text' or a callable; got {progress!r}")
    if not isinstance(batches, Iterator):
        raise TypeError(
            f"batches must be an iterator of Batch (one per step, e.g. a generator); got {type(batches).__name__}"
        )
    if not len(eval_batches):
        raise ValueError("eval_batches must hold at least one batch to score the model on; got none")
    if run.distributed and not dist.is_initialized():
        raise ValueError(
            "distributed=True needs a process group: launch with torchrun (see "
            "`transformer-interactive train --help`) or call torch.distributed.init_process_group first"
        )
    if run.save_to is not None or run.resume_from is not None:
        check_resumable(batches)
    device = select_device(run.device)
    model.to(device)
    rank, world_size = (dist.get_rank(), dist.get_world_size()) if run.distributed else (0, 1)
    if config.batch_size % world_size:
        raise ValueError(f"batch_size {config.batch_size} must split evenly over the {world_size} ranks")
    with seeded(run.seed), num_threads(run.threads if device.type == "cpu" else None):
        optimizer = _adam(model, config)
        scheduler = make_scheduler(optimizer, config.schedule, config.warmup, config.steps)
        state = RunState(task, model, config, run, optimizer, scheduler, batches, device)
        history, first_step = History(), 1
        if run.resume_from is not None:
            done, saved_history = resume_run(run.resume_from, state)
            history, first_step = History(**saved_history), done + 1

        def save(step: int) -> Path:
            return save_training_checkpoint(run.save_to, step, state, history.to_dict())

        checkpointer = None
        if run.save_to is not None:
            checkpointer = Checkpointer(Path(run.save_to), run.save_every, config.steps, save, device, run.distributed)
        net = model  # what the steps run through: wrapped in DistributedDataParallel when distributed, then compiled
        if run.distributed:
            net = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
        if run.compile:
            net = torch.compile(net)
        bar = progress_bar(
            range(first_step, config.steps + 1),
            f"training {task}" if task else "training",
            progress if rank == 0 else False,
        )
        model.train()  # the evaluations put it back in training mode when they are done
        with checkpointer or nullcontext():
            for step in bar:
                start, cpu_start = time.perf_counter(), time.process_time()
                batch = next(batches, None)
                if batch is None:
                    raise ValueError(f"batches ran out after {step - 1} steps; config.steps asks for {config.steps}")
                rows = (shard(batch, rank, world_size, model.config.pad_id) if run.distributed else batch).to(device)
                lr = optimizer.param_groups[0]["lr"]
                weight = rows.n_tokens * world_size / batch.n_tokens
                loss, accuracy = train_step(
                    net, rows, optimizer, config.label_smoothing, config.clip_norm, run.bf16, weight
                )
                if run.distributed:  # the whole batch's loss and accuracy: sums over every rank's tokens
                    totals = torch.tensor(
                        [loss * rows.n_tokens, accuracy * rows.n_tokens], device=device, dtype=torch.float64
                    )
                    dist.all_reduce(totals)
                    loss, accuracy = (totals / batch.n_tokens).tolist()
                scheduler.step()
                history.seconds += time.perf_counter() - start
                history.cpu_seconds += time.process_time() - cpu_start
                history.log_step(step, loss, accuracy, lr)
                if step % config.eval_every == 0 or step == config.steps:
                    result = _evaluate_on_rank0(model, eval_batches, rank, run.distributed)
                    history.log_evaluation(step, result)
                    bar.set_postfix(loss=f"{loss:.3f}", exact_match=f"{result.exact_match:.1%}")
                    if config.stop_at_exact_match is not None and result.exact_match >= config.stop_at_exact_match:
                        break
                if checkpointer is not None and checkpointer.step_done(step):
                    break
            bar.close()
    model.eval()
    if checkpointer is not None:
        checkpointer.raise_if_stopped()
    return history


def _adam(model: Transformer, config: TrainConfig) -> torch.optim.Adam:
    """Adam with ``config``'s rate, betas and eps, as its fused kernel where this PyTorch has one for the model's
    device: one kernel updates every parameter tensor, where the default runs a dozen operations on each, which
    is about a tenth of a small model's step on a CPU. The two compute the same update, up to float rounding."""
    parameters = list(model.parameters())
    try:
        return torch.optim.Adam(parameters, lr=config.lr, betas=config.betas, eps=config.eps, fused=True)
    except RuntimeError:  # before PyTorch 2.4, only CUDA had the fused kernel
        return torch.optim.Adam(parameters, lr=config.lr, betas=config.betas, eps=config.eps)


def _evaluate_on_rank0(model: Transformer, eval_batches: Sequence[Batch], rank: int, distributed: bool) -> EvalResult:
    """The periodic evaluation. Data-parallel, rank 0 scores and sends every rank its result, so that all of them
    log the same history and stop at the same step."""
    result = evaluate_batches(model, eval_batches) if rank == 0 else None
    if distributed:
        received = [result]
        dist.broadcast_object_list(received, src=0)
        result = received[0]
    return result


@contextmanager
def num_threads(threads: int | None) -> Iterator[None]:
    """Run a block with ``torch.set_num_threads(threads)`` (``None``: leave it), restoring the old count afterwards.

    Small models are dominated by per-operation overhead: on two cores one thread is usually faster, and on a busy
    machine extra threads that wait for each other can make every step several times slower.
    """
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
