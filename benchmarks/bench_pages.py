"""The book's pages on a slow line, in headless Chromium: first contentful paint, layout shift, and the playground's
first result.

- first paint: each page opened in a fresh browser context (an empty cache, and Chromium's cache switched off) on a
  throttled network (the DevTools protocol's ``Network.emulateNetworkConditions``: 10 Mbit/s down, 5 up, 40 ms
  latency; ``--mbit``, ``--latency``), served with gzip as GitHub Pages serves it (HTML, CSS, JavaScript, JSON and
  SVG gzipped on the way; the playground's ``.wasm.gz`` and ``.onnx`` as they are). Recorded: first contentful paint
  (the page's own Paint Timing), the load event, and when every plotly figure of the page was drawn. Three chapters
  with figures (``--pages``; ``all``: every chapter) and the reference page in the same run, chapter 16, which has no
  figure: the ratio of each page's first paint to the reference's, round by round. Goal: first paint <= 1.0 s on
  every chapter.
- layout shift: the same pages opened the same way at a phone's width (390 x 844) and a laptop's (1280 x 900), the
  reader at the top: the page's cumulative layout shift once every figure is drawn and fitted (Chromium's
  layout-shift entries, grouped as its CLS groups them: the largest burst of shifts less than 1 s apart, at most
  5 s long), with the reference page's at the same width, in the same run. Google calls <= 0.1 good. (What shifts at
  the top of a page is mostly not the figures, which lie below the first screen, but the formulas MathJax typesets;
  tests/site/test_page_speed.py measures the shift that drawing the figures causes beside them.)
- playground: the playground's page opened the same way for each of its models; the reader stays 10 s on the page
  (``--dwell``) at its top, scrolls to the playground and asks for a result: Decode for the model the page shows,
  else choosing the model in its menu (which decodes its first example). Recorded: the seconds from that request to
  the output in view and to every figure drawn (the page's own clock: ``data-result-ms``, ``data-drawn-ms``), and when
  each model was ready, counted from the navigation. Goal: the output <= 1 s after the request, for every model.

Needs the built book (``make book``) and Chromium (``--chromium``, default /usr/bin/chromium). The site is served on
127.0.0.1 under its sub-path, as the browser tests serve it. ``--quick``: one round, one chapter and the reference,
one model of the playground. Writes ``results/pages.json``.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import statistics
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, load_average, paired_ratio, parse_args, parser, write_results  # noqa: E402

SITE = ROOT / "_build" / "html"
PAGES = ("book/01_introduction", "book/07_training", "book/11_inside_the_model")
REFERENCE = "book/16_differences_from_the_paper"
PLAYGROUND = "book/14_playground"
FCP_GOAL_S = 1.0
RESULT_GOAL_S = 1.0
PLAYGROUND_ROOT = ".transformer-playground"
# What GitHub Pages' servers compress on the way: text, scripts, styles, data; not what is compressed already (the
# playground's .wasm.gz, images, fonts) or binary (.onnx).
GZIPPED_TYPES = ("text/", "application/javascript", "text/javascript", "application/json", "image/svg+xml")
FIRST_PAINT = "() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime"
FIGURES_DRAWN = """() => {
  const figures = [...document.querySelectorAll('.plotly-graph-div')];
  return document.readyState !== 'loading' && figures.every(d => d.querySelector('.main-svg')) && performance.now();
}"""
LOAD_EVENT = "() => performance.getEntriesByType('navigation')[0].loadEventStart"
CLS_GOAL = 0.1
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1280, "height": 900}}
LAYOUT_SHIFTS = """window.bookShifts = [];
new PerformanceObserver((list) => list.getEntries().forEach((e) => e.hadRecentInput
  || window.bookShifts.push([e.startTime, e.value]))).observe({type: "layout-shift", buffered: true});"""
FIGURES_READY = "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.dataset.bookFigure === 'ready')"
RESULT_AFTER = """(runs) => { const root = document.querySelector('.transformer-playground');
  return root.dataset.state === 'ready' && Number(root.querySelector('.playground-output').dataset.runs || 0) > runs; }"""
LOADED = """() => { const t = window.transformerPlayground.timings, out = {};
  Object.keys(t).forEach(k => { out[k] = Math.round(t[k]); }); return out; }"""


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """The site under ``prefix`` (``/<repository>``), gzipped on the way where GitHub Pages gzips (each file
    compressed once, at level 6), so that the bytes on the wire are those a reader's browser receives."""

    prefix = ""
    compressed: dict[str, bytes] = {}

    def translate_path(self, path: str) -> str:
        if not path.startswith(self.prefix + "/"):
            return str(Path(self.directory) / "__outside_the_site__")
        return super().translate_path(path[len(self.prefix) :])

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = Path(self.translate_path(self.path))
        kind = self.guess_type(str(path))
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and kind.startswith(GZIPPED_TYPES)):
            return super().do_GET()
        key = str(path)
        if key not in self.compressed:
            self.compressed[key] = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
        body = self.compressed[key]
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a browser closing a page mid-download is no error
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(site: Path, prefix: str) -> Iterator[str]:
    """Serve ``site`` on 127.0.0.1 under ``prefix`` with gzip; yields the site's base URL."""
    handler = type("Handler", (GzipHandler,), {"prefix": prefix, "compressed": {}})
    httpd = _Server(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{prefix}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def throttled_page(browser: object, throttle: dict, viewport: dict) -> tuple[object, object]:
    """A fresh context (nothing cached) and a page of it on the throttled network, Chromium's cache switched off."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    cdp.send("Network.emulateNetworkConditions", {"offline": False, **throttle})
    return context, page


def cumulative_layout_shift(shifts: list[list[float]]) -> float:
    """CLS as Chromium reports it from layout-shift entries ``[start ms, value]``: the largest sum over a session
    window (shifts less than 1 s apart, the window at most 5 s long)."""
    largest = current = 0.0
    first = last = None
    for start, value in sorted(shifts):
        if first is None or start - last > 1000 or start - first > 5000:
            first, current = start, 0.0
        current += value
        last = start
        largest = max(largest, current)
    return largest


def first_paint(browser: object, url: str, throttle: dict, viewport: dict = VIEWPORTS["laptop"]) -> dict:
    """Open ``url`` cold on the throttled network: seconds to first contentful paint, the load event, every figure;
    and the page's cumulative layout shift once every figure is drawn and fitted."""
    context, page = throttled_page(browser, throttle, viewport)
    page.add_init_script(LAYOUT_SHIFTS)
    try:
        page.goto(url, wait_until="load", timeout=180_000)
        fcp = page.wait_for_function(FIRST_PAINT, timeout=60_000).json_value()
        drawn = page.wait_for_function(FIGURES_DRAWN, timeout=180_000, polling="raf").json_value()
        figures = page.locator(".plotly-graph-div").count()
        page.wait_for_function(FIGURES_READY, timeout=60_000)
        page.wait_for_function("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        return {
            "fcp_s": round(fcp / 1000, 3),
            "load_s": round(page.evaluate(LOAD_EVENT) / 1000, 3),
            "figures": figures,
            "figures_drawn_s": round(drawn / 1000, 3) if figures else None,
            "cls": round(cumulative_layout_shift(page.evaluate("() => window.bookShifts")), 4),
        }
    finally:
        context.close()


def playground_result(browser: object, url: str, throttle: dict, model: str, default: str, dwell_s: float) -> dict:
    """The reader stays ``dwell_s`` seconds at the top of the playground's page, scrolls to the playground and asks
    for ``model``'s result (Decode, or choosing the model): seconds from the request to the output and to every
    figure, and when each model was ready (seconds since the navigation)."""
    context, page = throttled_page(browser, throttle, {"width": 1280, "height": 900})
    try:
        page.goto(url, wait_until="commit", timeout=180_000)
        page.wait_for_selector(f"{PLAYGROUND_ROOT}[data-state]", timeout=180_000)
        if page.get_attribute(PLAYGROUND_ROOT, "data-state") == "error":
            raise RuntimeError(f"the playground did not start: {page.inner_text(PLAYGROUND_ROOT)}")
        page.wait_for_function(f"() => performance.now() >= {1000 * dwell_s}", timeout=1000 * dwell_s + 60_000)
        page.locator(PLAYGROUND_ROOT).scroll_into_view_if_needed()
        load = load_average()
        if model == default:
            page.click(f"{PLAYGROUND_ROOT} .playground-run")
        else:
            page.select_option(f"{PLAYGROUND_ROOT} .playground-model", model)
        page.wait_for_function(RESULT_AFTER, arg=0, timeout=180_000)
        seconds = {
            what: float(page.get_attribute(PLAYGROUND_ROOT, f"data-{what}-ms")) / 1000 for what in ("result", "drawn")
        }
        ready = {k: round(v / 1000, 2) for k, v in page.evaluate(LOADED).items()}
        return {
            "model": model,
            "result_s": round(seconds["result"], 3),
            "drawn_s": round(seconds["drawn"], 3),
            "ready_s": ready,
            "load_1min": load,
        }
    finally:
        context.close()


def page_rows(runs: dict[str, list[dict]], reference: str) -> list[dict]:
    """One row per page: medians over the rounds, and the round-by-round ratio of its first paint to the reference's."""
    rows = []
    for name, measured in runs.items():
        fcp = [r["fcp_s"] for r in measured]
        ratio, low, high = paired_ratio(fcp, [r["fcp_s"] for r in runs[reference]])
        drawn = [r["figures_drawn_s"] for r in measured if r["figures_drawn_s"] is not None]
        rows.append(
            {
                "kind": "first_paint",
                "page": name,
                "reference": name == reference,
                "rounds": len(measured),
                "fcp_median_s": round(statistics.median(fcp), 3),
                "fcp_max_s": max(fcp),
                "ratio_to_reference": round(ratio, 2),
                "ratio_low": round(low, 2),
                "ratio_high": round(high, 2),
                "load_median_s": round(statistics.median(r["load_s"] for r in measured), 3),
                "figures": measured[0]["figures"],
                "figures_drawn_median_s": round(statistics.median(drawn), 3) if drawn else None,
                "goal_s": FCP_GOAL_S,
                "met": max(fcp) <= FCP_GOAL_S,
                "runs": measured,
            }
        )
    return rows


def shift_rows(runs: dict[str, dict[str, list[dict]]], reference: str) -> list[dict]:
    """One row per page and width: its cumulative layout shift over the rounds, beside the reference page's at the
    same width."""
    rows = []
    for size, by_page in runs.items():
        reference_cls = statistics.median(r["cls"] for r in by_page[reference])
        for name, measured in by_page.items():
            shifts = [r["cls"] for r in measured]
            rows.append(
                {
                    "kind": "layout_shift",
                    "page": name,
                    "width": VIEWPORTS[size]["width"],
                    "reference": name == reference,
                    "rounds": len(measured),
                    "cls_median": round(statistics.median(shifts), 4),
                    "cls_max": max(shifts),
                    "reference_cls_median": round(reference_cls, 4),
                    "goal": CLS_GOAL,
                    "met": max(shifts) <= CLS_GOAL,
                    "runs": shifts,
                }
            )
    return rows


def main() -> None:
    p = parser(__doc__.splitlines()[0], threads=False)
    p.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium executable")
    p.add_argument("--site", type=Path, default=SITE, help=f"the built site (default {SITE})")
    p.add_argument("--mbit", type=float, default=10.0, help="download speed, Mbit/s (default 10)")
    p.add_argument("--latency", type=float, default=40.0, help="latency, ms (default 40)")
    p.add_argument("--dwell", type=float, default=10.0, help="seconds the reader stays on the playground's page first")
    p.add_argument("--rounds", type=int, default=None, help="rounds of each measurement (default 3; --quick: 1)")
    p.add_argument(
        "--pages",
        nargs="+",
        default=None,
        help=f"pages to measure besides the reference (default {' '.join(PAGES)}; 'all': every chapter)",
    )
    p.add_argument("--skip-playground", action="store_true", help="first paint only")
    args = parse_args(p)
    site = args.site.resolve()
    if not (site / f"{REFERENCE}.html").is_file():
        sys.exit(f"{site / REFERENCE}.html missing: build the book first (make book)")
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests"))
    from chromium import CHROMIUM_ARGS, PREFIX, toc_pages

    rounds = args.rounds or (1 if args.quick else 3)
    pages = args.pages or (PAGES[:1] if args.quick else PAGES)
    if pages == ["all"]:
        pages = [name for name in toc_pages() if name != REFERENCE]
    throttle = {
        "latency": args.latency,
        "downloadThroughput": args.mbit * 1e6 / 8,
        "uploadThroughput": args.mbit * 1e6 / 16,
    }
    runs = {size: {name: [] for name in (*pages, REFERENCE)} for size in VIEWPORTS}
    playground: list[dict] = []
    with serve(site, PREFIX) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True)
        for r in range(rounds):
            names = list(runs["laptop"])
            for name in names if r % 2 == 0 else reversed(names):  # alternate, as common.time_many does
                for size, viewport in VIEWPORTS.items():
                    runs[size][name].append(first_paint(browser, f"{base}/{name}.html", throttle, viewport))
                    print(f"round {r + 1} {size:<6} {name:<40} {runs[size][name][-1]}", flush=True)
        if not args.skip_playground and (site / f"{PLAYGROUND}.html").is_file():
            import json

            manifest = json.loads((site / "_static" / "playground" / "manifest.json").read_text())
            models = list(manifest["models"])
            for model in models[:1] if args.quick else models:
                for _ in range(rounds):
                    playground.append(
                        playground_result(browser, f"{base}/{PLAYGROUND}.html", throttle, model, models[0], args.dwell)
                    )
                    print(f"playground {playground[-1]}", flush=True)
        browser.close()
    results = page_rows(runs["laptop"], REFERENCE) + shift_rows(runs, REFERENCE)
    for model in dict.fromkeys(r["model"] for r in playground):
        measured = [r for r in playground if r["model"] == model]
        seconds = [r["result_s"] for r in measured]
        results.append(
            {
                "kind": "playground_first_result",
                "model": model,
                "dwell_s": args.dwell,
                "rounds": len(measured),
                "result_median_s": round(statistics.median(seconds), 3),
                "result_max_s": max(seconds),
                "drawn_median_s": round(statistics.median(r["drawn_s"] for r in measured), 3),
                "goal_s": RESULT_GOAL_S,
                "met": max(seconds) <= RESULT_GOAL_S,
                "runs": measured,
            }
        )
    print(f"\n{args.mbit:g} Mbit/s, {args.latency:g} ms, gzip, cold cache; {rounds} round(s)")
    for row in results:
        if row["kind"] == "first_paint":
            drawn = f", figures drawn {row['figures_drawn_median_s']:.2f} s" if row["figures"] else ""
            print(
                f"{row['page']:<40} first paint {row['fcp_median_s']:.2f} s (max {row['fcp_max_s']:.2f}), "
                f"{row['ratio_to_reference']:.2f}x the reference [{row['ratio_low']:.2f}-{row['ratio_high']:.2f}], "
                f"load {row['load_median_s']:.2f} s{drawn}; goal <= {FCP_GOAL_S} s "
                f"{'met' if row['met'] else 'MISSED'}"
            )
        elif row["kind"] == "layout_shift":
            print(
                f"{row['page']:<40} layout shift at {row['width']} px {row['cls_median']:.3f} "
                f"(max {row['cls_max']:.3f}; the reference {row['reference_cls_median']:.3f}); goal <= {CLS_GOAL} "
                f"{'met' if row['met'] else 'MISSED'}"
            )
        else:
            print(
                f"playground {row['model']:<10} after {args.dwell:g} s on the page: output "
                f"{row['result_median_s']:.2f} s after the request (max {row['result_max_s']:.2f}), figures "
                f"{row['drawn_median_s']:.2f} s; goal <= {RESULT_GOAL_S} s {'met' if row['met'] else 'MISSED'}"
            )
    extra = {"mbit": args.mbit, "latency_ms": args.latency, "gzip": True, "quick": args.quick}
    path = write_results(
        "pages",
        results,
        extra=extra,
        out_dir=args.out,
        sources=[
            "book/_ext/static_book/figures.py",
            "book/_ext/static_book/playground.py",
            "book/_ext/figures.js",
            "book/_ext/playground.js",
            "book/_ext/playground_engine.js",
            "book/_ext/book.css",
        ],
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
