import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from transformer import Transformer, TransformerConfig, causal_mask
from transformer.decoding import (
    beam_search,
    beam_steps,
    greedy_decode,
    greedy_steps,
    length_penalty_factor,
    sample_decode,
    sample_next,
    sampling_probs,
)
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.config import RunConfig, TrainConfig
from transformer.train.recipes import train_task
from transformer.train.tasks import TaskConfig, task_batch


@pytest.fixture(scope="module")
def copy_model() -> Transformer:
    """A small model trained briefly on the copy task: confident, but not yet perfect, so decoding is non-trivial."""
    torch.manual_seed(0)
    model = Transformer(
        TransformerConfig(
            13,
            13,
            d_model=32,
            n_heads=4,
            d_ff=64,
            n_encoder_layers=2,
            n_decoder_layers=2,
            dropout=0.0,
            norm_first=True,
            max_positions=64,
        )
    )
    train_task(
        TaskConfig(eval_size=16),
        TrainConfig(steps=120, batch_size=64, lr=1e-2, warmup=20, eval_every=120),
        RunConfig(device="cpu"),
        model=model,
        progress=False,
    )
    return model.eval()


def _sources(n: int = 24, seed: int = 5, max_seq_len: int = 10) -> torch.Tensor:
    return task_batch("copy", n, max_seq_len=max_seq_len, rng=torch.Generator().manual_seed(seed)).src


def assert_rows_stop_at_eos(out: torch.Tensor, max_new_tokens: int) -> None:
    """Each row: no BOS, and padding only after its EOS; a row without EOS ran to ``max_new_tokens``."""
    assert out.dtype == torch.long and out.size(1) <= max_new_tokens
    for row in out.tolist():
        assert BOS_ID not in row
        if EOS_ID in row:
            end = row.index(EOS_ID)
            assert PAD_ID not in row[:end] and all(t == PAD_ID for t in row[end + 1 :])
        else:
            assert len(row) == max_new_tokens and PAD_ID not in row  # never stopped: ran to max_new_tokens


def test_greedy_output_stops_at_eos_and_pads_after_it(copy_model):
    out = greedy_decode(copy_model, _sources(), max_new_tokens=15)
    assert out.size(0) == 24
    assert_rows_stop_at_eos(out, 15)


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
    assert torch.equal(
        greedy_decode(copy_model, src, 12, use_cache=True), greedy_decode(copy_model, src, 12, use_cache=False)
    )


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
def test_beam_size_one_with_finished_hypotheses_in_the_beam_is_exactly_greedy(copy_model, use_cache):
    src = _sources()
    tokens, scores = beam_search(
        copy_model, src, beam_size=1, max_new_tokens=12, use_cache=use_cache, finished_in_beam=True
    )
    assert torch.equal(tokens, greedy_decode(copy_model, src, max_new_tokens=12))
    assert scores.shape == (24,) and torch.all(scores <= 0)


def test_beam_size_one_returns_greedys_output_or_a_finished_one_the_model_scores_higher():
    """With finished hypotheses kept apart, a beam of one still follows greedy decoding's path, but also remembers
    every EOS it passed: it returns greedy's output unless one of those scores higher after the length penalty."""
    model = _tiny_model(seed=3)
    src = torch.tensor([[3, 4, 5, 3], [5, 5, 4, 0]])
    greedy = greedy_decode(model, src, max_new_tokens=4)
    tokens, scores = beam_search(model, src, beam_size=1, max_new_tokens=4)
    for b in range(2):
        greedy_score = _penalised(model, src[b : b + 1], _until_eos(greedy[b].tolist()), 0.6)
        assert float(scores[b]) >= greedy_score - 1e-5
        if _until_eos(tokens[b].tolist()) != _until_eos(greedy[b].tolist()):
            assert float(scores[b]) > greedy_score


