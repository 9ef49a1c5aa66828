"""What a reader calls on a trained model works when the model is on another device than its inputs (a GPU, and
tensors made on the CPU), and what is drawn or printed comes back to the CPU.

CI has no GPU, so the second device is simulated (``device_simulation``): tensors "elsewhere" hold CPU data but
refuse to meet plain CPU tensors in one operation and refuse ``.numpy()``, as CUDA tensors do. The first tests check
that the simulation fails where a real second device would; the others run the book's functions across it and
compare with a plain CPU run.
"""

import pytest
import torch
from device_simulation import ELSEWHERE, Elsewhere, another_device, put_elsewhere

from transformer import Transformer
from transformer.data import task_batch
from transformer.decoding import beam_search, greedy_decode, greedy_steps
from transformer.training import evaluate, small_model_config
from transformer_book.ablation import (
    ablate_heads,
    aligned_weight,
    attention_sharpness,
    head_ablation,
    source_alignment,
)


@pytest.fixture(scope="module")
def weights():
    torch.manual_seed(0)
    return Transformer(small_model_config()).eval().state_dict()


def cpu_model(weights) -> Transformer:
    model = Transformer(small_model_config()).eval()
    model.load_state_dict(weights)
    return model


def elsewhere_model(weights) -> Transformer:
    return put_elsewhere(cpu_model(weights))


def batch(n: int = 6):
    return task_batch("copy", n, generator=torch.Generator().manual_seed(5))


def plain(x: torch.Tensor) -> bool:
    """A plain CPU tensor: what a figure or a print can use."""
    return type(x) is torch.Tensor and x.device.type == "cpu"


def test_the_simulated_device_refuses_what_a_gpu_refuses(weights):
    model, data = elsewhere_model(weights), batch()
    assert next(model.parameters()).device == ELSEWHERE
    with another_device():
        with pytest.raises(RuntimeError, match="src is on cpu but the model's weights are on"):
            model(data.src, data.tgt_in)  # CPU inputs, weights elsewhere: the core's own error names both devices
        with pytest.raises(RuntimeError, match="same device"):
            data.src.to(ELSEWHERE) + data.src
        with pytest.raises(TypeError, match="numpy"):
            data.src.to(ELSEWHERE).numpy()
        back = data.src.to(ELSEWHERE).cpu()
    assert plain(back) and torch.equal(back, data.src)


def test_decoding_moves_cpu_sources_to_the_models_device_and_returns_results_on_the_cpu(weights):
    reference, model, data = cpu_model(weights), elsewhere_model(weights), batch()
    with another_device():
        tokens = greedy_decode(model, data.src, max_len=12, src_mask=data.src_mask)
        uncached = greedy_decode(model, data.src, max_len=12, use_cache=False)
        steps = list(greedy_steps(model, data.src, max_len=12))
        beam, scores = beam_search(model, data.src, beam_size=3, max_len=12, src_mask=data.src_mask)
    expected = greedy_decode(reference, data.src, max_len=12)
    assert plain(tokens) and torch.equal(tokens, expected) and torch.equal(uncached, expected)
    assert all(plain(t) for s in steps for t in (s.decoder_input, s.log_probs, s.next_tokens, s.finished))
    assert torch.equal(torch.stack([s.next_tokens for s in steps], dim=1), expected)
    ref_beam, ref_scores = beam_search(reference, data.src, beam_size=3, max_len=12)
    assert plain(beam) and plain(scores) and torch.equal(beam, ref_beam) and torch.equal(scores, ref_scores)


def test_decoding_returns_results_on_the_device_the_source_came_from(weights):
    model, data = cpu_model(weights), batch()
    with another_device():
        src = data.src.to(ELSEWHERE)  # a source made on the other device, the model on the CPU
        tokens = greedy_decode(model, src, max_len=12)
        beam, scores = beam_search(model, src, beam_size=2, max_len=12)
    assert isinstance(tokens, Elsewhere) and isinstance(beam, Elsewhere) and isinstance(scores, Elsewhere)
    assert torch.equal(tokens.cpu(), greedy_decode(model, data.src, max_len=12))


