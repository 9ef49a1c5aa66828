"""The batches of the models of one stack (transformer.train.language_model): a task written as one row for a
decoder-only model, BERT's masked-token corruption, and how the training loop and its evaluation take them."""

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from transformer.tokens import BOS_ID, EOS_ID, FIRST_SYMBOL, PAD_ID
from transformer.train.distributed import shard
from transformer.train.evaluation import evaluate_batches
from transformer.train.language_model import (
    DecoderOnlyStream,
    LMBatch,
    MaskedTokenStream,
    decoder_only_batch,
    lm_batch,
    mask_tokens,
    masked_token_batch,
    masked_token_eval_batches,
)
from transformer.train.objective import sequence_loss
from transformer.train.recipes import train_decoder_only, train_masked_tokens
from transformer.train.tasks import TaskStream, make_batch, random_sequences, task_batch, task_target


def test_a_copy_batch_becomes_rows_x_sep_x_scored_on_the_copy_and_eos_only():
    batch = make_batch(torch.tensor([[3, 4, 5], [6, 0, 0]]), torch.tensor([[3, 4, 5], [6, 0, 0]]))
    rows = decoder_only_batch(batch)
    assert rows.tokens.tolist() == [[3, 4, 5, BOS_ID, 3, 4, 5], [6, BOS_ID, 6, 0, 0, 0, 0]]
    assert rows.tgt_out.tolist() == [[0, 0, 0, 3, 4, 5, EOS_ID], [0, 6, EOS_ID, 0, 0, 0, 0]]
    assert rows.n_tokens == batch.n_tokens == 6  # what the encoder-decoder model is scored on, token for token
    assert rows.mask.shape == (2, 1, 1, 7) and rows.mask[1, 0, 0].tolist() == [True] * 3 + [False] * 4
    assert rows.inputs() == (rows.tokens, rows.mask)


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_every_row_holds_the_source_the_separator_and_the_target_with_its_predictions_one_step_ahead(task):
    batch = task_batch(task, 50, rng=torch.Generator().manual_seed(1))
    rows = decoder_only_batch(batch)
    for i in range(len(batch)):
        x, y = batch.src[i][batch.src[i] != PAD_ID], batch.tgt_out[i][batch.tgt_out[i] != PAD_ID]  # y ends in EOS
        n = len(x)
        assert rows.tokens[i, :n].tolist() == x.tolist() and int(rows.tokens[i, n]) == BOS_ID
        assert rows.tokens[i, n + 1 : n + len(y)].tolist() == y[:-1].tolist()  # the target, read after <sep>
        assert rows.tgt_out[i, n : n + len(y)].tolist() == y.tolist()  # ... predicted one position earlier
        assert (rows.tgt_out[i, :n] == PAD_ID).all() and (rows.tokens[i, n + len(y) :] == PAD_ID).all()


def test_the_decoder_only_stream_draws_the_task_stream_s_sequences_and_resumes_only_its_own_kind():
    plain = TaskStream("copy", 8, rng=torch.Generator().manual_seed(3))
    decoder_only = DecoderOnlyStream("copy", 8, rng=torch.Generator().manual_seed(3))
    for _ in range(3):
        torch.testing.assert_close(next(decoder_only).tokens, decoder_only_batch(next(plain)).tokens)
    saved, expected = decoder_only.state_dict(), next(decoder_only)
    again = DecoderOnlyStream("copy", 8, rng=torch.Generator().manual_seed(99))
    again.load_state_dict(saved)
    torch.testing.assert_close(next(again).tokens, expected.tokens)
    with pytest.raises(ValueError, match="form: None saved, 'decoder-only' here"):
        again.load_state_dict(plain.state_dict())


def test_masking_chooses_15_percent_of_the_symbols_and_replaces_80_10_10_on_a_large_batch():
    tokens, _ = random_sequences(20_000, 13, 20, 20, rng=torch.Generator().manual_seed(0))  # 400,000 symbols
    corrupted, tgt_out = mask_tokens(tokens, vocab_size=13, rng=torch.Generator().manual_seed(1))
    chosen = tgt_out != PAD_ID
    assert chosen.sum(dim=1).eq(3).all()  # round(0.15 * 20) in every row
    assert torch.equal(tgt_out[chosen], tokens[chosen]) and torch.equal(corrupted[~chosen], tokens[~chosen])
    n = int(chosen.sum())
    masked = float((corrupted[chosen] == 13).sum()) / n
    random = float(((corrupted[chosen] != 13) & (corrupted[chosen] != tokens[chosen])).sum()) / n
    kept = float((corrupted[chosen] == tokens[chosen]).sum()) / n
    assert masked == pytest.approx(0.8, abs=0.01)
    assert random == pytest.approx(0.1 * 9 / 10, abs=0.01)  # a random symbol is the original one time in ten
    assert kept == pytest.approx(0.1 + 0.1 / 10, abs=0.01)
    replaced = corrupted[chosen & (corrupted != 13)]
    assert replaced.min() >= FIRST_SYMBOL and replaced.max() < 13  # random replacements are symbols


