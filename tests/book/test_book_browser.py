"""The built book in a real browser: every page of the toc opened in headless Chromium, with no network.

Needs the built site (``make book``; ``make test`` builds it first) and Debian's Chromium at /usr/bin/chromium
(``BOOK_CHROMIUM`` overrides the path). The site is served on 127.0.0.1; every request to any other host is aborted
and recorded, and the test fails if there was one. Every page is opened once at 390 x 844 (a phone) and once at
1280 x 900 (a laptop), and every check of that size runs on that one load (a load is most of a page's time). At both
sizes: no JavaScript errors, no page scrolls sideways, no figure is wider than the screen, and every figure is saved
as a PNG in ``_build/screenshots/`` (``BOOK_FIGURE_SHOTS`` overrides the folder) for anyone to look through, and no
figure's text is smaller than 9 px, under its title, or (heatmap numbers) run into its neighbour. At the
laptop's size, after those screenshots: every plotly figure drawn, as many as the build's executed notebook made (and
at least ``MIN_FIGURES``); operating each control of each figure (a slider step, a menu entry) changes what the figure
draws; every bertviz view drawn; MathJax typeset the math. With ``BOOK_SCREENSHOTS=dir`` each page is saved as a
full-page PNG there.

The site is served under a sub-path, ``/<repository>/``, as GitHub Pages serves it, so a link that assumes the site
sits at the server's root fails here too.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
CHROMIUM = os.environ.get("BOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
SCREENSHOTS = os.environ.get("BOOK_SCREENSHOTS", "")
# Pages that must show at least this many plotly figures (every figure a page has must render in any case).
MIN_FIGURES = {"book/01_introduction": 1}  # the architecture diagram
# Console errors that are not failures (matched against "message url"): the browser asks every site for a favicon.
IGNORED_CONSOLE = (re.compile(r"favicon\.ico"),)
BERTVIZ_PAGE = "book/__bertviz_offline_check.html"  # served from memory by the test, next to the chapters
# GitHub Pages serves a project's site under /<repository>/: so does this test (the name from _config.yml).
PREFIX = "/" + re.search(r"^\s*url:\s*\S+/([^/\s]+?)/?\s*$", (ROOT / "_config.yml").read_text(), re.MULTILINE).group(1)
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1280, "height": 900}}
# The theme's sticky header would cover part of a figure scrolled into view for its screenshot.
STICKY_HIDDEN = ".bd-header-article, .bd-header, .skip-link { visibility: hidden !important; }"
FIGURE_SHOTS = Path(os.environ.get("BOOK_FIGURE_SHOTS", ROOT / "_build" / "screenshots"))

pytestmark = pytest.mark.skipif(
    not (SITE / "index.html").is_file(), reason=f"the book is not built ({SITE} missing): run `make book` first"
)


def _load(path: Path) -> object:
    """A module of the repository that is not importable as a package (a script, the Sphinx extension)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toc_pages() -> list[str]:
    """Document names of every page in _toc.yml, in reading order."""
    return _load(ROOT / "scripts" / "book_toc.py").toc_files(ROOT)


class _Handler(http.server.SimpleHTTPRequestHandler):
    extra_pages: dict[str, bytes] = {}

    def translate_path(self, path: str) -> str:
        """Files under ``PREFIX`` only: a path outside it is not found, as on GitHub Pages."""
        if not path.startswith(PREFIX + "/"):
            return str(SITE / "__outside_the_site__")
        return super().translate_path(path[len(PREFIX):])

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = self.extra_pages.get(urlparse(self.path).path.removeprefix(PREFIX).lstrip("/"))
        if body is None:
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {"extra_pages": {}})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(SITE)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}{PREFIX}", handler
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium not found at {CHROMIUM}: `make setup` installs it (apt-get install chromium)")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


