"""The decoder-only and encoder-only models built from the package's parts (transformer_book.descendants): they
compute what PyTorch's own encoder layers compute, see what their masks let them see, export, count GPT-2 small's
and BERT-base's parameters, and learn the book's tasks; and the induction score (transformer_book.induction)."""

import math

import pytest
import torch
import torch.nn.functional as F

from transformer import Transformer, TransformerConfig
from transformer.masks import causal_mask, padding_mask
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train import RunConfig, TaskConfig, TrainConfig
from transformer.train.evaluation import evaluate_batches
from transformer.train.language_model import decoder_only_batch, masked_token_eval_batches
from transformer.train.recipes import small_model_config, train_decoder_only, train_masked_tokens
from transformer.train.tasks import make_batch, task_eval_batches
from transformer.utils import seeded
from transformer_book.descendants import (
    BERT,
    DIFFERENCES,
    GPT,
    INIT_STD,
    PUBLISHED,
    BERTConfig,
    GPTConfig,
    bert_base_config,
    gelu_approximation_gap,
    gpt2_small_config,
    masked_accuracy_by_side,
    on_meta,
    parameters_by_part,
    published_counts,
    small_bert_config,
    small_gpt_config,
    torch_twin,
    train_gpt,
)
from transformer_book.i18n import translatable
from transformer_book.induction import InductionRecorder, induction_pattern, induction_scores, separator_positions

SMALL = dict(vocab_size=17, max_positions=24, d_model=32, n_heads=4, d_ff=64, n_layers=2, dropout=0.0)


def small_gpt(**overrides) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(**SMALL | overrides)).eval()


def small_bert(**overrides) -> BERT:
    torch.manual_seed(0)
    return BERT(BERTConfig(**SMALL | overrides)).eval()


def padded_tokens(lengths=(9, 5, 1), width=9, seed=0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(3, 17, (len(lengths), width), generator=generator)
    return tokens.masked_fill(torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None], PAD_ID)


def test_gpt_computes_what_a_pre_norm_gelu_torch_encoder_stack_computes_under_a_causal_mask():
    model = small_gpt()
    reference = torch_twin(model)
    tokens = padded_tokens()
    with torch.no_grad():
        embedded = model.tok_embed.weight[tokens] + model.positional.weight[:9]
        torch.testing.assert_close(model.embed(tokens), embedded)  # no sqrt(d_model), as in GPT-2
        ours = model(tokens)  # (B, T, V)
        hidden = reference(
            model.embed(tokens), mask=torch.ones(9, 9, dtype=torch.bool).triu(1), src_key_padding_mask=tokens == PAD_ID
        )
        theirs = hidden @ model.tok_embed.weight.T  # the tied output layer
    real = tokens != PAD_ID
    assert (ours - theirs)[real].abs().max() < 1e-5
    with torch.no_grad():
        unmasked = reference(model.embed(tokens), src_key_padding_mask=tokens == PAD_ID) @ model.tok_embed.weight.T
    assert (ours - unmasked)[real].abs().max() > 1e-2  # without the causal mask PyTorch computes something else


def test_bert_computes_what_a_post_norm_gelu_torch_encoder_stack_computes_and_its_heads_are_bert_s():
    model = small_bert(layer_norm_eps=1e-12)
    reference = torch_twin(model)
    tokens, segments = padded_tokens(), (torch.arange(9) >= 4).long().expand(3, 9)
    with torch.no_grad():
        x = model.embeddings
        embedded = x.norm(x.tok_embed.weight[tokens] + x.positional.weight[:9] + x.segment.weight[segments])
        torch.testing.assert_close(model.embed(tokens, segments), embedded)  # no sqrt(d_model), as in BERT
        hidden = model.encode(tokens, segments=segments)
        theirs = reference(embedded, src_key_padding_mask=tokens == PAD_ID)
        real = tokens != PAD_ID
        assert (hidden - theirs)[real].abs().max() < 1e-5
        head = model.mlm_head
        transformed = F.layer_norm(F.gelu(head.dense(theirs)), (32,), head.norm.weight, head.norm.bias, 1e-12)
        expected = transformed @ x.tok_embed.weight.T + head.decoder.bias
        assert (model(tokens, segments=segments) - expected)[real].abs().max() < 1e-5
        torch.testing.assert_close(model.pool(hidden), torch.tanh(model.pooler.dense(hidden[:, 0])))


