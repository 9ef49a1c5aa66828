import itertools

import pytest
import torch
import torch.nn.functional as F

from transformer import Transformer, TransformerConfig, causal_mask
from transformer.decoding import beam_search, greedy_decode, greedy_steps, length_penalty_factor
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.config import TrainConfig
from transformer.train.loop import train
from transformer.train.tasks import task_batch


@pytest.fixture(scope="module")
def copy_model() -> Transformer:
    """A small model trained briefly on the copy task: confident, but not yet perfect, so decoding is non-trivial."""
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(13, 13, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                                          n_decoder_layers=2, dropout=0.0, norm_first=True, max_positions=64))
    train(model, TrainConfig(steps=120, batch_size=64, lr=1e-2, warmup=20, eval_every=120, eval_size=16,
                             device="cpu"), progress=False)
    return model.eval()


def _sources(n: int = 24, seed: int = 5, max_seq_len: int = 10) -> torch.Tensor:
    return task_batch("copy", n, max_seq_len=max_seq_len, rng=torch.Generator().manual_seed(seed)).src


def test_greedy_output_stops_at_eos_and_pads_after_it(copy_model):
    out = greedy_decode(copy_model, _sources(), max_new_tokens=15)
    assert out.dtype == torch.long and out.size(0) == 24 and out.size(1) <= 15
    for row in out.tolist():
        assert BOS_ID not in row
        if EOS_ID in row:
            end = row.index(EOS_ID)
            assert PAD_ID not in row[:end] and all(t == PAD_ID for t in row[end + 1 :])
        else:
            assert len(row) == 15 and PAD_ID not in row  # never stopped: ran to max_new_tokens


def test_greedy_stops_early_once_every_row_has_finished_and_respects_max_new_tokens(copy_model):
    src = _sources(max_seq_len=4)
    assert greedy_decode(copy_model, src, max_new_tokens=40).size(1) < 40
    assert greedy_decode(copy_model, src, max_new_tokens=2).shape == (24, 2)


def test_cached_and_uncached_greedy_decoding_agree(copy_model):
    src = _sources()
    cached = list(greedy_steps(copy_model, src, max_new_tokens=12, use_cache=True))
    uncached = list(greedy_steps(copy_model, src, max_new_tokens=12, use_cache=False))
    assert len(cached) == len(uncached)
    for a, b in zip(cached, uncached, strict=True):
        assert torch.equal(a.next_tokens, b.next_tokens)  # the generated tokens: identical
        torch.testing.assert_close(a.log_probs, b.log_probs, rtol=1e-4, atol=1e-5)  # floats: equal up to rounding
    assert torch.equal(greedy_decode(copy_model, src, 12, use_cache=True), greedy_decode(copy_model, src, 12, use_cache=False))


def test_each_row_is_decoded_as_if_it_were_alone_in_the_batch(copy_model):
    src = _sources(6)
    batched = greedy_decode(copy_model, src, max_new_tokens=12)
    for i in range(6):
        alone = greedy_decode(copy_model, src[i : i + 1, : int((src[i] != PAD_ID).sum())], max_new_tokens=12)
        assert batched[i, : alone.size(1)].tolist() == alone[0].tolist()
        assert torch.all(batched[i, alone.size(1) :] == PAD_ID)


def test_decoding_does_not_change_the_train_mode_or_track_gradients(copy_model):
    copy_model.train()
    try:
        out = greedy_decode(copy_model, _sources(4), max_new_tokens=5)
        assert copy_model.training and not out.requires_grad
    finally:
        copy_model.eval()


@pytest.mark.parametrize("use_cache", [True, False])
def test_beam_size_one_is_exactly_greedy(copy_model, use_cache):
    src = _sources()
    tokens, scores = beam_search(copy_model, src, beam_size=1, max_new_tokens=12, use_cache=use_cache)
    assert torch.equal(tokens, greedy_decode(copy_model, src, max_new_tokens=12))
    assert scores.shape == (24,) and torch.all(scores <= 0)


def test_beam_search_with_and_without_cache_agree(copy_model):
    src = _sources()
    cached = beam_search(copy_model, src, beam_size=4, max_new_tokens=12, use_cache=True)
    uncached = beam_search(copy_model, src, beam_size=4, max_new_tokens=12, use_cache=False)
    assert torch.equal(cached[0], uncached[0])
    torch.testing.assert_close(cached[1], uncached[1], rtol=1e-4, atol=1e-5)


def _sequence_log_prob(model: Transformer, src: torch.Tensor, output: list[int]) -> float:
    """Summed log-probability of ``output`` under teacher forcing, with PAD and BOS excluded as decoding does."""
    tgt_in = torch.tensor([[BOS_ID, *output[:-1]]])
    hidden = model.decode(tgt_in, *model.encode(src), causal_mask(tgt_in.size(1)))
    logits = model.lm_head(hidden)[0]  # (T, V)
    logits[:, [PAD_ID, BOS_ID]] = float("-inf")
    return float(F.log_softmax(logits, -1).gather(1, torch.tensor(output)[:, None]).sum())


