"""The documented configurations: the small model that learns the synthetic tasks on a CPU, The Annotated
Transformer's copy example for comparison, how each task of the command line trains (its recipe: a
:class:`TrainConfig`, needing no library of the task's own), and the one-call recipes that build and train a model on a
synthetic task or on pairs of text."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from ..config import TransformerConfig
from ..model import Transformer
from ..utils import make_rng, seeded
from .bucketing import batch_stream
from .config import RunConfig, TrainConfig
from .language_model import (
    MASK_RATE,
    DecoderOnlyStream,
    MaskedTokenStream,
    decoder_only_batch,
    masked_token_eval_batches,
)
from .loop import History, train
from .progress import Progress
from .schedule import noam_lr
from .tasks import DEFAULT_VOCAB_SIZE, Batch, TaskConfig, check_task_padding
from .tokenizer import Vocabulary


def small_model_config(vocab_size: int = DEFAULT_VOCAB_SIZE, **overrides) -> TransformerConfig:
    """The small model that learns copy and reverse to 100 % exact match in seconds of training on one CPU core.

    d_model 32, 2 heads of 16, d_ff 128, 2 + 2 layers: 61k parameters, 1/240 of the Annotated Transformer's copy
    model, and plenty for 10 symbols and 10 positions (how the sizes were chosen: ``benchmarks/README.md``). Two
    heads, not more: on a CPU, at these short lengths, the fused attention kernel's time grows with the number of
    heads, not with their width. No dropout: every batch is drawn afresh, and though the shortest sequences come back
    again and again, the longer ones do not, so there is little to learn by heart and dropout would mostly add noise.
    Pre-norm: the identity path through every block keeps gradients well scaled, so a high learning rate works after a
    short warm-up.
    """
    values = dict(
        src_vocab_size=vocab_size,
        tgt_vocab_size=vocab_size,
        d_model=32,
        n_heads=2,
        d_ff=128,
        n_encoder_layers=2,
        n_decoder_layers=2,
        dropout=0.0,
        norm_first=True,
        max_positions=64,
    )
    values.update(overrides)
    return TransformerConfig(**values)


def annotated_transformer_configs(vocab_size: int = DEFAULT_VOCAB_SIZE) -> tuple[TransformerConfig, TrainConfig]:
    """Our package set up like The Annotated Transformer's copy example: d_model 512, 8 heads, d_ff 2048, 2 + 2
    pre-norm layers, dropout 0.1, batch 80, Adam(betas (0.9, 0.98), eps 1e-9) on the paper's schedule with
    warm-up 400 and factor 0.5 (peak ``0.5 / sqrt(512 * 400)``, about 1.1e-3), 400 steps (20 epochs of 20
    batches), no label smoothing, no gradient clipping."""
    model_config = small_model_config(
        vocab_size,
        d_model=512,
        n_heads=8,
        d_ff=2048,
        n_encoder_layers=2,
        n_decoder_layers=2,
        dropout=0.1,
        norm_first=True,
    )
    peak = noam_lr(400, d_model=512, warmup=400, factor=0.5)
    train_config = TrainConfig(
        steps=400,
        batch_size=80,
        lr=peak,
        warmup=400,
        schedule="noam",
        label_smoothing=0.0,
        clip_norm=None,
        eval_every=100,
    )
    return model_config, train_config


def small_train_config(**overrides) -> TrainConfig:
    """How the synthetic tasks train (copy, reverse, sort; chapter 7): :class:`TrainConfig`'s defaults, which are their
    recipe, with ``overrides``."""
    return TrainConfig(**overrides)


def dates_train_config(**overrides) -> TrainConfig:
    """How the dates chapter trains: 300 steps of 64 examples (less than one epoch of the 20,000), scored on the test
    batches every 100 steps, with a warm-up of 30 steps to a peak of 5e-3 and a linear decay to 0; the rest is
    :class:`TrainConfig`'s (Adam, label smoothing 0.1, gradients clipped at norm 1)."""
    return TrainConfig(
        **{
            "steps": 300,
            "batch_size": 64,
            "eval_every": 100,
            "lr": 5e-3,
            "warmup": 30,
            "schedule": "linear",
            **overrides,
        }
    )


def translation_train_config(**overrides) -> TrainConfig:
    """How the translation chapter trains: 1,200 steps of 128 pairs (about four passes over the 40,000 training
    pairs), Adam with the paper's betas, label smoothing 0.1, a warm-up of 100 steps to a peak of 3e-3, then a linear
    decay to 0 (the paper's ``1 / sqrt(step)`` tail would still be at a third of the peak at the end)."""
    values = dict(steps=1200, batch_size=128, lr=3e-3, warmup=100, schedule="linear", eval_every=300)
    values.update(overrides)
    return TrainConfig(**values)