def test_beam_search_with_and_without_cache_agree(copy_model):
    src = _sources()
    cached = beam_search(copy_model, src, beam_size=4, max_new_tokens=12, use_cache=True)
    uncached = beam_search(copy_model, src, beam_size=4, max_new_tokens=12, use_cache=False)
    assert torch.equal(cached[0], uncached[0])
    torch.testing.assert_close(cached[1], uncached[1], rtol=1e-4, atol=1e-5)


def _tiny_model(seed: int, vocab_size: int = 6) -> Transformer:
    """A random model with few symbols (ids 3.. after PAD, BOS and EOS): small enough to score every output."""
    torch.manual_seed(seed)
    config = TransformerConfig(
        vocab_size, vocab_size, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0
    )
    model = Transformer(config).eval()
    with torch.no_grad():  # sharper than at initialisation, so that outputs differ a lot in probability
        model.lm_head.weight.mul_(4.0)
        model.lm_head.bias.normal_(0.0, 2.0)
    return model


def _until_eos(row: list[int]) -> list[int]:
    return row[: row.index(EOS_ID) + 1] if EOS_ID in row else [t for t in row if t != PAD_ID]


def _sequence_log_prob(model: Transformer, src: torch.Tensor, output: list[int]) -> float:
    """Summed log-probability of ``output`` under teacher forcing, with PAD and BOS excluded as decoding does."""
    tgt_in = torch.tensor([[BOS_ID, *output[:-1]]])
    with torch.no_grad():
        hidden = model.decode(tgt_in, *model.encode(src), causal_mask(tgt_in.size(1)))
        logits = model.lm_head(hidden)[0]  # (T, V)
    logits[:, [PAD_ID, BOS_ID]] = float("-inf")
    return float(F.log_softmax(logits, -1).gather(1, torch.tensor(output)[:, None]).sum())


def _penalised(model: Transformer, src: torch.Tensor, output: list[int], alpha: float) -> float:
    return _sequence_log_prob(model, src, output) / float(length_penalty_factor(torch.tensor(len(output)), alpha))


def _penalised_scores(model: Transformer, src: torch.Tensor, outputs: list[list[int]], alpha: float) -> torch.Tensor:
    """:func:`_penalised` of many outputs of one source in one teacher-forced batch, ``(len(outputs),)``."""
    width = max(map(len, outputs))
    tgt_out = torch.tensor([o + [PAD_ID] * (width - len(o)) for o in outputs])  # (N, L)
    tgt_in = torch.cat([torch.full((len(outputs), 1), BOS_ID), tgt_out[:, :-1]], dim=1)  # PAD after the end: unread
    with torch.no_grad():
        memory, src_mask = model.encode(src.expand(len(outputs), -1))
        logits = model.lm_head(model.decode(tgt_in, memory, src_mask, causal_mask(width)))  # (N, L, V)
    logits[..., [PAD_ID, BOS_ID]] = float("-inf")
    log_probs = F.log_softmax(logits, -1).gather(2, tgt_out[..., None])[..., 0]  # (N, L)
    lengths = torch.tensor([len(o) for o in outputs])
    summed = log_probs.masked_fill(tgt_out == PAD_ID, 0.0).sum(1)
    return summed / length_penalty_factor(lengths, alpha)


