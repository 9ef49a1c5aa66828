"""The synthetic tasks (copy, reverse, sort; their data: :mod:`.tasks`) as the command line trains and scores them."""

from __future__ import annotations

from ..model import Transformer
from .config import RunConfig, TrainConfig
from .evaluation import evaluate
from .recipes import train_task
from .registry import EvalOptions, OptionError, Say, Task, say_result
from .tasks import EVAL_SEED, TaskConfig


class SyntheticTask(Task):
    """Copy, reverse or sort on the command line: the documented small model and its recipe, scored on fresh random
    sequences; a model of one scores on the others too."""

    def __init__(self, name: str):
        super().__init__(name)
        self.title = f"the small configuration on {name!r}"

    def train(self, config: TrainConfig, run: RunConfig, eval_size: int, progress: bool) -> tuple:
        data = TaskConfig(self.name)
        return *train_task(data, config, run, progress=progress), data

    def report(self, model: Transformer, data: TaskConfig, eval_size: int, say: Say) -> dict:
        sizes = {name: getattr(data, name) for name in ("vocab_size", "min_seq_len", "max_seq_len")}
        result = evaluate(model, data.task, n=eval_size, **sizes)
        say(
            f"exact match on {result.n:,} fresh {self.name} sequences: {result.exact_match:.1%} "
            f"(token accuracy {result.token_accuracy:.2%})"
        )
        return {"result": result.to_dict(), "data": data.to_dict()}

    def evaluate(self, model: Transformer, metadata: dict, options: EvalOptions, say: Say) -> None:
        if options.beam_size != 1:
            raise OptionError(
                "the synthetic tasks are scored with greedy decoding; beam search is for dates and translation",
                "beam_size",
                options.beam_size,
            )
        trained = TaskConfig(self.name, **{k: v for k, v in metadata.get("data", {}).items() if k != "task"})
        min_seq_len = options.min_seq_len or trained.min_seq_len
        max_seq_len = options.max_seq_len or trained.max_seq_len
        if min_seq_len > max_seq_len:
            raise OptionError(f"must not exceed the longest length, {max_seq_len}", "min_seq_len", min_seq_len)
        if max_seq_len + 1 > model.config.max_positions:  # the decoder reads BOS + the sequence
            raise OptionError(
                f"too long for this model's positional table (max_positions={model.config.max_positions}, which "
                "must hold the sequence and BOS)",
                "max_seq_len",
                max_seq_len,
            )
        seed = EVAL_SEED if options.seed is None else options.seed
        result = evaluate(model, self.name, options.n, trained.vocab_size, min_seq_len, max_seq_len, seed)
        say_result(
            say,
            f"{options.checkpoint}: {self.name}, {result.n:,} fresh sequences of length {min_seq_len}-{max_seq_len}",
            result,
        )