class PageRun:
    """One page opened in a fresh context that records errors and blocks (and records) off-machine requests."""

    def __init__(self, browser: object, url: str, viewport: dict | None = None):
        self.errors: list[str] = []
        self.external: list[str] = []
        self.failed: list[str] = []
        self.context = browser.new_context(viewport=viewport or VIEWPORTS["laptop"])
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("console", self._console)
        self.page.on("response", self._response)
        self.page.goto(url, wait_until="load")

    def _route(self, route: object) -> None:
        url = route.request.url
        if urlparse(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def _response(self, response: object) -> None:
        if response.status >= 400 and not any(p.search(response.url) for p in IGNORED_CONSOLE):
            self.failed.append(f"{response.status} {response.url}")

    def _console(self, message: object) -> None:
        where = (message.location or {}).get("url", "")
        if message.type == "error" and not any(p.search(f"{message.text} {where}") for p in IGNORED_CONSOLE):
            self.errors.append(f"console: {message.text} ({where})")

    def close(self) -> None:
        self.context.close()


# JavaScript helpers run in the page.
ALL_PLOTS_DRAWN = "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))"
FIGURE_STATE = """(i) => {
  const gd = document.querySelectorAll('.plotly-graph-div')[i];
  const layout = Object.assign({}, gd.layout); delete layout.updatemenus; delete layout.sliders;
  return JSON.stringify([gd.data, layout]);
}"""
TOO_WIDE = """() => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) => {
  const column = gd.closest('.cell_output') || gd.parentElement.parentElement;
  return {figure: i, width: gd._fullLayout.width, column: column.clientWidth};
}).filter(f => f.width > f.column + 1)"""
CONTROLS = """(i) => {
  const gd = document.querySelectorAll('.plotly-graph-div')[i];
  // The page's figures.js shows plotly's menus as HTML controls in a bar just before the figure's wrapper.
  const bar = gd.parentElement.previousElementSibling;
  const menus = bar && bar.classList.contains('book-figure-controls')
    ? [...bar.querySelectorAll('select')].map((s, k) => ({type: 'select', k, n: s.options.length}))
        .concat(bar.querySelectorAll('button').length ? [{type: 'buttons', n: bar.querySelectorAll('button').length}] : [])
    : [];
  const sliders = (gd.layout.sliders || []).filter(s => s.visible !== false)
    .map((s, drawn) => ({active: s.active ?? 0, n: (s.steps || []).length, drawn})).filter(s => s.n > 1);
  return {menus, sliders};
}"""
READY = "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.dataset.bookFigure === 'ready')"
PLOTLY_MENUS_SHOWN = """() => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) =>
  ({figure: i, menus: gd.querySelectorAll('g.updatemenu-header-group').length})).filter(f => f.menus)"""
# Text in a figure that a reader cannot read: drawn smaller than 9 px (heatmap numbers in cells too small for them
# are hidden by figures.js; the hover label still gives the value).
TINY_TEXT = """() => [...document.querySelectorAll('.plotly-graph-div')].flatMap((gd, i) =>
  [...gd.querySelectorAll('svg text')].filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0
    && parseFloat(getComputedStyle(t).fontSize) < 8.95)
  .map(t => ({figure: i, text: t.textContent.slice(0, 30), px: parseFloat(getComputedStyle(t).fontSize)}))).slice(0, 5)"""
# Numbers in a heatmap's cells must not run into their neighbours (figures.js hides a heatmap's numbers when they would).
NUMBERS_OVERLAP = """() => [...document.querySelectorAll('.plotly-graph-div')].flatMap((gd, i) => {
  const boxes = [...gd.querySelectorAll('.heatmaplayer text, .hm text')].filter(t => t.textContent.trim())
    .map(t => t.getBoundingClientRect()).filter(b => b.width > 0).sort((a, b) => a.top - b.top || a.left - b.left);
  return boxes.some((b, k) => k > 0 && Math.abs(boxes[k - 1].top - b.top) < 1 && boxes[k - 1].right > b.left + 0.5)
    ? [{figure: i}] : [];
})"""
# A figure's title must not be drawn over any other text of the figure (legend, annotations, axis titles, ticks).
TITLE_COLLISIONS = """() => [...document.querySelectorAll('.plotly-graph-div')].flatMap((gd, i) => {
  const title = gd.querySelector('.g-gtitle text');
  if (!title || !title.textContent.trim()) return [];
  const a = title.getBoundingClientRect();
  return [...gd.querySelectorAll('.infolayer text, .xtick text, .ytick text, .g-xtitle text, .g-ytitle text')]
    .filter(t => t !== title && t.textContent.trim() && !title.contains(t)).filter(t => {
      const b = t.getBoundingClientRect();
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      return b.width > 0 && w > 2 && h > 2;
    }).map(t => ({figure: i, title: title.textContent.slice(0, 30), hits: t.textContent.slice(0, 30)}));
}).slice(0, 5)"""


def _control_actions(page: object, index: int, controls: dict) -> Iterator[tuple[str, Iterator[str]]]:
    """For each control of figure ``index`` (sliders, then menus): its name and the ways to operate it (a slider's
    neighbouring step, then every other entry of a menu), each yielding a description once done."""
    figure = page.locator(".plotly-graph-div").nth(index)
    bar = figure.locator("xpath=../preceding-sibling::div[contains(@class, 'book-figure-controls')][1]")

    # plotly.js draws every slider of a figure into one g.slider-container, a g.slider-group per slider.
    def slider_steps(slider: dict) -> Iterator[str]:
        group = figure.locator("g.slider-container g.slider-group").nth(slider["drawn"])
        for target in [t for t in (slider["active"] + 1, slider["active"] - 1) if 0 <= t < slider["n"]]:
            group.scroll_into_view_if_needed()
            rail = group.locator("rect.slider-rail-touch-rect").first.bounding_box()
            tick = group.locator("g.slider-label-group").nth(target).bounding_box()  # one label per step
            page.mouse.click(tick["x"] + tick["width"] / 2, rail["y"] + rail["height"] / 2)
            yield f"step {target}"

    def menu_entries(menu: dict) -> Iterator[str]:
        if menu["type"] == "buttons":  # Play / Pause: playing (the first button) changes the figure
            bar.locator("button").first.click()
            yield "button 0"
            return
        select = bar.locator("select").nth(menu["k"])
        current = int(select.input_value())
        for target in [t for t in range(menu["n"]) if t != current]:
            select.select_option(str(target))
            yield f"entry {target}"

    for k, slider in enumerate(controls["sliders"]):
        yield f"slider {k}", slider_steps(slider)
    for k, menu in enumerate(controls["menus"]):
        yield f"menu {k}", menu_entries(menu)


def executed_notebook(name: str) -> dict:
    """The build's executed notebook: from the execution cache when the build has one (myst-nb writes the *unexecuted*
    source to _build/jupyter_execute when it takes a notebook from the cache), else from _build/jupyter_execute."""
    source = nbformat.read(ROOT / f"{name}.ipynb", as_version=4)
    cache_dir = SITE.parent / ".jupyter_cache"
    if cache_dir.is_dir():
        from jupyter_cache import get_cache

        try:
            return get_cache(str(cache_dir)).merge_match_into_notebook(source)[1]
        except KeyError:  # not in the cache: the build executed it without caching (an error, or another mode)
            pass
    executed = SITE.parent / "jupyter_execute" / f"{name}.ipynb"
    assert executed.is_file(), f"{executed} missing: the build writes every executed notebook there"
    return nbformat.read(executed, as_version=4)


def expected_figures(name: str) -> int:
    """Plotly figures in the build's executed notebook: outputs that carry one, whether or not the page shows it."""
    count = 0
    for cell in executed_notebook(name)["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = data.get("text/html", "")
            html = "".join(html) if isinstance(html, list) else html
            count += html.count('class="plotly-graph-div"') or int("application/vnd.plotly.v1+json" in data)
    return count


def check_page(run: PageRun, name: str, shots: str) -> None:
    page = run.page
    source = page.content()
    n_figures = page.locator(".plotly-graph-div").count()
    assert n_figures >= MIN_FIGURES.get(name, 0), f"{name}: {n_figures} plotly figures, expected {MIN_FIGURES[name]}"
    expected = expected_figures(name)
    assert n_figures == expected, f"{name}: the page shows {n_figures} plotly figures, its notebook made {expected}"
    if n_figures:
        page.wait_for_function(ALL_PLOTS_DRAWN, timeout=30_000)
        page.wait_for_function(READY, timeout=30_000)
        assert not page.evaluate(PLOTLY_MENUS_SHOWN), f"{name}: plotly menus drawn on a figure, not above it"
        too_wide = page.evaluate(TOO_WIDE)
        assert not too_wide, f"{name}: figures wider than the page's column (clipped; leave layout.width unset): {too_wide}"
    for i in range(n_figures):
        controls = page.evaluate(CONTROLS, i)
        if not (controls["menus"] or controls["sliders"]):
            continue
        for control, actions in _control_actions(page, i, controls):  # every control must change what is drawn
            before = page.evaluate(FIGURE_STATE, i)
            tried = []
            for action in actions:
                tried.append(action)
                try:
                    page.wait_for_function(f"(before) => ({FIGURE_STATE})({i}) !== before", arg=before, timeout=5_000)
                    break
                except Exception:  # noqa: BLE001 (playwright's TimeoutError: try the control's next entry)
                    continue
            else:
                raise AssertionError(f"{name}: figure {i}: {control} did not change the figure (tried {', '.join(tried)})")

    bertviz = page.locator("div[id^='bertviz-']")
    for i in range(bertviz.count()):
        view = bertviz.nth(i)
        view.locator("#vis svg *").first.wait_for(state="attached", timeout=30_000)
        assert view.locator("#vis svg text").count() > 0, f"{name}: bertviz view {i} drew no tokens"

    if re.search(r'class="math notranslate nohighlight"', source):
        page.wait_for_selector("mjx-container", state="attached", timeout=30_000)
        assert page.locator("mjx-merror").count() == 0, f"{name}: MathJax reported an error in the math"

    if shots:  # the whole page in one viewport (a full_page screenshot stitches the sticky header mid-page)
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
        height = min(page.evaluate("() => document.documentElement.scrollHeight"), 16_000)
        page.set_viewport_size({"width": 1280, "height": height})
        page.wait_for_timeout(1_000)  # plotly redraws responsive figures after a resize
        page.screenshot(path=str(Path(shots) / f"{name.replace('/', '__')}.png"))
    assert not run.errors, f"{name}: errors in the page:\n" + "\n".join(run.errors)
    assert not run.external, f"{name}: requests left the machine:\n" + "\n".join(run.external)
    assert not run.failed, f"{name}: requests that found nothing (a path outside {PREFIX}/?):\n" + "\n".join(run.failed)


SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
FIGURES_OFF_SCREEN = """() => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) => {
  const box = gd.getBoundingClientRect();
  return {figure: i, left: Math.round(box.left), right: Math.round(box.right)};
}).filter(f => f.left < -1 || f.right > window.innerWidth + 1)"""
# bertviz's fixed-width views: zoomed no smaller than 0.7 (its 13 px labels stay at least 9 px), their frame inside the
# screen, and every head within reach (the frame scrolls sideways inside itself when the view is wider).
BERTVIZ_DRAWN = "() => [...document.querySelectorAll('.bertviz-frame')].every(f => f.querySelector('#vis svg text'))"
BERTVIZ_FIT = """() => [...document.querySelectorAll('.bertviz-frame')].map((frame, i) => {
  const view = frame.querySelector('.bertviz-fit'), svg = frame.querySelector('#vis svg');
  const box = frame.getBoundingClientRect(), zoom = parseFloat(view.style.zoom);
  return {view: i, zoom, inside: box.left >= -1 && box.right <= window.innerWidth + 1,
          reachable: frame.scrollWidth + 2 >= svg.getBoundingClientRect().width};
}).filter(v => !(v.zoom >= 0.69 && v.inside && v.reachable))"""


def check_fits_the_screen(run: PageRun, name: str, size: str) -> None:
    """At ``size``: nothing scrolls sideways, every figure fits the screen, no figure text is smaller than 9 px, drawn
    under its title or (heatmap numbers) run into its neighbour, bertviz views readable and within reach; each figure
    saved as a PNG (before any control moves)."""
    page = run.page
    figures = page.locator(".plotly-graph-div")
    if figures.count():
        page.wait_for_function(ALL_PLOTS_DRAWN, timeout=30_000)
        page.wait_for_function(READY, timeout=30_000)
        tiny = page.evaluate(TINY_TEXT)
        assert not tiny, f"{name} at {size} width: figure text too small to read: {tiny}"
        collisions = page.evaluate(TITLE_COLLISIONS)
        assert not collisions, f"{name} at {size} width: a figure's title overlaps its other text: {collisions}"
        overlapping = page.evaluate(NUMBERS_OVERLAP)
        assert not overlapping, f"{name} at {size} width: heatmap numbers run into each other: {overlapping}"
    if page.locator(".bertviz-frame").count():
        page.wait_for_function(BERTVIZ_DRAWN, timeout=30_000)
        unfit = page.evaluate(BERTVIZ_FIT)
        assert not unfit, f"{name} at {size} width: bertviz views unreadable or out of reach: {unfit}"
    overflow = page.evaluate(SIDEWAYS)
    assert overflow <= 1, f"{name} at {size} width: the page scrolls sideways by {overflow} px"
    off_screen = page.evaluate(FIGURES_OFF_SCREEN)
    assert not off_screen, f"{name} at {size} width: figures wider than the screen: {off_screen}"
    save_figure_shots(page, name, size)
    assert not run.errors, f"{name} at {size} width: errors in the page:\n" + "\n".join(run.errors)


def save_figure_shots(page: object, name: str, size: str) -> None:
    """Each figure with its controls as a PNG, the sticky header hidden once for all of them (a style per screenshot
    made the page recompute its style twice a figure), then shown again for the checks that follow."""
    figures = page.locator(".plotly-graph-div")
    if not figures.count():
        return
    FIGURE_SHOTS.mkdir(parents=True, exist_ok=True)
    hidden = page.add_style_tag(content=STICKY_HIDDEN)
    for i in range(figures.count()):
        shot = FIGURE_SHOTS / f"{name.split('/')[-1]}__{i:02d}__{size}.png"
        figures.nth(i).locator("xpath=../..").screenshot(path=str(shot))
    hidden.evaluate("style => style.remove()")


@pytest.mark.parametrize("size", VIEWPORTS)
@pytest.mark.parametrize("name", toc_pages())
def test_page(server: tuple[str, type], browser: object, name: str, size: str) -> None:
    """The page opened once at each size: it fits the screen (``check_fits_the_screen``); at the laptop's size it also
    passes ``check_page`` (figures, their controls, bertviz, MathJax, requests), after the figures' screenshots."""
    base, _ = server
    assert (SITE / f"{name}.html").is_file(), f"{name}.html is in _toc.yml but was not built"
    run = PageRun(browser, f"{base}/{name}.html", VIEWPORTS[size])
    try:
        check_fits_the_screen(run, name, size)
        if size == "laptop":
            check_page(run, name, SCREENSHOTS)
    finally:
        run.close()


def test_index_redirects_to_root(server: tuple[str, type], browser: object) -> None:
    base, _ = server
    run = PageRun(browser, f"{base}/index.html")
    try:  # the redirect is done once the first chapter's response arrives; test_page checks that chapter's loading
        run.page.wait_for_url(re.compile(re.escape(toc_pages()[0]) + r"\.html$"), timeout=10_000, wait_until="commit")
        assert not run.external, run.external
    finally:
        run.close()


def test_bertviz_output_rewritten_and_drawn_offline(server: tuple[str, type], browser: object) -> None:
    """bertviz's own HTML (require.js, d3 and jQuery from CDNs), rewritten as the build rewrites pages, draws offline."""
    torch = pytest.importorskip("torch")
    head_view = pytest.importorskip("bertviz").head_view
    base, handler = server
    html = head_view(attention=[torch.rand(1, 2, 4, 4).softmax(-1)], tokens=list("abcd"), html_action="return").data
    assert "https://" in html  # bertviz still points at its CDNs: the rewriting below is what makes it offline
    assets = _load(ROOT / "book" / "_ext" / "offline_assets.py")
    rewritten = assets.rewrite_html(html, assets.vendor_url_for(SITE / BERTVIZ_PAGE, SITE))
    assert not re.search(r"(src=|paths|: )\s*['\"]https?://", rewritten), "a CDN URL survived the rewriting"
    handler.extra_pages[BERTVIZ_PAGE] = f"<!doctype html><meta charset='utf-8'><body>{rewritten}</body>".encode()
    run = PageRun(browser, f"{base}/{BERTVIZ_PAGE}")
    try:
        run.page.locator("#vis svg text").first.wait_for(state="attached", timeout=30_000)
        assert not run.errors, run.errors
        assert not run.external, run.external
    finally:
        run.close()


def test_no_cdn_urls_in_built_pages() -> None:
    """No <script src>, <link href> (stylesheets) or RequireJS path in the built site points off the machine."""
    offending = []
    pattern = re.compile(
        r"<script[^>]+src=[\"']https?://[^\"']+|<link[^>]+rel=[\"']stylesheet[\"'][^>]+href=[\"']https?://[^\"']+"
        r"|<link[^>]+href=[\"']https?://[^\"']+[^>]+rel=[\"']stylesheet|paths\s*:\s*\{[^}]*https?://[^}]*\}",
        re.IGNORECASE,
    )
    for page in SITE.rglob("*.html"):
        if page.is_relative_to(SITE / "_static"):
            continue
        for match in pattern.finditer(page.read_text(encoding="utf-8")):
            offending.append(f"{page.relative_to(SITE)}: {match.group(0)[:160]}")
    assert not offending, "CDN URLs in the built site:\n" + "\n".join(offending)


def test_toc_pages_listed() -> None:
    pages = toc_pages()
    assert pages[0] == "book/01_introduction" and len(pages) == len(set(pages)) > 1, pages
