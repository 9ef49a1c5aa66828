"""The static book's outputs, recorded from a live run: one execution of each chapter serves both.

A chapter shows three things differently live and in the static book (:mod:`transformer_book.viz`): a figure
(plotly's JSON live, a ``text/html`` figure in the book), an explorer (a widget live, a note in the book) and a
training run's progress (a tqdm widget live, one line in the book). In a live kernel whose environment has
``TRANSFORMER_BOOK_RECORD`` set (``make nbval-reader`` sets it to the folder where the run's notebooks go), the chapter
runs live as a reader's does and, beside each explorer and progress bar, records what the static book shows in its
place: an output of the type :data:`MIMETYPE` holding those outputs. :func:`to_static` then turns the run's outputs into
the static book's: recorded outputs in place of the widgets, every figure as the book draws it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator

from ..i18n import tr, translatable
from .render import BOOK_ENV, figure_html

RECORD_ENV = "TRANSFORMER_BOOK_RECORD"
MIMETYPE = "application/vnd.transformer-book.static+json"
PLOTLY = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"


def in_record_mode() -> bool:
    """True in a live kernel that records the static book's outputs (``TRANSFORMER_BOOK_RECORD`` set)."""
    return bool(os.environ.get(RECORD_ENV, "").strip())


def record_static(outputs: list[dict], widget_follows: bool = False) -> None:
    """Show, in this cell, the outputs the static book has here (nbformat output dicts), for :func:`to_static`; with
    ``widget_follows``, they stand for everything up to the next widget too (an explorer, and what it drew while it
    was built)."""
    from IPython.display import display

    display({MIMETYPE: {"outputs": outputs, "widget_follows": widget_follows}}, raw=True)


def static_outputs(show: Callable[[], None]) -> list[dict]:
    """The outputs ``show()`` displays when the static book is built (``TRANSFORMER_BOOK_STATIC=1`` meanwhile)."""
    from IPython.utils.capture import capture_output

    before = os.environ.get(BOOK_ENV)
    os.environ[BOOK_ENV] = "1"
    try:
        with capture_output(stdout=False, stderr=False) as captured:
            show()
    finally:
        if before is None:
            del os.environ[BOOK_ENV]
        else:
            os.environ[BOOK_ENV] = before
    return [
        {"output_type": "display_data", "data": dict(out.data), "metadata": dict(out.metadata or {})}
        for out in captured.outputs
    ]


# The training loop's words (transformer.train.loop): the names of the values its bar reports.
LOOP_VALUES = (translatable("loss"), translatable("exact_match"))


def training_description(description: str) -> str:
    """The training loop's description of a run, ``"training"`` or ``"training {task}"``, in the reader's language."""
    task = description.removeprefix("training").strip()
    return tr("training {task}", task=task) if task else tr("training")


def live_bar(steps: range, description: str) -> Iterable[int]:
    """The reader's live tqdm bar (the loop's ``progress=True``), its description in the reader's language."""
    from transformer.train.progress import progress_bar

    return progress_bar(steps, training_description(description), True)


class StaticLine:
    """What the static book shows of a training run in place of its bar: one line when it ends, as the loop's
    ``progress="text"`` prints it, in the reader's language."""

    def __init__(self, steps: range, description: str):
        self.steps, self.description, self.postfix, self.done = steps, description, {}, 0
        self.start = time.perf_counter()

    def __iter__(self) -> Iterator[int]:
        for step in self.steps:
            self.done = step
            yield step

    def set_postfix(self, **values: object) -> None:
        self.postfix = values

    def line(self) -> str:
        values = "".join(tr(", {name} {value}", name=tr(name), value=value) for name, value in self.postfix.items())
        seconds = time.perf_counter() - self.start
        line = tr(
            "{description}: {steps} steps in {seconds:.1f} s",
            description=training_description(self.description),
            steps=self.done,
            seconds=seconds,
        )
        return line + values

    def close(self) -> None:
        print(self.line(), flush=True)


class RecordedBar:
    """A live tqdm bar (the reader's) that records the line the static book prints in its place when it closes."""

    def __init__(self, steps: range, description: str):
        self.live = live_bar(steps, description)
        self.final = StaticLine(steps, description)

    def __iter__(self) -> Iterator[int]:
        for step in self.live:
            self.final.done = step
            yield step

    def set_postfix(self, **values: object) -> None:
        self.live.set_postfix(**values)
        self.final.set_postfix(**values)

    def close(self) -> None:
        self.live.close()
        record_static([{"output_type": "stream", "name": "stdout", "text": self.final.line() + "\n"}])


def to_static(outputs: Iterable[dict]) -> list[dict]:
    """A live cell's outputs as the static book shows them: recorded outputs (:data:`MIMETYPE`) expanded, the widgets
    they stand for dropped, plotly's JSON drawn as the book's ``text/html`` figure, adjacent text streams joined."""
    static: list[dict] = []
    skipping = False  # to the next widget: an explorer's outputs, whose stand-in was recorded before them
    for out in outputs:
        data = out.get("data", {})
        if MIMETYPE in data:
            static.extend(data[MIMETYPE]["outputs"])
            skipping = data[MIMETYPE]["widget_follows"]
            continue
        if WIDGET in data:
            skipping = False
            continue  # an explorer or a progress bar, whose stand-in was recorded beside it
        if skipping:
            continue
        if PLOTLY in data:
            figure = {key: value for key, value in data[PLOTLY].items() if key != "config"}
            rest = {key: value for key, value in data.items() if key not in (PLOTLY, "text/html")}
            out = {**out, "data": {"text/html": figure_html(figure), **rest}}
        static.append(out)
    joined: list[dict] = []
    for out in static:
        if (
            out["output_type"] == "stream"
            and joined
            and joined[-1]["output_type"] == "stream"
            and joined[-1]["name"] == out["name"]
        ):
            joined[-1] = {**joined[-1], "text": joined[-1]["text"] + out["text"]}
        else:
            joined.append(dict(out))
    return joined
