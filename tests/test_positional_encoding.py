"""What the embeddings and positional-encoding chapters claim about the package, checked: the sinusoid table's values,
wavelengths and rotation identity, the dot product that depends only on the offset, the sqrt(d_model) scaling, the
max_len limits, learned positions, sharing embeddings, and the controls of the chapters' figures."""

import math

import plotly.graph_objects as go
import pytest
import torch
import torch.nn.functional as F
from conftest import small_model

from transformer import (
    LearnedPositionalEncoding,
    MultiHeadAttention,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    Transformer,
    TransformerConfig,
    sinusoidal_table,
)
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


# --- the sinusoid table -------------------------------------------------------------------------------------------


def test_sinusoidal_table_matches_the_formula_at_known_points():
    pe = sinusoidal_table(3, 4)
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))  # sin 0, cos 0
    # d_model = 4: pair 1 divides the position by 10000^(2/4) = 100 (the base is 10000, not 1000)
    assert torch.allclose(pe[1], torch.tensor([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]))
    pe = sinusoidal_table(2000, 512)
    for pos, i in [(7, 0), (100, 3), (1999, 128), (1234, 255)]:
        angle = pos / 10000 ** (2 * i / 512)
        assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
        assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_values_lie_in_unit_interval_and_mean_square_is_one_half():
    pe = sinusoidal_table(5000, 512)
    assert pe.abs().max() <= 1
    # every (sin, cos) pair has sin^2 + cos^2 = 1, so each row has squared length d_model / 2
    assert torch.allclose(pe.double().pow(2).sum(-1), torch.tensor(256.0, dtype=torch.float64), atol=1e-3)
    assert pe.double().pow(2).mean().item() == pytest.approx(0.5, abs=1e-6)


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


def test_longer_sinusoid_table_extends_the_shorter_one():
    assert torch.equal(sinusoidal_table(6000, 64)[:5000], sinusoidal_table(5000, 64))


def test_all_rows_of_the_default_table_are_distinct():
    pe = sinusoidal_table(5000, 512).double()
    gram = pe @ pe.T
    gram.fill_diagonal_(-math.inf)
    closest = math.sqrt(512 - 2 * gram.max().item())  # |a - b|^2 = 256 + 256 - 2 a.b
    assert closest > 3


# --- offsets: the rotation M_k ------------------------------------------------------------------------------------


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


def test_attention_without_positions_is_permutation_equivariant_and_positions_break_it():
    attention = MultiHeadAttention(16, 2, dropout=0.0).eval()
    x = torch.randn(1, 6, 16)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    with torch.no_grad():
        out, _ = attention(x, x, x)
        shuffled, _ = attention(x[:, perm], x[:, perm], x[:, perm])
        assert torch.allclose(out[:, perm], shuffled, atol=1e-6)
        positions = SinusoidalPositionalEncoding(16, max_len=8)
        y, ys = positions(x), positions(x[:, perm])
        out, _ = attention(y, y, y)
        shuffled, _ = attention(ys, ys, ys)
        assert not torch.allclose(out[:, perm], shuffled, atol=1e-3)


# --- token embeddings and the sqrt(d_model) scaling ---------------------------------------------------------------


def test_token_embedding_lookup_is_one_hot_times_table_times_sqrt_d_model():
    embed = TokenEmbedding(11, 8)
    ids = torch.tensor([[1, 4, 4, 10], [0, 2, 3, 5]])
    expected = F.one_hot(ids, 11).float() @ embed.weight * math.sqrt(8)
    assert torch.allclose(embed(ids), expected, atol=1e-6)


@pytest.mark.parametrize("d_model", [64, 512])
def test_scaled_embeddings_have_unit_variance_and_raw_weights_one_over_d_model(d_model):
    embed = TokenEmbedding(4000, d_model)
    with torch.no_grad():
        scaled = embed(torch.arange(4000)[None])
    assert embed.weight.var().item() * d_model == pytest.approx(1, abs=0.03)
    assert scaled.var().item() == pytest.approx(1, abs=0.03)


def test_embedding_gradient_reaches_only_the_rows_in_the_batch():
    embed = TokenEmbedding(20, 8)
    ids = torch.tensor([[3, 7, 7, 12]])
    embed(ids).sum().backward()
    rows = (embed.weight.grad.abs().sum(-1) > 0).nonzero().flatten().tolist()
    assert rows == [3, 7, 12]


def test_cosine_between_random_embeddings_has_std_one_over_sqrt_d():
    for d in (16, 256):
        w = TokenEmbedding(800, d).weight.detach()
        unit = w / w.norm(dim=-1, keepdim=True)
        cos = (unit @ unit.T)[~torch.eye(800, dtype=torch.bool)]
        assert cos.std().item() * math.sqrt(d) == pytest.approx(1, abs=0.06)


