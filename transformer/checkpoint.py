"""Save and load a model as one file: its configuration and its weights (plus any metadata, e.g. how it was trained).

Loading rebuilds the model from the stored :class:`~transformer.TransformerConfig`, so the file is all that is
needed, and it uses ``torch.load(weights_only=True)``: a checkpoint holds only tensors and plain Python values and
cannot run code when it is opened.

Every save is atomic (:func:`atomic_save`): a writer killed halfway, or a full disk, leaves the previous file whole.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from .config import TransformerConfig
from .model import Transformer

FORMAT = "transformer-interactive/checkpoint-v2"


def atomic_save(obj: object, path: str | Path) -> Path:
    """``torch.save(obj, path)`` such that ``path`` holds its old content or all of the new one, never a part: the bytes
    go to a new file in the same folder, are flushed and synced to the disk, and ``os.replace`` (one step, done whole
    or not at all) moves it onto ``path``. A writer killed on the way leaves a stray ``.<name>.<random>.tmp`` file."""
    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot save the checkpoint: the folder {str(path.parent)!r} does not exist")
    temporary = path.parent / f".{path.name}.{os.urandom(8).hex()}.tmp"
    try:
        with open(temporary, "xb") as file:  # a new file, with the permissions of any other (mkstemp's are private)
            torch.save(obj, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:  # an error or an interrupt: the partial file goes, the previous checkpoint stays
        temporary.unlink(missing_ok=True)
        raise
    return path


def save_checkpoint(model: Transformer, path: str | Path, **metadata) -> Path:
    """Write ``model``'s configuration, weights and ``metadata`` (plain values: numbers, strings, lists, dicts),
    atomically (:func:`atomic_save`)."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    checkpoint = {"format": FORMAT, "config": model.config.to_dict(), "state_dict": state, "metadata": metadata}
    return atomic_save(checkpoint, path)


def load_file(path: str | Path, written_by: str) -> object:
    """``torch.load(path, weights_only=True)`` onto the CPU; a one-line error names a missing or unreadable file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {str(path)!r}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch's own message runs to several paragraphs; the cause stays chained
        raise ValueError(
            f"{str(path)!r} is not a readable PyTorch checkpoint (torch.load with weights_only=True failed: "
            f"{type(error).__name__}); expected a file written by {written_by}"
        ) from error


def read_checkpoint(path: str | Path) -> dict:
    """The raw checkpoint: ``{"format", "config", "state_dict", "metadata"}``, checked to be one of ours."""
    checkpoint = load_file(path, "transformer.save_checkpoint")
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        raise ValueError(f"{str(path)!r} is not a checkpoint written by transformer.save_checkpoint")
    return checkpoint


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> Transformer:
    """Rebuild the saved model on ``device``, in eval mode; its outputs equal the saved model's exactly."""
    checkpoint = read_checkpoint(path)
    model = Transformer(TransformerConfig(**checkpoint["config"]))
    model.load_state_dict(checkpoint["state_dict"])
    return model.to(device).eval()
