/* The book's plotly figures on every screen (book/_ext/offline_assets.py adds this file to pages with a figure).

   1. Controls above the figure, never on it: each plotly dropdown (layout.updatemenus) becomes an HTML <select>, each
      row of plotly buttons (Play / Pause) HTML buttons, in a bar above the figure that wraps on a narrow screen.
      They run the very same plotly calls the menu would (a button's method and args). The room the menus took in
      the figure's top margin is given back.
   2. A narrow column (a phone): panels side by side are stacked into one column, each full width; long titles wrap;
      heatmap numbers too small to read, or too wide for their cells, are left to the hover label. Widening the column again restores the figure.
   3. Figures follow their column's width when it changes (rotation, the sidebar opening).
   Live notebooks (Jupyter, Colab) do not load this file: there plotly draws its own menus, where the figures put them. */
(function () {
  "use strict";
  var NARROW = 560; // px of column below which panels stack
  var PANEL_GAP = 95; // px between stacked panels: room for the x-axis title and the next panel's title
  var MIN_TEXT = 9; // px: no text in a figure is drawn smaller (heatmap numbers that would be are hidden)
  var BERTVIZ_MIN_ZOOM = 0.7; // bertviz's 13 px token labels stay at least 9 px
  var MENU_LABEL = "menu-label"; // annotation name of a label the Python side drew beside a plotly menu

  function plainText(label) {
    var tmp = document.createElement("span");
    tmp.innerHTML = String(label == null ? "" : label).replace(/<br\s*\/?>/gi, " ");
    return tmp.textContent;
  }

  function get(obj, path) {
    return path.split(".").reduce(function (o, k) { return o == null ? undefined : o[k]; }, obj);
  }

  function runButton(gd, button) {
    if (!button || !button.method || button.method === "skip") return Promise.resolve();
    return window.Plotly[button.method].apply(null, [gd].concat(button.args || []));
  }

  /* 1. Controls: HTML controls in a bar before the figure; returns the relayout that hides the plotly menus. */
  function buildControls(gd) {
    var menus = gd.layout.updatemenus || [];
    var hide = {};
    var bar = document.createElement("div");
    bar.className = "book-figure-controls";
    menus.forEach(function (menu, i) {
      if (menu.visible === false) return;
      var buttons = (menu.buttons || []).filter(function (b) { return b.visible !== false; });
      hide["updatemenus[" + i + "].visible"] = false;
      if (buttons.length < 2 && menu.type !== "buttons") return; // a menu with one entry says nothing
      if (menu.type === "buttons") {
        buttons.forEach(function (b) {
          var el = document.createElement("button");
          el.type = "button";
          el.textContent = plainText(b.label);
          el.addEventListener("click", function () { runButton(gd, b).then(function () { afterChange(gd); }); });
          bar.appendChild(el);
        });
        return;
      }
      var wrap = document.createElement("label");
      if (menu.name) {
        var name = document.createElement("span");
        name.textContent = plainText(menu.name);
        wrap.appendChild(name);
      }
      var select = document.createElement("select");
      buttons.forEach(function (b, k) { select.appendChild(new Option(plainText(b.label), String(k))); });
      select.value = String(Math.min(menu.active || 0, buttons.length - 1));
      select.addEventListener("change", function () {
        runButton(gd, buttons[Number(select.value)]).then(function () { afterChange(gd); });
      });
      wrap.appendChild(select);
      bar.appendChild(wrap);
    });
    (gd.layout.annotations || []).forEach(function (a, i) {
      if (a.name === MENU_LABEL) hide["annotations[" + i + "].visible"] = false;
    });
    var wrapper = gd.parentElement; // plotly's output: a div of the figure's height around the figure
    if (bar.childNodes.length) wrapper.parentElement.insertBefore(bar, wrapper);
    return hide;
  }

  /* Room above the plot area for what stays there once the menus are gone (subplot titles, a legend on top). */
  function roomAbove(gd) {
    var plotTop = gd.getBoundingClientRect().top + gd._fullLayout._size.t;
    var highest = plotTop;
    gd.querySelectorAll(".infolayer .annotation, .infolayer .legend").forEach(function (el) {
      var box = el.getBoundingClientRect();
      if (box.height > 0 && box.bottom <= plotTop + 2) highest = Math.min(highest, box.top);
    });
    return Math.ceil(plotTop - highest);
  }

  function titleText(gd) {
    var title = gd.layout.title;
    return title ? (typeof title === "string" ? title : title.text || "") : "";
  }

  /* The title at the top, left-aligned, then whatever sits above the plot, then the plot: margin.t to fit, the plot
     area's height kept. */
  function placeTitle(gd, update, above) {
    var text = update["title.text"] || titleText(gd);
    var size = get(gd._fullLayout, "title.font.size") || 16;
    var block = text ? (text.split(/<br\s*\/?>/i).length * size * 1.3 + 14) : 8;
    var oldT = gd._fullLayout._size.t;
    var t = Math.ceil(block + above + 6);
    var height = (update.height || gd._fullLayout.height) + (t - oldT);
    update["margin.t"] = t;
    update.height = height;
    if (text) {
      update["title.yref"] = "container";
      update["title.yanchor"] = "middle";
      update["title.y"] = 1 - (6 + block / 2) / height;
      update["title.x"] = 0.02;
      update["title.xanchor"] = "left";
    }
  }

  /* Plotly anchors a title of several lines by its first line, so where it ends is measured, then corrected: the
     title 6 px below the top, the plot area below the title and whatever sits above the plot. */
  function settleTitle(gd, above) {
    var title = gd.querySelector(".infolayer .g-gtitle text");
    if (!title || !title.textContent.trim()) return Promise.resolve();
    var top = gd.getBoundingClientRect().top, box = title.getBoundingClientRect();
    var shift = 6 - (box.top - top);
    var t = Math.ceil(box.bottom - top + shift + above + 8);
    var full = gd._fullLayout, height = full.height + (t - full._size.t);
    var fromTop = (1 - (get(gd.layout, "title.y") || 0.95)) * full.height + shift;
    if (Math.abs(shift) < 1 && Math.abs(t - full._size.t) < 2) return Promise.resolve();
    return window.Plotly.relayout(gd, {"margin.t": t, height: height, "title.y": 1 - fromTop / height})
      .then(function () { fitHeight(gd); });
  }

  function fitHeight(gd) {
    gd.parentElement.style.height = gd._fullLayout.height + "px";
  }

  /* 2. Narrow screens. */
  function axisCells(full) {
    var cells = [];
    Object.keys(full).forEach(function (key) {
      if (!/^xaxis\d*$/.test(key) || !full[key].domain || full[key].overlaying) return;
      var yKey = "yaxis" + String(full[key].anchor || "y").slice(1);
      var ya = full[yKey];
      if (!ya || !ya.domain || ya.overlaying) return;
      cells.push({x: key, y: yKey, xd: full[key].domain.slice(), yd: ya.domain.slice()});
    });
    return cells;
  }

  function cellAt(cells, x) {
    for (var i = 0; i < cells.length; i++) {
      if (x >= cells[i].xd[0] - 0.03 && x <= cells[i].xd[1] + 0.03) return cells[i];
    }
    return null;
  }

  /* One row of panels side by side (no two share a column): stack them, each the column's full width. A grid of
     several rows (layers x heads) stays a grid of small multiples. */
  function stackPanels(gd, update) {
    var full = gd._fullLayout, size = full._size;
    var cells = axisCells(full);
    if (cells.length < 2) return;
    cells.sort(function (a, b) { return a.xd[0] - b.xd[0]; });
    for (var k = 1; k < cells.length; k++) if (cells[k].xd[0] < cells[k - 1].xd[1] - 0.01) return;
    var heights = cells.map(function (c) { return Math.max(220, Math.round(size.h * (c.yd[1] - c.yd[0]))); });
    var total = heights.reduce(function (s, h) { return s + h; }, 0) + PANEL_GAP * (cells.length - 1);
    var offset = 0;
    cells.forEach(function (c, i) {
      c.nd = [1 - (offset + heights[i]) / total, 1 - offset / total];
      offset += heights[i] + PANEL_GAP;
      update[c.x + ".domain"] = [0, 1];
      update[c.y + ".domain"] = c.nd;
    });
    update.height = total + size.t + size.b;
    // Paper-positioned items follow their panel: inside it proportionally, above it onto its top edge (a panel
    // title), below it at the same distance in pixels.
    var move = function (item, prefix) {
      if (item.xref !== "paper" || item.yref !== "paper" || typeof item.x !== "number") return;
      var c = cellAt(cells, item.x);
      if (!c) return;
      var y = item.y, ny;
      if (y > c.yd[1]) ny = c.nd[1];
      else if (y < c.yd[0]) ny = c.nd[0] - (c.yd[0] - y) * size.h / total;
      else ny = c.nd[0] + (y - c.yd[0]) / (c.yd[1] - c.yd[0]) * (c.nd[1] - c.nd[0]);
      update[prefix + ".x"] = (item.x - c.xd[0]) / (c.xd[1] - c.xd[0]);
      update[prefix + ".y"] = ny;
    };
    (gd.layout.annotations || []).forEach(function (a, i) {
      if (a.name !== MENU_LABEL) move(a, "annotations[" + i + "]");
    });
    (gd.layout.images || []).forEach(function (im, i) { move(im, "images[" + i + "]"); });
    // What sits outside the plot area in paper units (a legend or slider below it) keeps its distance in pixels.
    var outside = function (y) {
      if (typeof y !== "number" || (y >= 0 && y <= 1)) return undefined;
      return y < 0 ? y * size.h / total : 1 + (y - 1) * size.h / total;
    };
    var legendY = outside(get(gd.layout, "legend.y"));
    if (legendY !== undefined) update["legend.y"] = legendY;
    (gd.layout.sliders || []).forEach(function (slider, i) {
      var y = outside(slider.y);
      if (y !== undefined) update["sliders[" + i + "].y"] = y;
    });
    return cells;
  }

  /* Colour bars beside their own panel once the panels are stacked. */
  function placeColorbars(gd, cells) {
    if (!cells) return;
    var byAxis = {};
    cells.forEach(function (c) { byAxis[c.x.replace("axis", "")] = c; });
    var update = {colorbar: []}, indices = [];
    gd.data.forEach(function (trace, i) {
      var c = byAxis[trace.xaxis || "x"];
      if (!c || !trace.colorbar || trace.showscale === false) return;
      indices.push(i);
      update.colorbar.push(Object.assign({}, trace.colorbar, {
        x: 1.02, xanchor: "left", y: (c.nd[0] + c.nd[1]) / 2, yanchor: "middle", len: c.nd[1] - c.nd[0], lenmode: "fraction",
      }));
    });
    if (indices.length) return window.Plotly.restyle(gd, update, indices);
  }

  /* A diagram (no axis shows ticks) drawn with text for a wide column: its text shrinks with the column. */
  function scaleDiagram(gd, update) {
    var full = gd._fullLayout;
    var axes = Object.keys(full).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
    if (!axes.length || axes.some(function (k) { return full[k].visible && full[k].showticklabels; })) return;
    var scale = Math.max(0.6, Math.min(1, full.width / 680));
    if (scale > 0.97) return;
    (gd.layout.annotations || []).forEach(function (a, i) {
      var size = get(a, "font.size") || get(full, "font.size") || 12;
      update["annotations[" + i + "].font.size"] = Math.max(MIN_TEXT, Math.round(size * scale * 10) / 10);
    });
  }

  function wrapText(text, maxChars) {
    var lines = [];
    String(text).split(/<br\s*\/?>/i).forEach(function (part) {
      var line = "";
      part.split(" ").forEach(function (word) {
        var visible = plainText(line + " " + word).trim();
        if (line && visible.length > maxChars) { lines.push(line); line = word; } else { line = line ? line + " " + word : word; }
      });
      lines.push(line);
    });
    return lines.join("<br>");
  }

  function fitTitle(gd, update) {
    var text = titleText(gd);
    if (!text) return;
    var size = get(gd._fullLayout, "title.font.size") || 16;
    var maxChars = Math.max(16, Math.floor((gd._fullLayout.width - 20) / (size * 0.55)));
    var wrapped = wrapText(text, maxChars);
    if (wrapped !== text) update["title.text"] = wrapped;
  }

  /* Heatmap numbers drawn smaller than MIN_TEXT, or wider than their cells (so that a row's numbers run into each
     other), say nothing: leave the values to the hover label. */
  function hideUnreadableNumbers(gd) {
    var texts = Array.prototype.filter.call(gd.querySelectorAll(".heatmaplayer text, .hm text"), function (t) {
      return t.textContent.trim() && t.getBoundingClientRect().width > 0;
    });
    var tiny = texts.some(function (t) { return parseFloat(getComputedStyle(t).fontSize) < MIN_TEXT; });
    var boxes = texts.map(function (t) { return t.getBoundingClientRect(); })
      .sort(function (a, b) { return a.top - b.top || a.left - b.left; });
    var overlap = boxes.some(function (b, k) {
      var a = boxes[k - 1];
      return k > 0 && Math.abs(a.top - b.top) < 1 && a.right > b.left + 0.5;
    });
    if (!tiny && !overlap) return Promise.resolve();
    var indices = [];
    gd.data.forEach(function (trace, i) { if (trace.type === "heatmap" && trace.texttemplate) indices.push(i); });
    return indices.length ? window.Plotly.restyle(gd, {texttemplate: ""}, indices) : Promise.resolve();
  }

  /* Labelled markers (a beam-search tree's tokens in circles) sized for a wide column: in a narrow one each shrinks
     to the distance between neighbouring x values, its text with it (never below MIN_TEXT), so neighbours do not overlap. */
  function scaleMarkers(gd, state) {
    var update = {"marker.size": [], "textfont.size": []}, indices = [];
    gd.data.forEach(function (trace, i) {
      var size = get(trace, "marker.size"), axis = gd._fullLayout["xaxis" + String(trace.xaxis || "x").slice(1)];
      if (trace.type !== "scatter" || !/text/.test(trace.mode || "") || typeof size !== "number" || size < 16) return;
      var xs = (trace.x || []).filter(function (x) { return typeof x === "number"; }).sort(function (a, b) { return a - b; });
      var step = Infinity;
      for (var k = 1; k < xs.length; k++) if (xs[k] > xs[k - 1]) step = Math.min(step, xs[k] - xs[k - 1]);
      if (!axis || !isFinite(step)) return;
      var fit = 0.9 * step * axis._length / Math.abs(axis.range[1] - axis.range[0]);
      if (fit >= size) return;
      var text = get(trace, "textfont.size") || 12;
      indices.push(i);
      update["marker.size"].push(Math.round(fit * 10) / 10);
      update["textfont.size"].push(Math.max(MIN_TEXT, Math.round(text * fit / size * 10) / 10));
    });
    return restyleRestorably(gd, state, update, indices);
  }

  /* Labels in heatmap cells (tokens) sized for a wide column: in a narrow one they shrink to their cell's width
     (never below MIN_TEXT). */
  function fitCellText(gd, state) {
    var update = {"textfont.size": []}, indices = [];
    gd.data.forEach(function (trace, i) {
      var axis = gd._fullLayout["xaxis" + String(trace.xaxis || "x").slice(1)];
      if (trace.type !== "heatmap" || !Array.isArray(trace.text) || !axis || !trace.z || !trace.z[0]) return;
      var longest = 0;
      trace.text.forEach(function (row) {
        (Array.isArray(row) ? row : [row]).forEach(function (t) { longest = Math.max(longest, plainText(String(t)).length); });
      });
      var size = get(trace, "textfont.size") || 12;
      var cell = axis._length / trace.z[0].length - (trace.xgap || 0) - 2;
      if (!longest || longest * 0.62 * size <= cell) return;
      indices.push(i);
      update["textfont.size"].push(Math.max(MIN_TEXT, Math.floor(cell / (0.62 * longest) * 10) / 10));
    });
    return restyleRestorably(gd, state, update, indices);
  }

  function restyleRestorably(gd, state, update, indices) {
    if (!indices.length) return Promise.resolve();
    var previous = {};
    Object.keys(update).forEach(function (key) {
      previous[key] = indices.map(function (i) { var v = get(gd.data[i], key); return v === undefined ? null : v; });
    });
    state.restyles.push({update: previous, indices: indices});
    return window.Plotly.restyle(gd, update, indices);
  }

  function restoreStyles(gd, state) {
    var restyles = state.restyles.reverse();
    state.restyles = [];
    return restyles.reduce(function (done, r) {
      return done.then(function () { return window.Plotly.restyle(gd, r.update, r.indices); });
    }, Promise.resolve());
  }

  function setNarrow(gd, narrow) {
    var state = gd._bookFigure;
    if (narrow === state.narrow) return Promise.resolve();
    state.narrow = narrow;
    if (!narrow) {
      return window.Plotly.relayout(gd, state.restore).then(function () {
        fitHeight(gd);
        return restoreStyles(gd, state);
      });
    }
    var update = {};
    var above = roomAbove(gd);
    var cells = stackPanels(gd, update);
    if (!cells) scaleDiagram(gd, update);  // stacked panels are the column's full width: their text fits
    fitTitle(gd, update);
    placeTitle(gd, update, above);
    state.restore = {};
    Object.keys(update).forEach(function (key) {
      var value = get(gd.layout, key.replace(/\[(\d+)\]/g, ".$1"));
      state.restore[key] = value === undefined ? null : JSON.parse(JSON.stringify(value));
    });
    return window.Plotly.relayout(gd, update).then(function () {
      fitHeight(gd);
      return settleTitle(gd, above);
    }).then(function () { return placeColorbars(gd, cells); })
      .then(function () { return cells ? null : scaleMarkers(gd, state); })
      .then(function () { return fitCellText(gd, state); });
  }

  function afterChange(gd) {
    var state = gd._bookFigure;
    if (!state || !state.narrow) return;
    var update = {};
    fitTitle(gd, update);
    if (update["title.text"]) {
      var above = roomAbove(gd);
      placeTitle(gd, update, above);
      window.Plotly.relayout(gd, update).then(function () { fitHeight(gd); return settleTitle(gd, above); });
    }
    hideUnreadableNumbers(gd);
  }

  function setUp(gd) {
    if (gd._bookFigure) return;
    gd._bookFigure = {narrow: false, restore: {}, restyles: []};
    var hide = buildControls(gd);
    var start = Object.keys(hide).length ? window.Plotly.relayout(gd, hide) : Promise.resolve();
    start.then(function () {
      if (!Object.keys(hide).length) return;
      var update = {}, above = roomAbove(gd);
      placeTitle(gd, update, above);
      return window.Plotly.relayout(gd, update).then(function () { fitHeight(gd); return settleTitle(gd, above); });
    }).then(function () {
      return setNarrow(gd, gd.parentElement.clientWidth < NARROW);
    }).then(function () {
      if (gd.on) gd.on("plotly_sliderchange", function () { afterChange(gd); });
      if (!window.ResizeObserver) return;
      var width = gd.parentElement.clientWidth;
      new ResizeObserver(function () {
        var now = gd.parentElement.clientWidth;
        if (now === width || gd.offsetParent === null) return;
        width = now;
        setNarrow(gd, now < NARROW).then(function () { window.Plotly.Plots.resize(gd); });
      }).observe(gd.parentElement);
    }).then(function () {
      return hideUnreadableNumbers(gd);
    }).then(function () {
      gd.setAttribute("data-book-figure", "ready");
    });
  }

  function whenDrawn(gd, tries) {
    if (gd._fullLayout && gd._fullLayout._size) setUp(gd);
    else if (tries > 0) setTimeout(function () { whenDrawn(gd, tries - 1); }, 100);
  }

  /* bertviz's views draw fixed-width pictures (data-width pixels): zoomed to the column, but never so far that their
     text becomes unreadable; below that (a phone), their frame scrolls sideways inside itself, never the page. */
  function fitBertviz() {
    document.querySelectorAll(".bertviz-fit[data-width]").forEach(function (view) {
      var fit = view.parentElement.clientWidth / parseFloat(view.getAttribute("data-width"));
      view.style.zoom = String(Math.max(BERTVIZ_MIN_ZOOM, Math.min(1, fit)));
    });
  }

  window.addEventListener("resize", fitBertviz);
  window.addEventListener("load", function () {
    fitBertviz();
    if (!window.Plotly) return;
    document.querySelectorAll(".plotly-graph-div").forEach(function (gd) { whenDrawn(gd, 100); });
  });
})();
