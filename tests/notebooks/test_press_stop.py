"""The chapters' stand-in for a reader who presses the stop button: SIGINT, once, when a new checkpoint appears."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from transformer_book import press_stop_when_saved


def _signals_received(path: Path, write_after: float | None, wait: float = 2.0) -> list[int]:
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        with press_stop_when_saved(path):
            if write_after is not None:
                time.sleep(write_after)
                path.write_bytes(b"new")
            deadline = time.monotonic() + wait
            while not received and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)  # a second signal would arrive now
    finally:
        signal.signal(signal.SIGINT, previous)
    return received


def test_sigint_is_sent_once_when_a_new_file_appears(tmp_path: Path) -> None:
    assert _signals_received(tmp_path / "run.pt", write_after=0.05) == [signal.SIGINT]


def test_an_old_file_at_the_path_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "run.pt").write_bytes(b"old")
    assert _signals_received(tmp_path / "run.pt", write_after=None, wait=0.3) == []
