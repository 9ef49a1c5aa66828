import re

import pytest
import torch
from conftest import random_tokens, small_config, small_model
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from transformer import Transformer, TransformerConfig, padding_mask, target_mask
from transformer.masks import key_padding_mask


def test_forward_returns_logits_of_shape_batch_time_vocab():
    model = small_model()
    logits = model(random_tokens(3, 7, 17, [7, 4, 2]), random_tokens(3, 5, 19, [5, 5, 3]))
    assert logits.shape == (3, 5, 19)
    assert not torch.allclose(logits.softmax(-1).sum(-1), logits.sum(-1))  # logits, not probabilities


def test_encode_and_decode_compose_to_forward():
    model = small_model()
    src, tgt = random_tokens(2, 6, 17, [6, 3]), random_tokens(2, 4, 19)
    memory, src_mask = model.encode(src)
    assert memory.shape == (2, 6, 32) and torch.equal(src_mask, padding_mask(src))
    hidden = model.decode(tgt, memory, src_mask)
    assert hidden.shape == (2, 4, 32)
    torch.testing.assert_close(model.lm_head(hidden), model(src, tgt))


def test_attention_maps_cover_every_layer_with_rows_that_sum_to_one():
    model = small_model(n_encoder_layers=2, n_decoder_layers=3)
    src, tgt = random_tokens(2, 6, 17, [6, 3]), random_tokens(2, 4, 19)
    maps = model.attention_maps(src, tgt)
    assert [len(maps[k]) for k in ("encoder", "decoder", "cross")] == [2, 3, 3]
    assert maps["encoder"][0].shape == (2, 4, 6, 6)
    assert maps["decoder"][0].shape == (2, 4, 4, 4)
    assert maps["cross"][0].shape == (2, 4, 4, 6)
    for weights in maps["encoder"] + maps["decoder"] + maps["cross"]:
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    assert torch.all(maps["cross"][0][1, :, :, 3:] == 0)  # padding keys of the source
    assert torch.all(maps["decoder"][0].triu(1) == 0)  # no looking ahead


def _torch_reference(config: TransformerConfig) -> nn.Transformer:
    c = config
    common = dict(
        dropout=0.0, batch_first=True, norm_first=c.norm_first, layer_norm_eps=c.layer_norm_eps, activation=c.activation
    )
    kwargs = {}
    if not c.use_final_norm:  # torch.nn.Transformer always adds final norms unless given custom stacks
        encoder_layer = nn.TransformerEncoderLayer(c.d_model, c.n_heads, c.d_ff, **common)
        decoder_layer = nn.TransformerDecoderLayer(c.d_model, c.n_heads, c.d_ff, **common)
        kwargs = dict(
            custom_encoder=nn.TransformerEncoder(encoder_layer, c.n_encoder_layers, enable_nested_tensor=False),
            custom_decoder=nn.TransformerDecoder(decoder_layer, c.n_decoder_layers),
        )
    return nn.Transformer(c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, **common, **kwargs)


PARITY_CASES = [
    dict(norm_first=False, final_norm=None),
    dict(norm_first=False, final_norm=True),
    dict(norm_first=True, final_norm=None),
    dict(norm_first=True, final_norm=False),
    dict(d_model=48, n_heads=6, d_ff=96, n_encoder_layers=3, n_decoder_layers=1),
    dict(d_model=16, n_heads=1, d_ff=16, n_encoder_layers=1, n_decoder_layers=4, norm_first=True),
    dict(activation="gelu", layer_norm_eps=1e-6),
]


