import math

import pytest
import torch
from torch import nn

from transformer import MultiHeadAttention, causal_mask, key_padding_mask, padding_mask, scaled_dot_product_attention
from transformer.interop import copy_from_torch


def _qkv(batch=2, heads=3, t_q=4, t_k=5, d_k=8, dtype=torch.float32):
    return (torch.randn(batch, heads, t_q, d_k, dtype=dtype), torch.randn(batch, heads, t_k, d_k, dtype=dtype),
            torch.randn(batch, heads, t_k, d_k, dtype=dtype))


def test_readable_attention_is_softmax_of_scaled_scores_times_values():
    q, k, v = _qkv()
    out, weights = scaled_dot_product_attention(q, k, v)
    expected_weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1)
    torch.testing.assert_close(weights, expected_weights)
    torch.testing.assert_close(out, expected_weights @ v)
    assert weights.shape == (2, 3, 4, 5)  # (B, H, T_q, T_k), not (B, H, T, d_k)


def test_masked_keys_get_exactly_zero_weight_and_rows_sum_to_one():
    q, k, v = _qkv()
    mask = padding_mask(torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]))
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.all(weights[0, ..., 3:] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 4))


def test_readable_attention_matches_pytorch_fused_attention():
    q, k, v = _qkv()
    mask = padding_mask(torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])) & causal_mask(5)[..., :4, :]
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_fully_masked_query_rows_give_zeros_not_nan_and_leave_other_rows_alone(dtype):
    q, k, v = _qkv(dtype=dtype)
    mask = torch.ones(2, 1, 4, 5, dtype=torch.bool)
    mask[0, :, 1] = False  # query 1 of item 0 sees no key
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert torch.all(weights[0, :, 1] == 0) and torch.all(out[0, :, 1] == 0)
    reference, _ = scaled_dot_product_attention(q[1:], k[1:], v[1:])
    torch.testing.assert_close(out[1:], reference)


def test_fill_value_follows_the_dtype_so_float16_does_not_overflow():
    assert torch.tensor(-1e9, dtype=torch.float16).isinf()  # why a hard-coded -1e9 is wrong in half precision
    q, k, v = _qkv(dtype=torch.float16)
    mask = padding_mask(torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0]]))
    out16, w16 = scaled_dot_product_attention(q, k, v, mask)
    out32, w32 = scaled_dot_product_attention(q.float(), k.float(), v.float(), mask)
    assert torch.isfinite(out16).all()
    torch.testing.assert_close(w16.float(), w32, atol=2e-3, rtol=1e-2)


@pytest.mark.parametrize("train", [False, True])
def test_fused_and_readable_paths_of_multi_head_attention_agree(train):
    mha = MultiHeadAttention(32, 4, dropout=0.0).train(train)
    x, memory = torch.randn(3, 6, 32), torch.randn(3, 5, 32)
    self_mask = padding_mask(torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [0] * 6])) & causal_mask(6)
    cross_mask = padding_mask(torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [0] * 5]))
    for query, key, mask in ((x, x, self_mask), (x, memory, cross_mask), (x, memory, None)):
        fused, none = mha(query, key, key, mask)
        readable, weights = mha(query, key, key, mask, need_weights=True)
        assert none is None and weights.shape == (3, 4, 6, key.size(1))
        torch.testing.assert_close(fused, readable, atol=1e-6, rtol=1e-5)
        assert torch.isfinite(fused).all()


def test_multi_head_attention_matches_nn_multihead_attention_with_copied_weights():
    ours = MultiHeadAttention(32, 4).eval()
    theirs = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    copy_from_torch(ours, theirs)
    x, memory = torch.randn(2, 6, 32), torch.randn(2, 7, 32)
    src_mask = padding_mask(torch.tensor([[1] * 7, [1] * 4 + [0] * 3]))
    expected, expected_weights = theirs(x, memory, memory, key_padding_mask=key_padding_mask(src_mask),
                                        average_attn_weights=False)
    for need_weights in (False, True):
        out, weights = ours(x, memory, memory, src_mask, need_weights=need_weights)
        assert (out - expected).abs().max() < 1e-5
    assert (weights - expected_weights).abs().max() < 1e-6
    expected, _ = theirs(x, x, x, attn_mask=~causal_mask(6)[0, 0])
    assert (ours(x, x, x, causal_mask(6))[0] - expected).abs().max() < 1e-5


def test_gradients_stay_finite_when_a_whole_sequence_is_padding():
    mha = MultiHeadAttention(16, 2)
    x = torch.randn(2, 4, 16, requires_grad=True)
    mask = padding_mask(torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]]))
    for need_weights in (False, True):
        out, _ = mha(x, x, x, mask, need_weights=need_weights)
        out.sum().backward()
        assert torch.isfinite(x.grad).all()
        assert all(torch.isfinite(p.grad).all() for p in mha.parameters())


def test_head_mask_silences_exactly_the_chosen_heads():
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16)
    full, _ = mha(x, x, x)
    mha.head_mask = torch.ones(4)
    torch.testing.assert_close(mha(x, x, x)[0], full)
    mha.head_mask = torch.tensor([1.0, 0.0, 1.0, 1.0])
    silenced, _ = mha(x, x, x)
    mha.head_mask = None
    q, k, v = (t.view(2, 5, 4, 4).transpose(1, 2) for t in mha.in_proj(x).chunk(3, dim=-1))
    heads, _ = scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)
    heads[:, 1] = 0
    torch.testing.assert_close(silenced, mha.out_proj(heads.transpose(1, 2).reshape(2, 5, 16)))


def test_bad_inputs_get_clear_errors():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(30, 4)
    with pytest.raises(ValueError, match="dropout"):
        MultiHeadAttention(32, 4, dropout=1.5)
    mha = MultiHeadAttention(32, 4)
    with pytest.raises(ValueError, match=r"query must have shape \(batch, seq_len, d_model=32\); got shape \(5, 32\)"):
        mha(torch.randn(5, 32), torch.randn(5, 32), torch.randn(5, 32))
    x = torch.randn(2, 5, 32)
    with pytest.raises(ValueError, match=r"mask has shape \(2, 1, 1, 4\)"):
        mha(x, x, x, torch.ones(2, 1, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="batch size"):
        mha(x, torch.randn(3, 5, 32), torch.randn(3, 5, 32))
