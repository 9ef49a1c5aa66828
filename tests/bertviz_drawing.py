"""What a bertviz view has drawn, read from its SVG in a browser page: one check for every test that shows views (the
live views' HTML in test_inspection.py, chapter 11 in JupyterLab and in the classic Notebook).

A view that did not draw is an empty box (the ``<div>`` bertviz's script fills); a drawn head view has one group of
attention lines per head, one line from each token on the left to each token on the right; a drawn model view one
thumbnail per layer and head, each with one line per pair of tokens.
"""

from __future__ import annotations

# The drawing of each bertviz view inside ``root`` (the page when null), in the order of the page.
DRAWINGS = """(root) => [...(root || document).querySelectorAll('.bertviz-view')].map(view => {
  const svg = view.querySelector('.bertviz-vis svg');
  if (!svg) return {kind: 'nothing', height: Math.round(view.getBoundingClientRect().height)};
  const texts = (side) => [...svg.querySelectorAll(`#${side} text`)].map(t => t.textContent);
  const head = svg.querySelector('g.headAttention') !== null;
  return {
    kind: head ? 'head' : svg.querySelector('rect.attn_background') ? 'model' : 'empty',
    heads: svg.querySelectorAll('g.headAttention').length,
    thumbnails: svg.querySelectorAll('rect.attn_background').length,
    lines: svg.querySelectorAll('line').length,
    left: head ? texts('left') : [],
    right: head ? texts('right') : [],
  };
})"""


def views_drawn(output: str) -> str:
    """A function of a notebook cell, for the page: the drawings (:data:`DRAWINGS`) of the bertviz views in its output
    (``output``: a selector under the cell) once each has drawn its lines; null until then."""
    return f"""(cell) => {{
  const out = cell.querySelector({output!r});
  const views = out ? out.querySelectorAll('.bertviz-view') : [];
  if (!views.length || [...views].some(v => !v.querySelector('.bertviz-vis svg line'))) return null;
  return ({DRAWINGS})(out);
}}"""


def drawing_defects(drawing: dict, heads: int, layers: int) -> list[str]:
    """What is missing from one view's ``drawing`` (an entry of :data:`DRAWINGS`) for a model of ``heads`` heads in
    ``layers`` layers: nothing when the view drew all its lines."""
    kind = drawing["kind"]
    if kind == "head":
        wanted = heads * len(drawing["left"]) * len(drawing["right"])
        if drawing["heads"] != heads or not drawing["left"] or not drawing["right"] or drawing["lines"] != wanted:
            return [
                f"head view: {drawing['heads']} heads ({heads} expected), {drawing['lines']} lines ({wanted} "
                f"expected: one per head and pair of tokens {drawing['left']} x {drawing['right']})"
            ]
        return []
    if kind == "model":
        thumbnails = heads * layers
        if drawing["thumbnails"] != thumbnails or not drawing["lines"] or drawing["lines"] % thumbnails:
            return [
                f"model view: {drawing['thumbnails']} thumbnails ({thumbnails} expected: {layers} layers x {heads} "
                f"heads), {drawing['lines']} lines (the same number in each thumbnail expected)"
            ]
        return []
    if kind == "nothing":
        return [f"the view drew nothing: an empty box {drawing['height']} px high"]
    return ["the view drew an SVG without attention lines"]
