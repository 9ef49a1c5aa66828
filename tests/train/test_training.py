import copy
import math

import pytest
import torch
import torch.nn.functional as F

from transformer import Transformer, TransformerConfig
from transformer.tokens import EOS_ID, PAD_ID
from transformer.train.config import RunConfig, TrainConfig
from transformer.train.distributed import shard
from transformer.train.evaluation import evaluate, evaluate_batches
from transformer.train.loop import train, train_step
from transformer.train.objective import exact_match, label_smoothing_kl, sequence_loss, smoothed_targets
from transformer.train.recipes import annotated_transformer_configs, small_model_config, train_task
from transformer.train.schedule import make_scheduler, noam_lr, noam_scheduler, polynomial_scheduler
from transformer.train.tasks import TaskConfig, make_batch, random_sequences, task_batch
from transformer.utils import make_rng, select_device


def _logits_and_target():
    logits = torch.randn(3, 5, 7)
    target = torch.tensor([[4, 5, 2, 0, 0], [3, 2, 0, 0, 0], [6, 6, 6, 6, 2]])
    return logits, target


def test_loss_is_the_mean_cross_entropy_over_real_tokens_only():
    logits, target = _logits_and_target()
    real = target != PAD_ID
    expected = F.cross_entropy(logits[real], target[real])
    torch.testing.assert_close(sequence_loss(logits, target), expected)
    changed = logits.clone()
    changed[~real] = 100 * torch.randn_like(changed[~real])  # whatever the model says at padding
    torch.testing.assert_close(sequence_loss(changed, target), expected)


def test_label_smoothed_cross_entropy_is_the_papers_kl_form_plus_the_targets_entropy():
    logits, target = _logits_and_target()
    q = smoothed_targets(target[target != PAD_ID], 7, 0.1)  # (N, V)
    torch.testing.assert_close(q.sum(-1), torch.ones(len(q)))
    entropy = -(q * q.log()).sum(-1).mean()
    ce = sequence_loss(logits, target, label_smoothing=0.1)
    torch.testing.assert_close(ce, label_smoothing_kl(logits, target, 0.1) + entropy)
    assert label_smoothing_kl(torch.log(smoothed_targets(target, 7, 0.1)), target, 0.1) == pytest.approx(0, abs=1e-6)


def test_noam_scheduler_reproduces_the_papers_formula_and_peaks_at_warmup():
    d_model, warmup = 512, 4000
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([parameter], lr=(d_model * warmup) ** -0.5)  # the paper's rates
    scheduler = noam_scheduler(optimizer, warmup)
    rates = []
    for _ in range(8000):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    for step in (1, 2, 100, 4000, 4001, 8000):
        assert rates[step - 1] == pytest.approx(noam_lr(step, d_model, warmup))
    assert max(range(8000), key=rates.__getitem__) == warmup - 1
    assert noam_lr(4000, 512, 4000) == pytest.approx(1 / math.sqrt(512 * 4000))


def _rates(scheduler_factory, steps: int = 100) -> list[float]:
    """The rate of every step of a scheduler on a throwaway SGD optimizer with lr 0.1."""
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=0.1)
    scheduler, rates = scheduler_factory(optimizer), []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


@pytest.mark.parametrize("power", [1.0, 2.0])
def test_polynomial_scheduler_warms_up_to_the_peak_then_anneals_to_nearly_zero(power):
    rates = _rates(lambda optimizer: polynomial_scheduler(optimizer, warmup=10, total_steps=100, power=power))
    assert rates[0] == pytest.approx(0.01) and rates[9] == pytest.approx(0.1)
    assert all(a > b for a, b in zip(rates[9:], rates[10:], strict=False)) and 0 < rates[-1] < 0.002
    remaining = (101 - 55) / (101 - 10)  # step 55: the share of the decay still ahead
    assert rates[54] == pytest.approx(0.1 * remaining**power)


def test_make_scheduler_builds_the_schedule_a_config_names():
    for name, factory in (
        ("noam", lambda o: noam_scheduler(o, 10)),
        ("linear", lambda o: polynomial_scheduler(o, 10, 100, 1.0)),
        ("quadratic", lambda o: polynomial_scheduler(o, 10, 100, 2.0)),
    ):
        assert _rates(lambda o, name=name: make_scheduler(o, name, 10, 100)) == _rates(factory), name
    with pytest.raises(ValueError, match="schedule must be one of .* got 'cosine'"):
        make_scheduler(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1), "cosine", 10, 100)


