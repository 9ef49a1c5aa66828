import math

import pytest
import torch
import torch.nn.functional as F

from transformer import Transformer, TransformerConfig
from transformer.data import PAD_ID, task_batch
from transformer.training import (
    History,
    TrainConfig,
    annotated_transformer_configs,
    evaluate,
    exact_match,
    label_smoothing_kl,
    linear_scheduler,
    noam_lr,
    noam_scheduler,
    sequence_loss,
    small_model_config,
    smoothed_targets,
    train,
    train_task,
)
from transformer.utils import select_device
from transformer_book.viz.training import history_figure, seeds_figure, shift_figure


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


def test_linear_scheduler_warms_up_to_the_peak_then_anneals_to_nearly_zero():
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=0.1)
    scheduler = linear_scheduler(optimizer, warmup=10, total_steps=100)
    rates = []
    for _ in range(100):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert rates[0] == pytest.approx(0.01) and rates[9] == pytest.approx(0.1)
    assert all(a > b for a, b in zip(rates[9:], rates[10:], strict=False)) and 0 < rates[-1] < 0.002


def test_exact_match_needs_every_token_including_the_end():
    target = torch.tensor([[5, 6, 2, 0], [7, 2, 0, 0], [3, 3, 2, 0]])
    predicted = torch.tensor([[5, 6, 2], [7, 9, 2], [3, 3, 3]])
    assert exact_match(predicted, target).tolist() == [True, False, False]


def test_training_is_deterministic_for_a_seed():
    def run(seed):
        torch.manual_seed(seed)
        model = Transformer(small_model_config(d_model=32, d_ff=64))
        config = TrainConfig(steps=8, batch_size=16, eval_every=4, eval_size=8, seed=seed, device="cpu")
        return train(model, config, progress=False)

    first, again, other = run(0), run(0), run(1)
    assert first.loss == again.loss and first.eval_exact_match == again.eval_exact_match
    assert first.loss != other.loss
    assert first.step == list(range(1, 9)) and first.eval_step == [4, 8] and len(first.lr) == 8


def test_bf16_autocast_trains_with_finite_losses():
    torch.manual_seed(0)
    model = Transformer(small_model_config(d_model=32, d_ff=64))
    history = train(model, TrainConfig(steps=3, batch_size=8, eval_every=3, eval_size=4, bf16=True, device="cpu"),
                    progress=False)
    assert all(math.isfinite(loss) for loss in history.loss)


@pytest.mark.parametrize("task", ["copy", "reverse"])
def test_the_small_configuration_learns_the_task_to_100_percent_on_1000_fresh_sequences(task):
    steps = 3 * TrainConfig().steps // 2  # a generous budget: the benchmark measures the documented one
    model, history = train_task(task, steps=steps, device="cpu", progress=False, eval_every=steps, eval_size=10)
    result = evaluate(model, task, n=1000)
    assert result.exact_match == 1.0, (result, history.eval_exact_match)
    assert result.token_accuracy == 1.0


def test_configurations_and_arguments_are_validated():
    with pytest.raises(ValueError, match="task"):
        TrainConfig(task="shuffle")
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="schedule"):
        TrainConfig(schedule="cosine")
    with pytest.raises(ValueError, match="min_len must not exceed max_len; got min_len=5, max_len=3"):
        TrainConfig(min_len=5, max_len=3)
    with pytest.raises(ValueError, match="max_len must be a positive int; got 0"):
        TrainConfig(min_len=1, max_len=0)
    with pytest.raises(ValueError, match="vocab_size must be an int above 3"):
        TrainConfig(vocab_size=3)
    for bad in (0, -1.0, float("nan"), "1"):
        with pytest.raises(ValueError, match="clip_norm must be None"):
            TrainConfig(clip_norm=bad)
    assert TrainConfig(clip_norm=None).clip_norm is None
    tiny = Transformer(small_model_config(d_model=8, n_heads=2, d_ff=8))
    with pytest.raises(ValueError, match="n must be a positive int; got 0"):
        evaluate(tiny, n=0)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        evaluate(tiny, n=4, batch_size=0)
    with pytest.raises(ValueError, match="pad"):
        train(Transformer(TransformerConfig(13, 13, d_model=8, n_heads=2, d_ff=8, pad_id=3)), progress=False)
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


