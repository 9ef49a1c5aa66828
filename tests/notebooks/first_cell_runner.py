"""Run chapters' first code cells as a kernel would, in this interpreter, with IPython's magics recorded, not run.

    <python> tests/notebooks/first_cell_runner.py < plan.json

The plan is a JSON list of trials, ``{"notebook": <path>, "hide": [<module>, ...]}``: each hidden module looks
missing to the cell (``sys.modules[name] = None``: ``importlib.util.find_spec`` returns None, as for a module that is
not installed). The cell's IPython syntax is turned into Python by IPython's own transformer (``%pip install ...``
becomes ``get_ipython().run_line_magic("pip", "install ...")``); the first magic, shell command or ``subprocess.run``
it runs is recorded and stops the cell, so nothing is installed (a ``subprocess.run`` of ``python -m pip install
...`` is recorded as ``pip install ...``). Prints a JSON object: ``"prefix"``, this interpreter's ``sys.prefix``
(the environment the cells ran in), and ``"trials"``: for each trial, ``{"runs": [<magic>, ...], "finished": <the
cell ran to its end>, "error": <an exception, or null>}``.

Run by tests/notebooks/test_first_cells.py with the reader environment's Python (``make nbval-reader``) and with this one's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback

from IPython.core.inputtransformer2 import TransformerManager


class WouldRun(Exception):
    """Raised by the stand-in shell in place of running a magic or a shell command."""


class RecordingShell:
    def __init__(self) -> None:
        self.runs: list[str] = []

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> None:
        self.runs.append(f"%{name} {line}")
        raise WouldRun

    def run_cell_magic(self, name: str, line: str, cell: str) -> None:
        self.runs.append(f"%%{name} {line}")
        raise WouldRun

    def system(self, command: str) -> None:
        self.runs.append(f"!{command}")
        raise WouldRun

    getoutput = system

    def subprocess_run(self, args, *rest, **kwargs) -> None:
        words = [str(a) for a in args]
        if words[:3] == [sys.executable, "-m", "pip"]:
            words = words[2:]
        self.runs.append(" ".join(words))
        raise WouldRun


def first_code_cell(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        cell = next(c for c in json.load(f)["cells"] if c["cell_type"] == "code")
    return "".join(cell["source"])


def run_trial(path: str, hide: list[str]) -> dict:
    shell = RecordingShell()
    saved = {name: sys.modules.get(name) for name in hide}
    for name in hide:
        sys.modules[name] = None  # type: ignore[assignment]
    result = {"runs": shell.runs, "finished": False, "error": None}
    real_run, subprocess.run = subprocess.run, shell.subprocess_run
    try:
        code = TransformerManager().transform_cell(first_code_cell(path))
        exec(compile(code, f"{path}: first code cell", "exec"), {"get_ipython": lambda: shell, "__name__": "__main__"})
        result["finished"] = True
    except WouldRun:
        pass
    except Exception:  # reported, not raised: the test names the chapter
        result["error"] = traceback.format_exc(limit=3)
    finally:
        subprocess.run = real_run
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return result


def main() -> int:
    plan = json.load(sys.stdin)
    trials = [run_trial(trial["notebook"], trial.get("hide", [])) for trial in plan]
    print(json.dumps({"prefix": sys.prefix, "trials": trials}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
