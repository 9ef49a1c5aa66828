"""The command line: ``python -m transformer train ...`` and ``python -m transformer evaluate ...``.

Run ``python -m transformer --help`` (or ``train --help``, ``evaluate --help``) for every option.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist

from ..checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from ..utils import DEVICES, select_device
from .config import TrainConfig
from .evaluation import EVAL_SEED, evaluate
from .loop import num_threads
from .recipes import train_task
from .tasks import DEFAULT_VOCAB_SIZE, TASKS

DESCRIPTION = """\
Train the small encoder-decoder Transformer on a synthetic task (copy, reverse or sort random symbol sequences)
and evaluate saved checkpoints. Exact match counts sequences that greedy decoding reproduces completely, stopping
with EOS at the right place; token accuracy is the share of target tokens predicted right under teacher forcing.

examples:
  python -m transformer train --task copy --out copy.pt
  python -m transformer train --task reverse --steps 800 --seed 1 --device cpu --out reverse.pt
  python -m transformer evaluate copy.pt --task copy
  python -m transformer evaluate copy.pt --min-seq-len 11 --max-seq-len 20   # longer than anything trained on
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m transformer", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    defaults = TrainConfig()

    train = commands.add_parser(
        "train", help="train the documented small configuration and save a checkpoint",
        description="Train the documented small configuration (transformer.train.recipes.small_model_config and "
        "TrainConfig) on a task with a progress bar, print the exact match on fresh sequences and save a checkpoint.",
    )
    train.add_argument("--task", choices=TASKS, default="copy", help="what to learn (default: %(default)s)")
    train.add_argument("--steps", type=_positive_int, default=defaults.steps,
                       help="optimisation steps (default: %(default)s)")
    train.add_argument("--seed", type=_non_negative_int, default=0,
                       help="seed for the initial weights and the training data (default: %(default)s)")
    train.add_argument("--device", choices=DEVICES, default="auto",
                       help="where to train; auto picks cuda, then mps, then cpu (default: %(default)s)")
    train.add_argument("--batch-size", type=_positive_int, default=defaults.batch_size,
                       help="sequences per step, over all processes together (default: %(default)s)")
    train.add_argument("--bf16", action="store_true", help="train under bfloat16 autocast")
    train.add_argument("--compile", action="store_true",
                       help="torch.compile the training steps (pays off on long runs and GPUs; compiling takes a while)")
    train.add_argument("--threads", type=_positive_int, default=1,
                       help="CPU threads for PyTorch; a model this small is fastest on one (default: %(default)s)")
    train.add_argument("--eval-size", type=_positive_int, default=1000,
                       help="fresh sequences for the final exact match (default: %(default)s)")
    train.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    train.add_argument("--distributed", action="store_true",
                       help="train data-parallel in the processes torchrun starts (DistributedDataParallel: NCCL on "
                       "GPUs, one per process, gloo on CPUs); each takes its share of every batch, rank 0 reports "
                       "and saves")
    train.add_argument("--out", type=Path, required=True, metavar="PATH", help="where to write the checkpoint")
    train.set_defaults(run=_train, subparser=train)

    evaluate_ = commands.add_parser(
        "evaluate", help="report exact match and token accuracy of a checkpoint",
        description="Score a checkpoint written by 'train' on fresh random sequences.",
    )
    evaluate_.add_argument("checkpoint", type=Path, metavar="PATH", help="a checkpoint written by 'train'")
    evaluate_.add_argument("--task", choices=TASKS, default=None,
                           help="task to score (default: the task the checkpoint was trained on)")
    evaluate_.add_argument("--n", type=_positive_int, default=1000, help="fresh sequences (default: %(default)s)")
    evaluate_.add_argument("--min-seq-len", type=_positive_int, default=None,
                           help="shortest sequence (default: as in training)")
    evaluate_.add_argument("--max-seq-len", type=_positive_int, default=None,
                           help="longest sequence (default: as in training)")
    evaluate_.add_argument("--seed", type=_non_negative_int, default=EVAL_SEED,
                           help="seed of the evaluation sequences (default: %(default)s)")
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
    processes = f" in {dist.get_world_size()} processes" if args.distributed else ""
    say(f"training the small configuration on {args.task!r} for {args.steps} steps on {device}{processes}")
    start = time.perf_counter()
    config = TrainConfig(task=args.task, steps=args.steps, batch_size=args.batch_size, seed=args.seed,
                         device=str(device), bf16=args.bf16, threads=args.threads, compile=args.compile,
                         distributed=args.distributed)
    model, history = train_task(
        args.task, steps=args.steps, seed=args.seed, device=str(device), progress=not args.no_progress, bf16=args.bf16,
        threads=args.threads, batch_size=args.batch_size, compile=args.compile, distributed=args.distributed,
    )
    wall = time.perf_counter() - start
    if rank0:
        result = evaluate(model, args.task, n=args.eval_size, vocab_size=config.vocab_size,
                          min_seq_len=config.min_seq_len, max_seq_len=config.max_seq_len)
        print(f"trained in {history.seconds:.1f} s ({wall:.1f} s with the periodic evaluations)")
        print(f"exact match on {result.n:,} fresh {args.task} sequences: {result.exact_match:.1%} "
              f"(token accuracy {result.token_accuracy:.2%})")
        save_checkpoint(model, args.out, train_config=config.to_dict(), result=result.to_dict(),
                        train_seconds=history.seconds)
        print(f"saved {args.out}")
    if args.distributed:
        dist.destroy_process_group()
    return 0


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
    task = args.task or trained.get("task", "copy")
    vocab_size = trained.get("vocab_size", DEFAULT_VOCAB_SIZE)
    min_seq_len = args.min_seq_len or trained.get("min_seq_len", trained.get("min_len", 1))  # older checkpoints: min_len
    max_seq_len = args.max_seq_len or trained.get("max_seq_len", trained.get("max_len", 10))
    if min_seq_len > max_seq_len:
        parser.error(f"--min-seq-len ({min_seq_len}) must not exceed --max-seq-len ({max_seq_len})")
    if max_seq_len + 1 > model.config.max_positions:  # the decoder reads BOS + the sequence
        parser.error(f"--max-seq-len {max_seq_len} is too long for this model's positional table "
                     f"(max_positions={model.config.max_positions}, which must hold the sequence and BOS)")
    result = evaluate(model, task, n=args.n, vocab_size=vocab_size, min_seq_len=min_seq_len, max_seq_len=max_seq_len,
                      seed=args.seed)
    print(f"{args.checkpoint}: {task}, {result.n:,} fresh sequences of length {min_seq_len}-{max_seq_len}")
    print(f"exact match:    {result.exact_match:.1%}")
    print(f"token accuracy: {result.token_accuracy:.2%}")
    return 0


def _device(name: str, parser: argparse.ArgumentParser) -> torch.device:
    try:
        return select_device(name)
    except RuntimeError as error:
        parser.error(f"--device: {error}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with num_threads(args.threads):
        return args.run(args, args.subparser)


if __name__ == "__main__":  # python -m transformer.train.cli; python -m transformer is the same
    sys.exit(main())
