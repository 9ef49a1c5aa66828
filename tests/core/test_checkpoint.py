import pytest
import torch

from transformer import Transformer, load_checkpoint, save_checkpoint
from transformer.checkpoint import read_checkpoint
from transformer.train.recipes import small_model_config
from transformer.train.tasks import task_batch


@pytest.mark.parametrize(
    "overrides",
    [{}, {"norm_first": False, "positional_encoding": "learned"}, {"share_embeddings": True, "tie_output_embedding": True}],
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
