"""The live chapters in a real JupyterLab: every ipywidgets explorer of the book (each ``live_only(...)`` call) built
in a kernel, operated as a reader operates it, with its plotly figures drawn by plotly's JupyterLab extension.

JupyterLab runs from the reader's environment (``make reader-env``: _build/reader-venv, installed exactly as the
README's section "Run the chapters on your machine" says), headless, on 127.0.0.1 with a port the system picks and a
random token, its settings, data and runtime files in a temporary folder, and it is shut down with its kernels at the
end, whether the tests passed or not. Headless Chromium (Python playwright) opens the chapters in one JupyterLab page.

Not every cell of a chapter runs (all of them take minutes): only the first cell (which switches on the book's figure
renderer), the cells that build explorers or show bertviz views, and the cells those need, found from the code: for
each name a needed cell reads, the last cell before it that assigns that name, and so on back (a cell that only
changes an object in place, without assigning it, is not found: the explorer then runs on the object as first made).
Chapter 11's models train for minutes on two cores, so ``STAND_INS`` replaces that cell by untrained models of the
same configuration, and the cell that checks what the trained models answer by the attention maps of the untrained
ones reading those answers: the explorer and the views run the same code on other weights. The trimmed copies are
written to the temporary folder; the chapters themselves are never opened (JupyterLab saves what it opens).

Each chapter runs in its own kernel (all at once, from JupyterLab's "Run All Cells"); then, for each explorer, what a
reader does: press its button when it draws on request, then type a new sequence, pick another entry of a menu, move
a slider from the keyboard. After each change the output must change and show what it should once the kernel is
idle again. Every message from the kernels is watched: an error (a cell's, or a widget callback's, which JupyterLab
shows only in its log console) or any text on stderr fails the test, as do errors in the page and requests that
leave the machine. Every plotly figure must be drawn by plotly's own renderer (``jp-RenderedPlotly``), not by an
HTML fallback, and no control's label may be cut short. Every bertviz view must draw all its lines (bertviz_drawing.py)
with every request off the machine refused, and redraw when a reader picks another attention type in its menu.
Screenshots of each explorer before and after the changes, and of each bertviz view, go to
_build/screenshots/jupyterlab/ (``JUPYTERLAB_SHOTS`` overrides the folder).
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from bertviz_drawing import DRAWINGS, drawing_defects, views_drawn
from chromium import toc_pages
from IPython.core.inputtransformer2 import TransformerManager

PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError

ROOT = Path(__file__).resolve().parents[2]
# make test and make lab-test name the reader's environment, which must then be there; a bare pytest run looks in
# _build/reader-venv and skips these tests when `make reader-env` has not made it.
READER_VENV_NAMED = "TRANSFORMER_BOOK_READER_VENV" in os.environ
READER_VENV = Path(os.environ.get("TRANSFORMER_BOOK_READER_VENV", ROOT / "_build" / "reader-venv"))
SHOTS = Path(os.environ.get("JUPYTERLAB_SHOTS", ROOT / "_build" / "screenshots" / "jupyterlab"))
STATIC_ENV = "TRANSFORMER_BOOK_STATIC"  # set, the explorers would be notes (transformer_book.viz.in_static_build)
START_TIMEOUT = 90  # seconds for JupyterLab's server to answer
RUN_TIMEOUT = 300  # seconds for every trimmed chapter to run (about 30 s on two quiet cores)
CHANGE_TIMEOUT = 60_000  # milliseconds for an explorer to redraw after a change
# What a kernel may print on stderr while the chapters run: JupyterLab's widget manager asks a new kernel for its
# widgets before the chapter imports ipywidgets, and ipykernel says so (harmless: the manager falls back; see
# https://github.com/jupyter-widgets/ipywidgets/issues/3525). Nothing at all is allowed once the explorers are built.
HARMLESS_WHILE_RUNNING = re.compile(r"stderr: No such comm: [0-9a-f-]+\n?")
# The one failed request allowed: jupyter_server (2.x) lists a kernel that is still starting before it has set the
# kernel's last_activity (MappingKernelManager._async_start_kernel sets it after the launch that adds the kernel), so a
# GET /api/kernels in that window answers 500 with a TraitError in the server's log; JupyterLab polls the list again.
# Six kernels starting at once make the window likely. Allowed only as often as the server logged that error.
KERNEL_LIST_RACE = ("500 GET /api/kernels", "TraitError: The 'last_activity' trait of a ServerKernelManager instance")

# Chapter 11 trains its two models for minutes: untrained ones of the same configuration stand in, one seed each so
# that the two models differ as the trained ones do; their attention maps while they read the right answers (as the
# trained ones produce them) stand in for the trained models' answers, which the chapter checks.
STAND_INS = {
    "11_inside_the_model": {
        "inside-06": (
            "# tests/notebooks/test_jupyterlab.py: untrained models of the chapter's configuration stand in for its training.\n"
            "SYMBOLS = [5, 9, 3, 12, 9, 6, 4, 10]\n"
            'TASKS = ("copy", "reverse")\n'
            'TASK_NAMES = {"copy": tr("copy"), "reverse": tr("reverse")}\n'
            "models = {}\n"
            "for seed, task in enumerate(TASKS):\n"
            "    torch.manual_seed(seed)\n"
            "    models[task] = Transformer(small_model_config(TaskConfig(task).vocab_size)).to(device).eval()\n"
        ),
        "inside-09": (
            "# tests/notebooks/test_jupyterlab.py: the untrained models read the answers the trained ones give.\n"
            "answers = {}\n"
            "for task in TASKS:\n"
            "    src = torch.tensor([SYMBOLS])  # (1, S)\n"
            "    tgt_in = make_batch(src, task_target(task, src, torch.tensor([len(SYMBOLS)]))).tgt_in  # (1, S + 1)\n"
            "    maps = models[task].attention_maps(src.to(device), tgt_in.to(device))\n"
            "    tokens = [token_label(s) for s in SYMBOLS], [token_label(i) for i in tgt_in[0].tolist()]\n"
            "    answers[task] = viz.AttentionExample.from_maps(maps, *tokens)\n"
        ),
    }
}
BERTVIZ_VIEWS = ("head_view", "model_view")  # bertviz's views, as the chapters import them


# --------------------------------------------------------------------------------------------- the cells that run
def _code(source: str) -> ast.Module:
    return ast.parse(TransformerManager().transform_cell(source))  # IPython's magics become Python


def calls(source: str, names: tuple[str, ...]) -> bool:
    """Whether the cell ``source`` calls a function by one of ``names``."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names for n in ast.walk(_code(source))
    )


