"""The documented configurations: the small model that learns the synthetic tasks on a CPU, The Annotated
Transformer's copy example for comparison, and the one-call recipe that builds and trains a model on a task."""

from __future__ import annotations

from pathlib import Path

import torch

from ..config import TransformerConfig
from ..model import Transformer
from .config import TrainConfig
from .loop import History, train
from .progress import Progress
from .schedule import noam_lr
from .tasks import DEFAULT_VOCAB_SIZE


def small_model_config(vocab_size: int = DEFAULT_VOCAB_SIZE, **overrides) -> TransformerConfig:
    """The small model that learns copy and reverse to 100 % exact match in seconds of training on one CPU core.

    d_model 32, 2 heads of 16, d_ff 128, 2 + 2 layers: 61k parameters, 1/240 of the Annotated Transformer's copy
    model, and plenty for 10 symbols and 10 positions (how the sizes were chosen: ``benchmarks/README.md``). Two
    heads, not more: on a CPU, at these short lengths, the fused attention kernel's time grows with the number of
    heads, not with their width. No dropout: every batch is fresh random data, so there is nothing to overfit and
    dropout would only add noise. Pre-norm: the identity path through every block keeps gradients well scaled, so a
    high learning rate works after a short warm-up.
    """
    values = dict(
        src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, d_model=32, n_heads=2, d_ff=128,
        n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, norm_first=True, max_positions=64,
    )
    values.update(overrides)
    return TransformerConfig(**values)


def annotated_transformer_configs(vocab_size: int = DEFAULT_VOCAB_SIZE) -> tuple[TransformerConfig, TrainConfig]:
    """Our package set up like The Annotated Transformer's copy example: d_model 512, 8 heads, d_ff 2048, 2 + 2
    pre-norm layers, dropout 0.1, batch 80, Adam(betas (0.9, 0.98), eps 1e-9) on the paper's schedule with
    warm-up 400 and factor 0.5 (peak ``0.5 / sqrt(512 * 400)``, about 1.1e-3), 400 steps (20 epochs of 20
    batches), no label smoothing, no gradient clipping."""
    model_config = small_model_config(
        vocab_size, d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=2, n_decoder_layers=2, dropout=0.1,
        norm_first=True,
    )
    peak = noam_lr(400, d_model=512, warmup=400, factor=0.5)
    train_config = TrainConfig(
        steps=400, batch_size=80, lr=peak, warmup=400, schedule="noam", label_smoothing=0.0, clip_norm=None,
        eval_every=100, threads=None,
    )
    return model_config, train_config


def train_task(
    task: str = "copy", steps: int | None = None, seed: int = 0, device: str = "auto", progress: Progress = True,
    model_config: TransformerConfig | None = None, save_to: str | Path | None = None, save_every: int | None = None,
    resume_from: str | Path | None = None, **train_overrides,
) -> tuple[Transformer, History]:
    """Build the documented small model (seeded) and train it on ``task``: the one-call version of the above.
    ``save_to``, ``save_every`` and ``resume_from``: training checkpoints, as in :func:`~transformer.train.train`."""
    if steps is not None:
        train_overrides["steps"] = steps
    config = TrainConfig(task=task, seed=seed, device=device, **train_overrides)
    torch.manual_seed(seed)
    model = Transformer(model_config or small_model_config(config.vocab_size))
    history = train(model, config, progress=progress, save_to=save_to, save_every=save_every, resume_from=resume_from)
    return model, history
