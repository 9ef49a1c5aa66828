"""The playground chapter in headless Chromium: the page runs the package's exported models (ONNX Runtime Web) and
computes what PyTorch computes.

The build (book/14_playground.ipynb, ``transformer_book.playground.write_playground``) exports the copy, reverse and
dates models into ``_static/playground/`` with ``reference.json``: for sources of new lengths, padded, PyTorch's
greedy output (``greedy_decode``), the logits of every step and every attention map, and the best hypothesis of
``beam_search`` with its score, intact and with a head silenced by the package's ablation (``ablate_heads``); for
the dates model, how its vocabulary tokenizes awkward texts. Here the page runs the same sources with the same head
masks, served under the site's sub-path with every off-machine request blocked (tests/book/test_book_browser.py's server
and browser).
"""

from __future__ import annotations

import json

import pytest
from test_book_browser import SITE, VIEWPORTS, PageRun, browser, server  # noqa: F401  (pytest fixtures)

PAGE = "book/14_playground.html"
MODELS = SITE / "_static" / "playground"
TOLERANCE = 1e-4
HEAVY = ("ort.wasm", "ort-wasm", ".onnx")  # what must wait for the reader's first interaction

pytestmark = pytest.mark.skipif(
    not (MODELS / "manifest.json").is_file(), reason=f"the playground is not built ({MODELS} missing): run `make book`"
)

DECODE = """([name, src, masks, maxLen]) => window.transformerPlayground.decode(name, src, masks, maxLen)
  .then(r => ({tokens: r.tokens, logits: r.logits, attention: r.attention}))"""
READY_AFTER = """(runs) => { const root = document.querySelector('.transformer-playground');
  return root.dataset.state === 'ready' && Number(root.querySelector('.playground-output').dataset.runs || 0) > runs; }"""
OUTPUT_IS = """(tokens) => { const root = document.querySelector('.transformer-playground');
  return root.dataset.state === 'ready' && root.querySelector('.playground-output').dataset.tokens === tokens; }"""
BEAM = """([name, src, masks, size, maxLen, alpha]) =>
  window.transformerPlayground.beamSearch(name, src, masks, size, maxLen, alpha)
  .then(r => ({tokens: r.tokens, score: r.score}))"""
ENCODE = """([name, texts]) => Promise.all(texts.map(text => window.transformerPlayground.encode(name, text)))"""
LOADED = "() => performance.getEntriesByType('resource').map(e => e.name)"


def references() -> list[tuple[str, dict]]:
    manifest = json.loads((MODELS / "manifest.json").read_text())
    return [(name, json.loads((MODELS / name / "reference.json").read_text())) for name in manifest["models"]]


