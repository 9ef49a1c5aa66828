"""The benchmark results of the repository's ``benchmarks/`` scripts: reading them, telling whether they are still
current, and drawing them (the chapter "How fast is it?").

Each script writes one JSON file, ``{"name", "machine", "results": [...], "sources": {path: digest}, ...}``. The
``sources`` record a digest of every file the numbers depend on (the package modules the script imported, the
script itself; for the book, every chapter's code), so that :func:`result_status` can say which of them changed
since the numbers were measured: a stale result is shown as stale, never passed off as current.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import plotly.graph_objects as go

from ..results import changed_sources, file_digest, load_results, profile_ops, result_status, source_digests
from .attention import style
from .controls import dropdown

BLUE, ORANGE, GREEN, RED, GREY = "#4c78a8", "#f58518", "#54a24b", "#d62728", "#9d9d9d"


class Html:
    """A piece of HTML a notebook displays as such (and as its text elsewhere)."""

    def __init__(self, markup: str, text: str = ""):
        self.markup, self.text = markup, text

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return self.text or self.markup


def table(rows: Sequence[Mapping], columns: Sequence[str]) -> Html:
    """A small HTML table of ``rows``, one column per key in ``columns`` (missing values left empty)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(row.get(c, '')))}</td>" for c in columns) + "</tr>"
                   for row in rows)
    text = "\n".join(" | ".join(str(row.get(c, "")) for c in columns) for row in rows)
    return Html(f"<table class=\"table\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>", text)


def note(title: str, text: str, kind: str = "note") -> Html:
    """A Jupyter Book admonition box: ``kind`` is ``"note"``, ``"warning"`` or ``"error"``."""
    if kind not in ("note", "warning", "error"):
        raise ValueError(f"kind must be 'note', 'warning' or 'error'; got {kind!r}")
    markup = (f'<div class="admonition {kind}"><p class="admonition-title">{html.escape(title)}</p>'
              f"<p>{html.escape(text)}</p></div>")
    return Html(markup, f"[{kind}] {title}: {text}")


def missing_note(what: str, script: str) -> Html:
    """What the page shows in place of a benchmark whose JSON is not there."""
    return note(f"No {what} results yet", f"Run python benchmarks/{script} (or run_all.py), then rebuild the book "
                "(make clean first: the book's execution cache does not know that the results changed).")


def status_note(what: str, status: Mapping) -> Html | None:
    """A warning box when a result is not current (or something failed while it was measured), else None."""
    problems = []
    if status["state"] == "stale":
        shown = ", ".join(status["changed"][:4]) + (" and more" if len(status["changed"]) > 4 else "")
        problems.append(f"{len(status['changed'])} file(s) it depends on changed since it was measured ({shown})")
    elif status["state"] == "unrecorded":
        problems.append("it does not record which code it measured, so it may be out of date")
    elif status["state"] == "quick":
        problems.append("it comes from a --quick smoke run (tiny sizes), not a measurement")
    if status["failed"]:
        problems.append(f"failed while measured: {', '.join(status['failed'])}")
    if not problems:
        return None
    kind = "error" if status["failed"] else "warning"
    return note(f"The {what} results are not current", "; ".join(problems) + ". Re-run the script to refresh them.",
                kind)


# ----------------------------------------------------------------------------------------------------------------
# Figures


def size_label(row: Mapping) -> str:
    """A bar's category on two lines (one line runs into its neighbours in a ~700 px column)."""
    return f"d<sub>model</sub> {row['d_model']}<br>T {row['seq_len']}"


def _error_bars(rows: Sequence[Mapping], key: str) -> dict:
    """Plotly error bars from the per-round quartiles ``<key>_low`` and ``<key>_high`` when the rows have them."""
    if not all(f"{key}_low" in r and f"{key}_high" in r for r in rows):
        return dict(visible=False)
    return dict(type="data", symmetric=False, color="#333", thickness=1.2, width=4,
                array=[r[f"{key}_high"] - r[key] for r in rows], arrayminus=[r[key] - r[f"{key}_low"] for r in rows])


def _labels_beyond_whiskers(x: list, rows: Sequence[Mapping], key: str, group: str, fmt: str, visible: bool) -> go.Scatter:
    """Each bar's value as text just beyond the end of its whisker (above a bar that rises, below one that falls),
    in the bar's own slot of the group, so that the text never sits on the whisker."""
    ends = [max(r[key], r.get(f"{key}_high", r[key])) if r[key] >= 1 else min(r[key], r.get(f"{key}_low", r[key]))
            for r in rows]
    return go.Scatter(
        x=x, y=ends, mode="text", text=[fmt.format(r[key]) for r in rows], offsetgroup=group, showlegend=False,
        textposition=["top center" if r[key] >= 1 else "bottom center" for r in rows], hoverinfo="skip",
        cliponaxis=False, visible=visible, textfont=dict(size=11),
    )


