"""The playground chapter in headless Chromium: the page runs the package's exported models (ONNX Runtime Web),
computes what PyTorch computes, and behaves as a reader expects.

The build (book/14_playground.ipynb, ``transformer_book.playground.write_playground``) exports the copy, reverse,
dates and English -> German models into ``_static/playground/`` with ``reference.json``: for sources of new lengths,
padded, PyTorch's greedy output (``greedy_decode``), the logits of every step and every attention map, and the best
hypothesis of ``beam_search`` with its score, intact and with a head silenced by the package's ablation
(``ablate_heads``); for the models that read text, how their vocabularies tokenize awkward texts (the translator's
subwords decoded back too). Here the page runs the same sources with the same head masks, served under the site's
sub-path with every off-machine request blocked (tests/site/test_book_browser.py's server and browser). Then a
reader's side: loading starts when the playground comes into view (or a control is focused) and shows its bytes;
awkward English typed into the page is read as the ids Python reads, and translated greedily and with a beam as
PyTorch translates it; a rejected input clears the previous result; what the page clamps it says; every control works
from the keyboard and has a name; the figures keep their text apart and inside them at a phone's and a laptop's width.
Issue 34: the models load once the page has loaded (the one shown first, then the others), wherever the reader is;
clearing a result while its figures are drawn or resized raises nothing; no output starts with a space; a source
outside a model's task is said to be one; choosing a model and pressing Decode at once decodes once; the beam tree's
labels fit their boxes; the attention maps have a colour scale; every row and column of every heatmap keeps its label
at a phone's width, and when the screen turns (tests/site/category_labels.py); a result out of date says so at full
contrast. In dark colours as in light: the playground as wide, its text and figures as readable (axe-core), its colour
scale's edge as clear.
A reader's tests share the page of their edition, opened once with its models loaded, its playground set up anew for
each test (``reader``); the tests of loading itself open pages of their own.
The engine on its own (no page) is tests/site/test_playground_engine.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest
from category_labels import unlabelled_categories
from chromium import SITE, VIEWPORTS, PageRun
from static_book import words
from static_book.output import EXT
from static_book.playground import PLAYGROUND_SCRIPTS
from test_book_browser import FIGURE_SHOTS, NO_TRANSITIONS, STICKY_HIDDEN, THEME, axe_violations, figure_text_defects

PAGE = "book/14_playground.html"
MODELS = SITE / "_static" / "playground"
TOLERANCE = 1e-4
HEAVY = ("ort.wasm", "ort-wasm", ".onnx")  # what must wait until the page has loaded
ROOT = ".transformer-playground"
FIGURES = f"{ROOT} .js-plotly-plot"

pytestmark = pytest.mark.skipif(
    not (MODELS / "manifest.json").is_file(), reason=f"the playground is not built ({MODELS} missing): run `make book`"
)

DECODE = """([name, src, masks, maxNewTokens]) => window.transformerPlayground.decode(name, src, masks, maxNewTokens)
  .then(r => ({tokens: r.tokens, logits: r.logits, attention: r.attention}))"""
READY_AFTER = """(runs) => { const root = document.querySelector('.transformer-playground');
  return root.dataset.state === 'ready' && Number(root.querySelector('.playground-output').dataset.runs || 0) > runs; }"""
OUTPUT_IS = """(tokens) => { const root = document.querySelector('.transformer-playground');
  return root.dataset.state === 'ready' && root.querySelector('.playground-output').dataset.tokens === tokens; }"""
BEAM = """([name, src, masks, size, maxNewTokens, alpha]) =>
  window.transformerPlayground.beamSearch(name, src, masks, size, maxNewTokens, alpha)
  .then(r => ({tokens: r.tokens, score: r.score}))"""
PARSE = """([name, texts]) => Promise.all(texts.map(text => window.transformerPlayground.parseSource(name, text)
  .catch(e => ({error: e.message}))))"""
ENCODE_SUBWORDS = """([name, texts]) => window.transformerPlayground.manifest()
  .then(m => texts.map(text => window.TransformerPlaygroundEngine.encodeSubwords(text, m.models[name])))"""
DECODE_TEXT = """([name, ids]) => window.transformerPlayground.manifest()
  .then(m => ids.map(row => window.TransformerPlaygroundEngine.outputText(m.models[name], m, row)))"""
LOADED = "() => performance.getEntriesByType('resource').map(e => e.name)"
LOADED_SINCE = "(since) => performance.getEntriesByType('resource').filter(e => e.startTime >= since).map(e => e.name)"
STATE_IS = "(state) => document.querySelector('.transformer-playground').dataset.state === state"
LOAD_IS = "(load) => document.querySelector('.transformer-playground').dataset.load === load"
# Every progress report and every text the loading line showed, from now on.
RECORD_PROGRESS = """() => {
  window.__reports = []; window.__texts = [];
  window.transformerPlayground.onProgress((p) => __reports.push([p.loaded, p.total]));
  const line = document.querySelector('.transformer-playground .playground-loading');
  new MutationObserver(() => { if (!line.hidden) __texts.push(line.innerText); })
    .observe(line, {subtree: true, childList: true, characterData: true, attributes: true});
}"""
SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
# Controls, figures and text of the playground that end past its column or the screen (a page that does not scroll
# sideways can still cut them off: the theme's column hides what overflows it).
PAST_THE_EDGE = """() => {
  const root = document.querySelector('.transformer-playground'), column = root.getBoundingClientRect();
  const right = Math.min(column.right, window.innerWidth) + 1, left = Math.max(column.left, 0) - 1;
  return [...root.querySelectorAll('input, select, button, summary, progress, p, li, .js-plotly-plot')]
    .filter(e => e.offsetParent && !e.closest('.playground-scratch')).map(e => [e, e.getBoundingClientRect()])
    .filter(([, box]) => box.width > 0 && (box.right > right || box.left < left))
    .map(([e, box]) => ({element: e.className || e.tagName, left: Math.round(box.left), right: Math.round(box.right)}))
    .slice(0, 5);
}"""


def manifest() -> dict:
    return json.loads((MODELS / "manifest.json").read_text())


def decoder_only(name: str) -> bool:
    return manifest()["models"][name].get("kind") == "decoder-only"


def references(decoder_only_models: bool = False) -> list[tuple[str, dict]]:
    """The reference values of the encoder-decoder models (or of the decoder-only ones), by model."""
    return [
        (name, json.loads((MODELS / name / "reference.json").read_text()))
        for name in manifest()["models"]
        if decoder_only(name) == decoder_only_models
    ]


def graphs(name: str) -> list[str]:
    """The model's graph files: a decoder-only model's one, an encoder-decoder's two."""
    return ["gpt.onnx"] if decoder_only(name) else ["encoder.onnx", "decoder_step.onnx"]


def decode_each_way(page: object, name: str) -> Iterator[str]:
    """Choose the model ``name`` and show its results one way after the other, yielding what each is: greedy and a
    beam of 4 for an encoder-decoder model, greedy and sampled (temperature 1.5, top-k 3) for a decoder-only one (the
    tokens line of a text model shown before it gone)."""
    if page.input_value(f"{ROOT} .playground-model") != name:
        decode_after(page, lambda: page.select_option(f"{ROOT} .playground-model", name))
    if decoder_only(name):
        assert page.text_content(f"{ROOT} .playground-tokens") == "", "the model before's tokens line is left"
        yield "greedy"
        page.fill(f"{ROOT} .playground-temperature", "1.5")
        page.fill(f"{ROOT} .playground-top-k", "3")
        decode_after(page, lambda: page.click(f"{ROOT} .playground-sample"))
        yield "sampled"
        return
    for search in ("1", "4"):
        if page.input_value(f"{ROOT} .playground-search") != search:
            decode_after(page, lambda search=search: page.select_option(f"{ROOT} .playground-search", search))
        else:
            decode_after(page, lambda: page.click(f"{ROOT} .playground-run"))
        yield search