def test_a_causal_model_s_outputs_up_to_t_ignore_later_tokens_and_the_encoder_only_one_s_do_not():
    tokens = padded_tokens(lengths=(9, 9), seed=1)
    changed = tokens.clone()
    changed[:, 5:] = padded_tokens(lengths=(9, 9), seed=2)[:, 5:]
    for model, sees_ahead in ((small_gpt(), False), (small_bert(), True), (small_bert(causal=True), False)):
        with torch.no_grad():
            before, after = model(tokens), model(changed)
        difference = float((before - after)[:, :5].abs().max())
        assert (difference > 1e-5) if sees_ahead else (difference == 0.0), (type(model).__name__, difference)


@pytest.mark.parametrize("make", [small_gpt, small_bert])
def test_rows_of_padding_only_give_no_nan_and_leave_the_other_rows_as_they_are_alone(make):
    model = make()
    tokens = padded_tokens(lengths=(6, 0), width=6)
    for dtype in (torch.float32, torch.bfloat16):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            logits, alone = model(tokens), model(tokens[:1])
        assert logits.dtype == dtype and torch.isfinite(logits).all()
        torch.testing.assert_close(logits[:1], alone)
    model.train()
    model(tokens).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("make", [small_gpt, small_bert])
def test_a_bf16_model_runs_and_stays_close_to_fp32(make):
    model = make()
    tokens = padded_tokens()
    with torch.no_grad():
        expected = model(tokens)
        logits = model.to(torch.bfloat16)(tokens)
    real = tokens != PAD_ID
    assert logits.dtype == torch.bfloat16 and torch.isfinite(logits).all()
    assert (logits.float() - expected)[real].abs().max() < 0.05 * expected.abs().max()


def test_gpt_2_small_and_bert_base_count_exactly_the_published_parameters():
    counts = published_counts()
    assert {name: row["counted"] for name, row in counts.items()} == {"gpt2": 124_439_808, "bert": 109_482_240}
    assert all(row["difference"] == 0 for row in counts.values())
    d, layer = 768, 4 * 768 * 768 + 4 * 768 + 2 * 768 * 3072 + 3072 + 768 + 2 * 2 * 768  # one block, both models
    gpt, bert = counts["gpt2"], counts["bert"]
    assert (gpt["tok_embed"], gpt["positional"], gpt["blocks"], gpt["lm_head"]) == (
        50257 * d,
        1024 * d,
        12 * layer + 2 * d,
        0,
    )
    assert bert["embeddings"] == (30522 + 512 + 2) * d + 2 * d and bert["blocks"] == 12 * layer
    assert bert["pooler"] == d * d + d and bert["mlm_head"] == d * d + d + 2 * d + 30522  # its decoder weight is tied
    assert set(PUBLISHED) == set(counts)


def test_models_built_on_the_meta_device_allocate_nothing_and_count_tied_weights_once():
    model = on_meta(GPT, gpt2_small_config())
    assert all(p.is_meta for p in model.parameters()) and model.lm_head.weight is model.tok_embed.weight
    assert sum(parameters_by_part(model).values()) == model.num_parameters()
    bert = on_meta(BERT, bert_base_config(pooler=False, type_vocab_size=0))
    assert bert.mlm_head.decoder.weight is bert.embeddings.tok_embed.weight
    assert bert.num_parameters() == published_counts()["bert"]["counted"] + 622_650 - 590_592 - 2 * 768


@torch.no_grad()
def test_gpt_starts_from_gpt_2_s_weights_bert_from_bert_s_truncated_ones_or_both_from_the_package_s():
    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=50, d_model=256, n_heads=4, d_ff=1024, n_layers=8, max_positions=64))
    assert float(gpt.blocks.layers[0].feed_forward.linear1.weight.std()) == pytest.approx(INIT_STD, rel=0.05)
    assert float(gpt.blocks.layers[0].self_attn.out_proj.weight.std()) == pytest.approx(INIT_STD / 4, rel=0.05)
    assert float(gpt.tok_embed.weight.std()) == pytest.approx(INIT_STD, rel=0.05)
    bert = BERT(BERTConfig(vocab_size=50, d_model=256, n_heads=4, d_ff=1024, n_layers=2, max_positions=64))
    weights = bert.blocks.layers[0].feed_forward.linear1.weight
    assert weights.abs().max() <= 2 * INIT_STD and float(weights.std()) == pytest.approx(0.88 * INIT_STD, rel=0.05)
    package = GPT(GPTConfig(vocab_size=50, d_model=256, n_heads=4, d_ff=1024, n_layers=8, init_std=None))
    xavier = (6 / (256 + 1024)) ** 0.5 / 3**0.5  # the standard deviation of Xavier-uniform
    assert float(package.blocks.layers[0].feed_forward.linear1.weight.std()) == pytest.approx(xavier, rel=0.05)
    assert float(package.tok_embed.weight.std()) == pytest.approx(256**-0.5, rel=0.05)