def ratio_figure(rows: Sequence[Mapping], menu: Sequence[str], ratios: Mapping[str, str], y_title: str) -> go.Figure:
    """Bars from 1 (the same speed) to each measured ratio, by model width and sequence length, with whiskers over
    the middle half of the per-round ratios; one menu entry per value of the ``menu`` fields (device and dtype, or
    device and mode). ``ratios`` maps a row key (``"ratio"``, ``"fused_ratio"``...) to its legend name."""
    if not rows:
        raise ValueError("rows must hold at least one result; got none")
    groups: dict[str, list[Mapping]] = {}
    for row in rows:
        groups.setdefault(" · ".join(str(row[k]) for k in menu), []).append(row)
    fig = go.Figure()
    for g, members in enumerate(groups.values()):
        x = [size_label(r) for r in members]
        for (key, name), colour in zip(ratios.items(), (BLUE, ORANGE), strict=False):
            ms_key = "ours_ms" if key == "ratio" else key.replace("_ratio", "_ms")
            fig.add_trace(go.Bar(
                x=x, y=[r[key] - 1 for r in members], base=1, name=name, visible=g == 0, marker_color=colour,
                offsetgroup=key, error_y=_error_bars(members, key), customdata=[r[ms_key] for r in members],
                hovertemplate="%{x}<br>%{customdata:.1f} ms<extra>" + html.escape(name) + "</extra>",
            ))
            fig.add_trace(_labels_beyond_whiskers(x, members, key, key, "{:.2f}×", g == 0))
    n = 2 * len(ratios)  # a bar trace and its labels per ratio
    buttons = [dict(label=label, method="restyle", args=[{"visible": [i // n == g for i in range(n * len(groups))]}])
               for g, label in enumerate(groups)]
    fig.add_hline(y=1.0, line_color="#555")  # the same speed
    highs = [max(r[k], r.get(f"{k}_high", r[k])) for r in rows for k in ratios]
    lows = [min(r[k], r.get(f"{k}_low", r[k])) for r in rows for k in ratios]
    style(fig, None, height=440)
    fig.update_layout(barmode="group", scattermode="group", margin=dict(l=70, r=20, t=80, b=100), showlegend=True,
                      legend=dict(orientation="h", x=1.0, xanchor="right", y=1.02, yanchor="bottom"),
                      updatemenus=[dropdown(buttons, y=1.02, name="setting")])
    fig.update_yaxes(title_text=y_title, range=[min(0.7, min(lows) - 0.15), max(1.3, max(highs) + 0.3)])
    fig.update_xaxes(title_text="model width d<sub>model</sub> and sequence length T", tickangle=0)
    return fig


def decoding_figure(rows: Sequence[Mapping], goal: float, goal_tokens: int) -> go.Figure:
    """Speed-up of cached over uncached greedy decoding by output length, one bar colour per model, with the goal."""
    fig = go.Figure()
    for model_name, colour in zip(dict.fromkeys(r["model"] for r in rows), (BLUE, ORANGE, GREEN, RED), strict=False):
        mine = [r for r in rows if r["model"] == model_name]
        name = html.escape(model_name).replace("d_model", "d<sub>model</sub>")
        x = [f"{r['tokens']} tokens" for r in mine]
        fig.add_trace(go.Bar(
            x=x, y=[r["speedup"] for r in mine], name=name, marker_color=colour, offsetgroup=model_name,
            error_y=_error_bars(mine, "speedup"), customdata=[[r["cached_ms"], r["uncached_ms"]] for r in mine],
            hovertemplate="%{x}: cached %{customdata[0]:.0f} ms, uncached %{customdata[1]:.0f} ms"
                          "<extra>" + name + "</extra>",
        ))
        fig.add_trace(_labels_beyond_whiskers(x, mine, "speedup", model_name, "{:.1f}×", True))
    fig.add_hline(y=goal, line_dash="dot", line_color="#555")
    fig.add_annotation(  # on a log axis an annotation's y is log10 of the value (add_hline's own label misses it)
        x=0, xref="paper", xanchor="left", y=math.log10(goal), yref="y", yanchor="bottom", showarrow=False,
        text=f"goal at {goal_tokens} tokens: {goal:g}×", font=dict(size=11),
    )
    style(fig, None, height=420)
    fig.update_layout(barmode="group", scattermode="group", margin=dict(l=70, r=20, t=70, b=60),
                      legend=dict(orientation="h", x=1.0, xanchor="right", y=1.02, yanchor="bottom"))
    top = max(max(r.get("speedup_high", r["speedup"]) for r in rows), goal)
    ticks = [t for t in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500) if t <= top * 1.8]
    fig.update_yaxes(title_text="speed-up: uncached / cached time", type="log", tickvals=ticks,
                     ticktext=[f"{t}×" for t in ticks], range=[math.log10(0.8), math.log10(top * 1.8)])
    fig.update_xaxes(title_text=f"output length (batch of {rows[0]['batch']}, greedy)")
    return fig


def book_figure(payload: Mapping, changed: Sequence[str] = ()) -> go.Figure:
    """Execution time per chapter (failed chapters red, chapters whose code changed since hatched) and, in the menu,
    each built page's weight beside the shared assets, with the goals."""
    summary = payload["summary"]
    executed = [r for r in payload["results"] if r["kind"] == "execute"]
    pages = [r for r in payload["results"] if r["kind"] == "page" and r["page"].startswith("book/")]
    stale = {Path(p).name for p in changed}
    fig = go.Figure()
    fig.add_trace(go.Bar(
        x=[r["notebook"].removesuffix(".ipynb") for r in executed], y=[r["seconds"] for r in executed],
        marker_color=[BLUE if r["ok"] else RED for r in executed],
        marker_pattern_shape=["/" if r["notebook"] in stale else "" for r in executed],
        customdata=[("" if r["ok"] else "<br>failed: " + html.escape(r["error"] or ""))
                    + ("<br>code changed since measured" if r["notebook"] in stale else "") for r in executed],
        hovertemplate="%{x}: %{y:.1f} s%{customdata}<extra></extra>",
    ))
    fig.add_trace(go.Bar(
        x=[Path(r["page"]).stem for r in pages], y=[r["bytes"] / 1e6 for r in pages], visible=False,
        marker_color=ORANGE, hovertemplate="%{x}: %{y:.2f} MB<extra></extra>",
    ))
    goal_line = dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=summary["page_goal_bytes"] / 1e6,
                     y1=summary["page_goal_bytes"] / 1e6, line=dict(color="#555", dash="dot"))
    total = summary["execute_total_s"]
    heaviest = max([r["bytes"] / 1e6 for r in pages] + [summary["page_goal_bytes"] / 1e6])
    views = [  # (menu label, visible traces, y title, shapes, y range: None = fit the bars)
        ("execution time", [True, False], f"seconds (all: {total:.0f} s; goal {summary['execute_goal_s']:.0f} s)", [],
         None),
        ("page weight", [False, True], f"MB per page (goal: at most {summary['page_goal_bytes'] / 1e6:g})",
         [goal_line], [0, 1.1 * heaviest]),
    ]
    buttons = [dict(label=label, method="update", args=[{"visible": visible}, {
        "yaxis.title.text": title, "shapes": shapes, "yaxis.autorange": y_range is None, "yaxis.range": y_range}])
               for label, visible, title, shapes, y_range in views]
    style(fig, None, height=420)
    fig.update_layout(margin=dict(l=70, r=20, t=70, b=130), showlegend=False,
                      updatemenus=[dropdown(buttons, y=1.02, name="measure")])
    fig.update_yaxes(title_text=views[0][2], rangemode="tozero")
    fig.update_xaxes(title_text="chapter", tickangle=-35)
    return fig


def profile_figure(shares: Mapping[str, Mapping[str, float]], colours: Sequence[str] = (BLUE, ORANGE, GREY)) -> go.Figure:
    """Stacked horizontal bars: the share of one training step's CPU time per group of operations, per model."""
    fig = go.Figure()
    groups = list(next(iter(shares.values())))
    for group, colour in zip(groups, colours, strict=True):
        fig.add_trace(go.Bar(
            y=list(shares), x=[100 * s[group] for s in shares.values()], name=group, orientation="h",
            marker_color=colour, hovertemplate="%{y}: %{x:.0f}%<extra>" + html.escape(group) + "</extra>",
        ))
    style(fig, None, height=300)
    fig.update_layout(barmode="stack", margin=dict(l=120, r=20, t=40, b=60),
                      legend=dict(orientation="h", x=0, y=1.05, yanchor="bottom", traceorder="normal"))
    fig.update_xaxes(title_text="share of one training step's CPU time (%)", range=[0, 100])
    fig.update_yaxes(title_text="model")
    return fig


__all__ = [
    "Html", "book_figure", "changed_sources", "decoding_figure", "file_digest", "load_results", "missing_note",
    "note", "profile_figure", "profile_ops", "ratio_figure", "result_status", "size_label", "source_digests",
    "status_note", "table",
]