def test_train_takes_the_same_adam_steps_as_torch_optim_adam():
    """train's Adam (the fused kernel where PyTorch has one) and the default for-loop Adam: the same weights after a
    few steps, up to float rounding."""
    config = TrainConfig(
        steps=5, batch_size=16, eval_every=5, label_smoothing=0.0, clip_norm=None, schedule="linear", warmup=1
    )
    run = RunConfig(device="cpu")
    torch.manual_seed(0)
    trained = Transformer(small_model_config(d_model=16, d_ff=32))
    reference = copy.deepcopy(trained)
    train_task(TaskConfig(eval_size=8), config, run, model=trained, progress=False)
    optimizer = torch.optim.Adam(
        reference.parameters(), lr=config.lr, betas=config.betas, eps=config.eps, foreach=False
    )
    scheduler = make_scheduler(optimizer, config.schedule, config.warmup, config.steps)
    rng = make_rng(run.seed)  # as train_task draws its batches
    for _ in range(config.steps):
        train_step(reference.train(), task_batch("copy", config.batch_size, rng=rng), optimizer)
        scheduler.step()
    d = trained.config.d_model
    for (name, a), b in zip(trained.named_parameters(), reference.parameters(), strict=True):
        if name.endswith("in_proj.bias"):
            # the keys' bias, the middle third, adds the same to every score of a query, which the softmax ignores: its
            # gradient is rounding noise, which Adam (eps 1e-9) turns into steps of about lr either way
            a, b = torch.cat([a[:d], a[2 * d :]]), torch.cat([b[:d], b[2 * d :]])
        assert torch.allclose(a, b, atol=1e-6), name


def test_quadratic_decay_reaches_low_rates_sooner_than_linear_decay():
    linear, quadratic = (_rates(lambda o, p=p: polynomial_scheduler(o, 10, 100, p)) for p in (1.0, 2.0))
    assert all(q <= lin for q, lin in zip(quadratic, linear, strict=True))
    below = [
        next(step for step, rate in enumerate(rates) if step > 10 and rate < 0.01) for rates in (linear, quadratic)
    ]
    assert below[0] - below[1] >= 15  # under a tenth of the peak for the last 28 % of the run instead of 9 %


def test_exact_match_needs_every_token_including_the_end():
    target = torch.tensor([[5, 6, 2, 0], [7, 2, 0, 0], [3, 3, 2, 0]])
    predicted = torch.tensor([[5, 6, 2], [7, 9, 2], [3, 3, 3]])
    assert exact_match(predicted, target).tolist() == [True, False, False]


def test_training_is_deterministic_for_a_seed():
    def run(seed):
        torch.manual_seed(seed)
        model = Transformer(small_model_config(d_model=32, d_ff=64))
        config, run = TrainConfig(steps=8, batch_size=16, eval_every=4), RunConfig(seed=seed, device="cpu")
        return train_task(TaskConfig(eval_size=8), config, run, model=model, progress=False)[1]

    first, again, other = run(0), run(0), run(1)
    assert first.loss == again.loss and first.eval_exact_match == again.eval_exact_match
    assert first.loss != other.loss
    assert first.step == list(range(1, 9)) and first.eval_step == [4, 8] and len(first.lr) == 8
    assert 0 < first.cpu_seconds and 0 < first.seconds


def test_training_leaves_the_callers_random_numbers_as_they_were():
    """train_task seeds the initial weights and dropout with the run's seed inside the call only: what the caller draws
    afterwards is what it would have drawn without the call."""
    model_config = small_model_config(d_model=16, d_ff=32, dropout=0.1)
    torch.manual_seed(123)
    model = Transformer(model_config)
    expected = torch.rand(3)
    torch.manual_seed(123)
    model = Transformer(model_config)
    config, run = TrainConfig(steps=2, batch_size=8, eval_every=2), RunConfig(device="cpu")
    train_task(TaskConfig(eval_size=4), config, run, model=model, progress=False)
    train_task(TaskConfig(eval_size=4), config, run, progress=False)  # builds its own model too
    assert torch.equal(torch.rand(3), expected)


