"""The book kit and the chapters on a model that lives on another device (simulated): ablation, alignment and figures
draw from CPU copies, and every chapter that trains picks its device once and says which."""

import torch
from device_simulation import ELSEWHERE, Elsewhere, another_device, batch, cpu_model, elsewhere_model, plain

from transformer.decoding import greedy_decode, greedy_steps
from transformer.train.evaluation import evaluate
from transformer_book.ablation import (
    ablate_heads,
    aligned_weight,
    attention_sharpness,
    head_ablation,
    head_means,
    mean_ablate_heads,
    source_alignment,
)


def test_evaluate_and_the_ablation_helpers_run_on_the_models_device(weights):
    reference, model = cpu_model(weights), elsewhere_model(weights)
    with another_device():
        result = evaluate(model, "copy", n=40, batch_size=16)
        alignment = source_alignment(model, "copy", n=20)
        sharpness = attention_sharpness(model, "reverse", n=20)
        with ablate_heads(model, {("cross", 0): [1]}):
            silenced = greedy_decode(model, batch().src, max_new_tokens=12)
        baseline, results = head_ablation(model, "copy", n=10)
        means = head_means(model, batch().to(ELSEWHERE))
        with mean_ablate_heads(model, {("cross", 0): [1]}, means):
            replaced = greedy_decode(model, batch().src, max_new_tokens=12)
    assert result == evaluate(reference, "copy", n=40, batch_size=16)
    assert torch.equal(alignment.cpu(), source_alignment(reference, "copy", n=20))
    assert all(torch.equal(sharpness[k].cpu(), v) for k, v in attention_sharpness(reference, "reverse", n=20).items())
    with ablate_heads(reference, {("cross", 0): [1]}):
        assert torch.equal(silenced, greedy_decode(reference, batch().src, max_new_tokens=12))
    assert (baseline, results) == head_ablation(reference, "copy", n=10)
    reference_means = head_means(reference, batch())
    assert all(torch.equal(means[key].cpu(), mean) for key, mean in reference_means.items())
    with mean_ablate_heads(reference, {("cross", 0): [1]}, reference_means):
        assert torch.equal(replaced, greedy_decode(reference, batch().src, max_new_tokens=12))


def test_figures_of_a_model_on_another_device_are_drawn_from_cpu_copies(weights):
    from transformer_book.viz import decoding, inspect

    model = elsewhere_model(weights)
    with another_device():
        example = inspect.decoded_example(model, [5, 9, 3, 12])
        steps = list(greedy_steps(model, torch.tensor([[5, 9, 3]]).to(ELSEWHERE), max_new_tokens=6))  # steps elsewhere
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
    assert (
        similarity.to_json() == positional.position_similarity_figure({"sinusoidal": table}, n_positions=12).to_json()
    )
    assert rows.to_json() == embeddings.similarity_figure({"table": table}, labels).to_json()
    assert lookup.to_json() == embeddings.lookup_figure(table, [1, 3], labels).to_json()


def test_every_chapter_that_trains_picks_its_device_once_says_which_and_trains_and_loads_there():
    import json
    import re
    from pathlib import Path

    trains = re.compile(r"(?<![.\w])train(ed|_task)?\(")  # trained(): transformer_book.runs
    # says which device, through the catalogue
    says_device = re.compile(r'print\(tr\("device: \{device\}", device=device\)\)')
    chapters = sorted((Path(__file__).resolve().parents[2] / "book").glob("*.ipynb"))
    training = []
    for path in chapters:
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        if not trains.search(code):
            continue
        training.append(path.name)
        assert code.count('select_device("auto")') == 1 and says_device.search(code), path.name
        # Where a run goes is its RunConfig's device; a loaded model goes where load_checkpoint is told.
        placed = re.findall(r"(?<![.\w])(?:RunConfig|load_checkpoint)\((?:[^()]|\([^()]*\))*\)", code)
        assert all("device=" in call for call in placed), (path.name, [c for c in placed if "device=" not in c])
        # Every training call is given a run: a RunConfig made there, or one made before (a name that ends in run).
        runs = re.findall(
            r"(?<![.\w])train(?:ed|_task|_dates|_translation)?\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)", code
        )
        given = re.compile(r"RunConfig\(|\brun\b|_run\b")
        assert all(given.search(call) for call in runs), (path.name, [c for c in runs if not given.search(c)])
    assert {"07_training.ipynb", "08_decoding.ipynb", "11_inside_the_model.ipynb", "12_pitfalls.ipynb"} <= set(training)


def test_aligned_weight_accepts_positions_made_on_the_cpu_for_maps_on_another_device(weights):
    maps = cpu_model(weights).attention_maps(batch().src, batch().tgt_in)["cross"][0]  # (B, H, T, S)
    T = maps.size(2)
    expected, valid = torch.arange(T).expand(maps.size(0), T), torch.ones(maps.size(0), T, dtype=torch.bool)
    with another_device():
        elsewhere = aligned_weight(maps.to(ELSEWHERE), expected, valid)
    assert torch.equal(elsewhere.cpu(), aligned_weight(maps, expected, valid))
