"""Training on the synthetic tasks: the loss, the paper's learning-rate schedule, the loop and its evaluation.

The loss is the cross-entropy of the logits against the decoder output, averaged over real target tokens only
(padding is ignored). Label smoothing (the paper uses 0.1) trains against a softened target; it is PyTorch's
built-in ``label_smoothing``, and :func:`label_smoothing_kl` writes out the paper's KL form to show they differ only
by a constant. The schedule is the paper's warm-up then inverse-square-root decay, as a standard ``LambdaLR``.

With ``TrainConfig(distributed=True)`` the same loop runs data-parallel under PyTorch's own engine
(``torchrun ... --distributed``, :class:`~torch.nn.parallel.DistributedDataParallel`): every rank draws the same
global batch from the shared seeded generator and trains on its own slice of the rows, DDP averages the gradients,
and rank 0 evaluates, shows progress and (in the command line) saves the checkpoint.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel
from torch.optim.lr_scheduler import LambdaLR

from .bucketing import batch_stream
from .config import TransformerConfig
from .data import DEFAULT_VOCAB_SIZE, FIRST_SYMBOL, PAD_ID, TASKS, Batch, task_batch
from .dates import DatesData
from .decoding import greedy_decode
from .model import Transformer
from .utils import make_generator, num_threads, select_device

EVAL_SEED = 1_000_003  # evaluation sequences come from their own generator, never from the training stream


# ----------------------------------------------------------------------------------------------------------------
# Loss and metrics


def sequence_loss(logits: Tensor, target: Tensor, pad_id: int = PAD_ID, label_smoothing: float = 0.0) -> Tensor:
    """Mean cross-entropy over the real tokens of ``target (B, T)`` for ``logits (B, T, V)``; padding is ignored.

    ``logits`` are raw scores: ``F.cross_entropy`` applies the log-softmax itself (a model that already returned
    probabilities would be softmaxed twice).
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=pad_id, label_smoothing=label_smoothing
    )


def smoothed_targets(target: Tensor, vocab_size: int, smoothing: float) -> Tensor:
    """The distribution that ``F.cross_entropy(label_smoothing=smoothing)`` trains towards, ``(..., V)``:
    ``1 - smoothing`` on the right token plus ``smoothing / V`` spread over every token (the right one included)."""
    one_hot = F.one_hot(target, vocab_size).float()  # (..., V)
    return one_hot * (1.0 - smoothing) + smoothing / vocab_size


def label_smoothing_kl(logits: Tensor, target: Tensor, smoothing: float, pad_id: int = PAD_ID) -> Tensor:
    """The paper's form of label smoothing: the mean over real tokens of KL(q || p), with q the smoothed target.

    Since KL(q || p) = H(q, p) - H(q) and the entropy H(q) does not depend on the model, this is the label-smoothed
    cross-entropy minus a constant: the same gradients, but a loss that reaches 0 for a perfect fit.
    """
    real = target != pad_id  # (B, T)
    log_p = F.log_softmax(logits[real].float(), dim=-1)  # (N, V)
    q = smoothed_targets(target[real], logits.size(-1), smoothing)  # (N, V)
    return F.kl_div(log_p, q, reduction="batchmean")


def token_accuracy(logits: Tensor, target: Tensor, pad_id: int = PAD_ID) -> float:
    """Fraction of real target tokens whose argmax prediction is right (teacher forcing)."""
    real = target != pad_id
    return float((logits.argmax(dim=-1) == target)[real].float().mean())


