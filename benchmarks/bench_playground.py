"""The playground page (book/14_playground.ipynb) in headless Chromium: how long a reader waits.

- first result on a slow connection (the goal): the network throttled by Chromium itself (the DevTools protocol's
  ``Network.emulateNetworkConditions``: 10 Mbit/s down, 5 up, 40 ms latency, ``--mbit``/``--latency``), a fresh
  browser profile (nothing cached). The reader opens the page, scrolls to the playground (which starts loading ONNX
  Runtime Web and the model), types a source for 10 s (``--typing``) and presses Decode: the seconds from the press
  to the output in view (``data-result-ms``, the page's own clock). Goal <= 1 s. Also recorded: the seconds to every
  figure of the result drawn (``data-drawn-ms``: the page draws them one a frame after the output); when loading was
  done, counted from the scroll; how many progress reports the page drew; the longest main-thread task and the
  longest key press (Event Timing: input to the next paint) while the reader typed (the page must stay responsive).
- the same reader pressing Decode at once after the scroll: the whole wait, with the progress in view.
- first result, unthrottled, cold and cached: pressing Decode on a freshly opened page (a new profile), then on the
  page opened again in that profile, whose disk cache now holds the assets (a returning reader): to every figure drawn.
- per token: the median time of one ``decoder_step`` run (decoding one token, the whole prefix re-read) over every
  step of greedy decodings of each model's examples in the page, after a warm-up. Goal <= 20 ms.
- per beam step: the same for beam search with a beam of 4, whose step runs the four hypotheses as one batch.
- asset sizes: the bytes the playground downloads.

Needs the built book (``make book``) and Chromium (``--chromium``, default /usr/bin/chromium). The page is served on
127.0.0.1 under the site's sub-path, as tests/site/test_book_browser.py serves it. ``--quick``: one round each;
``--throttled-only``: the two throttled readers alone (to repeat them, with ``--out``). Writes ``results/playground.json``.
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
from common import ROOT, load_average, parse_args, parser, write_results  # noqa: E402

SITE = ROOT / "_build" / "html"
PAGE = "book/14_playground.html"
ROOT_SELECTOR = ".transformer-playground"
THROTTLED_GOAL_S = 1.0
CACHED_GOAL_S = 2.0
PER_TOKEN_GOAL_MS = 20.0
ORT = "_static/vendor/ort/"
ASSETS = (
    ORT + "ort.wasm.min.mjs",
    ORT + "ort-wasm-simd-threaded.mjs",
    ORT + "ort-wasm-simd-threaded.wasm.gz",
    ORT + "ort-wasm-simd-threaded.wasm",
)
TYPED = "3 5 7 9 11 4 6 8 10 12"  # what the reader types into the source field (the copy model, the page's first)
DECODE_STEPS = """async ([name, rounds, beam]) => {
  const pg = window.transformerPlayground, m = await pg.manifest(), steps = [];
  for (let r = 0; r < rounds; r++)
    for (const text of m.models[name].examples) {
      const src = (await pg.parseSource(name, text)).ids;
      steps.push(...(beam > 1 ? await pg.beamSearch(name, src, null, beam) : await pg.decode(name, src)).stepMs);
    }
  return steps;
}"""
BEAM = 4
READY_AFTER = """(runs) => { const root = document.querySelector('.transformer-playground');
  return root.dataset.state === 'ready' && Number(root.querySelector('.playground-output').dataset.runs || 0) > runs; }"""
# Long main-thread tasks (> 50 ms) and key presses (input to next paint, > 16 ms) from now on, and the progress
# reports the page drew.
WATCH = """() => {
  window.__watch = {tasks: [], keys: [], progress: 0};
  new PerformanceObserver((list) => list.getEntries().forEach((e) => __watch.tasks.push([e.startTime, e.duration])))
    .observe({type: 'longtask'});
  new PerformanceObserver((list) => list.getEntries().forEach((e) => __watch.keys.push([e.startTime, e.duration])))
    .observe({type: 'event', durationThreshold: 16});
  window.transformerPlayground.onProgress(() => { __watch.progress += 1; });
}"""
SCROLLED = """() => { document.querySelector('.transformer-playground').scrollIntoView({block: 'start'});
  return performance.now(); }"""
WATCHED = """(since) => {
  const within = (list) => list.filter(([start]) => start >= since).map(([, duration]) => duration);
  const pg = window.transformerPlayground, root = document.querySelector('.transformer-playground');
  return {longest_task_ms: Math.max(0, ...within(__watch.tasks)), longest_key_ms: Math.max(0, ...within(__watch.keys)),
          progress_reports: __watch.progress, load_started_ms: pg.timings.loadStarted - since,
          loaded_ms: pg.timings[root.querySelector('.playground-model').value] - since, load_state: root.dataset.load};
}"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    prefix = ""

    def translate_path(self, path: str) -> str:
        """The site under ``prefix`` (``/<repository>``), as GitHub Pages serves it."""
        return super().translate_path(path.removeprefix(self.prefix))

    def log_message(self, *args: object) -> None:
        pass


