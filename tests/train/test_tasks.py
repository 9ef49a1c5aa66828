import ast
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer import Transformer, greedy_decode, padding_mask, target_mask
from transformer.tokens import BOS_ID, EOS_ID, FIRST_SYMBOL, PAD_ID, UNK, UNK_ID
from transformer.train.objective import token_accuracy
from transformer.train.recipes import small_model_config
from transformer.train.tasks import (
    TASKS,
    make_batch,
    random_sequences,
    source_positions,
    task_batch,
    task_target,
    token_label,
)
from transformer.train.tokenizer import Vocabulary


def test_special_ids_are_the_documented_constants():
    assert (PAD_ID, BOS_ID, EOS_ID, FIRST_SYMBOL, UNK_ID) == (0, 1, 2, 3, 3)
    assert [token_label(i) for i in (0, 1, 2, 7)] == ["<pad>", "<s>", "</s>", "7"]


def test_id_3_is_the_synthetic_tasks_first_symbol_and_an_ordinary_one():
    """Drawn as often as any other symbol, named by its number, counted by the loss and the scores, and never kept
    from a decoder's output: nothing treats it as the <unk> of the vocabularies of text."""
    tokens, _ = random_sequences(
        4000, vocab_size=13, min_seq_len=10, max_seq_len=10, rng=torch.Generator().manual_seed(0)
    )
    counts = torch.bincount(tokens.flatten(), minlength=13)[FIRST_SYMBOL:]  # 4,000 draws per symbol expected
    assert counts.min() > 3600 and token_label(FIRST_SYMBOL) == "3"
    threes = make_batch(torch.full((2, 4), FIRST_SYMBOL), torch.full((2, 4), FIRST_SYMBOL))
    says_3 = torch.nn.functional.one_hot(torch.full((2, 5), FIRST_SYMBOL), 13).float()  # (B, T, V) logits
    assert threes.n_tokens == 10 and token_accuracy(says_3, threes.tgt_out) == pytest.approx(
        0.8
    )  # four 3s right, EOS wrong
    model = Transformer(small_model_config(d_model=16, n_heads=2, d_ff=16)).eval()
    with torch.no_grad():
        model.lm_head.bias[FIRST_SYMBOL] = 1e4  # a model that always answers symbol 3
    assert greedy_decode(model, tokens[:2], 4).eq(FIRST_SYMBOL).all()


def test_id_3_is_unk_in_the_vocabularies_of_text_and_only_they_read_it():
    vocab = Vocabulary.build(["the third of march"])
    assert vocab.itos[UNK_ID] == UNK == "<unk>" and vocab.encode("the zeroth") == [vocab.stoi["the"], UNK_ID]
    assert vocab.decode([UNK_ID]) == "<unk>" and min(vocab.stoi[word] for word in ("the", "third", "of", "march")) == 4
    root = Path(__file__).resolve().parents[2]
    readers = {
        path.relative_to(root).as_posix()
        for package in ("transformer", "transformer_book")
        for path in sorted((root / package).rglob("*.py"))
        if _reads(path, ("UNK", "UNK_ID"))
    }
    assert readers == {"transformer/train/tokenizer.py", "transformer/train/subwords.py"}


def _reads(path: Path, names: tuple[str, ...]) -> bool:
    """Whether the code of ``path`` uses one of ``names`` (assigning it does not count)."""
    tree = ast.parse(path.read_text())
    return any(
        isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names for node in ast.walk(tree)
    )


def test_random_sequences_have_symbols_then_padding_with_lengths_in_range():
    tokens, lengths = random_sequences(
        500, vocab_size=13, min_seq_len=2, max_seq_len=6, rng=torch.Generator().manual_seed(0)
    )
    assert tokens.shape == (500, 6) and lengths.min() == 2 and lengths.max() == 6
    real = torch.arange(6)[None, :] < lengths[:, None]
    assert torch.all((tokens >= FIRST_SYMBOL) & (tokens < 13) == real)  # symbols exactly where real
    assert torch.all(tokens[~real] == PAD_ID)


def test_the_same_seed_gives_the_same_batch_and_another_seed_does_not():
    first = task_batch("copy", 8, rng=torch.Generator().manual_seed(3))
    again = task_batch("copy", 8, rng=torch.Generator().manual_seed(3))
    other = task_batch("copy", 8, rng=torch.Generator().manual_seed(4))
    assert torch.equal(first.src, again.src) and not torch.equal(first.src, other.src)