def test_a_beam_wide_enough_to_keep_every_hypothesis_finds_the_best_one_by_brute_force():
    torch.manual_seed(1)
    model = Transformer(TransformerConfig(5, 5, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                                          n_decoder_layers=1, dropout=0.0)).eval()
    src, max_len, alpha = torch.tensor([[3, 4, 4]]), 3, 0.6
    candidates = [[EOS_ID]]  # every output of at most 3 tokens over the symbols {3, 4} and EOS
    for length in (1, 2):
        candidates += [[*p, EOS_ID] for p in itertools.product((3, 4), repeat=length)]
    candidates += [[*p, last] for p in itertools.product((3, 4), repeat=2) for last in (3, 4)]  # never finished
    with torch.no_grad():
        normalised = {
            tuple(c): _sequence_log_prob(model, src, c) / float(length_penalty_factor(torch.tensor(len(c)), alpha))
            for c in candidates
        }
    best = max(normalised, key=normalised.get)
    tokens, score = beam_search(model, src, beam_size=16, max_new_tokens=max_len, length_penalty=alpha)
    found = tokens[0].tolist()
    found = found[: found.index(EOS_ID) + 1] if EOS_ID in found else found
    assert tuple(found) == best
    assert float(score[0]) == pytest.approx(normalised[best], abs=1e-4)


def test_beam_trace_records_parents_tokens_and_scores_per_step(copy_model):
    src = _sources(3)
    tokens, scores, trace = beam_search(copy_model, src, beam_size=3, max_new_tokens=12, return_trace=True)
    assert len(trace.parents) == len(trace.tokens) == len(trace.scores) >= tokens.size(1)
    assert trace.parents[0].shape == (3, 3) and trace.best.shape == (3,)
    assert torch.all(trace.scores[-1][:, :-1] >= trace.scores[-1][:, 1:])  # beams sorted best first


def test_bad_decoding_arguments_are_rejected(copy_model):
    with pytest.raises(ValueError, match="max_new_tokens must be an int >= 1; got 0"):
        greedy_decode(copy_model, _sources(2), max_new_tokens=0)
    with pytest.raises(TypeError, match="max_new_tokens must be an int; got float 2.5"):
        greedy_decode(copy_model, _sources(2), max_new_tokens=2.5)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(copy_model, _sources(2), beam_size=0, max_new_tokens=5)
    with pytest.raises(ValueError, match=r"bos_id must be a token id in \[0, 13\); got 13"):
        greedy_decode(copy_model, _sources(2), max_new_tokens=5, bos_id=13)
    with pytest.raises(ValueError, match=r"eos_id must be a token id in \[0, 13\); got -1"):
        beam_search(copy_model, _sources(2), beam_size=2, max_new_tokens=5, eos_id=-1)
    with pytest.raises(TypeError, match="src must hold integer token ids"):
        greedy_decode(copy_model, _sources(2).float(), max_new_tokens=5)


@pytest.mark.parametrize("decode", [
    lambda model, src, n: greedy_decode(model, src, n),
    lambda model, src, n: greedy_decode(model, src, n, use_cache=False),
    lambda model, src, n: beam_search(model, src, beam_size=2, max_new_tokens=n),
])
def test_max_new_tokens_beyond_the_positional_table_is_rejected_before_decoding(copy_model, decode):
    assert copy_model.config.max_positions == 64
    assert decode(copy_model, _sources(2), 64) is not None  # 64 tokens need 64 decoder positions: allowed
    with pytest.raises(ValueError, match=r"max_new_tokens needs 65 positions, more than .*: max_positions=64"):
        decode(copy_model, _sources(2), 65)


@pytest.mark.parametrize("decode", [greedy_decode, lambda *a, **k: beam_search(*a, beam_size=2, **k)])
def test_the_old_max_len_keyword_names_its_new_name(copy_model, decode):
    with pytest.raises(TypeError, match="no argument 'max_len' any more: it is called 'max_new_tokens'"):
        decode(copy_model, _sources(2), max_len=5)


@pytest.mark.parametrize("use_cache", [True, False])
def test_decoding_checks_its_inputs_at_the_first_step_only(copy_model, use_cache, monkeypatch):
    from transformer import model as model_module

    calls = []
    check_tokens = model_module.check_tokens
    monkeypatch.setattr(model_module, "check_tokens", lambda *args: calls.append(args[1]) or check_tokens(*args))
    out = greedy_decode(copy_model, _sources(4), max_new_tokens=8, use_cache=use_cache)
    assert out.size(1) > 1  # several steps ran
    assert calls == ["src", "tgt"]  # the source once (encoding), the decoder input at the first step only
    with pytest.raises(ValueError, match=r"src_mask has shape \(4, 1, 1, 9\)"):  # a wrong mask still fails clearly
        greedy_decode(copy_model, _sources(4), max_new_tokens=8, use_cache=use_cache,
                      src_mask=torch.ones(4, 1, 1, 9, dtype=torch.bool))
