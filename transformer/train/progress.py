"""What training shows while it runs: a live tqdm bar, one line at the end, or nothing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

# What ``progress=`` takes: True, "text", False, or a callable ``(steps, description)`` that returns a bar of its own
# (iterable over the steps, with tqdm's ``set_postfix(**values)`` and ``close()``).
Progress = bool | str | Callable[[range, str], Iterable[int]]


class _NoBar:
    """What :func:`progress_bar` returns when nothing is to be shown while training: the steps, and no output."""

    def __init__(self, steps: range):
        self.steps = steps

    def __iter__(self) -> Iterator[int]:
        return iter(self.steps)

    def set_postfix(self, **values: object) -> None:
        pass

    def close(self) -> None:
        pass


class FinalLine(_NoBar):
    """A progress report for pages that cannot redraw a line (the static book): one line when training ends."""

    def __init__(self, steps: range, description: str):
        super().__init__(steps)
        self.description, self.postfix, self.done = description, {}, 0
        self.start = time.perf_counter()

    def __iter__(self) -> Iterator[int]:
        for step in self.steps:
            self.done = step
            yield step

    def set_postfix(self, **values: object) -> None:
        self.postfix = values

    def line(self) -> str:
        values = "".join(f", {name} {value}" for name, value in self.postfix.items())
        return f"{self.description}: {self.done} steps in {time.perf_counter() - self.start:.1f} s{values}"

    def close(self) -> None:
        print(self.line(), flush=True)


def progress_bar(steps: range, description: str, progress: Progress) -> Iterable[int]:
    """What training shows while it runs over ``steps`` (``range(first, last + 1)``, counted from 1; a resumed run
    starts later): ``True``, a live tqdm bar (a widget in notebooks, text in terminals);
    ``"text"``, one plain line when it ends; ``False``, nothing; a callable, the bar it returns for
    ``(steps, description)``. tqdm is optional: without it, ``True`` shows nothing."""
    if callable(progress):
        return progress(steps, description)
    if progress == "text":
        return FinalLine(steps, description)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar(steps)
    if not progress:
        return _NoBar(steps)
    return tqdm(steps, desc=description, leave=True, initial=steps.start - 1, total=steps.stop - 1)  # resumed: 201/400
