"""The model compiles with ``torch.compile(fullgraph=True)``, exports with ``torch.export`` at dynamic shapes, and its
ONNX graphs (``transformer.export``) compute what PyTorch computes, on the CPU.

``torch.compile`` runs with the ``aot_eager`` backend: it traces the whole graph (what ``fullgraph=True`` checks)
and its backward without generating C++ kernels: inductor took 27 s to compile the tiny model's forward alone
on this 2-core machine (and agreed with eager to 7e-7).
"""

from __future__ import annotations

import pytest
import torch
import torch.export

from transformer import Transformer
from transformer.export import DecoderStepGraph, EncoderGraph, export_onnx
from transformer.train.recipes import small_model_config

pytestmark = pytest.mark.slow  # every test here compiles, exports, trains or starts processes


def tiny_model(**overrides) -> Transformer:
    torch.manual_seed(0)
    config = dict(d_model=32, n_heads=4, d_ff=64, max_positions=32) | overrides
    return Transformer(small_model_config(**config)).eval()


def padded_batch(batch: int, src_len: int, tgt_len: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(3, 13, (batch, src_len), generator=generator)
    tgt = torch.randint(3, 13, (batch, tgt_len), generator=generator)
    src[0, src_len // 2 :] = 0  # padding, so that the masks matter
    return src, tgt


def test_compiled_forward_with_fullgraph_aot_eager_equals_eager_and_eager_calls_keep_their_errors():
    model = tiny_model()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    for src_len, tgt_len in ((7, 5), (9, 6)):  # a second shape: recompiles or runs a dynamic graph, never breaks
        src, tgt = padded_batch(3, src_len, tgt_len)
        torch.testing.assert_close(compiled(src, tgt), model(src, tgt), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"src holds ids outside the vocabulary \[0, 13\): min 13"):
        model(torch.full((2, 5), 13), torch.ones(2, 4, dtype=torch.long))


def test_export_with_dynamic_batch_and_lengths_runs_at_new_shapes_like_eager():
    from torch.export import Dim

    model = tiny_model()
    batch, src_len, tgt_len = Dim("batch", max=64), Dim("src_len", max=32), Dim("tgt_len", max=32)
    program = torch.export.export(
        model, padded_batch(2, 7, 5), dynamic_shapes={"src": {0: batch, 1: src_len}, "tgt": {0: batch, 1: tgt_len}}
    )
    for shape in ((3, 9, 4), (5, 11, 8)):
        src, tgt = padded_batch(*shape, seed=1)
        torch.testing.assert_close(program.module()(src, tgt), model(src, tgt), rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def onnx_sessions(tmp_path_factory):
    ort = pytest.importorskip("onnxruntime")  # with onnx and onnxscript: the `test` extra
    pytest.importorskip("onnxscript")
    model = tiny_model()
    encoder_path, decoder_path = export_onnx(model, tmp_path_factory.mktemp("onnx"))
    assert (encoder_path.name, decoder_path.name) == ("encoder.onnx", "decoder_step.onnx")
    return model, ort.InferenceSession(str(encoder_path)), ort.InferenceSession(str(decoder_path))


def max_error(onnx_outputs, torch_outputs) -> float:
    assert [tuple(o.shape) for o in onnx_outputs] == [tuple(t.shape) for t in torch_outputs]
    return max(float(abs(torch.from_numpy(o) - t).max()) for o, t in zip(onnx_outputs, torch_outputs, strict=True))


def test_onnx_encoder_and_decoder_step_equal_pytorch_at_new_lengths(onnx_sessions):
    model, encoder, decoder = onnx_sessions
    src, tgt = padded_batch(3, 11, 6, seed=2)  # the export traced (2, 5) and (2, 3)
    heads = torch.ones(2, 4)
    memory, attention = encoder.run(None, {"src": src.numpy(), "head_mask": heads.numpy()})
    with torch.no_grad():
        expected = EncoderGraph(model)(src, heads)
        assert max_error([memory, attention], expected) < 1e-5
        assert max_error([memory], [model.encode(src)[0]]) < 1e-5
        step = decoder.run(
            None,
            {
                "tgt": tgt.numpy(),
                "memory": memory,
                "src_mask": (src != 0).numpy(),
                "self_head_mask": heads.numpy(),
                "cross_head_mask": heads.numpy(),
            },
        )
        assert max_error(step, DecoderStepGraph(model)(tgt, expected[0], src != 0, heads, heads)) < 1e-5
        assert max_error(step[:1], [model(src, tgt)[:, -1]]) < 1e-5  # the next token's logits
        maps = model.attention_maps(src, tgt)
        assert max_error(step[1:], [torch.stack(maps["decoder"]), torch.stack(maps["cross"])]) < 1e-5


def test_onnx_head_masks_silence_the_chosen_heads_as_pytorch_does(onnx_sessions):
    model, encoder, decoder = onnx_sessions
    src, tgt = padded_batch(2, 8, 5, seed=3)
    keep_all, silenced = torch.ones(2, 4), torch.ones(2, 4)
    silenced[0, 1] = silenced[1, 3] = 0.0
    memory, _ = encoder.run(None, {"src": src.numpy(), "head_mask": silenced.numpy()})
    inputs = {"tgt": tgt.numpy(), "memory": memory, "src_mask": (src != 0).numpy()}
    step = decoder.run(None, inputs | {"self_head_mask": keep_all.numpy(), "cross_head_mask": silenced.numpy()})
    with torch.no_grad():
        torch_memory, _ = EncoderGraph(model)(src, silenced)
        expected = DecoderStepGraph(model)(tgt, torch_memory, src != 0, keep_all, silenced)
        unmasked = model(src, tgt)[:, -1]
    assert max_error(step, expected) < 1e-5
    assert float(abs(torch.from_numpy(step[0]) - unmasked).max()) > 1e-3  # silencing heads changed the answer
    assert all(layer.self_attn.head_mask is None for layer in model.encoder.layers)  # masks restored after export


def test_train_with_compile_takes_the_same_steps_as_eager_training(monkeypatch):
    from functools import partial

    from transformer.train import RunConfig, TaskConfig, TrainConfig, train_task

    compiled = []
    aot_eager = partial(torch.compile, backend="aot_eager")  # inductor would spend a minute building kernels
    monkeypatch.setattr(torch, "compile", lambda model: compiled.append(model) or aot_eager(model))
    histories = {}
    for compile_ in (False, True):
        config, run = TrainConfig(steps=3, batch_size=8, eval_every=3), RunConfig(device="cpu", compile=compile_)
        histories[compile_] = train_task(TaskConfig(eval_size=4), config, run, model=tiny_model(), progress=False)[1]
    assert len(compiled) == 1  # only the run that asked for it
    assert histories[True].loss == pytest.approx(histories[False].loss, abs=1e-5)
    with pytest.raises(TypeError, match="compile must be a bool"):
        RunConfig(compile="yes")
