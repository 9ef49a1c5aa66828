// The playground: the book's trained models, run in the page by ONNX Runtime Web (WebAssembly, one thread).
//
// Fills each <div class="transformer-playground"> (written by transformer_book.playground.playground_html). The
// models are the package's own, exported by transformer.export.export_onnx during the build into
// _static/playground/<model>/{encoder,decoder_step}.onnx, listed in _static/playground/manifest.json. ONNX Runtime
// Web (_static/vendor/ort/, fetched by scripts/vendor_assets.sh) loads at the reader's first interaction, not before.
// Greedy decoding is transformer.decoding.greedy_steps: encode once, then run the decoder on <s> + the tokens so far,
// take the most probable token (<pad> and <s> excluded), stop at </s> or after max_len tokens.
// window.transformerPlayground.decode() is what the book's browser test and benchmark call.
(function () {
  "use strict";
  var STATIC = new URL(".", document.currentScript.src).href; // .../_static/, wherever the site is served from
  var ORT_DIR = STATIC + "vendor/ort/";
  var MODELS = STATIC + "playground/";
  var KINDS = ["encoder", "decoder", "cross"];
  var KIND_NAMES = {encoder: "encoder self-attention", decoder: "decoder masked self-attention", cross: "cross-attention"};
  var MAX_SYMBOLS = 20, MAX_PADDING = 10; // 30 positions at most: the graphs take up to the models' max_len (64)
  var manifestPromise = null, ortPromise = null, sessions = {};

  function manifest() {
    if (!manifestPromise) {
      manifestPromise = fetch(MODELS + "manifest.json").then(function (r) {
        if (!r.ok) throw new Error("playground models missing (" + r.status + " " + r.url + ")");
        return r.json();
      });
    }
    return manifestPromise;
  }

  var timings = {}; // milliseconds since the page started: when ONNX Runtime and each model were ready

  function loadOrt() {
    if (!ortPromise) {
      ortPromise = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        // RequireJS, where a page has it, would take the UMD bundle as an anonymous module: hide define meanwhile.
        var define = window.define;
        window.define = undefined;
        s.src = ORT_DIR + "ort.wasm.min.js";
        s.onload = function () { window.define = define; resolve(window.ort); };
        s.onerror = function () { window.define = define; reject(new Error("could not load " + s.src)); };
        document.head.appendChild(s);
      }).then(function (ort) {
        ort.env.wasm.numThreads = 1; // no SharedArrayBuffer, so no cross-origin isolation needed
        ort.env.wasm.proxy = false;
        ort.env.wasm.wasmPaths = ORT_DIR;
        timings.ortScript = performance.now();
        return ort;
      });
    }
    return ortPromise;
  }

  function session(name) {
    if (!sessions[name]) {
      sessions[name] = loadOrt().then(function (ort) {
        var options = {executionProviders: ["wasm"], graphOptimizationLevel: "all"};
        return Promise.all([
          ort.InferenceSession.create(MODELS + name + "/encoder.onnx", options),
          ort.InferenceSession.create(MODELS + name + "/decoder_step.onnx", options),
        ]).then(function (s) {
          timings[name] = performance.now();
          return {ort: ort, encoder: s[0], decoder: s[1]};
        });
      });
      sessions[name].catch(function () { delete sessions[name]; });
    }
    return sessions[name];
  }

  function allHeads(info) {
    var masks = {};
    KINDS.forEach(function (kind) {
      masks[kind] = [];
      for (var l = 0; l < info.layers[kind]; l++) masks[kind].push(new Array(info.n_heads).fill(1));
    });
    return masks;
  }

  function flat(masks) { return Float32Array.from([].concat.apply([], masks)); }

  // (L, 1, H, Tq, Tk) tensor -> nested arrays [L][H][Tq][Tk]
  function maps(tensor) {
    var d = tensor.dims, data = tensor.data, out = [];
    for (var l = 0; l < d[0]; l++) {
      var layer = [];
      for (var h = 0; h < d[2]; h++) {
        var rows = [];
        for (var q = 0; q < d[3]; q++) {
          var start = ((l * d[1] * d[2] + h) * d[3] + q) * d[4];
          rows.push(Array.from(data.subarray(start, start + d[4])));
        }
        layer.push(rows);
      }
      out.push(layer);
    }
    return out;
  }

  // Greedy decoding of one source (ids, padding allowed) with head masks {encoder, decoder, cross}: (L, H) of 1/0.
  function decode(name, src, masks, maxLen) {
    return Promise.all([manifest(), session(name)]).then(function (loaded) {
      var m = loaded[0], info = m.models[name], s = loaded[1], ort = s.ort, H = info.n_heads;
      masks = masks || allHeads(info);
      maxLen = maxLen || src.filter(function (i) { return i !== m.pad_id; }).length + 2; // as default_max_len
      var S = src.length, started = performance.now();
      var srcTensor = new ort.Tensor("int64", BigInt64Array.from(src.map(BigInt)), [1, S]);
      var srcMask = new ort.Tensor("bool", Uint8Array.from(src.map(function (i) { return i !== m.pad_id ? 1 : 0; })), [1, S]);
      var selfMask = new ort.Tensor("float32", flat(masks.decoder), [info.layers.decoder, H]);
      var crossMask = new ort.Tensor("float32", flat(masks.cross), [info.layers.cross, H]);
      var result = {src: src, tokens: [], logits: [], probs: [], stepMs: []};
      return s.encoder.run({
        src: srcTensor, head_mask: new ort.Tensor("float32", flat(masks.encoder), [info.layers.encoder, H]),
      }).then(function (enc) {
        result.encodeMs = performance.now() - started;
        result.attention = {encoder: maps(enc.attention)};
        var ids = [m.bos_id];
        function step() {
          var t0 = performance.now();
          var tgt = new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
          return s.decoder.run({
            tgt: tgt, memory: enc.memory, src_mask: srcMask, self_head_mask: selfMask, cross_head_mask: crossMask,
          }).then(function (out) {
            var logits = Array.from(out.logits.data), best = -1, top = -Infinity, sum = 0;
            logits.forEach(function (x, i) {
              if (i !== m.pad_id && i !== m.bos_id && x > top) { top = x; best = i; }
            });
            var probs = logits.map(function (x, i) {
              var p = i === m.pad_id || i === m.bos_id ? 0 : Math.exp(x - top);
              sum += p;
              return p;
            }).map(function (p) { return p / sum; });
            result.logits.push(logits);
            result.probs.push(probs);
            result.tokens.push(best);
            result.attention.decoder = maps(out.self_attention);
            result.attention.cross = maps(out.cross_attention);
            result.stepMs.push(performance.now() - t0);
            if (best === m.eos_id || result.tokens.length >= maxLen) {
              result.totalMs = performance.now() - started;
              result.tgt = ids.slice(); // the last step's decoder input: <s> + every token but the last
              return result;
            }
            ids.push(best);
            return step();
          });
        }
        return step();
      });
    });
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The page

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { e.appendChild(c); });
    return e;
  }

  function label(info, id) { return info.vocab[id]; }

  // Plotly reads tick labels and hover text as HTML: "<s>" would vanish as a tag.
  function shown(text) { return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }

  function parseSource(text, info, m) {
    var parts = text.trim().split(/[\s,]+/).filter(Boolean);
    var symbols = info.vocab.map(function (v, i) { return i; }).filter(function (i) {
      return i !== m.pad_id && i !== m.bos_id && i !== m.eos_id;
    });
    if (!parts.length) throw new Error("type at least one symbol");
    if (parts.length > MAX_SYMBOLS) throw new Error("at most " + MAX_SYMBOLS + " symbols; got " + parts.length);
    return parts.map(function (p) {
      var id = info.vocab.indexOf(p);
      if (symbols.indexOf(id) < 0) {
        throw new Error("the symbols are " + symbols.map(function (i) { return info.vocab[i]; }).join(" ") + "; got " + JSON.stringify(p));
      }
      return id;
    });
  }

  function layout(m, height, extra) {
    var s = m.style;
    return Object.assign({
      font: s.font, height: height, autosize: true, margin: {l: 60, r: 10, t: 30, b: 50},
      paper_bgcolor: "white", plot_bgcolor: s.mask_color, hoverlabel: {font: {size: 12}},
    }, extra);
  }

  function drawSteps(root, m, info, r) {
    var y = r.tokens.map(function (tok, t) { return "step " + (t + 1) + " → " + shown(label(info, tok)); });
    var div = root.querySelector(".playground-steps");
    var data = [{
      type: "heatmap", z: r.probs, x: info.vocab.map(shown), y: y, zmin: 0, zmax: 1, colorscale: m.style.weights_scale,
      xgap: 1, ygap: 1, colorbar: {thickness: 10, len: 0.9},
      hovertemplate: "%{y}<br>p(%{x}) = %{z:.3f}<extra></extra>",
    }];
    window.Plotly.react(div, data, layout(m, 90 + 24 * r.tokens.length, {
      title: {text: "Next-token probabilities", x: 0.02, xanchor: "left", font: {size: 14}},
      margin: {l: 95, r: 10, t: 30, b: 50},
      xaxis: {type: "category"},
      yaxis: {type: "category", autorange: "reversed"},
      plot_bgcolor: "white",
    }), {responsive: true, displayModeBar: false});
  }

  function drawAttention(root, m, info, r, masks) {
    var kind = root.querySelector(".playground-kind").value;
    var layer = Number(root.querySelector(".playground-layer").value);
    var src = r.src.map(function (i) { return shown(label(info, i)); });
    var tgt = r.tgt.map(function (i) { return shown(label(info, i)); });
    var keys = kind === "decoder" ? tgt : src, queries = kind === "encoder" ? src : tgt;
    var raw = (kind === "decoder" ? r.tgt : r.src).concat(kind === "encoder" ? r.src : r.tgt);
    var longest = Math.max.apply(null, raw.map(function (id, i) { return String(label(info, id)).length + 3; }));
    var room = 8 + 6 * longest; // px for tick labels "position:token" at 10 px
    var grid = root.querySelector(".playground-heads");
    var weights = r.attention[kind][layer];
    while (grid.children.length > weights.length) grid.removeChild(grid.lastChild);
    while (grid.children.length < weights.length) grid.appendChild(el("div", {"class": "playground-head"}));
    weights.forEach(function (w, h) {
      // Masked keys drawn as the background (grey): padding keys, and the future in the decoder's self-attention.
      var z = w.map(function (row, q) {
        return row.map(function (x, k) {
          var masked = (kind !== "decoder" && r.src[k] === m.pad_id) || (kind === "decoder" && (k > q || r.tgt[k] === m.pad_id));
          return masked ? null : x;
        });
      });
      var silenced = masks[kind][layer][h] === 0;
      window.Plotly.react(grid.children[h], [{
        type: "heatmap", z: z, x: keys.map(function (t, i) { return i + ":" + t; }),
        y: queries.map(function (t, i) { return i + ":" + t; }), zmin: 0, zmax: 1, showscale: false,
        colorscale: m.style.weights_scale, xgap: 1, ygap: 1,
        hovertemplate: "query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>",
      }], layout(m, 250, {
        title: {text: "head " + h + (silenced ? " (silenced)" : ""), x: 0.02, xanchor: "left", font: {size: 13}},
        margin: {l: room, r: 5, t: 28, b: room},
        xaxis: {type: "category", tickangle: -90, tickfont: {size: 10}, showticklabels: true},
        yaxis: {type: "category", autorange: "reversed", tickfont: {size: 10}},
      }), {responsive: true, displayModeBar: false});
    });
  }

  function headSwitches(root, info, onChange) {
    var box = root.querySelector(".playground-switches");
    box.innerHTML = "";
    KINDS.forEach(function (kind) {
      for (var l = 0; l < info.layers[kind]; l++) {
        var row = el("div", {"class": "playground-switch-row"}, [el("span", {text: KIND_NAMES[kind] + ", layer " + l})]);
        for (var h = 0; h < info.n_heads; h++) {
          var input = el("input", {type: "checkbox", "data-kind": kind, "data-layer": String(l), "data-head": String(h)});
          input.checked = true;
          input.addEventListener("change", onChange);
          row.appendChild(el("label", {title: "uncheck to silence this head"}, [input, document.createTextNode(" h" + h)]));
        }
        box.appendChild(row);
      }
    });
  }

  function readMasks(root, info) {
    var masks = allHeads(info);
    root.querySelectorAll(".playground-switches input").forEach(function (input) {
      if (!input.checked) masks[input.dataset.kind][Number(input.dataset.layer)][Number(input.dataset.head)] = 0;
    });
    return masks;
  }

  function anySilenced(masks) {
    return KINDS.some(function (k) { return masks[k].some(function (row) { return row.indexOf(0) >= 0; }); });
  }

  function setUp(root, m) {
    var names = Object.keys(m.models);
    var select = el("select", {"class": "playground-model", "aria-label": "model"});
    names.forEach(function (n) { select.appendChild(new Option(n, n)); });
    var info = m.models[names[0]];
    var input = el("input", {"class": "playground-source", type: "text", "aria-label": "source symbols",
      value: info.example.filter(function (i) { return i !== m.pad_id; }).map(function (i) { return info.vocab[i]; }).join(" ")});
    var padding = el("input", {"class": "playground-padding", type: "number", min: "0", max: String(MAX_PADDING), value: "0",
      "aria-label": "padding tokens"});
    var run = el("button", {"class": "playground-run", type: "button", text: "Decode"});
    var kind = el("select", {"class": "playground-kind", "aria-label": "attention"});
    KINDS.forEach(function (k) { kind.appendChild(new Option(KIND_NAMES[k], k)); });
    var layer = el("select", {"class": "playground-layer", "aria-label": "layer"});
    root.innerHTML = "";
    [
      el("div", {"class": "playground-controls"}, [
        el("label", {}, [document.createTextNode("model "), select]),
        el("label", {"class": "playground-source-label"}, [document.createTextNode("source "), input]),
        el("label", {}, [document.createTextNode("padding "), padding]),
        run,
      ]),
      el("p", {"class": "playground-status", role: "status", text: "Press Decode to run the model in this page (the first run loads ONNX Runtime Web, about 14 MB)."}),
      el("p", {"class": "playground-output"}),
      el("div", {"class": "playground-steps"}),
      el("div", {"class": "playground-controls playground-attention-controls"}, [
        el("label", {}, [document.createTextNode("attention "), kind]),
        el("label", {}, [document.createTextNode("layer "), layer]),
      ]),
      el("p", {"class": "playground-note", text: "Each row is a query, each column a key; grey cells are masked."}),
      el("div", {"class": "playground-heads"}),
      el("details", {"class": "playground-switch-box"}, [el("summary", {text: "Head switches: silence heads, watch the output change"}),
        el("div", {"class": "playground-switches"})]),
    ].forEach(function (c) { root.appendChild(c); });
    var status = root.querySelector(".playground-status"), output = root.querySelector(".playground-output");
    var last = null;

    function fillLayers() {
      var n = m.models[select.value].layers[kind.value], current = layer.value;
      layer.innerHTML = "";
      for (var l = 0; l < n; l++) layer.appendChild(new Option(String(l), String(l)));
      if (current !== "" && Number(current) < n) layer.value = current;
    }

    var pending = Promise.resolve(), generation = 0;
    function update() {
      var mine = ++generation, asked = performance.now();
      pending = pending.then(function () {
        if (mine !== generation) return; // a newer request replaces this one
        var name = select.value, info = m.models[name], src;
        try {
          src = parseSource(input.value, info, m);
        } catch (err) {
          root.dataset.state = "error";
          status.textContent = "Source: " + err.message;
          return;
        }
        var pads = Math.min(MAX_PADDING, Math.max(0, Math.floor(Number(padding.value) || 0)));
        for (var p = 0; p < pads; p++) src.push(m.pad_id);
        var masks = readMasks(root, info), firstTime = !sessions[name];
        root.dataset.state = "loading";
        status.textContent = firstTime ? "Loading ONNX Runtime Web and the " + name + " model…" : "Decoding…";
        var runs = [decode(name, src, masks)];
        if (anySilenced(masks)) runs.push(decode(name, src, allHeads(info)));
        return Promise.all(runs).then(function (rs) {
          var r = rs[0], text = function (tokens) { return tokens.map(function (i) { return label(info, i); }).join(" "); };
          output.textContent = "Output: " + text(r.tokens) + (rs[1] ? "   (all heads: " + text(rs[1].tokens) + ")" : "");
          output.dataset.tokens = JSON.stringify(r.tokens);
          output.dataset.runs = String(Number(output.dataset.runs || 0) + 1);
          drawSteps(root, m, info, r);
          last = {r: r, masks: masks, info: info};
          drawAttention(root, m, info, r, masks);
          status.textContent = "Decoded " + r.tokens.length + " tokens in " + Math.round(r.totalMs) + " ms in this page ("
            + (r.stepMs.reduce(function (a, b) { return a + b; }, 0) / r.stepMs.length).toFixed(1) + " ms per token).";
          root.dataset.resultMs = (performance.now() - asked).toFixed(1); // the interaction to the drawn result
          root.dataset.state = "ready";
        }).catch(function (err) {
          root.dataset.state = "error";
          status.textContent = "The playground failed: " + err.message;
        });
      });
      return pending;
    }

    select.addEventListener("change", function () { headSwitches(root, m.models[select.value], update); fillLayers(); update(); });
    kind.addEventListener("change", function () {
      fillLayers();
      if (last) drawAttention(root, m, last.info, last.r, last.masks);
    });
    layer.addEventListener("change", function () { if (last) drawAttention(root, m, last.info, last.r, last.masks); });
    input.addEventListener("change", update);
    padding.addEventListener("change", update);
    run.addEventListener("click", update);
    headSwitches(root, info, update);
    fillLayers();
    root.dataset.state = "idle";
  }

  var CSS = [
    ".transformer-playground .playground-controls{display:flex;flex-wrap:wrap;gap:.4rem .9rem;align-items:center;margin:.4rem 0}",
    ".transformer-playground .playground-source{width:15rem;max-width:100%}",
    ".transformer-playground .playground-source-label{flex:1 1 12rem}",
    ".transformer-playground .playground-padding{width:3.5rem}",
    ".transformer-playground .playground-output{font-family:monospace;overflow-wrap:anywhere}",
    ".transformer-playground .playground-heads{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:.3rem}",
    ".transformer-playground .playground-head,.transformer-playground .playground-steps{min-width:0}",
    ".transformer-playground .playground-switch-row{display:flex;flex-wrap:wrap;gap:.2rem .7rem;margin:.2rem 0}",
    ".transformer-playground .playground-switch-row span{flex:1 1 100%;font-size:.9em}",
  ].join("\n");

  window.transformerPlayground = {decode: decode, manifest: manifest, timings: timings};

  document.addEventListener("DOMContentLoaded", function () {
    var roots = document.querySelectorAll(".transformer-playground");
    if (!roots.length) return;
    document.head.appendChild(el("style", {text: CSS}));
    manifest().then(function (m) {
      roots.forEach(function (root) { setUp(root, m); });
    }).catch(function (err) {
      roots.forEach(function (root) {
        root.dataset.state = "error";
        root.textContent = "The playground could not start: " + err.message;
      });
    });
  });
})();