def max_difference(a: list, b: list) -> float:
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), "shapes differ"
        return max((max_difference(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    return abs(a - b)


def assert_clean(run: PageRun) -> None:
    assert not run.errors, "errors in the page:\n" + "\n".join(run.errors)
    assert not run.external, "requests left the machine:\n" + "\n".join(run.external)
    assert not run.failed, "requests that found nothing:\n" + "\n".join(run.failed)


def open_playground(browser: object, server: tuple, size: str = "laptop", page: str = PAGE) -> PageRun:  # noqa: F811
    base, _ = server
    run = PageRun(browser, f"{base}/{page}", VIEWPORTS[size])
    run.page.wait_for_selector(f"{ROOT}[data-state='idle']", timeout=30_000)
    return run


SHOWS_CURRENT_INPUT = """() => { const root = document.querySelector('.transformer-playground');
  const value = (name) => root.querySelector(`.playground-${name}`).value;
  const input = JSON.stringify([value('model'), value('source'), value('padding'), value('search')]);
  return root.dataset.state === 'ready' && root.querySelector('.playground-output').dataset.input === input; }"""


def shown_after(page: object, action: object) -> list[int]:
    """Do ``action`` and return the tokens of the result for the page's input as it then is, whichever event made the
    page decode it (a number field's step decodes on its change event, before the Enter that follows it)."""
    action()
    page.wait_for_function(SHOWS_CURRENT_INPUT, timeout=60_000)
    return json.loads(page.get_attribute(f"{ROOT} .playground-output", "data-tokens"))


def decode_after(page: object, action: object) -> list[int]:
    """Do ``action`` (which must make the page decode) and return the tokens of the result it draws."""
    runs = int(page.get_attribute(f"{ROOT} .playground-output", "data-runs") or 0)
    action()
    page.wait_for_function(READY_AFTER, arg=runs, timeout=60_000)
    return json.loads(page.get_attribute(f"{ROOT} .playground-output", "data-tokens"))


def symbols_of(name: str, ids: list[int]) -> str:
    vocab = manifest()["models"][name]["src_vocab"]
    return " ".join(vocab[i] for i in ids if i != 0)


@pytest.fixture(scope="module")
def playground(browser: object, server: tuple) -> object:  # noqa: F811
    """The English playground's page, opened once: for the tests of how it loads and of what its engine computes,
    and, once its models are in, for every reader's test on the English page (``loaded_pages``), which leaves it at
    its top."""
    run = open_playground(browser, server)
    yield run
    run.close()


HEAVY_STARTS = """() => { const painted = performance.getEntriesByName('first-contentful-paint')[0].startTime;
  return performance.getEntriesByType('resource').filter(e => /ort\\.wasm|ort-wasm|\\.onnx/.test(e.name))
    .map(e => [e.name.split('/').slice(-2).join('/'), e.startTime - painted]); }"""
ALL_READY = "(names) => names.every(name => name in window.transformerPlayground.timings)"
# The playground set up anew, as playground.js sets up every playground of a page on DOMContentLoaded: new controls,
# no result, nothing decoded yet; the page's engine, with every model loaded, stays. Before it, the styles a test added
# (``added``) go and the page scrolls back to its top.
SET_UP_ANEW = """(added) => {
  document.querySelectorAll('style').forEach((style) => added.includes(style.textContent) && style.remove());
  window.scrollTo(0, 0);
  const root = document.querySelector('.transformer-playground');
  root.replaceChildren();
  delete root.dataset.state;
  document.dispatchEvent(new Event('DOMContentLoaded'));
}"""
DECODING = "() => document.querySelector('.transformer-playground').dataset.state === 'decoding'"


@pytest.fixture(scope="module")
def loaded_pages(browser: object, server: tuple, playground: PageRun) -> Iterator[Callable[[str], PageRun]]:  # noqa: F811
    """The playground's page of an edition ("en": ``playground``, "zh"), opened once for the module's readers, every
    model loaded: opening the page and loading the models (4-5 s) would otherwise be most of each test."""
    pages: dict[str, PageRun] = {}

    def page_of(edition: str) -> PageRun:
        if edition not in pages:
            run = playground if edition == "en" else open_playground(browser, server, page=f"zh/{PAGE}")
            run.page.wait_for_function(ALL_READY, arg=list(manifest()["models"]), timeout=120_000)
            pages[edition] = run
        return pages[edition]

    yield page_of
    if "zh" in pages:
        pages["zh"].close()


def take_recorded(run: PageRun) -> list[str]:
    """What ``run`` recorded (errors, requests off the machine, requests that found nothing), forgotten there."""
    recorded = run.errors + run.external + run.failed
    for kind in (run.errors, run.external, run.failed):
        kind.clear()
    return recorded


def set_up_anew(run: PageRun, size: str) -> None:
    """``run``'s playground as a reader finds it once the models are in: at ``size``, in light colours, at the top of
    the page, set up anew (``SET_UP_ANEW``) once what the last test asked for is decoded and drawn."""
    page = run.page
    if page.evaluate(DECODING):
        page.wait_for_function(f"() => !({DECODING})()", timeout=60_000)
    page.set_viewport_size(VIEWPORTS[size])
    show_scheme(page, "light")
    page.evaluate(SET_UP_ANEW, [NO_TRANSITIONS, STICKY_HIDDEN])
    try:
        page.wait_for_selector(f"{ROOT}[data-state='idle']", timeout=10_000)
    except Exception:  # noqa: BLE001 (playwright's TimeoutError: say why)
        raise AssertionError(
            "the playground was not set up anew: playground.js sets it up on DOMContentLoaded"
        ) from None
    left = take_recorded(run)
    assert not left, "errors, requests off the machine or not found since the last test:\n" + "\n".join(left)


@pytest.fixture
def reader(loaded_pages: Callable[[str], PageRun]) -> Iterator[Callable[..., PageRun]]:
    """``reader(size="laptop", edition="en")``: a playground as a reader finds it once the page's models are in, on
    the module's page of that edition (``set_up_anew``). What the test recorded (errors, requests) goes with it, and
    the page is left at its top."""
    used: list[PageRun] = []

    def open_at(size: str = "laptop", edition: str = "en") -> PageRun:
        run = loaded_pages(edition)
        set_up_anew(run, size)
        used.append(run)
        return run

    yield open_at
    for run in used:
        take_recorded(run)
        run.page.evaluate("() => window.scrollTo(0, 0)")


def test_every_model_loads_after_the_first_paint_the_one_shown_first_wherever_the_reader_is(
    playground: PageRun,
) -> None:
    """Nothing heavy holds up the page's first paint (it starts after it); then, with the reader still at the top of
    the page, the model shown and the others load, the shown one first, so that a later Decode waits for nothing."""
    page, names = playground.page, list(manifest()["models"])
    assert page.evaluate("() => window.scrollY") == 0
    page.wait_for_function(ALL_READY, arg=names, timeout=120_000)
    starts = page.evaluate(HEAVY_STARTS)
    assert starts and all(after >= 0 for _, after in starts), f"started before the page's first paint: {starts}"
    ready = page.evaluate("() => window.transformerPlayground.timings")
    assert ready[names[0]] == min(ready[name] for name in names), f"the model shown was not ready first: {ready}"
    assert (
        page.evaluate("() => window.scrollY") == 0
    )  # nobody scrolled: loading did not wait for the playground in view
    assert_clean(playground)


def test_page_logits_attention_and_greedy_output_equal_pytorch_intact_and_with_a_head_silenced(
    playground: PageRun,
) -> None:
    for name, reference in references():
        outputs = {}
        for i, case in enumerate(reference["cases"]):
            page = playground.page.evaluate(DECODE, [name, case["src"], case["head_mask"], case["max_new_tokens"]])
            where = f"{name}, source {case['src']}, silenced {case['silenced']}"
            assert page["tokens"] == case["tokens"], (
                f"{where}: the page decoded {page['tokens']}, greedy_decode {case['tokens']}"
            )
            assert max_difference(page["logits"], case["logits"]) < TOLERANCE, where
            for kind, maps in case["attention"].items():
                assert max_difference(page["attention"][kind], maps) < TOLERANCE, f"{where}: {kind} attention"
            outputs[i] = page
        silenced = reference["cases"][-1]
        assert silenced["silenced"] and silenced["src"] == reference["cases"][0]["src"]
        assert outputs[len(outputs) - 1]["tokens"] != outputs[0]["tokens"]  # the silenced head changes the output
    loaded = playground.page.evaluate(LOADED)
    assert all(
        any(url.endswith(f"/{file}") for url in loaded) for file in ("ort-wasm-simd-threaded.wasm.gz", "encoder.onnx")
    )
    assert_clean(playground)


def test_page_beam_search_equals_beam_search_intact_and_with_a_head_silenced(playground: PageRun) -> None:
    for name, reference in references():
        for case in reference["cases"]:
            beam = case["beam"]
            args = [name, case["src"], case["head_mask"], beam["size"], case["max_new_tokens"], beam["length_penalty"]]
            page = playground.page.evaluate(BEAM, args)
            where = f"{name}, source {case['src']}, silenced {case['silenced']}"
            assert page["tokens"] == beam["tokens"], (
                f"{where}: the page's beam {page['tokens']}, beam_search {beam['tokens']}"
            )
            assert abs(page["score"] - beam["score"]) < TOLERANCE, where
    assert_clean(playground)


CONTINUE = """([name, prefix, sampling, maxNewTokens]) =>
  window.transformerPlayground.continuation(name, prefix, sampling, maxNewTokens)
  .then(r => ({tokens: r.tokens, logits: r.logits, drawnFrom: r.drawnFrom, attention: r.attention}))"""


def test_page_continues_a_prefix_with_the_decoder_only_model_as_pytorch_does(playground: PageRun) -> None:
    """The decoder-only model's greedy continuation (GPT.generate), the logits of every step and every attention map
    of the last, the distribution a sampled first token is drawn from (sampling_probs at the reference's temperature
    and top-k), and top-1 sampling, which must be the greedy continuation whatever the temperature and seed."""
    models = references(decoder_only_models=True)
    assert models, "no decoder-only model in the playground"
    for name, reference in models:
        for case in reference["cases"]:
            where = f"{name}, prefix {case['prefix']}"
            args = [name, case["prefix"], None, case["max_new_tokens"]]
            page = playground.page.evaluate(CONTINUE, args)
            assert page["tokens"] == case["tokens"], f"{where}: the page {page['tokens']}, generate {case['tokens']}"
            assert max_difference(page["logits"], case["logits"]) < TOLERANCE, where
            assert max_difference(page["attention"]["decoder"], case["attention"]["decoder"]) < TOLERANCE, where
            assert max_difference(page["drawnFrom"][0], case["probs"]) < TOLERANCE, where
            sampling = case["sampling"]
            drawn = {"temperature": sampling["temperature"], "topK": sampling["top_k"], "seed": 0}
            page = playground.page.evaluate(CONTINUE, [name, case["prefix"], drawn, case["max_new_tokens"]])
            assert max_difference(page["drawnFrom"][0], sampling["probs"]) < TOLERANCE, f"{where}: sampling"
            for seed in (0, 7):
                top_1 = {"temperature": 5, "topK": 1, "seed": seed}
                page = playground.page.evaluate(CONTINUE, [name, case["prefix"], top_1, case["max_new_tokens"]])
                assert page["tokens"] == case["top_1"] == case["tokens"], f"{where}: top-1 sampling, seed {seed}"
    assert_clean(playground)


def test_page_tokenizes_and_encodes_text_as_the_package_s_vocabulary(playground: PageRun) -> None:
    text_models = [(name, reference["tokenizer"]) for name, reference in references() if "tokenizer" in reference]
    assert text_models, "no model in the playground reads text"
    for name, cases in text_models:
        parsed = playground.page.evaluate(PARSE, [name, [case["text"] for case in cases]])
        for case, page in zip(cases, parsed, strict=True):
            if "error" in page:  # the page reads at most 20 tokens
                assert page["error"] == f"at most 20 tokens; got {len(case['ids'])}", (case["text"], page)
                continue
            assert page["tokens"] == case["tokens"], f"{case['text']!r}: the page's tokens {page['tokens']}"
            assert page["ids"] == case["ids"], f"{case['text']!r}: the page's ids {page['ids']}"
        assert sum("error" not in page for page in parsed) > len(cases) / 2
        if manifest()["models"][name]["input"] == "subword":  # the tokenizer itself, however long the text
            encoded = playground.page.evaluate(ENCODE_SUBWORDS, [name, [case["text"] for case in cases]])
            assert [(e["tokens"], e["ids"]) for e in encoded] == [(c["tokens"], c["ids"]) for c in cases]
        if manifest()["models"][name]["output"] == "subword":  # and the ids back to text, as the vocabulary decodes
            decoded = playground.page.evaluate(DECODE_TEXT, [name, [case["ids"] for case in cases]])
            assert decoded == [case["decoded"] for case in cases]
    assert_clean(playground)


def subword_model() -> tuple[str, dict, dict]:
    """The name, manifest entry and reference values of the model that reads subwords (English -> German)."""
    name = next(name for name, info in manifest()["models"].items() if info["input"] == "subword")
    return name, manifest()["models"][name], dict(references())[name]


def test_a_reader_types_awkward_english_and_the_page_reads_the_ids_python_reads(reader: Callable[..., PageRun]) -> None:
    """Capitals, unknown words, digits, signs, letters beyond ASCII, spaces of every kind, typed into the source field:
    the ids the page decodes are the vocabulary's (a text of more than 20 tokens is refused, and says so)."""
    name, info, reference = subword_model()
    run = reader()
    page, source = run.page, f"{ROOT} .playground-source"
    decode_after(page, lambda: page.select_option(f"{ROOT} .playground-model", name))
    for case in reference["tokenizer"]:
        page.fill(source, case["text"])
        if len(case["ids"]) > 20:
            page.press(source, "Enter")
            page.wait_for_function(STATE_IS, arg="error", timeout=10_000)
            assert (
                page.inner_text(f"{ROOT} .playground-status") == f"Source: at most 20 tokens; got {len(case['ids'])}."
            )
            continue
        decode_after(page, lambda: page.press(source, "Enter"))
        ids = json.loads(page.get_attribute(f"{ROOT} .playground-tokens", "data-ids"))
        assert ids == case["ids"], f"{case['text']!r}: the page read {ids}, the vocabulary {case['ids']}"
        line = page.inner_text(f"{ROOT} .playground-tokens")
        assert line.startswith("Tokens: " + " ".join(case["tokens"])), line
        unknown = [token for token, i in zip(case["tokens"], case["ids"], strict=True) if i == 3]
        assert ("read as <unk>" in line) == bool(unknown), line
    assert_clean(run)


def test_a_reader_translates_english_to_german_greedily_and_with_a_beam_of_four(reader: Callable[..., PageRun]) -> None:
    name, info, reference = subword_model()
    case = reference["cases"][0]  # its source is the page's first example, unpadded
    run = reader("phone")
    page, source = run.page, f"{ROOT} .playground-source"
    assert decode_after(page, lambda: page.select_option(f"{ROOT} .playground-model", name)) == case["tokens"]
    assert page.input_value(source) == info["examples"][0] == case["text"]
    assert page.inner_text(f"{ROOT} .playground-output") == f"Output: {case['output']}"
    page.fill(source, "")
    page.type(source, case["text"])  # typed key by key, as a reader does: the input of the result shown
    page.press(source, "Enter")
    assert page.inner_text(f"{ROOT} .playground-status") == "Decoded already: the result below is for this input."
    assert json.loads(page.get_attribute(f"{ROOT} .playground-output", "data-tokens")) == case["tokens"]
    beam = decode_after(page, lambda: page.select_option(f"{ROOT} .playground-search", str(case["beam"]["size"])))
    assert beam == case["beam"]["tokens"]
    assert page.inner_text(f"{ROOT} .playground-output") == f"Output: {case['beam']['output']}"
    items = page.locator(f"{ROOT} .playground-beam-list li").all_inner_texts()
    assert len(items) == case["beam"]["size"] and items[0].startswith(case["beam"]["output"] + " — ")
    page.select_option(f"{ROOT} .playground-kind", "cross")  # cross-attention: German rows over English columns
    page.wait_for_function(
        "() => document.querySelector('.transformer-playground .playground-head')"
        ".getAttribute('aria-label').startsWith('cross-attention')"
    )
    labels = page.get_attribute(f"{ROOT} .playground-head", "aria-label")
    assert labels.endswith(f"weights of {len(case['beam']['tokens'])} queries over {len(case['src'])} keys"), labels
    assert page.locator(f"{ROOT} .playground-heads .playground-head").count() == info["n_heads"]
    page.fill(source, "in 3 days ☃")
    decode_after(page, lambda: page.press(source, "Enter"))
    assert "read as <unk>: ☃" in page.inner_text(f"{ROOT} .playground-tokens")
    assert_clean(run)


def test_loading_shows_its_bytes_and_is_done_before_decode(browser: object, server: tuple) -> None:  # noqa: F811
    """On a throttled network (20 Mbit/s, 40 ms), so that loading lasts long enough to be seen; the progress recorded
    from the moment the playground's loading line exists."""
    base, _ = server
    run = PageRun(browser, "about:blank")
    try:
        page = run.page
        cdp = run.context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 40, "downloadThroughput": 2.5e6, "uploadThroughput": 2.5e6},
        )
        page.add_init_script(f"""const recording = setInterval(() => {{
          if (!document.querySelector('{ROOT} .playground-loading')) return;
          clearInterval(recording);
          ({RECORD_PROGRESS})();
        }}, 5);""")
        page.goto(f"{base}/{PAGE}", wait_until="load", timeout=120_000)
        page.wait_for_function(LOAD_IS, arg="loading", timeout=30_000)
        page.locator(ROOT).scroll_into_view_if_needed()
        names = list(manifest()["models"])
        page.wait_for_function(ALL_READY, arg=names, timeout=120_000)
        page.wait_for_function(LOAD_IS, arg="ready", timeout=10_000)
        assert page.is_hidden(f"{ROOT} .playground-loading")
        name = page.input_value(f"{ROOT} .playground-model")
        files = [SITE / "_static" / "vendor" / "ort" / "ort-wasm-simd-threaded.wasm.gz"]
        files += [MODELS / name / graph for graph in graphs(name)]
        total = sum(f.stat().st_size for f in files)  # the runtime and the model shown, loaded first
        everything = total + sum(
            (MODELS / other / graph).stat().st_size for other in names if other != name for graph in graphs(other)
        )
        reports, texts = page.evaluate("() => [__reports, __texts]")
        loaded = [r[0] for r in reports]
        assert loaded == sorted(loaded) and reports[-1] == [everything, everything], reports[-5:]
        assert len({r[0] for r in reports if r[1] == total and 0 < r[0] < total}) >= 3, "no progress seen on the way"
        megabytes = f"{total / 1e6:.1f}"
        line = rf"Loading ONNX Runtime Web and the {name} model: \d+\.\d of {megabytes} MB"
        shown = [t for t in texts if re.fullmatch(line, t)]
        assert shown, f"the loading line never showed bytes of {megabytes} MB: {texts[:5]}"
        pressed = page.evaluate("() => performance.now()")
        tokens = decode_after(page, lambda: page.click(f"{ROOT} .playground-run"))
        assert tokens and json.loads(page.get_attribute(f"{ROOT} .playground-output", "data-tokens")) == tokens
        late = [url for url in page.evaluate(LOADED_SINCE, pressed) if any(h in url for h in HEAVY)]
        late = [url for url in late if f"/{name}/" in url or "ort" in url.split("/")[-1]]
        assert not late, f"Decode had to wait for downloads: {late}"
        assert_clean(run)
    finally:
        run.close()


def test_focusing_a_control_starts_loading_before_the_playground_is_in_view(browser: object, server: tuple) -> None:  # noqa: F811
    run = open_playground(browser, server, "phone")
    try:
        page = run.page
        page.evaluate(
            "() => document.querySelector('.transformer-playground .playground-source').focus({preventScroll: true})"
        )
        assert page.evaluate(f"() => document.querySelector('{ROOT}').getBoundingClientRect().top > window.innerHeight")
        page.wait_for_function(LOAD_IS, arg="ready", timeout=60_000)
        assert any(url.endswith(".wasm.gz") for url in page.evaluate(LOADED))
        assert_clean(run)
    finally:
        run.close()


def test_a_rejected_input_clears_the_previous_result(reader: Callable[..., PageRun]) -> None:
    run = reader("phone")
    page, source = run.page, f"{ROOT} .playground-source"
    page.select_option(f"{ROOT} .playground-search", "4")  # a beam: the beam's list and tree are drawn too
    page.wait_for_function(READY_AFTER, arg=0, timeout=60_000)
    assert page.is_visible(f"{ROOT} .playground-beam-tree .main-svg")
    assert page.is_visible(f"{ROOT} .playground-heads .main-svg")
    bad = {
        "3 5 x 7": 'Source: the symbols are 3 4 5 6 7 8 9 10 11 12; got "x".',
        " ".join(["3"] * 21): "Source: at most 20 symbols; got 21.",
    }
    for text, message in bad.items():
        page.fill(source, text)
        page.press(source, "Enter")
        page.wait_for_function(STATE_IS, arg="error", timeout=10_000)
        assert page.inner_text(f"{ROOT} .playground-status") == message
        assert page.get_attribute(source, "aria-invalid") == "true"
        assert page.is_hidden(f"{ROOT} .playground-result")
        assert page.locator(f"{ROOT} .playground-result .main-svg").count() == 0, (
            "figures of the previous result remain"
        )
        assert page.locator(f"{ROOT} .playground-beam-list li").count() == 0
        assert page.text_content(f"{ROOT} .playground-output") == ""
        page.fill(source, "3 5 7")
        page.press(source, "Enter")
        page.wait_for_function(READY_AFTER, arg=0, timeout=60_000)
        assert page.get_attribute(source, "aria-invalid") is None
        assert page.is_visible(f"{ROOT} .playground-beam-tree .main-svg")
    page.fill(source, "3 5 7 9")  # edited, not decoded yet: the result shown is marked as the previous input's
    assert page.get_attribute(f"{ROOT} .playground-result", "data-stale") == "true"
    assert page.is_visible(f"{ROOT} .playground-stale-note")
    assert page.inner_text(f"{ROOT} .playground-stale-note") == (
        "Out of date: this result is for the previous input. Press Decode (or Enter) to decode the new one."
    )
    decode_after(page, lambda: page.press(source, "Enter"))
    assert page.get_attribute(f"{ROOT} .playground-result", "data-stale") is None
    assert page.is_hidden(f"{ROOT} .playground-stale-note")
    assert_clean(run)


def test_the_page_says_what_it_clamps_where_it_clamps_it(reader: Callable[..., PageRun]) -> None:
    run = reader()
    page, padding, note = run.page, f"{ROOT} .playground-padding", f"{ROOT} .playground-padding-note"
    info = manifest()["models"]["copy"]
    page.fill(f"{ROOT} .playground-source", "3 5 7 9")

    def pad(value: str) -> None:
        page.fill(padding, value)
        page.press(padding, "Enter")

    for asked, used in (("99", 10), ("-3", 0), ("2.5", 2), ("4", 4)):
        decode_after(page, lambda asked=asked: pad(asked))
        assert page.input_value(padding) == str(used)  # the field shows what the page used
        keys = page.get_attribute(f"{ROOT} .playground-head", "aria-label")  # encoder self-attention, layer 0
        assert keys.endswith(f"over {4 + used} keys"), keys
        if asked == str(used):
            assert page.is_hidden(note)
        else:
            said = f"Padding: the page pads with 0 to 10 whole tokens, so {asked} became {used}."
            assert page.inner_text(note) == said
            assert page.get_attribute(padding, "aria-describedby") == page.get_attribute(note, "id")
            runs = page.get_attribute(f"{ROOT} .playground-output", "data-runs")
            page.locator(padding).blur()  # leaving the field neither decodes again nor takes the note away
            page.wait_for_timeout(500)
            assert page.get_attribute(f"{ROOT} .playground-output", "data-runs") == runs
            assert (
                page.inner_text(note) == said and page.get_attribute(f"{ROOT} .playground-result", "data-stale") is None
            )
    pad("0")
    longest = info["trained_source_tokens"][1]
    twenty = " ".join(str(3 + i % 10) for i in range(20))
    page.fill(f"{ROOT} .playground-source", twenty)
    tokens = decode_after(page, lambda: page.press(f"{ROOT} .playground-source", "Enter"))
    said = page.inner_text(f"{ROOT} .playground-output-note")
    assert f"The copy model was trained on sources of 1 to {longest} symbols; this one has 20" in said, said
    if tokens[-1] == 2:
        assert f"here it ends after {len(tokens) - 1} tokens" in said
    else:
        assert "Decoding stopped at the page's budget of 22 tokens" in said
    page.fill(f"{ROOT} .playground-source", "3 5 7")
    decode_after(page, lambda: page.press(f"{ROOT} .playground-source", "Enter"))
    assert page.inner_text(f"{ROOT} .playground-output-note") == ""
    assert_clean(run)


FOCUSED = "() => document.activeElement.className || document.activeElement.tagName"
# Every control of the playground with its role and accessible name, as the accessibility tree gives them.
CONTROL_ROLES = ("combobox", "textbox", "spinbutton", "button", "checkbox", "group")


def test_every_control_has_a_name_and_works_from_the_keyboard(reader: Callable[..., PageRun]) -> None:
    run = reader()
    page = run.page
    page.locator(ROOT).scroll_into_view_if_needed()
    decode_after(page, lambda: page.press(f"{ROOT} .playground-run", "Enter"))
    page.press(f"{ROOT} summary", "Enter")  # the head switches
    tree = page.locator(ROOT).aria_snapshot()
    controls = [
        line.strip() for line in tree.splitlines() if line.strip().startswith(tuple(f"- {r}" for r in CONTROL_ROLES))
    ]
    nameless = [line for line in controls if not re.match(r'- \w+ "[^"]+"', line)]
    assert len(controls) >= 12 and not nameless, f"controls without a name: {nameless}"
    for label in ("model", "try", "source", "padding", "search", "attention", "layer"):
        assert any(f'"{label}' in line for line in controls), f"no control named {label!r}: {controls}"
    assert sum("checkbox" in line and "layer 0, head 0" in line for line in controls) == 3  # one per kind of attention
    page.press(f"{ROOT} summary", "Enter")

    # From the model menu on, with the keyboard only.
    page.focus(f"{ROOT} .playground-model")
    decode_after(page, lambda: page.keyboard.press("ArrowDown"))  # the next model decodes its first example
    assert page.input_value(f"{ROOT} .playground-model") == "reverse"
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-source"
    page.keyboard.press("Control+A")
    page.keyboard.type("3 4 5")
    assert decode_after(page, lambda: page.keyboard.press("Enter")) == [5, 4, 3, 2]
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-padding"
    page.keyboard.press("ArrowUp")  # the number field's step
    assert shown_after(page, lambda: page.keyboard.press("Enter")) == [5, 4, 3, 2]
    assert page.input_value(f"{ROOT} .playground-padding") == "1"
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-search"
    decode_after(page, lambda: page.keyboard.press("ArrowDown"))  # a beam of 2
    assert page.is_visible(f"{ROOT} .playground-beam-tree .main-svg")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-run"
    page.keyboard.press("Space")  # the result shown is for this input: said so
    page.wait_for_function(
        "() => document.querySelector('.transformer-playground .playground-status').textContent"
        ".startsWith('Decoded already')",
        timeout=10_000,
    )
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-kind"
    before = page.get_attribute(f"{ROOT} .playground-head", "aria-label")
    page.keyboard.press("ArrowDown")
    after = page.get_attribute(f"{ROOT} .playground-head", "aria-label")
    assert before.startswith("encoder self-attention") and after.startswith("decoder masked self-attention"), after
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-layer"
    page.keyboard.press("ArrowDown")
    assert ", layer 1, head 0" in page.get_attribute(f"{ROOT} .playground-head", "aria-label")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "SUMMARY"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    switch = page.evaluate("() => document.activeElement.getAttribute('aria-label')")
    assert switch == "encoder self-attention, layer 0, head 0"
    decode_after(page, lambda: page.keyboard.press("Space"))
    assert not page.is_checked(f"{ROOT} .playground-switches input >> nth=0")
    assert "head 0 (silenced)" not in page.inner_text(f"{ROOT} .playground-heads")  # the decoder's maps are shown
    assert_clean(run)


def show_scheme(page: object, scheme: str) -> None:
    """The reader's system asks for ``scheme`` colours (light or dark), and the page has followed."""
    page.emulate_media(color_scheme=scheme)
    page.wait_for_function(f"(scheme) => ({THEME})() === scheme", arg=scheme, timeout=5_000)


# Every head's map drawn for the attention kind the menu shows (each map's name starts with the kind's, in the page's
# language).
MAPS_OF_THE_KIND = f"""() => {{ const kind = document.querySelector('{ROOT} .playground-kind').selectedOptions[0].text;
  const heads = [...document.querySelectorAll('{ROOT} .playground-head')];
  return heads.length > 0 && heads.every(h => (h.getAttribute('aria-label') || '').startsWith(kind)); }}"""


def show_maps(page: object, kind: str) -> None:
    """The attention maps of ``kind`` drawn, every head's."""
    page.select_option(f"{ROOT} .playground-kind", kind)
    page.wait_for_function(MAPS_OF_THE_KIND, timeout=10_000)


PLAYGROUND_WIDTH = f"() => document.querySelector('{ROOT}').getBoundingClientRect().width"
# Every figure of the result drawn for the width it now has (after the screen turned, or the colours).
DRAWN_FOR_THEIR_WIDTH = f"""() => [...document.querySelectorAll('{FIGURES}')].filter((plot) => plot.offsetParent)
  .every((plot) => plot._fullLayout && Math.abs(plot._fullLayout.width - plot.clientWidth) < 1)"""


@pytest.mark.parametrize("edition", ["en", "zh"])
@pytest.mark.parametrize("size", VIEWPORTS)
def test_everything_fits_the_screen_and_no_figure_text_overlaps(
    reader: Callable[..., PageRun], size: str, edition: str
) -> None:
    """Greedy and a beam of 4 for each model (greedy and sampled for the decoder-only one), at a phone's and a
    laptop's width, in both editions (Chinese labels are wider), in light colours and in dark: every row and column
    of every heatmap labelled (plotly thinned the next-token probabilities' 18-24 columns to every 2nd or 3rd token
    on a phone), no text of a figure over another or outside its figure (``figure_text.js``), no control or figure
    past the column or the screen, and the playground as wide in dark as in light (the dark theme's frame around
    outputs, with its padding, is not drawn around it); with ``BOOK_FIGURE_SHOTS``, each state saved as a PNG. The
    translator's maps are its cross-attention's: German rows over English columns."""
    run = reader(size, edition)
    page = run.page
    page.add_style_tag(content=NO_TRANSITIONS)  # the theme fades colours: the screenshots show them as they end
    if FIGURE_SHOTS is not None:
        FIGURE_SHOTS.mkdir(parents=True, exist_ok=True)
    for name in manifest()["models"]:
        for search in decode_each_way(page, name):
            if manifest()["models"][name]["input"] == "subword":
                show_maps(page, "cross")
            widths = {}
            for scheme in ("light", "dark"):
                show_scheme(page, scheme)
                page.wait_for_function(DRAWN_FOR_THEIR_WIDTH, timeout=10_000)  # the figures follow a change of width
                where = f"{name}, search {search}, at {size} width, {scheme}"
                unlabelled = unlabelled_categories(page, FIGURES)
                assert not unlabelled, f"{where}: heatmap rows or columns without their label: {unlabelled}"
                defects = figure_text_defects(page)
                assert not defects, f"{where}: text over text, or outside its figure: {defects}"
                overflow = page.evaluate(SIDEWAYS)
                assert overflow <= 1, f"{where}: the page scrolls sideways by {overflow} px"
                past = page.evaluate(PAST_THE_EDGE)
                assert not past, f"{where}: past the column or the screen: {past}"
                widths[scheme] = page.evaluate(PLAYGROUND_WIDTH)
                if FIGURE_SHOTS is not None:
                    hidden = page.add_style_tag(content=STICKY_HIDDEN)
                    prefix = "zh__" if edition == "zh" else ""
                    shot = FIGURE_SHOTS / f"{prefix}14_playground__{name}-{search}__{size}_{scheme}.png"
                    page.locator(ROOT).screenshot(path=str(shot))
                    hidden.evaluate("style => style.remove()")
            assert widths["dark"] == widths["light"], f"{name}, search {search}, at {size} width: {widths} px"
            show_scheme(page, "light")
    assert_clean(run)


STEP_COLUMNS = f"() => document.querySelector('{ROOT} .playground-steps')._fullData[0].x.length"


def test_every_heatmap_row_and_column_keeps_its_label_when_the_screen_turns(reader: Callable[..., PageRun]) -> None:
    """The translator's result drawn at a laptop's width, then the screen turned to a phone's and back: the next-token
    probabilities are drawn again with as many columns as the new width holds, the maps resized, and every row and
    column keeps its label, clear of the others."""
    name, _, _ = subword_model()
    run = reader()
    page = run.page
    decode_after(page, lambda: page.select_option(f"{ROOT} .playground-model", name))
    show_maps(page, "cross")
    columns = {}
    for size in ("phone", "laptop"):
        page.set_viewport_size(VIEWPORTS[size])
        page.wait_for_function(DRAWN_FOR_THEIR_WIDTH, timeout=10_000)
        unlabelled = unlabelled_categories(page, FIGURES)
        assert not unlabelled, f"turned to a {size}'s width: heatmap rows or columns without their label: {unlabelled}"
        defects = figure_text_defects(page)
        assert not defects, f"turned to a {size}'s width: text over text, or outside its figure: {defects}"
        columns[size] = page.evaluate(STEP_COLUMNS)
    assert columns["phone"] < columns["laptop"], f"the columns of the next-token probabilities: {columns}"
    assert_clean(run)


def test_a_reader_translates_a_date_with_a_beam_of_four(reader: Callable[..., PageRun]) -> None:
    info, reference = manifest()["models"]["dates"], dict(references())["dates"]
    case = reference["cases"][0]  # its source is the page's first example, unpadded
    run = reader()
    page = run.page
    assert decode_after(page, lambda: page.select_option(f"{ROOT} .playground-model", "dates")) == case["tokens"]
    assert page.input_value(f"{ROOT} .playground-source") == info["examples"][0]
    beam = decode_after(page, lambda: page.select_option(f"{ROOT} .playground-search", str(case["beam"]["size"])))
    assert beam == case["beam"]["tokens"]
    iso = "".join(info["tgt_vocab"][i] for i in case["beam"]["tokens"][:-1])
    assert page.inner_text(f"{ROOT} .playground-output") == f"Output: {iso}"
    assert page.is_visible(f"{ROOT} .playground-beam-tree .main-svg")
    items = page.locator(f"{ROOT} .playground-beam-list li").all_inner_texts()
    assert len(items) == case["beam"]["size"] and items[0].startswith(iso) and items[0].endswith("(returned)")
    page.fill(f"{ROOT} .playground-source", "the 23rd of Mars, 1999")
    decode_after(page, lambda: page.press(f"{ROOT} .playground-source", "Enter"))
    assert "read as <unk>: mars" in page.inner_text(f"{ROOT} .playground-tokens")
    assert_clean(run)


def test_a_reader_decodes_pads_and_silences_a_head_on_a_phone(reader: Callable[..., PageRun]) -> None:
    name, reference = references()[0]
    intact, silenced = reference["cases"][0], reference["cases"][-1]
    run = reader("phone")
    page = run.page
    if page.input_value(f"{ROOT} .playground-model") != name:  # choosing a model decodes its first example
        decode_after(page, lambda: page.select_option(f"{ROOT} .playground-model", name))

    def pad(n: int) -> None:
        page.fill(f"{ROOT} .playground-padding", str(n))
        page.dispatch_event(f"{ROOT} .playground-padding", "change")

    page.fill(f"{ROOT} .playground-source", symbols_of(name, intact["src"]))
    assert decode_after(page, lambda: page.click(f"{ROOT} .playground-run")) == intact["tokens"]
    assert decode_after(page, lambda: pad(4)) == intact["tokens"]  # padding changes nothing
    assert decode_after(page, lambda: pad(0)) == intact["tokens"]
    kind, layer, heads = silenced["silenced"][0]
    page.click(f"{ROOT} summary")
    switches = [f"{ROOT} input[data-kind='{kind}'][data-layer='{layer}'][data-head='{h}']" for h in heads]
    for switch in switches:
        page.uncheck(switch)
    try:  # every uncheck decodes again; the last one's result must be the package's ablation
        page.wait_for_function(OUTPUT_IS, arg=json.dumps(silenced["tokens"], separators=(",", ":")), timeout=60_000)
    except Exception:  # noqa: BLE001 (playwright's TimeoutError: say what the page decoded instead)
        shown = page.get_attribute(f"{ROOT} .playground-output", "data-tokens")
        raise AssertionError(
            f"with {kind} layer {layer} heads {heads} silenced the page shows {shown}, "
            f"the package's ablation {silenced['tokens']}"
        ) from None
    n_heads = manifest()["models"][name]["n_heads"]
    assert page.locator(f"{ROOT} .js-plotly-plot .main-svg").count() >= 1 + n_heads  # steps + one map per head
    overflow = page.evaluate(SIDEWAYS)
    assert overflow <= 1, f"the playground page scrolls sideways by {overflow} px on a phone"
    assert_clean(run)


def test_a_result_cleared_while_its_figures_are_drawn_or_resized_raises_nothing(reader: Callable[..., PageRun]) -> None:
    """The sequence that once raised plotly's "TypeError: e.emit is not a function": a beam of 4, the screen turned,
    greedy twice, then a rejected source, each step at once after the one before (nothing waited for). Every plotly
    call now waits for the one before; the figures follow the new width."""
    run = reader()
    page, source = run.page, f"{ROOT} .playground-source"
    page.locator(ROOT).scroll_into_view_if_needed()
    decode_after(page, lambda: page.select_option(f"{ROOT} .playground-search", "4"))
    for width in (390, 1280, 390):
        page.set_viewport_size({"width": width, "height": 844})
        page.select_option(f"{ROOT} .playground-search", "1")
        page.click(f"{ROOT} .playground-run")
        page.click(f"{ROOT} .playground-run")
        page.fill(source, "1 2 3")
        page.click(f"{ROOT} .playground-run")
        page.wait_for_function(STATE_IS, arg="error", timeout=30_000)
        page.wait_for_timeout(500)  # what plotly would still do after the clearing
        assert page.locator(f"{ROOT} .playground-result .main-svg").count() == 0
        page.fill(source, "3 5 7")
        decode_after(page, lambda: page.select_option(f"{ROOT} .playground-search", "4"))
    page.wait_for_timeout(300)
    steps = page.evaluate(f"() => document.querySelector('{ROOT} .playground-steps').getBoundingClientRect().width")
    assert steps <= 390, f"the figures did not follow the narrower screen: {steps} px"
    assert_clean(run)


# Another attention kind chosen (its maps start drawing) and, ``hops`` promise callbacks later in the same task, a
# source the model rejects decoded, which clears the result and its figures.
CLEAR_WHILE_THE_MAPS_DRAW = f"""async ([kind, hops]) => {{
  const control = (name) => document.querySelector(`{ROOT} .playground-${{name}}`);
  control('kind').value = kind;
  control('kind').dispatchEvent(new Event('change'));
  for (let i = 0; i < hops; i++) await Promise.resolve();
  control('source').value = '1 2 3';
  control('run').click();
}}"""


def test_a_result_cleared_while_plotly_still_draws_its_maps_raises_nothing(reader: Callable[..., PageRun]) -> None:
    """The issue's "TypeError: e.emit is not a function", reproduced: plotly draws a figure over a few promise
    callbacks after its call returns, and a result cleared within them purged the figure under plotly's feet (the
    page's file before its plotly calls waited on each other raised exactly that with the clearing one callback after
    the maps' drawing began, and "reading '_rehover'" with it at once). Every plotly call now waits for the one before,
    the purge included."""
    run = reader()
    page, source = run.page, f"{ROOT} .playground-source"
    for hops, kind in enumerate(("decoder", "cross", "encoder")):
        page.fill(source, "3 5 7")
        decode_after(page, lambda: page.press(source, "Enter"))
        page.evaluate(CLEAR_WHILE_THE_MAPS_DRAW, [kind, hops])
        page.wait_for_function(STATE_IS, arg="error", timeout=30_000)
        page.wait_for_timeout(300)  # what plotly would still do after the clearing
        assert page.locator(f"{ROOT} .playground-result .main-svg").count() == 0
        assert not run.errors, f"cleared {hops} promise callbacks after the maps began: {run.errors}"
    assert_clean(run)


def test_no_output_starts_or_ends_with_a_space(reader: Callable[..., PageRun]) -> None:
    """A subword model may write a lone "▁" before its first word ("▁", "▁Tonnen" decodes to " Tonnen"): the page
    prints no space there, in the output line or the beam's list."""
    name, info, _ = subword_model()
    lone, word = (
        info["tgt_vocab"].index("\u2581"),
        next(i for i, t in enumerate(info["tgt_vocab"]) if t.startswith("\u2581") and len(t) > 2),
    )
    run = reader()
    page = run.page
    spaced = page.evaluate(DECODE_TEXT, [name, [[lone, word, 2]]])[0]  # as the vocabulary decodes it
    assert spaced == " " + info["tgt_vocab"][word][1:], spaced
    decode_after(page, lambda: page.select_option(f"{ROOT} .playground-model", name))
    for text in ("hello world", "twelve Tonnen", info["examples"][0]):
        page.fill(f"{ROOT} .playground-source", text)
        for search in ("1", "4"):
            if page.input_value(f"{ROOT} .playground-search") != search:
                decode_after(page, lambda search=search: page.select_option(f"{ROOT} .playground-search", search))
            else:
                decode_after(page, lambda: page.press(f"{ROOT} .playground-source", "Enter"))
            shown = page.text_content(f"{ROOT} .playground-output")
            assert re.fullmatch(r"Output: \S(.*\S)?", shown), f"{text!r}, search {search}: {shown!r}"
            for item in page.locator(f"{ROOT} .playground-beam-list li").all_text_contents():
                assert not item.startswith(" ") and " —" in item and not item.split(" —")[0].endswith(" "), item
    assert_clean(run)


def test_a_source_outside_the_model_s_task_is_said_to_be_one(reader: Callable[..., PageRun]) -> None:
    run = reader()
    note = f"{ROOT} .playground-domain-note"
    page = run.page
    for name in ("dates", subword_model()[0]):
        label = manifest()["models"][name]["label"]
        decode_after(page, lambda name=name: page.select_option(f"{ROOT} .playground-model", name))
        assert page.text_content(note) == "", f"{name}: its own example called outside its task"
        for text, quoted in (("hello world", '"hello", "world"'), ("\U0001f600", '"\U0001f600"')):
            page.fill(f"{ROOT} .playground-source", text)
            decode_after(page, lambda: page.press(f"{ROOT} .playground-source", "Enter"))
            said = page.text_content(note)
            assert said.startswith(f"The {label} model knows only its task") and quoted in said, said
            assert "this output is a guess" in said and page.is_visible(note)
    assert_clean(run)


def test_choosing_a_model_and_pressing_decode_at_once_decodes_once(reader: Callable[..., PageRun]) -> None:
    run = reader()
    page, names = run.page, list(manifest()["models"])
    page.wait_for_function(ALL_READY, arg=names, timeout=120_000)
    for name in names[1:]:
        runs = int(page.get_attribute(f"{ROOT} .playground-output", "data-runs") or 0)
        page.select_option(f"{ROOT} .playground-model", name)
        page.click(f"{ROOT} .playground-run")
        page.wait_for_function(READY_AFTER, arg=runs, timeout=60_000)
        page.wait_for_timeout(1_000)  # a second decoding would have shown by now
        assert page.get_attribute(f"{ROOT} .playground-output", "data-runs") == str(runs + 1), name
        assert page.get_attribute(ROOT, "data-state") == "ready"
    runs = page.get_attribute(f"{ROOT} .playground-output", "data-runs")
    page.click(f"{ROOT} .playground-run")  # pressed again later, nothing changed: said, not decoded again
    page.wait_for_timeout(500)
    assert page.get_attribute(f"{ROOT} .playground-output", "data-runs") == runs
    assert page.inner_text(f"{ROOT} .playground-status") == "Decoded already: the result below is for this input."
    field = "temperature" if decoder_only(names[-1]) else "padding"
    page.fill(f"{ROOT} .playground-{field}", "2")  # a new input: decoded
    decode_after(page, lambda: page.click(f"{ROOT} .playground-run"))
    assert_clean(run)


# Each beam-tree token's text inside its box, and no two boxes over each other.
BEAM_LABELS = """() => {
  const tree = document.querySelector('.transformer-playground .playground-beam-tree');
  const boxes = [...tree.querySelectorAll('.annotation')].map(a => ({
    text: a.querySelector('text').getBoundingClientRect(), box: a.querySelector('rect.bg').getBoundingClientRect(),
    label: a.querySelector('text').textContent}));
  const inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5
    && a.bottom <= b.bottom + 0.5;
  const over = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  return {labels: boxes.map(b => b.label),
          spilling: boxes.filter(b => !inside(b.text, b.box)).map(b => b.label),
          touching: boxes.flatMap((a, i) => boxes.slice(i + 1).filter(b => over(a.box, b.box)).map(b => [a.label, b.label]))};
}"""


@pytest.mark.parametrize("size", VIEWPORTS)
def test_beam_tree_labels_fit_their_boxes_and_show_whole_tokens_where_there_is_room(
    reader: Callable[..., PageRun], size: str
) -> None:
    name, info, _ = subword_model()
    run = reader(size)
    page = run.page
    decode_after(page, lambda: page.select_option(f"{ROOT} .playground-model", name))
    page.fill(f"{ROOT} .playground-source", "hello world")
    decode_after(page, lambda: page.select_option(f"{ROOT} .playground-search", "4"))
    found = page.evaluate(BEAM_LABELS)
    assert found["labels"] and not found["spilling"] and not found["touching"], found
    longest = max(len(label) for label in found["labels"])
    if size == "laptop":  # room for 7 or more characters: no subword of the translator cut to 6
        assert longest >= 7 or all("…" not in label for label in found["labels"]), found["labels"]
    assert_clean(run)


def test_the_attention_maps_have_a_colour_scale(reader: Callable[..., PageRun]) -> None:
    run = reader()
    page = run.page
    decode_after(page, lambda: page.click(f"{ROOT} .playground-run"))
    scale = page.locator(f"{ROOT} .playground-scale")
    assert scale.is_visible() and "weight" in scale.get_attribute("aria-label")
    assert "linear-gradient" in scale.locator(".playground-scale-bar").get_attribute("style")
    assert scale.locator("span").all_text_contents() == ["weight 0", "", "1"]
    assert_clean(run)


# The contrast of the colour scale's bar's edge with what is behind the playground (the first box with a colour of its
# own), as WCAG computes contrast from relative luminance.
SCALE_EDGE_CONTRAST = f"""() => {{
  const rgb = (colour) => colour.match(/[\\d.]+/g).map(Number);
  const luminance = (colour) => {{
    const [r, g, b] = rgb(colour).slice(0, 3).map((c) => c / 255)
      .map((c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }};
  let behind = document.querySelector('{ROOT}');
  while (behind && (rgb(getComputedStyle(behind).backgroundColor)[3] ?? 1) === 0) behind = behind.parentElement;
  const edge = getComputedStyle(document.querySelector('{ROOT} .playground-scale-bar'));
  if (edge.borderTopStyle === 'none' || parseFloat(edge.borderTopWidth) === 0) return 1;  // no edge at all
  const [a, b] = [edge.borderTopColor, behind ? getComputedStyle(behind).backgroundColor : 'rgb(255, 255, 255)']
    .map(luminance);
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}}"""


# The parts of the result drawn see-through (a faded result's text falls below the contrast it needs).
FADED = f"""() => [...document.querySelectorAll('{ROOT} .playground-result, {ROOT} .playground-result > *')]
  .filter((e) => e.offsetParent && getComputedStyle(e).opacity !== '1')
  .map((e) => `${{e.className}}: ${{getComputedStyle(e).opacity}}`)"""


def test_the_playground_reads_in_light_and_dark_colours(reader: Callable[..., PageRun]) -> None:
    """With a beam's result (its list and tree, the next-token probabilities, the maps and their colour scale), with
    that result out of date (its input edited since: once drawn at 45 % opacity, its text at 2.7:1, now at full
    contrast under a note that says so) and with a rejected input's message, axe-core finds no critical or serious
    violation in light colours or in dark (the dark theme's light frame around outputs once showed the page's pale red
    for errors on light grey, at 1.7:1); the colour scale's bar stands out from the page in both, its edge at 3:1
    (WCAG's contrast for a graphic's parts)."""
    run = reader()
    page = run.page
    page.add_style_tag(content=NO_TRANSITIONS)  # the theme fades colours: axe must see them as they end
    decode_after(page, lambda: page.select_option(f"{ROOT} .playground-search", "4"))
    for scheme in ("light", "dark"):
        show_scheme(page, scheme)
        violations = axe_violations(page)
        assert not violations, f"a beam's result in {scheme} colours: axe-core:\n" + "\n".join(violations)
        contrast = page.evaluate(SCALE_EDGE_CONTRAST)
        assert contrast >= 3, f"the colour scale's bar in {scheme} colours: its edge at {contrast:.2f}:1"
    page.fill(f"{ROOT} .playground-source", "3 5 7 9")  # edited, not decoded: the result is out of date
    assert page.inner_text(f"{ROOT} .playground-stale-note").startswith("Out of date:")
    for scheme in ("dark", "light"):
        show_scheme(page, scheme)
        violations = axe_violations(page)
        assert not violations, f"a result out of date in {scheme} colours: axe-core:\n" + "\n".join(violations)
        faded = page.evaluate(FADED)
        assert not faded, f"a result out of date in {scheme} colours: faded parts {faded}"
    page.fill(f"{ROOT} .playground-source", "3 5 x")
    page.press(f"{ROOT} .playground-source", "Enter")
    page.wait_for_function(STATE_IS, arg="error", timeout=10_000)
    for scheme in ("dark", "light"):
        show_scheme(page, scheme)
        violations = axe_violations(page)
        assert not violations, f"a rejected input in {scheme} colours: axe-core:\n" + "\n".join(violations)
    assert_clean(run)


def english_the_script_writes() -> list[str]:
    """What the playground's scripts write in English, as far as it reads as words: their templates (read as the
    build reads them for the page's translations, static_book.words) and the models' names, each up to its first
    ``{field}``, of six characters or more."""
    texts = [text for script in PLAYGROUND_SCRIPTS for text, _ in words.script_templates(EXT / script)[0]]
    texts += [model["label"] for model in manifest()["models"].values()]
    return sorted({text.split("{")[0].strip() for text in texts if len(text.split("{")[0].strip()) >= 6})


def test_the_chinese_playground_writes_chinese(reader: Callable[..., PageRun]) -> None:
    """On the Chinese site the playground's labels, notes, figure titles and accessible names are Chinese: after a
    greedy and a beam decode of each model, with the head switches open, none of the script's English is on show."""
    english = english_the_script_writes()
    assert len(english) > 30, f"the playground's words were not found: {english}"
    run = reader("laptop", "zh")
    page = run.page
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    page.click(f"{ROOT} summary")
    for name in manifest()["models"]:
        for search in decode_each_way(page, name):
            shown = page.locator(ROOT).inner_text() + " ".join(
                page.eval_on_selector_all(
                    f"{ROOT} [aria-label], {ROOT} [title]",
                    "els => els.map(e => (e.getAttribute('aria-label') || '') + ' ' + (e.getAttribute('title') || ''))",
                )
            )
            left = [words for words in english if words in shown]
            assert not left, f"{name}, search {search}: English on the Chinese playground: {left}"
    page.fill(f"{ROOT} .playground-source", "3 4")  # edited, not decoded: the result is out of date
    note = page.inner_text(f"{ROOT} .playground-stale-note")
    assert note.startswith("已过时") and not [words for words in english if words in note], note
    assert_clean(run)


NEXT_PROBS = f"() => JSON.parse(document.querySelector('{ROOT} .playground-next').dataset.probs)"


def test_a_reader_continues_samples_and_steps_the_decoder_only_model_from_the_keyboard(
    reader: Callable[..., PageRun],
) -> None:
    """The decoder-only model's controls have names and work from the keyboard: its prefix (Enter: the greedy
    continuation, with its next-token bars), temperature, top-k and seed (Enter: a sample, after which the seed moves
    on by one), Continue greedily, Sample and Next token (one greedy token added to the prefix); top-1 sampling is
    greedy; a seed repeats its draw; a bad temperature is said to be one."""
    (name, reference), *_ = references(decoder_only_models=True)
    case = reference["cases"][1]  # not the first example, which choosing the model decodes
    labels = manifest()["models"][name]["tgt_vocab"]
    prefix = " ".join(labels[i] for i in case["prefix"])
    run = reader()
    page = run.page
    page.locator(ROOT).scroll_into_view_if_needed()
    page.focus(f"{ROOT} .playground-model")
    while page.input_value(f"{ROOT} .playground-model") != name:  # choosing a model decodes its first example
        decode_after(page, lambda: page.keyboard.press("ArrowDown"))
    tree = page.locator(ROOT).aria_snapshot()
    controls = [
        line.strip() for line in tree.splitlines() if line.strip().startswith(tuple(f"- {r}" for r in CONTROL_ROLES))
    ]
    nameless = [line for line in controls if not re.match(r'- \w+ "[^"]+"', line)]
    assert not nameless, f"controls without a name: {nameless}"
    for label in ("prefix", "temperature", "top-k", "seed", "Continue greedily", "Sample", "Next token", "attention"):
        assert any(f'"{label}' in line for line in controls), f"no control named {label!r}: {controls}"
    assert not any(f'"{label}' in line for line in controls for label in ("padding", "search", "Head switches"))
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-source"
    page.keyboard.press("Control+A")
    page.keyboard.type(prefix)
    assert decode_after(page, lambda: page.keyboard.press("Enter")) == case["tokens"]
    assert max_difference(page.evaluate(NEXT_PROBS), case["probs"]) < TOLERANCE
    assert page.get_attribute(f"{ROOT} .playground-next", "aria-label").startswith("Bar chart of the")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-temperature"
    page.keyboard.press("Control+A")
    page.keyboard.type(str(case["sampling"]["temperature"]))
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-top-k"
    page.keyboard.type(str(case["sampling"]["top_k"]))
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-seed"
    page.keyboard.press("Control+A")
    page.keyboard.type("5")
    first = decode_after(page, lambda: page.keyboard.press("Enter"))
    assert max_difference(page.evaluate(NEXT_PROBS), case["sampling"]["probs"]) < TOLERANCE
    assert page.input_value(f"{ROOT} .playground-seed") == "6"  # pressing again draws anew
    assert "seed 5" in page.inner_text(f"{ROOT} .playground-output")
    page.keyboard.press("Control+A")
    page.keyboard.type("5")
    assert decode_after(page, lambda: page.keyboard.press("Enter")) == first  # the same seed, the same draw
    page.fill(f"{ROOT} .playground-top-k", "1")
    page.fill(f"{ROOT} .playground-temperature", "3")
    page.focus(f"{ROOT} .playground-seed")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-run"
    assert decode_after(page, lambda: page.keyboard.press("Enter")) == case["tokens"]
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-sample"
    assert decode_after(page, lambda: page.keyboard.press("Space")) == case["tokens"]  # top-1: greedy
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "playground-step"
    assert decode_after(page, lambda: page.keyboard.press("Enter")) == case["tokens"][:1]
    assert page.input_value(f"{ROOT} .playground-source") == f"{prefix} {labels[case['tokens'][0]]}"
    page.fill(f"{ROOT} .playground-temperature", "0")
    page.click(f"{ROOT} .playground-sample")
    page.wait_for_function(STATE_IS, arg="error", timeout=10_000)
    assert page.get_attribute(f"{ROOT} .playground-temperature", "aria-invalid") == "true"
    assert page.inner_text(f"{ROOT} .playground-status").startswith("Temperature: temperature must be a positive")
    assert page.is_hidden(f"{ROOT} .playground-result")
    assert_clean(run)
