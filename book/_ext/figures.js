/* The book's plotly figures on every screen, from the keyboard and for screen readers
   (book/_ext/static_book/figures.py adds this file to pages with a figure).

   1. Controls above the figure, never on it, each reachable and operable from the keyboard: each plotly dropdown
      (layout.updatemenus) becomes an HTML <select>, a row of plotly buttons HTML buttons (a choice among them, such
      as a head picker, says which one is pressed: aria-pressed), each plotly slider an HTML range input that names
      its value. They run the very same plotly calls the menu, button or slider step would (its method and args),
      and a slider follows an animation that Play runs. The room plotly's own controls took is given back.
   2. Every figure is named for assistive technology (role="img", aria-label: its title, else its panels' titles
      and axes), and says so again when a control changes its title.
   3. A narrow column (a phone): panels side by side are stacked into one column, each full width, with room between
      them for the axis titles and panel titles that go there; long titles wrap; titles of small panels in a grid
      shrink (not below MIN_TEXT px) and wrap to fit their panel.
      Widening the column again restores the figure.
   4. Numbers in heatmap cells that do not fit their cell shrink to fit (not below MIN_TEXT px), or are left to the
      hover label; the figure's height fits what it draws (no empty band where a control was, nothing cut off).
   5. Figures follow their column's width when it changes (rotation, the sidebar opening).
   While it adjusts a figure, the figure's data-book-figure attribute is "busy"; then "ready".
   0. First of all, plotly.js itself (_static/vendor/plotly.min.js of the English site, 4.8 MB): this file is deferred and loads it without
      holding up the page's first paint: after that paint, when a figure comes within a screen of the view or once the
      page has loaded, whichever is first; through RequireJS where the page has it (a bertviz view), since plotly.js 2
      registers as an anonymous AMD module where it finds one (plotly.js 3 and 4 set window.Plotly). The build queued each figure's drawing script on window.bookFigures
      (book/_ext/static_book/figures.py); each runs, in its own task, once plotly.js is in. window.bookPlotly() gives a
      promise of plotly.js (the playground draws with it).
   Every word this file writes into the page (a control's or a figure's name) is written through tr: in the page's
   language, as the playground's are (book/_ext/playground.js).
   Live notebooks (Jupyter, Colab) do not load this file: there plotly draws its own menus, where the figures put them. */