def test_greedy_generation_continues_a_prompt_with_the_argmax_and_stops_after_eos():
    model = small_gpt(vocab_size=13)
    prompt = torch.tensor([[3, 4, 5, BOS_ID], [6, 7, 8, BOS_ID]])
    with torch.no_grad():
        model.lm_head.weight[EOS_ID] = 0.0  # never EOS ...
        generated = model.generate(prompt, max_new_tokens=3)
        tokens = prompt
        for _ in range(3):
            tokens = torch.cat([tokens, model(tokens)[:, -1:].argmax(-1)], dim=1)
        assert torch.equal(generated, tokens[:, 4:])
        model.blocks.norm.weight.zero_()  # ... then every position's last hidden state is the final norm's bias,
        model.blocks.norm.bias.fill_(1.0)
        model.lm_head.weight[EOS_ID] = 1.0  # which EOS's row matches best: EOS at once
        assert model.generate(prompt, max_new_tokens=5).tolist() == [[EOS_ID], [EOS_ID]]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: GPTConfig(**SMALL | dict(n_heads=5)), ValueError, "d_model must be divisible by n_heads"),
        (lambda: GPTConfig(**SMALL | dict(n_layers=0)), ValueError, "n_layers must be an int >= 1; got 0"),
        (lambda: GPTConfig(**SMALL | dict(dropout=1.0)), ValueError, r"dropout must be a probability in \[0, 1\)"),
        (lambda: GPTConfig(**SMALL | dict(pad_id=17)), ValueError, r"pad_id must be an int in \[0, 16\]; got 17"),
        (lambda: GPTConfig(**SMALL | dict(init_std=0.0)), ValueError, "init_std must be a positive finite number"),
        (lambda: BERTConfig(**SMALL | dict(pooler="yes")), TypeError, "pooler must be a bool; got 'yes'"),
        (lambda: BERTConfig(**SMALL | dict(type_vocab_size=-1)), ValueError, "type_vocab_size must be an int >= 0"),
        (lambda: GPT(TransformerConfig(17, 17)), TypeError, "config must be a GPTConfig; got TransformerConfig"),
        (lambda: BERT(GPTConfig(**SMALL)), TypeError, "config must be a BERTConfig; got GPTConfig"),
        (lambda: small_gpt()(torch.full((2, 3), 17)), ValueError, r"tokens holds ids outside .*\[0, 17\): min 17"),
        (lambda: small_gpt()(torch.ones(2, 3)), TypeError, "tokens must hold integer token ids"),
        (lambda: small_gpt()(torch.ones(3, dtype=torch.long)), ValueError, "tokens must be 2-D"),
        (lambda: small_bert()(torch.ones(1, 25, dtype=torch.long)), ValueError, "tokens needs 25 positions, more"),
        (
            lambda: small_gpt()(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 1, 1, 4, dtype=torch.bool)),
            ValueError,
            r"mask has shape \(2, 1, 1, 4\), which does not broadcast",
        ),
        (
            lambda: small_bert()(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 1, 1, 3)),
            TypeError,
            "mask must be a bool tensor",
        ),
        (
            lambda: small_bert()(torch.ones(2, 3, dtype=torch.long), segments=torch.full((2, 3), 2)),
            ValueError,
            r"segments holds ids outside the vocabulary \[0, 2\): min 2",
        ),
        (
            lambda: small_bert()(torch.ones(2, 3, dtype=torch.long), segments=torch.zeros(2, 4, dtype=torch.long)),
            ValueError,
            r"segments must have the shape of tokens \(2, 3\); got \(2, 4\)",
        ),
        (
            lambda: small_bert(type_vocab_size=0)(torch.ones(1, 2, dtype=torch.long), segments=torch.ones(1, 2).long()),
            ValueError,
            "segments need segment embeddings: build the model with type_vocab_size >= 1",
        ),
        (lambda: small_bert(pooler=False).pool(torch.zeros(1, 2, 32)), ValueError, "this BERT has no pooler"),
        (
            lambda: small_gpt().generate(torch.ones(1, 20, dtype=torch.long), 5),
            ValueError,
            "prompt \\+ max_new_tokens needs 25 positions",
        ),
    ],
)
def test_bad_configurations_and_inputs_get_errors_naming_the_argument(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_the_differences_are_data_every_word_of_them_shown_through_the_catalogue():
    topics = [row.topic for row in DIFFERENCES]
    assert len(set(topics)) == len(topics) >= 12
    for row in DIFFERENCES:
        assert all(isinstance(getattr(row, name), str) for name in ("topic", "paper", "gpt2", "bert", "here"))
        assert row.topic and row.paper and row.gpt2 and row.bert and isinstance(row.changes_count, bool)
    changing = {row.topic for row in DIFFERENCES if row.changes_count}
    assert {"positions", "pooler", "output layer", "layer norm"} <= changing and "activation" not in changing
    assert translatable("layout") == "layout"


def test_exact_gelu_and_gpt_2_s_tanh_approximation_differ_by_under_5e_4():
    gap = gelu_approximation_gap()
    x = torch.linspace(-4, 4, 801, dtype=torch.float64)
    assert gap == pytest.approx(float((F.gelu(x) - F.gelu(x, approximate="tanh")).abs().max()), rel=1e-2)
    assert 4e-4 < gap < 5e-4


def test_torch_export_with_dynamic_batch_and_length_runs_both_models_at_new_shapes_like_eager():
    from torch.export import Dim

    for model in (small_gpt(), small_bert()):
        batch, length = Dim("batch", max=64), Dim("length", max=24)
        program = torch.export.export(model, (padded_tokens(),), dynamic_shapes={"tokens": {0: batch, 1: length}})
        for lengths, width in (((4, 2), 4), ((7, 7, 3, 1, 5), 7)):
            tokens = padded_tokens(lengths, width, seed=3)
            torch.testing.assert_close(program.module()(tokens), model(tokens), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [small_gpt, small_bert], ids=["gpt", "bert"])
def test_both_models_export_to_onnx_and_onnx_runtime_computes_what_pytorch_computes(tmp_path, make):
    ort = pytest.importorskip("onnxruntime")  # with onnx and onnxscript: the `test` extra
    pytest.importorskip("onnxscript")
    from torch.export import Dim

    model = make()
    program = torch.onnx.export(
        model,
        (padded_tokens(),),
        dynamo=True,
        input_names=["tokens"],
        output_names=["logits"],
        dynamic_shapes={"tokens": {0: Dim("batch", max=64), 1: Dim("length", max=24)}},
        verbose=False,
    )
    program.save(str(tmp_path / "model.onnx"))
    session = ort.InferenceSession(str(tmp_path / "model.onnx"))
    tokens = padded_tokens((11, 6, 2, 11), 11, seed=4)  # another batch size and length than the export's
    (logits,) = session.run(None, {"tokens": tokens.numpy()})
    with torch.no_grad():
        expected = model(tokens)
    assert float((torch.from_numpy(logits) - expected).abs().max()) < 1e-5


def test_a_small_gpt_learns_the_copy_written_as_one_row_and_its_attention_moves_onto_the_induction_diagonal():
    torch.manual_seed(0)
    model = GPT(GPTConfig(**SMALL | dict(vocab_size=13, n_heads=2, init_std=None)))
    rows = decoder_only_batch(TaskConfig("copy").eval_batches()[0]).tokens
    before = induction_scores(model.attention_maps(rows), separator_positions(rows))
    config = TrainConfig(steps=200, eval_every=200)
    history = train_decoder_only(model, TaskConfig("copy", eval_size=100), config, RunConfig(device="cpu"), False)
    after = induction_scores(model.attention_maps(rows), separator_positions(rows))
    assert history.eval_token_accuracy[-1] > 0.8 and history.eval_exact_match[-1] > 0.4  # 10 % by chance
    assert float(before.max()) < 0.15 and float(after.max()) > 0.25
    held_out = decoder_only_batch(task_eval_batches("copy", 60)[0])
    generated = []  # the exact match of generating each copy, against the one-pass score of evaluate_batches
    for row in held_out.tokens:
        n = int(separator_positions(row[None]))
        copy = model.generate(row[None, : n + 1], max_new_tokens=n + 1)[0]
        generated.append(copy.tolist() == [*row[:n].tolist(), EOS_ID])
    assert 0 < sum(generated) < 60 and evaluate_batches(model, [held_out]).exact_match == sum(generated) / 60


def test_a_small_bert_learns_to_fill_in_masked_symbols():
    torch.manual_seed(0)
    model = BERT(BERTConfig(**SMALL | dict(vocab_size=14, n_heads=2, init_std=None)))
    config = TrainConfig(steps=200, eval_every=200)
    data = TaskConfig("copy", eval_size=100)
    history = train_masked_tokens(model, data, config, RunConfig(device="cpu"), False, rate=0.5)
    assert history.eval_token_accuracy[-1] > 0.18 and history.eval_loss[-1] < math.log(10)  # chance: 1 in 10


# ---- induction ------------------------------------------------------------------------------------------------


def copy_rows(lengths: list[int]) -> torch.Tensor:
    """Rows ``x <sep> x`` of the copy task, ``x = 3 4 5 ..`` of each length."""
    src = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, :n] = torch.arange(3, 3 + n)
    return decoder_only_batch(make_batch(src, src)).tokens


