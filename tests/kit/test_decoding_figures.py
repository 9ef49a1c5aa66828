"""The decoding chapter's beam figure (transformer_book.viz.decoding.beam_figure), drawn from beam_steps: a node per
live hypothesis and per kept finished one, the returned hypothesis and its path in red."""

import copy

import torch

from transformer import Transformer, TransformerConfig, beam_search
from transformer.decoding import beam_steps
from transformer.tokens import EOS_ID, PAD_ID
from transformer_book.viz.decoding import beam_figure
from transformer_book.viz.training import KIND_COLOURS


def test_beam_figure_draws_every_live_and_kept_finished_hypothesis_and_the_returned_one_in_red():
    torch.manual_seed(0)
    model = Transformer(
        TransformerConfig(9, 9, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0)
    ).eval()
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.lm_head.bias[EOS_ID] += 2.0  # hypotheses finish at different steps
    src = torch.tensor([[3, 4, 5, 6]])
    steps = list(beam_steps(model, src, beam_size=3, max_new_tokens=6))
    tokens, _ = beam_search(model, src, beam_size=3, max_new_tokens=6)
    fig = beam_figure(steps, title="beam")
    edges, best_edges, nodes = fig.data
    live = sum(int(torch.isfinite(s.scores).sum()) for s in steps)
    finished = int(torch.isfinite(steps[-1].finished_scores).sum())
    assert len(nodes.x) == 1 + live + finished  # BOS, the live hypotheses, the kept finished ones
    returned = [t for t in tokens[0].tolist() if t != PAD_ID]
    red = [i for i, colour in enumerate(nodes.marker.color) if colour == KIND_COLOURS["eos"]]
    assert len(red) == len(returned)  # its path of live hypotheses, then itself in the finished rows
    assert max(nodes.y[i] for i in red) == 3 and nodes.x[red[-1]] == len(returned)  # "finished 1", where it ended
    assert len(best_edges.x) == 3 * len(returned)  # an edge into every red node
    assert list(fig.layout.yaxis.ticktext) == ["live 1", "live 2", "live 3", "finished 1", "finished 2", "finished 3"]
    assert any("penalised score" in h for h in nodes.hovertext) and any("log-probability" in h for h in nodes.hovertext)
    assert edges.x and returned[-1] == EOS_ID  # it said </s>, at the step where its node is drawn