def test_masking_never_touches_padding_or_special_ids_and_chooses_at_least_one_symbol_per_row():
    tokens = torch.tensor([[3, 4, BOS_ID, 5, EOS_ID, 0], [BOS_ID, EOS_ID, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
    for seed in range(50):
        corrupted, tgt_out = mask_tokens(tokens, 13, rate=0.15, rng=torch.Generator().manual_seed(seed))
        special = tokens < FIRST_SYMBOL
        assert torch.equal(corrupted[special], tokens[special]) and (tgt_out[special] == PAD_ID).all()
        assert (tgt_out[0] != PAD_ID).sum() == 1  # round(0.15 * 3) = 0, but a row with symbols gets one
    every = mask_tokens(tokens, 13, rate=1.0, rng=torch.Generator().manual_seed(0))[1]
    assert torch.equal(every != PAD_ID, tokens >= FIRST_SYMBOL)  # rate 1 chooses every symbol and nothing else


def test_masking_repeats_with_the_same_generator_and_differs_with_another():
    tokens, _ = random_sequences(64, rng=torch.Generator().manual_seed(0))
    first, second, other = (mask_tokens(tokens, 13, rng=torch.Generator().manual_seed(s)) for s in (5, 5, 6))
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    assert not torch.equal(first[1], other[1])


def test_the_loss_of_a_masked_batch_counts_the_chosen_positions_only():
    batch = masked_token_batch("copy", 16, rng=torch.Generator().manual_seed(0))
    logits = torch.randn(*batch.tokens.shape, 14)
    scrambled = logits.clone()
    scrambled[batch.tgt_out == PAD_ID] = torch.randn_like(scrambled[batch.tgt_out == PAD_ID]) * 100
    assert sequence_loss(scrambled, batch.tgt_out) == sequence_loss(logits, batch.tgt_out)
    chosen = batch.tgt_out != PAD_ID
    expected = nn.functional.cross_entropy(logits[chosen], batch.tgt_out[chosen])
    torch.testing.assert_close(sequence_loss(logits, batch.tgt_out), expected)
    assert batch.n_tokens == int(chosen.sum()) > 0


def test_masked_rows_are_the_task_s_rows_x_sep_y_with_the_mask_one_id_past_the_symbols():
    rng = torch.Generator().manual_seed(2)
    batch = masked_token_batch("reverse", 32, rng=rng)
    assert batch.tokens.max() <= 13 and (batch.tokens == 13).any()  # the mask, id vocab_size
    restored = torch.where(batch.tgt_out != PAD_ID, batch.tgt_out, batch.tokens)  # every chosen symbol put back
    for row in restored:
        n = int((row == BOS_ID).int().argmax())
        x, y = row[:n], row[n + 1 :][row[n + 1 :] != PAD_ID]
        assert y.tolist() == x.flip(0).tolist()
    held_out = masked_token_eval_batches("copy", n=30, batch_size=20)
    assert [len(b) for b in held_out] == [20, 10]
    torch.testing.assert_close(held_out[0].tokens, masked_token_eval_batches("copy", n=30, batch_size=20)[0].tokens)


def _best_accuracy(keys: torch.Tensor, answers: torch.Tensor) -> float:
    """The accuracy of the best guess of ``answers`` from ``keys`` alone: the commonest answer of each key."""
    table = torch.zeros(int(keys.max()) + 1, 13).index_put_((keys, answers), torch.ones(len(keys)), accumulate=True)
    return float(table.max(dim=1).values.sum()) / len(keys)


def test_on_sorted_rows_alone_the_right_hand_side_adds_little_which_is_why_the_masked_rows_hold_x_sep_y():
    """The module's note: one symbol of a sorted row hidden, the best guess from what lies left of it (and where it
    is) is right about 34 % of the time, from both sides about 39 %."""
    rng = torch.Generator().manual_seed(0)
    src, lengths = random_sequences(200_000, rng=rng)
    rows, r = task_target("sort", src, lengths), torch.arange(200_000)
    i = (torch.rand(200_000, generator=rng) * lengths).long()  # the hidden position of each row
    left = torch.where(i > 0, rows[r, (i - 1).clamp(min=0)], PAD_ID)
    right = torch.where(i < lengths - 1, rows[r, (i + 1).clamp(max=rows.size(1) - 1)], PAD_ID)
    from_the_left = _best_accuracy(left * 10 + i, rows[r, i])
    from_both_sides = _best_accuracy(((left * 13 + right) * 10 + i) * 11 + lengths, rows[r, i])
    assert from_the_left == pytest.approx(0.34, abs=0.01) and from_both_sides == pytest.approx(0.39, abs=0.01)


def test_the_masked_token_stream_resumes_from_its_state_and_refuses_another_rate():
    stream = MaskedTokenStream("copy", 8, rng=torch.Generator().manual_seed(0))
    next(stream)
    saved, expected = stream.state_dict(), next(stream)
    again = MaskedTokenStream("copy", 8, rng=torch.Generator().manual_seed(1))
    again.load_state_dict(saved)
    assert torch.equal(next(again).tokens, expected.tokens)
    with pytest.raises(ValueError, match="rate: 0.15 saved, 0.3 here"):
        MaskedTokenStream("copy", 8, rate=0.3, rng=torch.Generator()).load_state_dict(saved)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(tokens=torch.ones(2, 3)), ValueError, "tokens must be a 2-D integer tensor"),
        (dict(mask_id=5), ValueError, r"mask_id must not be one of the symbols \[3, 13\) it hides; got 5"),
        (dict(rate=0.0), ValueError, r"rate must be in \(0, 1\]"),
        (dict(rate=1.5), ValueError, r"rate must be in \(0, 1\].*got 1.5"),
        (dict(vocab_size=3), ValueError, "vocab_size must be an int >= 4; got 3"),
        (dict(rng=0), TypeError, "rng must be a torch.Generator or None; got int"),
    ],
)
def test_bad_masking_arguments_get_errors_naming_the_argument(kwargs, error, message):
    arguments = dict(tokens=torch.tensor([[3, 4]]), vocab_size=13) | kwargs
    with pytest.raises(error, match=message):
        mask_tokens(**arguments)