def hand_made_head(tokens: torch.Tensor, kind: str) -> torch.Tensor:
    """(B, 1, T, T) weights of one head: an induction head, uniform causal attention, or each token on itself."""
    T = tokens.size(1)
    if kind == "induction":
        weights = induction_pattern(separator_positions(tokens), T).float()  # (B, T, T)
        return torch.where(weights.sum(-1, keepdim=True) == 0, torch.eye(T), weights)[:, None]  # the rest on itself
    if kind == "uniform":
        visible = (causal_mask(T)[0] & padding_mask(tokens)[:, 0]).float()  # (B, T, T)
        return (visible / visible.sum(-1, keepdim=True).clamp(min=1))[:, None]
    return torch.eye(T).expand(len(tokens), 1, T, T)


def test_the_induction_diagonal_runs_from_each_copied_token_to_the_token_after_its_first_occurrence():
    tokens = copy_rows([3])  # 3 4 5 <sep> 3 4 5: position 4 reads 3, whose successor 4 is at position 1
    assert tokens.tolist() == [[3, 4, 5, BOS_ID, 3, 4, 5]] and separator_positions(tokens).tolist() == [3]
    pattern = induction_pattern(torch.tensor([3]), 7)[0]
    assert pattern.nonzero().tolist() == [[4, 1], [5, 2], [6, 3]]