def calls_live_only(source: str) -> bool:
    return calls(source, ("live_only",))


def shows_bertviz(source: str) -> bool:
    return calls(source, BERTVIZ_VIEWS)


def defined_and_read(source: str) -> tuple[set[str], set[str]]:
    """The names a cell assigns (imports, definitions, targets, arguments) and the global names it reads."""
    defined, read = set(), set()
    for node in ast.walk(_code(source)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else defined).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return defined, read - set(dir(builtins)) - {"get_ipython"}


def needed_cells(sources: list[str]) -> list[int]:
    """Indices of the code cells to run: the first, those calling ``live_only`` or showing a bertviz view, and those
    they need (see above)."""
    names = [defined_and_read(s) for s in sources]
    need = {0} | {i for i, s in enumerate(sources) if calls_live_only(s) or shows_bertviz(s)}
    todo = sorted(need)
    while todo:
        j = todo.pop()
        defined, read = names[j]
        for name in sorted(read - defined):
            source = next((i for i in range(j - 1, -1, -1) if name in names[i][0]), None)
            if source is None:
                raise AssertionError(f"code cell {j} reads {name!r}, which no cell before it assigns")
            if source not in need:
                need.add(source)
                todo.append(source)
    return sorted(need)


def trimmed_chapter(path: Path) -> nbformat.NotebookNode:
    """The chapter with only the code cells its explorers need (stand-ins replacing slow ones), without outputs."""
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    for cell_id, source in STAND_INS.get(path.stem, {}).items():
        cell = next((c for c in cells if c.get("id") == cell_id), None)
        assert cell is not None, f"{path.name} has no cell {cell_id!r} for STAND_INS to replace: update STAND_INS"
        cell.source = source
    nb.cells = [cells[i] for i in needed_cells([c.source for c in cells])]
    for cell in nb.cells:
        cell.outputs, cell.execution_count = [], None
    return nb


def chapters_with_explorers() -> list[str]:
    names = []
    for page in toc_pages():
        path = ROOT / f"{page}.ipynb"
        if path.is_file():
            nb = nbformat.read(path, as_version=4)
            if any(c.cell_type == "code" and calls_live_only(c.source) for c in nb.cells):
                names.append(path.stem)
    return names


# --------------------------------------------------------------------------------------------- what a reader does
@dataclass(frozen=True)
class Change:
    """One thing a reader does to an explorer, and a text its output must show afterwards."""

    what: str
    act: Callable[[object], None]  # given the explorer's cell (a playwright Locator)
    shows: str = ""
    figures: int | None = None  # plotly figures in the output afterwards, when not the explorer's usual number


def type_in(label: str, text: str) -> Change:
    def act(cell: object) -> None:
        box = cell.get_by_role("textbox", name=label, exact=True)
        box.fill(text)
        box.press("Enter")  # the explorers' text boxes send their value on Enter (continuous_update=False)

    return Change(f"type {text!r} into {label!r}", act)


