"""Every task the command line trains and scores, by name, behind one interface.

A task is a :class:`Task`: its recipe (:meth:`~Task.train_config`), its training (:meth:`~Task.train`: its data,
its model, the loop), what it reports and records once trained (:meth:`~Task.report`: its scores, and what rebuilds
its test data later) and how it scores a saved model (:meth:`~Task.evaluate`). Each is defined beside its data: the
synthetic tasks in :mod:`.recipes`, dates in :mod:`.dates`, translation in :mod:`.translation`; :class:`TextTask`
holds what the two tasks of text share. The command line finds every task in :data:`REGISTRY` and calls only these
methods, so a new task is a :class:`Task` in its own module and one line here.
"""

from __future__ import annotations

import importlib
import importlib.util
from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..model import Transformer
from .config import RunConfig, TrainConfig
from .evaluation import EvalResult, evaluate_batches
from .loop import History

Say = Callable[[str], None]  # where a task's report goes: print on the command line


@dataclass(frozen=True)
class Registered:
    """What the command line knows of a task before it imports the module that defines it."""

    module: str  # the module of the wing that defines it, imported when the task is asked for
    cls: str  # its Task class there, built with the task's name
    vocabulary: str  # tasks of one vocabulary score each other's models
    steps: int  # its recipe's steps and batch size, for --help (tests check them against train_config())
    batch_size: int
    libraries: tuple[str, ...] = ()  # what it needs beyond torch


REGISTRY = {
    "copy": Registered("recipes", "SyntheticTask", "symbols", 500, 64),
    "reverse": Registered("recipes", "SyntheticTask", "symbols", 500, 64),
    "sort": Registered("recipes", "SyntheticTask", "symbols", 500, 64),
    "dates": Registered("dates", "DatesTask", "dates", 300, 64),
    "translation": Registered(
        "translation", "TranslationTask", "translation", 1200, 128, ("babel", "num2words", "tokenizers")
    ),
}


class OptionError(ValueError):
    """An option that a task cannot take or a checkpoint it cannot score; the message says which and why."""


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

    def train_config(self, **options) -> TrainConfig:
        """The task's recipe, with ``options`` (steps, batch size) in place of its own values."""
        raise NotImplementedError

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

    def evaluate(self, model: Transformer, metadata: dict, options: Namespace, say: Say) -> None:
        """Say the scores of a saved ``model`` whose checkpoint holds ``metadata``, with the command line's
        ``options`` (checkpoint, n, min_seq_len, max_seq_len, seed, beam_size); :class:`OptionError` for an option
        the task cannot take."""
        raise NotImplementedError


def say_result(say: Say, title: str, result: EvalResult, exact_match: str = "exact match") -> None:
    """``title``, then exact match and token accuracy, one per line, aligned."""
    width = max(len(exact_match), len("token accuracy")) + 2
    say(title)
    say(f"{exact_match + ':':<{width}}{result.exact_match:.1%}")
    say(f"{'token accuracy:':<{width}}{result.token_accuracy:.2%}")


class TextTask(Task):
    """A task of text (dates, translation): data of its own with a held-out test set, scored like translation (exact
    match, token accuracy, BLEU, chrF); a checkpoint records what rebuilds the test set. ``unseen`` says what the
    test examples are, ``id_match`` what the exact match of :func:`~transformer.train.evaluate_batches` compares."""

    unseen: str
    id_match = "exact match"

    def data(self, n_test: int, seed: int) -> object:
        """The task's data of ``seed`` with ``n_test`` test examples (``test_batches()`` gives them as batches)."""
        raise NotImplementedError

    def fit(self, data: object, config: TrainConfig, run: RunConfig, progress: bool) -> tuple[Transformer, History]:
        """The task's model trained on ``data`` with ``config`` as ``run`` says."""
        raise NotImplementedError

    def scores(self, model: Transformer, data: object, beam_size: int) -> dict:
        """Exact match, BLEU and chrF of the model's translations of the test examples (``ImportError`` without
        sacrebleu)."""
        raise NotImplementedError

    def saved_data(self, data: object) -> dict:
        """What a checkpoint records to rebuild ``data``'s test set (and its vocabularies): ``{"data": {...}}``."""
        raise NotImplementedError

    def test_data(self, metadata: dict, n: int, checkpoint: Path, model: Transformer) -> object:
        """The first ``n`` test examples of the data the checkpoint's model was trained beside; :class:`OptionError`
        where this machine cannot rebuild them as they were."""
        raise NotImplementedError

    def train(self, config: TrainConfig, run: RunConfig, eval_size: int, progress: bool) -> tuple:
        data = self.data(n_test=eval_size, seed=run.seed)
        return *self.fit(data, config, run, progress), data

    def report(self, model: Transformer, data: object, eval_size: int, say: Say) -> dict:
        result = evaluate_batches(model, data.test_batches())
        say(
            f"held-out test examples ({result.n:,}, {self.unseen}): {self.id_match} {result.exact_match:.1%}, "
            f"token accuracy {result.token_accuracy:.2%}, loss {result.loss:.3f}"
        )
        scores = self.say_scores(model, data, 1, say)
        return {"result": result.to_dict(), "scores": scores, **self.saved_data(data)}

    def evaluate(self, model: Transformer, metadata: dict, options: Namespace, say: Say) -> None:
        for option in ("min_seq_len", "max_seq_len", "seed"):
            if getattr(options, option) is not None:
                raise OptionError(
                    f"--{option.replace('_', '-')}: the {self.name} task is scored on its held-out test "
                    "examples, drawn from the data the model was trained on"
                )
        data = self.test_data(metadata, options.n, options.checkpoint, model)
        result = evaluate_batches(model, data.test_batches())
        say_result(
            say,
            f"{options.checkpoint}: {self.name}, {result.n:,} held-out test examples ({self.unseen})",
            result,
            self.id_match,
        )
        self.say_scores(model, data, options.beam_size, say)

    def say_scores(self, model: Transformer, data: object, beam_size: int, say: Say) -> dict | None:
        """Say exact match, BLEU and chrF of the translations of the test examples (and exact match by kind where the
        task has kinds); return them, ``None`` without sacrebleu."""
        decoder = "greedy decoding" if beam_size == 1 else f"beam search of {beam_size}"
        try:
            scores = self.scores(model, data, beam_size)
        except ImportError as error:
            say(f"BLEU and chrF: not computed ({error})")
            return None
        say(f"{decoder}: exact match {scores['exact_match']:.1%}, BLEU {scores['bleu']:.1f}, chrF {scores['chrf']:.1f}")
        if "exact_match_by_kind" in scores:
            say(
                "  exact match by kind: "
                + ", ".join(f"{kind} {share:.1%}" for kind, share in scores["exact_match_by_kind"].items())
            )
        return scores