@pytest.mark.parametrize("overrides", PARITY_CASES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_stacks_match_torch_nn_transformer_with_copied_weights(overrides):
    from transformer.interop import copy_from_torch

    config = small_config(**overrides)
    model = Transformer(config).eval()
    reference = _torch_reference(config).eval()
    copy_from_torch(model, reference)
    src, tgt = random_tokens(3, 7, 17, [7, 4, 1]), random_tokens(3, 6, 19, [6, 3, 6])
    x, y = torch.randn(3, 7, config.d_model), torch.randn(3, 6, config.d_model)
    src_mask, tgt_mask = padding_mask(src), target_mask(tgt)
    with torch.no_grad():
        ours, _ = model.encoder(x, src_mask)
        theirs = reference.encoder(x, src_key_padding_mask=key_padding_mask(src_mask))
        real_src = src != 0
        assert (ours - theirs)[real_src].abs().max() < 1e-5
        causal = torch.ones(6, 6, dtype=torch.bool).triu(1)
        ours, _, _ = model.decoder(y, theirs, src_mask, tgt_mask)
        theirs = reference.decoder(
            y, theirs, tgt_mask=causal, tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0
        )
        assert (ours - theirs)[tgt != 0].abs().max() < 1e-5


def test_copy_from_torch_rejects_mismatched_models_with_a_clear_message():
    from transformer.interop import copy_from_torch

    model = Transformer(small_config(final_norm=True))
    for reference, words in [
        (_torch_reference(small_config(d_ff=128, final_norm=True)), "dim_feedforward differs: the model has 64"),
        (_torch_reference(small_config(n_decoder_layers=3, final_norm=True)), "number of decoder layers differs"),
        (_torch_reference(small_config(norm_first=True, final_norm=True)), "norm_first differs"),
        (_torch_reference(small_config(final_norm=False)), "final layer norm"),
        (_torch_reference(small_config(n_heads=8, final_norm=True)), "num_heads differs"),
    ]:
        with pytest.raises(ValueError, match=words):
            copy_from_torch(model, reference)
    with pytest.raises(ValueError, match="batch_first"):
        copy_from_torch(model, nn.Transformer(32, 4, 2, 2, 64, dropout=0.0))
    with pytest.raises(TypeError, match="MultiheadAttention"):
        copy_from_torch(model, nn.MultiheadAttention(32, 4))


@pytest.mark.parametrize("activation", [lambda x: x.clamp(min=0), nn.GELU(approximate="tanh"), nn.functional.silu])
def test_copy_from_torch_rejects_a_reference_with_an_activation_this_package_lacks(activation):
    from transformer.interop import copy_from_torch

    reference = nn.Transformer(32, 4, 2, 2, 64, dropout=0.0, batch_first=True, activation=activation)
    assert reference.encoder.layers[0].activation_relu_or_gelu == 0 or isinstance(activation, nn.GELU)
    with pytest.raises(ValueError, match="activation .* is not one this package has"):
        copy_from_torch(Transformer(small_config(final_norm=True)), reference)


def test_copy_from_torch_checks_the_activation_of_decoder_layers_too():
    from transformer.interop import copy_from_torch

    config = small_config(final_norm=True)
    common = dict(dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(32, 4, 64, **common), 2, norm=nn.LayerNorm(32), enable_nested_tensor=False
    )
    decoder = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(32, 4, 64, activation="gelu", **common), 2, norm=nn.LayerNorm(32)
    )
    reference = nn.Transformer(32, 4, custom_encoder=encoder, custom_decoder=decoder, **common)
    assert not hasattr(reference.decoder.layers[0], "activation_relu_or_gelu")  # why a flag-based check missed it
    with pytest.raises(ValueError, match="activation differs: the model has 'relu', the reference has 'gelu'"):
        copy_from_torch(Transformer(config), reference)


def _padded_batch_with_an_empty_row():
    src = random_tokens(3, 6, 17, [6, 2, 0])  # the last source is all padding
    tgt = random_tokens(3, 5, 19, [5, 5, 0])
    return src, tgt


@pytest.mark.parametrize("norm_first", [False, True])
def test_fully_padded_sequences_produce_no_nan_in_fp32_and_bf16_and_leave_others_unchanged(norm_first):
    model = small_model(norm_first=norm_first)
    src, tgt = _padded_batch_with_an_empty_row()
    logits = model(src, tgt)
    assert torch.isfinite(logits).all()
    torch.testing.assert_close(logits[:2], model(src[:2], tgt[:2]))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits_bf16 = model(src, tgt)
        alone_bf16 = [model(src[i : i + 1, : int((src[i] != 0).sum())], tgt[i : i + 1]) for i in range(2)]
    assert torch.isfinite(logits_bf16).all()
    for i, alone in enumerate(alone_bf16):  # the other items, each run alone without its padding
        assert alone.dtype == logits_bf16.dtype == torch.bfloat16
        torch.testing.assert_close(logits_bf16[i : i + 1], alone)  # bf16's default tolerance
    model.train()
    model(src, tgt).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_a_bf16_model_runs_and_stays_close_to_fp32():
    model = small_model()
    src, tgt = random_tokens(2, 6, 17, [6, 3]), random_tokens(2, 5, 19)
    expected = model(src, tgt)
    logits = model.to(torch.bfloat16)(src, tgt)
    assert logits.dtype == torch.bfloat16 and torch.isfinite(logits).all()
    assert (logits.float() - expected).abs().max() < 0.15


