"""The benchmark scripts run end to end in ``--quick`` mode and write valid JSON, and ``transformer_book.results``
tells a current result from a stale one. No timing is asserted: the machines that run the tests are shared and noisy, and
speed is the scripts' business, not the tests'."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import torch

from transformer_book.results import file_digest, result_status, source_digests

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def run_script(name: str, *args: str, threads: bool = True, expect: int = 0) -> subprocess.CompletedProcess:
    command = [sys.executable, str(BENCHMARKS / name), "--quick", *(["--threads", "1"] if threads else []), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == expect, done.stdout + done.stderr
    return done


def load_results(path: Path, threads: int | None = 1) -> dict:
    payload = json.loads(path.read_text())
    assert {"name", "machine", "results", "sources"} <= payload.keys()
    assert {"torch", "cpu_count", "torch_threads", "cuda", "load_average_1min", "measured_at"} <= payload[
        "machine"
    ].keys()
    if threads is not None:
        assert payload["machine"]["torch_threads"] == threads  # --threads was applied
    assert f"benchmarks/bench_{payload['name']}.py" in payload["sources"]
    return payload


def _load(name: str):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_train_step_benchmark_writes_ratios_of_two_models_computing_the_same_function(tmp_path, monkeypatch):
    threads = torch.get_num_threads()
    monkeypatch.setattr(sys, "argv", ["bench_train_step.py", "--quick", "--threads", "1", "--out", str(tmp_path)])
    try:
        _load("bench_train_step").main()  # in this process: one torch import fewer
    finally:
        torch.set_num_threads(threads)
    payload = load_results(tmp_path / "train_step.json")
    assert "transformer/model.py" in payload["sources"] and "transformer/attention.py" in payload["sources"]
    assert not any(path.startswith("transformer_book/viz/") for path in payload["sources"])  # figures change no timing
    assert payload["results"]
    for row in payload["results"]:
        assert row["ours_ms"] > 0 and row["torch_ms"] > 0
        assert row["ratio_low"] <= row["ratio"] <= row["ratio_high"]  # median between the quartiles
        assert row["ours_ops"] > 100 and row["torch_ops"] > 100  # a profiled step runs many PyTorch operations
        assert row["max_abs_logit_diff"] < 1e-4  # same weights, same masks: the same logits


def test_run_all_passes_quick_and_out_through_to_the_attention_benchmark(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "run_all.py"),
            "--quick",
            "--threads",
            "1",
            "--out",
            str(tmp_path),
            "--only",
            "attention",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    payload = load_results(tmp_path / "attention.json")
    assert {row["mode"] for row in payload["results"]} == {"train", "inference"}
    for row in payload["results"]:
        assert row["fused_ms"] > 0 and row["readable_ms"] > 0 and row["torch_ms"] > 0
        assert row["fused_ratio_low"] <= row["fused_ratio"] <= row["fused_ratio_high"]
        assert row["max_abs_diff"] < 1e-4  # all three paths attend alike


def test_compile_benchmark_writes_compiled_over_eager_ratios_of_steps_that_agree(tmp_path):
    run_script("bench_compile.py", "--out", str(tmp_path))  # --quick: the aot_eager backend, no kernels built
    payload = load_results(tmp_path / "compile.json")
    assert payload["backend"] == "aot_eager" and payload["results"]
    for row in payload["results"]:
        assert row["compile_s"] > 0 and row["eager_ms"] > 0 and row["compiled_ms"] > 0
        assert row["ratio_low"] <= row["ratio"] <= row["ratio_high"]
        assert row["max_abs_loss_diff"] < 1e-4  # same weights, same batch: the same losses


def test_decoding_benchmark_says_per_model_whether_the_goal_at_64_tokens_is_met(tmp_path):
    run_script("bench_decoding.py", "--out", str(tmp_path))
    payload = load_results(tmp_path / "decoding.json")
    assert payload["goal_tokens"] == 64 and payload["goal_speedup"] == 3.0
    at_goal = {row["model"]: row for row in payload["results"] if row["tokens"] == 64}
    assert at_goal and set(payload["goal"]) == set(at_goal)
    for model, goal in payload["goal"].items():
        assert goal["speedup"] == at_goal[model]["speedup"]
        assert goal["met"] == (goal["speedup"] >= 3.0)
    assert all(
        row["same_tokens"] and row["speedup_low"] <= row["speedup"] <= row["speedup_high"] for row in payload["results"]
    )


def test_copy_task_benchmark_records_the_exact_match_at_the_published_step_count(tmp_path):
    run_script("bench_copy_task.py", "--out", str(tmp_path))
    payload = load_results(tmp_path / "copy_task.json")
    assert {(row["setup"], row["task"]) for row in payload["results"]} == {
        ("small (documented)", "copy"),
        ("small (documented)", "reverse"),
        ("annotated-like", "copy"),
    }
    annotated = next(row for row in payload["results"] if row["setup"] == "annotated-like")
    assert annotated["published_steps"] < annotated["max_steps"]  # trained on past the published run
    checks = dict(zip(annotated["checks"]["step"], annotated["checks"]["exact_match"], strict=True))
    assert annotated["exact_match_at_published_steps"] == checks[annotated["published_steps"]]
    assert annotated["first_100_step"] is None or checks[annotated["first_100_step"]] == 1.0
    assert set(payload["summary"]) == {"copy", "reverse"}


def test_copy_task_benchmark_rejects_a_cap_below_the_published_steps(tmp_path):
    done = run_script("bench_copy_task.py", "--out", str(tmp_path), "--annotated-max-steps", "300", expect=2)
    assert "--annotated-max-steps" in done.stderr and "got 300" in done.stderr


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


def _notebook(path: Path, *sources: str) -> Path:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)
    return path


def test_book_benchmark_times_notebooks_as_the_build_runs_them_and_measures_pages(tmp_path):
    (tmp_path / "book").mkdir()
    check = "import os, pathlib; assert os.environ['TRANSFORMER_BOOK_STATIC'] == '1'; assert pathlib.Path.cwd().name == 'book'"
    notebook = _notebook(tmp_path / "book" / "tiny.ipynb", "print(6 * 7)", check)
    _fake_build(tmp_path / "html")
    run_script(
        "bench_book.py",
        "--out",
        str(tmp_path),
        "--notebooks",
        str(notebook),
        "--html-dir",
        str(tmp_path / "html"),
        threads=False,
    )
    payload = load_results(tmp_path / "book.json", threads=None)
    executed = [row for row in payload["results"] if row["kind"] == "execute"]
    assert [(row["notebook"], row["code_cells"], row["ok"]) for row in executed] == [("tiny.ipynb", 2, True)]
    assert {row["page"] for row in payload["results"] if row["kind"] == "page"} == {
        "book/chapter.html",
        "book/other.html",
    }
    assert payload["summary"]["execute_ok"] and payload["summary"]["heaviest_page"] == "book/chapter.html"
    assert "transformer_book/viz/__init__.py" in payload["sources"]  # the chapters draw with the book kit's figures


def test_book_benchmark_reports_a_failing_chapter_with_its_error_and_cell(tmp_path):
    notebook = _notebook(tmp_path / "broken.ipynb", "x = 1", "assert x == 2, 'x went wrong'")
    run_script(
        "bench_book.py", "--out", str(tmp_path), "--notebooks", str(notebook), "--skip-build", threads=False, expect=1
    )
    payload = load_results(tmp_path / "book.json", threads=None)
    (row,) = [row for row in payload["results"] if row["kind"] == "execute"]
    assert not row["ok"] and row["error"].startswith("AssertionError: x went wrong (cell 1")
    assert not payload["summary"]["execute_ok"]


def test_time_many_alternates_the_order_of_the_calls_every_round():
    calls = []
    timings = _load("common").time_many(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, rounds=4, warmup=0, min_time=0.0
    )
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert {name: len(values) for name, values in timings.items()} == {"a": 4, "b": 4}


def test_paired_ratio_takes_the_median_and_quartiles_of_per_round_ratios():
    ratio, low, high = _load("common").paired_ratio([1.0, 2.0, 3.0, 4.0, 50.0], [1.0, 2.0, 3.0, 2.0, 10.0])
    assert (ratio, low, high) == (1.0, 1.0, 2.0)  # per round: 1, 1, 1, 2, 5


def test_result_status_flags_results_whose_code_changed_since_they_were_measured(tmp_path):
    (tmp_path / "model.py").write_text("x = 1\n")
    payload = {
        "results": [{"kind": "execute", "notebook": "a.ipynb", "ok": True}],
        "sources": source_digests(tmp_path, ["model.py"]),
    }
    assert result_status(payload, tmp_path) == dict(state="current", changed=[], failed=[])
    (tmp_path / "model.py").write_text("x = 2\n")
    assert result_status(payload, tmp_path)["changed"] == ["model.py"]
    assert result_status(payload, tmp_path)["state"] == "stale"
    assert result_status({"results": payload["results"]}, tmp_path)["state"] == "unrecorded"  # an old file
    failed = {"results": [{"kind": "execute", "notebook": "a.ipynb", "ok": False}], "sources": {}}
    assert result_status(failed, tmp_path)["failed"] == ["a.ipynb"]


def test_a_notebooks_digest_changes_with_its_code_but_not_with_its_outputs(tmp_path):
    path = _notebook(tmp_path / "n.ipynb", "print(1)")
    before = file_digest(path)
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[0].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    nbformat.write(notebook, path)
    assert file_digest(path) == before
    notebook.cells[0].source = "print(2)"
    nbformat.write(notebook, path)
    assert file_digest(path) != before


def test_book_benchmark_reads_the_chapters_from_the_table_of_contents():
    chapters = _load("bench_book").toc_notebooks()
    assert chapters[0].name == "01_introduction.ipynb" and all(path.is_file() for path in chapters)
