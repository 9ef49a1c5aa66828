import pytest
import torch

from transformer import Transformer, TransformerConfig


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def small_config(**overrides) -> TransformerConfig:
    """A model small enough for fast tests, with the paper's structure."""
    values = dict(
        src_vocab_size=17, tgt_vocab_size=19, d_model=32, n_heads=4, d_ff=64,
        n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=64,
    )
    values.update(overrides)
    return TransformerConfig(**values)


def small_model(**overrides) -> Transformer:
    return Transformer(small_config(**overrides)).eval()


def random_tokens(batch: int, length: int, vocab: int, pad_from: list[int] | None = None) -> torch.Tensor:
    """Ids in [1, vocab) with row i padded (id 0) from position pad_from[i] on."""
    tokens = torch.randint(1, vocab, (batch, length))
    for row, start in enumerate(pad_from or []):
        tokens[row, start:] = 0
    return tokens