@settings(max_examples=15, deadline=None)
@given(t=st.integers(0, 5), seed=st.integers(0, 2**16), norm_first=st.booleans())
def test_changing_target_tokens_after_t_leaves_outputs_up_to_t_unchanged(t, seed, norm_first):
    torch.manual_seed(seed)
    model = small_model(norm_first=norm_first)
    src, tgt = random_tokens(2, 5, 17, [5, 3]), random_tokens(2, 7, 19)
    changed = tgt.clone()
    changed[:, t + 1 :] = torch.randint(1, 19, changed[:, t + 1 :].shape)
    torch.testing.assert_close(model(src, tgt)[:, : t + 1], model(src, changed)[:, : t + 1])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), length=st.integers(1, 6))
def test_ids_at_padding_positions_do_not_change_non_padding_outputs(seed, length):
    torch.manual_seed(seed)
    model = small_model()
    src = random_tokens(1, 6, 17, [length])
    tgt = random_tokens(1, 5, 19)
    # Tell the model which positions are padding through the mask, then scribble over those ids.
    src_mask = padding_mask(src)
    scribbled = src.clone()
    scribbled[:, length:] = torch.randint(1, 17, (1, 6 - length))
    torch.testing.assert_close(model(src, tgt, src_mask=src_mask), model(scribbled, tgt, src_mask=src_mask))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), src_len=st.integers(1, 8), tgt_len=st.integers(1, 8))
def test_a_sequence_alone_and_inside_a_padded_batch_give_the_same_result(seed, src_len, tgt_len):
    torch.manual_seed(seed)
    model = small_model()
    src_alone, tgt_alone = random_tokens(1, src_len, 17), random_tokens(1, tgt_len, 19)
    src = random_tokens(3, 8, 17)
    tgt = random_tokens(3, 8, 19)
    src[1], tgt[1] = 0, 0
    src[1, :src_len], tgt[1, :tgt_len] = src_alone[0], tgt_alone[0]
    alone = model(src_alone, tgt_alone)
    batched = model(src, tgt)[1:2, :tgt_len]
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=1e-4)


def test_incremental_decoding_with_a_cache_matches_the_full_decoder():
    model = small_model(norm_first=True)
    src, tgt = random_tokens(2, 6, 17, [6, 3]), random_tokens(2, 7, 19)
    memory, src_mask = model.encode(src)
    full = model.decode(tgt, memory, src_mask)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, src_mask, cache=cache) for t in range(7)]
    assert cache.length == 7
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-4)


def test_seeded_construction_and_training_steps_are_bit_for_bit_repeatable():
    def run():
        torch.manual_seed(123)
        model = Transformer(small_config(dropout=0.1))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        src, tgt = random_tokens(4, 6, 17, [6, 5, 4, 3]), random_tokens(4, 6, 19)
        losses = []
        for _ in range(3):
            loss = nn.functional.cross_entropy(model(src, tgt).flatten(0, 1), tgt.flatten(), ignore_index=0)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses, model.state_dict()

    (losses_a, state_a), (losses_b, state_b) = run(), run()
    assert losses_a == losses_b
    assert all(torch.equal(state_a[k], state_b[k]) for k in state_a)


def test_shared_and_tied_embeddings_share_one_tensor():
    model = Transformer(small_config(tgt_vocab_size=17, share_embeddings=True, tie_output_embedding=True))
    assert model.src_embed.weight is model.tgt_embed.weight is model.lm_head.weight
    untied = Transformer(small_config(tgt_vocab_size=17))
    assert untied.num_parameters() - model.num_parameters() == 2 * 17 * 32


def test_learned_positions_work_and_have_parameters():
    model = small_model(positional_encoding="learned")
    assert model.positional.weight.shape == (64, 32)
    assert model(random_tokens(2, 5, 17), random_tokens(2, 4, 19)).shape == (2, 4, 19)


BAD_INPUTS = [
    (
        lambda: (torch.tensor([3, 4, 5]), torch.ones(1, 3).long()),
        ValueError,
        r"src must be 2-D \(batch, seq_len\); got shape \(3,\)",
    ),
    (lambda: (torch.ones(2, 3), torch.ones(2, 3).long()), TypeError, "src must hold integer token ids.*float32"),
    (
        lambda: (torch.ones(2, 3).long(), torch.ones(2, 3, dtype=torch.bool)),
        TypeError,
        "tgt must hold integer token ids",
    ),
    (
        lambda: (torch.full((2, 3), 17), torch.ones(2, 3).long()),
        ValueError,
        r"src holds ids outside the vocabulary \[0, 17\): min 17",
    ),
    (lambda: (torch.ones(2, 3).long(), torch.full((2, 3), -1)), ValueError, r"tgt holds ids outside.*min -1"),
    (lambda: (torch.ones(2, 3).long(), torch.ones(3, 3).long()), ValueError, "same batch size; got 2 and 3"),
    (lambda: (torch.ones(2, 0).long(), torch.ones(2, 3).long()), ValueError, "at least one token"),
    (
        lambda: (torch.ones(2, 65).long(), torch.ones(2, 3).long()),
        ValueError,
        "src needs 65 positions.*max_positions=64",
    ),
    (
        lambda: (torch.ones(2, 3).long(), torch.ones(2, 70).long()),
        ValueError,
        "tgt needs 70 positions.*max_positions=64",
    ),
    (lambda: ([[1, 2]], torch.ones(1, 3).long()), TypeError, "src must be a torch.Tensor"),
]


