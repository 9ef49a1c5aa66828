"""The live chapters in the classic Jupyter Notebook with ipywidgets 7: the closest open front end to Colab's.

Colab's own front end is not open source. Its kernel runs ipywidgets 7.7 with widgetsnbextension 3.6 and its list
has ``notebook`` 6.5, the classic Notebook, whose widget manager is the one ipywidgets 7 was made for. This test runs
that Notebook from the Colab-like environment (``make colab-env``: _build/colab-venv, Colab's versions), headless, on
127.0.0.1 with a free port and a random token and its settings in a temporary folder, and opens the trimmed chapters
of test_jupyterlab.py (only the cells their explorers need), each in a page of its own, in headless Chromium. Each
explorer is then used as a reader uses it (the same changes as in JupyterLab: press, type, choose, slide, tick), and
must redraw with what it should show, every plotly figure drawn. Any error or stderr text from a kernel, an error in
the page, or a request that leaves the machine fails the test.

The kernel is the environment's plain one, without ``COLAB_RELEASE_TAG``: on Colab the book's figures use plotly's
Colab renderer, which only Colab's page draws. Here the figures are drawn by their HTML fallback, which loads
plotly.js from plotly's CDN: the test answers that request with the plotly.js of the kernel's plotly package. The
widgets' front end is widgetsnbextension 3.6.6 (colab-venv/classic-front-end): 3.6.7 to 3.6.10, Colab's, cannot
create an Output widget in the classic Notebook (scripts/colab_env.py, step 6); Colab draws widgets with a manager of
its own. Chapter 11's bertviz views must draw with no network, RequireJS on the page (test_jupyterlab.py's
check). Screenshots of each explorer before and after the changes, and of the views, go to
_build/screenshots/notebook-classic/.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from test_jupyterlab import (
    ANSI_ESCAPE,
    BERTVIZ_CHAPTER,
    CHANGE_TIMEOUT,
    CLIPPED_TEXT,
    EXPLORERS,
    RUN_TIMEOUT,
    SHELL_TRACKING,
    START_TIMEOUT,
    STATIC_ENV,
    Change,
    calls_live_only,
    chapters_with_explorers,
    check_bertviz_views,
    kernel_runtime,
    our_processes,
    server_address,
    trimmed_chapter,
    venv_tool,
)

PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from colab_env import CLASSIC_FRONT_END, CLASSIC_WIDGETS  # noqa: E402
from colab_packages import colab_versions  # noqa: E402

COLAB_VENV_NAMED = "TRANSFORMER_BOOK_COLAB_VENV" in os.environ  # make colab-test names it: it must then be there
COLAB_VENV = Path(os.environ.get("TRANSFORMER_BOOK_COLAB_VENV", ROOT / "_build" / "colab-venv"))
SHOTS = ROOT / "_build" / "screenshots" / "notebook-classic"


@dataclass
class Server:
    url: str
    token: str
    root: Path


def _colab_tool(name: str) -> Path:
    return venv_tool(COLAB_VENV, COLAB_VENV_NAMED, name, "the Colab-like environment", "colab-env")


def _free_port() -> int:
    """A port no one listens on now (the classic Notebook, unlike JupyterLab's server, cannot be given port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    notebook = _colab_tool("jupyter-notebook")
    root = tmp_path_factory.mktemp("notebook-classic")
    (root / "book").mkdir()
    for chapter in chapters_with_explorers():
        nbformat.write(trimmed_chapter(ROOT / "book" / f"{chapter}.ipynb"), root / "book" / f"{chapter}.ipynb")
    home = root / ".jupyter"
    runtime = kernel_runtime()
    token = secrets.token_hex(24)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {STATIC_ENV, "JUPYTER_PATH", "JUPYTER_TOKEN", "PYTHONPATH", "COLAB_RELEASE_TAG", "VIRTUAL_ENV"}
    }
    env.update(
        PATH=f"{COLAB_VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_PATH=str(COLAB_VENV / CLASSIC_FRONT_END / "share" / "jupyter"),  # before the environment's
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(runtime),
        IPYTHONDIR=str(home / "ipython"),
    )
    command = [
        str(notebook),
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={_free_port()}",
        "--port-retries=0",
        f"--NotebookApp.token={token}",
        f"--notebook-dir={root}",
        "--NotebookApp.terminals_enabled=False",
        "--KernelManager.transport=ipc",
        "--MappingKernelManager.default_kernel_name=python3",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = root / "notebook.log"
    with open(log, "w") as log_file:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        url = server_address(process, runtime.glob, "nbserver-*.json", token, log, "the Notebook")
        yield Server(url, token, root)
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the Notebook stops and shuts its kernels down, one after another...
        for pid in our_processes(str(runtime)):  # ...so they are stopped all at once (each in a session of its own)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(runtime, ignore_errors=True)


# Watches the kernel's messages (errors, stderr; requests and their answers, SHELL_TRACKING) from before the first cell
# runs, then runs every cell once the widgets' manager has loaded what the kernel has (as a reader's "Run All" comes
# after it). It returns at once, so that every chapter's kernel starts while the next page opens. The manager (widgetsnbextension
# 3.6) asks a new kernel for its widgets through the "jupyter.widget.control" comm, which a kernel that has not imported
# ipywidgets 7 closes; it then asks again with a comm_info request, which the kernel answers only after the cells queued
# before it, and when the answer comes it redraws every output that shows a widget: the redraw removes the widget's view,
# and removing a view blanks its model id in the output's data (widgetsnbextension's extension.js), so the explorer is
# hidden for good. The test waits for the control comm to be closed (the manager's request is then sent) and for the
# answer to a comm_info request of its own, which the kernel sends after the manager's.
RUN_ALL = f"""() => {{
  const nb = Jupyter.notebook;
  window.__problems = [];
  {SHELL_TRACKING}
  const run = () => nb.execute_all_cells();
  const start = () => {{
    const kernel = nb.kernel, handle = kernel._handle_iopub_message.bind(kernel);
    const send = kernel.send_shell_message.bind(kernel);
    kernel.send_shell_message = (...args) => {{
      const id = send(...args);
      window.__shell.sent(id);
      return id;
    }};
    kernel._handle_iopub_message = (msg) => {{
      const type = msg.header.msg_type, content = msg.content;
      if (type === 'error') window.__problems.push(`${{content.ename}}: ${{content.evalue}}\\n` + content.traceback.join('\\n'));
      if (type === 'stream' && content.name === 'stderr') window.__problems.push('stderr: ' + content.text);
      const handled = handle(msg);
      if (type === 'status' && content.execution_state === 'idle') {{
        Promise.resolve(handled).then(() => window.__shell.answered(msg.parent_header.msg_id));
      }}
      return handled;
    }};
    const manager_loaded = () => kernel.widget_manager && Object.keys(kernel.comm_manager.comms).length === 0;
    const wait = () => manager_loaded() ? kernel.comm_info('jupyter.widget', run) : setTimeout(wait, 50);
    wait();
  }};
  if (nb.kernel && nb.kernel.is_connected()) start();
  else nb.events.one('kernel_ready.Kernel', start);
}}"""
ALL_RAN = """() => Jupyter.notebook.kernel && !Jupyter.notebook.kernel_busy && Jupyter.notebook.get_cells()
  .every(c => c.cell_type !== 'code' || (typeof c.input_prompt_number === 'number'))"""
PROBLEMS = "() => window.__problems"
_STATE = """const out = cell.querySelector(':scope > .output_wrapper');
  const figures = [...out.querySelectorAll('.js-plotly-plot')];
  const state = {
    text: out.innerText,
    figures: figures.map(gd => JSON.stringify([gd.data, gd.layout && gd.layout.title])),
    drawn: figures.filter(gd => gd.querySelector('.main-svg') && gd._fullData && gd._fullData.length === gd.data.length).length,
  };"""
OUTPUT_STATE = f"(cell) => {{ {_STATE} return state; }}"
REDRAWN = f"""([cell, before, shows, n]) => {{
  if (window.__problems.length) return true;
  if (Jupyter.notebook.kernel_busy) return false;
  {_STATE}
  return (state.text !== before.text || JSON.stringify(state.figures) !== JSON.stringify(before.figures))
    && state.text.includes(shows) && state.figures.length === n && state.drawn === n;
}}"""
DRAWN = f"""([cell, n]) => {{ {_STATE} return state.figures.length === n && state.drawn === n; }}"""


# The classic Notebook draws the book's live figures with their HTML (plotly's classic-Notebook extension does not take
# them), which loads plotly.js from plotly's CDN with RequireJS: the test answers with the plotly.js that the kernel's
# plotly package ships, which is the version that address names (transformer_book.viz, _plotly_cdn_url).
PLOTLY_CDN = re.compile(r"https://cdn\.plot\.ly/plotly-[0-9.]+\.min\.js")


def plotly_js() -> Path:
    found = sorted(COLAB_VENV.glob("lib/python3.*/site-packages/plotly/package_data/plotly.min.js"))
    assert found, f"no plotly.min.js in {COLAB_VENV}"
    return found[0]


@pytest.fixture(scope="module")
def pages(server: Server, browser: object) -> Iterator[dict]:  # noqa: F811
    """Every trimmed chapter open in a page of its own, all run at once; chapter -> (page, errors, external)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    external: list[str] = []

    def route(route: object) -> None:
        url = route.request.url
        if url.startswith((server.url, "data:", "blob:", "about:")):
            route.continue_()
        elif PLOTLY_CDN.fullmatch(url):  # the figures' HTML loads plotly.js from its CDN: the kernel's own copy
            route.fulfill(path=str(plotly_js()), content_type="application/javascript")
        else:
            external.append(url)
            route.abort()

    context.route("**/*", route)
    opened = {}
    try:
        for chapter in chapters_with_explorers():
            page, errors = context.new_page(), []
            page.on("pageerror", lambda exc, errors=errors: errors.append(f"pageerror: {exc}"))
            page.on(
                "console", lambda m, errors=errors: errors.append(f"console: {m.text}") if m.type == "error" else None
            )
            page.goto(f"{server.url}/notebooks/book/{chapter}.ipynb?token={server.token}", wait_until="load")
            page.wait_for_function(
                "() => window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded",
                timeout=START_TIMEOUT * 1000,
            )
            page.evaluate(RUN_ALL)
            opened[chapter] = (page, errors, external)
        for chapter, (page, _, _) in opened.items():
            try:
                page.wait_for_function(ALL_RAN, timeout=RUN_TIMEOUT * 1000, polling=250)
            except PlaywrightTimeout:
                pytest.fail(f"{chapter} did not run in the Notebook in {RUN_TIMEOUT} s: {page.evaluate(PROBLEMS)}")
            problems = [ANSI_ESCAPE.sub("", p) for p in page.evaluate(PROBLEMS)]
            assert not problems, f"{chapter}: running its cells in the Notebook failed:\n" + "\n".join(problems)
        yield opened
    finally:
        context.close()


def test_the_notebook_runs_colabs_front_end_versions() -> None:
    """The Notebook, kernel, ipywidgets and plotly at Colab's versions; the widgets' front end at CLASSIC_WIDGETS."""
    python = _colab_tool("python")
    names = ("notebook", "ipywidgets", "ipykernel", "ipython", "plotly")
    installed = json.loads(
        subprocess.run(
            [
                str(python),
                "-c",
                f"import importlib.metadata as m, json; print(json.dumps({{n: m.version(n) for n in {names}}}))",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    colab = colab_versions()
    assert installed == {name: colab[name] for name in names}
    front_end = COLAB_VENV / CLASSIC_FRONT_END
    assert (front_end / "share" / "jupyter" / "nbextensions" / "jupyter-js-widgets" / "extension.js").is_file(), (
        f"the widgets' classic front end is missing in {front_end}: run `make colab-env`"
    )
    assert [p.name for p in front_end.glob("widgetsnbextension-*.dist-info")] == [
        f"widgetsnbextension-{CLASSIC_WIDGETS}.dist-info"
    ]


@pytest.mark.parametrize("chapter", sorted(EXPLORERS))
def test_explorer_redraws_in_the_classic_notebook_with_ipywidgets_7(pages: dict, server: Server, chapter: str) -> None:
    explorer = EXPLORERS[chapter]
    page, errors, external = pages[chapter]
    page.bring_to_front()  # the tab the reader looks at: a tab behind it draws its animation frames once a second
    sources = [c.source for c in nbformat.read(server.root / "book" / f"{chapter}.ipynb", as_version=4).cells]
    cells = page.locator("#notebook-container .cell")
    assert cells.count() == len(sources)
    cell = cells.nth(next(i for i, source in enumerate(sources) if calls_live_only(source)))
    cell.scroll_into_view_if_needed()
    handle = cell.element_handle()
    SHOTS.mkdir(parents=True, exist_ok=True)

    def state() -> dict:
        return page.evaluate(OUTPUT_STATE, handle)

    def apply(change: Change) -> None:
        figures = explorer.figures if change.figures is None else change.figures
        before = state()
        change.act(cell)
        try:
            page.wait_for_function(
                REDRAWN, arg=[handle, before, change.shows, figures], timeout=CHANGE_TIMEOUT, polling=200
            )
        except PlaywrightTimeout:
            now = state()
            pytest.fail(
                f"{chapter}: after '{change.what}' the explorer did not redraw"
                + (f" showing {change.shows!r}" if change.shows else "")
                + f"; {now['drawn']} of {len(now['figures'])} figures drawn ({figures} expected); "
                f"output now:\n{now['text'][:1500]}"
            )
        problems = [ANSI_ESCAPE.sub("", p) for p in page.evaluate(PROBLEMS)]
        assert not problems, f"{chapter}, after '{change.what}': the kernel reported\n" + "\n".join(problems)

    if explorer.opens is not None:
        apply(explorer.opens)
    else:  # the explorer draws as it is built: its figures must be drawn before anything changes
        try:
            page.wait_for_function(DRAWN, arg=[handle, explorer.figures], timeout=CHANGE_TIMEOUT, polling=200)
        except PlaywrightTimeout:
            now = state()
            pytest.fail(
                f"{chapter}: the explorer drew {now['drawn']} of {len(now['figures'])} figures "
                f"({explorer.figures} expected); output now:\n{now['text'][:1500]}"
            )
    output = cell.locator(":scope > .output_wrapper")
    output.screenshot(path=str(SHOTS / f"classic-{chapter}-before.png"))
    first = state()
    for change in explorer.changes:
        apply(change)
    output.screenshot(path=str(SHOTS / f"classic-{chapter}-after.png"))
    clipped = page.evaluate(CLIPPED_TEXT, handle)
    assert not clipped, f"{chapter}: the explorer's controls show their text cut short: {clipped}"
    assert state()["text"] != first["text"] or state()["figures"] != first["figures"]
    assert not errors, f"{chapter}: errors in the Notebook's page:\n" + "\n".join(errors)
    assert not external, "requests left the machine:\n" + "\n".join(re.sub(r"\?.*", "", u) for u in external)


def test_every_bertviz_view_draws_in_the_classic_notebook_with_no_network(pages: dict, server: Server) -> None:
    page, errors, external = pages[BERTVIZ_CHAPTER]
    page.bring_to_front()
    sources = [c.source for c in nbformat.read(server.root / "book" / f"{BERTVIZ_CHAPTER}.ipynb", as_version=4).cells]
    cells = page.locator("#notebook-container .cell")
    check_bertviz_views(page, cells, sources, ":scope > .output_wrapper", SHOTS / "classic-bertviz")
    assert not errors, "errors in the Notebook's page:\n" + "\n".join(errors)
    assert not external, "requests left the machine:\n" + "\n".join(re.sub(r"\?.*", "", u) for u in external)
