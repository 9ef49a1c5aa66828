import importlib.util
import shutil
from pathlib import Path

import pytest
import torch
from chromium import browser, cached_context, server  # noqa: F401 (fixtures of every test that opens pages)

from transformer import Transformer, TransformerConfig
from transformer.train import loop
from transformer.train.recipes import small_model_config

# One intra-op thread per process: pytest runs two workers on two cores (`make test`), and more threads than cores
# make the tests' many small operations wait for each other (one device test ran 12 times slower beside the browser).
torch.set_num_threads(1)


# The tests mirror the code: core/ the model core, train/ the training wing (both need only torch, numpy, pytest and
# hypothesis, but for the translation task's tests, marked ``live``: they need the live extra), kit/ the book kit,
# notebooks/ the chapters as notebooks (their editions, first cells, the front ends that run them), site/ the built
# book in a browser.
TORCH_ONLY = {"core", "train"}
# ... and in an environment without the live extra (`pytest tests/core tests/train` where only torch, numpy, pytest and
# hypothesis are installed), the translation task's tests are not collected.
LIVE_EXTRA = ("babel", "num2words", "tokenizers")
collect_ignore = (
    []
    if all(importlib.util.find_spec(name) for name in LIVE_EXTRA)
    else ["train/test_translation.py", "train/test_translation_cli.py"]
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of tests/core and tests/train that need only torch with ``core``: ``make check`` runs those that
    are not ``slow``, and ``make test`` runs everything else (``-m "not core or slow"``) after it, so that no test runs
    twice."""
    for item in items:
        if item.path.parent.name in TORCH_ONLY and item.get_closest_marker("live") is None:
            item.add_marker(pytest.mark.core)


# `make test` runs its last stage with ``--dist loadscope``, which this project reads as pytest-xdist's loadfile (each
# module whole on one worker: their module fixtures, a Jupyter server running every chapter, the playground with its
# models loaded, are worth making once) but for SPREAD_MODULES, whose tests go to either worker one at a time. Each of
# those opens pages of the built book, its module fixtures (a static file server, a browser) cost about a second per
# worker, and it takes minutes: kept whole, it alone outlasted every other module of the stage together.
# (pytest-xdist's own loadgroup, with xdist_group marks, groups nothing under pytest 9.2: pytest-xdist issue 1386.)
SPREAD_MODULES = {"test_book_browser.py"}


def work_unit(nodeid: str) -> str:
    """What pytest-xdist hands a worker at once with ``--dist loadscope``: the test's module, or the test itself."""
    module = nodeid.split("::", 1)[0]
    return nodeid if Path(module).name in SPREAD_MODULES else module


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: pytest runs without it too
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleOrTestScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ModuleOrTestScheduling(config, log)


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
