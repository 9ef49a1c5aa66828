"""The exercises of chapter 8 (transformer_book.exercises.decoding): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import copy
import math

import pytest
import torch

from transformer import Transformer, TransformerConfig, causal_mask
from transformer.decoding import greedy_decode
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.tasks import task_batch
from transformer_book.exercises import grade_greedy_decode, grade_next_token


@pytest.fixture(scope="module")
def tiny_model():
    torch.manual_seed(0)
    config = TransformerConfig(
        12, 12, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=2, dropout=0.0
    )
    sources = [task_batch("copy", 4, 12, max_seq_len=6, rng=torch.Generator().manual_seed(s)).src for s in (0, 1)]
    return Transformer(config).eval(), sources


@pytest.fixture(scope="module")
def eos_model(tiny_model):
    """The tiny model with a bias towards </s>: rows of one source finish at different steps (one never), all rows of
    the other before max_len, which is what a decoding loop must get right."""
    model, sources = tiny_model
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.lm_head.bias[EOS_ID] += 1.5
    outputs = [greedy_decode(model, src, 8, use_cache=False) for src in sources]
    assert outputs[0].size(1) == 8 and (outputs[0][:, :-1] == EOS_ID).any(dim=1).sum() >= 2
    assert outputs[1].size(1) < 8
    return model, sources


def next_token(model, src, decoder_input, last=True, exclude=True):
    memory, src_mask = model.encode(src)
    hidden = model.decode(decoder_input, memory, src_mask, causal_mask(decoder_input.size(1)))  # (B, t, d_model)
    logits = model.lm_head(hidden[:, -1] if last else hidden[:, 0])  # (B, V)
    if exclude:
        logits[:, [PAD_ID, BOS_ID]] = -math.inf
    return logits.argmax(-1)


def test_next_token_check_passes_a_right_step(tiny_model):
    model, sources = tiny_model
    grade_next_token(next_token, model, sources, max_new_tokens=8)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(last=False), "at step 1 "),  # step 0 has one position only: first = last
        (dict(exclude=False), "never a valid output"),  # an untrained model says PAD or BOS
    ],
)
def test_next_token_check_catches_classic_mistakes(tiny_model, options, message):
    model, sources = tiny_model
    with pytest.raises(AssertionError, match=message):
        grade_next_token(lambda *a: next_token(*a, **options), model, sources, max_new_tokens=8)


def next_token_excluding(model, src, decoder_input, excluded):
    memory, src_mask = model.encode(src)
    hidden = model.decode(decoder_input, memory, src_mask, causal_mask(decoder_input.size(1)))
    logits = model.lm_head(hidden[:, -1])  # (B, V)
    logits[:, excluded] = -math.inf
    return logits.argmax(-1)


@pytest.mark.parametrize(
    "excluded, message",
    [([], "<s>, never a valid output"), ([PAD_ID], "<s>, never a valid output"), ([BOS_ID], "<pad>, never a valid")],
)
def test_next_token_check_catches_a_step_that_can_say_pad_or_bos_with_a_model_that_never_would(
    tiny_model, excluded, message
):
    """Like the chapter's half-trained model, this one never prefers <pad> or <s>: a step that forgets to exclude
    them gives greedy decoding's tokens here, and the check must still catch it."""
    model, sources = tiny_model
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.lm_head.bias[[PAD_ID, BOS_ID]] -= 100.0
    for src in sources:  # the model alone would not give it away
        for step in greedy_decode(model, src, 8, use_cache=False).T:
            assert not ((step == PAD_ID) | (step == BOS_ID)).all()
    forgetful = lambda *a: next_token_excluding(*a, excluded)  # noqa: E731
    for t in range(1, 4):
        decoder_input = torch.cat([torch.full((4, 1), BOS_ID), greedy_decode(model, sources[0], t)], dim=1)
        assert torch.equal(forgetful(model, sources[0], decoder_input), next_token(model, sources[0], decoder_input))
    with pytest.raises(AssertionError, match=rf"a model that favours <pad> and <s>.*\({message}"):
        grade_next_token(forgetful, model, sources, max_new_tokens=8)


def test_next_token_check_wants_one_id_per_row(tiny_model):
    model, sources = tiny_model

    def all_positions(model, src, decoder_input):
        hidden = model.decode(decoder_input, *model.encode(src), causal_mask(decoder_input.size(1)))
        return model.lm_head(hidden).argmax(-1)  # (B, t)

    with pytest.raises(AssertionError, match=r"shape \(4, 1\), not \(4,\)"):
        grade_next_token(all_positions, model, sources, max_new_tokens=8)


def greedy(model, src, max_len, pad_after_eos=True, stop=True, keep_bos=False):
    tokens = torch.full((src.size(0), 1), BOS_ID)
    finished = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len):
        chosen = next_token(model, src, tokens)
        if pad_after_eos:
            chosen = chosen.masked_fill(finished, PAD_ID)
        tokens = torch.cat([tokens, chosen[:, None]], dim=1)
        finished |= chosen == EOS_ID
        if stop and finished.all():
            break
    return tokens if keep_bos else tokens[:, 1:]


def test_greedy_decode_check_passes_a_right_loop(eos_model):
    model, sources = eos_model
    grade_greedy_decode(greedy, model, sources, max_new_tokens=8)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(keep_bos=True), "starts with <s>"),
        (dict(stop=False), "stop when every row"),
        (dict(pad_after_eos=False), "gets <pad> from then on"),
    ],
)
def test_greedy_decode_check_catches_classic_mistakes(eos_model, options, message):
    model, sources = eos_model
    with pytest.raises(AssertionError, match=message):
        grade_greedy_decode(lambda *a: greedy(*a, **options), model, sources, max_new_tokens=8)
