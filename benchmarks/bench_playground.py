"""The playground page (book/14_playground.ipynb) in headless Chromium: how long a reader waits.

- first result, cold: from the first press of Decode on a freshly opened page (a new browser profile: nothing
  cached) to the drawn result (the page's own clock: ``data-result-ms``); ONNX Runtime Web's script and 14 MB
  .wasm, and the model's two graphs, are fetched from a local server and compiled within it.
- first result, cached: the same on the page opened again in the same browser profile, whose disk cache now holds
  the assets (a returning reader). Goal <= 2 s.
- per token: the median time of one ``decoder_step`` run (decoding one token, the whole prefix re-read) over
  every step of greedy decodings of each model's examples in the page (sources of 4 to 12 symbols, dates in
  words), after a warm-up. Goal <= 20 ms.
- per beam step: the same for beam search with a beam of 4, whose step runs the four hypotheses as one batch.
- asset sizes: the bytes the first interaction fetches.

Needs the built book (``make book``) and Chromium (``BOOK_CHROMIUM``, default /usr/bin/chromium). The page is
served on 127.0.0.1 under the site's sub-path, as tests/book/test_book_browser.py serves it. ``--quick``: one round.
Writes ``results/playground.json``.
"""

from __future__ import annotations

import functools
import http.server
import statistics
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, parse_args, parser, write_results  # noqa: E402

SITE = ROOT / "_build" / "html"
PAGE = "book/14_playground.html"
FIRST_RESULT_GOAL_S = 2.0
PER_TOKEN_GOAL_MS = 20.0
ASSETS = ("_static/vendor/ort/ort.wasm.min.js", "_static/vendor/ort/ort-wasm-simd-threaded.mjs",
          "_static/vendor/ort/ort-wasm-simd-threaded.wasm")
DECODE_STEPS = """async ([name, rounds, beam]) => {
  const pg = window.transformerPlayground, m = await pg.manifest(), steps = [];
  for (let r = 0; r < rounds; r++)
    for (const text of m.models[name].examples) {
      const src = (await pg.encode(name, text)).ids;
      steps.push(...(beam > 1 ? await pg.beamSearch(name, src, null, beam) : await pg.decode(name, src)).stepMs);
    }
  return steps;
}"""
BEAM = 4
READY_AFTER = """(runs) => { const root = document.querySelector('.transformer-playground');
  return root.dataset.state === 'ready' && Number(root.querySelector('.playground-output').dataset.runs || 0) > runs; }"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    prefix = ""

    def translate_path(self, path: str) -> str:
        """The site under ``prefix`` (``/<repository>``), as GitHub Pages serves it."""
        return super().translate_path(path.removeprefix(self.prefix))

    def log_message(self, *args: object) -> None:
        pass


def first_result_seconds(context: object, url: str) -> float:
    """Open the page in ``context``, press Decode, and return the seconds until the result is drawn."""
    page = context.new_page()
    page.goto(url, wait_until="load")
    page.wait_for_selector(".transformer-playground[data-state='idle']", timeout=30_000)
    page.click(".transformer-playground .playground-run")
    page.wait_for_function(READY_AFTER, arg=0, timeout=120_000)
    seconds = float(page.get_attribute(".transformer-playground", "data-result-ms")) / 1000
    page.close()
    return seconds


def main() -> None:
    p = parser(__doc__.splitlines()[0], threads=False)
    p.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium executable")
    args = parse_args(p)
    if not (SITE / PAGE).is_file():
        sys.exit(f"{SITE / PAGE} missing: build the book first (make book)")
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests" / "book"))
    from test_book_browser import CHROMIUM_ARGS, PREFIX

    rounds = 1 if args.quick else 5
    handler = functools.partial(type("Handler", (_Handler,), {"prefix": PREFIX}), directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}{PREFIX}/{PAGE}"
    results = []
    try:
        with sync_playwright() as pw:
            cold, cached = [], []
            for _ in range(rounds):
                with tempfile.TemporaryDirectory() as profile:  # a fresh profile with a disk cache, as a reader's
                    context = pw.chromium.launch_persistent_context(
                        profile, executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True
                    )
                    cold.append(first_result_seconds(context, url))
                    cached.append(first_result_seconds(context, url))
                    context.close()
            browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True)
            context = browser.new_context()
            page = context.new_page()
            page.goto(url, wait_until="load")
            page.wait_for_selector(".transformer-playground[data-state='idle']", timeout=30_000)
            manifest = page.evaluate("() => window.transformerPlayground.manifest()")
            for name in manifest["models"]:
                for kind, beam in (("per_token", 1), ("per_beam_step", BEAM)):
                    page.evaluate(DECODE_STEPS, [name, 1, beam])  # warm-up: sessions created, code paths run
                    steps = page.evaluate(DECODE_STEPS, [name, rounds, beam])
                    results.append({"kind": kind, "model": name, "beam": beam, "median_ms": round(statistics.median(steps), 2),
                                    "max_ms": round(max(steps), 2), "steps": len(steps),
                                    "goal_ms": PER_TOKEN_GOAL_MS if beam == 1 else None})
            context.close()
            browser.close()
    finally:
        httpd.shutdown()
    for kind, seconds in (("first_result_cold", cold), ("first_result_cached", cached)):
        results.append({"kind": kind, "median_s": round(statistics.median(seconds), 3), "max_s": round(max(seconds), 3),
                        "rounds": len(seconds), "goal_s": FIRST_RESULT_GOAL_S if kind.endswith("cached") else None})
    sizes = {path: (SITE / path).stat().st_size for path in ASSETS}
    for name in manifest["models"]:
        for graph in ("encoder.onnx", "decoder_step.onnx"):
            sizes[f"_static/playground/{name}/{graph}"] = (SITE / "_static" / "playground" / name / graph).stat().st_size
    results.append({"kind": "asset_bytes", "files": sizes})
    for row in results:
        print(row)
    path = write_results("playground", results, out_dir=args.out,
                         sources=["book/_ext/playground.js", "transformer/export.py", "transformer_book/playground.py"])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
