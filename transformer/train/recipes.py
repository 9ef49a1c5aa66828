"""The documented configurations: the small model that learns the synthetic tasks on a CPU, The Annotated
Transformer's copy example for comparison, the one-call recipe that builds and trains a model on a task, and the
synthetic tasks as the command line trains and scores them (:class:`SyntheticTask`)."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Sequence

from ..config import TransformerConfig
from ..model import Transformer
from ..utils import make_rng, seeded
from .bucketing import batch_stream
from .config import RunConfig, TrainConfig
from .evaluation import EVAL_SEED, evaluate
from .loop import History, train
from .progress import Progress
from .registry import OptionError, Say, Task, say_result
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


class SyntheticTask(Task):
    """Copy, reverse or sort (:mod:`.tasks`) on the command line: the documented small model and
    :class:`TrainConfig`, scored on fresh random sequences; a model of one scores on the others too."""

    def __init__(self, name: str):
        super().__init__(name)
        self.title = f"the small configuration on {name!r}"

    def train_config(self, **options) -> TrainConfig:
        return TrainConfig(**options)

    def train(self, config: TrainConfig, run: RunConfig, eval_size: int, progress: bool) -> tuple:
        data = TaskConfig(self.name)
        return *train_task(data, config, run, progress=progress), data

    def report(self, model: Transformer, data: TaskConfig, eval_size: int, say: Say) -> dict:
        result = evaluate(
            model,
            data.task,
            n=eval_size,
            vocab_size=data.vocab_size,
            min_seq_len=data.min_seq_len,
            max_seq_len=data.max_seq_len,
        )
        say(
            f"exact match on {result.n:,} fresh {self.name} sequences: {result.exact_match:.1%} "
            f"(token accuracy {result.token_accuracy:.2%})"
        )
        return {"result": result.to_dict(), "data": data.to_dict()}

    def evaluate(self, model: Transformer, metadata: dict, options: Namespace, say: Say) -> None:
        if options.beam_size != 1:
            raise OptionError(
                "--beam-size: the synthetic tasks are scored with greedy decoding; beam search is for "
                "dates and translation"
            )
        trained = metadata.get("data", {})
        vocab_size = trained.get("vocab_size", DEFAULT_VOCAB_SIZE)
        min_seq_len = options.min_seq_len or trained.get("min_seq_len", 1)
        max_seq_len = options.max_seq_len or trained.get("max_seq_len", 10)
        if min_seq_len > max_seq_len:
            raise OptionError(f"--min-seq-len ({min_seq_len}) must not exceed --max-seq-len ({max_seq_len})")
        if max_seq_len + 1 > model.config.max_positions:  # the decoder reads BOS + the sequence
            raise OptionError(
                f"--max-seq-len {max_seq_len} is too long for this model's positional table "
                f"(max_positions={model.config.max_positions}, which must hold the sequence and BOS)"
            )
        seed = EVAL_SEED if options.seed is None else options.seed
        result = evaluate(
            model,
            self.name,
            n=options.n,
            vocab_size=vocab_size,
            min_seq_len=min_seq_len,
            max_seq_len=max_seq_len,
            seed=seed,
        )
        say_result(
            say,
            f"{options.checkpoint}: {self.name}, {result.n:,} fresh sequences of length {min_seq_len}-{max_seq_len}",
            result,
        )