def exact_match(predicted: Tensor, target: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """``(B,)`` bool: row i of ``predicted`` equals row i of ``target`` token for token (both right-padded)."""
    width = max(predicted.size(1), target.size(1))
    predicted = F.pad(predicted, (0, width - predicted.size(1)), value=pad_id)
    target = F.pad(target, (0, width - target.size(1)), value=pad_id)
    return (predicted == target).all(dim=1)


# ----------------------------------------------------------------------------------------------------------------
# Learning-rate schedule


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's rate at ``step`` (counted from 1): ``factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)``.

    It rises linearly for ``warmup`` steps to its peak ``factor / sqrt(d_model * warmup)``, then decays as
    ``1 / sqrt(step)``.
    """
    if step < 1:
        raise ValueError(f"step counts from 1; got {step}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def noam_scheduler(optimizer: torch.optim.Optimizer, warmup: int) -> LambdaLR:
    """The paper's schedule as a standard scheduler, with the optimizer's ``lr`` as its peak (reached at ``warmup``).

    The multiplier is ``sqrt(warmup) * min(step**-0.5, step * warmup**-1.5)``; the paper's rates are this with
    ``lr = (d_model * warmup)**-0.5`` (:func:`noam_lr`). ``LambdaLR`` counts from 0, the schedule from 1, so the
    first update already has a small non-zero rate.
    """
    return LambdaLR(optimizer, lambda i: warmup**0.5 * min((i + 1) ** -0.5, (i + 1) * warmup**-1.5))


def linear_scheduler(optimizer: torch.optim.Optimizer, warmup: int, total_steps: int) -> LambdaLR:
    """Linear warm-up to the optimizer's ``lr`` over ``warmup`` steps, then linear decay towards 0 at ``total_steps``.

    For a short run with a known budget: the rate is high while there is much to learn and anneals at the end,
    which is what removes the last few errors (the paper's ``1 / sqrt(step)`` tail never gets small).
    """
    def multiplier(i: int) -> float:
        step = i + 1
        if step <= warmup:
            return step / warmup
        return max(0.0, (total_steps + 1 - step) / (total_steps + 1 - warmup))

    return LambdaLR(optimizer, multiplier)


SCHEDULES = ("noam", "linear")


# ----------------------------------------------------------------------------------------------------------------
# The documented configurations


def small_model_config(vocab_size: int = DEFAULT_VOCAB_SIZE, **overrides) -> TransformerConfig:
    """The small model that learns copy and reverse to 100 % exact match in about 10 s of training on 2 idle CPU cores.

    d_model 64, 4 heads of 16, d_ff 128, 2 + 2 layers: under 1/80 of the parameters of the Annotated Transformer's
    copy model, and a training step about 30 times cheaper on a CPU (``benchmarks/bench_copy_task.py``), which is
    plenty for 10 symbols and 10 positions. No dropout: every batch is
    fresh random data, so there is nothing to overfit and dropout would only add noise. Pre-norm: the identity path
    through every block keeps gradients well scaled, so a high learning rate works after a short warm-up.
    """
    values = dict(
        src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, d_model=64, n_heads=4, d_ff=128,
        n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, norm_first=True, max_len=64,
    )
    values.update(overrides)
    return TransformerConfig(**values)


@dataclass
class TrainConfig:
    """How to train on a synthetic task. The defaults are the documented small configuration: 400 steps bring copy
    and reverse to 100 % exact match on 1,000 fresh sequences for every seed tried, in about 9 s on two idle CPU
    cores (how they were tuned, and what else was tried: ``benchmarks/README.md``)."""

    task: str = "copy"  # copy, reverse or sort random symbol sequences (transformer.data.TASKS)
    vocab_size: int = DEFAULT_VOCAB_SIZE  # 10 symbols after the special ids: enough to make copying non-trivial
    min_len: int = 1  # sequence lengths drawn uniformly from [min_len, max_len] ...
    max_len: int = 10  # ... 10 positions, short enough for a CPU, long enough to need attention
    steps: int = 400  # shorter runs (300, 350 steps) left more sequences in a thousand wrong
    batch_size: int = 64  # half the cost of 128 per step; 32 made too many seeds miss a sequence or two
    lr: float = 5e-3  # the peak rate, reached after the warm-up: high, which pre-norm tolerates
    warmup: int = 30  # a short warm-up is enough for a pre-norm model
    schedule: str = "linear"  # decay to 0 by the last step removes the last rare mistakes; "noam": the paper's
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
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}; got {self.task!r}")
        for name in ("steps", "batch_size", "warmup", "eval_every", "eval_size", "min_len", "max_len"):
            _check_positive_int(name, getattr(self, name))
        if self.min_len > self.max_len:
            raise ValueError(f"min_len must not exceed max_len; got min_len={self.min_len}, max_len={self.max_len}")
        if isinstance(self.vocab_size, bool) or not isinstance(self.vocab_size, int) or self.vocab_size <= FIRST_SYMBOL:
            raise ValueError(f"vocab_size must be an int above {FIRST_SYMBOL} (the ids 0-{FIRST_SYMBOL - 1} are special, "
                             f"the symbols come after them); got {self.vocab_size!r}")
        if self.clip_norm is not None and not _is_positive_number(self.clip_norm):
            raise ValueError(f"clip_norm must be None (no clipping) or a positive number; got {self.clip_norm!r}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1); got {self.label_smoothing!r}")
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(f"threads must be None (PyTorch's choice) or a positive int; got {self.threads!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}; got {self.schedule!r}")
        if not _is_positive_number(self.lr):
            raise ValueError(f"lr must be a positive number; got {self.lr!r}")
        if not isinstance(self.compile, bool):
            raise TypeError(f"compile must be a bool; got {self.compile!r}")
        self.betas = tuple(self.betas)

    def to_dict(self) -> dict:
        return asdict(self)


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")


def _is_positive_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def annotated_transformer_configs(vocab_size: int = DEFAULT_VOCAB_SIZE) -> tuple[TransformerConfig, TrainConfig]:
    """Our package set up like The Annotated Transformer's copy example: d_model 512, 8 heads, d_ff 2048, 2 + 2
    pre-norm layers, dropout 0.1, batch 80, Adam(betas (0.9, 0.98), eps 1e-9) on the paper's schedule with
    warm-up 400 and factor 0.5 (peak ``0.5 / sqrt(512 * 400)``, about 1.1e-3), 400 steps (20 epochs of 20
    batches), no label smoothing, no gradient clipping."""
    model_config = small_model_config(
        vocab_size, d_model=512, n_heads=8, d_ff=2048, dropout=0.1, norm_first=True
    )
    peak = noam_lr(400, d_model=512, warmup=400, factor=0.5)
    train_config = TrainConfig(
        steps=400, batch_size=80, lr=peak, warmup=400, schedule="noam", label_smoothing=0.0, clip_norm=None,
        eval_every=100, threads=None,
    )
    return model_config, train_config


# ----------------------------------------------------------------------------------------------------------------
# Evaluation


@dataclass
class EvalResult:
    """Exact match (greedy decoding reproduces the whole target and stops), teacher-forced token accuracy and loss."""

    exact_match: float
    token_accuracy: float
    loss: float
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def evaluate(
    model: Transformer, task: str = "copy", n: int = 1000, vocab_size: int = DEFAULT_VOCAB_SIZE, min_len: int = 1,
    max_len: int = 10, seed: int = EVAL_SEED, batch_size: int = 500,
) -> EvalResult:
    """Score ``model`` on ``n`` fresh random sequences of ``task``, drawn from their own seeded generator."""
    _check_positive_int("n", n)
    _check_positive_int("batch_size", batch_size)
    generator = make_generator(seed)
    sizes = [min(batch_size, n - done) for done in range(0, n, batch_size)]
    return evaluate_batches(model, (task_batch(task, size, vocab_size, min_len, max_len, generator) for size in sizes))


def evaluate_batches(model: Transformer, batches: Iterable[Batch]) -> EvalResult:
    """Score ``model`` on ``batches`` of any task: teacher-forced loss and token accuracy over the real target
    tokens, and exact match of greedy decoding (up to the target's length plus EOS) over the sequences."""
    device = next(model.parameters()).device
    matches, correct, total, loss_sum, n = 0, 0.0, 0, 0.0, 0
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for batch in batches:
            batch = batch.to(device)
            logits = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask).float()  # (B, T, V)
            loss_sum += float(sequence_loss(logits, batch.tgt_out)) * batch.n_tokens
            correct += token_accuracy(logits, batch.tgt_out) * batch.n_tokens
            total += batch.n_tokens
            predicted = greedy_decode(model, batch.src, max_len=batch.tgt_out.size(1), src_mask=batch.src_mask)
            matches += int(exact_match(predicted, batch.tgt_out).sum())
            n += len(batch)
    model.train(was_training)
    if not n:
        raise ValueError("batches must hold at least one batch; got none")
    return EvalResult(exact_match=matches / n, token_accuracy=correct / total, loss=loss_sum / total, n=n)


# ----------------------------------------------------------------------------------------------------------------
# The training loop


@dataclass
class History:
    """What happened during training, for plotting: every step's loss, token accuracy (on its training batch) and
    learning rate, and every evaluation's exact match, token accuracy and loss on fresh sequences, with the training
    wall time (evaluations excluded) at which it ran."""

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
    model: Transformer, config: TrainConfig | None = None, progress: bool | str = True,
    stop_at_exact_match: float | None = None, batches: Iterator[Batch] | None = None,
    eval_batches: Sequence[Batch] | None = None,
) -> History:
    """Train ``model`` on ``config.task`` with Adam and the paper's schedule; returns the :class:`History`.

    Batches come from a generator seeded with ``config.seed`` and the global generator (dropout) is seeded too, so
    a run repeats bit for bit on the same machine. Every ``config.eval_every`` steps (and at the end) the model is
    scored on ``config.eval_size`` fresh sequences; with ``stop_at_exact_match`` training stops as soon as that
    score is reached. ``progress=True`` shows a live tqdm bar (a widget in notebooks, text in terminals); ``"text"``
    prints one line when training ends (for pages that cannot redraw a line, such as the static book), ``False``
    shows nothing.

    Any other task trains the same way: pass its training ``batches`` (an iterator that yields one
    :class:`~transformer.data.Batch` per step, such as :func:`transformer.bucketing.batch_stream`; the same on
    every rank when distributed) and the fixed ``eval_batches`` it is scored on; ``config.task`` and its sizes
    are then not used.
    """
    if progress not in (True, False, "text"):
        raise ValueError(f"progress must be True, False or 'text'; got {progress!r}")
    config = TrainConfig() if config is None else config
    if (batches is None) != (eval_batches is None):
        raise ValueError("batches and eval_batches go together: pass both (a task of your own) or neither "
                         f"(config.task); got batches={type(batches).__name__}, eval_batches={type(eval_batches).__name__}")
    if batches is not None and not isinstance(batches, Iterator):
        raise TypeError(f"batches must be an iterator of Batch (one per step, e.g. a generator); got {type(batches).__name__}")
    if model.config.pad_id != PAD_ID:
        raise ValueError(f"the tasks pad with PAD_ID={PAD_ID}; the model was built with pad_id={model.config.pad_id}")
    if batches is None and min(model.config.src_vocab_size, model.config.tgt_vocab_size) < config.vocab_size:
        raise ValueError(f"the model's vocabularies must hold the task's {config.vocab_size} ids")
    if config.distributed and not dist.is_initialized():
        raise ValueError("distributed=True needs a process group: launch with torchrun (see "
                         "`python -m transformer train --help`) or call torch.distributed.init_process_group first")
    device = select_device(config.device)
    model.to(device)
    torch.manual_seed(config.seed)
    generator = make_generator(config.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=config.betas, eps=config.eps)
    if config.schedule == "noam":
        scheduler = noam_scheduler(optimizer, config.warmup)
    else:
        scheduler = linear_scheduler(optimizer, config.warmup, config.steps)
    history = History()
    if batches is None:
        c = config
        batches = (task_batch(c.task, c.batch_size, c.vocab_size, c.min_len, c.max_len, generator) for _ in range(c.steps))
    with num_threads(config.threads if device.type == "cpu" else None):
        _run(model, config, device, optimizer, scheduler, batches, eval_batches, history, progress, stop_at_exact_match)
    model.eval()
    return history


def _run(
    model: Transformer, c: TrainConfig, device: torch.device, optimizer: torch.optim.Optimizer, scheduler: LambdaLR,
    batches: Iterator[Batch], eval_batches: Sequence[Batch] | None, history: History, progress: bool | str,
    stop_at_exact_match: float | None,
) -> None:
    """The loop itself: draw a batch, take a step, log it, evaluate now and then. The steps run through ``net``:
    the model, wrapped in DistributedDataParallel when distributed, then compiled when ``c.compile``."""
    rank, world_size = (dist.get_rank(), dist.get_world_size()) if c.distributed else (0, 1)
    if c.batch_size % world_size:
        raise ValueError(f"batch_size {c.batch_size} must split evenly over the {world_size} ranks")
    net = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None) if c.distributed else model
    net = torch.compile(net) if c.compile else net
    description = f"training {c.task}" if eval_batches is None else "training"  # given batches: the task is the caller's
    bar = _progress_bar(range(1, c.steps + 1), description, progress if rank == 0 else False)
    for step in bar:
        start = time.perf_counter()
        model.train()
        batch = next(batches, None)
        if batch is None:
            raise ValueError(f"batches ran out after {step - 1} steps; config.steps asks for {c.steps}")
        rows = (shard(batch, rank, world_size) if c.distributed else batch).to(device)
        lr = optimizer.param_groups[0]["lr"]
        weight = rows.n_tokens * world_size / batch.n_tokens
        loss, accuracy = train_step(net, rows, optimizer, c.label_smoothing, c.clip_norm, c.bf16, weight)
        if c.distributed:  # the whole batch's loss and accuracy: sums over every rank's tokens
            totals = torch.tensor([loss * rows.n_tokens, accuracy * rows.n_tokens], device=device, dtype=torch.float64)
            dist.all_reduce(totals)
            loss, accuracy = (totals / batch.n_tokens).tolist()
        scheduler.step()
        history.seconds += time.perf_counter() - start
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
    bar.close()