def _every_output(symbols: list[int], max_new_tokens: int) -> list[list[int]]:
    """Every output beam search can return: symbols ended by EOS within max_new_tokens, or max_new_tokens symbols."""
    ended = [[*p, EOS_ID] for n in range(max_new_tokens) for p in itertools.product(symbols, repeat=n)]
    return ended + [list(p) for p in itertools.product(symbols, repeat=max_new_tokens)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("max_new_tokens", [3, 4])
def test_a_beam_wide_enough_finds_the_argmax_of_every_output_under_the_penalised_score(seed, alpha, max_new_tokens):
    """Exhaustive search: with 3 symbols and up to 4 tokens there are at most 121 outputs. A beam of 3^(N-1) live
    hypotheses is never pruned before the last step, so beam search must return the best of them all, with its score,
    for every source of a batch (padded differently)."""
    model = _tiny_model(seed)
    symbols = list(range(3, 6))
    src = torch.tensor([[3, 4, 5, 4], [5, 3, 0, 0], [4, 4, 4, 0]])
    tokens, scores = beam_search(
        model, src, beam_size=3 ** (max_new_tokens - 1), max_new_tokens=max_new_tokens, length_penalty=alpha
    )
    outputs = _every_output(symbols, max_new_tokens)
    for b in range(src.size(0)):
        one = src[b : b + 1, : int((src[b] != PAD_ID).sum())]
        scored = _penalised_scores(model, one, outputs, alpha)
        best = outputs[int(scored.argmax())]
        assert _until_eos(tokens[b].tolist()) == best
        assert float(scores[b]) == pytest.approx(float(scored.max()), abs=1e-4)
        assert float(scored.max()) - float(scored.topk(2).values[1]) > 1e-3  # one clear best: no tie to break


class ScriptedModel(Transformer):
    """A Transformer whose next-token probabilities are a table: ``script[(t, last token)] = {token: p}`` at step t
    (the last token is BOS at step 0); every other token gets 1e-6. Its decoder writes the state (t, last token) as
    a one-hot vector, and its output layer holds the table's log-probabilities."""

    def __init__(self, script: dict[tuple[int, int], dict[int, float]], vocab_size: int = 6, steps: int = 4):
        d = steps * vocab_size
        super().__init__(
            TransformerConfig(
                vocab_size,
                vocab_size,
                d_model=d,
                n_heads=1,
                d_ff=4,
                n_encoder_layers=1,
                n_decoder_layers=1,
                dropout=0.0,
            )
        )
        self.vocab_size = vocab_size
        table = torch.full((vocab_size, d), 1e-6)  # (V, states): the output layer's weight
        for (t, last), probs in script.items():
            for token, p in probs.items():
                table[token, t * vocab_size + last] = p
        with torch.no_grad():
            self.lm_head.weight.copy_(table.log())
            self.lm_head.bias.zero_()

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None, *, cache=None):
        state = (tgt.size(1) - 1) * self.vocab_size + tgt[:, -1]  # (B,): the step and the last token
        return F.one_hot(state, self.config.d_model).float()[:, None].expand(-1, tgt.size(1), -1)  # (B, T, d)


def test_a_finished_hypothesis_outranked_on_its_raw_sum_is_kept_and_wins_on_the_penalised_score():
    """Step 0: EOS at once (0.4) or 'a' (0.6); then 'a' is followed by 'b' (0.7) or EOS (0.3), and 'a b' by 'c' (0.7)
    or EOS (0.3). Penalised (alpha 0.6), the best output is EOS alone: -0.92, against -1.03 for 'a b c' (cut at three
    tokens), -1.56 for 'a EOS' and -1.74 for 'a b EOS'. A beam of one keeps EOS in its finished list and returns it;
    with finished hypotheses holding beam slots, 'a' (-0.51) pushes EOS (-0.92) out at the first step."""
    a, b, c = 3, 4, 5
    script = {(0, BOS_ID): {EOS_ID: 0.4, a: 0.6}, (1, a): {b: 0.7, EOS_ID: 0.3}, (2, b): {c: 0.7, EOS_ID: 0.3}}
    model = ScriptedModel(script).eval()
    src = torch.tensor([[3, 4]])
    tokens, score = beam_search(model, src, beam_size=1, max_new_tokens=3, use_cache=False)
    assert tokens.tolist() == [[EOS_ID]] and float(score[0]) == pytest.approx(math.log(0.4), abs=1e-4)
    everything = _every_output([a, b, c], 3)
    scored = _penalised_scores(model, src, everything, 0.6)
    assert everything[int(scored.argmax())] == [EOS_ID]
    old, old_score = beam_search(model, src, beam_size=1, max_new_tokens=3, use_cache=False, finished_in_beam=True)
    assert old.tolist() == [[a, b, c]]
    assert float(old_score[0]) == pytest.approx(math.log(0.6 * 0.7 * 0.7) / (8 / 6) ** 0.6, abs=1e-4)


