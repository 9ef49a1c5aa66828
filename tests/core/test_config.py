import pytest

from transformer import TransformerConfig


def test_defaults_are_the_papers_base_model():
    c = TransformerConfig(src_vocab_size=100, tgt_vocab_size=100)
    assert (c.d_model, c.n_heads, c.d_ff, c.n_encoder_layers, c.n_decoder_layers) == (512, 8, 2048, 6, 6)
    assert c.dropout == 0.1 and c.norm_first is False and c.d_k == 64


@pytest.mark.parametrize(
    ("norm_first", "final_norm", "expected"),
    [(False, None, False), (True, None, True), (False, True, True), (True, False, False)],
)
def test_final_norm_defaults_follow_the_norm_placement(norm_first, final_norm, expected):
    c = TransformerConfig(10, 10, norm_first=norm_first, final_norm=final_norm)
    assert c.use_final_norm is expected


@pytest.mark.parametrize(
    ("overrides", "error", "words"),
    [
        (dict(d_model=30, n_heads=4), ValueError, ["d_model", "n_heads", "30", "4"]),
        (dict(dropout=1.0), ValueError, ["dropout", "[0, 1)", "1.0"]),
        (dict(dropout=-0.1), ValueError, ["dropout", "-0.1"]),
        (dict(d_model=0), ValueError, ["d_model", ">= 1", "0"]),
        (dict(n_heads=2.0), TypeError, ["n_heads", "int", "float"]),
        (dict(activation="tanh"), ValueError, ["activation", "tanh"]),
        (dict(positional_encoding="rotary"), ValueError, ["positional_encoding", "rotary"]),
        (dict(pad_id=10), ValueError, ["pad_id", "10"]),
        (dict(tgt_vocab_size=12, share_embeddings=True), ValueError, ["share_embeddings", "10", "12"]),
        (dict(final_norm="yes"), TypeError, ["final_norm", "yes"]),
        (dict(layer_norm_eps="1e-5"), TypeError, ["layer_norm_eps", "number", "str", "'1e-5'"]),
        (dict(layer_norm_eps=0.0), ValueError, ["layer_norm_eps", "positive", "0.0"]),
        (dict(layer_norm_eps=float("inf")), ValueError, ["layer_norm_eps", "finite", "inf"]),
        (dict(dropout="0.1"), TypeError, ["dropout", "number", "str", "'0.1'"]),
        (dict(dropout=True), TypeError, ["dropout", "number", "bool"]),
    ],
)
def test_invalid_configuration_is_rejected_with_a_message_naming_it(overrides, error, words):
    values = dict(src_vocab_size=10, tgt_vocab_size=10)
    values.update(overrides)
    with pytest.raises(error) as info:
        TransformerConfig(**values)
    for word in words:
        assert word in str(info.value)