def shard(batch: Batch, rank: int, world_size: int) -> Batch:
    """Rank ``rank``'s rows of ``batch``: the ``rank``-th of ``world_size`` equal slices, the sampler of data-parallel
    training. Every rank draws the same batch from the shared seeded generator, so the slices together are the
    batch one process would train on, and no two ranks see the same sequence."""
    size = len(batch) // world_size
    rows = slice(rank * size, (rank + 1) * size)
    tgt_out = batch.tgt_out[rows]
    return Batch(batch.src[rows], batch.tgt_in[rows], tgt_out, batch.src_mask[rows], batch.tgt_mask[rows],
                 int((tgt_out != PAD_ID).sum()))


def _evaluate_on_rank0(model: Transformer, c: TrainConfig, rank: int, eval_batches: Sequence[Batch] | None) -> EvalResult:
    """The periodic evaluation (on ``eval_batches`` when given, else on ``c.eval_size`` fresh sequences of ``c.task``).
    Data-parallel, rank 0 scores and sends every rank its result, so that all of them log the same history and stop
    at the same step."""
    if rank != 0:
        result = None
    elif eval_batches is not None:
        result = evaluate_batches(model, eval_batches)
    else:
        result = evaluate(model, c.task, c.eval_size, c.vocab_size, c.min_len, c.max_len)
    if c.distributed:
        received = [result]
        dist.broadcast_object_list(received, src=0)
        result = received[0]
    return result