def test_an_induction_head_scores_1_and_uniform_or_self_attention_score_near_0():
    tokens = copy_rows(list(range(2, 11)))
    lengths = separator_positions(tokens)
    maps = [hand_made_head(tokens, kind) for kind in ("induction", "uniform", "self")]
    scores = induction_scores(maps, lengths)  # (3 layers, 1 head)
    assert scores.shape == (3, 1)
    assert scores[0, 0] == pytest.approx(1.0) and scores[1, 0] < 0.15 and scores[2, 0] == 0.0
    both = induction_scores([torch.cat([maps[0], maps[2]], dim=1)], lengths)  # one layer, two heads
    assert both.tolist() == [[pytest.approx(1.0), 0.0]]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: induction_pattern(torch.tensor([2.0]), 5), "lengths must be a 1-D integer tensor"),
        (lambda: induction_pattern(torch.tensor([0]), 5), "lengths must be >= 1"),
        (lambda: induction_scores([], torch.tensor([2])), "maps must hold at least one layer"),
        (lambda: induction_scores([torch.zeros(2, 1, 5, 5)], torch.tensor([2])), r"one entry per row, shape \(2,\)"),
        (
            lambda: induction_scores([torch.zeros(1, 1, 5, 5), torch.zeros(1, 1, 4, 4)], torch.tensor([2])),
            r"every map must have shape \(1, H, 5, 5\)",
        ),
        (lambda: separator_positions(torch.tensor([[3, 4], [3, 1]])), "every row of tokens must hold the separator"),
    ],
)
def test_bad_induction_inputs_get_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_shifted_diagonal_scores_the_weight_one_key_before_or_after_the_induction_key():
    rows = copy_rows([4, 2])
    lengths = separator_positions(rows)
    induction = hand_made_head(rows, "induction")
    shifted = torch.roll(induction, shifts=1, dims=-1)  # every weight one key later
    assert float(induction_scores([shifted], lengths, offset=1)[0, 0]) == pytest.approx(1.0)
    assert float(induction_scores([shifted], lengths)[0, 0]) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="offset must be an int >= -"):
        induction_pattern(lengths, rows.size(1), offset=-99)