def choose(label: str, option: str) -> Change:
    return Change(
        f"choose {option!r} in {label!r}",
        lambda cell: cell.get_by_role("combobox", name=label, exact=True).select_option(label=option),
    )


def press(name: str) -> Change:
    return Change(f"press {name!r}", lambda cell: cell.get_by_role("button", name=name, exact=True).click())


def slide(label: str, steps: int) -> Change:
    """Move a slider from the keyboard: focus its handle, press the arrow key ``steps`` times. (ipywidgets' slider
    handle has no accessible name: its label is not tied to it, so the slider is found by the label beside it. In
    ipywidgets 8 the handle has the role slider; ipywidgets 7's, a jQuery UI handle, has no role, only its class.)"""

    def act(cell: object) -> None:
        label_text = cell.page.locator(".widget-label", has_text=re.compile(rf"^{re.escape(label)}$"))
        slider = cell.locator(".widget-slider").filter(has=label_text)
        handle = slider.get_by_role("slider").or_(slider.locator(".ui-slider-handle"))
        handle.focus()
        for _ in range(abs(steps)):
            handle.press("ArrowRight" if steps > 0 else "ArrowLeft")

    return Change(f"move {label!r} by {steps} steps", act)


def tick(label: str) -> Change:
    return Change(f"tick {label!r}", lambda cell: cell.get_by_role("checkbox", name=label, exact=True).click())


# Every request a page sends a kernel (a cell, a control's new state, a button's click) is counted, and waits until the
# kernel's idle status for it has come back and the front end has handled that status (ipywidgets sends a control's
# held change from there). Each front end's script that runs the chapters installs this, and calls
# window.__shell.sent(id) and .answered(id).
SHELL_TRACKING = """window.__shell = {count: 0, waiting: new Set(),
  sent(id) { this.count += 1; this.waiting.add(id); }, answered(id) { this.waiting.delete(id); }};"""
SHELL_COUNT = "() => window.__shell.count"
ALL_ANSWERED = "(count) => window.__shell.count > count && window.__shell.waiting.size === 0"


def then(first: Change, second: Change, shows: str = "") -> Change:
    """Two actions that make one change (set a control, then press the explorer's draw button); the second waits until
    the kernel has answered what the first sent. A click goes to the kernel at once, while ipywidgets holds a control's
    next change until the kernel has answered its last: a click right after two slider steps reached the kernel
    between them, and the explorer drew the first step's value."""

    def act(cell: object) -> None:
        count = cell.page.evaluate(SHELL_COUNT)
        first.act(cell)
        try:
            cell.page.wait_for_function(ALL_ANSWERED, arg=count, timeout=CHANGE_TIMEOUT, polling=100)
        except PlaywrightTimeout:
            pytest.fail(
                f"after '{first.what}' the kernel had not answered within {CHANGE_TIMEOUT // 1000} s "
                f"({cell.page.evaluate(SHELL_COUNT) - count} requests sent, none if the control did not change)"
            )
        second.act(cell)

    return Change(f"{first.what}, then {second.what}", act, shows)


def showing(change: Change, text: str, figures: int | None = None) -> Change:
    return Change(change.what, change.act, text, figures)


@dataclass(frozen=True)
class Explorer:
    """How a reader uses one chapter's explorer: ``opens`` (a draw button, for those that draw on request), then each
    of ``changes``; ``figures`` is how many plotly figures its output then shows."""

    changes: tuple[Change, ...]
    opens: Change | None = None
    figures: int = 1


def parameters(**sizes: object) -> str:
    """What chapter 06's parameter counter must show for the paper's base model with ``sizes`` changed, counted here
    by the package (``sizes``: d_model, layers, shared, as the explorer's controls name them)."""
    from transformer import TransformerConfig
    from transformer_book.viz.model import parameter_tree

    d_model, layers, shared = sizes.get("d_model", 512), sizes.get("layers", 6), sizes.get("shared", True)
    config = TransformerConfig(
        37_000,
        37_000,
        d_model=d_model,
        d_ff=4 * d_model,
        n_encoder_layers=layers,
        n_decoder_layers=layers,
        share_embeddings=shared,
        tie_output_embedding=shared,
    )
    return f"{sum(parameter_tree(config).values()):,} parameters"


