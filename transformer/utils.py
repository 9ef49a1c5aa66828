"""Small helpers shared by decoding, export, training and the command line: device choice, random numbers, modes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

DEVICES = ("auto", "cpu", "cuda", "mps")


def _mps_available() -> bool:
    return hasattr(torch.backends, "mps") and torch.backends.mps.is_available()


def select_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` picks the fastest device present (CUDA, then Apple's MPS, then the CPU); any other name is checked.

    Asking for a device that is not there raises a clear error instead of failing later inside a ``.to()``.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str) or device.split(":")[0] not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES} (optionally 'cuda:N'); got {device!r}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if _mps_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"device {device!r} was asked for, but this PyTorch build sees no CUDA GPU; use 'auto' or 'cpu'"
        )
    if device == "mps" and not _mps_available():
        raise RuntimeError("device 'mps' was asked for, but Apple's MPS backend is not available; use 'auto' or 'cpu'")
    return torch.device(device)


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with PyTorch's global generators (the CPU's and CUDA's, which initial weights and dropout draw from)
    seeded with ``seed``, then put them back as they were: the block repeats, and the caller's draws are undisturbed."""
    with torch.random.fork_rng(devices=range(torch.cuda.device_count()) if torch.cuda.is_available() else []):
        torch.manual_seed(seed)
        yield


def make_rng(seed: int) -> torch.Generator:
    """A private CPU random number generator: data drawn from it does not depend on (or disturb) the global one."""
    return torch.Generator().manual_seed(seed)


@contextmanager
def eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """Run a block in evaluation mode (no dropout), then put ``model`` back in the mode it was in."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)