def test_the_search_stops_as_soon_as_the_best_finished_score_is_out_of_reach():
    """'a' (0.9) then EOS (0.9) finishes at -0.20 / (7/6)^0.6 = -0.19; what is left alive, 'a b' at log(0.9 * 0.1),
    could reach at best -2.41 / ((5 + 8) / 6)^0.6 = -1.51 over eight steps: the search ends after two of them."""
    a, b = 3, 4
    model = ScriptedModel({(0, BOS_ID): {a: 0.9, EOS_ID: 0.1}, (1, a): {EOS_ID: 0.9, b: 0.1}}, steps=8).eval()
    steps = list(beam_steps(model, torch.tensor([[3]]), beam_size=2, max_new_tokens=8, use_cache=False))
    assert len(steps) == 2
    assert _until_eos(steps[-1].finished[0, 0].tolist()) == [a, EOS_ID]


def test_beam_search_stops_once_no_live_hypothesis_can_beat_the_best_finished_one(copy_model):
    """The copy model finishes its outputs with near certainty: the search stops at the step after the longest
    output's EOS, far before max_new_tokens, and the stopping bound held at that step."""
    src = _sources(8, max_seq_len=5)
    steps = list(beam_steps(copy_model, src, beam_size=4, max_new_tokens=40))
    assert len(steps) < 40
    last = steps[-1]
    best_possible = last.scores[:, 0] / length_penalty_factor(torch.tensor(40), 0.6)
    assert torch.all(last.finished_scores[:, 0] > best_possible)
    assert not torch.all(
        steps[-2].finished_scores[:, 0] > steps[-2].scores[:, 0] / length_penalty_factor(torch.tensor(40), 0.6)
    )


def test_beam_steps_keep_finished_hypotheses_apart_sorted_and_penalised(copy_model):
    src = _sources(3)
    steps = list(beam_steps(copy_model, src, beam_size=3, max_new_tokens=12))
    for t, step in enumerate(steps):
        assert step.tokens.shape == (3, 3, t + 1) and step.scores.shape == step.parents.shape == (3, 3)
        assert step.finished.shape == (3, 3, 12) and step.finished_scores.shape == (3, 3)
        assert not (step.tokens == EOS_ID).any()  # a live hypothesis never holds EOS
        assert torch.all(step.scores[:, :-1] >= step.scores[:, 1:])  # best first
        assert torch.all(step.finished_scores[:, :-1] >= step.finished_scores[:, 1:])
        if t:  # each live hypothesis is its parent of the step before, one token longer
            parents = steps[t - 1].tokens.gather(1, step.parents[..., None].expand(-1, -1, t))
            assert torch.equal(step.tokens[..., :t], parents)
    final = steps[-1]
    for b in range(3):
        for k in range(3):
            output = _until_eos(final.finished[b, k].tolist())
            if output and output[-1] == EOS_ID:
                expected = _penalised(copy_model, src[b : b + 1], output, 0.6)
                assert float(final.finished_scores[b, k]) == pytest.approx(expected, abs=1e-4)
    tokens, scores = beam_search(copy_model, src, beam_size=3, max_new_tokens=12)
    assert torch.equal(scores, final.finished_scores[:, 0])
    assert torch.equal(tokens, final.finished[:, 0, : tokens.size(1)])