EXPLORERS = {
    "02_embeddings": Explorer(
        opens=showing(press("Show"), "tokens: ['<bos>', 'the', 'red', 'fox'"),
        changes=(
            then(
                type_in("sentence", "my dog likes the green bird"),
                press("Show"),
                "tokens: ['<bos>', 'my', 'dog', 'likes', 'the', 'green', 'bird', '<eos>']",
            ),
        ),
    ),
    "03_positional_encoding": Explorer(
        opens=showing(press("Draw"), "max |M_k PE(pos) - PE(pos + k)|"),
        changes=(
            then(slide("k", 1), press("Draw")),
            then(slide("d_model", -1), press("Draw"), "Sinusoidal positional encoding table (d_model = 62)"),
        ),
    ),
    "04_masks": Explorer(
        changes=(
            showing(
                type_in("tokens", "the dog ran far <pad> <pad>"),
                "tokens: ['the', 'dog', 'ran', 'far', '<pad>', '<pad>']",
            ),
        )
    ),
    "05_attention": Explorer(
        changes=(
            showing(choose("divide by", "1 (no scaling)"), "divided by 1 (no scaling)"),
            showing(slide("keys", 4), "k15"),
        )  # 12 keys, k0 to k11, then 16
    ),
    "06_model": Explorer(
        figures=0,
        changes=(
            showing(choose("d_model", "256"), parameters(d_model=256)),
            showing(slide("layers", -2), parameters(d_model=256, layers=4)),
            showing(tick("share and tie embeddings"), parameters(d_model=256, layers=4, shared=False)),
        ),
    ),
    "11_inside_the_model": Explorer(
        changes=(
            showing(type_in("symbols", "4 8 15"), "each between 3 and 12; got '4 8 15'", figures=0),  # 15 is no symbol
            showing(type_in("symbols", "4 8 11 6 6"), "copy: every layer and head"),
            showing(choose("model", "reverse"), "reverse: every layer and head"),
        )
    ),
}


# --------------------------------------------------------------------------------------------- JupyterLab
@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path


def venv_tool(venv: Path, named: bool, name: str, what: str, target: str) -> Path:
    """``name`` from the bin folder of ``venv`` (``what``, made by ``make <target>``); skips the test if it is
    missing, or fails it when the environment was ``named`` (make test names the environments it has made)."""
    tool = venv / "bin" / name
    if not tool.is_file():
        (pytest.fail if named else pytest.skip)(f"{what} is not made ({tool} missing): run `make {target}`")
    return tool


def _reader_tool(name: str) -> Path:
    return venv_tool(READER_VENV, READER_VENV_NAMED, name, "the reader's environment", "reader-env")


def log_tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.is_file() else "(no log)"


def kernel_runtime() -> Path:
    """A server's runtime folder, for its own files and its kernels' sockets. The server starts its kernels on Unix
    sockets named after each kernel's id (``--KernelManager.transport=ipc``), not on TCP ports: jupyter_client finds
    free ports by binding port 0 and letting go, and a kernel that another server or program started at the same
    moment can be given the same one ("Address already in use"). A socket's path must stay under about 100
    characters, so the folder is a short one in the system's temporary folder, not pytest's."""
    return Path(tempfile.mkdtemp(prefix="jupyter-"))


def our_processes(marker: str) -> list[int]:
    """Processes whose command line names ``marker`` (the temporary runtime folder: the kernels this test started)."""
    pids = []
    for proc in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if proc.name.isdigit():
            try:
                if marker in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    pids.append(int(proc.name))
            except OSError:
                pass
    return pids


def _request(url: str, method: str = "GET", timeout: float = 5) -> int:
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=timeout) as response:
        return response.status


