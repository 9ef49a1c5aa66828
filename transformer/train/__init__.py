"""The training wing: everything needed to train the model and the data it trains on, beside the model core.

``import transformer`` never loads this package. The objective (:mod:`.objective`), the schedules
(:mod:`.schedule`), the loop with its configuration, evaluation, progress and data-parallel pieces (:mod:`.loop`,
:mod:`.config`, :mod:`.evaluation`, :mod:`.progress`, :mod:`.distributed`), the documented recipes (:mod:`.recipes`),
training checkpoints that resume a run exactly (:mod:`.resume`), the tasks (:mod:`.tasks`: copy, reverse, sort;
:mod:`.dates`: dates in words; :mod:`.translation`: English to German from CLDR and num2words, which needs Babel,
num2words and tokenizers and is not imported here), text to ids (:mod:`.tokenizer`: words; :mod:`.subwords`:
byte-pair encoding), batching by length (:mod:`.bucketing`), the tasks by name behind one interface
(:mod:`.registry`), the command line (:mod:`.cli`), and the tasks' rows for models of one stack, decoder-only or
masked for an encoder-only model (:mod:`.language_model`).
"""

from .config import RunConfig, TrainConfig
from .evaluation import EvalResult, evaluate, evaluate_batches
from .loop import History, train
from .objective import sequence_loss
from .recipes import small_model_config, train_task
from .resume import TrainingInterrupted
from .tasks import Batch, TaskConfig, make_batch, task_batch

__all__ = [
    "Batch",
    "EvalResult",
    "History",
    "RunConfig",
    "TaskConfig",
    "TrainConfig",
    "TrainingInterrupted",
    "evaluate",
    "evaluate_batches",
    "make_batch",
    "sequence_loss",
    "small_model_config",
    "task_batch",
    "train",
    "train_task",
]