class _NoBar:
    """What :func:`_progress_bar` returns when nothing is to be shown while training: the steps, and no output."""

    def __init__(self, steps: range):
        self.steps = steps

    def __iter__(self) -> Iterator[int]:
        return iter(self.steps)

    def set_postfix(self, **values: object) -> None:
        pass

    def close(self) -> None:
        pass


class _FinalLine(_NoBar):
    """A progress report for pages that cannot redraw a line (the static book): one line when training ends."""

    def __init__(self, steps: range, description: str):
        super().__init__(steps)
        self.description, self.postfix, self.done = description, {}, 0
        self.start = time.perf_counter()

    def __iter__(self) -> Iterator[int]:
        for step in self.steps:
            self.done = step
            yield step

    def set_postfix(self, **values: object) -> None:
        self.postfix = values

    def close(self) -> None:
        values = "".join(f", {name} {value}" for name, value in self.postfix.items())
        print(f"{self.description}: {self.done} steps in {time.perf_counter() - self.start:.1f} s{values}", flush=True)


def _progress_bar(steps: range, description: str, progress: bool | str) -> Iterable[int]:
    """What training shows while it runs: ``True``, a live tqdm bar (a widget in notebooks, text in terminals);
    ``"text"``, one plain line when it ends; ``False``, nothing. tqdm is optional: without it, ``True`` shows nothing."""
    if progress == "text":
        return _FinalLine(steps, description)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar(steps)
    return tqdm(steps, desc=description, leave=True) if progress else _NoBar(steps)


