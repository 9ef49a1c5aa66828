"""The positional-encoding and embedding chapters' kit: the offset rotation M_k and its fit, the figures' controls, and
the parameter count of shared embeddings."""

import math

import plotly.graph_objects as go
import pytest
import torch
from conftest import small_model

from transformer import Transformer, TransformerConfig
from transformer.embeddings import LearnedPositionalEncoding, TokenEmbedding, sinusoidal_table
from transformer_book.viz import embeddings as emb_viz
from transformer_book.viz import positional as pos_viz


def rotation_by_hand(k: int, d_model: int) -> torch.Tensor:
    """M_k written out entry by entry, independently of ``offset_matrix``."""
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        angle = k / 10000 ** (2 * i / d_model)
        c, s = math.cos(angle), math.sin(angle)
        m[2 * i, 2 * i], m[2 * i, 2 * i + 1] = c, s
        m[2 * i + 1, 2 * i], m[2 * i + 1, 2 * i + 1] = -s, c
    return m


def test_frequencies_and_wavelengths_form_a_geometric_progression_from_2pi_towards_10000_2pi():
    d = 512
    omega, lam = pos_viz.frequencies(d), pos_viz.wavelengths(d)
    assert omega.shape == lam.shape == (d // 2,)
    assert torch.allclose(lam[1:] / lam[:-1], torch.tensor(10000 ** (2 / d), dtype=torch.float64))
    assert lam[0].item() == pytest.approx(2 * math.pi)
    assert lam[-1].item() == pytest.approx(2 * math.pi * 10000 ** ((d - 2) / d))
    assert lam[-1] < 2 * math.pi * 10000
    pos = torch.arange(5000, dtype=torch.float64)[:, None]
    pe = sinusoidal_table(5000, d).double()
    assert torch.allclose(pe[:, 0::2], torch.sin(pos * omega), atol=1e-6)
    assert torch.allclose(pe[:, 1::2], torch.cos(pos * omega), atol=1e-6)


@pytest.mark.parametrize("d_model", [2, 16, 512])
@pytest.mark.parametrize("k", [0, 1, 7, 100, 1000])
def test_offset_matrix_maps_pe_pos_to_pe_pos_plus_k_at_every_position(k, d_model):
    length = 5000
    pe = sinusoidal_table(length, d_model).double()
    m = pos_viz.offset_matrix(k, d_model)
    assert torch.allclose(m, rotation_by_hand(k, d_model), atol=1e-12)
    shifted = pe[: length - k] @ m.T  # row pos: M_k PE(pos)
    assert (shifted - pe[k:]).abs().max() < 1e-5


def test_offset_matrix_is_a_block_diagonal_rotation_that_composes():
    d = 64
    m3, m4 = pos_viz.offset_matrix(3, d), pos_viz.offset_matrix(4, d)
    eye = torch.eye(d, dtype=torch.float64)
    assert torch.allclose(m3 @ m3.T, eye)
    assert torch.allclose(m3 @ m4, pos_viz.offset_matrix(7, d))
    assert torch.allclose(pos_viz.offset_matrix(-3, d), m3.T)
    assert torch.allclose(pos_viz.offset_matrix(0, d), eye)
    blocks = torch.block_diag(*[torch.ones(2, 2)] * (d // 2)).bool()
    assert torch.all(m3[~blocks] == 0)


def test_offset_rotation_figure_pairs_turn_from_many_turns_to_under_20_degrees_over_30_offsets():
    omega = pos_viz.frequencies(64)
    assert math.degrees(30 * omega[0]) > 360 * 4  # pair 0: a full turn every 2 pi positions
    assert 17 < math.degrees(30 * omega[16]) < 20  # pair 16: omega = 10000^(-32/64) = 0.01


def test_offset_matrix_rejects_odd_d_model():
    with pytest.raises(ValueError, match="even"):
        pos_viz.offset_matrix(1, 15)


def test_least_squares_fit_on_the_table_recovers_the_offset_matrix():
    d, length, k = 16, 5000, 5
    pe = sinusoidal_table(length, d).double()
    fitted = torch.linalg.lstsq(pe[:-k], pe[k:]).solution.T
    assert torch.allclose(fitted, pos_viz.offset_matrix(k, d), atol=1e-5)


def test_dot_product_depends_only_on_the_offset_and_is_symmetric():
    d = 128
    pe = sinusoidal_table(3000, d).double()
    offsets = torch.arange(-40, 41)
    formula = torch.cos(offsets[:, None].double() * pos_viz.frequencies(d)).sum(-1)
    for pos in (40, 41, 500, 2959):
        assert torch.allclose(pe[pos + offsets] @ pe[pos], formula, atol=1e-4)
    assert torch.allclose(formula, formula.flip(0))
    assert formula[40].item() == pytest.approx(d / 2)  # k = 0
    assert formula.argmax().item() == 40


def test_sharing_and_tying_each_save_one_embedding_matrix():
    def count(share: bool, tie: bool) -> Transformer:
        config = TransformerConfig(
            300, 300, d_model=32, n_heads=4, d_ff=64, share_embeddings=share, tie_output_embedding=tie
        )
        return Transformer(config)

    models = {(s, t): count(s, t) for s in (False, True) for t in (False, True)}
    counts = {key: model.num_parameters() for key, model in models.items()}
    matrix = 300 * 32
    assert counts[False, False] - counts[True, False] == matrix
    assert counts[False, False] - counts[False, True] == matrix
    assert counts[False, False] - counts[True, True] == 2 * matrix
    both = models[True, True]
    assert both.src_embed is both.tgt_embed and both.lm_head.weight is both.tgt_embed.weight
    embedding, rest = emb_viz.embedding_parameters(both)
    assert embedding == matrix and embedding + rest == counts[True, True]


def _size_kb(fig: go.Figure) -> float:
    return len(fig.to_json()) / 1024


def test_sinusoid_table_figure_has_one_heatmap_and_one_button_per_d_model():
    fig = pos_viz.sinusoid_table_figure(d_models=(16, 64), n_positions=40)
    assert [trace.type for trace in fig.data] == ["heatmap", "heatmap"]
    assert [len(trace.z[0]) for trace in fig.data] == [16, 64]
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["d_model = 16", "d_model = 64"]
    assert buttons[1].args[0]["visible"] == [False, True]
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-1, 1)
    assert _size_kb(pos_viz.sinusoid_table_figure()) < 250


def test_wavelength_figure_slider_states_hold_each_pairs_sinusoid():
    d = 32
    fig = pos_viz.wavelength_figure(d_model=d, n_positions=40)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == d // 2
    i = 5
    args = steps[i].args
    x_int = list(fig.data[2].x)
    assert args[0]["y"][2] == pytest.approx(sinusoidal_table(41, d)[:, 2 * i].tolist(), abs=1e-3)
    assert len(args[0]["y"][2]) == len(x_int)
    assert f"{pos_viz.wavelengths(d)[i].item():,.1f}" in args[1]["title.text"]
    assert fig.layout.yaxis2.type == "log"
    assert _size_kb(fig) < 150


def test_offset_rotation_figure_has_one_frame_per_offset_and_a_play_button():
    fig = pos_viz.offset_rotation_figure(d_model=64, pos=3, pairs=(0, 4), max_offset=10)
    assert [frame.name for frame in fig.frames] == [str(k) for k in range(11)]
    assert len(fig.layout.sliders[0].steps) == 11
    assert fig.layout.updatemenus[0].buttons[0].method == "animate"
    # frame k puts PE(pos + k) of pair 4 at (cos, sin) of (pos + k) * omega_4
    omega = pos_viz.frequencies(64)[4].item()
    last = fig.frames[7].data[3]  # pair 4's PE(pos + k) marker
    assert last.x[0] == pytest.approx(math.cos(10 * omega), abs=1e-3)
    assert last.y[0] == pytest.approx(math.sin(10 * omega), abs=1e-3)
    assert _size_kb(pos_viz.offset_rotation_figure()) < 150


def test_offset_matrix_figure_slider_shows_m_k():
    fig = pos_viz.offset_matrix_figure(d_model=8, offsets=range(4))
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 4
    shown = torch.tensor(steps[3].args[0]["z"][0], dtype=torch.float64)
    assert torch.allclose(shown, pos_viz.offset_matrix(3, 8), atol=1e-3)


def test_offset_dot_product_figure_has_a_dropdown_over_d_model():
    fig = pos_viz.offset_dot_product_figure(d_models=(16, 64), n_positions=20, max_offset=10, positions=(10, 300))
    per_d = 2 + 2  # heatmap, formula, one trace per position
    assert len(fig.data) == 2 * per_d
    buttons = fig.layout.updatemenus[0].buttons
    assert buttons[1].args[0]["visible"] == [False] * per_d + [True] * per_d
    formula, marker = fig.data[1], fig.data[3]
    assert list(marker.y) == pytest.approx(list(formula.y), abs=1e-3)  # pos = 300 lies on the curve
    with pytest.raises(ValueError, match="max_offset"):
        pos_viz.offset_dot_product_figure(max_offset=10, positions=(5,))


def test_position_similarity_figure_switches_between_tables():
    tables = {"sinusoidal": sinusoidal_table(20, 16), "learned": LearnedPositionalEncoding(16, 20).weight}
    fig = pos_viz.position_similarity_figure(tables, n_positions=20)
    assert len(fig.data) == 2 and [b.label for b in fig.layout.updatemenus[0].buttons] == ["sinusoidal", "learned"]
    assert fig.data[0].z[3][3] == pytest.approx(1, abs=1e-5)


def test_lookup_figure_slider_frames_the_looked_up_rows():
    vocab = ["<pad>", "<bos>", "the", "cat"]
    fig = emb_viz.lookup_figure(TokenEmbedding(4, 6).weight, [1, 2, 3, 2], vocab)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 4
    table_box, result_box = steps[3].args[0]["shapes"]
    assert (table_box["y0"], table_box["y1"]) == (1.5, 2.5)  # id 2
    assert (result_box["y0"], result_box["y1"]) == (2.5, 3.5)  # position 3
    assert "&lt;pad&gt;" in fig.data[0].y[0]  # token labels are HTML-escaped
    with pytest.raises(ValueError, match="ids"):
        emb_viz.lookup_figure(TokenEmbedding(4, 6).weight, [4], vocab)


def test_embedding_scale_figure_has_a_dropdown_over_d_model_and_measured_mean_squares():
    fig = emb_viz.embedding_scale_figure(d_models=(16, 256), vocab_size=500, n_positions=200)
    assert len(fig.layout.updatemenus[0].buttons) == 2
    mean_squares = {trace.name: list(trace.y) for trace in fig.data[-3:]}
    assert mean_squares["raw weights"] == pytest.approx([1 / 16, 1 / 256], rel=0.1)
    assert mean_squares["weights × √d_model"] == pytest.approx([1, 1], rel=0.1)
    assert mean_squares["positional encoding"] == pytest.approx([0.5, 0.5], abs=1e-6)


def test_similarity_figure_uses_a_diverging_scale_centred_at_zero():
    w = torch.randn(5, 8)
    fig = emb_viz.similarity_figure({"a": w, "b": -w}, ["<s>", "x", "y", "z", "x"])
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-1, 1)
    assert len(fig.layout.updatemenus[0].buttons) == 2
    assert fig.data[0].x[0] == "&lt;s&gt;" and len(set(fig.data[0].x)) == 5  # escaped, repeated tokens kept apart
    with pytest.raises(ValueError, match="labels"):
        emb_viz.similarity_figure({"a": w}, ["x"])


def test_embedding_parameters_counts_a_shared_matrix_once():
    models = {"separate": small_model(), "shared": small_model(src_vocab_size=19, share_embeddings=True)}
    for model in models.values():
        embedding, rest = emb_viz.embedding_parameters(model)
        assert embedding + rest == model.num_parameters()
        parts = {id(p): p.numel() for p in (model.src_embed.weight, model.tgt_embed.weight, model.lm_head.weight)}
        assert embedding == sum(parts.values())
    assert emb_viz.embedding_parameters(models["shared"])[0] < emb_viz.embedding_parameters(models["separate"])[0]