def max_difference(a: list, b: list) -> float:
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), "shapes differ"
        return max((max_difference(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    return abs(a - b)


def assert_clean(run: PageRun) -> None:
    assert not run.errors, "errors in the page:\n" + "\n".join(run.errors)
    assert not run.external, "requests left the machine:\n" + "\n".join(run.external)
    assert not run.failed, "requests that found nothing:\n" + "\n".join(run.failed)


@pytest.fixture(scope="module")
def playground(browser: object, server: tuple) -> object:  # noqa: F811
    base, _ = server
    run = PageRun(browser, f"{base}/{PAGE}")
    run.page.wait_for_selector(".transformer-playground[data-state='idle']", timeout=30_000)
    yield run
    run.close()


def test_onnx_runtime_and_the_models_load_only_at_the_first_interaction(playground: PageRun) -> None:
    loaded = playground.page.evaluate(LOADED)
    assert not [url for url in loaded if any(h in url for h in HEAVY)], loaded
    assert_clean(playground)


def test_page_logits_attention_and_greedy_output_equal_pytorch_intact_and_with_a_head_silenced(
    playground: PageRun,
) -> None:
    for name, reference in references():
        outputs = {}
        for i, case in enumerate(reference["cases"]):
            page = playground.page.evaluate(DECODE, [name, case["src"], case["head_mask"], case["max_new_tokens"]])
            where = f"{name}, source {case['src']}, silenced {case['silenced']}"
            assert page["tokens"] == case["tokens"], f"{where}: the page decoded {page['tokens']}, greedy_decode {case['tokens']}"
            assert max_difference(page["logits"], case["logits"]) < TOLERANCE, where
            for kind, maps in case["attention"].items():
                assert max_difference(page["attention"][kind], maps) < TOLERANCE, f"{where}: {kind} attention"
            outputs[i] = page
        silenced = reference["cases"][-1]
        assert silenced["silenced"] and silenced["src"] == reference["cases"][0]["src"]
        assert outputs[len(outputs) - 1]["tokens"] != outputs[0]["tokens"]  # the silenced head changes the output
    loaded = playground.page.evaluate(LOADED)
    assert all(any(url.endswith(f"/{file}") for url in loaded) for file in ("ort-wasm-simd-threaded.wasm", "encoder.onnx"))
    assert_clean(playground)


def test_page_beam_search_equals_beam_search_intact_and_with_a_head_silenced(playground: PageRun) -> None:
    for name, reference in references():
        for case in reference["cases"]:
            beam = case["beam"]
            args = [name, case["src"], case["head_mask"], beam["size"], case["max_new_tokens"], beam["length_penalty"]]
            page = playground.page.evaluate(BEAM, args)
            where = f"{name}, source {case['src']}, silenced {case['silenced']}"
            assert page["tokens"] == beam["tokens"], f"{where}: the page's beam {page['tokens']}, beam_search {beam['tokens']}"
            assert abs(page["score"] - beam["score"]) < TOLERANCE, where
    assert_clean(playground)


def test_page_tokenizes_and_encodes_text_as_the_package_s_vocabulary(playground: PageRun) -> None:
    text_models = [(name, reference["tokenizer"]) for name, reference in references() if "tokenizer" in reference]
    assert text_models, "no model in the playground reads text"
    for name, cases in text_models:
        encoded = playground.page.evaluate(ENCODE, [name, [case["text"] for case in cases]])
        for case, page in zip(cases, encoded, strict=True):
            assert page["tokens"] == case["tokens"], f"{case['text']!r}: the page's tokens {page['tokens']}"
            assert page["ids"] == case["ids"], f"{case['text']!r}: the page's ids {page['ids']}"
    assert_clean(playground)


def test_a_reader_translates_a_date_with_a_beam_of_four(browser: object, server: tuple) -> None:  # noqa: F811
    base, _ = server
    manifest = json.loads((MODELS / "manifest.json").read_text())
    info, reference = manifest["models"]["dates"], dict(references())["dates"]
    case = reference["cases"][0]  # its source is the page's first example, unpadded
    run = PageRun(browser, f"{base}/{PAGE}", VIEWPORTS["laptop"])
    try:
        page, root = run.page, ".transformer-playground"
        page.wait_for_selector(f"{root}[data-state='idle']", timeout=30_000)
        page.select_option(f"{root} .playground-model", "dates")
        page.wait_for_function(READY_AFTER, arg=0, timeout=60_000)  # a new model decodes its first example greedily
        assert page.input_value(f"{root} .playground-source") == info["examples"][0]
        assert json.loads(page.get_attribute(f"{root} .playground-output", "data-tokens")) == case["tokens"]
        page.select_option(f"{root} .playground-search", str(case["beam"]["size"]))
        page.wait_for_function(READY_AFTER, arg=1, timeout=60_000)
        assert json.loads(page.get_attribute(f"{root} .playground-output", "data-tokens")) == case["beam"]["tokens"]
        iso = "".join(info["tgt_vocab"][i] for i in case["beam"]["tokens"][:-1])
        assert page.inner_text(f"{root} .playground-output") == f"Output: {iso}"
        assert page.is_visible(f"{root} .playground-beam-tree .main-svg")
        items = page.locator(f"{root} .playground-beam-list li").all_inner_texts()
        assert len(items) == case["beam"]["size"] and items[0].startswith(iso) and items[0].endswith("(returned)")
        page.fill(f"{root} .playground-source", "the 23rd of Mars, 1999")
        page.dispatch_event(f"{root} .playground-source", "change")
        page.wait_for_function(READY_AFTER, arg=2, timeout=60_000)
        assert "read as <unk>: mars" in page.inner_text(f"{root} .playground-tokens")
        assert_clean(run)
    finally:
        run.close()


def test_a_reader_decodes_pads_and_silences_a_head_on_a_phone(browser: object, server: tuple) -> None:  # noqa: F811
    base, _ = server
    name, reference = references()[0]
    intact, silenced = reference["cases"][0], reference["cases"][-1]
    run = PageRun(browser, f"{base}/{PAGE}", VIEWPORTS["phone"])
    try:
        page, root = run.page, ".transformer-playground"
        page.wait_for_selector(f"{root}[data-state='idle']", timeout=30_000)
        page.select_option(f"{root} .playground-model", name)
        vocab = json.loads((MODELS / "manifest.json").read_text())["models"][name]["src_vocab"]
        symbols = " ".join(vocab[i] for i in intact["src"] if i != 0)

        def decode_after(action: object) -> list[int]:
            runs = int(page.get_attribute(f"{root} .playground-output", "data-runs") or 0)
            action()
            page.wait_for_function(READY_AFTER, arg=runs, timeout=60_000)
            return json.loads(page.get_attribute(f"{root} .playground-output", "data-tokens"))

        def pad(n: int) -> None:
            page.fill(f"{root} .playground-padding", str(n))
            page.dispatch_event(f"{root} .playground-padding", "change")

        page.fill(f"{root} .playground-source", symbols)
        assert decode_after(lambda: page.click(f"{root} .playground-run")) == intact["tokens"]
        assert decode_after(lambda: pad(4)) == intact["tokens"]  # padding changes nothing
        assert decode_after(lambda: pad(0)) == intact["tokens"]
        kind, layer, heads = silenced["silenced"][0]
        page.click(f"{root} summary")
        switches = [f"{root} input[data-kind='{kind}'][data-layer='{layer}'][data-head='{h}']" for h in heads]
        for switch in switches:
            page.uncheck(switch)
        try:  # every uncheck decodes again; the last one's result must be the package's ablation
            page.wait_for_function(OUTPUT_IS, arg=json.dumps(silenced["tokens"], separators=(",", ":")), timeout=60_000)
        except Exception:  # noqa: BLE001 (playwright's TimeoutError: say what the page decoded instead)
            shown = page.get_attribute(f"{root} .playground-output", "data-tokens")
            raise AssertionError(f"with {kind} layer {layer} heads {heads} silenced the page shows {shown}, "
                                 f"the package's ablation {silenced['tokens']}") from None
        n_heads = json.loads((MODELS / "manifest.json").read_text())["models"][name]["n_heads"]
        assert page.locator(f"{root} .js-plotly-plot .main-svg").count() >= 1 + n_heads  # steps + one map per head
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"the playground page scrolls sideways by {overflow} px on a phone"
        assert_clean(run)
    finally:
        run.close()

