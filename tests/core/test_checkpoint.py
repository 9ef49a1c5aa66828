import os
import signal
import subprocess
import sys

import pytest
import torch

from transformer import Transformer, load_checkpoint, save_checkpoint
from transformer.checkpoint import read_checkpoint
from transformer.train.recipes import small_model_config
from transformer.train.tasks import task_batch


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"norm_first": False, "positional_encoding": "learned"},
        {"share_embeddings": True, "tie_output_embedding": True},
    ],
    ids=["small", "post-norm-learned", "tied"],
)
def test_a_loaded_checkpoint_gives_exactly_the_saved_models_outputs(tmp_path, overrides):
    torch.manual_seed(0)
    model = Transformer(small_model_config(d_model=32, d_ff=64, **overrides)).eval()
    with torch.no_grad():  # move the weights away from their initial values, including the learned positions
        for parameter in model.parameters():
            parameter.add_(0.01 * torch.randn_like(parameter))
    path = save_checkpoint(model, tmp_path / "model.pt", task="copy", steps=3)
    loaded = load_checkpoint(path)
    batch = task_batch("copy", 8, rng=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(loaded(batch.src, batch.tgt_in), model(batch.src, batch.tgt_in))
    assert loaded.config == model.config and not loaded.training
    if overrides.get("tie_output_embedding"):
        assert loaded.lm_head.weight is loaded.tgt_embed.weight is loaded.src_embed.weight
    assert read_checkpoint(path)["metadata"] == {"task": "copy", "steps": 3}


def test_loading_something_else_fails_with_a_clear_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a checkpoint written by"):
        load_checkpoint(tmp_path / "other.pt")
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(ValueError, match="not a readable PyTorch checkpoint") as error:
        load_checkpoint(tmp_path / "text.pt")
    assert "\n" not in str(error.value) and error.value.__cause__ is not None  # one line; torch's text stays chained
    torch.save(torch.nn.Linear(2, 2), tmp_path / "pickled_module.pt")  # a pickled object: weights_only refuses it
    with pytest.raises(ValueError, match="not a readable PyTorch checkpoint") as error:
        load_checkpoint(tmp_path / "pickled_module.pt")
    assert "\n" not in str(error.value)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save_checkpoint(Transformer(small_model_config(d_model=8, n_heads=2, d_ff=8)), tmp_path / "no" / "model.pt")


# ---------------------------------------------------------------------------------------------------------------
# Atomic saves: the path holds the old checkpoint or the new one, whole


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


def test_a_save_replaces_the_checkpoint_whole_and_leaves_no_temporary_file(tmp_path):
    first, second = (Transformer(small_model_config(d_model=16, n_heads=2, d_ff=16)) for _ in range(2))
    path = save_checkpoint(first, tmp_path / "model.pt", run=1)
    save_checkpoint(second, path, run=2)
    assert read_checkpoint(path)["metadata"] == {"run": 2} and sorted(tmp_path.iterdir()) == [path]
    assert torch.equal(load_checkpoint(path).lm_head.weight, second.lm_head.weight)
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # as any new file: not private to its owner


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_a_save_that_fails_halfway_keeps_the_previous_checkpoint(tmp_path):
    model = Transformer(small_model_config(d_model=16, n_heads=2, d_ff=16))
    path = save_checkpoint(model, tmp_path / "model.pt", run=1)
    with pytest.raises(RuntimeError, match="cannot pickle this"):
        save_checkpoint(model, path, run=_Unpicklable())  # the new file exists when torch.save fails
    assert read_checkpoint(path)["metadata"] == {"run": 1} and sorted(tmp_path.iterdir()) == [path]


# The writer: saves over an existing checkpoint, but torch.save writes half of the new bytes, syncs them to the disk,
# says so and waits to be killed.
HALF_WRITER = """
import io, os, sys, time
import torch
from transformer import Transformer, save_checkpoint
from transformer.train.recipes import small_model_config
import transformer.checkpoint

real_save = torch.save

def half_save(obj, file, *args, **kwargs):
    buffer = io.BytesIO()
    real_save(obj, buffer, *args, **kwargs)
    data = buffer.getvalue()
    file.write(data[: len(data) // 2])
    file.flush()
    os.fsync(file.fileno())
    print("half written", flush=True)
    time.sleep(600)

transformer.checkpoint.torch.save = half_save
if sys.argv[2] == "model":
    save_checkpoint(Transformer(small_model_config(d_model=16, n_heads=2, d_ff=16)), sys.argv[1], run=2)
else:
    from transformer.train import RunConfig, TaskConfig, TrainConfig, train_task
    train_task(TaskConfig(eval_size=4), TrainConfig(steps=2, batch_size=4, eval_every=2),
               RunConfig(device="cpu", save_to=sys.argv[1], save_every=1),
               model=Transformer(small_model_config(d_model=16, n_heads=2, d_ff=16)), progress=False)
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["model", "training"])
def test_a_writer_killed_mid_save_leaves_the_previous_checkpoint_intact(tmp_path, kind):
    from transformer.train import RunConfig, TaskConfig, TrainConfig, train_task
    from transformer.train.resume import read_training_checkpoint

    path = tmp_path / "checkpoint.pt"
    model = Transformer(small_model_config(d_model=16, n_heads=2, d_ff=16))
    if kind == "model":
        save_checkpoint(model, path, run=1)
    else:
        train_task(
            TaskConfig(eval_size=4),
            TrainConfig(steps=1, batch_size=4, eval_every=1),
            RunConfig(device="cpu", save_to=path, save_every=1),
            model=model,
            progress=False,
        )
    before = path.read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", HALF_WRITER, str(path), kind], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "half written"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)
    assert writer.returncode == -signal.SIGKILL
    (partial,) = tmp_path.glob(".checkpoint.pt.*.tmp")  # the killed writer's half file, beside the intact checkpoint
    assert 0 < partial.stat().st_size < len(before)
    assert path.read_bytes() == before
    if kind == "model":
        assert read_checkpoint(path)["metadata"] == {"run": 1}
        assert torch.equal(load_checkpoint(path).lm_head.weight, model.lm_head.weight)
    else:
        assert read_training_checkpoint(path)["step"] == 1
