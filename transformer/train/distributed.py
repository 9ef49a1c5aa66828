"""Data-parallel training with PyTorch's own engine (DistributedDataParallel): each rank's slice of a batch."""

from __future__ import annotations

from dataclasses import fields, replace

from torch import Tensor

from ..tokens import PAD_ID
from .language_model import LMBatch
from .tasks import Batch


def shard(batch: Batch | LMBatch, rank: int, world_size: int, pad_id: int = PAD_ID) -> Batch | LMBatch:
    """Rank ``rank``'s rows of ``batch``: the ``rank``-th of ``world_size`` equal slices, the sampler of data-parallel
    training. Every rank draws the same batch from the shared seeded generator, so the slices together are the
    batch one process would train on, and no two ranks see the same sequence. ``n_tokens`` counts the slice's target
    tokens that are not ``pad_id`` (the model's)."""
    size = len(batch) // world_size
    rows = slice(rank * size, (rank + 1) * size)
    tensors = {
        f.name: getattr(batch, f.name)[rows] for f in fields(batch) if isinstance(getattr(batch, f.name), Tensor)
    }
    return replace(batch, **tensors, n_tokens=int((tensors["tgt_out"] != pad_id).sum()))
