/* Text in the page's plotly figures (figure number `only` alone, when given) that a reader cannot read, as a list of
   findings (at most `limit`).

   Run in the page by the browser tests (tests/site/test_book_browser.py's figure_text_defects). Every
   visible <text> of a figure's SVG (titles, axis titles, tick labels, annotations, legend and colour-bar entries,
   heatmap numbers, bar and point labels, plotly's own sliders and menus; not the hover label) is measured as the
   box its letters fill: as wide as the text, from the top of its tallest letter to the bottom of its lowest (the
   font's own measures of the words, canvas measureText, not the font's whole line height), turned as the text is
   turned (a tick label at -45 degrees is a turned box, not the larger upright box around it), in the page's
   pixels. A finding is one of:
     overlap   two texts whose boxes overlap or come closer than GAP px (a separating-axis test on the turned
               boxes), or two texts on one line (turned alike) with less than SPACE px between them ("head 0head
               1", "0.000.00");
     outside   a text that reaches more than GAP px beyond its figure (cut off where the figure ends);
     box       a text whose centre lies in a rectangle the figure draws (a diagram's box: a layout shape of type
               rect, or a scatter trace filled "toself") but whose letters come closer than GAP px to its sides
               (a label wider than its box);
     plot      a tick label, axis title or the figure's title drawn into a plot area (over the cells or bars of a
               subplot), or a tick label closer than GAP px to a heatmap's cells (row labels touching the cells);
     detached  a legend or colour bar more than DETACHED px away from every plot area (a key floating far from the
               panels it explains).
   Each finding names the figure (its index on the page), the texts (kind and words) and `px`: the room between
   them, negative where they overlap (for `outside`, how far the text reaches beyond the figure). */
