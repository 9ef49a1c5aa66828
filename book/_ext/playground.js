// The playground: the book's trained models, run in the page by ONNX Runtime Web (WebAssembly, one thread).
//
// Fills each <div class="transformer-playground"> (written by transformer_book.playground.playground_html). The
// models are the package's own, exported by transformer.export.export_onnx during the build into
// _static/playground/<model>/{encoder,decoder_step}.onnx, listed in _static/playground/manifest.json. ONNX Runtime
// Web (_static/vendor/ort/, fetched by scripts/vendor_assets.sh) loads at the reader's first interaction, not before.
// Greedy decoding is transformer.decoding.greedy_steps: encode once, then run the decoder on <s> + the tokens so far,
// take the most probable token (<pad> and <s> excluded), stop at </s> or after max_new_tokens tokens. Beam search is
// transformer.decoding.beam_search for one source: the beams run as one batch through the same decoder step.
// A model that reads text tokenizes it as transformer.train.tokenizer.tokenize(level="word") does.
// window.transformerPlayground.{decode, beamSearch, encode} are what the book's browser test and benchmark call.
(function () {
  "use strict";
  var STATIC = new URL(".", document.currentScript.src).href; // .../_static/, wherever the site is served from
  var ORT_DIR = STATIC + "vendor/ort/";
  var MODELS = STATIC + "playground/";
  var KINDS = ["encoder", "decoder", "cross"];
  var KIND_NAMES = {encoder: "encoder self-attention", decoder: "decoder masked self-attention", cross: "cross-attention"};
  var MAX_SYMBOLS = 20, MAX_PADDING = 10; // 30 positions at most: the graphs take up to the models' max_positions (64)
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

  // (L, B, H, Tq, Tk) tensor -> nested arrays [L][H][Tq][Tk] of batch row b
  function maps(tensor, b) {
    var d = tensor.dims, data = tensor.data, out = [];
    for (var l = 0; l < d[0]; l++) {
      var layer = [];
      for (var h = 0; h < d[2]; h++) {
        var rows = [];
        for (var q = 0; q < d[3]; q++) {
          var start = (((l * d[1] + (b || 0)) * d[2] + h) * d[3] + q) * d[4];
          rows.push(Array.from(data.subarray(start, start + d[4])));
        }
        layer.push(rows);
      }
      out.push(layer);
    }
    return out;
  }

  function idTensor(ort, rows) {
    var flatIds = [].concat.apply([], rows).map(BigInt);
    return new ort.Tensor("int64", BigInt64Array.from(flatIds), [rows.length, rows[0].length]);
  }

  function defaultMaxNewTokens(m, info, src) { // as transformer_book.playground.default_max_new_tokens, unless the model sets one
    return info.max_new_tokens || src.filter(function (i) { return i !== m.pad_id; }).length + 2;
  }

  // Encode one source (ids, padding allowed) once, with head masks {encoder, decoder, cross}: (L, H) of 1/0. Returns
  // what every decoder step needs, and the encoder's attention.
  function encode(name, src, masks) {
    return Promise.all([manifest(), session(name)]).then(function (loaded) {
      var m = loaded[0], info = m.models[name], s = loaded[1], ort = s.ort, H = info.n_heads;
      masks = masks || allHeads(info);
      var started = performance.now();
      return s.encoder.run({
        src: idTensor(ort, [src]), head_mask: new ort.Tensor("float32", flat(masks.encoder), [info.layers.encoder, H]),
      }).then(function (enc) {
        return {
          m: m, info: info, s: s, ort: ort, src: src, masks: masks, started: started, memory: enc.memory, tiled: {},
          encoderAttention: maps(enc.attention), encodeMs: performance.now() - started,
          selfMask: new ort.Tensor("float32", flat(masks.decoder), [info.layers.decoder, H]),
          crossMask: new ort.Tensor("float32", flat(masks.cross), [info.layers.cross, H]),
        };
      });
    });
  }

  // The memory and source mask repeated for a batch of k decoder inputs (a beam), made once per k.
  function tiled(ctx, k) {
    if (!ctx.tiled[k]) {
      var d = ctx.memory.dims, one = ctx.memory.data, memory = new Float32Array(k * one.length);
      for (var i = 0; i < k; i++) memory.set(one, i * one.length);
      var real = ctx.src.map(function (id) { return id !== ctx.m.pad_id ? 1 : 0; }), mask = [];
      for (var j = 0; j < k; j++) mask = mask.concat(real);
      ctx.tiled[k] = {
        memory: new ctx.ort.Tensor("float32", memory, [k, d[1], d[2]]),
        srcMask: new ctx.ort.Tensor("bool", Uint8Array.from(mask), [k, ctx.src.length]),
      };
    }
    return ctx.tiled[k];
  }

  // One decoder step for k decoder inputs of one length: logits (k, V) and every attention map.
  function step(ctx, rows) {
    var t = tiled(ctx, rows.length);
    return ctx.s.decoder.run({
      tgt: idTensor(ctx.ort, rows), memory: t.memory, src_mask: t.srcMask,
      self_head_mask: ctx.selfMask, cross_head_mask: ctx.crossMask,
    });
  }

  // Row k of (k, V) logits -> log-probabilities (float64) with <pad> and <s> at -Infinity, as _next_log_probs does.
  function logProbs(m, logits, k, V) {
    var row = logits.subarray(k * V, (k + 1) * V), top = -Infinity, sum = 0, out = new Float64Array(V);
    row.forEach(function (x, i) { if (i !== m.pad_id && i !== m.bos_id && x > top) top = x; });
    row.forEach(function (x, i) { if (i !== m.pad_id && i !== m.bos_id) sum += Math.exp(x - top); });
    var norm = top + Math.log(sum);
    row.forEach(function (x, i) { out[i] = i === m.pad_id || i === m.bos_id ? -Infinity : x - norm; });
    return out;
  }

  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // Decode one source greedily, or along given tokens (forced: teacher forcing, to draw a beam's best hypothesis).
  // Returns every step's logits, probabilities and chosen token, and every attention map of the last step.
  function decode(name, src, masks, maxNewTokens, forced) {
    return encode(name, src, masks).then(function (ctx) {
      var m = ctx.m, V = ctx.info.tgt_vocab.length;
      maxNewTokens = forced ? forced.length : maxNewTokens || defaultMaxNewTokens(m, ctx.info, src);
      var result = {src: src, tokens: [], logits: [], probs: [], stepMs: [], encodeMs: ctx.encodeMs,
        attention: {encoder: ctx.encoderAttention}};
      var ids = [m.bos_id];
      function next() {
        var t0 = performance.now();
        return step(ctx, [ids]).then(function (out) {
          var logp = logProbs(m, out.logits.data, 0, V), chosen = forced ? forced[ids.length - 1] : argmax(logp);
          result.logits.push(Array.from(out.logits.data));
          result.probs.push(Array.from(logp, Math.exp));
          result.tokens.push(chosen);
          result.attention.decoder = maps(out.self_attention);
          result.attention.cross = maps(out.cross_attention);
          result.stepMs.push(performance.now() - t0);
          if ((!forced && chosen === m.eos_id) || result.tokens.length >= maxNewTokens) {
            result.totalMs = performance.now() - ctx.started;
            result.tgt = ids.slice(); // the last step's decoder input: <s> + every token but the last
            return result;
          }
          ids.push(chosen);
          return next();
        });
      }
      return next();
    });
  }

  // GNMT's length normalisation, as transformer.decoding.length_penalty_factor.
  function lengthPenalty(length, alpha) { return Math.pow((5 + length) / 6, alpha); }

  // The beam_size best candidates of (k, V) scores, best first (ties: the lower index first, as torch.topk on a CPU).
  function topK(candidates, k) {
    var order = [];
    candidates.forEach(function (x, i) { if (x > -Infinity) order.push(i); });
    order.sort(function (a, b) { return candidates[b] - candidates[a] || a - b; });
    return order.slice(0, k);
  }

  // Beam search for one source, as transformer.decoding.beam_search: beams (all beamSize of them after the first
  // step) run as one batch; a finished hypothesis stays in the beam, grown by <pad> at no cost; at the end the
  // summed log-probabilities are divided by the length penalty and the best is returned, with every step (trace).
  function beamSearch(name, src, masks, beamSize, maxNewTokens, alpha) {
    return encode(name, src, masks).then(function (ctx) {
      var m = ctx.m, V = ctx.info.tgt_vocab.length, K = beamSize;
      maxNewTokens = maxNewTokens || defaultMaxNewTokens(m, ctx.info, src);
      alpha = alpha === undefined ? m.beam.length_penalty : alpha;
      var beams = [{tokens: [m.bos_id], score: 0, length: 0, finished: false}];
      var trace = {parents: [], tokens: [], scores: []}, stepMs = [];
      function next() {
        var t0 = performance.now();
        return step(ctx, beams.map(function (b) { return b.tokens; })).then(function (out) {
          var candidates = new Float64Array(beams.length * V);
          beams.forEach(function (b, k) {
            var logp = b.finished ? null : logProbs(m, out.logits.data, k, V);
            for (var v = 0; v < V; v++) {
              candidates[k * V + v] = b.score + (b.finished ? (v === m.pad_id ? 0 : -Infinity) : logp[v]);
            }
          });
          var chosen = topK(candidates, K);
          beams = chosen.map(function (index) {
            var parent = beams[Math.floor(index / V)], token = index % V;
            return {
              tokens: parent.tokens.concat([token]), score: candidates[index], parent: Math.floor(index / V),
              length: parent.length + (parent.finished ? 0 : 1), finished: parent.finished || token === m.eos_id,
            };
          });
          trace.parents.push(beams.map(function (b) { return b.parent; }));
          trace.tokens.push(beams.map(function (b) { return b.tokens[b.tokens.length - 1]; }));
          trace.scores.push(beams.map(function (b) { return b.score; }));
          stepMs.push(performance.now() - t0);
          if (beams.every(function (b) { return b.finished; }) || trace.tokens.length >= maxNewTokens) return finish();
          return next();
        });
      }
      function finish() {
        var hypotheses = beams.map(function (b) {
          return {tokens: b.tokens.slice(1, 1 + b.length), logProb: b.score, length: b.length,
            score: b.score / lengthPenalty(b.length, alpha)};
        });
        var best = argmax(hypotheses.map(function (h) { return h.score; }));
        trace.best = best;
        return {src: src, tokens: hypotheses[best].tokens, score: hypotheses[best].score, hypotheses: hypotheses,
          trace: trace, stepMs: stepMs, totalMs: performance.now() - ctx.started};
      }
      return next();
    });
  }

  // What transformer.train.tokenizer.tokenize(text, "word") does, with Python's Unicode classes: lower-case, then runs of
  // letters ([^\W\d_]+), single decimal digits (\d), single other non-space characters ([^\w\s]) and "_".
  var SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"; // str.isspace
  var WORD = new RegExp("[\\p{L}\\p{Nl}\\p{No}]+|\\p{Nd}|[^\\p{L}\\p{N}_" + SPACE + "]|_", "gu");
  function tokenize(text, level) {
    if (level === "char") return Array.from(text);
    return text.toLowerCase().match(WORD) || [];
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

  // Plotly reads tick labels and hover text as HTML: "<s>" would vanish as a tag.
  function shown(text) { return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }

  function special(m, id) { return id === m.pad_id || id === m.bos_id || id === m.eos_id; }

  // The reader's input -> source ids. Symbols: labels separated by spaces or commas, each one of the model's symbols.
  // Text: the model's tokenizer; a token its vocabulary lacks becomes <unk> (listed in `unknown`).
  function parseSource(text, info, m) {
    var tokens = info.input === "symbols" ? text.trim().split(/[\s,]+/).filter(Boolean) : tokenize(text, info.input);
    if (!tokens.length) throw new Error(info.input === "symbols" ? "type at least one symbol" : "type a few words");
    if (tokens.length > MAX_SYMBOLS) throw new Error("at most " + MAX_SYMBOLS + " tokens; got " + tokens.length);
    var unk = info.src_vocab.indexOf("<unk>"), unknown = [];
    var ids = tokens.map(function (token) {
      var id = info.src_vocab.indexOf(token);
      if (id >= 0 && !special(m, id)) return id;
      if (info.input !== "symbols" && unk >= 0) { unknown.push(token); return unk; }
      var symbols = info.src_vocab.filter(function (v, i) { return !special(m, i); });
      throw new Error("the symbols are " + symbols.join(" ") + "; got " + JSON.stringify(token));
    });
    return {ids: ids, tokens: tokens, unknown: unknown};
  }

  // The output as the reader reads it: up to </s>, words joined by spaces, characters by nothing.
  function outputText(info, tokens) {
    var eos = tokens.indexOf(info.tgt_vocab.indexOf("</s>"));
    var words = (eos >= 0 ? tokens.slice(0, eos) : tokens).map(function (i) { return info.tgt_vocab[i]; });
    return words.join(info.output_join) + (eos >= 0 ? "" : " … (no </s>)");
  }

  function layout(m, height, extra) {
    var s = m.style;
    return Object.assign({
      font: s.font, height: height, autosize: true, margin: {l: 60, r: 10, t: 30, b: 50},
      paper_bgcolor: "white", plot_bgcolor: s.mask_color, hoverlabel: {font: {size: 12}},
    }, extra);
  }

  function drawSteps(root, m, info, r, beam) {
    var y = r.tokens.map(function (tok, t) { return "step " + (t + 1) + " → " + shown(info.tgt_vocab[tok]); });
    var div = root.querySelector(".playground-steps");
    var data = [{
      type: "heatmap", z: r.probs, x: info.tgt_vocab.map(shown), y: y, zmin: 0, zmax: 1,
      colorscale: m.style.weights_scale, xgap: 1, ygap: 1, colorbar: {thickness: 10, len: 0.9},
      hovertemplate: "%{y}<br>p(%{x}) = %{z:.3f}<extra></extra>",
    }];
    var title = beam ? "Next-token probabilities along the best beam" : "Next-token probabilities";
    window.Plotly.react(div, data, layout(m, 90 + 24 * r.tokens.length, {
      title: {text: title, x: 0.02, xanchor: "left", font: {size: 14}},
      margin: {l: 95, r: 10, t: 30, b: 50},
      xaxis: {type: "category"},
      yaxis: {type: "category", autorange: "reversed"},
      plot_bgcolor: "white",
    }), {responsive: true, displayModeBar: false});
  }

  // The beams step by step, as the decoding chapter's beam figure draws them, turned on its side so that it fits a
  // phone: a row per step, a column per beam slot (best first), an edge to the hypothesis each one extended, the
  // returned one in red; a finished hypothesis (after </s>) is carried on unchanged and drawn once.
  function drawBeam(root, m, info, b) {
    var div = root.querySelector(".playground-beam-tree"), s = m.style, K = b.trace.tokens[0].length;
    var steps = b.trace.tokens.length, onBest = {}, slot = b.trace.best;
    for (var t = steps - 1; t >= 0; t--) { onBest[t + ":" + slot] = true; slot = b.trace.parents[t][slot]; }
    var edges = {x: [], y: []}, best = {x: [], y: []};
    var nodes = {x: [0], y: [0], text: ["&lt;s&gt;"], hover: ["the decoder's first input"], color: [s.bos_color]};
    for (t = 0; t < steps; t++) {
      for (var k = 0; k < K; k++) {
        var token = b.trace.tokens[t][k], score = b.trace.scores[t][k];
        if (token === m.pad_id || !isFinite(score)) continue;
        var red = onBest[t + ":" + k], line = red ? best : edges;
        nodes.x.push(k); nodes.y.push(t + 1); nodes.text.push(shown(info.tgt_vocab[token]));
        nodes.hover.push("step " + (t + 1) + ", beam " + (k + 1) + ": " + shown(info.tgt_vocab[token])
          + "<br>summed log-probability " + score.toFixed(3));
        nodes.color.push(red ? s.best_color : s.beam_color);
        line.x.push(b.trace.parents[t][k], k, null); line.y.push(t, t + 1, null);
      }
    }
    var longest = Math.max.apply(null, nodes.text.map(function (x) { return x.replace(/&[a-z]+;/g, "<").length; }));
    window.Plotly.react(div, [
      {type: "scatter", mode: "lines", x: edges.x, y: edges.y, line: {color: s.edge_color, width: 2}, hoverinfo: "skip"},
      {type: "scatter", mode: "lines", x: best.x, y: best.y, line: {color: s.best_color, width: 3}, hoverinfo: "skip"},
      {type: "scatter", mode: "markers+text", x: nodes.x, y: nodes.y, text: nodes.text, hovertext: nodes.hover,
        hovertemplate: "%{hovertext}<extra></extra>", textfont: {size: longest > 2 ? 10 : 12, color: "white"},
        marker: {size: 30, color: nodes.color, line: {color: "white", width: 1}}},
    ], layout(m, 110 + 34 * (steps + 1), {
      title: {text: "The beams, step by step", x: 0.02, xanchor: "left", font: {size: 14}},
      showlegend: false, plot_bgcolor: "white", margin: {l: 60, r: 10, t: 60, b: 20},
      xaxis: {title: {text: "beam (best first)", standoff: 4}, side: "top", tickvals: b.trace.tokens[0].map(function (x, i) { return i; }),
        ticktext: b.trace.tokens[0].map(function (x, i) { return String(i + 1); }), range: [-0.6, K - 0.4], zeroline: false,
        showgrid: false},
      yaxis: {title: {text: "step"}, range: [steps + 0.6, -0.6], tickvals: b.trace.tokens.concat([[]]).map(function (x, i) { return i; }),
        zeroline: false},
    }), {responsive: true, displayModeBar: false});
    var list = root.querySelector(".playground-beam-list");
    list.innerHTML = "";
    b.hypotheses.map(function (h, k) { return {h: h, k: k}; })
      .sort(function (x, y) { return y.h.score - x.h.score; })
      .forEach(function (e) {
        var text = outputText(info, e.h.tokens) + " — log-probability " + e.h.logProb.toFixed(3) + " over " + e.h.length
          + " tokens, score " + e.h.score.toFixed(3) + (e.k === b.trace.best ? " (returned)" : "");
        list.appendChild(el("li", {text: text}));
      });
  }

  function drawAttention(root, m, info, r, masks) {
    var kind = root.querySelector(".playground-kind").value;
    var layer = Number(root.querySelector(".playground-layer").value);
    var src = r.src.map(function (i) { return shown(info.src_vocab[i]); });
    var tgt = r.tgt.map(function (i) { return shown(info.tgt_vocab[i]); });
    var keys = kind === "decoder" ? tgt : src, queries = kind === "encoder" ? src : tgt;
    var raw = (kind === "decoder" ? r.tgt.map(function (i) { return info.tgt_vocab[i]; }) : r.src.map(function (i) { return info.src_vocab[i]; }))
      .concat(kind === "encoder" ? r.src.map(function (i) { return info.src_vocab[i]; }) : r.tgt.map(function (i) { return info.tgt_vocab[i]; }));
    var longest = Math.max.apply(null, raw.map(function (label) { return String(label).length + 3; }));
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

  // Greedy decoding (beamSize 1), or beam search and then the best hypothesis decoded along (for its probabilities
  // and attention maps): {tokens, probs, attention, tgt, src, stepMs, totalMs, beam (beam search only)}.
  function search(name, src, masks, beamSize) {
    if (beamSize === 1) return decode(name, src, masks);
    return beamSearch(name, src, masks, beamSize).then(function (b) {
      return decode(name, src, masks, null, b.tokens).then(function (r) {
        r.beam = b;
        r.stepMs = b.stepMs;
        r.totalMs = b.totalMs + r.totalMs;
        return r;
      });
    });
  }

  function setUp(root, m) {
    var names = Object.keys(m.models);
    var select = el("select", {"class": "playground-model", "aria-label": "model"});
    names.forEach(function (n) { select.appendChild(new Option(n, n)); });
    var input = el("input", {"class": "playground-source", type: "text", "aria-label": "source"});
    var examples = el("select", {"class": "playground-example", "aria-label": "examples"});
    var padding = el("input", {"class": "playground-padding", type: "number", min: "0", max: String(MAX_PADDING), value: "0",
      "aria-label": "padding tokens"});
    var searchBox = el("select", {"class": "playground-search", "aria-label": "search"});
    searchBox.appendChild(new Option("greedy", "1"));
    m.beam.sizes.forEach(function (k) { searchBox.appendChild(new Option("beam of " + k, String(k))); });
    var run = el("button", {"class": "playground-run", type: "button", text: "Decode"});
    var kind = el("select", {"class": "playground-kind", "aria-label": "attention"});
    KINDS.forEach(function (k) { kind.appendChild(new Option(KIND_NAMES[k], k)); });
    var layer = el("select", {"class": "playground-layer", "aria-label": "layer"});
    root.innerHTML = "";
    [
      el("div", {"class": "playground-controls"}, [
        el("label", {}, [document.createTextNode("model "), select]),
        el("label", {"class": "playground-example-label"}, [document.createTextNode("try "), examples]),
      ]),
      el("div", {"class": "playground-controls"}, [
        el("label", {"class": "playground-source-label"}, [document.createTextNode("source "), input]),
        el("label", {}, [document.createTextNode("padding "), padding]),
        el("label", {}, [document.createTextNode("search "), searchBox]),
        run,
      ]),
      el("p", {"class": "playground-status", role: "status", text: "Press Decode to run the model in this page (the first run loads ONNX Runtime Web, about 14 MB)."}),
      el("p", {"class": "playground-tokens"}),
      el("p", {"class": "playground-output"}),
      el("div", {"class": "playground-beam", hidden: ""}, [
        el("ol", {"class": "playground-beam-list"}),
        el("div", {"class": "playground-beam-tree"}),
      ]),
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
    var tokensLine = root.querySelector(".playground-tokens"), beamBox = root.querySelector(".playground-beam");
    var last = null;

    function fillLayers() {
      var n = m.models[select.value].layers[kind.value], current = layer.value;
      layer.innerHTML = "";
      for (var l = 0; l < n; l++) layer.appendChild(new Option(String(l), String(l)));
      if (current !== "" && Number(current) < n) layer.value = current;
    }

    function fillExamples() {
      var info = m.models[select.value];
      examples.innerHTML = "";
      info.examples.forEach(function (text) { examples.appendChild(new Option(text, text)); });
      input.value = info.examples[0];
      input.placeholder = info.input === "symbols" ? "symbols, separated by spaces" : "a date in words";
    }

    var pending = Promise.resolve(), generation = 0;
    function update() {
      var mine = ++generation, asked = performance.now();
      pending = pending.then(function () {
        if (mine !== generation) return; // a newer request replaces this one
        var name = select.value, info = m.models[name], source;
        try {
          source = parseSource(input.value, info, m);
        } catch (err) {
          root.dataset.state = "error";
          status.textContent = "Source: " + err.message;
          return;
        }
        var src = source.ids.slice(), beamSize = Number(searchBox.value);
        var pads = Math.min(MAX_PADDING, Math.max(0, Math.floor(Number(padding.value) || 0)));
        for (var p = 0; p < pads; p++) src.push(m.pad_id);
        tokensLine.textContent = info.input === "symbols" ? "" : "Tokens: " + source.tokens.join(" ")
          + (source.unknown.length ? "   (not in the vocabulary, read as <unk>: " + source.unknown.join(", ") + ")" : "");
        var masks = readMasks(root, info), firstTime = !sessions[name];
        root.dataset.state = "loading";
        status.textContent = firstTime ? "Loading ONNX Runtime Web and the " + name + " model…" : "Decoding…";
        var runs = [search(name, src, masks, beamSize)];
        if (anySilenced(masks)) runs.push(search(name, src, allHeads(info), beamSize));
        return Promise.all(runs).then(function (rs) {
          var r = rs[0];
          output.textContent = "Output: " + outputText(info, r.tokens) + (rs[1] ? "   (all heads: " + outputText(info, rs[1].tokens) + ")" : "");
          output.dataset.tokens = JSON.stringify(r.tokens);
          output.dataset.runs = String(Number(output.dataset.runs || 0) + 1);
          beamBox.hidden = !r.beam;
          if (r.beam) drawBeam(root, m, info, r.beam);
          drawSteps(root, m, info, r, Boolean(r.beam));
          last = {r: r, masks: masks, info: info};
          drawAttention(root, m, info, r, masks);
          status.textContent = (r.beam ? "Beam search of " + beamSize + " decoded " : "Decoded ") + r.tokens.length + " tokens in "
            + Math.round(r.totalMs) + " ms in this page ("
            + (r.stepMs.reduce(function (a, b) { return a + b; }, 0) / r.stepMs.length).toFixed(1) + " ms per step).";
          root.dataset.resultMs = (performance.now() - asked).toFixed(1); // the interaction to the drawn result
          root.dataset.state = "ready";
        }).catch(function (err) {
          root.dataset.state = "error";
          status.textContent = "The playground failed: " + err.message;
        });
      });
      return pending;
    }

    select.addEventListener("change", function () {
      headSwitches(root, m.models[select.value], update);
      fillExamples();
      fillLayers();
      update();
    });
    examples.addEventListener("change", function () { input.value = examples.value; update(); });
    kind.addEventListener("change", function () {
      fillLayers();
      if (last) drawAttention(root, m, last.info, last.r, last.masks);
    });
    layer.addEventListener("change", function () { if (last) drawAttention(root, m, last.info, last.r, last.masks); });
    input.addEventListener("change", update);
    padding.addEventListener("change", update);
    searchBox.addEventListener("change", update);
    run.addEventListener("click", update);
    headSwitches(root, m.models[select.value], update);
    fillExamples();
    fillLayers();
    root.dataset.state = "idle";
  }

  var CSS = [
    ".transformer-playground .playground-controls{display:flex;flex-wrap:wrap;gap:.4rem .9rem;align-items:center;margin:.4rem 0}",
    ".transformer-playground .playground-source{width:22rem;max-width:100%}",
    ".transformer-playground .playground-source-label{flex:1 1 14rem;display:flex;gap:.3rem;align-items:center}",
    ".transformer-playground .playground-source-label input{flex:1 1 auto;min-width:0}",
    ".transformer-playground .playground-example-label{flex:1 1 14rem;display:flex;gap:.3rem;align-items:center;min-width:0}",
    ".transformer-playground .playground-example{flex:1 1 auto;min-width:0;max-width:100%}",
    ".transformer-playground .playground-padding{width:3.5rem}",
    ".transformer-playground .playground-output,.transformer-playground .playground-tokens{font-family:monospace;overflow-wrap:anywhere}",
    ".transformer-playground .playground-beam-list{font-family:monospace;font-size:.9em;overflow-wrap:anywhere}",
    ".transformer-playground .playground-beam-tree{max-width:34rem}",
    ".transformer-playground .playground-heads{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:.3rem}",
    ".transformer-playground .playground-head,.transformer-playground .playground-steps{min-width:0}",
    ".transformer-playground .playground-switch-row{display:flex;flex-wrap:wrap;gap:.2rem .7rem;margin:.2rem 0}",
    ".transformer-playground .playground-switch-row span{flex:1 1 100%;font-size:.9em}",
  ].join("\n");

  function encodeText(name, text) { // the ids the page decodes for a reader's input
    return manifest().then(function (m) { return parseSource(text, m.models[name], m); });
  }

  window.transformerPlayground = {
    decode: decode, beamSearch: beamSearch, tokenize: tokenize, encode: encodeText, manifest: manifest, timings: timings,
  };

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
