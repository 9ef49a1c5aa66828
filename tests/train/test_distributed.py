"""Data-parallel training (DDP, gloo on 2 CPU processes) computes what one process computes on the whole batches."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from transformer.train.cli import main
from transformer.train.config import RunConfig, TrainConfig
from transformer.train.distributed import shard
from transformer.train.recipes import train_task
from transformer.train.tasks import TaskConfig, task_batch

pytestmark = pytest.mark.slow  # every test here compiles, exports, trains or starts processes

# Adam's default eps (1e-9) turns float noise on gradients that are exactly zero in exact arithmetic (the attention
# keys' biases: softmax ignores a shift shared by all keys) into full-size steps of random sign; eps 1e-4 keeps the
# comparison about the gradients themselves.
DATA = TaskConfig("copy", eval_size=20)
CONFIG = TrainConfig(steps=5, batch_size=16, eval_every=2, eps=1e-4)
RUN = RunConfig(seed=3, device="cpu")


def test_shards_are_disjoint_slices_that_make_up_the_batch() -> None:
    batch = task_batch("copy", CONFIG.batch_size, rng=torch.Generator().manual_seed(0))
    parts = [shard(batch, rank, 2) for rank in range(2)]
    assert torch.equal(torch.cat([p.src for p in parts]), batch.src)
    assert torch.equal(torch.cat([p.tgt_mask for p in parts]), batch.tgt_mask)
    assert sum(p.n_tokens for p in parts) == batch.n_tokens
    assert parts[0].n_tokens != parts[1].n_tokens  # so a plain mean of the ranks' losses would be the wrong gradient


def _rank(rank: int, store: str, out: str) -> None:
    # A file store and the loopback interface: nothing listens beyond this machine.
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    model, history = train_task(DATA, CONFIG, replace(RUN, distributed=True), progress=False)
    if rank == 0:
        torch.save({"weights": model.state_dict(), "loss": history.loss, "eval": history.eval_exact_match}, out)
    dist.destroy_process_group()


def test_two_gloo_processes_train_the_weights_one_process_trains(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")  # the spawned ranks inherit it
    out = tmp_path / "ddp.pt"
    context = mp.start_processes(
        _rank, args=(str(tmp_path / "store"), str(out)), nprocs=2, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + 120  # a hang fails the test instead of stalling CI
    while not context.join(timeout=1):  # True once both ranks are done; raises if one of them failed
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("the distributed run did not finish in 120 s")
    ddp = torch.load(out)
    single, history = train_task(DATA, CONFIG, RUN, progress=False)
    weights = single.state_dict()
    difference = max((ddp["weights"][name] - weights[name]).abs().max().item() for name in weights)
    assert difference < 1e-5, difference
    assert ddp["loss"] == pytest.approx(history.loss, abs=1e-5)  # rank 0 logs the whole batch's loss
    assert ddp["eval"] == history.eval_exact_match  # and every rank the evaluations rank 0 ran
    first = train_task(DATA, replace(CONFIG, steps=1), RUN, progress=False)[0].state_dict()
    # the weights do move over these steps
    assert max((first[name] - weights[name]).abs().max().item() for name in weights) > 100 * 1e-5


def test_distributed_without_a_process_group_says_how_to_launch(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--device", "cpu", "--distributed", "--out", str(tmp_path / "m.pt")])
    assert "torchrun --nproc_per_node" in capsys.readouterr().err
    with pytest.raises(ValueError, match="torchrun"):
        train_task(DATA, CONFIG, replace(RUN, distributed=True), progress=False)
