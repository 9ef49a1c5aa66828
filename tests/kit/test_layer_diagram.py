"""The layer diagram of the chapter "The full model" (transformer_book/viz/layer_diagram.py): one state per entry of its
menu, each highlighting one sub-layer with its own numbers, and a drawing whose arrows never run over a title."""

from transformer import TransformerConfig
from transformer_book.viz import model as chapter
from transformer_book.viz.layer_diagram import layer_diagram

BASE = TransformerConfig(37_000, 37_000, share_embeddings=True, tie_output_embedding=True)


def test_the_chapter_s_figures_module_gives_the_chapter_the_layer_diagram():
    assert chapter.layer_diagram is layer_diagram  # book/06_model.ipynb calls viz.layer_diagram(base)


def test_layer_diagram_has_one_state_per_menu_entry_and_highlights_one_role():
    fig = layer_diagram(BASE)
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons][-1] == "pre-norm instead" and len(buttons) == 7
    cross = next(b for b in buttons if b.label == "cross-attention")
    shapes = cross.args[0]["shapes"]
    strong = [s for s in shapes if s.get("type") == "rect" and s.get("opacity") == 1.0 and s["line"]["width"] == 2.5]
    assert len(strong) == 1  # one cross-attention box, in the decoder
    text = " ".join(a["text"] for a in cross.args[0]["annotations"])
    assert "1,050,624" in text  # 4 d^2 + 4 d for d = 512


def test_no_arrow_of_the_layer_diagram_strikes_through_a_layer_s_title():
    """The layer's output runs up through its frame's title: in every state the title is drawn after (over) every arrow
    that passes its height in its column, on a background."""
    for button in layer_diagram(BASE).layout.updatemenus[0].buttons:
        notes = button.args[0]["annotations"]
        for i, title in enumerate(n for n in notes if "(× N)" in n.get("text", "")):
            at = notes.index(title)
            crossing = [
                k
                for k, n in enumerate(notes)
                if n.get("showarrow")
                and n["ax"] == n["x"]
                and title["x"] < n["x"] < title["x"] + 4
                and min(n["ay"], n["y"]) < title["y"] < max(n["ay"], n["y"])
            ]
            assert crossing, f"{button.label}: no arrow through title {i}: the test no longer sees the layout"
            assert max(crossing) < at and title.get("bgcolor"), f"{button.label}: an arrow over {title['text']!r}"