def test_bf16_autocast_trains_with_finite_losses():
    torch.manual_seed(0)
    model = Transformer(small_model_config(d_model=32, d_ff=64))
    _, history = train_task(
        TaskConfig(eval_size=4),
        TrainConfig(steps=3, batch_size=8, eval_every=3),
        RunConfig(bf16=True, device="cpu"),
        model=model,
        progress=False,
    )
    assert all(math.isfinite(loss) for loss in history.loss)


@pytest.mark.parametrize("task", ["copy", "reverse"])
@pytest.mark.slow
def test_the_small_configuration_learns_the_task_to_100_percent_on_1000_fresh_sequences(task):
    steps = 3 * TrainConfig().steps // 2  # a generous budget: the benchmark measures the documented one
    model, history = train_task(
        TaskConfig(task, eval_size=10),
        TrainConfig(steps=steps, eval_every=steps),
        RunConfig(device="cpu"),
        progress=False,
    )
    result = evaluate(model, task, n=1000)
    assert result.exact_match == 1.0, (result, history.eval_exact_match)
    assert result.token_accuracy == 1.0


def test_configurations_and_arguments_are_validated():
    with pytest.raises(ValueError, match="task"):
        TaskConfig(task="shuffle")
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="schedule"):
        TrainConfig(schedule="cosine")
    with pytest.raises(ValueError, match="max_seq_len must be an int >= 5; got 3"):
        TaskConfig(min_seq_len=5, max_seq_len=3)
    with pytest.raises(ValueError, match="max_seq_len must be an int >= 1; got 0"):
        TaskConfig(min_seq_len=1, max_seq_len=0)
    with pytest.raises(ValueError, match="vocab_size must be an int >= 4; got 3"):
        TaskConfig(vocab_size=3)
    with pytest.raises(ValueError, match="eval_size must be an int >= 1; got 0"):
        TaskConfig(eval_size=0)
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="clip_norm must be a positive finite number"):
            TrainConfig(clip_norm=bad)
    with pytest.raises(TypeError, match="clip_norm must be a number"):  # the same error types as TransformerConfig's
        TrainConfig(clip_norm="1")
    with pytest.raises(TypeError, match="steps must be an int; got float 1.5"):
        TrainConfig(steps=1.5)
    with pytest.raises(TypeError, match="bf16 must be a bool"):
        RunConfig(bf16="yes")
    with pytest.raises(ValueError, match="device must be one of .* got 'tpu'"):
        RunConfig(device="tpu")
    with pytest.raises(ValueError, match="save_every=5 needs save_to"):
        RunConfig(save_every=5)
    with pytest.raises(ValueError, match=r"stop_at_exact_match must be in \(0, 1\]; got 0"):
        TrainConfig(stop_at_exact_match=0)
    assert TrainConfig(clip_norm=None).clip_norm is None
    tiny = Transformer(small_model_config(d_model=8, n_heads=2, d_ff=8))
    with pytest.raises(ValueError, match="n must be an int >= 1; got 0"):
        evaluate(tiny, n=0)
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        evaluate(tiny, n=4, batch_size=0)
    padded_with_3 = Transformer(TransformerConfig(13, 13, d_model=8, n_heads=2, d_ff=8, pad_id=3))
    with pytest.raises(ValueError, match="the synthetic tasks pad with PAD_ID=0; the model was built with pad_id=3"):
        train_task("copy", model=padded_with_3, progress=False)
    with pytest.raises(ValueError, match="the synthetic tasks pad with PAD_ID=0; the model was built with pad_id=3"):
        evaluate(padded_with_3, n=4)
    with pytest.raises(ValueError, match="device"):
        select_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA"):
            select_device("cuda")
    assert select_device("cpu") == torch.device("cpu")


def test_annotated_transformer_setup_matches_its_published_numbers():
    model_config, train_config = annotated_transformer_configs()
    assert (model_config.d_model, model_config.n_heads, model_config.d_ff) == (512, 8, 2048)
    assert (model_config.n_encoder_layers, model_config.n_decoder_layers, model_config.dropout) == (2, 2, 0.1)
    assert (train_config.batch_size, train_config.steps, train_config.warmup) == (80, 400, 400)
    assert train_config.lr == pytest.approx(0.5 * 512**-0.5 * 400**-0.5)
    assert train_config.label_smoothing == 0 and train_config.clip_norm is None and train_config.schedule == "noam"