def test_finished_in_beam_lets_finished_hypotheses_hold_slots_and_penalises_only_at_the_end():
    """The simpler search: a finished hypothesis stays in its slot, grown by PAD at no cost, so it keeps its raw sum;
    the returned score is that sum divided by the penalty of its real length."""
    model = _tiny_model(1)
    src = torch.tensor([[3, 4, 5, 4]])
    steps = list(beam_steps(model, src, beam_size=3, max_new_tokens=4, finished_in_beam=True))
    assert len(steps) == 4  # no early stop: the penalty is not known during the search
    for earlier, later in itertools.pairwise(steps):
        ended = (earlier.tokens[..., -1] == EOS_ID) | (earlier.tokens[..., -1] == PAD_ID)
        for slot, parent in enumerate(later.parents[0].tolist()):  # a finished slot lives on: PAD, same score
            if ended[0, parent]:
                assert later.tokens[0, slot, -1] == PAD_ID and later.scores[0, slot] == earlier.scores[0, parent]
    assert any((step.tokens == PAD_ID).any() for step in steps)  # the case arose: a finished hypothesis held a slot
    tokens, score = beam_search(model, src, beam_size=3, max_new_tokens=4, finished_in_beam=True)
    output = _until_eos(tokens[0].tolist())
    assert float(score[0]) == pytest.approx(_penalised(model, src, output, 0.6), abs=1e-4)


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


@pytest.mark.parametrize(
    "decode",
    [
        lambda model, src, n: greedy_decode(model, src, n),
        lambda model, src, n: greedy_decode(model, src, n, use_cache=False),
        lambda model, src, n: beam_search(model, src, beam_size=2, max_new_tokens=n),
    ],
)
def test_max_new_tokens_beyond_the_positional_table_is_rejected_before_decoding(copy_model, decode):
    assert copy_model.config.max_positions == 64
    assert decode(copy_model, _sources(2), 64) is not None  # 64 tokens need 64 decoder positions: allowed
    with pytest.raises(ValueError, match=r"max_new_tokens needs 65 positions, more than .*: max_positions=64"):
        decode(copy_model, _sources(2), 65)


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
        greedy_decode(
            copy_model,
            _sources(4),
            max_new_tokens=8,
            use_cache=use_cache,
            src_mask=torch.ones(4, 1, 1, 9, dtype=torch.bool),
        )


# ----------------------------------------------------------------------------------------------------------------
# Sampling


def _first_token_distribution(model, src, temperature, top_k=None):
    """What sample_decode should draw first for ``src (1, S)``: the model's next-token distribution after BOS, with
    PAD and BOS excluded, divided by ``temperature`` and cut to the ``top_k`` most probable."""
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        logits = model.lm_head(model.decode(torch.tensor([[BOS_ID]]), memory, src_mask, causal_mask(1))[:, -1])[0]
    logits[[PAD_ID, BOS_ID]] = -math.inf
    logits = F.log_softmax(logits, dim=-1) / temperature
    if top_k is not None:
        logits[logits < logits.topk(top_k).values[-1]] = -math.inf
    return logits.softmax(dim=-1)


@pytest.mark.parametrize(("temperature", "top_k"), [(1.0, None), (2.0, None), (0.7, 3)])
def test_sampling_draws_the_first_token_from_the_tempered_top_k_distribution(temperature, top_k):
    torch.manual_seed(1)
    model = Transformer(
        TransformerConfig(13, 13, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0)
    ).eval()
    src = _sources(1)
    n = 20_000
    drawn = sample_decode(
        model,
        src.expand(n, -1),
        max_new_tokens=1,
        temperature=temperature,
        top_k=top_k,
        rng=torch.Generator().manual_seed(0),
    )[:, 0]
    frequencies = torch.bincount(drawn, minlength=13).double() / n
    expected = _first_token_distribution(model, src, temperature, top_k).double()
    assert frequencies[expected == 0].sum() == 0  # PAD, BOS and the tokens outside the top k are never drawn
    assert torch.allclose(frequencies, expected, atol=0.015)


def test_sampling_with_the_same_generator_seed_repeats_and_other_seeds_differ():
    torch.manual_seed(2)
    model = Transformer(
        TransformerConfig(13, 13, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0)
    ).eval()  # untrained: a flat distribution
    src = _sources(16)

    def draw(seed):
        return sample_decode(model, src, max_new_tokens=8, rng=torch.Generator().manual_seed(seed))

    assert torch.equal(draw(0), draw(0))
    assert not torch.equal(draw(0), draw(1))


def test_sampling_with_a_generator_leaves_the_global_generator_alone(copy_model):
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    sample_decode(copy_model, _sources(4), max_new_tokens=6, rng=torch.Generator().manual_seed(0))
    assert torch.equal(torch.rand(4), expected)


