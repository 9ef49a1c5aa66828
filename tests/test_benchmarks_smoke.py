"""The benchmark scripts run end to end in ``--quick`` mode and write valid JSON. No timing is asserted: the machines
that run the tests are shared and noisy, and speed is the scripts' business, not the tests'."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import torch

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run_script(name: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(BENCHMARKS / name), "--quick", "--threads", "1", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def load_results(path: Path) -> dict:
    payload = json.loads(path.read_text())
    assert {"name", "machine", "results"} <= payload.keys()
    assert {"torch", "cpu_count", "torch_threads", "cuda"} <= payload["machine"].keys()
    assert payload["machine"]["torch_threads"] == 1  # --threads was applied
    return payload


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_step_benchmark_writes_ratios_of_two_models_computing_the_same_function(tmp_path, monkeypatch):
    threads = torch.get_num_threads()
    monkeypatch.setattr(sys, "argv", ["bench_train_step.py", "--quick", "--threads", "1", "--out", str(tmp_path)])
    try:
        _load("bench_train_step").main()  # in this process: one torch import fewer
    finally:
        torch.set_num_threads(threads)
    payload = load_results(tmp_path / "train_step.json")
    assert payload["results"]
    for row in payload["results"]:
        assert row["ours_ms"] > 0 and row["torch_ms"] > 0
        assert abs(row["ratio"] - row["ours_ms"] / row["torch_ms"]) < 1e-2
        assert row["max_abs_logit_diff"] < 1e-4  # same weights, same masks: the same logits


def test_run_all_passes_quick_and_out_through_to_the_attention_benchmark(tmp_path):
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run_all.py"), "--quick", "--threads", "1", "--out", str(tmp_path),
         "--only", "attention"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    payload = load_results(tmp_path / "attention.json")
    assert {row["mode"] for row in payload["results"]} == {"train", "inference"}
    for row in payload["results"]:
        assert row["fused_ms"] > 0 and row["readable_ms"] > 0 and row["torch_ms"] > 0
        assert row["max_abs_diff"] < 1e-4  # all three paths attend alike


def _fake_build(html_dir: Path) -> None:
    """A page with an inline figure, an image of its own, a link to another page and the shared theme assets."""
    (html_dir / "_static").mkdir(parents=True)
    (html_dir / "_images").mkdir()
    (html_dir / "book").mkdir()
    (html_dir / "_static" / "theme.js").write_bytes(b"x" * 5000)
    (html_dir / "_images" / "plot.png").write_bytes(b"p" * 300)
    page = '<script src="../_static/theme.js"></script><img src="../_images/plot.png"><a href="other.html">next</a>'
    (html_dir / "book" / "chapter.html").write_text(page)
    (html_dir / "book" / "other.html").write_text("<p>hi</p>")


def test_page_weight_counts_a_pages_own_files_but_not_the_shared_assets(tmp_path):
    _fake_build(tmp_path)
    pages, shared = _load("bench_book").page_weights(tmp_path)
    weights = {page["page"]: page for page in pages}
    chapter_html = (tmp_path / "book" / "chapter.html").stat().st_size
    assert weights["book/chapter.html"]["bytes"] == chapter_html + 300  # its image, not theme.js or other.html
    assert weights["book/other.html"]["bytes"] == len("<p>hi</p>")
    assert shared == 5000


def test_book_benchmark_times_notebooks_and_measures_pages(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "tiny.ipynb")
    _fake_build(tmp_path / "html")
    run_script("bench_book.py", "--out", str(tmp_path), "--notebooks", str(tmp_path / "tiny.ipynb"),
               "--html-dir", str(tmp_path / "html"))
    payload = load_results(tmp_path / "book.json")
    executed = [row for row in payload["results"] if row["kind"] == "execute"]
    assert [(row["notebook"], row["ok"]) for row in executed] == [("tiny.ipynb", True)]
    assert {row["page"] for row in payload["results"] if row["kind"] == "page"} == {"book/chapter.html", "book/other.html"}
    assert payload["summary"]["execute_ok"] and payload["summary"]["heaviest_page"] == "book/chapter.html"