# --- max_len, learned positions, the model --------------------------------------------------------------------------


@pytest.mark.parametrize("module", [SinusoidalPositionalEncoding, LearnedPositionalEncoding])
def test_positional_encodings_reject_sequences_longer_than_max_len(module):
    encoding = module(16, max_len=32)
    assert encoding(torch.zeros(1, 32, 16)).shape == (1, 32, 16)
    with pytest.raises(ValueError, match="exceeds the positional table's max_len=32"):
        encoding(torch.zeros(1, 33, 16))
    with pytest.raises(ValueError, match="max_len=32"):
        encoding(torch.zeros(1, 2, 16), offset=31)  # positions 31 and 32


def test_model_rejects_source_longer_than_max_len():
    model = small_model(max_len=8)
    with pytest.raises(ValueError, match="max_len=8"):
        model(torch.ones(1, 9, dtype=torch.long), torch.ones(1, 3, dtype=torch.long))


def test_learned_positions_past_the_training_length_get_no_gradient():
    learned = LearnedPositionalEncoding(16, max_len=32)
    learned(torch.randn(4, 8, 16)).pow(2).sum().backward()
    rows = (learned.weight.grad.abs().sum(-1) > 0).nonzero().flatten().tolist()
    assert rows == list(range(8))


def test_learned_positions_add_max_len_times_d_model_parameters():
    base = dict(src_vocab_size=50, tgt_vocab_size=50, d_model=32, n_heads=4, d_ff=64, max_len=100)
    sinusoidal = Transformer(TransformerConfig(**base)).num_parameters()
    learned = Transformer(TransformerConfig(**base, positional_encoding="learned"))
    assert isinstance(learned.positional, LearnedPositionalEncoding)
    assert learned.num_parameters() - sinusoidal == 100 * 32


def test_embed_source_is_scaled_embedding_plus_position_and_embed_target_honours_offset():
    model = small_model()
    src = torch.randint(1, 17, (2, 7))
    tgt = torch.randint(1, 19, (2, 6))
    with torch.no_grad():
        expected = model.src_embed(src) + sinusoidal_table(64, 32)[:7]
        assert torch.allclose(model.embed_source(src), expected)
        whole = model.embed_target(tgt)
        assert torch.allclose(model.embed_target(tgt[:, 3:5], offset=3), whole[:, 3:5])


def test_sharing_and_tying_each_save_one_embedding_matrix():
    def count(share: bool, tie: bool) -> Transformer:
        config = TransformerConfig(300, 300, d_model=32, n_heads=4, d_ff=64, share_embeddings=share,
                                   tie_output_embedding=tie)
        return Transformer(config)

    models = {(s, t): count(s, t) for s in (False, True) for t in (False, True)}
    counts = {key: model.num_parameters() for key, model in models.items()}
    matrix = 300 * 32
    assert counts[False, False] - counts[True, False] == matrix
    assert counts[False, False] - counts[False, True] == matrix
    assert counts[False, False] - counts[True, True] == 2 * matrix
    both = models[True, True]
    assert both.src_embed is both.tgt_embed and both.generator.weight is both.tgt_embed.weight
    embedding, rest = emb_viz.embedding_parameters(both)
    assert embedding == matrix and embedding + rest == counts[True, True]


def test_tied_output_projection_sends_a_gradient_to_every_embedding_row():
    rows = {}
    for tie in (False, True):
        config = TransformerConfig(30, 30, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1,
                                   dropout=0.0, share_embeddings=True, tie_output_embedding=tie)
        model = Transformer(config)
        tokens = torch.tensor([[1, 5, 6, 7, 2]])
        logits = model(tokens, tokens[:, :-1])
        F.cross_entropy(logits.reshape(-1, 30), tokens[:, 1:].reshape(-1)).backward()
        rows[tie] = int((model.tgt_embed.weight.grad.abs().sum(-1) > 0).sum())
    assert rows[False] <= 5 and rows[True] == 30


def test_share_embeddings_needs_one_vocabulary():
    with pytest.raises(ValueError, match="share_embeddings needs one vocabulary"):
        TransformerConfig(100, 90, share_embeddings=True)


# --- the chapters' figures ----------------------------------------------------------------------------------------


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
        parts = {id(p): p.numel() for p in (model.src_embed.weight, model.tgt_embed.weight, model.generator.weight)}
        assert embedding == sum(parts.values())
    assert emb_viz.embedding_parameters(models["shared"])[0] < emb_viz.embedding_parameters(models["separate"])[0]
