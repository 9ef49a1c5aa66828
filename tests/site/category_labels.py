"""Every row and column of a heatmap named, in a browser: the check the book's and the playground's browser tests share.

Plotly thins the tick labels of a category axis that looks crowded to it (on a phone, to every 2nd or 3rd token), and a
reader can then not tell which row or column is which token; a stacked panel without labels shows rows no one can
name. ``unlabelled_categories`` finds, in each plotly figure a CSS selector picks, the categories of its heatmaps' axes
(category axes, and axes of numbered ticks) that have no visible tick label: on their own axis, or on a neighbouring
panel's axis that covers the same span (a row of panels side by side shares the row labels of the first; a column of
panels the column labels of the lowest).
"""

from __future__ import annotations

# (selector) => [{figure, axis, labels, missing}], figure the index among the figures `selector` picks.
CATEGORY_LABELS = """(selector) => {
  const plain = (s) => {
    const t = document.createElement('span');
    t.innerHTML = String(s);
    return t.textContent.replace(/\\u200b/g, '').trim();
  };
  const findings = [];
  document.querySelectorAll(selector).forEach((gd, figure) => {
    const full = gd._fullLayout;
    if (!full || gd.offsetParent === null) return;
    const shown = (ax) => new Set([...gd.querySelectorAll('.' + ax._id + 'tick text')]
      .filter((t) => t.getBoundingClientRect().width > 0 && getComputedStyle(t).visibility !== 'hidden')
      .map((t) => t.textContent.replace(/\\u200b/g, '').trim()));
    const axes = new Set();
    (gd._fullData || []).filter((t) => t.type === 'heatmap' && t.visible === true).forEach((t) => {
      [t.xaxis || 'x', t.yaxis || 'y'].forEach((id) => {
        const ax = full[id[0] + 'axis' + id.slice(1)];
        if (ax && ax.visible !== false && (ax.type === 'category' || ax.tickmode === 'array')) axes.add(ax);
      });
    });
    const same = (a, b) => Math.abs(a[0] - b[0]) < 0.005 && Math.abs(a[1] - b[1]) < 0.005;
    [...axes].forEach((ax) => {
      const lo = Math.min(...ax.range), hi = Math.max(...ax.range);
      const wanted = ax.type === 'category' ? (ax._categories || []).filter((c, i) => i >= lo && i <= hi).map(plain)
        : (ax.tickvals || []).map((v, i) => [v, (ax.ticktext || [])[i]]).filter(([v]) => v >= lo && v <= hi)
          .map(([v, text]) => plain(text === undefined ? v : text));
      const partners = [ax, ...[...axes].filter((o) => o !== ax && o._id[0] === ax._id[0] && same(o.domain, ax.domain))];
      const missing = wanted.filter((c) => !partners.some((p) => shown(p).has(c)));
      if (missing.length) findings.push({figure, axis: ax._id, labels: wanted.length, missing: missing.slice(0, 6)});
    });
  });
  return findings;
}"""


def unlabelled_categories(page: object, figures: str = ".plotly-graph-div") -> list[dict]:
    """The heatmap categories without a visible tick label in the page's figures that ``figures`` (a CSS selector)
    picks: one finding per axis, with its number of categories and (at most 6 of) the ones missing."""
    return page.evaluate(CATEGORY_LABELS, figures)
