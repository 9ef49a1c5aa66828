"""The command line: ``python -m transformer train ...`` and ``python -m transformer evaluate ...``.

Run ``python -m transformer --help`` (or ``train --help``, ``evaluate --help``) for every option.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist

from ..checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from ..model import Transformer
from ..utils import DEVICES, select_device
from .config import TrainConfig
from .dates import DatesData, dates_data, dates_scores, dates_train_config, train_dates
from .evaluation import EVAL_SEED, EvalResult, evaluate, evaluate_batches
from .loop import History, num_threads
from .recipes import train_task
from .resume import ResumeError, TrainingInterrupted
from .tasks import DEFAULT_VOCAB_SIZE, TASKS

# Tasks of text, with data, vocabularies and a model of their own, scored like translation (exact match, BLEU, chrF):
# the dates of chapter 9 and the English-German pairs of chapter 10. "translation" is the name the chapter's
# train_translation gives its training checkpoints, so the command line and the notebook resume each other's runs.
TEXT_TASKS = ("dates", "translation")
# What the translation task needs beyond torch (the live extra); transformer.train.translation is imported only when
# the task is asked for, so that the other tasks run without them.
TRANSLATION_LIBRARIES = ("babel", "num2words", "tokenizers")
TRANSLATION_RECIPE = "1200 for translation"  # translation_train_config's steps (tests/book checks it)
TRANSLATION_BATCH = "128 for translation"  # and its batch size
TASK_NAMES = (*TASKS, *TEXT_TASKS)
INTERRUPTED = 130  # the exit status of a process stopped by Ctrl-C (128 + SIGINT), as shells report it

DESCRIPTION = """\
Train the small encoder-decoder Transformer on a task and evaluate saved checkpoints: the synthetic tasks (copy,
reverse or sort random symbol sequences), the dates task of chapter 9 (dates written in words to ISO 8601) and the
English-to-German task of chapter 10 (numbers, dates, times, amounts and lists as CLDR writes them; it needs Babel,
num2words and tokenizers: the live extra). Exact match counts outputs that greedy decoding reproduces completely,
stopping with EOS at the right place; token accuracy is the share of target tokens predicted right under teacher
forcing; the tasks of text also report BLEU and chrF.

A run interrupted with Ctrl-C (SIGINT) or with SIGTERM (kill PID) finishes its step, saves a training checkpoint
beside --out (copy.pt -> copy.resume.pt) and prints the command that resumes it; --save-every N also saves one every
N steps, for runs that may be killed outright (a Colab runtime that disconnects). Resuming gives the uninterrupted
run's weights. A run that a script starts in the background ignores SIGINT, as the shell asks of it: stop it with
kill PID.

examples:
  python -m transformer train --task copy --out copy.pt
  python -m transformer train --task reverse --steps 800 --seed 1 --device cpu --out reverse.pt
  python -m transformer train --task dates --save-every 100 --out dates.pt
  python -m transformer train --task dates --save-every 100 --out dates.pt --resume dates.resume.pt
  python -m transformer evaluate copy.pt --task copy
  python -m transformer evaluate copy.pt --min-seq-len 11 --max-seq-len 20   # longer than anything trained on
  python -m transformer evaluate dates.pt --beam-size 4
  python -m transformer train --task translation --save-every 300 --out en-de.pt
  python -m transformer evaluate en-de.pt --beam-size 4
  torchrun --nproc_per_node=2 -m transformer train --task copy --distributed --out copy.pt   # data-parallel (DDP)