(limit, only) => {
  const GAP = 1.5; // px: the least room between the letters of two texts, or of a text and what it must not touch
  const SPACE = 3; // px: the least room between two texts side by side on one line (about a space), or in a box
  const DETACHED = 100; // px: the farthest a legend or colour bar may sit from the nearest plot area
  const findings = [];
  const add = (finding) => { if (findings.length < limit) findings.push(finding); };
  const hidden = new Map();
  const isHidden = (el, root) => {
    if (!el || el === root) return false;
    if (hidden.has(el)) return hidden.get(el);
    const style = getComputedStyle(el);
    const result = style.display === "none" || style.visibility === "hidden" || parseFloat(style.opacity) === 0
      || isHidden(el.parentElement, root);
    hidden.set(el, result);
    return result;
  };
  const KINDS = [
    [".g-gtitle", "title"], [".slider-container", "slider"], [".updatemenu-container", "menu"],
    [".legend", "legend"], [".colorbar", "colour bar"], [".annotation", "annotation"],
    [".heatmaplayer, .hm", "heatmap number"], [".barlayer", "bar label"], [".scatterlayer", "point label"],
  ];
  const kindOf = (t) => {
    for (let el = t.parentElement; el && !el.classList.contains("plotly-graph-div"); el = el.parentElement) {
      const cls = el.getAttribute("class") || "";
      if (/(^|\s)g-[xy]\d*title(\s|$)/.test(cls)) return "axis title";
      if (/(^|\s)[xy]\d*tick(\s|$)/.test(cls)) return "tick label";
    }
    const hit = KINDS.find(([selector]) => t.closest(selector));
    return hit ? hit[1] : "text";
  };
  const bounds = (pts) => {
    const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
    return {l: Math.min(...xs), r: Math.max(...xs), t: Math.min(...ys), b: Math.max(...ys)};
  };
  const along = (quad, angle) => quad.map(([x, y]) => [x * Math.cos(angle) + y * Math.sin(angle), y * Math.cos(angle) - x * Math.sin(angle)]);
  const rectQuad = (r) => [[r.l, r.t], [r.r, r.t], [r.r, r.b], [r.l, r.b]];
  // How deep two convex quadrilaterals overlap: the least overlap of their projections on the four edge normals
  // (negative: the gap between them).
  const depth = (a, b) => {
    let least = Infinity;
    for (const quad of [a, b]) {
      for (let i = 0; i < 2; i++) {
        const [x0, y0] = quad[i], [x1, y1] = quad[i + 1];
        const len = Math.hypot(x1 - x0, y1 - y0) || 1, nx = -(y1 - y0) / len, ny = (x1 - x0) / len;
        const pa = a.map((p) => p[0] * nx + p[1] * ny), pb = b.map((p) => p[0] * nx + p[1] * ny);
        least = Math.min(least, Math.min(Math.max(...pa), Math.max(...pb)) - Math.max(Math.min(...pa), Math.min(...pb)));
      }
    }
    return least;
  };
  // The box a text's letters fill, in its own coordinates: getBBox() is as tall as the font's line (its whole ascent
  // and descent); the first line's tallest letter and the last line's lowest set the top and the bottom.
  const canvas = document.createElement("canvas").getContext("2d");
  const letters = (el) => {
    const b = el.getBBox(), style = getComputedStyle(el);
    canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const lines = [...el.querySelectorAll("tspan.line")].map((t) => t.textContent).filter((t) => t.trim());
    const first = canvas.measureText(lines.length ? lines[0] : el.textContent);
    const last = canvas.measureText(lines.length ? lines[lines.length - 1] : el.textContent);
    const top = Math.max(0, first.fontBoundingBoxAscent - first.actualBoundingBoxAscent);
    const bottom = Math.max(0, last.fontBoundingBoxDescent - last.actualBoundingBoxDescent);
    return top + bottom < b.height ? {x: b.x, y: b.y + top, width: b.width, height: b.height - top - bottom} : b;
  };
  const short = (s) => (s.length > 40 ? s.slice(0, 39) + "…" : s);

  document.querySelectorAll(".js-plotly-plot").forEach((gd, figure) => {
    if ((only != null && figure !== only) || gd.offsetParent === null || !gd._fullLayout) return;
    const frame = gd.getBoundingClientRect();
    const texts = [];
    gd.querySelectorAll("svg text").forEach((el) => {
      const text = el.textContent.replace(/\u200b/g, "").trim();
      if (!text || el.closest(".hoverlayer")) return;
      const r = el.getBoundingClientRect();
      if (r.width < 1 || r.height < 1 || isHidden(el, gd)) return;
      const b = letters(el), m = el.getScreenCTM();
      const quad = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
        .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
      texts.push({el, text: short(text), kind: kindOf(el), quad, box: bounds(quad), angle: Math.atan2(m.b, m.a)});
    });
    const name = (t) => `${t.kind} "${t.text}"`;

    texts.forEach((t) => {
      const out = Math.max(frame.left - t.box.l, t.box.r - frame.right, frame.top - t.box.t, t.box.b - frame.bottom);
      if (out > GAP) add({figure, check: "outside", text: name(t), px: Math.round(out)});
    });

    const sorted = texts.slice().sort((a, b) => a.box.l - b.box.l);
    for (let i = 0; i < sorted.length; i++) {
      const a = sorted[i];
      for (let j = i + 1; j < sorted.length && sorted[j].box.l < a.box.r + SPACE; j++) {
        const b = sorted[j];
        if (b.box.t >= a.box.b || a.box.t >= b.box.b || a.el.contains(b.el) || b.el.contains(a.el)) continue;
        const d = depth(a.quad, b.quad);
        let oneLine = false, room = 0;
        if (Math.abs(a.angle - b.angle) < 0.01) { // turned alike: side by side along their lines?
          const [p, q] = [a, b].map((t) => bounds(along(t.quad, a.angle)));
          const lineOverlap = Math.min(p.b, q.b) - Math.max(p.t, q.t);
          oneLine = lineOverlap > 0.5 * Math.min(p.b - p.t, q.b - q.t);
          room = Math.max(q.l - p.r, p.l - q.r);
        }
        if (d > -GAP || (oneLine && room < SPACE)) {
          add({figure, check: "overlap", text: name(a), other: name(b), px: Math.round(oneLine ? room : -d)});
        }
      }
    }

    // Rectangles the figure draws (layout shapes of type rect, scatter traces filled "toself"): a text centred in
    // one keeps its letters inside it.
    const boxes = [];
    const addBox = (el) => {
      const r = el.getBoundingClientRect();
      if (r.width > 4 && r.height > 4) boxes.push({l: r.left, r: r.right, t: r.top, b: r.bottom});
    };
    (gd._fullLayout.shapes || []).forEach((shape, index) => {
      if (shape.type === "rect" && shape.visible !== false) gd.querySelectorAll(`.shapelayer path[data-index="${index}"]`).forEach(addBox);
    });
    gd.querySelectorAll(".scatterlayer path.js-fill").forEach((path) => {
      const trace = path.closest(".trace") && path.closest(".trace").__data__;
      if (trace && trace[0] && trace[0].trace && trace[0].trace.fill === "toself") addBox(path);
    });
    texts.forEach((t) => {
      const cx = (t.box.l + t.box.r) / 2, cy = (t.box.t + t.box.b) / 2;
      const around = boxes.filter((r) => cx > r.l && cx < r.r && cy > r.t && cy < r.b)
        .sort((p, q) => (p.r - p.l) * (p.b - p.t) - (q.r - q.l) * (q.b - q.t))[0];
      if (!around) return;
      const room = Math.min(t.box.l - around.l, around.r - t.box.r, around.b - t.box.b, t.box.t - around.t);
      if (room < GAP) add({figure, check: "box", text: name(t), px: Math.round(room)});
    });

    // Plot areas: no tick label, axis title or title over them; a heatmap's cells GAP px from its tick labels.
    const areas = Object.values(gd._fullLayout._plots || {}).filter((p) => p.xaxis && p.yaxis && p.xaxis.visible !== false)
      .map((p) => ({
        id: p.id,
        heatmap: gd.data.some((d) => d.type === "heatmap" && d.visible !== false && (d.xaxis || "x") === p.xaxis._id
          && (d.yaxis || "y") === p.yaxis._id),
        l: frame.left + p.xaxis._offset, r: frame.left + p.xaxis._offset + p.xaxis._length,
        t: frame.top + p.yaxis._offset, b: frame.top + p.yaxis._offset + p.yaxis._length,
      })).filter((p) => p.r - p.l > 1 && p.b - p.t > 1);
    texts.filter((t) => ["tick label", "axis title", "title"].includes(t.kind)).forEach((t) => {
      areas.forEach((area) => {
        const d = depth(t.quad, rectQuad(area));
        const least = area.heatmap && t.kind === "tick label" ? -GAP : 0;
        if (d > least) add({figure, check: "plot", text: name(t), other: `plot area ${area.id}`, px: Math.round(-d)});
      });
    });

    // Keys (legends, colour bars) beside the plots they explain.
    gd.querySelectorAll(".infolayer .legend, .infolayer .colorbar").forEach((key) => {
      const r = key.getBoundingClientRect();
      if (!areas.length || r.width < 1 || isHidden(key, gd)) return;
      const quad = rectQuad({l: r.left, r: r.right, t: r.top, b: r.bottom});
      const away = Math.min(...areas.map((area) => -depth(quad, rectQuad(area))));
      if (away > DETACHED) {
        add({figure, check: "detached", text: key.classList.contains("legend") ? "legend" : "colour bar", px: Math.round(away)});
      }
    });
  });
  return findings;
}
