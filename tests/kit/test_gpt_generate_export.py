"""The GPT-style model of transformer_book.descendants as the playground uses it: ``GPT.generate`` samples with the
core's rule (``transformer.decoding.sample_next``: temperature, top-k with ties kept) or greedily; the model exports
(``GPTGraph``) with ``torch.export`` and as one ONNX graph (``transformer_book.playground_gpt.export_gpt_onnx``) that
equals PyTorch at batch sizes and lengths the export never traced, its logits and every attention map; and
``transformer_book.runs.trained`` keeps and loads its ``train_gpt`` run."""

import pytest
import torch

from transformer.decoding import sampling_probs
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train import RunConfig, TaskConfig, TrainConfig
from transformer_book.descendants import GPT, GPTGraph, small_gpt_config, train_gpt
from transformer_book.playground_gpt import export_gpt_onnx
from transformer_book.runs import trained


def tiny_gpt() -> GPT:
    torch.manual_seed(0)
    return GPT(small_gpt_config(max_positions=24, n_layers=2)).eval()


def prompts(n=5, length=6, seed=0) -> torch.Tensor:
    return torch.randint(3, 13, (n, length), generator=torch.Generator().manual_seed(seed))


def test_generate_with_top_1_or_a_tiny_temperature_is_greedy_and_a_seeded_generator_repeats():
    model, prompt = tiny_gpt(), prompts()
    greedy = model.generate(prompt, 8)
    assert torch.equal(
        model.generate(prompt, 8, top_k=1, temperature=4.0, rng=torch.Generator().manual_seed(3)), greedy
    )
    assert torch.equal(model.generate(prompt, 8, temperature=1e-4), greedy)

    def drawn(seed):
        return model.generate(prompt, 8, temperature=2.0, rng=torch.Generator().manual_seed(seed))

    assert torch.equal(drawn(0), drawn(0)) and not torch.equal(drawn(0), drawn(1))


def test_generate_samples_the_first_token_from_the_tempered_top_k_distribution():
    model, n = tiny_gpt(), 20_000
    prompt = prompts(1)
    drawn = model.generate(prompt.expand(n, -1), 1, temperature=0.7, top_k=3, rng=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = sampling_probs(model(prompt)[:, -1], 0.7, 3)[0].double()
    frequencies = torch.bincount(drawn[:, 0], minlength=expected.numel()).double() / n
    assert frequencies[expected == 0].sum() == 0 and torch.allclose(frequencies, expected, atol=0.015)


def test_sampled_rows_end_with_eos_and_are_padded_after_it():
    out = tiny_gpt().generate(prompts(16), 12, temperature=3.0, rng=torch.Generator().manual_seed(0))
    for row in out.tolist():
        if EOS_ID in row:
            assert all(token == PAD_ID for token in row[row.index(EOS_ID) + 1 :])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"temperature": 0.0}, ValueError, "temperature must be a positive finite number; got 0.0"),
        ({"top_k": 14}, ValueError, r"top_k must be an int in \[1, 13\]; got 14"),
        ({"rng": 1}, TypeError, "rng must be a torch.Generator or None; got int"),
    ],
)
def test_generate_rejects_bad_sampling_arguments_naming_them(kwargs, error, message):
    with pytest.raises(error, match=message):
        tiny_gpt().generate(prompts(1), 3, **kwargs)


def test_the_exported_graph_equals_pytorch_at_new_batch_sizes_and_lengths(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    model = tiny_gpt()
    session = ort.InferenceSession(str(export_gpt_onnx(model, tmp_path)))
    assert [i.name for i in session.get_inputs()] == ["tokens"]
    assert [o.name for o in session.get_outputs()] == ["logits", "attention"]
    for n, length in ((1, 1), (3, 11), (4, 24)):  # the export traced (2, 5)
        tokens = prompts(n, length, seed=length)
        tokens[-1, length // 2 + 1 :] = PAD_ID  # a right-padded row
        logits, attention = session.run(None, {"tokens": tokens.numpy()})
        with torch.no_grad():
            expected = model(tokens)
            maps = torch.stack(model.attention_maps(tokens))  # (L, B, H, T, T)
        assert float((torch.from_numpy(logits) - expected).abs().max()) < 1e-5, (n, length)
        assert float((torch.from_numpy(attention) - maps).abs().max()) < 1e-5, (n, length)


def test_torch_export_with_dynamic_batch_and_length_runs_at_new_shapes_like_eager():
    model = tiny_gpt()
    dims = {0: torch.export.Dim("batch", max=64), 1: torch.export.Dim("length", max=24)}
    program = torch.export.export(GPTGraph(model), (prompts(2, 5),), dynamic_shapes={"tokens": dims})
    tokens = prompts(3, 17, seed=1)
    logits, maps = program.module()(tokens)
    with torch.no_grad():
        assert torch.allclose(logits, model(tokens), atol=1e-6)
        assert torch.allclose(maps, torch.stack(model.attention_maps(tokens)), atol=1e-6)


def test_export_rejects_another_model():
    with pytest.raises(TypeError, match="model must be a GPT; got Linear"):
        export_gpt_onnx(torch.nn.Linear(2, 2), "unused")


def test_train_gpt_s_run_is_kept_and_loaded_by_trained_with_its_outputs(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_BOOK_RUNS", str(tmp_path))
    data, config = TaskConfig("copy", max_seq_len=4, eval_size=20), TrainConfig(steps=3, eval_every=3)
    model_config = small_gpt_config(n_layers=1)
    first, history = trained(train_gpt, model_config, data, config, RunConfig(seed=1, device="cpu"), progress=False)
    again, loaded = trained(train_gpt, model_config, data, config, RunConfig(seed=1, device="cpu"), progress=False)
    assert isinstance(again, GPT) and again.config == model_config and loaded == history
    rows = torch.tensor([[3, 4, 5, BOS_ID]])
    with torch.no_grad():
        assert torch.equal(again.eval()(rows), first.eval()(rows))
    assert torch.equal(again.generate(rows, 3, top_k=1, rng=torch.Generator()), first.generate(rows, 3))