def train_task(
    data: TaskConfig | str = "copy",
    config: TrainConfig | None = None,
    run: RunConfig | None = None,
    model: Transformer | None = None,
    progress: Progress = True,
) -> tuple[Transformer, History]:
    """Train ``model`` (default: the documented small model, its initial weights drawn with ``run.seed``) on the
    synthetic task ``data`` (a task's name: its default sizes) with ``config``: the one-call version of the above.
    Returns the trained model and its :class:`History`."""
    data = TaskConfig(data) if isinstance(data, str) else data
    config, run = config or TrainConfig(), run or RunConfig()
    if model is None:
        with seeded(run.seed):
            model = Transformer(small_model_config(data.vocab_size))
    check_task_padding(model.config.pad_id)
    if min(model.config.src_vocab_size, model.config.tgt_vocab_size) < data.vocab_size:
        raise ValueError(
            f"the model's vocabularies must hold the task's {data.vocab_size} ids; got src_vocab_size="
            f"{model.config.src_vocab_size}, tgt_vocab_size={model.config.tgt_vocab_size}"
        )
    history = train(
        model, data.stream(config.batch_size, run.seed), data.eval_batches(), config, run, progress, task=data.task
    )
    return model, history


def train_decoder_only(
    model: nn.Module,
    data: TaskConfig | str = "copy",
    config: TrainConfig | None = None,
    run: RunConfig | None = None,
    progress: Progress = True,
) -> History:
    """Train a decoder-only ``model`` (``model(tokens, mask) -> logits``, such as the book kit's
    :class:`~transformer_book.descendants.GPT`) on the synthetic task ``data`` written as ``x <sep> y </s>``
    (:func:`~.language_model.decoder_only_batch`), with ``config``. With the same ``config`` and ``run`` as
    :func:`train_task`, it trains on the same sequences, drawn in the same order, and is scored on the same held-out
    ones: a comparison of the two layouts, nothing else changed. Returns the :class:`History`."""
    data = TaskConfig(data) if isinstance(data, str) else data
    config, run = config or TrainConfig(), run or RunConfig()
    check_one_stack_model(model, data.vocab_size, f"the task's {data.vocab_size} ids")
    sizes = {name: getattr(data, name) for name in ("vocab_size", "min_seq_len", "max_seq_len")}
    stream = DecoderOnlyStream(data.task, config.batch_size, **sizes, rng=make_rng(run.seed))
    eval_batches = [decoder_only_batch(batch) for batch in data.eval_batches()]
    return train(model, stream, eval_batches, config, run, progress, task=data.task)


def train_masked_tokens(
    model: nn.Module,
    data: TaskConfig | str = "copy",
    config: TrainConfig | None = None,
    run: RunConfig | None = None,
    progress: Progress = True,
    rate: float = MASK_RATE,
) -> History:
    """Train ``model`` (``model(tokens, mask) -> logits``: the book kit's encoder-only
    :class:`~transformer_book.descendants.BERT`, or a causal model for comparison) to fill in the masked symbols of
    the synthetic task's rows ``x <sep> y`` (:func:`~.language_model.masked_token_batch`; ``rate`` of each row's
    symbols chosen), scored on ``data.eval_size`` held-out rows. The model's vocabulary needs one id more than the
    task's, the mask (id ``data.vocab_size``). Returns the :class:`History`; its exact match is the share of rows
    whose every chosen symbol is predicted right."""
    data = TaskConfig(data) if isinstance(data, str) else data
    config, run = config or TrainConfig(), run or RunConfig()
    check_one_stack_model(model, data.vocab_size + 1, f"the task's {data.vocab_size} ids and the mask")
    sizes = {name: getattr(data, name) for name in ("vocab_size", "min_seq_len", "max_seq_len")}
    stream = MaskedTokenStream(data.task, config.batch_size, **sizes, rate=rate, rng=make_rng(run.seed))
    eval_batches = masked_token_eval_batches(data.task, data.eval_size, **sizes, rate=rate)
    return train(model, stream, eval_batches, config, run, progress, task=data.task)


def check_one_stack_model(model: nn.Module, ids: int, which: str) -> None:
    """Raise a clear error unless ``model`` (a model of one stack: its ``config`` has ``vocab_size`` and ``pad_id``)
    pads as the synthetic tasks do and its vocabulary holds the ``ids`` their rows use (``which``, in words)."""
    config = getattr(model, "config", None)
    if not (hasattr(config, "vocab_size") and hasattr(config, "pad_id")):
        raise TypeError(
            "model must be a model of one stack whose config has vocab_size and pad_id (transformer_book.descendants' "
            f"GPT or BERT); got {type(model).__name__}"
        )
    check_task_padding(config.pad_id)
    if config.vocab_size < ids:
        raise ValueError(f"the model's vocabulary must hold {which}: vocab_size >= {ids}; got {config.vocab_size}")


def train_on_pairs(
    model_config: TransformerConfig,
    sources: Sequence[str],
    targets: Sequence[str],
    source_vocab: Vocabulary,
    target_vocab: Vocabulary,
    eval_batches: list[Batch],
    config: TrainConfig,
    run: RunConfig,
    task: str,
    progress: Progress = True,
) -> tuple[Transformer, History]:
    """A model of ``model_config`` (its initial weights drawn with ``run.seed``) trained on the text pairs
    ``sources -> targets`` in batches bucketed by source length, drawn with ``run.seed``, and scored on
    ``eval_batches``: the recipe of the tasks of text (:func:`~.dates.train_dates`,
    :func:`~.translation.train_translation`). ``task`` names the run in its progress bar and training checkpoints."""
    stream = batch_stream(sources, targets, source_vocab, target_vocab, config.batch_size, rng=make_rng(run.seed))
    with seeded(run.seed):
        model = Transformer(model_config)
    history = train(model, stream, eval_batches, config, run, progress, task=task)
    return model, history
