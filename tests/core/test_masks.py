import pytest
import torch

from transformer import causal_mask, padding_mask, target_mask
from transformer.checks import check_mask
from transformer.masks import (
    from_hf_attention_mask,
    from_torch_mask,
    key_padding_mask,
    padding_mask_from_lengths,
    to_additive_mask,
    to_torch_mask,
)


def test_padding_mask_hides_pad_keys_and_broadcasts_over_heads_and_queries():
    tokens = torch.tensor([[5, 6, 0, 0], [7, 8, 9, 0]])
    mask = padding_mask(tokens)
    assert mask.shape == (2, 1, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True, True, False, False], [True, True, True, False]]


def test_padding_mask_from_lengths_equals_the_one_from_tokens():
    tokens = torch.tensor([[5, 6, 0, 0], [7, 8, 9, 0]])
    assert torch.equal(padding_mask_from_lengths(torch.tensor([2, 3]), 4), padding_mask(tokens))
    assert padding_mask_from_lengths(torch.tensor([2, 3])).shape == (2, 1, 1, 3)
    with pytest.raises(ValueError, match="width must be >= the longest length 5; got 4"):
        padding_mask_from_lengths(torch.tensor([2, 5]), 4)


def test_causal_mask_lets_position_i_see_positions_up_to_i():
    mask = causal_mask(4)
    assert mask.shape == (1, 1, 4, 4)
    assert torch.equal(mask[0, 0], torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]).bool())
    with pytest.raises(ValueError, match="size"):
        causal_mask(0)


def test_target_mask_combines_padding_and_causality():
    tokens = torch.tensor([[4, 5, 0]])
    mask = target_mask(tokens)
    assert mask.shape == (1, 1, 3, 3)
    assert mask[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]


def test_conversions_to_pytorch_and_hugging_face_conventions_round_trip():
    mask = target_mask(torch.tensor([[4, 5, 0], [4, 5, 6]]))
    assert torch.equal(from_torch_mask(to_torch_mask(mask)), mask)
    additive = to_additive_mask(mask)
    assert additive.dtype == torch.float32 and set(additive.unique().tolist()) == {0.0, float("-inf")}
    assert torch.equal(from_torch_mask(additive), mask)
    hf = torch.tensor([[1, 1, 0]])
    assert torch.equal(from_hf_attention_mask(hf), padding_mask(torch.tensor([[4, 5, 0]])))
    assert key_padding_mask(padding_mask(torch.tensor([[4, 0]]))).tolist() == [[False, True]]


def test_check_mask_names_the_mask_and_the_expected_shape():
    with pytest.raises(ValueError, match=r"src_mask.*\(2, H, 3, 5\)"):
        check_mask(torch.ones(2, 1, 1, 4, dtype=torch.bool), "src_mask", 2, 3, 5, heads=4)
    with pytest.raises(ValueError, match="4-D"):
        check_mask(torch.ones(3, 5, dtype=torch.bool), "tgt_mask", 2, 3, 5, heads=4)
    with pytest.raises(TypeError, match="uint8"):
        check_mask(torch.ones(2, 1, 1, 5, dtype=torch.uint8), "src_mask", 2, 3, 5, heads=4)
    for ok in [(1, 1, 3, 5), (2, 4, 1, 5), (2, 1, 3, 5)]:
        check_mask(torch.ones(ok, dtype=torch.bool), "ok", 2, 3, 5, heads=4)


@pytest.mark.parametrize("heads", [2, 3, 5])
def test_check_mask_accepts_one_or_n_heads_at_dimension_one(heads):
    mask = torch.ones(2, heads, 3, 5, dtype=torch.bool)
    with pytest.raises(
        ValueError, match=rf"tgt_mask has shape \(2, {heads}, 3, 5\).*dimension 1 must be 1 or n_heads=4"
    ):
        check_mask(mask, "tgt_mask", 2, 3, 5, heads=4)


@pytest.mark.parametrize("convert", [to_torch_mask, to_additive_mask, key_padding_mask])
def test_converters_reject_integer_masks_instead_of_inverting_their_bits(convert):
    byte_mask = torch.ones(1, 1, 1, 3, dtype=torch.uint8)
    assert (~byte_mask).tolist() == [[[[254, 254, 254]]]]  # why: ~ on uint8 is a bitwise not
    with pytest.raises(TypeError, match=r"mask must be a bool tensor \(True = may attend\); got dtype torch.uint8"):
        convert(byte_mask)


@pytest.mark.parametrize(
    ("tokens", "error", "words"),
    [
        (torch.tensor([[5.0, 0.0]]), TypeError, "tokens must hold integer token ids.*float32"),
        (torch.tensor([[True, False]]), TypeError, "tokens must hold integer token ids.*bool"),
        ([[5, 0]], TypeError, "tokens must be a torch.Tensor.*list"),
        (torch.tensor([5, 0]), ValueError, r"tokens must be 2-D.*\(2,\)"),
    ],
)
def test_padding_mask_rejects_what_is_not_a_batch_of_token_ids(tokens, error, words):
    with pytest.raises(error, match=words):
        padding_mask(tokens)


def test_input_checks_can_be_switched_off_inside_a_block_only():
    from transformer.checks import checking_inputs, input_checks

    assert checking_inputs()
    with input_checks(enabled=False):
        assert not checking_inputs()
        with input_checks(enabled=True):
            assert checking_inputs()
        assert not checking_inputs()
    assert checking_inputs()