def server_address(process: subprocess.Popen, files: Callable, pattern: str, token: str, log: Path, name: str) -> str:
    """The address of the Jupyter server ``process`` once it answers, read from the info file it writes (``pattern``
    among ``files``, its runtime folder's glob); fails the test, with its log, if it exits or takes too long."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            pytest.fail(f"{name} exited with {process.returncode}:\n{log_tail(log)}")
        if time.monotonic() > deadline:
            pytest.fail(f"{name} did not start in {START_TIMEOUT} s:\n{log_tail(log)}")
        for info_file in files(pattern):
            info = json.loads(info_file.read_text() or "{}")
            try:
                if _request(f"{info['url'].rstrip('/')}/api/status?token={token}") == 200:
                    return info["url"].rstrip("/")
            except (OSError, KeyError):
                pass
        time.sleep(0.25)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    jupyter = _reader_tool("jupyter")
    root = tmp_path_factory.mktemp("jupyterlab")
    (root / "book").mkdir()
    for chapter in chapters_with_explorers():
        nbformat.write(trimmed_chapter(ROOT / "book" / f"{chapter}.ipynb"), root / "book" / f"{chapter}.ipynb")
    home = root / ".jupyter"  # config, data and runtime files of this server only: no user's settings or kernels
    settings = home / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    runtime = kernel_runtime()
    token = secrets.token_hex(24)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {STATIC_ENV, "JUPYTER_PATH", "JUPYTER_TOKEN", "JUPYTER_PORT", "PYTHONPATH"}
    }
    env.update(
        VIRTUAL_ENV=str(READER_VENV),
        PATH=f"{READER_VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(runtime),
        IPYTHONDIR=str(home / "ipython"),
    )
    command = [
        str(jupyter),
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        "--port=0",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        "--ServerApp.terminals_enabled=False",
        "--KernelManager.transport=ipc",
    ]
    if os.geteuid() == 0:  # containers (CI's Debian image) run as root, which Jupyter refuses without this
        command.append("--allow-root")
    log = root / "jupyterlab.log"
    with open(log, "w") as log_file:
        server = subprocess.Popen(
            command, cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = None
    try:
        url = server_address(server, runtime.glob, "jpserver-*.json", token, log, "JupyterLab")
        yield Lab(url, token, root, log)
    finally:
        if url is not None:
            try:  # the server's own shutdown: every kernel first, then the server
                _request(f"{url}/api/shutdown?token={token}", method="POST")
            except OSError:
                pass
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        for pid in our_processes(str(runtime)):  # kernels run in their own sessions; any left is ours
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(runtime, ignore_errors=True)


# Opens every trimmed chapter in the page's JupyterLab and runs all its cells, all at once; watches each kernel's
# messages (errors and stderr, whatever JupyterLab does with them) from before its first cell runs.
OPEN_AND_RUN = f"""async (paths) => {{
  const app = window.jupyterapp;
  await app.started; await app.restored;
  window.__lab = {{}};
  {SHELL_TRACKING}
  for (const path of paths) {{
    const entry = window.__lab[path] = {{done: false, ok: null, problems: []}};
    app.commands.execute('docmanager:open', {{path, factory: 'Notebook'}}).then(async (panel) => {{
      entry.panel = panel;
      await panel.context.ready;
      await panel.sessionContext.ready;
      panel.sessionContext.session.kernel.anyMessage.connect((_, {{msg, direction}}) => {{
        if (direction === 'send' && msg.channel === 'shell') window.__shell.sent(msg.header.msg_id);
      }});
      // iopubMessage comes after the kernel's handlers (ipywidgets') have taken the message
      panel.sessionContext.iopubMessage.connect((_, msg) => {{
        const type = msg.header.msg_type, content = msg.content;
        if (type === 'error') entry.problems.push(`${{content.ename}}: ${{content.evalue}}\\n` + content.traceback.join('\\n'));
        if (type === 'stream' && content.name === 'stderr') entry.problems.push('stderr: ' + content.text);
        if (type === 'status' && content.execution_state === 'idle') window.__shell.answered(msg.parent_header.msg_id);
      }});
      entry.ok = await app.commands.execute('notebook:run-all-cells', {{widgetId: panel.id, activate: false}});
    }}).catch((error) => {{ entry.problems.push('JupyterLab: ' + error); }}).finally(() => {{ entry.done = true; }});
  }}
}}"""
ALL_RUN = "() => Object.values(window.__lab).every(e => e.done)"
RUN_STATE = """() => Object.fromEntries(Object.entries(window.__lab).map(([path, e]) => [path, {
  done: e.done, ok: e.ok, problems: e.problems,
  kernel: e.panel && e.panel.sessionContext.session ? e.panel.sessionContext.session.kernel.status : 'none',
  unrun: e.panel ? e.panel.content.widgets.filter(c => c.model.type === 'code' && !c.model.executionCount).length : -1,
}]))"""
ACTIVATE = """(path) => { const e = window.__lab[path]; window.jupyterapp.shell.activateById(e.panel.id);
  return e.panel.id; }"""
# Controls whose text a reader cannot read whole: a label, a readout or a button cut short (ipywidgets ends a long
# description with an ellipsis at its default width).
CLIPPED_TEXT = """(cell) => [...cell.querySelectorAll('.widget-label, .widget-label-basic, .widget-readout, .jupyter-button')]
  .filter(e => e.offsetParent && e.textContent.trim() && e.scrollWidth > e.clientWidth + 1)
  .map(e => `${e.textContent.trim()} (${e.clientWidth} of ${e.scrollWidth} px shown)`)"""
KERNEL_IDLE = "(path) => window.__lab[path].panel.sessionContext.session.kernel.status === 'idle'"
PROBLEMS = "(path) => window.__lab[path].problems"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # the colours of IPython's tracebacks
# What an explorer's cell shows: the text of its output area (widget outputs included), each figure's data and
# title, how many figures plotly has drawn (its SVG made, every trace laid out), and by which renderer.
_STATE = """const out = cell.querySelector('.jp-Cell-outputArea');
  const figures = [...out.querySelectorAll('.js-plotly-plot')];
  const state = {
    text: out.innerText,
    figures: figures.map(gd => JSON.stringify([gd.data, gd.layout && gd.layout.title])),
    drawn: figures.filter(gd => gd.querySelector('.main-svg') && gd._fullData && gd._fullData.length === gd.data.length).length,
    byExtension: figures.filter(gd => gd.classList.contains('jp-RenderedPlotly')).length,
    html: out.querySelectorAll('[data-mime-type="text/html"] .plotly-graph-div').length,
  };"""
OUTPUT_STATE = f"(cell) => {{ {_STATE} return state; }}"
# Redrawn: the kernel is idle, and the output differs from ``before``, shows ``shows`` and has ``figures`` drawn; or
# the kernel has reported a problem, which ends the wait at once (the test then fails with it).
REDRAWN = f"""([path, cell, before, shows, n]) => {{
  if (window.__lab[path].problems.length) return true;
  if (window.__lab[path].panel.sessionContext.session.kernel.status !== 'idle') return false;
  {_STATE}
  return (state.text !== before.text || JSON.stringify(state.figures) !== JSON.stringify(before.figures))
    && state.text.includes(shows) && state.figures.length === n && state.drawn === n;
}}"""


@dataclass
class Session:
    page: object
    root: Path  # JupyterLab's folder, with the trimmed chapters in book/
    panels: dict[str, str]  # chapter -> the id of its notebook panel
    errors: list[str]  # errors in the page and its console
    failed: list[str]  # requests answered with an error status: "status method path"
    external: list[str]
    log: Path  # JupyterLab's log

    def page_errors(self) -> list[str]:
        """The page's errors and failed requests, less the kernel-list race above as often as the server logged it."""
        races = self.log.read_text(errors="replace").count(KERNEL_LIST_RACE[1])
        failed = []
        for request in self.failed:
            if request.startswith(KERNEL_LIST_RACE[0]) and races:
                races -= 1
            else:
                failed.append(f"request failed: {request}")
        return self.errors + failed