def test_the_small_model_has_under_an_80th_of_the_annotated_transformers_parameters():
    small = Transformer(small_model_config()).num_parameters()
    big = Transformer(annotated_transformer_configs()[0]).num_parameters()
    assert big / small > 80  # small_model_config's docstring


def test_history_figure_draws_the_loss_floor_across_the_run():
    history = History(step=[1, 2, 3], loss=[2.0, 1.0, 0.6], token_accuracy=[0.1, 0.5, 0.9], lr=[1e-3] * 3,
                      eval_step=[3], eval_exact_match=[0.5], eval_token_accuracy=[0.9], eval_loss=[0.7])
    floor = [t for t in history_figure({"run": history}, floor=0.537).data if t.name.startswith("lowest")]
    assert len(floor) == 1 and list(floor[0].y) == [0.537, 0.537] and list(floor[0].x) == [1, 3]
    assert not [t for t in history_figure({"run": history}).data if t.name.startswith("lowest")]


def test_shift_figure_labels_real_tokens_leaves_padding_to_its_colour_and_arrows_each_output_to_the_next_input():
    batch = task_batch("copy", 2, generator=torch.Generator().manual_seed(0))
    fig = shift_figure(batch, examples=1)
    heatmap = fig.data[0]
    rows = [batch.src[0].tolist(), batch.tgt_in[0].tolist(), batch.tgt_out[0].tolist()]
    for row, shown, hover in zip(rows, heatmap.text, heatmap.customdata, strict=True):
        for token, label, name in zip(row, shown, hover, strict=False):
            assert name  # the hover names every cell, padding included
            assert (label == "") == (token == PAD_ID)
    length = int((batch.tgt_out[0] != PAD_ID).sum())
    arrows = [(a.ax, a.x) for a in fig.layout.annotations if a.showarrow]
    assert arrows == [(t, t + 1) for t in range(length - 1)]


def test_seeds_figure_draws_one_legend_entry_per_configuration_and_every_seeds_final_score():
    def run(final: float) -> History:
        return History(step=[1, 2], loss=[2.0, 1.0], token_accuracy=[0.1, 0.5], lr=[1e-3] * 2,
                       eval_step=[2], eval_exact_match=[final], eval_token_accuracy=[0.9], eval_loss=[0.7])

    fig = seeds_figure({"pre-norm, warm-up": [run(0.8), run(0.6), run(0.7)], "post-norm": [run(0.2), run(0.4)]})
    assert [t.name for t in fig.data if t.showlegend is not False] == ["pre-norm, warm-up", "post-norm"]
    dots = [t for t in fig.data if t.name.endswith(": runs")]
    assert [list(t.y) for t in dots] == [[0.8, 0.6, 0.7], [0.2, 0.4]]
    bars = [t for t in fig.data if t.type == "bar"]
    assert [round(t.y[0], 6) for t in bars] == [0.7, 0.3]
    assert len({t.line.color for t in fig.data if t.type == "scatter" and t.mode == "lines"}) == 2


@pytest.mark.parametrize("progress, lines", [("text", 1), (False, 0)])
def test_text_progress_prints_one_final_line_and_none_prints_nothing(capsys, progress, lines):
    model = Transformer(small_model_config(d_model=32, d_ff=64))
    config = TrainConfig(steps=6, batch_size=8, eval_every=3, eval_size=8, device="cpu")
    train(model, config, progress=progress)
    out = capsys.readouterr().out
    assert len(out.splitlines()) == lines and "\r" not in out
    if lines:
        assert out.startswith("training copy: 6 steps in ") and "exact_match" in out


def test_the_book_asks_for_a_final_line_in_the_static_build_and_a_live_bar_otherwise(monkeypatch):
    import transformer_book
    from transformer_book.viz import BOOK_ENV

    monkeypatch.setenv(BOOK_ENV, "1")
    assert transformer_book.progress() == "text"
    monkeypatch.delenv(BOOK_ENV)
    assert transformer_book.progress() is True