def test_evaluate_and_the_ablation_helpers_run_on_the_models_device(weights):
    reference, model = cpu_model(weights), elsewhere_model(weights)
    with another_device():
        result = evaluate(model, "copy", n=40, batch_size=16)
        alignment = source_alignment(model, "copy", n=20)
        sharpness = attention_sharpness(model, "reverse", n=20)
        with ablate_heads(model, {("cross", 0): [1]}):
            silenced = greedy_decode(model, batch().src, max_len=12)
        baseline, results = head_ablation(model, "copy", n=10)
    assert result == evaluate(reference, "copy", n=40, batch_size=16)
    assert torch.equal(alignment.cpu(), source_alignment(reference, "copy", n=20))
    assert all(torch.equal(sharpness[k].cpu(), v) for k, v in attention_sharpness(reference, "reverse", n=20).items())
    with ablate_heads(reference, {("cross", 0): [1]}):
        assert torch.equal(silenced, greedy_decode(reference, batch().src, max_len=12))
    assert (baseline, results) == head_ablation(reference, "copy", n=10)


def test_aligned_weight_accepts_positions_made_on_the_cpu_for_maps_on_another_device(weights):
    maps = cpu_model(weights).attention_maps(batch().src, batch().tgt_in)["cross"][0]  # (B, H, T, S)
    T = maps.size(2)
    expected, valid = torch.arange(T).expand(maps.size(0), T), torch.ones(maps.size(0), T, dtype=torch.bool)
    with another_device():
        elsewhere = aligned_weight(maps.to(ELSEWHERE), expected, valid)
    assert torch.equal(elsewhere.cpu(), aligned_weight(maps, expected, valid))


def test_figures_of_a_model_on_another_device_are_drawn_from_cpu_copies(weights):
    from transformer_book.viz import decoding, inspect

    model = elsewhere_model(weights)
    with another_device():
        example = inspect.decoded_example(model, [5, 9, 3, 12])
        steps = list(greedy_steps(model, torch.tensor([[5, 9, 3]]).to(ELSEWHERE), max_len=6))  # steps elsewhere
        assert isinstance(steps[0].log_probs, Elsewhere)
        figure = decoding.greedy_stepper({"model": steps})
    assert all(plain(w) for layers in example.maps.values() for w in layers)
    assert example.tgt_tokens[0] == "<s>" and len(figure.frames) == len(steps)


def test_figures_of_tensors_on_another_device_are_drawn_from_cpu_copies():
    from transformer.embeddings import sinusoidal_table
    from transformer_book.viz import embeddings, masks, model, positional

    x, ids, table = torch.randn(2, 3, 4), [5, 7, 0], sinusoidal_table(12, 8)
    labels = [str(i) for i in range(12)]
    with another_device():
        normed = model.norm_figure(x.to(ELSEWHERE))
        reasons = masks.mask_reasons(torch.tensor(ids).to(ELSEWHERE))
        similarity = positional.position_similarity_figure({"sinusoidal": table.to(ELSEWHERE)}, n_positions=12)
        rows = embeddings.similarity_figure({"table": table.to(ELSEWHERE)}, labels)
        lookup = embeddings.lookup_figure(table.to(ELSEWHERE), [1, 3], labels)
    assert normed.to_json() == model.norm_figure(x).to_json()
    assert all((reasons[k] == v).all() for k, v in masks.mask_reasons(ids).items())
    assert similarity.to_json() == positional.position_similarity_figure({"sinusoidal": table}, n_positions=12).to_json()
    assert rows.to_json() == embeddings.similarity_figure({"table": table}, labels).to_json()
    assert lookup.to_json() == embeddings.lookup_figure(table, [1, 3], labels).to_json()


def test_every_chapter_that_trains_picks_its_device_once_says_which_and_trains_and_loads_there():
    import json
    import re
    from pathlib import Path

    trains = re.compile(r"(?<![.\w])train(_task)?\(")
    chapters = sorted((Path(__file__).resolve().parents[1] / "book").glob("*.ipynb"))
    training = []
    for path in chapters:
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        if not trains.search(code):
            continue
        training.append(path.name)
        assert code.count('select_device("auto")') == 1 and 'print(f"device: {device}")' in code, path.name
        calls = re.findall(r"(?<![.\w])(?:train_task|load_checkpoint)\((?:[^()]|\([^()]*\))*\)", code)
        assert all("device=" in call for call in calls), (path.name, [c for c in calls if "device=" not in c])
    assert {"07_training.ipynb", "08_decoding.ipynb", "09_inside_the_model.ipynb", "10_pitfalls.ipynb"} <= set(training)
