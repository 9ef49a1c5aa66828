import pytest
import torch

from transformer import Transformer, TransformerConfig

# One intra-op thread per process: pytest runs two workers on two cores (`make test`), and more threads than cores
# make the tests' many small operations wait for each other (one device test ran 12 times slower beside the browser).
torch.set_num_threads(1)


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