def open_page(context: object, url: str, throttle: dict | None = None) -> object:
    page = context.new_page()
    if throttle:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {"offline": False, **throttle})
    page.goto(url, wait_until="load", timeout=180_000)
    page.wait_for_selector(f"{ROOT_SELECTOR}[data-state='idle']", timeout=60_000)
    return page


def result_seconds(page: object, runs: int = 0) -> tuple[float, float]:
    """Once the page is done: the seconds from the request to the output in view, and to every figure drawn."""
    page.wait_for_function(READY_AFTER, arg=runs, timeout=180_000)
    return tuple(float(page.get_attribute(ROOT_SELECTOR, f"data-{what}-ms")) / 1000 for what in ("result", "drawn"))


def first_result_seconds(context: object, url: str) -> float:
    """Open the page in ``context``, press Decode, and return the seconds until the result is drawn."""
    page = open_page(context, url)
    page.click(f"{ROOT_SELECTOR} .playground-run")
    seconds = result_seconds(page)[1]
    page.close()
    return seconds


def throttled_reader(browser: object, url: str, throttle: dict, typing_s: float) -> dict:
    """A fresh context on a throttled network: open the page, scroll to the playground, type for ``typing_s``
    seconds (none: press Decode at once), press Decode. Returns the seconds to the result and what happened meanwhile."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = open_page(context, url, throttle)
        page.evaluate(WATCH)
        load = load_average()
        since = page.evaluate(SCROLLED)
        if typing_s:
            source = page.locator(f"{ROOT_SELECTOR} .playground-source")
            source.click()
            page.keyboard.press("Control+A")
            page.keyboard.type(TYPED, delay=1000 * typing_s / len(TYPED))
        page.click(f"{ROOT_SELECTOR} .playground-run")
        seconds, drawn = result_seconds(page)
        watched = page.evaluate(WATCHED, since)
        return {"first_result_s": seconds, "drawn_s": drawn, "load_1min": load, **watched}
    finally:
        context.close()


def main() -> None:
    p = parser(__doc__.splitlines()[0], threads=False)
    p.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium executable")
    p.add_argument(
        "--mbit", type=float, default=10.0, help="download speed of the throttled network, Mbit/s (default 10)"
    )
    p.add_argument("--latency", type=float, default=40.0, help="latency of the throttled network, ms (default 40)")
    p.add_argument("--typing", type=float, default=10.0, help="seconds the throttled reader types (default 10)")
    p.add_argument("--rounds", type=int, default=None, help="rounds of each measurement (default 5; --quick: 1)")
    p.add_argument("--throttled-only", action="store_true", help="only the two throttled readers (to repeat them)")
    args = parse_args(p)
    if not (SITE / PAGE).is_file():
        sys.exit(f"{SITE / PAGE} missing: build the book first (make book)")
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests"))
    from chromium import CHROMIUM_ARGS, PREFIX

    rounds = args.rounds or (1 if args.quick else 5)
    throttle = {
        "latency": args.latency,
        "downloadThroughput": args.mbit * 1e6 / 8,
        "uploadThroughput": args.mbit * 1e6 / 16,
    }
    handler = functools.partial(type("Handler", (_Handler,), {"prefix": PREFIX}), directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}{PREFIX}/{PAGE}"
    results = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True)
            for typing_s, kind in ((args.typing, "throttled_after_typing"), (0.0, "throttled_at_once")):
                runs = [throttled_reader(browser, url, throttle, typing_s) for _ in range(rounds)]
                for run in runs:
                    print(kind, run)
                seconds = [run["first_result_s"] for run in runs]
                results.append(
                    {
                        "kind": kind,
                        "mbit": args.mbit,
                        "latency_ms": args.latency,
                        "typing_s": typing_s,
                        "median_s": round(statistics.median(seconds), 3),
                        "max_s": round(max(seconds), 3),
                        "rounds": rounds,
                        "goal_s": THROTTLED_GOAL_S if typing_s else None,
                        "drawn_median_s": round(statistics.median(r["drawn_s"] for r in runs), 3),
                        "loaded_after_scroll_s": round(statistics.median(r["loaded_ms"] for r in runs) / 1000, 2),
                        "longest_task_ms": round(max(r["longest_task_ms"] for r in runs)),
                        "longest_key_ms": round(max(r["longest_key_ms"] for r in runs)) if typing_s else None,
                        "progress_reports": min(r["progress_reports"] for r in runs),
                        "runs": runs,
                    }
                )
            cold, cached = [], []
            for _ in range(0 if args.throttled_only else rounds):
                with tempfile.TemporaryDirectory() as profile:  # a fresh profile with a disk cache, as a reader's
                    context = pw.chromium.launch_persistent_context(
                        profile, executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True
                    )
                    cold.append(first_result_seconds(context, url))
                    cached.append(first_result_seconds(context, url))
                    context.close()
            context = browser.new_context()
            page = open_page(context, url)
            manifest = page.evaluate("() => window.transformerPlayground.manifest()")
            for name in [] if args.throttled_only else manifest["models"]:
                for kind, beam in (("per_token", 1), ("per_beam_step", BEAM)):
                    page.evaluate(DECODE_STEPS, [name, 1, beam])  # warm-up: sessions created, code paths run
                    steps = page.evaluate(DECODE_STEPS, [name, rounds, beam])
                    results.append(
                        {
                            "kind": kind,
                            "model": name,
                            "beam": beam,
                            "median_ms": round(statistics.median(steps), 2),
                            "max_ms": round(max(steps), 2),
                            "steps": len(steps),
                            "goal_ms": PER_TOKEN_GOAL_MS if beam == 1 else None,
                        }
                    )
            context.close()
            browser.close()
    finally:
        httpd.shutdown()
    for kind, seconds in (("first_result_cold", cold), ("first_result_cached", cached)) if cold else ():
        results.append(
            {
                "kind": kind,
                "median_s": round(statistics.median(seconds), 3),
                "max_s": round(max(seconds), 3),
                "rounds": len(seconds),
                "goal_s": CACHED_GOAL_S if kind.endswith("cached") else None,
            }
        )
    sizes = {path: (SITE / path).stat().st_size for path in ASSETS}
    for name in manifest["models"]:
        for graph in ("encoder.onnx", "decoder_step.onnx"):
            sizes[f"_static/playground/{name}/{graph}"] = (
                (SITE / "_static" / "playground" / name / graph).stat().st_size
            )
    results.append({"kind": "asset_bytes", "files": sizes})
    for row in results:
        print({k: v for k, v in row.items() if k != "runs"})
    path = write_results(
        "playground",
        results,
        out_dir=args.out,
        sources=[
            "book/_ext/playground_engine.js",
            "book/_ext/playground.js",
            "transformer/export.py",
            "transformer_book/playground.py",
        ],
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