@pytest.fixture(scope="module")
def session(lab: Lab, browser: object) -> Iterator[Session]:  # noqa: F811
    errors, failed, external = [], [], []
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def route(route: object) -> None:
        url = route.request.url
        if url.startswith((lab.url, "data:", "blob:", "about:")):
            route.continue_()
        else:
            external.append(url)
            route.abort()

    try:
        context.route("**/*", route)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
        page.on(
            "console",
            lambda m: (
                errors.append(f"console: {m.text}")
                if m.type == "error" and not m.text.startswith("Failed to load resource")
                else None
            ),
        )  # see failed
        page.on(
            "response",
            lambda r: (
                failed.append(f"{r.status} {r.request.method} {urllib.parse.urlsplit(r.url).path}")
                if r.status >= 400
                else None
            ),
        )
        page.goto(f"{lab.url}/lab?token={lab.token}&reset", wait_until="load")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=START_TIMEOUT * 1000)
        chapters = chapters_with_explorers()
        page.evaluate(OPEN_AND_RUN, [f"book/{c}.ipynb" for c in chapters])
        try:
            page.wait_for_function(ALL_RUN, timeout=RUN_TIMEOUT * 1000, polling=250)
        except PlaywrightTimeout:
            pytest.fail(
                f"the chapters did not run in {RUN_TIMEOUT} s: {json.dumps(page.evaluate(RUN_STATE), indent=1)}"
                f"\nJupyterLab's log:\n{log_tail(lab.log)}"
            )
        state = page.evaluate(RUN_STATE)
        panels = {}
        for chapter in chapters:
            entry = state[f"book/{chapter}.ipynb"]
            entry["problems"] = [
                ANSI_ESCAPE.sub("", p) for p in entry["problems"] if not HARMLESS_WHILE_RUNNING.fullmatch(p)
            ]
            assert entry["ok"] and not entry["problems"] and entry["unrun"] == 0, (
                f"{chapter}: running its cells in JupyterLab failed: {json.dumps(entry, indent=1)}"
            )
            panels[chapter] = page.evaluate(ACTIVATE, f"book/{chapter}.ipynb")
        page.evaluate("() => Object.values(window.__lab).forEach(e => { e.problems = []; })")
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
        yield Session(page, lab.root, panels, errors, failed, external, lab.log)
    finally:
        context.close()


def test_every_explorer_of_the_book_is_driven_here() -> None:
    assert sorted(chapters_with_explorers()) == sorted(EXPLORERS), (
        "EXPLORERS must say how a reader uses the live_only explorers of exactly these chapters: "
        f"{chapters_with_explorers()}"
    )