@pytest.mark.parametrize(("make", "error", "message"), BAD_INPUTS)
def test_bad_token_inputs_get_clear_errors_naming_the_argument(make, error, message):
    src, tgt = make()
    with pytest.raises(error, match=message):
        small_model()(src, tgt)


def test_masks_of_the_wrong_shape_or_type_get_clear_errors():
    model = small_model()
    src, tgt = random_tokens(2, 5, 17), random_tokens(2, 4, 19)
    with pytest.raises(ValueError, match=r"src_mask has shape \(2, 1, 1, 4\).*\(2, H, 5, 5\)"):
        model(src, tgt, src_mask=torch.ones(2, 1, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"tgt_mask has shape \(1, 1, 5, 5\)"):
        model(src, tgt, tgt_mask=torch.ones(1, 1, 5, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="src_mask must be a bool tensor.*torch.uint8"):
        model(src, tgt, src_mask=torch.ones(2, 1, 1, 5, dtype=torch.uint8))
    wrong_heads = {
        "src_mask": torch.ones(2, 3, 5, 5, dtype=torch.bool),
        "tgt_mask": torch.ones(2, 2, 4, 4, dtype=torch.bool),
    }
    for name, mask in wrong_heads.items():  # the model has 4 heads: dimension 1 must be 1 or 4
        with pytest.raises(
            ValueError, match=re.escape(f"{name} has shape {tuple(mask.shape)}") + ".*must be 1 or n_heads=4"
        ):
            model(src, tgt, **{name: mask})
    model(
        src, tgt, src_mask=torch.ones(2, 4, 1, 5, dtype=torch.bool), tgt_mask=torch.ones(1, 4, 4, 4, dtype=torch.bool)
    )


def test_config_must_be_a_transformer_config():
    with pytest.raises(TypeError, match="TransformerConfig"):
        Transformer({"d_model": 8})


def test_model_moves_between_devices_without_hard_coded_cuda():
    model = small_model().to("cpu")
    assert model(random_tokens(1, 3, 17), random_tokens(1, 3, 19)).device.type == "cpu"
    if torch.cuda.is_available():
        model = model.to("cuda")
        assert model(random_tokens(1, 3, 17).cuda(), random_tokens(1, 3, 19).cuda()).device.type == "cuda"


DEVICE_MISMATCHES = [  # (call on a CPU model, argument that is on the meta device)
    (lambda m, src, tgt, meta: m(meta(src), tgt), "src"),
    (lambda m, src, tgt, meta: m(src, meta(tgt)), "tgt"),
    (lambda m, src, tgt, meta: m(src, tgt, src_mask=meta(padding_mask(src))), "src_mask"),
    (lambda m, src, tgt, meta: m(src, tgt, tgt_mask=meta(target_mask(tgt))), "tgt_mask"),
    (lambda m, src, tgt, meta: m.encode(meta(src)), "src"),
    (lambda m, src, tgt, meta: m.decode(tgt, meta(m.encode(src)[0])), "memory"),
    (lambda m, src, tgt, meta: m.attention_maps(src, meta(tgt)), "tgt"),
    (lambda m, src, tgt, meta: m.encoder.layers[0](meta(torch.zeros(2, 5, 32))), "x"),
    (lambda m, src, tgt, meta: m.decoder.layers[0](torch.zeros(2, 4, 32), meta(torch.zeros(2, 5, 32))), "memory"),
]


@pytest.mark.parametrize(("call", "name"), DEVICE_MISMATCHES)
def test_inputs_on_another_device_than_the_weights_get_an_error_naming_the_argument_and_both_devices(call, name):
    model = small_model()
    src, tgt = random_tokens(2, 5, 17), random_tokens(2, 4, 19)
    with pytest.raises(RuntimeError, match=rf"^{name} is on meta but the model's weights are on cpu; move the input"):
        call(model, src, tgt, lambda x: x.to("meta"))


def test_a_model_on_another_device_than_its_inputs_names_both():
    model = small_model().to("meta")
    with pytest.raises(RuntimeError, match=r"^src is on cpu but the model's weights are on meta"):
        model(random_tokens(2, 5, 17), random_tokens(2, 4, 19))