def train_task(
    task: str = "copy", steps: int | None = None, seed: int = 0, device: str = "auto", progress: bool | str = True,
    model_config: TransformerConfig | None = None, **train_overrides,
) -> tuple[Transformer, History]:
    """Build the documented small model (seeded) and train it on ``task``: the one-call version of the above."""
    if steps is not None:
        train_overrides["steps"] = steps
    config = TrainConfig(task=task, seed=seed, device=device, **train_overrides)
    torch.manual_seed(seed)
    model = Transformer(model_config or small_model_config(config.vocab_size))
    return model, train(model, config, progress=progress)


def train_dates(data: DatesData, config: TrainConfig, progress: bool | str = True) -> tuple[Transformer, History]:
    """The small model (seeded with ``config.seed``) trained on ``data.train`` in batches bucketed by source length,
    drawn with ``config.seed``, and evaluated on ``data.test`` in batches of 500. ``config``'s task, vocabulary and
    lengths are those of the synthetic tasks and play no part; its steps, batch size, schedule and device do."""
    texts, targets = [e.text for e in data.train], [e.iso for e in data.train]
    stream = batch_stream(texts, targets, data.source_vocab, data.target_vocab, config.batch_size,
                          torch.Generator().manual_seed(config.seed))
    torch.manual_seed(config.seed)
    model = Transformer(small_model_config(src_vocab_size=len(data.source_vocab), tgt_vocab_size=len(data.target_vocab)))
    return model, train(model, config, progress=progress, batches=stream, eval_batches=data.test_batches())