def test_the_trimmed_chapters_keep_what_their_explorers_and_bertviz_views_need() -> None:
    """The slicing itself: a cell read by the explorer through a function, a chain of two assignments, a view."""
    sources = [
        "from k import live_only, head_view",
        "a = 1",
        "b = a + 1",
        "unused = 2",
        "def f():\n    return b",
        "live_only(lambda: f())",
        "c = 3",
        "more = 4",
        "print(head_view(c))",
    ]
    assert needed_cells(sources) == [0, 1, 2, 4, 5, 6, 8]
    with pytest.raises(AssertionError, match="reads 'nowhere'"):
        needed_cells(["from k import live_only", "live_only(nowhere)"])


def test_only_the_logged_kernel_list_race_is_forgiven(tmp_path: Path) -> None:
    log = tmp_path / "jupyterlab.log"
    log.write_text(
        f"[E ServerApp] Uncaught exception GET /api/kernels\n    traitlets.traitlets.{KERNEL_LIST_RACE[1]}\n"
    )
    failed = ["500 GET /api/kernels", "500 GET /api/kernels", "404 GET /api/contents/book/x.ipynb"]
    session = Session(page=None, root=tmp_path, panels={}, errors=["pageerror: x"], failed=failed, external=[], log=log)
    assert session.page_errors() == [
        "pageerror: x",
        "request failed: 500 GET /api/kernels",
        "request failed: 404 GET /api/contents/book/x.ipynb",
    ]


