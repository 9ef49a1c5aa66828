"""The exercises of chapter 8 (transformer_book.exercises.decoding): each check passes right answers, written in
several ways, and refuses the classic wrong ones with a message that names the mistake, whatever the model it is given
has learned (an untrained one here, which may never say </s> at all)."""

import copy
import math

import pytest
import torch
from exercise_checks import accepted, refused

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


def next_token(model, src, decoder_input, last=True, excluded=(PAD_ID, BOS_ID), sample=False, masked=True):
    memory, src_mask = model.encode(src)
    causal = causal_mask(decoder_input.size(1)) if masked else None
    hidden = model.decode(decoder_input, memory, src_mask, causal)  # (B, t, d_model)
    logits = model.lm_head(hidden[:, -1] if last else hidden[:, 0])  # (B, V)
    logits[:, list(excluded)] = -math.inf
    return torch.multinomial(logits.softmax(-1), 1)[:, 0] if sample else logits.argmax(-1)


@pytest.mark.parametrize(
    "right",
    [
        next_token,
        lambda *a: next_token(*a, masked=False),  # the last position sees every earlier one with or without it
        lambda model, src, decoder_input: (
            next_token(model, src, decoder_input).tolist()
            and model(src, decoder_input)[:, -1].index_fill(-1, torch.tensor([PAD_ID, BOS_ID]), -math.inf).argmax(-1)
        ),
    ],
    ids=["encode, decode, lm_head", "no causal mask (the last position needs none)", "the model's forward"],
)
def test_next_token_check_passes_right_answers(tiny_model, right):
    model, sources = tiny_model
    accepted(grade_next_token, right, model, sources, 8)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(last=False), r"at step 1 .*: it reads the logits of the first position"),  # step 0: first = last
        (dict(excluded=()), r"\(<(pad|s)>, never a valid output"),
        (dict(excluded=(PAD_ID,)), r"\(<s>, never a valid output"),
        (dict(excluded=(BOS_ID,)), r"\(<pad>, never a valid output"),
        (
            dict(excluded=(PAD_ID, BOS_ID, EOS_ID)),
            r"a model that favours </s>.*it never picks </s>: exclude <pad> and <s> only",
        ),
        (dict(sample=True), "it samples, where greedy decoding takes the most probable token"),
    ],
    ids=[
        "first position",
        "nothing excluded",
        "<s> not excluded",
        "<pad> not excluded",
        "</s> excluded too",
        "sampled",
    ],
)
def test_next_token_check_refuses_classic_mistakes_naming_them(tiny_model, options, message):
    model, sources = tiny_model
    refused(grade_next_token, lambda *a: next_token(*a, **options), message, model, sources, 8)


def test_next_token_check_catches_a_step_that_can_say_pad_or_bos_with_a_model_that_never_would(tiny_model):
    """Like the chapter's half-trained model, this one never prefers <pad> or <s>: a step that forgets to exclude
    them gives greedy decoding's tokens here, and the check must still catch it."""
    model, sources = tiny_model
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.lm_head.bias[[PAD_ID, BOS_ID]] -= 100.0
    for src in sources:  # the model alone would not give it away
        for step in greedy_decode(model, src, 8, use_cache=False).T:
            assert not ((step == PAD_ID) | (step == BOS_ID)).all()
    forgetful = lambda *a: next_token(*a, excluded=())  # noqa: E731
    for t in range(1, 4):
        decoder_input = torch.cat([torch.full((4, 1), BOS_ID), greedy_decode(model, sources[0], t)], dim=1)
        assert torch.equal(forgetful(model, sources[0], decoder_input), next_token(model, sources[0], decoder_input))
    refused(
        grade_next_token,
        forgetful,
        r"a model that favours <pad> and <s>.*\(<s>, never a valid output",
        model,
        sources,
        8,
    )


def test_next_token_check_wants_one_id_per_row(tiny_model):
    model, sources = tiny_model

    def all_positions(model, src, decoder_input):
        hidden = model.decode(decoder_input, *model.encode(src), causal_mask(decoder_input.size(1)))
        return model.lm_head(hidden).argmax(-1)  # (B, t)

    refused(grade_next_token, all_positions, r"shape \(4, 1\), not \(4,\)", model, sources, 8)


def greedy(
    model,
    src,
    max_len,
    pad_after_eos=True,
    stop=True,
    keep_bos=False,
    steps=None,
    stop_on_any=False,
    append_last=True,
    after_eos=PAD_ID,
):
    """The chapter's loop, optionally with one mistake."""
    tokens = torch.full((src.size(0), 1), BOS_ID)
    finished = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len if steps is None else steps(max_len)):
        chosen = next_token(model, src, tokens)
        if pad_after_eos:
            chosen = chosen.masked_fill(finished, after_eos)
        done = finished | (chosen == EOS_ID)
        if not append_last and stop and done.all():
            break
        tokens = torch.cat([tokens, chosen[:, None]], dim=1)
        finished = done
        if stop and (finished.any() if stop_on_any else finished.all()):
            break
    return tokens if keep_bos else tokens[:, 1:]


def while_loop(model, src, max_new_tokens):
    """A while loop over the rows still running, with the chapter's step: the same tokens, written another way."""
    out = torch.full((src.size(0), 0), PAD_ID)
    running = torch.ones(src.size(0), dtype=torch.bool)
    while running.any() and out.size(1) < max_new_tokens:
        decoder_input = torch.cat([torch.full((src.size(0), 1), BOS_ID), out], dim=1)
        chosen = torch.where(running, next_token(model, src, decoder_input), PAD_ID)
        out = torch.cat([out, chosen[:, None]], dim=1)
        running &= chosen != EOS_ID
    return out


@pytest.mark.parametrize(
    "right",
    [greedy, while_loop, lambda model, src, n: greedy_decode(model, src, n)],
    ids=["the chapter's loop", "a while loop", "the package's, cached"],
)
def test_greedy_decode_check_passes_right_loops(tiny_model, right):
    model, sources = tiny_model
    accepted(grade_greedy_decode, right, model, sources, 8)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(keep_bos=True), "it starts with <s>"),
        (dict(stop=False), r"a model that says </s> at once.*gives 8 columns, greedy decoding 1: stop when every row"),
        (dict(steps=lambda n: n - 1), "it stops one step early"),
        (dict(stop_on_any=True), "it stops when the first row says </s>"),
        (dict(append_last=False), "the last step's tokens are missing"),
        (dict(pad_after_eos=False), "a row that has said </s> gets <pad> from then on"),
        (dict(after_eos=EOS_ID), "after </s> a row gets <pad>, not </s> again"),
    ],
    ids=[
        "<s> kept",
        "never stops",
        "one step short",
        "stops at the first </s>",
        "last step dropped",
        "no padding after </s>",
        "</s> repeated",
    ],
)
def test_greedy_decode_check_refuses_classic_mistakes_naming_them(tiny_model, options, message):
    model, sources = tiny_model
    refused(grade_greedy_decode, lambda *a: greedy(*a, **options), message, model, sources, 8)
