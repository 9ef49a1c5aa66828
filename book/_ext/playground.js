// The playground's page: fills each <div class="transformer-playground"> (written by
// transformer_book.playground.playground_html) with controls and figures, and runs the book's models with the engine
// (playground_engine.js, loaded just before this file). Its style is in book.css.
//
// ONNX Runtime Web and the model the page shows start loading once the page has painted (or when the playground comes
// into view or a reader focuses one of its controls), with the bytes shown as they arrive; then the other models, their
// downloads back to back once the runtime's and the first model's are in, the last of the menu first (the menu runs
// from the synthetic tasks to English -> German, which most readers come for). Decode waits for what is not in yet.
// Every drawing waits for the one before (plotly.js itself comes from figures.js, window.bookPlotly).
// A rejected input clears the previous result; the padding the page cannot use is brought into range, and said so.
// A decoder-only model (GPT-style) has other controls: a prefix instead of a source, a temperature, a top-k and a
// seed instead of padding, search and head switches; it shows the next-token probabilities after the prefix as bars,
// and continues the prefix greedily, sampled, or one greedy token at a time.
// window.transformerPlayground is the engine's playground of this site: what the book's browser test and benchmark
// call (decode, beamSearch, parseSource, load, timings...).
(function () {
  "use strict";
  const Engine = window.TransformerPlaygroundEngine;
  const {KINDS, KIND_NAMES, MAX_PADDING, InputError, translatable} = Engine;
  const script = document.currentScript; // in _static/; its data-vendor: the vendor folder, relative to it
  const playground = Engine.createPlayground(new URL(".", script.src).href,
    new URL(script.dataset.vendor, script.src).href);
  window.transformerPlayground = playground;
  // Every word the page writes, in the page's language: the English text is the key, as in transformer_book.i18n, and
  // the build gives the Chinese edition's page the translations of this file's and the engine's words, from the book's
  // catalogue (transformer_book/locale/zh/), as window.bookWords (book/_ext/static_book/playground.py). tr(text,
  // values) fills its {names}; translatable(text) marks English shown later through tr(name). Without bookWords (the
  // English edition) the page writes the English as it is.
  const WORDS = window.bookWords || {};
  function tr(text, values) {
    const template = Object.prototype.hasOwnProperty.call(WORDS, text) ? WORDS[text] : text;
    return values ? Engine.fill(template, values) : template;
  }
  // A model's name as the page shows it (its label in the manifest: the build gives the page its translation too).
  function label(info) {
    return tr(info.label);
  }
  const PLACEHOLDERS = {symbols: translatable("symbols, separated by spaces"), word: translatable("a date in words"),
    char: translatable("characters"), subword: translatable("an English number, date, amount or list")};
  const PREFIX_PLACEHOLDER = translatable("symbols, then <s> (the separator), separated by spaces");
  // The one kind of attention of a decoder-only model: its stack's, under the causal mask.
  const STACK_NAME = translatable("masked self-attention");
  function kindName(info, kind) {
    const name = Engine.isDecoderOnly(info) ? STACK_NAME : KIND_NAMES[kind];
    return tr(name);
  }
  // How many of the most probable next tokens the bars show.
  const NEXT_BARS = 8;
  // Not plotly's `responsive` (its own resizing, which nothing awaits): followResize resizes the figures in turn.
  const PLOT_CONFIG = {displayModeBar: false, scrollZoom: false};

  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => {
      if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    });
    (children || []).forEach((c) => e.appendChild(typeof c === "string" ? document.createTextNode(c) : c));
    return e;
  }

  // Plotly reads tick labels and hover text as HTML: "<s>" would vanish as a tag.
  function shown(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  // An output as the page prints it: without the space a subword model may write before its first word or after its
  // last (a lone "▁" first, then "▁Tonnen", decodes to " Tonnen", as the vocabulary's own decode gives it).
  function printed(info, manifest, ids) {
    return Engine.outputText(info, manifest, ids).trim();
  }

  function megabytes(bytes) {
    return (bytes / 1e6).toFixed(1);
  }

  // Every plotly call of the page, one after the other, each awaited, resizing included: clearing a result while
  // plotly still draws or resizes it would purge a figure under plotly's feet (an uncaught "TypeError: e.emit is not
  // a function").
  let drawing = Promise.resolve();
  function inTurn(task) {
    const turn = drawing.then(() => window.bookPlotly()).then(task);
    drawing = turn.catch(() => {});
    return turn;
  }

  // The figures of `box` follow its width (a rotated phone, a resized window), once a frame at most: each is resized,
  // but for the next-token probabilities, which `redrawSteps` draws again (how many columns fit depends on the width).
  function followResize(box, redrawSteps) {
    let width = box.clientWidth, planned = false;
    new ResizeObserver(() => {
      if (planned || box.clientWidth === width) return;
      planned = true;
      requestAnimationFrame(() => {
        planned = false;
        width = box.clientWidth;
        inTurn((Plotly) => Promise.all([...box.querySelectorAll(".js-plotly-plot:not(.playground-steps)")]
          .filter((plot) => plot.offsetParent && plot._fullLayout).map((plot) => Plotly.Plots.resize(plot))));
        redrawSteps();
      });
    }).observe(box);
  }

  function layout(manifest, height, extra) {
    return Object.assign({
      font: manifest.style.font, height, autosize: true, margin: {l: 60, r: 10, t: 30, b: 50}, dragmode: false,
      paper_bgcolor: "white", plot_bgcolor: manifest.style.mask_color, hoverlabel: {font: {size: 12}},
    }, extra);
  }

  // A token as a figure's label: a long subword cut short in the middle, its start and its end kept ("▁vierund…zig";
  // the hover text and the lists give it whole).
  function short(token, room) {
    const chars = Array.from(String(token)), head = Math.ceil((room - 1) / 2);
    return chars.length > room ? chars.slice(0, head).join("") + "…" + chars.slice(chars.length - (room - 1 - head)).join("")
      : String(token);
  }

  // Every category of a heatmap's axes labelled, as the book's figures label theirs (transformer_book/viz/style.py's
  // label_every_category): plotly's own ticks thin a category axis to every 2nd or 3rd token on a phone, and the reader
  // could not tell which column is which token. One tick per category; column labels that would not fit side by side
  // stand on end, at TICK_FONT px, where a column COLUMN_PITCH px wide holds one.
  const TICK_FONT = 10; // px
  const COLUMN_PITCH = 12; // px: a label on end at TICK_FONT px, and a gap to the next one
  function categoryAxis(extra) {
    return Object.assign({type: "category", dtick: 1, tick0: 0, automargin: true, fixedrange: true}, extra);
  }

  function columnAxis(labels, plotWidth, font) {
    const widest = Math.max(...labels.map((text) => textWidth(text, font)));
    return categoryAxis(widest + 4 <= plotWidth / labels.length ? {autotickangles: [0, -90]}
      : {tickangle: -90, tickfont: {size: Math.min(font.size, TICK_FONT)}});
  }

  // The width `text` takes in `font` ({family, size}), as the browser draws it (Chinese and Latin alike).
  const measuring = document.createElement("canvas").getContext("2d");
  function textWidth(text, font) {
    measuring.font = `${font.size}px ${font.family}`;
    return measuring.measureText(String(text)).width;
  }

  // The columns of the probability figure: every id of a small vocabulary; of a large one (the translator's 1,000
  // subwords), the token chosen at each step, then the runners-up of each step, up to MAX_COLUMNS or as many as `room`
  // (how many columns the plot's width holds).
  const MAX_COLUMNS = 24;
  function stepColumns(r, V, room) {
    if (V <= MAX_COLUMNS) return [...Array(V).keys()];
    const columns = [...new Set(r.tokens)], most = Math.min(MAX_COLUMNS, room);
    const ranked = r.probs.map((p) => [...p.keys()].sort((a, b) => p[b] - p[a] || a - b));
    for (let rank = 0; rank < 4 && columns.length < most; rank++) {
      for (const order of ranked) {
        if (columns.length >= most) break;
        if (!columns.includes(order[rank])) columns.push(order[rank]);
      }
    }
    return columns;
  }

  // Next-token probabilities of every step: a row per step, labelled with the token chosen there; as many columns as
  // the plot holds, each with its label (drawn again when the width changes).
  const STEPS_MARGIN = 10; // px on each side of the figure
  const TICK_PAD = 12; // px between a row's label and the plot, with a pixel or two to spare
  function drawSteps(box, manifest, info, r) {
    const plot = box.querySelector(".playground-steps"), V = info.tgt_vocab.length, font = manifest.style.font;
    const rows = r.tokens.map((token, i) => tr("step {step} → {token}", {step: i + 1,
      token: short(info.tgt_vocab[token], 12)}));
    const plotWidth = (plot.clientWidth || 600) - 2 * STEPS_MARGIN - TICK_PAD
      - Math.max(...rows.map((row) => textWidth(row, font))); // the colour bar above it, out of the columns' way
    const columns = stepColumns(r, V, Math.floor(plotWidth / COLUMN_PITCH));
    const some = columns.length < V
      ? tr(", for the {n} most probable of the {V} tokens", {n: columns.length, V: V.toLocaleString("en-US")}) : "";
    const title = r.beam ? tr("Next-token probabilities along the returned hypothesis")
      : r.prefix ? tr("Next-token probabilities at each step of the continuation") : tr("Next-token probabilities");
    box.querySelector(".playground-figure-title").textContent = title + some;
    const cut = columns.map((id) => short(info.tgt_vocab[id], 12)); // a category axis needs each label once
    const labels = cut.map((label, i) => (cut.indexOf(label) === i ? label : `${label} (${columns[i]})`));
    const names = columns.map((id) => shown(info.tgt_vocab[id]));
    const chosen = r.tokens.map((token, i) => tr("step {step}: {token} ({p})", {step: i + 1, token: info.tgt_vocab[token],
      p: r.probs[i][token].toFixed(2)}));
    plot.setAttribute("aria-label", tr("Heatmap of the next-token probabilities of each step; the token chosen and its "
      + "probability: {chosen}", {chosen: chosen.join(tr(", "))}));
    return inTurn((Plotly) => Plotly.react(plot, [{
      type: "heatmap", z: r.probs.map((p) => columns.map((id) => p[id])), x: labels.map(shown), y: rows.map(shown),
      zmin: 0, zmax: 1, customdata: r.probs.map(() => names),
      colorscale: manifest.style.weights_scale, xgap: 1, ygap: 1, colorbar: {orientation: "h", thickness: 10, len: 0.5, x: 1, xanchor: "right", y: 1, yanchor: "bottom", ypad: 6},
      hovertemplate: "%{y}<br>p(%{customdata}) = %{z:.3f}<extra></extra>",
    }], layout(manifest, 120 + 24 * r.tokens.length + 7 * Math.max(0, ...labels.map((label) => label.length - 3)), {
      margin: {l: STEPS_MARGIN, r: STEPS_MARGIN, t: 10, b: 10}, plot_bgcolor: "white",
      xaxis: columnAxis(labels, plotWidth, font),
      yaxis: categoryAxis({autorange: "reversed"}),
    }), PLOT_CONFIG));
  }

  // The beams step by step, as the decoding chapter's beam figure draws them, turned on its side so that it fits a
  // phone: a row per step, a column per live place (best first), an edge to the hypothesis each one extended, the
  // returned one in red; when it ended with </s>, that </s> is drawn in a column of its own ("ended"), since a
  // finished hypothesis leaves the live places. Each token is a label in a box of its colour, the box as wide as its
  // text; a token longer than its column's room is cut in the middle (the hover label gives it whole).
  const BEAM_FONT = 11; // px
  function drawBeam(box, manifest, info, beam) {
    const plot = box.querySelector(".playground-beam-tree"), style = manifest.style, trace = beam.trace;
    const K = trace.tokens[0].length, steps = trace.tokens.length, onBest = new Set(), returned = trace.best;
    const columns = returned.ended === "eos" ? K + 1 : K;
    const width = plot.getBoundingClientRect().width || 600;
    const room = Math.max(3, Math.min(16, Math.floor(((width - 70) / columns - 12) / (0.62 * BEAM_FONT))));
    const lastLive = returned.ended === "eos" ? returned.step - 1 : returned.step; // its last step in a live place
    for (let t = lastLive, slot = returned.slot; t >= 0; t--) {
      onBest.add(t + ":" + slot);
      slot = trace.parents[t][slot];
    }
    const edges = {x: [], y: []}, best = {x: [], y: []}, nodes = {x: [], y: [], hover: []}, labels = [];
    function node(x, y, token, hover, color, ink) {
      nodes.x.push(x);
      nodes.y.push(y);
      nodes.hover.push(hover);
      labels.push({x, y, xref: "x", yref: "y", text: shown(short(token, room)), showarrow: false, bgcolor: color,
        bordercolor: "white", borderpad: 3, font: {size: BEAM_FONT, color: ink}, hovertext: hover});
    }
    node(0, 0, "<s>", tr("the decoder's first input"), style.bos_color, "white");
    for (let t = 0; t < steps; t++) {
      for (let k = 0; k < K; k++) {
        const token = trace.tokens[t][k], score = trace.scores[t][k];
        if (!isFinite(score)) continue;
        const onPath = onBest.has(t + ":" + k), line = onPath ? best : edges;
        node(k, t + 1, info.tgt_vocab[token], tr("step {step}, beam {beam}: {token}<br>summed log-probability {score}",
          {step: t + 1, beam: k + 1, token: shown(info.tgt_vocab[token]), score: score.toFixed(3)}),
        onPath ? style.best_color : style.beam_color,
        onPath ? "white" : "#1e293b"); // dark on the light blue of the hypotheses not returned
        line.x.push(trace.parents[t][k], k, null);
        line.y.push(t, t + 1, null);
      }
    }
    if (returned.ended === "eos") { // the returned hypothesis's </s>, beside the live places
      node(K, returned.step + 1, info.tgt_vocab[manifest.eos_id], tr("step {step}: {token} ends the returned "
        + "hypothesis<br>score {score} (length-penalised)", {step: returned.step + 1,
        token: shown(info.tgt_vocab[manifest.eos_id]), score: beam.score.toFixed(3)}), style.best_color, "white");
      best.x.push(lastLive >= 0 ? returned.slot : 0, K, null);
      best.y.push(returned.step, returned.step + 1, null);
    }
    plot.setAttribute("aria-label", tr("Tree of the beam search: {K} hypotheses kept at each of {steps} steps; "
      + "the list above gives the final ones with their scores", {K, steps}));
    return inTurn((Plotly) => Plotly.react(plot, [
      {type: "scatter", mode: "lines", x: edges.x, y: edges.y, line: {color: style.edge_color, width: 2}, hoverinfo: "skip"},
      {type: "scatter", mode: "lines", x: best.x, y: best.y, line: {color: style.best_color, width: 3}, hoverinfo: "skip"},
      {type: "scatter", mode: "markers", x: nodes.x, y: nodes.y, hovertext: nodes.hover, marker: {size: 22, opacity: 0},
        hovertemplate: "%{hovertext}<extra></extra>"},
    ], layout(manifest, 70 + 34 * (steps + 1), {
      showlegend: false, plot_bgcolor: "white", margin: {l: 10, r: 10, t: 10, b: 10}, annotations: labels,
      xaxis: {title: {text: tr("beam (best first)"), standoff: 6}, side: "top", tickvals: [...Array(columns).keys()],
        ticktext: [...Array(columns).keys()].map((i) => (i < K ? String(i + 1) : tr("ended"))), range: [-0.6, columns - 0.4],
        zeroline: false, showgrid: false, automargin: true, fixedrange: true},
      yaxis: {title: {text: tr("step")}, range: [steps + 0.6, -0.6], tickvals: [...trace.tokens.keys(), steps],
        zeroline: false, automargin: true, fixedrange: true},
    }), PLOT_CONFIG));
  }

  // A decoder-only model's next-token probabilities after the prefix: the NEXT_BARS most probable tokens as bars, most
  // probable first (those top-k leaves out, at 0, not among them), of the distribution the first token was chosen from (the model's own for greedy decoding; at the
  // temperature and top-k for sampling), each bar with its probability.
  function drawNext(box, manifest, info, r) {
    const plot = box.querySelector(".playground-next"), p = r.drawnFrom[0], font = manifest.style.font;
    const order = [...p.keys()].filter((id) => p[id] > 0).sort((a, b) => p[b] - p[a] || a - b).slice(0, NEXT_BARS);
    const labels = order.map((id) => info.tgt_vocab[id]);
    const s = r.sampling;
    box.querySelector(".playground-figure-title").textContent = s
      ? tr("Next-token probabilities after the prefix, at temperature {t} and top-k {k}",
        {t: s.temperature, k: s.topK || tr("all")})
      : tr("Next-token probabilities after the prefix");
    plot.setAttribute("aria-label", tr("Bar chart of the {n} most probable next tokens: {bars}", {n: order.length,
      bars: order.map((id) => tr("{token} {p}", {token: info.tgt_vocab[id], p: p[id].toFixed(3)})).join(tr(", "))}));
    plot.dataset.probs = JSON.stringify(p);
    const room = 14 + Math.max(...labels.map((label) => textWidth(label, font)));
    return inTurn((Plotly) => Plotly.react(plot, [{
      type: "bar", orientation: "h", x: order.map((id) => p[id]), y: labels.map(shown), marker: {color: manifest.style.bos_color},
      text: order.map((id) => p[id].toFixed(2)), cliponaxis: false, constraintext: "none", textfont: {size: 12},
      textposition: order.map((id) => (p[id] > 0.2 ? "inside" : "outside")), insidetextanchor: "end",
      customdata: order.map((id) => r.probs[0][id]),
      hovertemplate: tr("p(%{y}) = %{x:.3f}; the model's own: %{customdata:.3f}") + "<extra></extra>",
    }], layout(manifest, 50 + 24 * order.length, {
      margin: {l: room, r: 30, t: 10, b: 36}, plot_bgcolor: "white", bargap: 0.25, showlegend: false,
      xaxis: {range: [0, 1], fixedrange: true, title: {text: tr("probability"), standoff: 4}, automargin: true},
      yaxis: categoryAxis({autorange: "reversed"}),
    }), PLOT_CONFIG));
  }

  function drawBeamList(box, manifest, info, beam) {
    const list = box.querySelector(".playground-beam-list");
    list.replaceChildren(...beam.hypotheses.map((h, k) => ({h, k}))
      .sort((x, y) => y.h.score - x.h.score)
      .map(({h, k}) => el("li", {text: tr("{output} — log-probability {logp} over {n} tokens, score {score}", {
        output: printed(info, manifest, h.tokens), logp: h.logProb.toFixed(3), n: h.length, score: h.score.toFixed(3),
      }) + (k === 0 ? tr(" (returned)") : "")})));
  }

  function idle() {
    return new Promise((resolve) => (window.requestIdleCallback || setTimeout)(resolve, {timeout: 1000}));
  }

  // `start` (once) right after the page's first contentful paint.
  function afterFirstPaint(start) {
    let started = false;
    const go = () => {
      if (!started) start();
      started = true;
    };
    if (window.PerformanceObserver && PerformanceObserver.supportedEntryTypes.includes("paint")) {
      new PerformanceObserver((list) => {
        if (list.getEntriesByName("first-contentful-paint").length) go();
      }).observe({type: "paint", buffered: true});
    }
    if (document.readyState === "complete") go();
    else window.addEventListener("load", go, {once: true});
  }

  // A frame drawn, then a new task: the figures of a result are drawn one per task, so that the output shows at once and
  // the page answers the reader between figures.
  function nextFrame() {
    return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  }

  // The colour scale of the attention maps, once above them: white (0) to dark blue (1), as each map draws it.
  function weightScale(manifest) {
    const stops = manifest.style.weights_scale.map(([at, colour]) => `${colour} ${(100 * at).toFixed(0)}%`);
    return el("div", {"class": "playground-scale", role: "img",
      "aria-label": tr("colour scale of the attention maps: white is a weight of 0, dark blue a weight of 1")}, [
      el("span", {text: tr("weight 0")}),
      el("span", {"class": "playground-scale-bar", style: `background:linear-gradient(to right, ${stops.join(", ")})`}),
      el("span", {text: "1"}),
    ]);
  }

  // The attention maps of the last decoding step: one heatmap per head of the chosen kind and layer, one per frame
  // (a newer drawing of the grid stops an older one).
  async function drawAttention(box, manifest, info, r, masks, kind, layer) {
    const src = r.src.map((id) => short(info.src_vocab[id], 10)), tgt = r.tgt.map((id) => short(info.tgt_vocab[id], 10));
    const keys = kind === "decoder" ? tgt : src, queries = kind === "encoder" ? src : tgt;
    const longest = Math.max(...keys.concat(queries).map((label) => String(label).length + 3));
    const room = 8 + 6 * longest; // px for tick labels "position:token" at 10 px
    const grid = box.querySelector(".playground-heads"), weights = r.attention[kind][layer];
    const drawing = String(Number(grid.dataset.drawing || 0) + 1);
    grid.dataset.drawing = drawing;
    grid.style.setProperty("--playground-head-width", `${room + 5 + COLUMN_PITCH * keys.length}px`); // a column per label
    await inTurn((Plotly) => {
      while (grid.children.length > weights.length) {
        Plotly.purge(grid.lastChild);
        grid.removeChild(grid.lastChild);
      }
      while (grid.children.length < weights.length) grid.appendChild(el("div", {"class": "playground-head", role: "img"}));
    });
    for (const [h, w] of weights.entries()) {
      if (h > 0) await nextFrame();
      if (grid.dataset.drawing !== drawing) return; // redrawn or cleared meanwhile
      // Masked keys drawn as the background (grey): padding keys, and the future in the decoder's self-attention.
      const z = w.map((row, q) => row.map((x, k) => {
        const masked = kind === "decoder" ? k > q || r.tgt[k] === manifest.pad_id : r.src[k] === manifest.pad_id;
        return masked ? null : x;
      }));
      const silenced = masks[kind][layer][h] === 0;
      const head = tr(silenced ? "{kind}, layer {layer}, head {head} (silenced)" : "{kind}, layer {layer}, head {head}",
        {kind: kindName(info, kind), layer, head: h});
      await inTurn((Plotly) => grid.dataset.drawing === drawing && grid.children[h] && Plotly.react(grid.children[h], [{
        type: "heatmap", z, x: keys.map((t, i) => `${i}:${shown(t)}`), y: queries.map((t, i) => `${i}:${shown(t)}`),
        zmin: 0, zmax: 1, showscale: false, colorscale: manifest.style.weights_scale, xgap: 1, ygap: 1,
        hovertemplate: tr("query %{y}<br>key %{x}<br>weight %{z:.3f}") + "<extra></extra>",
      }], layout(manifest, room + 40 + 14 * queries.length, {
        title: {text: tr(silenced ? "head {head} (silenced)" : "head {head}", {head: h}), x: 0.02, xanchor: "left", font: {size: 13}},
        margin: {l: room, r: 5, t: 28, b: room},
        xaxis: categoryAxis({tickangle: -90, tickfont: {size: TICK_FONT}}),
        yaxis: categoryAxis({autorange: "reversed", tickfont: {size: TICK_FONT}}),
      }), PLOT_CONFIG));
      if (grid.dataset.drawing !== drawing || !grid.children[h]) return;
      grid.children[h].setAttribute("aria-label", tr("{head}: weights of {queries} queries over {keys} keys",
        {head, queries: queries.length, keys: keys.length}));
    }
  }

  // Plotly's first figure on a page costs several times what the next ones do (its stylesheet restyles the page, much
  // of its code runs for the first time): while the model loads, draw a small heatmap and a small scatter plot out of
  // sight, each when the page is idle, so that the reader's first result is drawn as fast as the next ones.
  let drawingWarmed = null;
  function warmUpDrawing(root, manifest) {
    if (!drawingWarmed) {
      drawingWarmed = (async () => {
        const scratch = el("div", {"class": "playground-scratch", "aria-hidden": "true"});
        root.appendChild(scratch);
        for (const trace of [{type: "heatmap", z: [[0, 1], [1, 0]], x: ["a", "b"], y: ["c", "d"]},
          {type: "scatter", mode: "markers+text", x: [0, 1], y: [0, 1], text: ["a", "b"]}]) {
          await idle();
          await inTurn((Plotly) => Plotly.react(scratch, [trace], layout(manifest, 150, {annotations: [{x: 0, y: 0,
            text: "a", bgcolor: "white", showarrow: false}]}), PLOT_CONFIG));
        }
        await inTurn((Plotly) => {
          Plotly.purge(scratch);
          scratch.remove();
        });
      })();
    }
    return drawingWarmed;
  }

  function setUp(root, manifest, index) {
    const names = Object.keys(manifest.models), id = (part) => `playground-${index}-${part}`;
    const modelSelect = el("select", {"class": "playground-model"});
    names.forEach((name) => modelSelect.appendChild(new Option(label(manifest.models[name]), name)));
    const examples = el("select", {"class": "playground-example"});
    const source = el("input", {"class": "playground-source", type: "text", autocomplete: "off", spellcheck: "false",
      "aria-describedby": id("status")});
    const padding = el("input", {"class": "playground-padding", type: "number", min: "0", max: String(MAX_PADDING),
      step: "1", value: "0", inputmode: "numeric", "aria-describedby": id("padding-note")});
    const searchSelect = el("select", {"class": "playground-search"});
    searchSelect.appendChild(new Option(tr("greedy"), "1"));
    manifest.beam.sizes.forEach((k) => searchSelect.appendChild(new Option(tr("beam of {k}", {k}), String(k))));
    const decodeButton = el("button", {"class": "playground-run", type: "button", text: tr("Decode")});
    // A decoder-only model's: the temperature, the top-k (empty: every token) and the seed of sampling, and its buttons.
    const number = (name, attrs) => el("input", Object.assign({"class": `playground-${name}`, type: "number",
      inputmode: "decimal", style: "width: 4.5rem"}, attrs));
    const temperature = number("temperature", {min: "0.05", step: "0.1", value: "1"});
    const topK = number("top-k", {min: "1", step: "1", placeholder: tr("all"), inputmode: "numeric"});
    const seed = number("seed", {min: "0", step: "1", value: "0", inputmode: "numeric"});
    const sampleButton = el("button", {"class": "playground-sample", type: "button", text: tr("Sample")});
    const stepButton = el("button", {"class": "playground-step", type: "button", text: tr("Next token")});
    const kindSelect = el("select", {"class": "playground-kind"});
    const layerSelect = el("select", {"class": "playground-layer"});
    const bar = el("progress", {"class": "playground-progress", max: "1", value: "0", "aria-labelledby": id("loading")});
    const loadingText = el("span", {id: id("loading")});
    const status = el("p", {"class": "playground-status", id: id("status"), role: "status"});
    const paddingNote = el("p", {"class": "playground-padding-note", id: id("padding-note"), "aria-live": "polite"});
    const staleNote = el("p", {"class": "playground-stale-note", hidden: "",
      text: tr("Out of date: this result is for the previous input. Press Decode (or Enter) to decode the new one.")});
    const output = el("p", {"class": "playground-output"}), outputNote = el("p", {"class": "playground-output-note"});
    const domainNote = el("p", {"class": "playground-domain-note"});
    const tokensLine = el("p", {"class": "playground-tokens"});
    const beamBox = el("div", {"class": "playground-beam", hidden: ""}, [
      el("p", {"class": "playground-figure-title", text: tr("The beam, step by step")}),
      el("ol", {"class": "playground-beam-list", "aria-label": tr("the final hypotheses, best first")}),
      el("div", {"class": "playground-beam-tree", role: "img"}),
    ]);
    const nextBox = el("div", {"class": "playground-next-box", hidden: ""}, [
      el("p", {"class": "playground-figure-title"}), el("div", {"class": "playground-next", role: "img"}),
    ]);
    const stepsBox = el("div", {"class": "playground-steps-box"}, [
      el("p", {"class": "playground-figure-title"}), el("div", {"class": "playground-steps", role: "img"}),
    ]);
    const result = el("div", {"class": "playground-result", hidden: ""}, [
      staleNote, tokensLine, output, domainNote, outputNote, beamBox, nextBox, stepsBox,
      el("div", {"class": "playground-controls playground-attention-controls"}, [
        el("label", {}, [tr("attention "), kindSelect]), el("label", {}, [tr("layer "), layerSelect]),
      ]),
      el("p", {"class": "playground-note", text: tr("Each row is a query, each column a key; grey cells are masked.")}),
      weightScale(manifest),
      el("div", {"class": "playground-heads"}),
    ]);
    const switches = el("div", {"class": "playground-switches"});
    const sourceName = el("span", {text: tr("source ")});
    // What each kind of model shows: the encoder-decoder's controls, or the decoder-only model's.
    const encoderDecoderOnly = [el("label", {}, [tr("padding "), padding]), el("label", {}, [tr("search "), searchSelect])];
    const decoderOnlyOnly = [el("label", {}, [tr("temperature "), temperature]), el("label", {}, [tr("top-k "), topK]),
      el("label", {}, [tr("seed "), seed]), sampleButton, stepButton];
    root.replaceChildren(
      el("div", {"class": "playground-controls"}, [
        el("label", {}, [tr("model "), modelSelect]),
        el("label", {"class": "playground-example-label"}, [tr("try "), examples]),
      ]),
      el("div", {"class": "playground-controls"}, [el("label", {"class": "playground-source-label"}, [sourceName, source])]),
      el("div", {"class": "playground-controls"}, [...encoderDecoderOnly, ...decoderOnlyOnly.slice(0, 3)]),
      el("div", {"class": "playground-controls"}, [decodeButton, ...decoderOnlyOnly.slice(3)]),
      paddingNote,
      el("div", {"class": "playground-loading", hidden: ""}, [bar, loadingText]),
      status,
      result,
      el("details", {"class": "playground-switch-box", "aria-labelledby": id("switches")}, [
        el("summary", {id: id("switches"), text: tr("Head switches: silence heads, watch the output change")}), switches,
      ]),
    );
    const loading = root.querySelector(".playground-loading");
    const switchBox = root.querySelector(".playground-switch-box");
    followResize(result, () => shownResult && drawSteps(stepsBox, manifest, shownResult.info, shownResult.r));
    let shownResult = null; // {r, masks, info, input, request}: what the figures show, the input it was decoded from

    function modelInfo() {
      return manifest.models[modelSelect.value];
    }

    function isLM() {
      return Engine.isDecoderOnly(modelInfo());
    }

    // The controls of the chosen model's kind shown, the other kind's not; the attention menu lists its kinds.
    function fillKind() {
      const lm = isLM(), info = modelInfo(), current = kindSelect.value;
      encoderDecoderOnly.forEach((e) => { e.style.display = lm ? "none" : ""; });
      decoderOnlyOnly.forEach((e) => { e.style.display = lm ? "" : "none"; });
      switchBox.style.display = lm ? "none" : "";
      sourceName.textContent = tr(lm ? "prefix " : "source ");
      decodeButton.textContent = tr(lm ? "Continue greedily" : "Decode");
      const kinds = KINDS.filter((kind) => info.layers[kind] > 0);
      kindSelect.replaceChildren(...kinds.map((kind) => new Option(kindName(info, kind), kind)));
      if (kinds.includes(current)) kindSelect.value = current;
      topK.max = String(info.tgt_vocab.length);
    }

    function fillLayers() {
      const n = modelInfo().layers[kindSelect.value], current = layerSelect.value;
      layerSelect.replaceChildren(...Array.from({length: n}, (x, l) => new Option(String(l), String(l))));
      if (current !== "" && Number(current) < n) layerSelect.value = current;
    }

    function fillExamples() {
      const info = modelInfo();
      examples.replaceChildren(...info.examples.map((text) => new Option(text, text)));
      source.value = info.examples[0];
      const placeholder = Engine.isDecoderOnly(info) ? PREFIX_PLACEHOLDER : PLACEHOLDERS[info.input];
      source.placeholder = tr(placeholder);
    }

    function fillSwitches() {
      const info = modelInfo();
      switches.replaceChildren(...KINDS.flatMap((kind) => Array.from({length: info.layers[kind]}, (x, layer) => {
        const legend = el("legend", {text: tr("{kind}, layer {layer}", {kind: tr(KIND_NAMES[kind]), layer})});
        const row = el("fieldset", {"class": "playground-switch-row"}, [legend]);
        for (let h = 0; h < info.n_heads; h++) {
          const box = el("input", {type: "checkbox", "data-kind": kind, "data-layer": String(layer), "data-head": String(h),
            "aria-label": tr("{kind}, layer {layer}, head {head}", {kind: tr(KIND_NAMES[kind]), layer, head: h})});
          box.checked = true;
          box.addEventListener("change", update);
          row.appendChild(el("label", {title: tr("uncheck to silence this head")}, [box, ` h${h}`]));
        }
        return row;
      })));
    }

    function readMasks() {
      const masks = Engine.allHeads(modelInfo());
      switches.querySelectorAll("input").forEach((box) => {
        if (!box.checked) masks[box.dataset.kind][Number(box.dataset.layer)][Number(box.dataset.head)] = 0;
      });
      return masks;
    }

    function currentInput() {
      if (isLM()) return JSON.stringify([modelSelect.value, source.value, temperature.value, topK.value, seed.value]);
      return JSON.stringify([modelSelect.value, source.value, padding.value, searchSelect.value]);
    }

    // Loading, with the bytes shown as they arrive: when the playground comes into view, a control is focused, or
    // a model is chosen or decoded.
    let loadingNames = new Set(), latest = null;
    function drawProgress() { // once a frame, however many chunks arrived meanwhile
      const p = latest;
      latest = null;
      bar.max = p.total || 1;
      bar.value = p.total ? p.loaded : 0;
      if (!p.total) bar.removeAttribute("value"); // indeterminate while a size is unknown
      const labels = [...loadingNames].map((name) => label(manifest.models[name]));
      const loaded = megabytes(p.loaded);
      const models = labels.length ? labels.reduce((first, second) => tr("{first} and {second}", {first, second})) : "";
      loadingText.textContent = tr("Loading ONNX Runtime Web and the {models} model: ", {models})
        + (p.total ? tr("{loaded} of {total} MB", {loaded, total: megabytes(p.total)}) : tr("{loaded} MB", {loaded}))
        + (p.total && p.loaded === p.total ? tr(", starting it…") : "");
    }
    playground.onProgress((p) => {
      if (!latest) requestAnimationFrame(drawProgress);
      latest = p;
    });

    async function load(name) {
      if (playground.isLoaded(name)) return;
      loadingNames.add(name);
      loading.hidden = false;
      root.dataset.load = "loading";
      try {
        await playground.load(name);
        root.dataset.load = "ready";
      } catch (err) {
        root.dataset.load = "failed";
        status.textContent = tr("The playground could not load: {error}", {error: err.message});
      } finally {
        loadingNames.delete(name);
        if (!loadingNames.size) loading.hidden = true;
      }
    }

    // The model shown first, then the others in the background, the last of the menu first (see the top of this
    // file): their downloads back to back, their sessions one at a time; a model the reader picks loads at once.
    let preloading = null;
    function preload() {
      if (preloading) return preloading;
      observer.disconnect();
      root.removeEventListener("focusin", preload);
      warmUpDrawing(root, manifest);
      const shown = modelSelect.value, others = names.filter((name) => name !== shown).reverse();
      const first = Promise.all([playground.prefetchRuntime(), playground.prefetch(shown)]); // what Decode needs first
      others.reduce((done, name) => done.then(() => playground.prefetch(name)), first)
        .catch(() => {}); // a failed download is reported by the load that needs it
      preloading = others.reduce((done, name) => done.then(() => idle()).then(() => load(name)), load(shown));
      return preloading;
    }
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) preload();
    }, {rootMargin: "0px 0px 200px 0px"});
    observer.observe(root);
    root.addEventListener("focusin", preload);
    afterFirstPaint(preload);

    function clearResult() {
      result.hidden = true;
      beamBox.hidden = true;
      const heads = result.querySelector(".playground-heads");
      heads.dataset.drawing = String(Number(heads.dataset.drawing || 0) + 1); // stops a drawing of the maps
      inTurn((Plotly) => {
        if (!result.hidden) return; // a newer result is shown already
        result.querySelectorAll(".js-plotly-plot").forEach((plot) => {
          Plotly.purge(plot);
          plot.removeAttribute("aria-label");
        });
        heads.replaceChildren();
      });
      result.querySelector(".playground-beam-list").replaceChildren();
      nextBox.hidden = true;
      [output, outputNote, domainNote, tokensLine].forEach((p) => { p.textContent = ""; });
      delete output.dataset.tokens;
      delete tokensLine.dataset.ids;
      shownResult = null;
    }

    function reject(err) {
      clearResult();
      root.dataset.state = "error";
      const field = {padding, temperature, "top-k": topK, seed}[err.field] || source;
      field.setAttribute("aria-invalid", "true");
      const reason = err.template ? tr(err.template, err.values) : err.message;
      const where = {padding: translatable("Padding: {reason}."), temperature: translatable("Temperature: {reason}."),
        "top-k": translatable("Top-k: {reason}."), seed: translatable("Seed: {reason}.")}[err.field]
        || (isLM() ? translatable("Prefix: {reason}.") : translatable("Source: {reason}."));
      status.textContent = tr(where, {reason});
    }

    // Padding out of range: the field shows what the page uses, and the note says why until the reader edits the field.
    function notePadding(pad) {
      if (!pad.clamped) return;
      paddingNote.textContent = tr("Padding: the page pads with 0 to {most} whole tokens, so {asked} became {count}.",
        {most: MAX_PADDING, asked: pad.asked, count: pad.count});
      padding.value = String(pad.count);
    }

    // A source outside what the model learned (words it never read, characters it lacks): the output is still
    // decoded, but said to be a guess, however sure the model looks.
    function domainNoteFor(info, unfamiliar) {
      if (!unfamiliar.length) return "";
      const quoted = unfamiliar.slice(0, 5).map((word) => tr("\"{word}\"", {word})).join(tr(", "))
        + (unfamiliar.length > 5 ? tr(", ") + "…" : "");
      return tr("The {model} model knows only its task, {task}, and never learned {words}: "
        + "this output is a guess, however confident its probabilities look.",
      {model: label(info), task: tr(PLACEHOLDERS[info.input]), words: quoted});
    }

    // Why the output ends where it does, when that is not just the model's own </s> on a source like its training's.
    function outputNoteFor(info, r, symbols) {
      const trained = info.trained_source_tokens;
      const unit = tr(info.input === "symbols" ? "symbols" : "tokens"), notes = [];
      if (r.ended === "budget") {
        const why = info.max_new_tokens ? tr("for the {model} model", {model: label(info)})
          : tr("(the source's {n} {unit} and 2 more)", {n: symbols, unit});
        notes.push(tr("Decoding stopped at the page's budget of {budget} tokens {why}, before any </s>.",
          {budget: r.maxNewTokens, why}));
      }
      if (trained && symbols > trained[1]) {
        const ends = r.ended === "eos" ? tr(" (here it ends after {n} tokens)", {n: r.tokens.length - 1}) : "";
        notes.push(tr("The {model} model was trained on sources of {shortest} to {longest} {unit}; this one has {n}, so "
          + "the output past what it learned is a guess{ends}.",
        {model: label(info), shortest: trained[0], longest: trained[1], unit, n: symbols, ends}));
      }
      return notes.join(" ");
    }

    // The result: the output at once (resultMs: from the request to the output in view), then the figures, one a frame.
    async function show(r, intact, masks, info, input, asked, unfamiliar) {
      shownResult = {r, masks, info, input, request: requestOf(input, masks)}; // what a resize or a menu draws again
      result.hidden = false;
      staleNote.hidden = true;
      result.removeAttribute("data-stale");
      output.textContent = tr("Output: {output}", {output: printed(info, manifest, r.tokens)})
        + (r.ended === "budget" ? tr(" … (no </s>)") : "")
        + (intact ? tr("   (all heads: {output})", {output: printed(info, manifest, intact.tokens)}) : "");
      output.dataset.tokens = JSON.stringify(r.tokens);
      output.dataset.runs = String(Number(output.dataset.runs || 0) + 1);
      output.dataset.input = input; // what it is for: the model, source, padding and search
      outputNote.textContent = outputNoteFor(info, r, r.src.filter((id) => id !== manifest.pad_id).length);
      beamBox.hidden = !r.beam;
      if (r.beam) drawBeamList(beamBox, manifest, info, r.beam);
      domainNote.textContent = domainNoteFor(info, unfamiliar);
      root.dataset.resultMs = (performance.now() - asked).toFixed(1);
      await nextFrame();
      if (r.beam) {
        await drawBeam(beamBox, manifest, info, r.beam);
        await nextFrame();
      }
      await drawSteps(stepsBox, manifest, info, r);
      await nextFrame();
      await drawAttention(result, manifest, info, r, masks, kindSelect.value, Number(layerSelect.value));
    }

    // What a decoding is for: the input and the heads switched on.
    function requestOf(input, masks) {
      return JSON.stringify([input, masks]);
    }

    // Decode the current input (requests queue up; one superseded before it starts is skipped). One for what is being
    // decoded, or shown, already is not made again: Decode pressed right after choosing a model, which decodes.
    let queue = Promise.resolve(), generation = 0, pending = null;
    function update() {
      if (isLM()) return continueLM("greedy");
      const request = requestOf(currentInput(), readMasks());
      if (request === pending) return queue;
      if (!pending && shownResult && request === shownResult.request) {
        status.textContent = tr("Decoded already: the result below is for this input.");
        return queue;
      }
      const mine = ++generation, asked = performance.now();
      pending = request;
      queue = queue.then(() => (mine === generation ? decodeInput(asked) : undefined)).finally(() => {
        if (mine === generation) pending = null;
      });
      return queue;
    }

    async function decodeInput(asked) {
      const name = modelSelect.value, info = modelInfo(), beamSize = Number(searchSelect.value);
      let parsed, pad;
      try {
        parsed = Engine.parseSource(source.value, info, manifest);
        pad = Engine.readPadding(padding.value);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        reject(err);
        return;
      }
      source.removeAttribute("aria-invalid");
      padding.removeAttribute("aria-invalid");
      notePadding(pad);
      const input = currentInput(); // what the result is for: the padding as the page uses it
      const unknown = [...new Set(parsed.unknown)];
      tokensLine.textContent = info.input === "symbols" ? "" : tr("Tokens: {tokens}", {tokens: parsed.tokens.join(" ")})
        + (unknown.length ? tr("   (not in the vocabulary, read as <unk>: {unknown})", {unknown: unknown.join(tr(", "))}) : "");
      tokensLine.dataset.ids = JSON.stringify(parsed.ids);
      const src = [...parsed.ids, ...new Array(pad.count).fill(manifest.pad_id)], masks = readMasks();
      root.dataset.state = "decoding";
      status.textContent = playground.isLoaded(name) ? tr("Decoding…")
        : tr("Decoding once the {model} model is loaded…", {model: label(info)});
      try {
        load(name);
        const runs = [playground.search(name, src, masks, beamSize)];
        if (Engine.anySilenced(masks)) runs.push(playground.search(name, src, Engine.allHeads(info), beamSize));
        const [r, intact] = await Promise.all(runs);
        const perStep = r.stepMs.reduce((a, b) => a + b, 0) / r.stepMs.length;
        const timing = {k: beamSize, n: r.tokens.length, ms: Math.round(r.totalMs), step: perStep.toFixed(1)};
        status.textContent = tr(r.beam ? "Beam search of {k} decoded {n} tokens in {ms} ms in this page ({step} ms per step)."
          : "Decoded {n} tokens in {ms} ms in this page ({step} ms per step).", timing);
        await show(r, intact, masks, info, input, asked, Engine.unfamiliar(source.value, parsed, info));
        root.dataset.drawnMs = (performance.now() - asked).toFixed(1); // from the request to every figure drawn
        root.dataset.state = "ready";
        if (currentInput() !== input) markStale(); // edited while decoding
      } catch (err) {
        clearResult();
        root.dataset.state = "error";
        status.textContent = tr("The playground failed: {error}", {error: err.message});
      }
    }

    // A decoder-only model's turn: "greedy" (its continuation), "sample" (drawn with the seed, which then moves on by
    // one, so that pressing again draws another) or "step" (one greedy token, added to the prefix).
    // A greedy continuation asked for again, while it is being decoded or shown, is not made again (choosing the model
    // and pressing the button at once); a sample (a new seed each time) and a step (a longer prefix) always are.
    function continueLM(action) {
      const request = JSON.stringify([currentInput(), action]);
      if (action === "greedy" && request === pending) return queue;
      if (action === "greedy" && !pending && shownResult && request === shownResult.request) {
        status.textContent = tr("Decoded already: the result below is for this input.");
        return queue;
      }
      const mine = ++generation, asked = performance.now();
      pending = request;
      queue = queue.then(() => (mine === generation ? continueInput(action, asked) : undefined)).finally(() => {
        if (mine === generation) pending = null;
      });
      return queue;
    }

    function readSeed() {
      const text = seed.value.trim(), value = text === "" ? 0 : Number(text);
      if (!(Number.isInteger(value) && value >= 0 && value < 2 ** 32)) {
        throw new InputError("seed", "the seed is a whole number from 0 to {most}; got {got}",
          {most: 2 ** 32 - 1, got: JSON.stringify(text)});
      }
      return value;
    }

    async function continueInput(action, asked) {
      const name = modelSelect.value, info = modelInfo();
      let parsed, sampling = null;
      try {
        parsed = Engine.parsePrefix(source.value, info, manifest);
        const chosen = Engine.readSampling(temperature.value, topK.value, info.tgt_vocab.length);
        if (action === "sample") sampling = {...chosen, seed: readSeed()};
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        reject(err);
        return;
      }
      [source, temperature, topK, seed].forEach((field) => field.removeAttribute("aria-invalid"));
      [tokensLine, domainNote].forEach((line) => { line.textContent = ""; }); // an encoder-decoder model's, if shown
      delete tokensLine.dataset.ids;
      root.dataset.state = "decoding";
      status.textContent = playground.isLoaded(name) ? tr("Decoding…")
        : tr("Decoding once the {model} model is loaded…", {model: label(info)});
      try {
        load(name);
        const r = await playground.continuation(name, parsed.ids, sampling, action === "step" ? 1 : null);
        if (action === "step") source.value = [...parsed.tokens, info.tgt_vocab[r.tokens[0]]].join(" ");
        if (sampling) seed.value = String(sampling.seed + 1);
        const input = currentInput();
        const perStep = r.stepMs.reduce((a, b) => a + b, 0) / r.stepMs.length;
        status.textContent = tr("Decoded {n} tokens in {ms} ms in this page ({step} ms per step).",
          {n: r.tokens.length, ms: Math.round(r.totalMs), step: perStep.toFixed(1)});
        await showLM(r, info, input, asked, action);
        root.dataset.drawnMs = (performance.now() - asked).toFixed(1);
        root.dataset.state = "ready";
      } catch (err) {
        clearResult();
        root.dataset.state = "error";
        status.textContent = tr("The playground failed: {error}", {error: err.message});
      }
    }

    // A decoder-only model's result: its continuation, the bars of the next token after the prefix, the steps, the maps.
    async function showLM(r, info, input, asked, action) {
      const masks = Engine.allHeads(info);
      shownResult = {r: {...r, probs: r.drawnFrom}, masks, info, input, request: JSON.stringify([input, action])};
      result.hidden = false;
      staleNote.hidden = true;
      result.removeAttribute("data-stale");
      beamBox.hidden = true;
      nextBox.hidden = false;
      const how = r.sampling ? tr("sampled at temperature {t}, top-k {k}, seed {seed}", {t: r.sampling.temperature,
        k: r.sampling.topK || tr("all"), seed: r.sampling.seed}) : tr(action === "step" ? "one greedy step" : "greedy");
      output.textContent = tr("Continuation: {output}", {output: r.tokens.map((id) => info.tgt_vocab[id]).join(" ")})
        + tr("   ({how})", {how});
      output.dataset.tokens = JSON.stringify(r.tokens);
      output.dataset.runs = String(Number(output.dataset.runs || 0) + 1);
      output.dataset.input = input;
      const separator = r.prefix.indexOf(manifest.bos_id), symbols = separator >= 0 ? separator : r.prefix.length;
      const trained = info.trained_source_tokens, notes = [];
      if (action !== "step" && r.ended === "budget") {
        notes.push(tr("Decoding stopped at the page's budget of {budget} tokens (the prefix's {n} and 2 more), before "
          + "any </s>.", {budget: r.maxNewTokens, n: r.prefix.length}));
      }
      if (trained && symbols > trained[1]) {
        notes.push(tr("The {model} model was trained on sources of {shortest} to {longest} {unit}; this one has {n}, so "
          + "the output past what it learned is a guess{ends}.", {model: label(info), shortest: trained[0],
          longest: trained[1], unit: tr("symbols"), n: symbols, ends: ""}));
      }
      outputNote.textContent = notes.join(" ");
      root.dataset.resultMs = (performance.now() - asked).toFixed(1);
      await nextFrame();
      await drawNext(nextBox, manifest, info, r);
      await nextFrame();
      await drawSteps(stepsBox, manifest, info, shownResult.r);
      await nextFrame();
      await drawAttention(result, manifest, info, shownResult.r, masks, kindSelect.value, Number(layerSelect.value));
    }

    function markStale() {
      if (!shownResult || currentInput() === shownResult.input) return;
      result.dataset.stale = "true";
      staleNote.hidden = false;
    }

    function redrawAttention() {
      fillLayers();
      if (shownResult) {
        const {r, masks, info} = shownResult;
        drawAttention(result, manifest, info, r, masks, kindSelect.value, Number(layerSelect.value));
      }
    }

    modelSelect.addEventListener("change", () => {
      fillKind();
      fillSwitches();
      fillExamples();
      fillLayers();
      update();
    });
    examples.addEventListener("change", () => {
      source.value = examples.value;
      update();
    });
    [source, padding].forEach((field) => {
      field.addEventListener("input", markStale);
      if (field === padding) field.addEventListener("input", () => { paddingNote.textContent = ""; });
      field.addEventListener("keydown", (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          update();
        }
      });
    });
    padding.addEventListener("change", () => { // also on leaving the field: decode only what is not shown yet
      if (!shownResult || currentInput() !== shownResult.input) update();
    });
    searchSelect.addEventListener("change", update);
    decodeButton.addEventListener("click", update);
    sampleButton.addEventListener("click", () => continueLM("sample"));
    stepButton.addEventListener("click", () => continueLM("step"));
    [temperature, topK, seed].forEach((field) => {
      field.addEventListener("input", markStale);
      field.addEventListener("keydown", (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          continueLM(field === seed ? "sample" : "greedy");
        }
      });
    });
    kindSelect.addEventListener("change", redrawAttention);
    layerSelect.addEventListener("change", redrawAttention);
    fillKind();
    fillSwitches();
    fillExamples();
    fillLayers();
    status.textContent = tr("Type a source, or pick an example, and press Decode: the model runs in this page.");
    root.dataset.state = "idle";
  }

  document.addEventListener("DOMContentLoaded", async () => {
    const roots = document.querySelectorAll(".transformer-playground");
    if (!roots.length) return;
    try {
      const manifest = await playground.manifest();
      roots.forEach((root, index) => setUp(root, manifest, index));
    } catch (err) {
      roots.forEach((root) => {
        root.dataset.state = "error";
        root.textContent = tr("The playground could not start: {error}", {error: err.message});
      });
    }
  });
})();