def test_the_small_gpt_has_the_small_encoder_decoder_s_parameters_within_2_percent_and_bert_the_gpt_s_layers():
    encoder_decoder = Transformer(small_model_config()).num_parameters()
    gpt, bert = GPT(small_gpt_config()), BERT(small_bert_config())
    assert abs(gpt.num_parameters() / encoder_decoder - 1) < 0.02
    final_norm = 2 * gpt.config.d_model  # GPT-2's ln_f, which a post-norm stack has none of
    assert parameters_by_part(gpt)["blocks"] == parameters_by_part(bert)["blocks"] + final_norm
    assert BERT(small_bert_config(causal=True)).num_parameters() == bert.num_parameters()


def test_the_induction_recorder_takes_every_layer_s_maps_at_the_steps_asked_and_training_is_unchanged():
    rows = decoder_only_batch(TaskConfig("copy").eval_batches()[0]).tokens[:20]
    config, run = TrainConfig(steps=6, eval_every=3), RunConfig(seed=1, device="cpu")
    _, plain = train_gpt(small_gpt_config(n_layers=2), TaskConfig("copy", eval_size=20), config, run, False)
    with seeded(1):
        model = GPT(small_gpt_config(n_layers=2))
    with InductionRecorder(model, rows, steps=[0, 3, 6], item=2) as recorder:
        history = train_decoder_only(model, TaskConfig("copy", eval_size=20), config, run, False)
    assert history.loss == plain.loss  # recording reads the model in eval mode and changes nothing
    assert recorder.steps == [0, 3, 6] and recorder.scores().shape == (3, 2, 2)
    assert len(recorder.snapshots[6]) == 2 and recorder.snapshots[6][0].shape == (20, 2, rows.size(1), rows.size(1))
    frames = recorder.examples
    n = int(separator_positions(rows[2:3]))
    assert len(frames) == 3 and frames[0].tgt_tokens[n] == "<s>" and len(frames[0].tgt_tokens) == 2 * n + 1
    assert frames[-1].maps["decoder"][0].shape == (2, 2 * n + 1, 2 * n + 1)


def test_masked_accuracy_by_side_counts_each_chosen_symbol_on_its_side_and_the_blind_rate_is_what_the_input_shows():
    class Oracle(torch.nn.Module):  # predicts every chosen symbol right: the answers are known to the test
        def __init__(self, answers):
            super().__init__()
            self.config, self.answers, self.weight = small_bert_config(), answers, torch.nn.Parameter(torch.zeros(1))

        def forward(self, tokens, mask):
            return torch.nn.functional.one_hot(self.answers, self.config.vocab_size).float()

    batch = masked_token_eval_batches("copy", 200, rate=0.3)[0]
    answers = torch.where(batch.tgt_out != PAD_ID, batch.tgt_out, batch.tokens)
    scores = masked_accuracy_by_side(Oracle(answers), [batch])
    assert scores["left"] == scores["right"] == 1.0
    wrong = masked_accuracy_by_side(Oracle(torch.full_like(answers, 3)), [batch])  # always symbol 3
    sep = separator_positions(batch.tokens)[:, None]
    in_x = (batch.tgt_out != PAD_ID) & (torch.arange(batch.tokens.size(1))[None] < sep)
    assert wrong["right"] == pytest.approx(float((batch.tgt_out[in_x] == 3).float().mean()))
    shown = float((batch.tokens[in_x] == batch.tgt_out[in_x]).float().mean())
    assert wrong["blind"] == pytest.approx(shown + (1 - shown) / 10) and shown > 0.05