def test_the_small_model_has_under_a_240th_of_the_annotated_transformers_parameters():
    small = Transformer(small_model_config()).num_parameters()
    big = Transformer(annotated_transformer_configs()[0]).num_parameters()
    assert round(small, -3) == 61_000 and big / small > 240  # small_model_config's docstring


@pytest.mark.parametrize("progress, lines", [("text", 1), (False, 0)])
def test_text_progress_prints_one_final_line_and_none_prints_nothing(capsys, progress, lines):
    model = Transformer(small_model_config(d_model=32, d_ff=64))
    config = TrainConfig(steps=6, batch_size=8, eval_every=3)
    train_task(TaskConfig(eval_size=8), config, RunConfig(device="cpu"), model=model, progress=progress)
    out = capsys.readouterr().out
    assert len(out.splitlines()) == lines and "\r" not in out
    if lines:
        assert out.startswith("training copy: 6 steps in ") and "exact_match" in out


def _swapped(tokens: torch.Tensor, a: int, b: int) -> torch.Tensor:
    return torch.where(tokens == a, b, torch.where(tokens == b, a, tokens))


def test_the_wing_reads_padding_as_the_models_pad_id():
    """A model built with pad_id=12, trained and scored on batches padded with 12, is its pad_id=0 twin (the rows of
    ids 0 and 12 swapped in its embeddings and output layer) on the same batches padded with 0: the same losses and
    scores, and the same token counts in every data-parallel slice. Nothing in the loss, the evaluation or the sharding
    assumes PAD_ID."""
    rng = torch.Generator().manual_seed(0)
    pairs = [random_sequences(8, 12, 1, 6, rng) for _ in range(6)]  # symbols 3..11, padded with PAD_ID
    batches = {
        0: [make_batch(src, src) for src, _ in pairs],
        12: [make_batch(_swapped(src, 0, 12), _swapped(src, 0, 12), pad_id=12) for src, _ in pairs],
    }
    torch.manual_seed(0)
    model = {0: Transformer(small_model_config(d_model=16, n_heads=2, d_ff=32))}
    model[12] = Transformer(TransformerConfig(**{**model[0].config.to_dict(), "pad_id": 12}))
    weights = model[0].state_dict()
    for name in ("src_embed.weight", "tgt_embed.weight", "lm_head.weight", "lm_head.bias"):
        weights[name] = weights[name][_swapped(torch.arange(13), 0, 12)]
    model[12].load_state_dict(weights)
    assert [shard(batches[12][0], rank, 2, pad_id=12).n_tokens for rank in (0, 1)] == [
        shard(batches[0][0], rank, 2).n_tokens for rank in (0, 1)
    ]
    config = TrainConfig(steps=4, eval_every=2, eps=1e-4)
    history = {
        pad: train(
            model[pad], iter(batches[pad][:4]), batches[pad][4:], config, RunConfig(device="cpu"), progress=False
        )
        for pad in (0, 12)
    }
    assert history[12].loss == pytest.approx(history[0].loss, rel=1e-5)
    assert history[12].eval_token_accuracy == history[0].eval_token_accuracy
    assert history[12].eval_exact_match == history[0].eval_exact_match
    scores = {pad: evaluate_batches(model[pad], batches[pad]) for pad in (0, 12)}
    assert scores[12].token_accuracy == scores[0].token_accuracy and scores[12].exact_match == scores[0].exact_match
    assert scores[12].loss == pytest.approx(scores[0].loss, rel=1e-5)
    with torch.no_grad():
        model[12].lm_head.bias[EOS_ID] = 1e4  # a model that ends every output at once: shorter than the targets
    empty_and_two = make_batch(torch.tensor([[3, 4], [5, 6]]), torch.tensor([[12, 12], [7, 8]]), pad_id=12)
    assert evaluate_batches(model[12], [empty_and_two]).exact_match == 0.5  # the empty target matches, padding and all
