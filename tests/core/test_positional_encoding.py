"""What the embeddings and positional-encoding chapters claim about the package, checked: the sinusoid table's values,
wavelengths and rotation identity, the dot product that depends only on the offset, the sqrt(d_model) scaling, the
max_positions limits, learned positions, sharing embeddings, and the controls of the chapters' figures."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import small_model

from transformer import MultiHeadAttention, Transformer, TransformerConfig
from transformer.embeddings import (
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    sinusoidal_table,
)


def test_sinusoidal_table_matches_the_formula_at_known_points():
    pe = sinusoidal_table(3, 4)
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))  # sin 0, cos 0
    # d_model = 4: pair 1 divides the position by 10000^(2/4) = 100 (the base is 10000, not 1000)
    assert torch.allclose(pe[1], torch.tensor([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]))
    pe = sinusoidal_table(2000, 512)
    for pos, i in [(7, 0), (100, 3), (1999, 128), (1234, 255)]:
        angle = pos / 10000 ** (2 * i / 512)
        assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
        assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_values_lie_in_unit_interval_and_mean_square_is_one_half():
    pe = sinusoidal_table(5000, 512)
    assert pe.abs().max() <= 1
    # every (sin, cos) pair has sin^2 + cos^2 = 1, so each row has squared length d_model / 2
    assert torch.allclose(pe.double().pow(2).sum(-1), torch.tensor(256.0, dtype=torch.float64), atol=1e-3)
    assert pe.double().pow(2).mean().item() == pytest.approx(0.5, abs=1e-6)


def test_longer_sinusoid_table_extends_the_shorter_one():
    assert torch.equal(sinusoidal_table(6000, 64)[:5000], sinusoidal_table(5000, 64))


def test_all_rows_of_the_default_table_are_distinct():
    pe = sinusoidal_table(5000, 512).double()
    gram = pe @ pe.T
    gram.fill_diagonal_(-math.inf)
    closest = math.sqrt(512 - 2 * gram.max().item())  # |a - b|^2 = 256 + 256 - 2 a.b
    assert closest > 3


def test_attention_without_positions_is_permutation_equivariant_and_positions_break_it():
    attention = MultiHeadAttention(16, 2, dropout=0.0).eval()
    x = torch.randn(1, 6, 16)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    with torch.no_grad():
        out, _ = attention(x, x, x)
        shuffled, _ = attention(x[:, perm], x[:, perm], x[:, perm])
        assert torch.allclose(out[:, perm], shuffled, atol=1e-6)
        positions = SinusoidalPositionalEncoding(16, max_positions=8)
        y, ys = positions(x), positions(x[:, perm])
        out, _ = attention(y, y, y)
        shuffled, _ = attention(ys, ys, ys)
        assert not torch.allclose(out[:, perm], shuffled, atol=1e-3)


def test_token_embedding_lookup_is_one_hot_times_table_times_sqrt_d_model():
    embed = TokenEmbedding(11, 8)
    ids = torch.tensor([[1, 4, 4, 10], [0, 2, 3, 5]])
    expected = F.one_hot(ids, 11).float() @ embed.weight * math.sqrt(8)
    assert torch.allclose(embed(ids), expected, atol=1e-6)


def test_token_embedding_without_scale_returns_the_table_s_rows_as_gpt_and_bert_do():
    embed = TokenEmbedding(11, 8, scale=False)
    ids = torch.tensor([[1, 4, 4, 10], [0, 2, 3, 5]])
    assert torch.equal(embed(ids), embed.weight[ids])


@pytest.mark.parametrize("d_model", [64, 512])
def test_scaled_embeddings_have_unit_variance_and_raw_weights_one_over_d_model(d_model):
    embed = TokenEmbedding(4000, d_model)
    with torch.no_grad():
        scaled = embed(torch.arange(4000)[None])
    assert embed.weight.var().item() * d_model == pytest.approx(1, abs=0.03)
    assert scaled.var().item() == pytest.approx(1, abs=0.03)


def test_embedding_gradient_reaches_only_the_rows_in_the_batch():
    embed = TokenEmbedding(20, 8)
    ids = torch.tensor([[3, 7, 7, 12]])
    embed(ids).sum().backward()
    rows = (embed.weight.grad.abs().sum(-1) > 0).nonzero().flatten().tolist()
    assert rows == [3, 7, 12]


def test_cosine_between_random_embeddings_has_std_one_over_sqrt_d():
    for d in (16, 256):
        w = TokenEmbedding(800, d).weight.detach()
        unit = w / w.norm(dim=-1, keepdim=True)
        cos = (unit @ unit.T)[~torch.eye(800, dtype=torch.bool)]
        assert cos.std().item() * math.sqrt(d) == pytest.approx(1, abs=0.06)


@pytest.mark.parametrize("module", [SinusoidalPositionalEncoding, LearnedPositionalEncoding])
def test_positional_encodings_reject_sequences_longer_than_max_positions(module):
    encoding = module(16, max_positions=32)
    assert encoding(torch.zeros(1, 32, 16)).shape == (1, 32, 16)
    with pytest.raises(
        ValueError, match="x needs 33 positions, more than the positional table holds: max_positions=32"
    ):
        encoding(torch.zeros(1, 33, 16))
    with pytest.raises(ValueError, match="x needs 33 positions"):
        encoding(torch.zeros(1, 2, 16), offset=31)  # positions 31 and 32


def test_model_rejects_source_longer_than_max_positions():
    model = small_model(max_positions=8)
    with pytest.raises(ValueError, match="src needs 9 positions.*max_positions=8"):
        model(torch.ones(1, 9, dtype=torch.long), torch.ones(1, 3, dtype=torch.long))


def test_learned_positions_past_the_training_length_get_no_gradient():
    learned = LearnedPositionalEncoding(16, max_positions=32)
    learned(torch.randn(4, 8, 16)).pow(2).sum().backward()
    rows = (learned.weight.grad.abs().sum(-1) > 0).nonzero().flatten().tolist()
    assert rows == list(range(8))


def test_learned_positions_add_max_positions_times_d_model_parameters():
    base = dict(src_vocab_size=50, tgt_vocab_size=50, d_model=32, n_heads=4, d_ff=64, max_positions=100)
    sinusoidal = Transformer(TransformerConfig(**base)).num_parameters()
    learned = Transformer(TransformerConfig(**base, positional_encoding="learned"))
    assert isinstance(learned.positional, LearnedPositionalEncoding)
    assert learned.num_parameters() - sinusoidal == 100 * 32


def test_embed_source_is_scaled_embedding_plus_position_and_embed_target_honours_offset():
    model = small_model()
    src = torch.randint(1, 17, (2, 7))
    tgt = torch.randint(1, 19, (2, 6))
    with torch.no_grad():
        expected = model.src_embed(src) + sinusoidal_table(64, 32)[:7]
        assert torch.allclose(model.embed_source(src), expected)
        whole = model.embed_target(tgt)
        assert torch.allclose(model.embed_target(tgt[:, 3:5], offset=3), whole[:, 3:5])


def test_tied_output_projection_sends_a_gradient_to_every_embedding_row():
    rows = {}
    for tie in (False, True):
        config = TransformerConfig(
            30,
            30,
            d_model=16,
            n_heads=2,
            d_ff=32,
            n_encoder_layers=1,
            n_decoder_layers=1,
            dropout=0.0,
            share_embeddings=True,
            tie_output_embedding=tie,
        )
        model = Transformer(config)
        tokens = torch.tensor([[1, 5, 6, 7, 2]])
        logits = model(tokens, tokens[:, :-1])
        F.cross_entropy(logits.reshape(-1, 30), tokens[:, 1:].reshape(-1)).backward()
        rows[tie] = int((model.tgt_embed.weight.grad.abs().sum(-1) > 0).sum())
    assert rows[False] <= 5 and rows[True] == 30


def test_share_embeddings_needs_one_vocabulary():
    with pytest.raises(ValueError, match="share_embeddings needs one vocabulary"):
        TransformerConfig(100, 90, share_embeddings=True)
