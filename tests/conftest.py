import shutil
from pathlib import Path

import pytest
import torch

from transformer import Transformer, TransformerConfig
from transformer.train import loop
from transformer.train.recipes import small_model_config

# One intra-op thread per process: pytest runs two workers on two cores (`make test`), and more threads than cores
# make the tests' many small operations wait for each other (one device test ran 12 times slower beside the browser).
torch.set_num_threads(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/core with ``core``: ``make check`` runs those that are not ``slow``, and ``make
    test`` runs everything else (``-m "not core or slow"``) after it, so that no test runs twice."""
    for item in items:
        if "core" in item.path.parent.parts[-1:]:
            item.add_marker(pytest.mark.core)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def keep_every_checkpoint(monkeypatch):
    """Copy every training checkpoint a run writes to ``<name>.<step>.pt`` beside it (the run keeps only the last)."""
    original = loop.save_training_checkpoint

    def keeping(path, step, *args, **kwargs):
        written = original(path, step, *args, **kwargs)
        shutil.copy(written, Path(path).with_suffix(f".{step}.pt"))
        return written

    monkeypatch.setattr(loop, "save_training_checkpoint", keeping)


def small_config(**overrides) -> TransformerConfig:
    """A model small enough for fast tests, with the paper's structure."""
    values = dict(
        src_vocab_size=17,
        tgt_vocab_size=19,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        dropout=0.0,
        max_positions=64,
    )
    values.update(overrides)
    return TransformerConfig(**values)


def small_model(**overrides) -> Transformer:
    return Transformer(small_config(**overrides)).eval()


def random_tokens(batch: int, length: int, vocab: int, pad_from: list[int] | None = None) -> torch.Tensor:
    """Ids in [1, vocab) with row i padded (id 0) from position pad_from[i] on."""
    tokens = torch.randint(1, vocab, (batch, length))
    for row, start in enumerate(pad_from or []):
        tokens[row, start:] = 0
    return tokens


@pytest.fixture(scope="module")
def weights():
    """The weights of a small untrained model, seeded, shared by a module's tests."""
    torch.manual_seed(0)
    return Transformer(small_model_config()).eval().state_dict()