def test_copy_reverse_and_sort_targets_on_a_padded_batch():
    src = torch.tensor([[5, 3, 9, 4], [7, 8, 0, 0]])
    lengths = torch.tensor([4, 2])
    assert task_target("copy", src, lengths).tolist() == src.tolist()
    assert task_target("reverse", src, lengths).tolist() == [[4, 9, 3, 5], [8, 7, 0, 0]]
    assert task_target("sort", src, lengths).tolist() == [[3, 4, 5, 9], [7, 8, 0, 0]]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), max_len=st.integers(1, 12))
def test_reversing_twice_gives_the_source_back(seed, max_len):
    src, lengths = random_sequences(16, 13, 1, max_len, torch.Generator().manual_seed(seed))
    assert torch.equal(task_target("reverse", task_target("reverse", src, lengths), lengths), src)


def test_batch_shifts_the_target_right_for_the_decoder_input_and_appends_eos_to_the_output():
    batch = make_batch(torch.tensor([[5, 6, 7], [8, 0, 0]]), torch.tensor([[5, 6, 7], [8, 0, 0]]))
    assert batch.tgt_in.tolist() == [[BOS_ID, 5, 6, 7], [BOS_ID, 8, 0, 0]]
    assert batch.tgt_out.tolist() == [[5, 6, 7, EOS_ID], [8, EOS_ID, 0, 0]]
    # position t of the input predicts position t of the output, which is input position t + 1
    real = batch.tgt_in[:, 1:] != PAD_ID
    assert torch.equal(batch.tgt_in[:, 1:][real], batch.tgt_out[:, :-1][real])
    assert batch.n_tokens == 4 + 2
    assert torch.equal(batch.src_mask, padding_mask(batch.src)) and torch.equal(
        batch.tgt_mask, target_mask(batch.tgt_in)
    )
    assert batch.tgt_mask.shape == (2, 1, 4, 4) and len(batch) == 2


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_task_batches_end_every_output_with_exactly_one_eos(task):
    batch = task_batch(task, 64, rng=torch.Generator().manual_seed(1))
    lengths = (batch.src != PAD_ID).sum(1)
    assert torch.all((batch.tgt_out == EOS_ID).sum(1) == 1)
    assert torch.equal(batch.tgt_out.gather(1, lengths[:, None])[:, 0], torch.full((64,), EOS_ID))
    assert torch.all(batch.tgt_in[:, 0] == BOS_ID)
    assert batch.n_tokens == int(lengths.sum()) + 64


def test_bad_sizes_and_tasks_are_rejected_with_clear_messages():
    with pytest.raises(ValueError, match="task must be one of"):
        task_batch("shuffle", 4)
    with pytest.raises(ValueError, match="max_seq_len must be an int >= 5; got 3"):
        random_sequences(4, 13, min_seq_len=5, max_seq_len=3)
    with pytest.raises(ValueError, match="vocab_size"):
        random_sequences(4, vocab_size=3)
    with pytest.raises(ValueError, match="same batch size"):
        make_batch(torch.ones(2, 3, dtype=torch.long), torch.ones(3, 3, dtype=torch.long))


def test_source_positions_say_where_each_target_symbol_is_read_from():
    src = torch.tensor([[7, 3, 9, 3, 0], [5, 4, 0, 0, 0]])  # (2, 5), PAD = 0
    lengths = torch.tensor([4, 2])
    assert source_positions("copy", src, lengths).tolist() == [[0, 1, 2, 3, 0], [0, 1, 0, 0, 0]]
    assert source_positions("reverse", src, lengths).tolist() == [[3, 2, 1, 0, 0], [1, 0, 0, 0, 0]]
    assert source_positions("sort", src, lengths).tolist() == [[1, 3, 0, 2, 0], [1, 0, 0, 0, 0]]  # ties: source order
    for task in TASKS:
        real = torch.arange(5)[None, :] < lengths[:, None]
        gathered = src.gather(1, source_positions(task, src, lengths)).masked_fill(~real, PAD_ID)
        assert torch.equal(gathered, task_target(task, src, lengths))
