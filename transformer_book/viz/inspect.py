"""Look inside a trained model: bertviz views, every head at once, attention over training, head ablation.

Everything here reads what :meth:`transformer.Transformer.attention_maps` returns (weights taken before dropout) and
never touches the model's code. Figures are plotly ``go.Figure`` objects whose controls (dropdowns, sliders, play
buttons) run in the browser, so they work in the static book without a kernel.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

import plotly.graph_objects as go
import torch
from IPython.display import HTML
from plotly.subplots import make_subplots
from torch import Tensor

from transformer.decoding import greedy_decode
from transformer.model import Transformer
from transformer.tokens import BOS_ID, EOS_ID, FIRST_SYMBOL
from transformer.train.tasks import token_label

from ..ablation import KINDS, AblationResult
from ..i18n import tr, translatable
from .attention import token_labels
from .controls import MENU_LABEL, dropdown
from .record import MIMETYPE, in_record_mode, static_outputs
from .render import in_static_build
from .style import MAX_WIDTH, WEIGHTS_SCALE, row_label_spacing, style

KIND_TITLES = {  # shown through tr()
    "encoder": translatable("encoder self-attention"),
    "decoder": translatable("decoder self-attention (masked)"),
    "cross": translatable("cross-attention (decoder to encoder)"),
}
BERTVIZ_MODEL_VIEW_WIDTH = 970  # bertviz's model_view draws into an SVG of this fixed width (pixels)
BERTVIZ_THUMBNAIL_WIDTH = 110  # pixels per head that fit_width gives model_view's thumbnails instead
_BERTVIZ_AXIS_WIDTH = (
    38  # model_view's layer labels, left of the thumbnails (its HEADING_TEXT_SIZE + paddings + TEXT_SIZE)
)
_BERTVIZ_VIEWS = {  # what each bertviz view shows, for assistive technology (shown through tr())
    "head": translatable(
        "bertviz head view: lines from each token on the left to the tokens it attends to on the right, one colour per head"
    ),
    "model": translatable("bertviz model view: the attention of every layer (rows) and head (columns) as a thumbnail"),
}
BERTVIZ_NAMES = {"encoder": "Encoder", "decoder": "Decoder", "cross": "Cross"}  # bertviz's Attention menu entries
# What a reader reads of a bertviz view's menus, shown through tr(): their captions and the Attention menu's entries.
_BERTVIZ_CAPTIONS = {"Layer": translatable("Layer:"), "Attention": translatable("Attention:")}
_BERTVIZ_ENTRIES = (translatable("Encoder"), translatable("Decoder"), translatable("Cross"))  # BERTVIZ_NAMES' values
_BERTVIZ_FIRST = '"default_filter": "0"'  # where bertviz's views start: the first attention type given
_REQUIRE_TAG = re.compile(r'<script src="[^"]*/require(?:\.min)?\.js"></script>')  # bertviz's RequireJS from its CDN
_VIEW_SCRIPT = re.compile(r'(<script type="text/javascript">\n)(.*?requirejs\(.*?)(\n</script>)', re.S)
# d3 and jQuery, the versions the static book vendors (bertviz asks for d3 5.7.0 and jQuery 2.0.0; npm's last 2.x is
# 2.2.4), shipped with the package (their licences beside them) for live views: module name -> file
_LIBRARIES = {"d3": "d3.min.js", "jquery": "jquery.min.js"}
# A live view's script: d3 and jQuery evaluated inside it with ``define``, ``module`` and ``exports`` hidden (so that
# neither registers with a page's RequireJS nor sets a global: jQuery returns itself to ``module.exports``, d3 sets
# ``this.d3``), then bertviz's script, unchanged, with ``require``/``requirejs`` standing for RequireJS. bertviz's
# script looks its elements up in the document, so it runs once the view is in the page (the classic Notebook runs
# an output's scripts before it inserts the output).
_SELF_CONTAINED = """(function () {
var libraries = {}, jq = {exports: {}};
(function (define, module, exports) {
__D3__
}).call(libraries);
(function (define, module, exports) {
__JQUERY__
}).call(libraries, undefined, jq, jq.exports);
var modules = {d3: libraries.d3, jquery: jq.exports}, tries = 0;
var require = {config: function () {}};
var requirejs = function (names, draw) {
  (function whenInPage() {
    if (document.getElementById("__ROOT__")) draw.apply(null, names.map(function (name) { return modules[name]; }));
    else if (++tries < 1200) setTimeout(whenInPage, 50);
  })();
};
__VIEW__
})();"""
_DECIMALS = 3  # bertviz weights
_FIGURE_DECIMALS = 2  # plotly heatmaps (the hover shows two decimals too)


@dataclass
class AttentionExample:
    """The attention maps of one (source, target) pair, padding trimmed: ``maps[kind]`` holds one
    ``(H, T_q, T_k)`` tensor per layer, with ``T_q, T_k`` the lengths of the token lists (encoder: source x source,
    decoder: target x target, cross: target x source)."""

    name: str
    src_tokens: list[str]
    tgt_tokens: list[str]
    maps: dict[str, list[Tensor]]

    @classmethod
    def from_maps(
        cls,
        maps: Mapping[str, Sequence[Tensor]],
        src_tokens: Sequence[str],
        tgt_tokens: Sequence[str],
        item: int = 0,
        name: str = "",
    ) -> AttentionExample:
        """Take batch item ``item`` of ``model.attention_maps(src, tgt)`` and drop its padding: the token lists give
        the real lengths (positions beyond them are padding)."""
        src_tokens, tgt_tokens = list(src_tokens), list(tgt_tokens)
        lengths = {
            "encoder": (src_tokens, src_tokens),
            "decoder": (tgt_tokens, tgt_tokens),
            "cross": (tgt_tokens, src_tokens),
        }
        trimmed = {}
        for kind in KINDS:
            queries, keys = lengths[kind]
            layers = []
            for weights in maps[kind]:  # (B, H, T_q, T_k)
                if weights.dim() != 4 or weights.size(2) < len(queries) or weights.size(3) < len(keys):
                    raise ValueError(
                        f"{kind} maps of shape {tuple(weights.shape)} do not fit {len(queries)} query and "
                        f"{len(keys)} key tokens; expected (batch, heads, >= {len(queries)}, >= {len(keys)})"
                    )
                layers.append(weights[item, :, : len(queries), : len(keys)].detach().float().cpu())  # (H, T_q, T_k)
            trimmed[kind] = layers
        return cls(name, src_tokens, tgt_tokens, trimmed)

    def bertviz_arguments(self, kinds: Sequence[str] = KINDS) -> dict:
        """Keyword arguments for bertviz's ``head_view`` and ``model_view``: per layer a ``(1, H, T_q, T_k)`` tensor
        (bertviz wants batch size 1), rounded so the page stays small, and the two token lists."""
        names = {"encoder": "encoder_attention", "decoder": "decoder_attention", "cross": "cross_attention"}
        arguments: dict = {names[kind]: [_rounded(w)[None] for w in self.maps[kind]] for kind in kinds}
        arguments.update(encoder_tokens=list(self.src_tokens), decoder_tokens=list(self.tgt_tokens))
        return arguments


class BertvizView(HTML):
    """A bertviz view that draws with no network wherever it is shown: JupyterLab, the classic Notebook, Colab and the
    static book.

    bertviz's HTML loads RequireJS, and through it d3 and jQuery, from a CDN when the view is drawn: with no network
    nothing is drawn (JupyterLab's page has no RequireJS of its own: ``require is not defined``). ``data`` is the view
    as bertviz wrote it (with this module's changes), which the static book shows: its pages load the book's own
    RequireJS, d3 and jQuery (``book/_ext/offline_assets.py`` points bertviz's CDN addresses at them), so each view
    stays a few kilobytes. Shown in a live kernel, the view carries d3 and jQuery itself instead
    (:func:`self_contained`, about 320 kB), needs no RequireJS and leaves the page's own libraries and RequireJS alone.
    A kernel that records the static book's outputs (:mod:`.record`) records ``data`` beside it.
    """

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        if in_static_build():
            return {"text/html": self.data}
        bundle = {"text/html": self_contained(self.data)}
        if in_record_mode():
            from IPython.display import display

            bundle[MIMETYPE] = {"outputs": static_outputs(lambda: display(self)), "widget_follows": False}
        return bundle


@cache
def _library(name: str) -> str:
    """The text of a JavaScript library shipped with the package (``vendor/``), safe inside a ``<script>`` element."""
    return (
        (files(__package__) / "vendor" / _LIBRARIES[name]).read_text(encoding="utf-8").replace("</script", "<\\/script")
    )


def self_contained(page: str) -> str:
    """The HTML of a bertviz view (returned with ``html_action="return"``) that draws with no network and no RequireJS:
    bertviz's ``<script>`` that loads RequireJS from its CDN is dropped and the view's script carries d3 and jQuery
    (see :data:`_SELF_CONTAINED`). Raises ``ValueError`` for HTML that is not such a view."""
    root = re.search(r'<div id="(bertviz-[0-9a-f]+)"', page)
    script = _VIEW_SCRIPT.search(page)
    if root is None or script is None:
        raise ValueError(
            "expected a bertviz view's HTML (html_action='return'), with its <div id='bertviz-...'> and script"
        )
    parts = {"D3": _library("d3"), "JQUERY": _library("jquery"), "ROOT": root.group(1), "VIEW": script.group(2)}
    body = re.sub(r"__(D3|JQUERY|ROOT|VIEW)__", lambda m: parts[m.group(1)], _SELF_CONTAINED)
    page = page[: script.start(2)] + body + page[script.end(2) :]
    return _REQUIRE_TAG.sub("", page)


def fit_width(view: HTML, width: int = 680) -> BertvizView:
    """A bertviz ``model_view`` returned with ``html_action="return"``, drawn to fit ``width`` pixels.

    ``model_view`` draws a fixed 970-pixel-wide picture whatever the number of heads, wider than the book's column
    (which would clip its right-hand heads) and far wider than a phone. Its thumbnails are narrowed to
    :data:`BERTVIZ_THUMBNAIL_WIDTH` pixels a head (four heads: 478 pixels) and the view is zoomed (CSS ``zoom``) to
    ``width``; in the static book, ``figures.js`` fits the zoom to the reader's column (``data-width``), down to a
    zoom that keeps the text readable, below which the frame scrolls sideways inside itself, never the page. The
    view is made :func:`accessible` too.
    """
    page = view.data
    heads = re.search(r'"total_heads": (\d+)', page)
    drawn = BERTVIZ_MODEL_VIEW_WIDTH
    if heads and f"const DIV_WIDTH = {BERTVIZ_MODEL_VIEW_WIDTH};" in page:
        drawn = min(BERTVIZ_MODEL_VIEW_WIDTH, _BERTVIZ_AXIS_WIDTH + BERTVIZ_THUMBNAIL_WIDTH * int(heads.group(1)))
        page = page.replace(f"const DIV_WIDTH = {BERTVIZ_MODEL_VIEW_WIDTH};", f"const DIV_WIDTH = {drawn};")
    scale = min(1.0, width / drawn)
    return BertvizView(
        f'<div class="bertviz-frame"><div class="bertviz-fit" data-width="{drawn}" '
        f'style="zoom: {scale:.3f}">{accessible(HTML(page)).data}</div></div>'
    )


def accessible(view: HTML) -> HTML:
    """A bertviz view returned with ``html_action="return"``, usable with assistive technology and beside others.

    bertviz gives every view's menus and drawing the same ids (``layer``, ``filter``, ``vis``), so a page with two
    views has duplicate ids, and its menus have no label. Here each id is prefixed with the view's own unique id (in
    the view's HTML and in the selectors of its script), each menu is wrapped in a ``<label>`` with its caption (the
    captions and the menu's entries in the reader's language), and the view gets ``role="figure"`` and a name saying
    what it draws. (The static book's ``figures.js`` also makes the
    view's head squares and thumbnails reachable and operable from the keyboard.) Idempotent.
    """
    page = view.data
    root = re.search(r'<div id="(bertviz-[0-9a-f]+)"', page)
    if root is None:
        return HTML(page)
    if 'class="bertviz-view"' in page:
        return BertvizView(page)
    name = tr(_BERTVIZ_VIEWS["head" if 'id="layer"' in page else "model"])
    vid = root.group(1)
    page = re.sub(
        r'(Layer|Attention): (<select id=")(layer|filter)(">.*?</select>)',
        lambda m: f"<label>{tr(_BERTVIZ_CAPTIONS[m.group(1)])} {m.group(2)}{vid}-{m.group(3)}{m.group(4)}</label>",
        page,
        flags=re.S,
    )
    entries = "|".join(_BERTVIZ_ENTRIES)
    page = re.sub(
        rf"(<option value=\"\d+\"(?: selected)?>)({entries})</option>", lambda m: f"{m[1]}{tr(m[2])}</option>", page
    )
    page = page.replace("<div id='vis'></div>", f"<div id='{vid}-vis' class='bertviz-vis'></div>")
    for part in ("layer", "filter", "vis"):
        page = page.replace(f"#${{config.rootDivId}} #{part}", f"#${{config.rootDivId}}-{part}")
    return BertvizView(f'<div class="bertviz-view" role="figure" aria-label="{html.escape(name)}">{page}</div>')


def open_on(view: HTML, kind: str) -> BertvizView:
    """A bertviz view returned with ``html_action="return"``, opening on attention type ``kind`` instead of the first,
    and made :func:`accessible`.

    Given several attention types, ``head_view`` and ``model_view`` show an *Attention* menu that always starts on
    the first (the encoder, when given); bertviz has no argument for another start. This selects ``kind``'s menu
    entry and points the view's ``default_filter`` at it, so the page opens on, say, cross-attention and the menu
    still offers the others.
    """
    if kind not in BERTVIZ_NAMES:
        raise ValueError(f"kind must be one of {list(BERTVIZ_NAMES)}; got {kind!r}")
    name, page = BERTVIZ_NAMES[kind], view.data
    option = re.search(rf'<option value="(\d+)">{name}</option>', page)
    if option is None or _BERTVIZ_FIRST not in page:
        raise ValueError(f"expected a bertviz view with {name!r} in its Attention menu; got one without it")
    index = option.group(1)
    page = page.replace(option.group(0), f'<option value="{index}" selected>{name}</option>', 1)
    return accessible(HTML(page.replace(_BERTVIZ_FIRST, f'"default_filter": "{index}"')))


def bertviz_arguments(
    maps: Mapping[str, Sequence[Tensor]],
    src_tokens: Sequence[str],
    tgt_tokens: Sequence[str],
    item: int = 0,
    kinds: Sequence[str] = KINDS,
) -> dict:
    """From ``model.attention_maps(src, tgt)`` straight to ``head_view(**args)`` / ``model_view(**args)``: one batch
    item, padding trimmed (the token lists give the lengths)."""
    return AttentionExample.from_maps(maps, src_tokens, tgt_tokens, item).bertviz_arguments(kinds)


@torch.no_grad()
def decoded_example(model: Transformer, symbols: Sequence[int], name: str = "") -> AttentionExample:
    """What ``model`` attends to while it answers ``symbols``: greedy-decode the output, then take the attention maps
    of the source and the decoder input it produced (``BOS`` + the output, up to the position that says ``EOS``)."""
    device = next(model.parameters()).device
    src = torch.tensor([list(symbols)], dtype=torch.long, device=device)  # (1, S)
    output = greedy_decode(model, src, max_new_tokens=len(symbols) + 2)[0].tolist()  # (L,)
    output = output[: output.index(EOS_ID)] if EOS_ID in output else output
    tgt_in = torch.tensor([[BOS_ID, *output]], dtype=torch.long, device=device)  # (1, T)
    maps = model.attention_maps(src, tgt_in)
    src_tokens = [token_label(i) for i in symbols]
    tgt_tokens = [token_label(i) for i in tgt_in[0].tolist()]
    return AttentionExample.from_maps(maps, src_tokens, tgt_tokens, name=name)


class AttentionRecorder:
    """Snapshots of one example's attention maps while a model trains, taken without touching the training loop.

    Inside ``with AttentionRecorder(model, ...) as recorder: train(model, ...)``, a forward pre-hook (PyTorch's
    ``register_forward_pre_hook``) counts the model's forward passes in training mode, one per optimisation step. The
    pass of step ``k + 1`` starts after ``k`` updates, so when ``k`` is in ``steps`` the hook first takes the maps of
    the example (in eval mode, without gradients) as they are after ``k`` updates. On exit it also takes the final
    maps when their step was asked for. ``recorder.examples`` are the snapshots in step order, ``recorder.steps``
    their steps.
    """

    def __init__(
        self,
        model: Transformer,
        src: Sequence[int],
        tgt_in: Sequence[int],
        steps: Sequence[int],
        src_tokens: Sequence[str] | None = None,
        tgt_tokens: Sequence[str] | None = None,
    ):
        self._watch(model, steps)
        self.src, self.tgt_in = torch.tensor([list(src)]), torch.tensor([list(tgt_in)])  # (1, S), (1, T)
        self.src_tokens = list(src_tokens) if src_tokens is not None else [token_label(i) for i in src]
        self.tgt_tokens = list(tgt_tokens) if tgt_tokens is not None else [token_label(i) for i in tgt_in]

    def _watch(self, model: torch.nn.Module, steps: Sequence[int]) -> None:
        """Count the training steps of ``model`` from 0, and take a snapshot at each of ``steps``."""
        self.model, self.wanted = model, sorted(set(steps))
        self.updates, self.snapshots = 0, {}
        self._handle = None

    @property
    def steps(self) -> list[int]:
        return sorted(self.snapshots)

    @property
    def examples(self) -> list[AttentionExample]:
        return [self.snapshots[step] for step in self.steps]

    def __enter__(self) -> AttentionRecorder:
        self._handle = self.model.register_forward_pre_hook(self._before_forward)
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.remove()
        if self.updates in self.wanted:
            self._take()

    def _before_forward(self, module: Transformer, args: tuple) -> None:
        if not module.training:  # evaluation passes are not training steps
            return
        if self.updates in self.wanted and self.updates not in self.snapshots:
            self._take()
        self.updates += 1

    @torch.no_grad()
    def _take(self) -> None:
        was_training = self.model.training
        self.model.eval()
        self.snapshots[self.updates] = self.snapshot()
        self.model.train(was_training)

    def snapshot(self) -> AttentionExample:
        """The example's maps as the model computes them now (in eval mode, without gradients)."""
        device = next(self.model.parameters()).device
        maps = self.model.attention_maps(self.src.to(device), self.tgt_in.to(device))
        name = f"step {self.updates}"
        return AttentionExample.from_maps(maps, self.src_tokens, self.tgt_tokens, name=name)


def parse_symbols(text: str, vocab_size: int) -> list[int]:
    """``"3 5 12"`` -> ``[3, 5, 12]``, checking every symbol is a task symbol (``FIRST_SYMBOL .. vocab_size - 1``)."""
    try:
        symbols = [int(part) for part in text.replace(",", " ").split()]
    except ValueError as error:
        message = tr("type symbols as numbers separated by spaces, e.g. '3 5 12'; got {typed!r}", typed=text)
        raise ValueError(message) from error
    if not symbols or any(not FIRST_SYMBOL <= s < vocab_size for s in symbols):
        raise ValueError(
            tr(
                "type at least one symbol, each between {first} and {last}; got {typed!r}",
                first=FIRST_SYMBOL,
                last=vocab_size - 1,
                typed=text,
            )
        )
    return symbols


def attention_explorer(models: Mapping[str, Transformer], text: str = "3 5 7 3 9") -> object:
    """A live ipywidgets explorer: type a sequence, pick a model, see every attention map (all layers, heads and the
    three attention types) of the model answering it. Needs a kernel; wrap it in :func:`transformer_book.viz.live_only`.

    Built with ``interactive``, which draws first when ipywidgets 7 has displayed it (``on_displayed``): a figure
    drawn into an Output widget before its view exists never runs its script in the classic Notebook, which leaves
    the figure blank."""
    import ipywidgets as widgets
    from IPython.display import display

    names = list(models)
    symbols = widgets.Text(value=text, description=tr("symbols"), continuous_update=False)
    choice = widgets.Dropdown(options=names, value=names[0], description=tr("model"))

    def draw(text: str, name: str) -> None:
        model = models[name]
        try:
            ids = parse_symbols(text, model.config.src_vocab_size)
            example = decoded_example(model, ids, name=" ".join(map(str, ids)))
        except ValueError as error:  # not symbols, or longer than the model's max_positions
            print(error)
            return
        print(tr("output:"), " ".join(example.tgt_tokens[1:]))
        display(attention_grid([example], title=tr("{name}: every layer and head", name=name)))

    explorer = widgets.interactive(draw, text=symbols, name=choice)
    explorer.children = (widgets.HBox([symbols, choice]), explorer.out)  # the two controls side by side
    return explorer


def attention_grid(
    examples: Sequence[AttentionExample], kinds: Sequence[str] = KINDS, title: str | None = None
) -> go.Figure:
    """All layers (rows) and heads (columns) at once, with two dropdowns that work without a kernel: one picks the
    example, the other the attention type.

    Each cell holds one heatmap per attention type; the type dropdown only switches which one is visible and the
    example dropdown only replaces the data of all of them, so the two choices combine freely. ``title`` defaults to
    "Every layer and head" (in the reader's language).
    """
    if not examples:
        raise ValueError("attention_grid needs at least one example")
    first = examples[0]
    n_layers = max(len(first.maps[kind]) for kind in kinds)
    n_heads = next(len(w) for kind in kinds for w in first.maps[kind])
    fig = _grid(n_layers, n_heads)
    cells = []  # (kind, layer, head) of every trace, in trace order
    for kind in kinds:
        for layer in range(len(first.maps[kind])):
            for head in range(n_heads):
                fig.add_trace(_heatmap(first, kind, layer, head, visible=kind == kinds[0]), row=layer + 1, col=head + 1)
                cells.append((kind, layer, head))
    type_buttons = [
        dict(label=tr(KIND_TITLES[kind]), method="restyle", args=[{"visible": [k == kind for k, _, _ in cells]}])
        for kind in kinds
    ]
    example_buttons = []
    for example in examples:
        x, y, z = zip(*(_cell_data(example, kind, layer, head) for kind, layer, head in cells), strict=True)
        example_buttons.append(
            dict(label=example.name, method="restyle", args=[{"x": list(x), "y": list(y), "z": list(z)}])
        )
    menus = [dropdown(type_buttons, x=0.12, pad=dict(b=30), name=tr("attention"))]
    labels = [_menu_label(tr("attention"), x=0.12)]
    if len(examples) > 1:
        menus.append(dropdown(example_buttons, x=0.8, pad=dict(b=30), name=tr("example")))
        labels.append(_menu_label(tr("example"), x=0.8))
    _finish_grid(fig, n_layers, n_heads, title or tr("Every layer and head"))
    fig.update_layout(updatemenus=menus, margin=dict(t=130))
    for label in labels:
        fig.add_annotation(label)
    return fig


def attention_animation(
    snapshots: Sequence[AttentionExample], steps: Sequence[int], kind: str = "cross", title: str | None = None
) -> go.Figure:
    """Attention taking shape during training: one frame per snapshot (the same example, maps taken at training step
    ``steps[i]``), every layer and head of one attention type, a slider and a play button."""
    if len(snapshots) != len(steps) or not snapshots:
        raise ValueError(f"need one step per snapshot; got {len(snapshots)} snapshots and {len(steps)} steps")
    first = snapshots[0]
    n_layers, n_heads = len(first.maps[kind]), len(first.maps[kind][0])
    fig = _grid(n_layers, n_heads)
    cells = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    for layer, head in cells:
        fig.add_trace(_heatmap(first, kind, layer, head, visible=True), row=layer + 1, col=head + 1)
    fig.frames = [
        go.Frame(
            name=str(step),
            data=[go.Heatmap(z=_cell_data(snapshot, kind, layer, head)[2]) for layer, head in cells],
            traces=list(range(len(cells))),
        )
        for step, snapshot in zip(steps, snapshots, strict=True)
    ]
    frame_args = dict(frame=dict(duration=600, redraw=True), transition=dict(duration=0), mode="immediate")
    slider = dict(
        active=0,
        currentvalue=dict(prefix=tr("training step: ")),
        pad=dict(t=40),
        steps=[
            dict(
                label=str(step),
                method="animate",
                args=[[str(step)], {**frame_args, "frame": dict(duration=0, redraw=True)}],
            )
            for step in steps
        ],
    )
    play = dict(
        type="buttons",
        direction="left",
        x=0.0,
        y=-0.08,
        xanchor="left",
        yanchor="top",
        pad=dict(t=40, r=10),
        buttons=[
            dict(label=tr("Play"), method="animate", args=[None, {**frame_args, "fromcurrent": True}]),
            dict(
                label=tr("Pause"),
                method="animate",
                args=[[None], {**frame_args, "frame": dict(duration=0, redraw=False)}],
            ),
        ],
    )
    queries = len(_cell_data(first, kind, 0, 0)[1])
    _finish_grid(fig, n_layers, n_heads, title or tr("{kind} during training", kind=tr(KIND_TITLES[kind])), queries)
    fig.update_layout(sliders=[dict(slider, x=0.3, len=0.7, y=-0.08, yanchor="top")], updatemenus=[play])
    fig.update_layout(height=fig.layout.height + 110, margin=dict(b=150))
    return fig


def ablation_figure(studies: Mapping[str, tuple[float, Sequence[AblationResult]]]) -> go.Figure:
    """Exact-match with each head silenced (columns ``H0..``) and with every head of one attention silenced
    (column ``all``), one panel per model; the panel title gives the intact model's score."""
    names = list(studies)
    row_names = _ablation_table(studies[names[0]][1])[0]
    fig = make_subplots(
        rows=1,
        cols=len(names),
        shared_yaxes=True,
        # the plots' width: the figure's less its margins (110 + 20) and the colour bar's 70 px
        horizontal_spacing=row_label_spacing(row_names, font_size=13, width=MAX_WIDTH - 200),
        subplot_titles=[tr("{name} (intact: {score:.2f})", name=name, score=studies[name][0]) for name in names],
    )
    for col, name in enumerate(names, start=1):
        rows, table = _ablation_table(studies[name][1])
        columns = [f"H{h}" for h in range(len(next(iter(table.values()))) - 1)] + [tr("all")]
        fig.add_trace(
            go.Heatmap(
                z=[table[row] for row in rows],
                x=columns,
                y=rows,
                coloraxis="coloraxis",
                texttemplate="%{z:.2f}",
                hovertemplate=tr("silenced: %{y} %{x}<br>exact match: %{z:.3f}")
                + f"<extra>{html.escape(name)}</extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text=tr("silenced head"), side="bottom", row=1, col=col)
    fig.update_yaxes(title_text=tr("attention"), row=1, col=1)
    fig.update_yaxes(autorange="reversed", showticklabels=True)
    style(fig, tr("Exact match with heads switched off"), height=150 + 34 * len(rows))
    fig.update_layout(
        coloraxis=dict(colorscale="Viridis", cmin=0, cmax=1, colorbar=dict(title=tr("exact<br>match"), thickness=12)),
        margin=dict(l=110, r=20, t=90, b=60),
    )
    return fig


def _ablation_table(results: Sequence[AblationResult]) -> tuple[list[str], dict[str, list[float]]]:
    """Rows ``"cross L1"`` (in the reader's language) -> scores ``[H0, H1, ..., all]``."""
    table: dict[str, list[float]] = {}
    for result in results:
        row = tr("{kind} L{layer}", kind=tr(result.kind), layer=result.layer)
        table.setdefault(row, []).append(result.score)
    return list(table), table


def _rounded(weights: Tensor, decimals: int = _DECIMALS) -> Tensor:
    """float64 rounded to a few decimals: JSON stays short (float32 values print with 17 digits)."""
    return torch.round(weights.double(), decimals=decimals)


def _cell_data(example: AttentionExample, kind: str, layer: int, head: int) -> tuple[list[str], list[str], list]:
    keys = example.src_tokens if kind in ("encoder", "cross") else example.tgt_tokens
    queries = example.src_tokens if kind == "encoder" else example.tgt_tokens
    return (
        token_labels(keys),
        token_labels(queries),
        _rounded(example.maps[kind][layer][head], _FIGURE_DECIMALS).tolist(),
    )


def _heatmap(example: AttentionExample, kind: str, layer: int, head: int, visible: bool) -> go.Heatmap:
    x, y, z = _cell_data(example, kind, layer, head)
    return go.Heatmap(
        z=z,
        x=x,
        y=y,
        visible=visible,
        coloraxis="coloraxis",
        xgap=1,
        ygap=1,
        hovertemplate=tr(
            "layer {layer}, head {head}<br>query: %{{y}}<br>key: %{{x}}<br>weight: %{{z:.2f}}<extra></extra>",
            layer=layer,
            head=head,
        ),
    )


def _grid(n_layers: int, n_heads: int) -> go.Figure:
    """One subplot per (layer, head). The axes are deliberately not linked (``shared_xaxes``): plotly keeps stale
    categories on matched axes when a dropdown swaps the tokens, so inner cells just hide their tick labels."""
    return make_subplots(
        rows=n_layers,
        cols=n_heads,
        horizontal_spacing=0.02,
        vertical_spacing=0.06,
        column_titles=[tr("head {h}", h=h) for h in range(n_heads)],
    )


def _finish_grid(fig: go.Figure, n_layers: int, n_heads: int, title: str, queries: int = 0) -> None:
    """Label the grid's outer axes, size it and give it one colour scale. Each layer's row of panels is 230 px high,
    more when it has more than 7 ``queries``, so that every query keeps its label (plotly drops tick labels that do
    not fit)."""
    # keys stand on end: a phone keeps the grid, and a panel's column is narrower than a label written across
    fig.update_xaxes(type="category", showticklabels=False, tickfont=dict(size=11), tickangle=-90)
    fig.update_yaxes(type="category", showticklabels=False, autorange="reversed", tickfont=dict(size=11))
    for head in range(n_heads):
        fig.update_xaxes(title_text=tr("key"), showticklabels=True, row=n_layers, col=head + 1)
    for layer in range(n_layers):
        fig.update_yaxes(
            title_text=tr("layer {layer}<br>query", layer=layer), showticklabels=True, row=layer + 1, col=1
        )
    style(fig, title, height=100 + max(230, 30 * queries + 20) * n_layers)
    fig.update_layout(
        title=dict(y=0.98, yanchor="top"),
        coloraxis=dict(
            colorscale=WEIGHTS_SCALE,
            cmin=0,
            cmax=1,
            colorbar=dict(title=dict(text=tr("weight"), side="right"), thickness=12),
        ),
        margin=dict(l=80, r=20, t=90, b=50),
    )


def _menu_label(text: str, x: float) -> dict:
    """A label to the left of a dropdown placed at ``x`` on the top edge (as :func:`attention_grid` places its menus);
    named :data:`~transformer_book.viz.controls.MENU_LABEL`, so the static book, which shows the menu as an HTML control
    with its own label, hides it."""
    return dict(
        name=MENU_LABEL,
        text=text,
        x=x,
        xref="paper",
        xanchor="right",
        xshift=-8,
        y=1.0,
        yref="paper",
        yanchor="bottom",
        yshift=38,
        showarrow=False,
        font=dict(size=13),
    )