@pytest.mark.parametrize("use_cache", [True, False])
def test_sampling_the_top_1_or_at_a_tiny_temperature_is_greedy_decoding(copy_model, use_cache):
    src = _sources()
    greedy = greedy_decode(copy_model, src, max_new_tokens=15)
    rng = torch.Generator().manual_seed(0)
    for how in ({"top_k": 1, "temperature": 5.0}, {"temperature": 1e-4}):
        assert torch.equal(sample_decode(copy_model, src, 15, rng=rng, use_cache=use_cache, **how), greedy)


def test_sampled_rows_end_with_eos_and_are_padded_after_it(copy_model):
    out = sample_decode(
        copy_model, _sources(), max_new_tokens=15, temperature=3.0, rng=torch.Generator().manual_seed(0)
    )
    assert_rows_stop_at_eos(out, 15)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"temperature": 0.0}, ValueError, "temperature must be a positive finite number; got 0.0"),
        ({"temperature": -1}, ValueError, "temperature must be a positive finite number; got -1"),
        ({"temperature": math.inf}, ValueError, "temperature must be a positive finite number; got inf"),
        ({"temperature": "hot"}, TypeError, "temperature must be a number"),
        ({"temperature": True}, TypeError, "temperature must be a number"),
        ({"top_k": 0}, ValueError, r"top_k must be an int in \[1, 13\]; got 0"),
        ({"top_k": 14}, ValueError, r"top_k must be an int in \[1, 13\]; got 14"),
        ({"top_k": 2.5}, TypeError, "top_k must be an int; got float 2.5"),
        ({"rng": 0}, TypeError, "rng must be a torch.Generator or None; got int"),
        ({"max_new_tokens": 0}, ValueError, "max_new_tokens must be an int >= 1; got 0"),
    ],
)
def test_bad_sampling_arguments_are_rejected_naming_the_argument(copy_model, kwargs, error, message):
    arguments = {"max_new_tokens": 5, **kwargs}
    with pytest.raises(error, match=message):
        sample_decode(copy_model, _sources(2), **arguments)


def test_sample_next_draws_from_sampling_probs_which_keep_ties_with_the_k_th_and_sum_to_one():
    scores = torch.tensor([[2.0, 1.0, 1.0, 0.0, -1.0], [0.0, 0.0, 0.0, 0.0, 3.0]])
    probs = sampling_probs(scores, temperature=0.5, top_k=2)
    assert torch.equal(probs > 0, torch.tensor([[True, True, True, False, False], [True, True, True, True, True]]))
    assert torch.allclose(probs.sum(-1), torch.ones(2))
    expected = (scores[0, :3] / 0.5).softmax(-1)  # the two tied at the 2nd largest both kept
    assert torch.allclose(probs[0, :3], expected)
    n = 20_000
    drawn = sample_next(scores[:1].expand(n, -1), 0.5, 2, rng=torch.Generator().manual_seed(0))
    assert torch.allclose(torch.bincount(drawn, minlength=5).double() / n, probs[0].double(), atol=0.015)
    # logits and log-probabilities are the same distribution; top_k=1 is the argmax
    assert torch.allclose(sampling_probs(scores.log_softmax(-1), 0.5, 2), probs)
    scores = torch.randn(6, 9, generator=torch.Generator().manual_seed(1))
    assert torch.equal(sample_next(scores, 3.0, 1), scores.argmax(-1))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"temperature": 0.0}, ValueError, "temperature must be a positive finite number; got 0.0"),
        ({"top_k": 6}, ValueError, r"top_k must be an int in \[1, 5\]; got 6"),
        ({"rng": "seed"}, TypeError, "rng must be a torch.Generator or None; got str"),
    ],
)
def test_sample_next_rejects_bad_arguments_naming_them(kwargs, error, message):
    with pytest.raises(error, match=message):
        sample_next(torch.zeros(1, 5), **kwargs)