def test_the_readers_jupyterlab_is_the_pinned_one_with_plotlys_extension() -> None:
    """The reader's JupyterLab is the version constraints.txt pins (the README installs the lab extra under it), and
    plotly's JupyterLab extension, which the plotly package ships, is there, for plotly's version."""
    python = _reader_tool("python")
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (ROOT / "constraints.txt").read_text(), re.MULTILINE))
    assert "jupyterlab" in pins, "constraints.txt does not pin jupyterlab: run `make lock`"
    installed = json.loads(
        subprocess.run(
            [
                str(python),
                "-c",
                "import importlib.metadata as m, json; "
                "print(json.dumps({name: m.version(name) for name in ('jupyterlab', 'plotly', 'ipywidgets')}))",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    assert installed == {name: pins[name] for name in installed}, f"the reader's environment has {installed}"
    extension = READER_VENV / "share" / "jupyter" / "labextensions" / "jupyterlab-plotly" / "package.json"
    assert extension.is_file(), f"plotly's JupyterLab extension is missing ({extension})"
    assert json.loads(extension.read_text())["version"] == pins["plotly"]


@pytest.mark.parametrize("chapter", sorted(EXPLORERS))
def test_explorer_redraws_when_a_reader_changes_it(session: Session, chapter: str) -> None:
    explorer = EXPLORERS[chapter]
    path = f"book/{chapter}.ipynb"
    page = session.page
    page.evaluate(ACTIVATE, path)
    sources = [c.source for c in nbformat.read(session.root / path, as_version=4).cells]
    cells = page.locator(f"#{session.panels[chapter]} .jp-Notebook .jp-Cell")
    assert cells.count() == len(sources), f"{chapter}: {cells.count()} cells shown, {len(sources)} expected"
    explorer_cells = [i for i, source in enumerate(sources) if calls_live_only(source)]
    assert len(explorer_cells) == 1, f"{chapter}: one explorer per chapter expected, found {len(explorer_cells)}"
    cell = cells.nth(explorer_cells[0])
    cell.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    handle = cell.element_handle()

    def state() -> dict:
        return page.evaluate(OUTPUT_STATE, handle)

    def kernel_problems() -> list[str]:
        return [ANSI_ESCAPE.sub("", problem) for problem in page.evaluate(PROBLEMS, path)]

    def apply(change: Change) -> dict:
        figures = explorer.figures if change.figures is None else change.figures
        before = state()
        change.act(cell)
        try:
            page.wait_for_function(
                REDRAWN, arg=[path, handle, before, change.shows, figures], timeout=CHANGE_TIMEOUT, polling=200
            )
        except PlaywrightTimeout:
            now = state()
            pytest.fail(
                f"{chapter}: after '{change.what}' the explorer did not redraw"
                + (f" showing {change.shows!r}" if change.shows else "")
                + f" within {CHANGE_TIMEOUT // 1000} s; kernel idle: {page.evaluate(KERNEL_IDLE, path)}; "
                f"{now['drawn']} of {len(now['figures'])} figures drawn ({figures} expected); "
                f"output now:\n{now['text'][:1500]}"
            )
        problems = kernel_problems()
        assert not problems, f"{chapter}, after '{change.what}': the kernel reported\n" + "\n".join(problems)
        after = state()
        assert after["byExtension"] == after["drawn"] == len(after["figures"]) == figures and not after["html"], (
            f"{chapter}, after '{change.what}': of {len(after['figures'])} plotly figures ({figures} expected), "
            f"{after['drawn']} drawn, {after['byExtension']} by plotly's JupyterLab extension, "
            f"{after['html']} by an HTML fallback"
        )
        return after

    if explorer.opens is not None:
        apply(explorer.opens)
    output = cell.locator(".jp-Cell-outputArea")
    output.screenshot(path=str(SHOTS / f"jupyterlab-{chapter}-before.png"))
    first = state()
    for change in explorer.changes:
        apply(change)
    output.screenshot(path=str(SHOTS / f"jupyterlab-{chapter}-after.png"))
    clipped = page.evaluate(CLIPPED_TEXT, handle)
    assert not clipped, f"{chapter}: the explorer's controls show their text cut short: {clipped}"
    assert state()["text"] != first["text"] or state()["figures"] != first["figures"]
    assert not session.page_errors(), "errors in JupyterLab's page:\n" + "\n".join(session.page_errors())
    assert not session.external, "requests left the machine:\n" + "\n".join(session.external)


BERTVIZ_CHAPTER = "11_inside_the_model"


def check_bertviz_views(page: object, cells: object, sources: list[str], output: str, shots: Path) -> None:
    """Chapter 11's bertviz views, run as a reader runs them (``cells``: the page's cells of the trimmed chapter, whose
    code is ``sources``; ``output``: the selector of a cell's output): each draws all its lines (an output that did not
    draw is an empty box, and the page logs ``require is not defined``), and a head view redraws for the attention type
    a reader picks in its menu. Screenshots of the views go to ``shots``-N.png."""
    from transformer.train.recipes import small_model_config
    from transformer.train.tasks import TaskConfig

    config = small_model_config(TaskConfig("copy").vocab_size)  # the chapter's models (STAND_INS)
    drawn = views_drawn(output)
    shown = [i for i, source in enumerate(sources) if shows_bertviz(source)]
    assert len(shown) == 4, f"4 bertviz views expected (2 head views, 2 model views), found {len(shown)}"
    shots.parent.mkdir(parents=True, exist_ok=True)
    drawings = []
    for number, index in enumerate(shown):
        cell = cells.nth(index)
        cell.scroll_into_view_if_needed()
        try:
            page.wait_for_function(drawn, arg=cell.element_handle(), timeout=CHANGE_TIMEOUT, polling=200)
        except PlaywrightTimeout:
            found = page.evaluate(f"(cell) => ({DRAWINGS})(cell)", cell.element_handle())
            pytest.fail(f"bertviz view {number} (code cell {index}) did not draw: {found}")
        (drawing,) = page.evaluate(drawn, cell.element_handle())
        assert drawing_defects(drawing, config.n_heads, config.n_encoder_layers) == [], f"view {number}: {drawing}"
        cell.locator(output).screenshot(path=f"{shots}-{number}.png")
        drawings.append(drawing)
    assert [d["kind"] for d in drawings] == ["head", "head", "model", "model"]
    first = drawings[0]
    assert len(first["left"]) == len(first["right"]) + 1  # opened on cross-attention: <s> + the answer, the source

    cell = cells.nth(shown[0])
    cell.locator("select[id$='-filter']").select_option(label="Encoder")
    source = first["right"]
    encoder = {**first, "left": source, "right": source, "lines": config.n_heads * len(source) ** 2}
    try:
        page.wait_for_function(
            f"([cell, want]) => {{ const d = ({drawn})(cell); "
            "return d !== null && JSON.stringify(d[0]) === JSON.stringify(want); }",
            arg=[cell.element_handle(), encoder],
            timeout=CHANGE_TIMEOUT,
            polling=200,
        )
    except PlaywrightTimeout:
        now = page.evaluate(drawn, cell.element_handle())
        pytest.fail(f"the head view did not redraw encoder self-attention: {now}, expected {encoder}")


def test_every_bertviz_view_draws_with_no_network_and_follows_its_menu(session: Session) -> None:
    path = f"book/{BERTVIZ_CHAPTER}.ipynb"
    session.page.evaluate(ACTIVATE, path)
    sources = [c.source for c in nbformat.read(session.root / path, as_version=4).cells]
    cells = session.page.locator(f"#{session.panels[BERTVIZ_CHAPTER]} .jp-Notebook .jp-Cell")
    check_bertviz_views(session.page, cells, sources, ".jp-Cell-outputArea", SHOTS / "jupyterlab-bertviz")
    assert not session.page_errors(), "errors in JupyterLab's page:\n" + "\n".join(session.page_errors())
    assert not session.external, "requests left the machine:\n" + "\n".join(session.external)
