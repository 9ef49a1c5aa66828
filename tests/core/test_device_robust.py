"""What a reader calls on a trained model works when the model is on another device than its inputs (a GPU, and
tensors made on the CPU), and what is drawn or printed comes back to the CPU.

CI has no GPU, so the second device is simulated (``device_simulation``): tensors "elsewhere" hold CPU data but
refuse to meet plain CPU tensors in one operation and refuse ``.numpy()``, as CUDA tensors do. The first tests check
that the simulation fails where a real second device would; the others run the book's functions across it and
compare with a plain CPU run.
"""

import pytest
import torch
from device_simulation import ELSEWHERE, Elsewhere, another_device, batch, cpu_model, elsewhere_model, plain

from transformer.decoding import beam_search, greedy_decode, greedy_steps, sample_decode


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
        tokens = greedy_decode(model, data.src, max_new_tokens=12, src_mask=data.src_mask)
        uncached = greedy_decode(model, data.src, max_new_tokens=12, use_cache=False)
        steps = list(greedy_steps(model, data.src, max_new_tokens=12))
        beam, scores = beam_search(model, data.src, beam_size=3, max_new_tokens=12, src_mask=data.src_mask)
    expected = greedy_decode(reference, data.src, max_new_tokens=12)
    assert plain(tokens) and torch.equal(tokens, expected) and torch.equal(uncached, expected)
    assert all(plain(t) for s in steps for t in (s.decoder_input, s.log_probs, s.next_tokens, s.finished))
    assert torch.equal(torch.stack([s.next_tokens for s in steps], dim=1), expected)
    ref_beam, ref_scores = beam_search(reference, data.src, beam_size=3, max_new_tokens=12)
    assert plain(beam) and plain(scores) and torch.equal(beam, ref_beam) and torch.equal(scores, ref_scores)


def test_sampling_on_the_models_device_with_a_cpu_generator_draws_what_a_cpu_run_draws(weights):
    reference, model, data = cpu_model(weights), elsewhere_model(weights), batch()
    with another_device():
        tokens = sample_decode(
            model, data.src, max_new_tokens=12, temperature=2.0, rng=torch.Generator().manual_seed(0)
        )
    expected = sample_decode(
        reference, data.src, max_new_tokens=12, temperature=2.0, rng=torch.Generator().manual_seed(0)
    )
    assert plain(tokens) and torch.equal(tokens, expected)


def test_decoding_returns_results_on_the_device_the_source_came_from(weights):
    model, data = cpu_model(weights), batch()
    with another_device():
        src = data.src.to(ELSEWHERE)  # a source made on the other device, the model on the CPU
        tokens = greedy_decode(model, src, max_new_tokens=12)
        beam, scores = beam_search(model, src, beam_size=2, max_new_tokens=12)
    assert isinstance(tokens, Elsewhere) and isinstance(beam, Elsewhere) and isinstance(scores, Elsewhere)
    assert torch.equal(tokens.cpu(), greedy_decode(model, data.src, max_new_tokens=12))