def test_an_lm_batch_needs_tokens_and_targets_of_one_shape():
    with pytest.raises(ValueError, match=r"tokens and tgt_out must be 2-D and of one shape; got \(2, 3\) and \(2, 4\)"):
        lm_batch(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 4, dtype=torch.long))


class _Oracle(nn.Module):
    """Logits that say ``answers`` at every position: a stand-in for a model of one stack."""

    def __init__(self, answers: torch.Tensor, vocab_size: int = 14):
        super().__init__()
        self.answers = answers
        self.config = SimpleNamespace(pad_id=PAD_ID, vocab_size=vocab_size)
        self.unused = nn.Parameter(torch.zeros(1))  # where evaluate_batches looks for the model's device

    def forward(self, tokens, mask):
        return nn.functional.one_hot(self.answers, self.config.vocab_size).float() * 10


def test_evaluation_scores_a_model_of_one_stack_from_one_pass():
    batch = decoder_only_batch(make_batch(torch.tensor([[3, 4], [5, 6]]), torch.tensor([[3, 4], [5, 6]])))
    answers = batch.tgt_out.clone()
    answers[1, 3] = 9  # row 1 says 9 where its copy has 6
    result = evaluate_batches(_Oracle(answers), [batch])
    assert result.exact_match == 0.5 and result.token_accuracy == pytest.approx(5 / 6) and result.n == 2


def test_a_data_parallel_shard_of_an_lm_batch_takes_its_rows_and_counts_its_own_targets():
    batch = decoder_only_batch(task_batch("copy", 8, rng=torch.Generator().manual_seed(4)))
    parts = [shard(batch, rank, 2) for rank in range(2)]
    assert all(isinstance(part, LMBatch) and len(part) == 4 for part in parts)
    assert torch.equal(torch.cat([part.tokens for part in parts]), batch.tokens)
    assert torch.equal(torch.cat([part.mask for part in parts]), batch.mask)
    assert sum(part.n_tokens for part in parts) == batch.n_tokens


def test_the_recipes_refuse_a_model_that_is_not_one_of_one_stack_or_lacks_the_mask_s_id():
    with pytest.raises(TypeError, match="model must be a model of one stack whose config has vocab_size and pad_id"):
        train_decoder_only(nn.Linear(2, 2), "copy")
    too_small = _Oracle(torch.zeros(1, 1, dtype=torch.long), vocab_size=13)
    with pytest.raises(ValueError, match="must hold the task's 13 ids and the mask: vocab_size >= 14; got 13"):
        train_masked_tokens(too_small, "copy")