"""


def _int_at_least(minimum: int, expected: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting integers >= ``minimum``; a refusal says it ``expected`` something else."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1, "a positive integer")
_non_negative_int = _int_at_least(0, "an integer >= 0")


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``prog``, the command its messages name, defaults (as argparse's does) to the name of
    the program that was run: ``transformer-interactive`` for the console script."""
    parser = argparse.ArgumentParser(
        prog=prog, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    toy, dates = TrainConfig(), dates_train_config()

    train = commands.add_parser(
        "train", help="train a task's documented recipe and save a checkpoint",
        description="Train the documented small configuration (transformer.train.recipes.small_model_config and "
        "TrainConfig; for dates, the recipe of chapter 9: transformer.train.dates.train_dates; for translation, "
        "chapter 10's: transformer.train.translation.train_translation) with a progress bar, print its scores and "
        "save a checkpoint.",
    )
    train.add_argument("--task", choices=TASK_NAMES, default="copy", help="what to learn (default: %(default)s)")
    train.add_argument("--steps", type=_positive_int, default=None,
                       help=f"optimisation steps (default: {toy.steps} for the synthetic tasks, {dates.steps} for dates, "
                       f"{TRANSLATION_RECIPE})")
    train.add_argument("--seed", type=_non_negative_int, default=0,
                       help="seed for the initial weights and the training data (default: %(default)s)")
    train.add_argument("--device", choices=DEVICES, default="auto",
                       help="where to train; auto picks cuda, then mps, then cpu (default: %(default)s)")
    train.add_argument("--batch-size", type=_positive_int, default=None,
                       help=f"sequences per step, over all processes together (default: {toy.batch_size} for the "
                       f"synthetic tasks, {dates.batch_size} for dates, {TRANSLATION_BATCH})")
    train.add_argument("--bf16", action="store_true", help="train under bfloat16 autocast")
    train.add_argument("--compile", action="store_true",
                       help="torch.compile the training steps (pays off on long runs and GPUs; compiling takes a while)")
    train.add_argument("--threads", type=_positive_int, default=1,
                       help="CPU threads for PyTorch; a model this small is fastest on one (default: %(default)s)")
    train.add_argument("--eval-size", type=_positive_int, default=1000,
                       help="fresh sequences for the final exact match; for dates and translation, held-out test "
                       "examples (default: %(default)s)")
    train.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    train.add_argument("--distributed", action="store_true",
                       help="train data-parallel in the processes torchrun starts (DistributedDataParallel: NCCL on "
                       "GPUs, one per process, gloo on CPUs); each takes its share of every batch, rank 0 reports "
                       "and saves")
    train.add_argument("--out", type=Path, required=True, metavar="PATH", help="where to write the checkpoint")
    train.add_argument("--save-every", type=_positive_int, default=None, metavar="N",
                       help="also save a training checkpoint every N steps, beside --out (copy.pt -> copy.resume.pt); "
                       "one is saved on Ctrl-C in any case")
    train.add_argument("--resume", type=Path, default=None, metavar="PATH",
                       help="continue the run that saved this training checkpoint; give the options it was started "
                       "with (a checkpoint of another task, configuration or package version is refused)")
    train.set_defaults(run=_train, subparser=train)

    evaluate_ = commands.add_parser(
        "evaluate", help="report the scores of a checkpoint",
        description="Score a checkpoint written by 'train': a synthetic task on fresh random sequences (exact match, "
        "token accuracy), the dates and translation tasks on their held-out test examples (exact match, token "
        "accuracy, BLEU, chrF; for translation, exact match by kind too).",
    )
    evaluate_.add_argument("checkpoint", type=Path, metavar="PATH", help="a checkpoint written by 'train'")
    evaluate_.add_argument("--task", choices=TASK_NAMES, default=None,
                           help="task to score (default: the task the checkpoint was trained on)")
    evaluate_.add_argument("--n", type=_positive_int, default=1000,
                           help="fresh sequences; for dates and translation, held-out test examples "
                           "(default: %(default)s)")
    evaluate_.add_argument("--min-seq-len", type=_positive_int, default=None,
                           help="shortest sequence (default: as in training; synthetic tasks)")
    evaluate_.add_argument("--max-seq-len", type=_positive_int, default=None,
                           help="longest sequence (default: as in training; synthetic tasks)")
    evaluate_.add_argument("--seed", type=_non_negative_int, default=None,
                           help=f"seed of the evaluation sequences (default: {EVAL_SEED}; synthetic tasks)")
    evaluate_.add_argument("--beam-size", type=_positive_int, default=1,
                           help="decode with beam search of this width and the paper's length penalty 0.6, 1: greedy "
                           "(default: %(default)s; dates and translation)")
    evaluate_.add_argument("--device", choices=DEVICES, default="auto", help="where to run (default: %(default)s)")
    evaluate_.add_argument("--threads", type=_positive_int, default=1, help="CPU threads for PyTorch (default: %(default)s)")
    evaluate_.set_defaults(run=_evaluate, subparser=evaluate_)
    return parser


def _train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if not args.out.parent.is_dir():
        parser.error(f"--out: the folder {str(args.out.parent)!r} does not exist")
    if args.out.is_dir():
        parser.error(f"--out: {str(args.out)!r} is a folder; give a file name such as {str(args.out / 'model.pt')!r}")
    device = _device(args.device, parser)
    if args.distributed:
        device = _join_process_group(device, parser)
    rank0 = not args.distributed or dist.get_rank() == 0
    say = print if rank0 else lambda *_: None
    options = {k: v for k, v in (("steps", args.steps), ("batch_size", args.batch_size)) if v is not None}
    options.update(seed=args.seed, device=str(device), bf16=args.bf16, threads=args.threads, compile=args.compile,
                   distributed=args.distributed)
    if args.task == "translation":
        config = _translation_module(parser).translation_train_config(**options)
    elif args.task == "dates":
        config = dates_train_config(**options)
    else:
        config = TrainConfig(task=args.task, **options)
    processes = f" in {dist.get_world_size()} processes" if args.distributed else ""
    resumed = f", resuming {str(args.resume)!r}" if args.resume else ""
    say(f"training {_what(args.task)} for {config.steps} steps on {device}{processes}{resumed}")
    checkpointing = dict(save_to=resume_path(args.out), save_every=args.save_every, resume_from=args.resume)
    start = time.perf_counter()
    try:
        if args.task in TEXT_TASKS:
            model, history, data = _train_text_task(args, config, checkpointing)
        else:
            model, history = train_task(args.task, progress=not args.no_progress, **checkpointing, **options)
    except ResumeError as error:
        parser.error(f"--resume: {error}")
    except TrainingInterrupted as stop:
        say(f"interrupted after step {stop.step} of {stop.steps}: saved the run to {str(stop.path)!r}; resume it with\n"
            f"  {_resume_command(args, stop.path)}")
        if args.distributed:
            dist.destroy_process_group()
        return INTERRUPTED
    wall = time.perf_counter() - start
    if rank0:
        print(f"trained in {history.seconds:.1f} s ({wall:.1f} s with the periodic evaluations)")
        if args.task in TEXT_TASKS:
            metadata = _score_text_task(args.task, model, data, args.seed)
        else:
            result = evaluate(model, args.task, n=args.eval_size, vocab_size=config.vocab_size,
                              min_seq_len=config.min_seq_len, max_seq_len=config.max_seq_len)
            print(f"exact match on {result.n:,} fresh {args.task} sequences: {result.exact_match:.1%} "
                  f"(token accuracy {result.token_accuracy:.2%})")
            metadata = {"result": result.to_dict()}
        save_checkpoint(model, args.out, task=args.task, train_config=config.to_dict(), train_seconds=history.seconds,
                        **metadata)
        print(f"saved {args.out}")
    if args.distributed:
        dist.destroy_process_group()
    return 0


def _what(task: str) -> str:
    if task == "dates":
        return "the dates model of chapter 9"
    if task == "translation":
        return "the English-to-German model of chapter 10"
    return f"the small configuration on {task!r}"


_UNSEEN = {"dates": "of dates never seen in training", "translation": "of values never seen in training"}
# What evaluate_batches' exact match compares: the ids. Subwords can cut the right German into other pieces (the model
# writes "tausend" + "acht" where the vocabulary has "tausendacht"), which it counts as wrong and the text's does not.
_ID_MATCH = {"translation": "exact match of the subword ids"}


def _translation_module(parser: argparse.ArgumentParser):
    """``transformer.train.translation``, imported on demand; a clear error where its libraries are missing."""
    missing = [name for name in TRANSLATION_LIBRARIES if importlib.util.find_spec(name) is None]
    if missing:
        parser.error(f"--task translation: needs {', '.join(TRANSLATION_LIBRARIES)}, and {', '.join(missing)} "
                     f"{'is' if len(missing) == 1 else 'are'} not installed: pip install {' '.join(missing)} (or the "
                     "package's live extra)")
    from . import translation

    return translation


def _train_text_task(
    args: argparse.Namespace, config: TrainConfig, checkpointing: dict,
) -> tuple[Transformer, History, object]:
    """The recipe of a task of text: its data (the test split ``--eval-size`` examples), its model, trained."""
    if args.task == "translation":
        translation = _translation_module(args.subparser)
        data = translation.translation_data(n_test=args.eval_size, seed=args.seed)
        model, history = translation.train_translation(data, config, progress=not args.no_progress, **checkpointing)
    else:
        data = dates_data(n_test=args.eval_size, seed=args.seed)
        model, history = train_dates(data, config, progress=not args.no_progress, **checkpointing)
    return model, history, data


def _score_text_task(task: str, model: Transformer, data, seed: int) -> dict:
    """Print the chapter's scores of ``model`` on the held-out test examples; return them (and what rebuilds the
    data) as the checkpoint's metadata."""
    result = evaluate_batches(model, data.test_batches())
    print(f"held-out test examples ({result.n:,}, {_UNSEEN[task]}): {_ID_MATCH.get(task, 'exact match')} "
          f"{result.exact_match:.1%}, "
          f"token accuracy {result.token_accuracy:.2%}, loss {result.loss:.3f}")
    scores = _print_text_scores(task, model, data, beam_size=1)
    metadata = {"result": result.to_dict(), "scores": scores}
    if task == "dates":
        return {**metadata, "data": {"n_train": len(data.train), "n_test": len(data.test)},
                "vocab": {"source": data.source_vocab.itos, "target": data.target_vocab.itos}}
    # The subword vocabulary travels with the model (its ids are the model's), and the test pairs are rebuilt from the
    # seed and checked against their fingerprint: a model is never scored on pairs other than those it was held out from.
    from .translation import TEST_FRACTION, pairs_fingerprint

    return {**metadata, "vocab": data.vocab.to_json(), "data": {
        "n_train": len(data.train), "n_test": len(data.test), "seed": seed, "test_fraction": TEST_FRACTION,
        "test_sha256": pairs_fingerprint(data.test), "libraries": _library_versions(),
    }}


def _library_versions() -> dict[str, str]:
    """The versions of the libraries that write the translation pairs and cut them into subwords."""
    from importlib.metadata import version

    return {name: version(name) for name in TRANSLATION_LIBRARIES}


def _print_text_scores(task: str, model: Transformer, data, beam_size: int) -> dict | None:
    """Print exact match, BLEU and chrF of the translations of the test examples (for translation, exact match by
    kind too); ``None`` without sacrebleu."""
    decoder = "greedy decoding" if beam_size == 1 else f"beam search of {beam_size}"
    try:
        if task == "translation":
            from .translation import translation_scores

            scores = translation_scores(model, data.test, data.vocab, beam_size)
        else:
            scores = dates_scores(model, data, beam_size)
    except ImportError as error:
        print(f"BLEU and chrF: not computed ({error})")
        return None
    print(f"{decoder}: exact match {scores['exact_match']:.1%}, BLEU {scores['bleu']:.1f}, chrF {scores['chrf']:.1f}")
    if "exact_match_by_kind" in scores:
        print("  exact match by kind: " + ", ".join(f"{kind} {share:.1%}"
                                                    for kind, share in scores["exact_match_by_kind"].items()))
    return scores


def resume_path(out: Path) -> Path:
    """Where a run that saves its model to ``out`` keeps its training checkpoint: copy.pt -> copy.resume.pt."""
    return out.with_name(f"{out.stem}.resume{out.suffix or '.pt'}")


def _resume_command(args: argparse.Namespace, checkpoint: Path) -> str:
    """The command that resumes this run from ``checkpoint``: the same options, with ``--resume``."""
    argv, kept = list(args.argv), []
    while argv:
        word = argv.pop(0)
        if word == "--resume":
            argv = argv[1:]
        elif not word.startswith("--resume="):
            kept.append(word)
    launcher = args.prog
    if args.distributed:
        launcher = f"torchrun --nproc_per_node={os.environ.get('LOCAL_WORLD_SIZE', dist.get_world_size())} -m transformer"
    return f"{launcher} {shlex.join([*kept, '--resume', str(checkpoint)])}"


def _join_process_group(device: torch.device, parser: argparse.ArgumentParser) -> torch.device:
    """Join the process group torchrun describes in the environment (unless the caller has already set one up): NCCL
    with one GPU per process (``LOCAL_RANK``), or gloo on the CPU. Returns this process's device."""
    if device.type == "mps":
        parser.error("--distributed: runs on CUDA GPUs (NCCL) or the CPU (gloo); choose --device cuda or --device cpu")
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        if "RANK" not in os.environ:
            parser.error("--distributed: start the processes with torchrun, e.g. "
                         "torchrun --nproc_per_node=2 -m transformer train --distributed --out copy.pt")
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def _evaluate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        metadata = read_checkpoint(args.checkpoint)["metadata"]
        model = load_checkpoint(args.checkpoint, _device(args.device, parser))
    except (FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    trained = metadata.get("train_config", {})
    trained_task = metadata.get("task", trained.get("task", "copy"))
    task = args.task or trained_task
    if (task in TEXT_TASKS or trained_task in TEXT_TASKS) and task != trained_task:
        parser.error(f"--task {task}: this checkpoint was trained on {trained_task!r}, and a model of one task's "
                     "vocabulary cannot be scored on another's")
    if task in TEXT_TASKS:
        return _evaluate_text_task(args, parser, task, model, metadata)
    if args.beam_size != 1:
        parser.error("--beam-size: the synthetic tasks are scored with greedy decoding; beam search is for dates and "
                     "translation")
    vocab_size = trained.get("vocab_size", DEFAULT_VOCAB_SIZE)
    min_seq_len = args.min_seq_len or trained.get("min_seq_len", 1)
    max_seq_len = args.max_seq_len or trained.get("max_seq_len", 10)
    if min_seq_len > max_seq_len:
        parser.error(f"--min-seq-len ({min_seq_len}) must not exceed --max-seq-len ({max_seq_len})")
    if max_seq_len + 1 > model.config.max_positions:  # the decoder reads BOS + the sequence
        parser.error(f"--max-seq-len {max_seq_len} is too long for this model's positional table "
                     f"(max_positions={model.config.max_positions}, which must hold the sequence and BOS)")
    seed = EVAL_SEED if args.seed is None else args.seed
    result = evaluate(model, task, n=args.n, vocab_size=vocab_size, min_seq_len=min_seq_len, max_seq_len=max_seq_len,
                      seed=seed)
    _print_result(f"{args.checkpoint}: {task}, {result.n:,} fresh sequences of length {min_seq_len}-{max_seq_len}", result)
    return 0


def _evaluate_text_task(
    args: argparse.Namespace, parser: argparse.ArgumentParser, task: str, model: Transformer, metadata: dict,
) -> int:
    """Score a checkpoint of a task of text on the held-out test examples of the data it was trained on, rebuilt
    from its seed."""
    for option in ("min_seq_len", "max_seq_len", "seed"):
        if getattr(args, option) is not None:
            parser.error(f"--{option.replace('_', '-')}: the {task} task is scored on its held-out test examples, "
                         "drawn from the data the model was trained on")
    if task == "translation":
        data = _translation_test_data(args, parser, model, metadata)
    else:
        data = _dates_test_data(args, parser, metadata)
    result = evaluate_batches(model, data.test_batches())
    _print_result(f"{args.checkpoint}: {task}, {result.n:,} held-out test examples ({_UNSEEN[task]})", result,
                  _ID_MATCH.get(task, "exact match"))
    _print_text_scores(task, model, data, args.beam_size)
    return 0


def _print_result(title: str, result: EvalResult, exact_match: str = "exact match") -> None:
    width = max(len(exact_match), len("token accuracy")) + 2
    print(title)
    print(f"{exact_match + ':':<{width}}{result.exact_match:.1%}")
    print(f"{'token accuracy:':<{width}}{result.token_accuracy:.2%}")


def _dates_test_data(args: argparse.Namespace, parser: argparse.ArgumentParser, metadata: dict) -> DatesData:
    """The dates data of the checkpoint's seed with ``--n`` test examples, refused if its vocabularies differ."""
    trained = metadata["train_config"]
    data = dates_data(n_train=metadata["data"]["n_train"], n_test=args.n, seed=trained["seed"])
    if [data.source_vocab.itos, data.target_vocab.itos] != [metadata["vocab"]["source"], metadata["vocab"]["target"]]:
        parser.error(f"{str(args.checkpoint)!r} was trained on dates written as this version of the package no longer "
                     "writes them (the vocabularies differ); train it again")
    return data


def _translation_test_data(args: argparse.Namespace, parser: argparse.ArgumentParser, model: Transformer, metadata: dict):
    """The first ``--n`` test pairs of the checkpoint's split with the subword vocabulary it was trained with (stored
    in it); refused if the pairs it was scored on when it was trained are not written the same way here."""
    translation = _translation_module(parser)
    from .subwords import SubwordVocabulary

    saved = metadata["data"]
    try:
        vocab = SubwordVocabulary.from_json(metadata["vocab"])
    except Exception as error:  # tokenizers raises a bare Exception for JSON it cannot read
        parser.error(f"{str(args.checkpoint)!r}: tokenizers {_library_versions()['tokenizers']} cannot read the "
                     f"subword vocabulary saved with the model (saved with tokenizers "
                     f"{saved['libraries']['tokenizers']}): {error}")
    if len(vocab) != model.config.tgt_vocab_size:
        parser.error(f"{str(args.checkpoint)!r}: its vocabulary holds {len(vocab)} ids and its model "
                     f"{model.config.tgt_vocab_size}; the file is not one that 'train' wrote")
    try:  # the test pairs of n and of more share their first n: rebuild enough to check the saved ones too
        pairs = translation.translation_pairs(max(args.n, saved["n_test"]), "test", saved["test_fraction"], saved["seed"])
    except ValueError as error:
        parser.error(f"--n {args.n}: {error}")
    if translation.pairs_fingerprint(pairs[: saved["n_test"]]) != saved["test_sha256"]:
        versions = ", ".join(f"{name} {version}" for name, version in _library_versions().items())
        then = ", ".join(f"{name} {version}" for name, version in saved["libraries"].items())
        parser.error(f"{str(args.checkpoint)!r} was trained beside test pairs that this machine writes differently "
                     f"(the libraries that write them: {then} then, {versions} now); scores would be of other data: "
                     "train it again here")
    return translation.TranslationData(train=[], test=pairs[: args.n], vocab=vocab)  # scoring needs no training pairs


def _device(name: str, parser: argparse.ArgumentParser) -> torch.device:
    try:
        return select_device(name)
    except RuntimeError as error:
        parser.error(f"--device: {error}")


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``); returns the exit status. ``prog`` is the command
    that messages name (usage, errors, the command that resumes a run); default: the program that was run."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    args.argv, args.prog = argv, parser.prog
    try:
        with num_threads(args.threads):
            return args.run(args, args.subparser)
    except KeyboardInterrupt:  # outside the training loop (which saves and stops on its own): nothing to save
        print(f"\ninterrupted: {args.command} stopped before it finished; nothing was saved", file=sys.stderr)
        return INTERRUPTED
