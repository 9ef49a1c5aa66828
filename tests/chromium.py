"""Headless Chromium for the tests that open pages (the built book, the playground, JupyterLab, the classic Notebook):
the browser and a server of the built site as pytest fixtures, and one page's run that records errors and blocks
every request off this machine.

Debian's Chromium at /usr/bin/chromium (``BOOK_CHROMIUM`` overrides the path), driven by Python's playwright; the
site is served on 127.0.0.1 under ``/<repository>/``, as GitHub Pages serves it.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
CHROMIUM = os.environ.get("BOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# A proxy that nothing answers (the discard port) for every host but this machine: a browser whose requests are not
# routed through the test (PageRun records them) reaches no other machine, by name or by address.
NO_WAY_OUT = {"server": "http://127.0.0.1:9", "bypass": "127.0.0.1"}
# Console errors that are not failures (matched against "message url"): the browser asks every site for a favicon.
IGNORED_CONSOLE = (re.compile(r"favicon\.ico"),)
# GitHub Pages serves a project's site under /<repository>/: so does this test (the name from _config.yml).
PREFIX = "/" + re.search(r"^\s*url:\s*\S+/([^/\s]+?)/?\s*$", (ROOT / "_config.yml").read_text(), re.MULTILINE).group(1)
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1280, "height": 900}}
CONTEXTS = {"phone": {"has_touch": True, "is_mobile": True}, "laptop": {}}


def _load(path: Path) -> object:
    """A module of the repository that is not importable as a package (a script, the Sphinx extension)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toc_pages() -> list[str]:
    """Document names of every page of the English book (_toc.yml), in reading order."""
    return _load(ROOT / "scripts" / "book_toc.py").toc_files(ROOT)


def edition_pages() -> list[str]:
    """Document names of every page of both editions, in reading order: the English book's, then the Chinese one's,
    published under zh/ (zh/_toc.yml)."""
    return toc_pages() + [f"zh/{name}" for name in _load(ROOT / "scripts" / "book_toc.py").toc_files(ROOT / "zh")]


def build_folder(name: str) -> Path:
    """The jupyter-book build folder (its cache, its executed notebooks) of the edition page ``name`` belongs to."""
    return ROOT / "_build" / "zh" / "_build" if name.startswith("zh/") else SITE.parent


class _Handler(http.server.SimpleHTTPRequestHandler):
    extra_pages: dict[str, bytes] = {}

    def translate_path(self, path: str) -> str:
        """Files under ``PREFIX`` only: a path outside it is not found, as on GitHub Pages."""
        if not path.startswith(PREFIX + "/"):
            return str(SITE / "__outside_the_site__")
        return super().translate_path(path[len(PREFIX) :])

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


@pytest.fixture(scope="module")
def cached_context(browser: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], object]]:
    """``cached_context(size)``: a browser context at that size (VIEWPORTS, CONTEXTS) that keeps what its pages load
    in a cache on disk, as a reader's browser does from one chapter to the next: the theme's, plotly's and MathJax's
    scripts are then read and compiled once, not for every page (a chapter's first load in a fresh context takes
    about twice as long). Made at first use, one per size, for the module's tests; ``PageRun`` clears the site's
    stored settings when it closes a page of one, so that every page opens as on a first visit."""
    contexts: dict[str, object] = {}

    def at(size: str) -> object:
        if size not in contexts:
            contexts[size] = browser.browser_type.launch_persistent_context(
                tmp_path_factory.mktemp(f"chromium-{size}"),
                executable_path=CHROMIUM,
                args=CHROMIUM_ARGS,
                proxy=NO_WAY_OUT,
                headless=True,
                viewport=VIEWPORTS[size],
                color_scheme="light",
                **CONTEXTS[size],
            )
            for blank in contexts[size].pages:  # the window it opens with
                blank.close()
        return contexts[size]

    yield at
    for context in contexts.values():
        context.close()


def _on_this_machine(url: str) -> bool:
    return urlparse(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:", "about:"))


class PageRun:
    """One page opened in a fresh context (or a new page of ``context``, which it leaves open) that records errors and
    blocks (and records) off-machine requests."""

    def __init__(
        self, browser: object, url: str, viewport: dict | None = None, context: object | None = None, **options: object
    ):
        self.errors: list[str] = []
        self.external: list[str] = []
        self.failed: list[str] = []
        self.owns_context = context is None
        if self.owns_context:
            context = browser.new_context(viewport=viewport or VIEWPORTS["laptop"], **options)
        self.context = context
        self.page = self.context.new_page()
        if self.owns_context:
            self.page.route("**/*", self._route)
        else:  # a route would turn the context's cache off: its browser reaches no other host, this records them
            self.page.on("request", self._request)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("console", self._console)
        self.page.on("response", self._response)
        self.page.goto(url, wait_until="load")

    def _route(self, route: object) -> None:
        url = route.request.url
        if _on_this_machine(url):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def _request(self, request: object) -> None:
        if not _on_this_machine(request.url):
            self.external.append(request.url)

    def _response(self, response: object) -> None:
        if response.status >= 400 and not any(p.search(response.url) for p in IGNORED_CONSOLE):
            self.failed.append(f"{response.status} {response.url}")

    def _console(self, message: object) -> None:
        where = (message.location or {}).get("url", "")
        if message.type == "error" and not any(p.search(f"{message.text} {where}") for p in IGNORED_CONSOLE):
            self.errors.append(f"console: {message.text} ({where})")

    def close(self) -> None:
        if self.owns_context:
            self.context.close()
            return
        if self.page.url.startswith("http"):  # the theme keeps the reader's colour mode there
            self.page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
        self.page.close()
