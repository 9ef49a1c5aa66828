"""What the two tasks of text (dates, translation) share on the command line: data of their own with a held-out test
set, scored as translation is (exact match, token accuracy, BLEU, chrF)."""

from __future__ import annotations

from pathlib import Path

from ..model import Transformer
from .config import RunConfig, TrainConfig
from .evaluation import evaluate_batches
from .loop import History
from .registry import EvalOptions, OptionError, Say, Task, say_result


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

    def evaluate(self, model: Transformer, metadata: dict, options: EvalOptions, say: Say) -> None:
        for option in ("min_seq_len", "max_seq_len", "seed"):
            if getattr(options, option) is not None:
                raise OptionError(
                    f"the {self.name} task is scored on its held-out test examples, drawn from the data the model "
                    "was trained on",
                    option,
                    getattr(options, option),
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