(function () {
  "use strict";
  var NARROW = 560; // px of column below which panels stack
  var MIN_TEXT = 9; // px: no text in a figure is drawn smaller (heatmap numbers that would be are hidden)
  var SPACE = 4; // px of room a heatmap number keeps from its cell's sides, a panel title from its panel's
  var BERTVIZ_MIN_ZOOM = 0.7; // bertviz's 13 px token labels stay at least 9 px
  var MENU_LABEL = "menu-label"; // annotation name of a label the Python side drew beside a plotly menu
  var FIGURE_NOTE = "figure-note"; // annotation name of a note about the whole figure, under its panels
  // The English text is the key, as in transformer_book.i18n: the Chinese edition's pages carry the translations of
  // this file's words, from the book's catalogue (transformer_book/locale/zh/), as window.bookWords
  // (book/_ext/static_book/figures.py); without them (the English edition) the English is written as it is.
  var WORDS = window.bookWords || {};

  /* `text` in the page's language, each {name} of it replaced by values[name]. */
  function tr(text, values) {
    var template = Object.prototype.hasOwnProperty.call(WORDS, text) ? WORDS[text] : text;
    if (!values) return template;
    return template.replace(/\{(\w+)\}/g, function (whole, name) {
      return name in values ? String(values[name]) : whole;
    });
  }

  function plainText(label) {
    var tmp = document.createElement("span");
    tmp.innerHTML = String(label == null ? "" : label).replace(/<br\s*\/?>/gi, " ");
    return tmp.textContent.replace(/\u200b/g, "").replace(/\s+/g, " ").trim();
  }

  function get(obj, path) {
    return path.split(".").reduce(function (o, k) { return o == null ? undefined : o[k]; }, obj);
  }

  /* A control's plotly call; settled either way (plotly rejects an animation that another one interrupts). Its
     arguments copied: plotly keeps the objects it is given as the figure's, which the fits here then change. */
  function run(gd, step) {
    if (!step || !step.method || step.method === "skip") return Promise.resolve();
    var args = JSON.parse(JSON.stringify(step.args || []));
    keepFittedHeight(gd, args[{relayout: 0, update: 1}[step.method]]);
    return window.Plotly[step.method].apply(null, [gd].concat(args)).catch(function () {});
  }

  /* A control that sets the figure's height (a diagram whose states differ in height): the figure grows or shrinks
     by as much as that height differs from the one it asked for before, so that it keeps the room this file gave or
     took (a wrapped title, a fitted bottom margin) and its plot area is the height the control meant; the height a
     wider column restores changes with it. */
  function keepFittedHeight(gd, layout) {
    var state = gd._bookFigure;
    if (!state || !layout || typeof layout.height !== "number") return;
    var change = layout.height - state.height;
    state.height = layout.height;
    if (state.narrow && typeof state.restore.height === "number") state.restore.height += change;
    layout.height = gd._fullLayout.height + change;
  }

  function busy(gd) { gd.setAttribute("data-book-figure", "busy"); }

  function ready(gd) { gd.setAttribute("data-book-figure", "ready"); }

  /* 1. Controls: HTML controls in a bar before the figure. The build put the bar in the page with the figure's menus
     and sliders (static_book/figures.py): they are shown as soon as this file runs, long before plotly.js is in, so that
     the text below does not move when it arrives; each control waits, disabled, until the figure is drawn, then runs
     its entry's plotly call, found in the drawn figure. A figure without that bar gets one once it is drawn. */
  function fillReservedBars() {
    document.querySelectorAll(".book-figure-controls[data-book-controls]").forEach(function (bar) {
      var gd = bar.nextElementSibling && bar.nextElementSibling.querySelector(".plotly-graph-div");
      var layout = JSON.parse(bar.getAttribute("data-book-controls"));
      bar.removeAttribute("data-book-controls");
      if (gd) fillControls(gd, bar, layout);
      if (!bar.childNodes.length) { bar.remove(); return; } // menus that show nothing (hidden ones, a single entry)
      gd._bookBar = bar;
      reserveHeight(gd, layout);
    });
  }

  /* The height the figure will have, as far as the page knows before plotly.js is in (plotly's placeholder has the
     layout's): the room plotly's own controls took above the plot goes, the title's stays (placeTitle), wrapped as
     fitTitle wraps it in a narrow column; so the text below moves less when the figure is drawn. */
  function reserveHeight(gd, layout) {
    var width = gd.parentElement.clientWidth, size = layout.titleSize, title = layout.title;
    if (width < NARROW) title = wrapText(title, titleChars(width, size));
    var t = Math.ceil(titleBlock(title, size) + 6);
    gd.parentElement.style.height = layout.height - layout.top + t + "px";
  }

  function fillControls(gd, bar, layout) {
    (layout.updatemenus || []).forEach(function (menu, i) {
      var buttons = shownEntries(menu);
      if (menu.visible === false || (buttons.length < 2 && menu.type !== "buttons")) return; // one entry says nothing
      bar.appendChild(menu.type === "buttons" ? buttonRow(gd, menu, buttons, i) : select(gd, menu, buttons, i));
    });
    (layout.sliders || []).forEach(function (slider, i) {
      if (slider.visible === false || (slider.steps || []).length < 2) return;
      bar.appendChild(range(gd, slider, i));
    });
    setEnabled(bar, !!gd._bookFigure);
  }

  function setEnabled(bar, enabled) {
    bar.querySelectorAll("select, input, button").forEach(function (el) { el.disabled = !enabled; });
  }

  function shownEntries(menu) {
    return (menu.buttons || []).filter(function (b) { return b.visible !== false; });
  }

  /* Entry k of menu i of the drawn figure, with its plotly call. */
  function menuEntry(gd, i, k) {
    return shownEntries(gd.layout.updatemenus[i])[k];
  }

  /* What a control needs of the drawn figure (a slider follows its animation), run once it is drawn. */
  function onceDrawn(gd, setUp) {
    (gd._bookOnDrawn = gd._bookOnDrawn || []).push(setUp);
  }

  /* The drawn figure's controls working (their bar made now where the build put none); returns the relayout that
     hides plotly's own. */
  function setUpControls(gd) {
    var hide = {};
    (gd.layout.updatemenus || []).forEach(function (menu, i) {
      if (menu.visible !== false) hide["updatemenus[" + i + "].visible"] = false;
    });
    (gd.layout.sliders || []).forEach(function (slider, i) {
      if (slider.visible !== false && (slider.steps || []).length >= 2) hide["sliders[" + i + "].visible"] = false;
    });
    (gd.layout.annotations || []).forEach(function (a, i) {
      if (a.name === MENU_LABEL) hide["annotations[" + i + "].visible"] = false;
    });
    var wrapper = gd.parentElement; // plotly's output: a div of the figure's height around the figure
    if (!gd._bookBar) {
      gd._bookBar = document.createElement("div");
      gd._bookBar.className = "book-figure-controls";
      fillControls(gd, gd._bookBar, gd.layout);
      if (gd._bookBar.childNodes.length) wrapper.parentElement.insertBefore(gd._bookBar, wrapper);
    }
    setEnabled(gd._bookBar, true);
    (gd._bookOnDrawn || []).forEach(function (setUp) { setUp(); });
    return hide;
  }

  function changed(gd) {
    return function () { afterChange(gd); };
  }

  function select(gd, menu, buttons, i) {
    var wrap = document.createElement("label");
    var name = document.createElement("span");
    name.textContent = plainText(menu.name) || tr("show");
    wrap.appendChild(name);
    var el = document.createElement("select");
    buttons.forEach(function (b, k) { el.appendChild(new Option(plainText(b.label), String(k))); });
    el.value = String(Math.min(menu.active || 0, buttons.length - 1));
    el.addEventListener("change", function () {
      busy(gd);
      run(gd, menuEntry(gd, i, Number(el.value))).then(changed(gd));
    });
    wrap.appendChild(el);
    return wrap;
  }

  /* A row of buttons: actions (Play, Pause: animations) or a choice among views (a head picker), whose pressed
     button stays marked. */
  function buttonRow(gd, menu, buttons, i) {
    var choice = menu.showactive !== false && buttons.every(function (b) { return b.method !== "animate"; });
    var row = document.createElement("span");
    row.className = "book-figure-buttons";
    row.setAttribute("role", "group");
    row.setAttribute("aria-label", plainText(menu.name) || tr(choice ? "show" : "animation"));
    var elements = buttons.map(function (b, k) {
      var el = document.createElement("button");
      el.type = "button";
      el.textContent = plainText(b.label);
      // a label of symbols only (⏸) is named; letters of any script (Chinese too) name themselves
      if (/^[^\p{L}\p{N}]*$/u.test(el.textContent)) {
        el.setAttribute("aria-label", b.method === "animate" ? tr("pause") : tr("button {k}", {k: k}));
      }
      if (choice) el.setAttribute("aria-pressed", String(k === (menu.active || 0)));
      el.addEventListener("click", function () {
        if (choice) elements.forEach(function (other) { other.setAttribute("aria-pressed", String(other === el)); });
        var entry = menuEntry(gd, i, k);
        if (entry.method === "animate") { run(gd, entry); return; } // frames come and go; the slider follows them
        busy(gd);
        run(gd, entry).then(changed(gd));
      });
      row.appendChild(el);
      return el;
    });
    return row;
  }

  /* A slider: a range input over its steps, named by the slider's prefix ("real tokens: "), showing the current
     step's label; it follows an animation (Play) through the frames its steps show. */
  function range(gd, slider, i) {
    var steps = slider.steps;
    var prefix = plainText(get(slider, "currentvalue.prefix") || "").replace(/[:=]\s*$/, "").trim();
    var wrap = document.createElement("label");
    wrap.className = "book-figure-slider";
    var name = document.createElement("span");
    name.textContent = prefix || plainText(slider.name) || tr("step");
    var input = document.createElement("input");
    input.type = "range";
    input.min = "0";
    input.max = String(steps.length - 1);
    input.step = "1";
    var value = document.createElement("output");
    var show = function (k) {
      input.value = String(k);
      value.textContent = plainText(steps[k].label);
      input.setAttribute("aria-valuetext", (prefix ? prefix + " " : "") + value.textContent);
    };
    show(Math.min(slider.active || 0, steps.length - 1));
    input.addEventListener("input", function () {
      var k = Number(input.value);
      show(k);
      busy(gd);
      run(gd, gd.layout.sliders[i].steps[k]).then(changed(gd));
    });
    onceDrawn(gd, function () {
      gd.on("plotly_animatingframe", function (event) {
        var k = gd.layout.sliders[i].steps.findIndex(function (s) {
          return s.method === "animate" && Array.isArray(get(s, "args.0")) && String(s.args[0][0]) === String(event.name);
        });
        if (k >= 0) show(k);
      });
    });
    wrap.appendChild(name);
    wrap.appendChild(input);
    wrap.appendChild(value);
    return wrap;
  }

  /* 2. The figure's name for assistive technology. */
  function titleText(gd) {
    var title = gd.layout.title;
    return title ? (typeof title === "string" ? title : title.text || "") : "";
  }

  function nameFigure(gd) {
    var name = plainText(titleText(gd));
    if (!name) {
      var panels = (gd.layout.annotations || []).filter(function (a) {
        return a.name !== MENU_LABEL && a.showarrow === false && a.yref === "paper" && a.visible !== false && a.text;
      }).map(function (a) { return plainText(a.text); });
      var axes = Object.keys(gd._fullLayout).filter(function (k) { return /^[xy]axis\d*$/.test(k); }).sort()
        .map(function (k) { return plainText(get(gd._fullLayout[k], "title.text")); })
        .filter(function (t, i, all) { return t && all.indexOf(t) === i; });
      var titles = panels.slice(0, 6).join(tr(", ")), axisTitles = axes.join(tr(" and "));
      name = titles && axisTitles ? tr("{panels}: {axes}", {panels: titles, axes: axisTitles}) : titles || axisTitles;
    }
    gd.setAttribute("role", "img");
    gd.setAttribute("aria-label", tr("Figure: {name}", {name: name || tr("an interactive plot")}));
  }

  /* The px that what sits above the plot area takes (annotations, a legend), but for a menu's label: it goes with its
     menu (setUp measures before hiding them). */
  function roomAbove(gd) {
    var plotTop = gd.getBoundingClientRect().top + gd._fullLayout._size.t;
    var highest = plotTop, annotations = gd.layout.annotations || [];
    gd.querySelectorAll(".infolayer .annotation, .infolayer .legend").forEach(function (el) {
      var annotation = el.classList.contains("annotation") && annotations[el.getAttribute("data-index")];
      if (annotation && annotation.name === MENU_LABEL) return;
      var box = el.getBoundingClientRect();
      if (box.height > 0 && box.bottom <= plotTop + 2) highest = Math.min(highest, box.top);
    });
    return Math.ceil(plotTop - highest);
  }

  /* The px a title of ``size`` px takes at the top of its figure, with the room around it. */
  function titleBlock(text, size) {
    return text ? text.split(/<br\s*\/?>/i).length * size * 1.3 + 14 : 8;
  }

  /* How far the drawn title's glyphs reach above its first line's baseline and below its last one's (px): the same
     wherever plotly draws it and in however many lines. An estimate (a line of 1.3 em) where none is drawn. */
  function titleFont(gd, size) {
    var title = gd.querySelector(".infolayer .g-gtitle text");
    if (!title || !title.textContent.trim()) return {ascent: size, descent: 0.3 * size};
    var lines = title.querySelectorAll("tspan.line");
    var first = lines[0] || title, last = lines[lines.length - 1] || title;
    var baseline = function (line) { // its y, and its dy in em
      return parseFloat(line.getAttribute("y")) + parseFloat(line.getAttribute("dy") || 0) * size;
    };
    var top = gd.getBoundingClientRect().top, box = title.getBoundingClientRect();
    return {ascent: baseline(first) - (box.top - top), descent: box.bottom - top - baseline(last)};
  }

  /* The title at the top, left-aligned, its glyphs 6 px below the figure's top, then 8 px below them whatever sits
     above the plot, then the plot: margin.t to fit, the plot area's height kept. */
  function placeTitle(gd, update, above) {
    var text = update["title.text"] || titleText(gd);
    var size = get(gd._fullLayout, "title.font.size") || 16;
    var lines = text ? text.split(/<br\s*\/?>/i).length : 0, font = titleFont(gd, size);
    var glyphs = lines ? font.ascent + (lines - 1) * size * 1.3 + font.descent : 0;
    var oldT = gd._fullLayout._size.t;
    var t = Math.ceil(6 + glyphs + 8 + above);
    var height = (update.height || gd._fullLayout.height) + (t - oldT);
    update["margin.t"] = t;
    update.height = height;
    if (text) {
      // plotly draws a title of one line with yanchor middle 0.35 em below its y, one of several with its first
      // baseline at its y (that line's own offset replaces the title's)
      var y = 6 + font.ascent - (lines > 1 ? 0 : 0.35 * size);
      update["title.yref"] = "container";
      update["title.yanchor"] = "middle";
      update["title.y"] = 1 - y / height;
      update["title.x"] = 0.02;
      update["title.xanchor"] = "left";
    }
  }

  /* Where placeTitle's title ends is measured, then corrected where its glyphs reach otherwise than in the drawing
     it measured (a subscript wrapped onto another line, a pixel of rounding): the title 6 px below the top, the plot
     area below the title and whatever sits above the plot. */
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

  /* The figure ends 10 px below the lowest thing it draws (an axis title, a legend, a colour bar, a note): the
     bottom margin shrinks where a slider left an empty band, and grows where something would be cut off. */
  function fitBottom(gd) {
    var full = gd._fullLayout, frame = gd.getBoundingClientRect();
    var lowest = frame.top + full._size.t + full._size.h;
    gd.querySelectorAll(".main-svg .infolayer > g, .main-svg .infolayer .annotation, .main-svg text").forEach(function (el) {
      if (el.closest(".hoverlayer")) return;
      var box = el.getBoundingClientRect();
      if (box.height > 0 && box.width > 0) lowest = Math.max(lowest, box.bottom);
    });
    var slack = Math.round(frame.top + full.height - lowest - 10); // (a control may have changed the height)
    if (Math.abs(slack) < 3 || full._size.b - slack < 0) return Promise.resolve();
    return window.Plotly.relayout(gd, {"margin.b": full._size.b - slack, height: full.height - slack})
      .then(function () { fitHeight(gd); });
  }

  function fitHeight(gd) {
    gd.parentElement.style.height = gd._fullLayout.height + "px";
  }

  /* 3. Narrow screens. */
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

  function annotationNode(gd, i) {
    return gd.querySelector('.infolayer .annotation[data-index="' + i + '"]');
  }

  /* How far below its plot area a panel's axis texts reach, and how far above it its title: measured in the wide
     layout, so that stacked panels leave room for both. */
  function panelRoom(gd, cell) {
    var full = gd._fullLayout, frame = gd.getBoundingClientRect();
    var xa = full[cell.x], ya = full[cell.y];
    var top = frame.top + ya._offset, bottom = top + ya._length;
    var below = 0, above = 0;
    var id = xa._id; // "x", "x2", ...
    gd.querySelectorAll("." + id + "tick text, .g-" + id + "title text").forEach(function (t) {
      var box = t.getBoundingClientRect();
      if (box.height > 0) below = Math.max(below, box.bottom - bottom);
    });
    var own = id + " domain"; // an annotation placed in the panel's own frame ("x2 domain": 0 to 1 across it)
    (gd.layout.annotations || []).forEach(function (item, i) {
      var a = annotationNode(gd, i);
      var over = item.xref === own ? item.y >= 0.999
        : item.xref === "paper" && cellAt([cell], item.x) !== null && item.y >= cell.yd[1] - 0.001;
      if (!a || !over) return;
      var box = a.getBoundingClientRect();
      if (box.height > 0) above = Math.max(above, top - box.top);
    });
    return {below: Math.max(30, below), above: above};
  }

  /* One row of panels side by side (no two share a column): stack them, each the column's full width. A grid of
     several rows (layers x heads) stays a grid of small multiples. */
  function stackPanels(gd, update) {
    var full = gd._fullLayout, size = full._size;
    var cells = axisCells(full);
    if (cells.length < 2) return;
    cells.sort(function (a, b) { return a.xd[0] - b.xd[0]; });
    for (var k = 1; k < cells.length; k++) if (cells[k].xd[0] < cells[k - 1].xd[1] - 0.01) return;
    var rooms = cells.map(function (c) { return panelRoom(gd, c); });
    var gaps = cells.slice(1).map(function (c, i) { return Math.ceil(rooms[i].below + rooms[i + 1].above + 14); });
    var heights = cells.map(function (c) { return Math.max(220, Math.round(size.h * (c.yd[1] - c.yd[0]))); });
    var total = heights.reduce(function (s, h) { return s + h; }, 0) + gaps.reduce(function (s, g) { return s + g; }, 0);
    var offset = 0;
    cells.forEach(function (c, i) {
      c.nd = [1 - (offset + heights[i]) / total, 1 - offset / total];
      offset += heights[i] + (gaps[i] || 0);
      update[c.x + ".domain"] = [0, 1];
      update[c.y + ".domain"] = c.nd;
    });
    update.height = total + size.t + size.b;
    // Paper-positioned items follow their panel: inside it proportionally, above it onto its top edge (a panel
    // title), below it at the same distance in pixels.
    var lowest = cells.reduce(function (low, c) { return c.nd[0] < low.nd[0] ? c : low; });
    var bottom = Math.min.apply(null, cells.map(function (c) { return c.yd[0]; }));
    var move = function (item, prefix) {
      if (item.xref !== "paper" || item.yref !== "paper" || typeof item.x !== "number") return;
      if (item.name === FIGURE_NOTE) { // under the last panel, as far below it as below the panels before
        if (item.y < bottom) update[prefix + ".y"] = lowest.nd[0] - (bottom - item.y) * size.h / total;
        return;
      }
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
    // What sits outside the plot area in paper units (a legend, a colour bar below it) keeps its distance in pixels.
    var outside = function (y) {
      if (typeof y !== "number" || (y >= 0 && y <= 1)) return undefined;
      return y < 0 ? y * size.h / total : 1 + (y - 1) * size.h / total;
    };
    var legendY = outside(get(gd.layout, "legend.y"));
    if (legendY !== undefined) update["legend.y"] = legendY;
    Object.keys(gd.layout).filter(function (k) { return /^coloraxis\d*$/.test(k); }).forEach(function (k) {
      var y = outside(get(gd.layout[k], "colorbar.y"));
      if (y !== undefined) update[k + ".colorbar.y"] = y;
    });
    return cells;
  }

  /* Colour bars beside their own panel once the panels are stacked. A colour axis's bar is drawn again: plotly draws
     it beside the plot area it had before the relayout that stacked the panels, and does not draw it again when it
     then resizes that area to the bar's new room. */
  function placeColorbars(gd, cells) {
    if (!cells) return;
    var byAxis = {};
    cells.forEach(function (c) { byAxis[c.x.replace("axis", "")] = c; });
    var update = {colorbar: []}, indices = [], redraw = {};
    gd.data.forEach(function (trace, i) {
      var c = byAxis[trace.xaxis || "x"];
      if (!c || !trace.colorbar || trace.showscale === false) return;
      indices.push(i);
      update.colorbar.push(Object.assign({}, trace.colorbar, {
        x: 1.02, xanchor: "left", y: (c.nd[0] + c.nd[1]) / 2, yanchor: "middle", len: c.nd[1] - c.nd[0], lenmode: "fraction",
      }));
    });
    Object.keys(gd._fullLayout).filter(function (k) { return /^coloraxis\d*$/.test(k); }).forEach(function (k) {
      if (gd._fullLayout[k].showscale) redraw[k + ".colorbar.x"] = gd._fullLayout[k].colorbar.x;
    });
    var done = indices.length ? window.Plotly.restyle(gd, update, indices) : Promise.resolve();
    return done.then(function () { return Object.keys(redraw).length ? window.Plotly.relayout(gd, redraw) : null; });
  }

  /* Panel titles (annotations over one column of panels) wider than their panel shrink, not below MIN_TEXT px,
     then wrap at spaces. */
  function fitPanelTitles(gd, update) {
    var full = gd._fullLayout, cells = axisCells(full);
    if (cells.length < 2) return;
    (gd.layout.annotations || []).forEach(function (a, i) {
      var node = annotationNode(gd, i);
      if (a.name === MENU_LABEL || a.xref !== "paper" || typeof a.x !== "number" || !node) return;
      var c = cellAt(cells, a.x);
      if (!c || !(a.y >= c.yd[1] - 0.001)) return;
      var room = (c.xd[1] - c.xd[0]) * full._size.w - SPACE;
      var width = node.getBoundingClientRect().width;
      if (width <= room) return;
      var size = get(full.annotations[i], "font.size") || 13;
      var fit = Math.max(MIN_TEXT, Math.floor(size * room / width * 10) / 10);
      update["annotations[" + i + "].font.size"] = fit;
      if (width * fit / size > room) {
        update["annotations[" + i + "].text"] = wrapText(a.text, Math.max(4, Math.floor(room / (fit * 0.55))));
      }
    });
  }

  /* Rectangles the figure draws (layout shapes of type rect, scatter traces filled "toself"): page pixels. */
  function drawnBoxes(gd) {
    var boxes = [];
    (gd._fullLayout.shapes || []).forEach(function (shape, index) {
      if (shape.type !== "rect" || shape.visible === false) return;
      gd.querySelectorAll('.shapelayer path[data-index="' + index + '"]').forEach(function (path) { boxes.push(path.getBoundingClientRect()); });
    });
    gd.querySelectorAll(".scatterlayer path.js-fill").forEach(function (path) {
      var trace = get(path.closest(".trace"), "__data__.0.trace");
      if (trace && trace.fill === "toself") boxes.push(path.getBoundingClientRect());
    });
    return boxes.filter(function (r) { return r.width > 4 && r.height > 4; });
  }

  /* Labels written in a box (a diagram's blocks, a shaded band's note) wider than the box: smaller (not below
     MIN_TEXT px), then wrapped at spaces, so that they keep SPACE px from its sides. */
  function fitBoxLabels(gd, update) {
    var boxes = drawnBoxes(gd);
    if (!boxes.length) return;
    (gd.layout.annotations || []).forEach(function (a, i) {
      var node = annotationNode(gd, i), text = node && node.querySelector("text");
      if (!text || !a.text || a.showarrow !== false) return;
      var r = text.getBoundingClientRect(), cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
      var box = boxes.filter(function (b) { return cx > b.left && cx < b.right && cy > b.top && cy < b.bottom; })
        .sort(function (p, q) { return p.width * p.height - q.width * q.height; })[0];
      if (!box) return;
      var room = box.width - 2 * SPACE;
      var size = update["annotations[" + i + "].font.size"] || get(gd._fullLayout.annotations[i], "font.size") || 12;
      var width = r.width * size / (get(gd._fullLayout.annotations[i], "font.size") || 12);
      if (width <= room) return;
      var fit = Math.max(MIN_TEXT, Math.floor(size * room / width * 10) / 10);
      update["annotations[" + i + "].font.size"] = fit;
      if (width * fit / size > room) {
        update["annotations[" + i + "].text"] = wrapText(a.text, Math.max(6, Math.floor(room / (fit * 0.55))));
      }
    });
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

  /* Lines of at most maxChars Latin letters' width, broken at spaces and, in Chinese, between any two characters
     (each about as wide as two letters); never inside an HTML tag, never before a closing punctuation mark. */
  var CJK = "\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef";
  var PIECES = new RegExp("<[^>]*>|\\s+|[" + CJK + "]|[^\\s<" + CJK + "]+", "g");
  var WIDE = new RegExp("[" + CJK + "]");
  var CLOSING = /^[，。、：；！？）》」』”’,.:;!?)\]]$/;

  function textWidth(text) {
    var width = 0;
    for (var i = 0; i < text.length; i++) width += WIDE.test(text[i]) ? 1.8 : 1;
    return width;
  }

  function wrapText(text, maxChars) {
    var lines = [];
    String(text).split(/<br\s*\/?>/i).forEach(function (part) {
      var line = "", gap = "";
      (part.match(PIECES) || []).forEach(function (piece) {
        if (/^\s+$/.test(piece)) { gap = " "; return; }
        var next = line + (line ? gap : "") + piece;
        var breakable = line && piece[0] !== "<" && !CLOSING.test(piece) && plainText(line);
        if (breakable && textWidth(plainText(next)) > maxChars) { lines.push(line); line = piece; } else { line = next; }
        gap = "";
      });
      lines.push(line);
    });
    return lines.join("<br>");
  }

  function titleChars(width, size) {
    return Math.max(16, Math.floor((width - 20) / (size * 0.55)));
  }

  function fitTitle(gd, update) {
    var text = titleText(gd);
    if (!text) return;
    var size = get(gd._fullLayout, "title.font.size") || 16;
    var wrapped = wrapText(text, titleChars(gd._fullLayout.width, size));
    if (wrapped !== text) update["title.text"] = wrapped;
  }

  /* 4. Numbers in heatmap cells: as large as the figure asks where they fit their cell, smaller where they do not
     (not below MIN_TEXT px), else left to the hover label. Measured on each heatmap's drawn numbers. */
  var NUMBER = /^[\u2212+-]?(\d[\d.,]*(e[\u2212+-]?\d+)?%?|min|NaN|inf)$/i;

  function fitCellNumbers(gd, state) {
    var full = gd._fullLayout, update = {"textfont.size": [], texttemplate: []}, indices = [];
    gd.querySelectorAll(".heatmaplayer g.hm").forEach(function (group) {
      var trace = get(group, "__data__.0.trace"), i = trace && trace.index;
      var numbers = Array.prototype.map.call(group.querySelectorAll("text"), function (t) { return t; })
        .filter(function (t) { return t.textContent.trim(); });
      if (!trace || i === undefined || !numbers.length || !gd.data[i].texttemplate) return;
      if (!numbers.every(function (t) { return NUMBER.test(t.textContent.trim()); })) return;
      var xa = full["xaxis" + String(trace.xaxis || "x").slice(1)];
      var columns = Array.isArray(trace.z[0]) ? trace.z[0].length : 1;
      var cell = xa._length / Math.max(columns, Math.abs(xa.range[1] - xa.range[0])) - (trace.xgap || 0) - SPACE;
      var widest = Math.max.apply(null, numbers.map(function (t) { return t.getBBox().width; }));
      var size = Math.min.apply(null, numbers.map(function (t) { return parseFloat(getComputedStyle(t).fontSize) || 12; }));
      if (widest <= cell && size >= MIN_TEXT) return; // (plotly shrinks numbers of no set size to their cell itself)
      var fit = Math.min(size, Math.floor(size * cell / widest * 10) / 10);
      indices.push(i);
      update["textfont.size"].push(Math.max(MIN_TEXT, fit));
      update.texttemplate.push(fit >= MIN_TEXT ? gd.data[i].texttemplate : "");
    });
    return restyleRestorably(gd, state, update, indices);
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

  /* What a wider column puts back: the layout's own value at ``key`` (a relayout key), before a narrow one changes it. */
  function remember(gd, state, key) {
    var value = get(gd.layout, key.replace(/\[(\d+)\]/g, ".$1"));
    state.restore[key] = value === undefined ? null : JSON.parse(JSON.stringify(value));
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
    if (!cells) {
      scaleDiagram(gd, update); // stacked panels are the column's full width: their text fits
      fitBoxLabels(gd, update);
      fitPanelTitles(gd, update);
    }
    fitTitle(gd, update);
    placeTitle(gd, update, above);
    state.restore = {};
    // the bottom margin too, which fitBottom changes in the narrow layout: a wider column gets back its plot area
    Object.keys(update).concat("margin.b").forEach(function (key) { remember(gd, state, key); });
    return window.Plotly.relayout(gd, update).then(function () {
      fitHeight(gd);
      return settleTitle(gd, above);
    }).then(function () { return placeColorbars(gd, cells); })
      .then(function () { return cells ? null : scaleMarkers(gd, state); })
      .then(function () { return fitCellText(gd, state); });
  }

  /* After a control changed the figure: its title may be new (wrapped on a narrow screen, given the room its lines
     take, the figure named again), so may its numbers. */
  /* A control that drew other labels (a diagram's relayout of its annotations): they are fitted as the first ones
     were, shrunk with a narrow column and to their boxes, and what a wider column restores is theirs. */
  function fitNewLabels(gd, state, update) {
    if (state.annotations === gd.layout.annotations) return;
    state.annotations = gd.layout.annotations;
    Object.keys(state.restore).forEach(function (key) {
      if (/^annotations\[/.test(key)) delete state.restore[key];
    });
    var fit = {};
    if (state.narrow) scaleDiagram(gd, fit);
    fitBoxLabels(gd, fit);
    Object.keys(fit).forEach(function (key) {
      if (state.narrow) remember(gd, state, key);
      update[key] = fit[key];
    });
  }

  function afterChange(gd) {
    var state = gd._bookFigure;
    if (!state) return;
    fitHeight(gd); // a control that set the figure's height
    var update = {}, above = 0;
    fitNewLabels(gd, state, update);
    if (state.narrow) fitTitle(gd, update);
    if (update["title.text"] || titleText(gd) !== state.title) {
      above = roomAbove(gd);
      placeTitle(gd, update, above);
    }
    var done = Object.keys(update).length
      ? window.Plotly.relayout(gd, update).then(function () { fitHeight(gd); return settleTitle(gd, above); })
      : Promise.resolve();
    done.then(function () { return fitCellNumbers(gd, state); })
      .then(function () { return fitBottom(gd); })
      .then(function () { state.title = titleText(gd); nameFigure(gd); ready(gd); }, function () { ready(gd); });
  }

  function setUp(gd) {
    if (gd._bookFigure) return;
    busy(gd);
    gd._bookFigure = {narrow: false, restore: {}, restyles: [], height: gd._fullLayout.height};
    var hide = setUpControls(gd), start = Promise.resolve();
    if (Object.keys(hide).length) {
      // the drawing that hides plotly's controls places the title, in the room above the plot they leave (they push
      // no top margin)
      var above = roomAbove(gd);
      placeTitle(gd, hide, above);
      start = window.Plotly.relayout(gd, hide).then(function () { fitHeight(gd); return settleTitle(gd, above); });
    }
    start.then(function () {
      var update = {};
      fitBoxLabels(gd, update);
      return Object.keys(update).length ? window.Plotly.relayout(gd, update) : null;
    }).then(function () {
      return setNarrow(gd, gd.parentElement.clientWidth < NARROW);
    }).then(function () {
      if (!window.ResizeObserver) return;
      var width = gd.parentElement.clientWidth;
      new ResizeObserver(function () {
        var now = gd.parentElement.clientWidth;
        if (now === width || gd.offsetParent === null) return;
        width = now;
        busy(gd);
        fillColumn(gd).then(function () { return setNarrow(gd, now < NARROW); })
          .then(function () { return fitCellNumbers(gd, gd._bookFigure); })
          .then(function () { return fitBottom(gd); })
          .then(function () { ready(gd); }, function () { ready(gd); });
      }).observe(gd.parentElement);
    }).then(function () {
      return fitCellNumbers(gd, gd._bookFigure);
    }).then(function () {
      return fitBottom(gd);
    }).then(function () {
      gd._bookFigure.title = titleText(gd);
      gd._bookFigure.annotations = gd.layout.annotations;
      nameFigure(gd);
      ready(gd);
    });
  }

  /* The figure as wide as its column, before it is fitted to it. (plotly's own resize leaves alone a figure whose
     layout has a width, and plotly gives it one whenever a relayout sets its height, as the fits here do.) */
  function fillColumn(gd) {
    var width = gd.clientWidth;
    return width && width !== gd._fullLayout.width ? window.Plotly.relayout(gd, {width: width}) : Promise.resolve();
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

  /* bertviz draws its controls in SVG, for the mouse: a head view's coloured squares (show or hide a head), a model
     view's thumbnails (enlarge one). Each becomes a keyboard stop with a role and a name, Enter or Space clicking
     it; bertviz redraws its picture on every change, so they are found again after each. */
  var HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

  function clickOnKeys(el) {
    if (el._bookKeys) return;
    el._bookKeys = true;
    el.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
      el.dispatchEvent(new MouseEvent("click", {bubbles: true}));
    });
  }

  function rank(values) {
    var unique = values.filter(function (v, i) { return values.indexOf(v) === i; }).sort(function (a, b) { return a - b; });
    return values.map(function (v) { return unique.indexOf(v); });
  }

  function bertvizKeys(vis) {
    var svg = vis.querySelector("svg");
    if (!svg) return;
    var rects = Array.prototype.slice.call(svg.querySelectorAll(":scope > g > rect")); // what bertviz draws on top
    rects.filter(function (r) {
      return r.getAttribute("width") === "20" && r.getAttribute("height") === "20";
    }).forEach(function (square, i) {
      square.setAttribute("tabindex", "0");
      square.setAttribute("role", "checkbox");
      square.setAttribute("aria-label", tr("head {h}", {h: i}));
      square.setAttribute("aria-checked", String((square.getAttribute("fill") || "").toLowerCase() === HEAD_COLOURS[i % 10]));
      clickOnKeys(square);
    });
    var thumbnails = rects.filter(function (r) { return r.style.opacity === "0" && !r.classList.contains("detail"); });
    var layers = rank(thumbnails.map(function (r) { return parseFloat(r.getAttribute("y")); }));
    var heads = rank(thumbnails.map(function (r) { return parseFloat(r.getAttribute("x")); }));
    thumbnails.forEach(function (thumbnail, i) {
      thumbnail.setAttribute("tabindex", "0");
      thumbnail.setAttribute("role", "button");
      var name = tr("layer {layer}, head {head}: enlarge or close", {layer: layers[i], head: heads[i]});
      thumbnail.setAttribute("aria-label", name);
      clickOnKeys(thumbnail);
    });
  }

  function watchBertviz() {
    document.querySelectorAll(".bertviz-vis").forEach(function (vis) {
      var pending = false;
      new MutationObserver(function () {
        if (pending) return;
        pending = true;
        requestAnimationFrame(function () { pending = false; bertvizKeys(vis); });
      }).observe(vis, {childList: true, subtree: true, attributes: true, attributeFilter: ["fill"]});
      bertvizKeys(vis);
    });
  }

  /* 0. plotly.js, loaded once. */
  // The vendor folder, relative to this file, is its data-vendor (book/_ext/static_book/vendor.py): "vendor/" beside it
  // in the English site, the English site's in the Chinese, which is published under it and holds no copy of its own.
  var PLOTLY_URL = new URL(document.currentScript.dataset.vendor + "plotly.min.js", document.currentScript.src).href;
  var plotlyLoaded = null;

  function loadPlotly() {
    if (!plotlyLoaded) {
      plotlyLoaded = new Promise(function (resolve, reject) {
        if (window.Plotly && window.Plotly.newPlot) { resolve(window.Plotly); return; }
        if (typeof window.define === "function" && window.define.amd && window.requirejs) {
          window.requirejs.config({paths: {"book-plotly": PLOTLY_URL.replace(/\.js$/, "")}});
          window.requirejs(["book-plotly"], function (Plotly) { // an AMD module (plotly.js 2), else a global
            window.Plotly = Plotly || window.Plotly;
            resolve(window.Plotly);
          }, reject);
          return;
        }
        var script = document.createElement("script");
        script.src = PLOTLY_URL;
        script.async = true;
        script.onload = function () { resolve(window.Plotly); };
        script.onerror = function () { reject(new Error("could not load " + PLOTLY_URL)); };
        document.head.appendChild(script);
      });
    }
    return plotlyLoaded;
  }
  window.bookPlotly = loadPlotly;

  /* Each queued figure drawn in a task of its own once plotly.js is in (an error in one leaves the others drawn),
     then set up (1-5) once plotly has drawn it. */
  function drawQueued(draw) {
    loadPlotly().then(function () {
      setTimeout(function () {
        draw();
        document.querySelectorAll(".plotly-graph-div").forEach(function (gd) {
          if (!gd._bookWatched) { gd._bookWatched = true; whenDrawn(gd, 100); }
        });
      }, 0);
    });
  }

  /* `start` once the page has painted its first content (then plotly.js takes no bandwidth from what that needs, the
     page's stylesheets and scripts), or at its load event where the browser reports no paint. */
  function afterFirstPaint(start) {
    var started = false;
    var go = function () { if (!started) { started = true; start(); } };
    if (window.PerformanceObserver && (PerformanceObserver.supportedEntryTypes || []).indexOf("paint") >= 0) {
      new PerformanceObserver(function (list) {
        if (list.getEntriesByName("first-contentful-paint").length) go();
      }).observe({type: "paint", buffered: true});
    }
    if (document.readyState === "complete") go();
    else window.addEventListener("load", go);
  }

  function loadPlotlyWhenNeeded() {
    var figures = document.querySelectorAll(".plotly-graph-div");
    if (!figures.length) return;
    if (window.IntersectionObserver) {
      var near = new IntersectionObserver(function (entries) {
        if (!entries.some(function (e) { return e.isIntersecting; })) return;
        near.disconnect();
        loadPlotly();
      }, {rootMargin: "100% 0px"});
      figures.forEach(function (gd) { near.observe(gd); });
    }
    var afterLoad = function () { (window.requestIdleCallback || setTimeout)(loadPlotly, {timeout: 1000}); };
    if (document.readyState === "complete") afterLoad();
    else window.addEventListener("load", afterLoad);
  }

  fillReservedBars();
  var queued = window.bookFigures || [];
  window.bookFigures = {push: drawQueued};
  queued.forEach(drawQueued);
  afterFirstPaint(loadPlotlyWhenNeeded);

  window.addEventListener("resize", fitBertviz);
  window.addEventListener("load", function () {
    fitBertviz();
    watchBertviz();
  });
})();
