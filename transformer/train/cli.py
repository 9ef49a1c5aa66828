"""The command line: ``transformer-interactive train ...`` and ``transformer-interactive evaluate ...`` (the console
script the package installs; ``python -m transformer`` runs the same).

Run ``transformer-interactive --help`` (or ``train --help``, ``evaluate --help``) for every option. The options are
mapped here to the wing's own objects (:class:`~.config.RunConfig`, a task's recipe, :class:`~.registry.EvalOptions`),
which know nothing of a command line.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist

from ..checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from ..utils import DEVICES, select_device
from .config import RunConfig
from .evaluation import EVAL_SEED
from .loop import num_threads
from .registry import REGISTRY, EvalOptions, OptionError, Task, get_task, recipe
from .resume import ResumeError, TrainingInterrupted

# Every task is looked up in the registry (transformer.train.registry), whose modules are imported only when their
# task is asked for: translation needs Babel, num2words and tokenizers (the live extra), the other tasks do not.
TASK_NAMES = tuple(REGISTRY)
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

examples (python -m transformer runs the same command line as transformer-interactive):
  transformer-interactive train --task copy --out copy.pt
  transformer-interactive train --task reverse --steps 800 --seed 1 --device cpu --out reverse.pt
  transformer-interactive train --task dates --save-every 100 --out dates.pt
  transformer-interactive train --task dates --save-every 100 --out dates.pt --resume dates.resume.pt
  transformer-interactive evaluate copy.pt --task copy
  transformer-interactive evaluate copy.pt --min-seq-len 11 --max-seq-len 20   # longer than anything trained on
  transformer-interactive evaluate dates.pt --beam-size 4
  transformer-interactive train --task translation --save-every 300 --out en-de.pt
  transformer-interactive evaluate en-de.pt --beam-size 4
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


def _recipes(field: str) -> str:
    """Each task's recipe value of ``field`` ("steps", "batch_size"), for --help: "500 for copy/reverse/sort, ..."."""
    names: dict[int, list[str]] = {}
    for name in REGISTRY:
        names.setdefault(getattr(recipe(name), field), []).append(name)
    return ", ".join(f"{value} for {'/'.join(tasks)}" for value, tasks in names.items())


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``prog``, the command its messages name, defaults (as argparse's does) to the name of
    the program that was run: ``transformer-interactive`` for the console script."""
    parser = argparse.ArgumentParser(
        prog=prog, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    train = commands.add_parser(
        "train",
        help="train a task's documented recipe and save a checkpoint",
        description="Train the documented small configuration (transformer.train.recipes.small_model_config and "
        "TrainConfig; for dates, the recipe of chapter 9: transformer.train.dates.train_dates; for translation, "
        "chapter 10's: transformer.train.translation.train_translation) with a progress bar, print its scores and "
        "save a checkpoint.",
    )
    train.add_argument("--task", choices=TASK_NAMES, default="copy", help="what to learn (default: %(default)s)")
    train.add_argument(
        "--steps", type=_positive_int, default=None, help=f"optimisation steps (default: {_recipes('steps')})"
    )
    train.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        help="seed for the initial weights and the training data (default: %(default)s)",
    )
    train.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        help="where to train; auto picks cuda, then mps, then cpu (default: %(default)s)",
    )
    train.add_argument(
        "--batch-size",
        type=_positive_int,
        default=None,
        help=f"sequences per step, over all processes together (default: {_recipes('batch_size')})",
    )
    train.add_argument("--bf16", action="store_true", help="train under bfloat16 autocast")
    train.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the training steps (pays off on long runs and GPUs; compiling takes a while)",
    )
    train.add_argument(
        "--threads",
        type=_positive_int,
        default=1,
        help="CPU threads for PyTorch; a model this small is fastest on one (default: %(default)s)",
    )
    train.add_argument(
        "--eval-size",
        type=_positive_int,
        default=1000,
        help="fresh sequences for the final exact match; for dates and translation, held-out test "
        "examples (default: %(default)s)",
    )
    train.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    train.add_argument(
        "--distributed",
        action="store_true",
        help="train data-parallel in the processes torchrun starts (DistributedDataParallel: NCCL on "
        "GPUs, one per process, gloo on CPUs); each takes its share of every batch, rank 0 reports "
        "and saves",
    )
    train.add_argument("--out", type=Path, required=True, metavar="PATH", help="where to write the checkpoint")
    train.add_argument(
        "--save-every",
        type=_positive_int,
        default=None,
        metavar="N",
        help="also save a training checkpoint every N steps, beside --out (copy.pt -> copy.resume.pt); "
        "one is saved on Ctrl-C in any case",
    )
    train.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="PATH",
        help="continue the run that saved this training checkpoint; give the options it was started "
        "with (a checkpoint of another task, configuration or package version is refused)",
    )
    train.set_defaults(run=_train, subparser=train)

    evaluate_ = commands.add_parser(
        "evaluate",
        help="report the scores of a checkpoint",
        description="Score a checkpoint written by 'train': a synthetic task on fresh random sequences (exact match, "
        "token accuracy), the dates and translation tasks on their held-out test examples (exact match, token "
        "accuracy, BLEU, chrF; for translation, exact match by kind too).",
    )
    evaluate_.add_argument("checkpoint", type=Path, metavar="PATH", help="a checkpoint written by 'train'")
    evaluate_.add_argument(
        "--task",
        choices=TASK_NAMES,
        default=None,
        help="task to score (default: the task the checkpoint was trained on)",
    )
    evaluate_.add_argument(
        "--n",
        type=_positive_int,
        default=1000,
        help="fresh sequences; for dates and translation, held-out test examples (default: %(default)s)",
    )
    evaluate_.add_argument(
        "--min-seq-len",
        type=_positive_int,
        default=None,
        help="shortest sequence (default: as in training; synthetic tasks)",
    )
    evaluate_.add_argument(
        "--max-seq-len",
        type=_positive_int,
        default=None,
        help="longest sequence (default: as in training; synthetic tasks)",
    )
    evaluate_.add_argument(
        "--seed",
        type=_non_negative_int,
        default=None,
        help=f"seed of the evaluation sequences (default: {EVAL_SEED}; synthetic tasks)",
    )
    evaluate_.add_argument(
        "--beam-size",
        type=_positive_int,
        default=1,
        help="decode with beam search of this width and the paper's length penalty 0.6, 1: greedy "
        "(default: %(default)s; dates and translation)",
    )
    evaluate_.add_argument("--device", choices=DEVICES, default="auto", help="where to run (default: %(default)s)")
    evaluate_.add_argument(
        "--threads", type=_positive_int, default=1, help="CPU threads for PyTorch (default: %(default)s)"
    )
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
    task = _task(args.task, parser)
    config = task.train_config(
        **{k: v for k, v in (("steps", args.steps), ("batch_size", args.batch_size)) if v is not None}
    )
    run = RunConfig(
        seed=args.seed,
        device=str(device),
        bf16=args.bf16,
        threads=args.threads,
        compile=args.compile,
        distributed=args.distributed,
        save_to=resume_path(args.out),
        save_every=args.save_every,
        resume_from=args.resume,
    )
    processes = f" in {dist.get_world_size()} processes" if args.distributed else ""
    resumed = f", resuming {str(args.resume)!r}" if args.resume else ""
    say(f"training {task.title} for {config.steps} steps on {device}{processes}{resumed}")
    start = time.perf_counter()
    try:
        model, history, data = task.train(config, run, args.eval_size, not args.no_progress)
    except ResumeError as error:
        parser.error(f"--resume: {error}")
    except TrainingInterrupted as stop:
        say(
            f"interrupted after step {stop.step} of {stop.steps}: saved the run to {str(stop.path)!r}; resume it with\n"
            f"  {_resume_command(args, stop.path)}"
        )
        if args.distributed:
            dist.destroy_process_group()
        return INTERRUPTED
    wall = time.perf_counter() - start
    if rank0:
        print(f"trained in {history.seconds:.1f} s ({wall:.1f} s with the periodic evaluations)")
        metadata = task.report(model, data, args.eval_size, print)
        save_checkpoint(
            model,
            args.out,
            task=args.task,
            train_config=config.to_dict(),
            run_config=run.to_dict(),
            train_seconds=history.seconds,
            **metadata,
        )
        print(f"saved {args.out}")
    if args.distributed:
        dist.destroy_process_group()
    return 0


def _task(name: str, parser: argparse.ArgumentParser) -> Task:
    """The task called ``name``; a clear error where the libraries it needs are missing."""
    try:
        return get_task(name)
    except ImportError as error:
        parser.error(f"--task {name}: {error}")


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
        launcher = (
            f"torchrun --nproc_per_node={os.environ.get('LOCAL_WORLD_SIZE', dist.get_world_size())} -m transformer"
        )
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
            parser.error(
                "--distributed: start the processes with torchrun, e.g. "
                "torchrun --nproc_per_node=2 -m transformer train --distributed --out copy.pt"
            )
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def _evaluate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        metadata = read_checkpoint(args.checkpoint)["metadata"]
        model = load_checkpoint(args.checkpoint, _device(args.device, parser))
    except (FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    trained_task = metadata.get("task", args.task)
    if trained_task is None:
        parser.error(f"{str(args.checkpoint)!r} does not record the task it was trained on: name it with --task")
    if trained_task not in REGISTRY:
        parser.error(
            f"{str(args.checkpoint)!r} was trained on {trained_task!r}, which is not a task of this version "
            f"of the package ({', '.join(REGISTRY)})"
        )
    name = args.task or trained_task
    if REGISTRY[name].vocabulary != REGISTRY[trained_task].vocabulary:
        parser.error(
            f"--task {name}: this checkpoint was trained on {trained_task!r}, and a model of one task's "
            "vocabulary cannot be scored on another's"
        )
    options = EvalOptions(args.checkpoint, args.n, args.beam_size, args.min_seq_len, args.max_seq_len, args.seed)
    try:
        _task(name, parser).evaluate(model, metadata, options, print)
    except OptionError as error:
        parser.error(error.reason if error.option is None else f"{_flag(error.option)} {error.value}: {error.reason}")
    return 0


def _flag(option: str) -> str:
    """The command line's flag of an option of the wing: ``min_seq_len`` -> ``--min-seq-len``."""
    return "--" + option.replace("_", "-")


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
