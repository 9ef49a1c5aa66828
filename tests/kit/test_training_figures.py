import re

import pytest
import torch

from transformer.tokens import PAD_ID
from transformer.train.loop import History
from transformer.train.tasks import task_batch
from transformer_book.viz.training import history_figure, seeds_figure, shift_figure


def test_history_figure_draws_the_loss_floor_across_the_run():
    history = History(
        step=[1, 2, 3],
        loss=[2.0, 1.0, 0.6],
        token_accuracy=[0.1, 0.5, 0.9],
        lr=[1e-3] * 3,
        eval_step=[3],
        eval_exact_match=[0.5],
        eval_token_accuracy=[0.9],
        eval_loss=[0.7],
    )
    floor = [t for t in history_figure({"run": history}, floor=0.537).data if t.name.startswith("lowest")]
    assert len(floor) == 1 and list(floor[0].y) == [0.537, 0.537] and list(floor[0].x) == [1, 3]
    assert not [t for t in history_figure({"run": history}).data if t.name.startswith("lowest")]


def test_shift_figure_labels_real_tokens_leaves_padding_to_its_colour_and_arrows_each_output_to_the_next_input():
    batch = task_batch("copy", 2, rng=torch.Generator().manual_seed(0))
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
        return History(
            step=[1, 2],
            loss=[2.0, 1.0],
            token_accuracy=[0.1, 0.5],
            lr=[1e-3] * 2,
            eval_step=[2],
            eval_exact_match=[final],
            eval_token_accuracy=[0.9],
            eval_loss=[0.7],
        )

    fig = seeds_figure({"pre-norm, warm-up": [run(0.8), run(0.6), run(0.7)], "post-norm": [run(0.2), run(0.4)]})
    assert [t.name for t in fig.data if t.showlegend is not False] == ["pre-norm, warm-up", "post-norm"]
    dots = [t for t in fig.data if t.name.endswith(": runs")]
    assert [list(t.y) for t in dots] == [[0.8, 0.6, 0.7], [0.2, 0.4]]
    bars = [t for t in fig.data if t.type == "bar"]
    assert [round(t.y[0], 6) for t in bars] == [0.7, 0.3]
    assert len({t.line.color for t in fig.data if t.type == "scatter" and t.mode == "lines"}) == 2


def test_the_book_asks_for_a_final_line_in_the_static_build_and_a_live_bar_otherwise(monkeypatch):
    import transformer_book
    from transformer_book.viz import BOOK_ENV
    from transformer_book.viz.record import StaticLine, live_bar

    monkeypatch.setenv(BOOK_ENV, "1")
    assert transformer_book.progress() is StaticLine
    monkeypatch.delenv(BOOK_ENV)
    assert transformer_book.progress() is live_bar


@pytest.mark.parametrize(
    ("language", "line"),
    [
        ("en", "training copy: 3 steps in <time> s, loss 0.500, exact_match 75.0%"),
        ("zh", "训练 copy：3 步，用时 <time> 秒，损失 0.500，完全匹配率 75.0%"),
    ],
)
def test_the_static_books_training_line_is_the_loops_in_the_readers_language(monkeypatch, capsys, language, line):
    from transformer.train.progress import FinalLine
    from transformer_book import i18n
    from transformer_book.viz.record import StaticLine

    monkeypatch.setattr(i18n, "_language", language)
    bars = [StaticLine(range(1, 4), "training copy"), FinalLine(range(1, 4), "training copy")]
    for bar in bars:
        for _ in bar:
            pass
        bar.set_postfix(loss="0.500", exact_match="75.0%")
        bar.close()
    ours, loops = (re.sub(r"\d+\.\d(?= s| 秒)", "<time>", out) for out in capsys.readouterr().out.splitlines())
    assert ours == line
    if language == "en":
        assert ours == loops
