"""Every task the command line trains and scores, by name, behind one interface.

A task is a :class:`Task`: its recipe (:meth:`~Task.train_config`, one of :mod:`.recipes`), its training
(:meth:`~Task.train`: its data, its model, the loop), what it reports and records once trained (:meth:`~Task.report`:
its scores, and what rebuilds its test data later) and how it scores a saved model (:meth:`~Task.evaluate`, with
:class:`EvalOptions`). Each is defined beside its data: the synthetic tasks in :mod:`.synthetic` (beside :mod:`.tasks`), dates in
:mod:`.dates`,
translation in :mod:`.translation` (:class:`~.text.TextTask` holds what the two tasks of text share). The command line
finds every task in :data:`REGISTRY` and calls only these methods, so a new task is a :class:`Task` in its own module
and one line here.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..model import Transformer
from .config import RunConfig, TrainConfig
from .evaluation import EvalResult
from .loop import History

Say = Callable[[str], None]  # where a task's report goes: print on the command line


@dataclass(frozen=True)
class Registered:
    """What the command line knows of a task before it imports the module that defines it."""

    module: str  # the module of the wing that defines it, imported when the task is asked for
    cls: str  # its Task class there, built with the task's name
    vocabulary: str  # tasks of one vocabulary score each other's models
    recipe: str  # the function of .recipes that returns its TrainConfig (which needs no library of the task's)
    libraries: tuple[str, ...] = ()  # what it needs beyond torch


REGISTRY = {
    "copy": Registered("synthetic", "SyntheticTask", "symbols", "small_train_config"),
    "reverse": Registered("synthetic", "SyntheticTask", "symbols", "small_train_config"),
    "sort": Registered("synthetic", "SyntheticTask", "symbols", "small_train_config"),
    "dates": Registered("dates", "DatesTask", "dates", "dates_train_config"),
    "translation": Registered(
        "translation",
        "TranslationTask",
        "translation",
        "translation_train_config",
        ("babel", "num2words", "tokenizers"),
    ),
}


def recipe(name: str, **overrides) -> TrainConfig:
    """Task ``name``'s documented training (its recipe in :mod:`.recipes`), with ``overrides`` (steps, batch size)."""
    recipes = importlib.import_module(f"{__package__}.recipes")
    return getattr(recipes, REGISTRY[name].recipe)(**overrides)


@dataclass(frozen=True)
class EvalOptions:
    """How to score a saved model: the checkpoint's path, and what the command line's ``evaluate`` takes."""

    checkpoint: Path
    n: int = 1000  # fresh sequences; for the tasks of text, held-out test examples
    beam_size: int = 1  # 1: greedy decoding
    min_seq_len: int | None = None  # the synthetic tasks: other lengths than those trained on (None: as trained)
    max_seq_len: int | None = None
    seed: int | None = None  # the synthetic tasks: another draw of fresh sequences (None: the evaluation seed)


class OptionError(ValueError):
    """An option that a task cannot take (``option``, its name in :class:`EvalOptions`, and its ``value``), or a
    checkpoint it cannot score (no option); ``reason`` says why."""

    def __init__(self, reason: str, option: str | None = None, value: object = None):
        super().__init__(reason if option is None else f"{option}={value!r}: {reason}")
        self.reason, self.option, self.value = reason, option, value


def missing_libraries(name: str) -> list[str]:
    """The libraries task ``name`` needs that are not installed."""
    return [library for library in REGISTRY[name].libraries if importlib.util.find_spec(library) is None]


def get_task(name: str) -> Task:
    """The task called ``name`` (its module imported now); an ``ImportError`` names the libraries it lacks."""
    if name not in REGISTRY:
        raise ValueError(f"task must be one of {tuple(REGISTRY)}; got {name!r}")
    missing = missing_libraries(name)
    if missing:
        libraries = REGISTRY[name].libraries
        raise ImportError(
            f"needs {', '.join(libraries)}, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed: pip install {' '.join(missing)} (or "
            "the package's live extra)"
        )
    entry = REGISTRY[name]
    return getattr(importlib.import_module(f"{__package__}.{entry.module}"), entry.cls)(name)


class Task:
    """One task of the command line. ``title`` names what ``train`` trains in its first line."""

    title: str

    def __init__(self, name: str):
        self.name = name

    def train_config(self, **overrides) -> TrainConfig:
        """The task's recipe, with ``overrides`` (steps, batch size) in place of its own values."""
        return recipe(self.name, **overrides)

    def train(
        self, config: TrainConfig, run: RunConfig, eval_size: int, progress: bool
    ) -> tuple[Transformer, History, object]:
        """Train the task's model with ``config`` as ``run`` says: ``(model, history, data)``, the data as
        :meth:`report` needs it (``eval_size`` examples to score it on, where the task has a fixed test set)."""
        raise NotImplementedError

    def report(self, model: Transformer, data: object, eval_size: int, say: Say) -> dict:
        """Say the trained model's scores; return the checkpoint's metadata (the scores, and what rebuilds the data
        the model is scored on later)."""
        raise NotImplementedError

    def evaluate(self, model: Transformer, metadata: dict, options: EvalOptions, say: Say) -> None:
        """Say the scores of a saved ``model`` whose checkpoint holds ``metadata``, as ``options`` ask;
        :class:`OptionError` for an option the task cannot take."""
        raise NotImplementedError


def say_result(say: Say, title: str, result: EvalResult, exact_match: str = "exact match") -> None:
    """``title``, then exact match and token accuracy, one per line, aligned."""
    width = max(len(exact_match), len("token accuracy")) + 2
    say(title)
    say(f"{exact_match + ':':<{width}}{result.exact_match:.1%}")
    say(f"{'token accuracy:':<{width}}{result.token_accuracy:.2%}")
