"""The training loop: Adam, the schedule, one step at a time, with periodic evaluation.

With ``TrainConfig(distributed=True)`` the same loop runs data-parallel under PyTorch's own engine
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
from torch.optim.lr_scheduler import LambdaLR

from ..checks import check_int
from ..model import Transformer
from ..utils import make_rng, select_device
from .config import TrainConfig
from .distributed import shard
from .evaluation import EvalResult, evaluate, evaluate_batches
from .objective import sequence_loss, token_accuracy
from .progress import Progress, progress_bar
from .resume import Checkpointer, check_resumable, resume_run, save_training_checkpoint
from .schedule import make_scheduler
from .tasks import Batch, TaskStream, check_task_padding


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

    def to_dict(self) -> dict:
        return asdict(self)


def train_step(
    model: Transformer | DistributedDataParallel, batch: Batch, optimizer: torch.optim.Optimizer,
    label_smoothing: float = 0.0, clip_norm: float | None = None, bf16: bool = False, loss_weight: float = 1.0,
) -> tuple[float, float]:
    """One optimisation step on ``batch``; returns its (loss, token accuracy).

    The gradient is that of ``loss_weight`` times the loss: a data-parallel rank weights the mean over its own tokens
    by its share of the global batch's tokens times the number of ranks, so that the gradients DDP averages add up to
    the gradient of the mean over all the batch's tokens (ranks hold different numbers of real tokens).
    """
    pad_id = getattr(model, "module", model).config.pad_id  # DistributedDataParallel wraps the model as .module
    with torch.autocast(batch.src.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)  # (B, T, V)
    loss = sequence_loss(logits.float(), batch.tgt_out, pad_id, label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    (loss * loss_weight).backward()
    if clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    return loss.item(), token_accuracy(logits.detach(), batch.tgt_out, pad_id)


def train(
    model: Transformer, config: TrainConfig | None = None, progress: Progress = True,
    stop_at_exact_match: float | None = None, batches: Iterator[Batch] | None = None,
    eval_batches: Sequence[Batch] | None = None, save_to: str | Path | None = None, save_every: int | None = None,
    resume_from: str | Path | None = None, task: str | None = None,
) -> History:
    """Train ``model`` on ``config.task`` with Adam and ``config.schedule``; returns the :class:`History`.

    Batches come from a generator seeded with ``config.seed`` and the global generator (dropout) is seeded too, so
    a run repeats bit for bit on the same machine. Every ``config.eval_every`` steps (and at the end) the model is
    scored on ``config.eval_size`` fresh sequences; with ``stop_at_exact_match`` training stops as soon as that
    score is reached. ``progress=True`` shows a live tqdm bar (a widget in notebooks, text in terminals); ``"text"``
    prints one line when training ends (for pages that cannot redraw a line, such as the static book), ``False``
    shows nothing; a callable ``(steps, description)`` returns a bar of its own
    (:func:`~transformer.train.progress.progress_bar`).

    Any other task trains the same way: pass its training ``batches`` (an iterator that yields one
    :class:`~transformer.train.tasks.Batch` per step, such as :func:`transformer.train.bucketing.batch_stream`; the same on
    every rank when distributed) and the fixed ``eval_batches`` it is scored on; ``config.task`` and its sizes
    are then not used, and ``task`` names the data (in the progress bar and in training checkpoints).

    With ``save_to``, a training checkpoint (:mod:`transformer.train.resume`) is written there every ``save_every``
    steps and when the run is interrupted (Ctrl-C, SIGTERM: the step in progress finishes, the checkpoint is saved,
    and :class:`~transformer.train.resume.TrainingInterrupted` is raised). ``resume_from`` continues the run such a
    checkpoint saved, with the same settings and a model of the same configuration; on the same machine the result
    is the uninterrupted run's, bit for bit. Given ``batches`` must then be resumable (such as
    :class:`~transformer.train.bucketing.BatchStream`).
    """
    if not (callable(progress) or progress in (True, False, "text")):
        raise ValueError(f"progress must be True, False, 'text' or a callable; got {progress!r}")
    config = TrainConfig() if config is None else config
    if (batches is None) != (eval_batches is None):
        raise ValueError("batches and eval_batches go together: pass both (a task of your own) or neither "
                         f"(config.task); got batches={type(batches).__name__}, eval_batches={type(eval_batches).__name__}")
    if batches is not None and not isinstance(batches, Iterator):
        raise TypeError(f"batches must be an iterator of Batch (one per step, e.g. a generator); got {type(batches).__name__}")
    if batches is None:
        check_task_padding(model.config.pad_id)
    if batches is None and min(model.config.src_vocab_size, model.config.tgt_vocab_size) < config.vocab_size:
        raise ValueError(f"the model's vocabularies must hold the task's {config.vocab_size} ids")
    if config.distributed and not dist.is_initialized():
        raise ValueError("distributed=True needs a process group: launch with torchrun (see "
                         "`python -m transformer train --help`) or call torch.distributed.init_process_group first")
    if save_every is not None:
        check_int("save_every", save_every, minimum=1)
        if save_to is None:
            raise ValueError(f"save_every={save_every} needs save_to, the path of the training checkpoint")
    device = select_device(config.device)
    model.to(device)
    torch.manual_seed(config.seed)
    rng = make_rng(config.seed)
    optimizer = _adam(model, config)
    scheduler = make_scheduler(optimizer, config.schedule, config.warmup, config.steps)
    history, first_step = History(), 1
    if batches is None:
        c = config
        batches = TaskStream(c.task, c.batch_size, c.vocab_size, c.min_seq_len, c.max_seq_len, rng=rng)
    task = task or (config.task if eval_batches is None else None)
    if save_to is not None or resume_from is not None:
        check_resumable(batches)
    if resume_from is not None:
        done, saved_history = resume_run(resume_from, task, model, config, optimizer, scheduler, batches, device)
        history, first_step = History(**saved_history), done + 1

    def save(step: int) -> Path:
        return save_training_checkpoint(save_to, step, task, model, config, optimizer, scheduler, batches,
                                        history.to_dict(), device)

    checkpointer = None if save_to is None else Checkpointer(Path(save_to), save_every, config.steps, save, device,
                                                              config.distributed)
    with num_threads(config.threads if device.type == "cpu" else None), checkpointer or nullcontext():
        _run(model, config, device, optimizer, scheduler, batches, eval_batches, history, progress, stop_at_exact_match,
             task, first_step, checkpointer)
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


def _run(
    model: Transformer, c: TrainConfig, device: torch.device, optimizer: torch.optim.Optimizer, scheduler: LambdaLR,
    batches: Iterator[Batch], eval_batches: Sequence[Batch] | None, history: History, progress: Progress,
    stop_at_exact_match: float | None, task: str | None, first_step: int = 1, checkpointer: Checkpointer | None = None,
) -> None:
    """The loop itself: draw a batch, take a step, log it, evaluate now and then, from step ``first_step`` on, saving a
    training checkpoint when ``checkpointer`` says so. The steps run through ``net``: the model, wrapped in
    DistributedDataParallel when distributed, then compiled when ``c.compile``."""
    rank, world_size = (dist.get_rank(), dist.get_world_size()) if c.distributed else (0, 1)
    if c.batch_size % world_size:
        raise ValueError(f"batch_size {c.batch_size} must split evenly over the {world_size} ranks")
    net = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None) if c.distributed else model
    net = torch.compile(net) if c.compile else net
    description = f"training {task}" if task else "training"  # given batches: named by the caller, or not at all
    bar = progress_bar(range(first_step, c.steps + 1), description, progress if rank == 0 else False)
    model.train()  # the evaluations put it back in training mode when they are done
    for step in bar:
        start, cpu_start = time.perf_counter(), time.process_time()
        batch = next(batches, None)
        if batch is None:
            raise ValueError(f"batches ran out after {step - 1} steps; config.steps asks for {c.steps}")
        rows = (shard(batch, rank, world_size, model.config.pad_id) if c.distributed else batch).to(device)
        lr = optimizer.param_groups[0]["lr"]
        weight = rows.n_tokens * world_size / batch.n_tokens
        loss, accuracy = train_step(net, rows, optimizer, c.label_smoothing, c.clip_norm, c.bf16, weight)
        if c.distributed:  # the whole batch's loss and accuracy: sums over every rank's tokens
            totals = torch.tensor([loss * rows.n_tokens, accuracy * rows.n_tokens], device=device, dtype=torch.float64)
            dist.all_reduce(totals)
            loss, accuracy = (totals / batch.n_tokens).tolist()
        scheduler.step()
        history.seconds += time.perf_counter() - start
        history.cpu_seconds += time.process_time() - cpu_start
        for name, value in (("step", step), ("loss", loss), ("token_accuracy", accuracy), ("lr", lr)):
            getattr(history, name).append(value)
        if step % c.eval_every == 0 or step == c.steps:
            result = _evaluate_on_rank0(model, c, rank, eval_batches)
            history.eval_step.append(step)
            history.eval_exact_match.append(result.exact_match)
            history.eval_token_accuracy.append(result.token_accuracy)
            history.eval_loss.append(result.loss)
            history.eval_seconds.append(history.seconds)
            bar.set_postfix(loss=f"{loss:.3f}", exact_match=f"{result.exact_match:.1%}")
            if stop_at_exact_match is not None and result.exact_match >= stop_at_exact_match:
                break
        if checkpointer is not None and checkpointer.step_done(step):
            break
    bar.close()


def _evaluate_on_rank0(model: Transformer, c: TrainConfig, rank: int, eval_batches: Sequence[Batch] | None) -> EvalResult:
    """The periodic evaluation (on ``eval_batches`` when given, else on ``c.eval_size`` fresh sequences of ``c.task``).
    Data-parallel, rank 0 scores and sends every rank its result, so that all of them log the same history and stop
    at the same step."""
    if rank != 0:
        result = None
    elif eval_batches is not None:
        result = evaluate_batches(model, eval_batches)
    else:
        result = evaluate(model, c.task, c.eval_size, c.vocab_size, c.min_seq_len, c.max_seq_len)
    if c.distributed:
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
