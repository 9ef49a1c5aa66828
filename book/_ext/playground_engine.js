// The playground's engine: the book's trained models run in the page by ONNX Runtime Web (WebAssembly, one thread).
//
// No DOM: this file reads what a reader types, decodes and loads; book/_ext/playground.js draws it. It runs in a
// page, a worker or Node (tests/site/test_playground_engine.py runs its tokenizer and searches there on their own).
//
// The models are the package's own, exported by transformer.export.export_onnx during the build into
// _static/playground/<model>/{encoder,decoder_step}.onnx, listed in _static/playground/manifest.json.
// - tokenize: transformer.train.tokenizer.tokenize(level="word"), with Python's Unicode classes.
// - encodeSubwords / decodeSubwords: transformer.train.subwords.SubwordVocabulary (the byte-pair vocabulary of the
//   English -> German model): normalisation, pieces, merges by rank, <unk> and decoding back to text, as its
//   reference_encode writes the algorithm out, with the vocabulary and merges of the manifest.
// - greedyDecode: transformer.decoding.greedy_steps: encode once, then run the decoder on <s> + the tokens so far,
//   take the most probable token (<pad> and <s> excluded), stop at </s> or after maxNewTokens tokens.
// - beamSearch: transformer.decoding.beam_search for one source; the beams run as one batch through the decoder step.
// Both are written against a decoder step, a function of k decoder inputs of one length that resolves to their
// next-token logits, (k, V) row after row: the exported graph in the page, any function in a test.
// - samplingProbs / sampleNext / generate: the decoder-only (GPT-style) model's continuation of a prefix, greedy or
//   sampled with transformer.decoding.sample_next's rule (the logits over the temperature; with top-k, the tokens
//   whose score is at least the k-th largest, ties kept; the softmax of those), from a seeded generator of the page's
//   own (PyTorch's draws cannot be repeated in a page: the distributions are the package's, the draws the page's).
//   Its graph (transformer_book.playground_gpt.export_gpt_onnx, gpt.onnx) reads the whole row again at each step.
// - createPlayground: loading (ONNX Runtime Web's module, its 14 MB WebAssembly fetched gzipped, 3.7 MB, and unpacked
//   here; each model's two graphs, whose download prefetch starts early), with progress in bytes, and the decoding
//   of a model by name. ONNX Runtime runs in
//   a worker (its proxy mode), so that compiling and running the models leave the page responsive.
(function (root, factory) {
  "use strict";
  const engine = factory();
  if (typeof module === "object" && module.exports) module.exports = engine;
  else root.TransformerPlaygroundEngine = engine;
})(globalThis, function () {
  "use strict";

  // Marks English that playground.js shows later through tr(name), as transformer_book.i18n.translatable marks the
  // chapters' (book/_ext/static_book/words.py finds it, and InputError's template, for the book's catalogue).
  const translatable = (text) => text;

  const KINDS = ["encoder", "decoder", "cross"];
  const KIND_NAMES = {encoder: translatable("encoder self-attention"),
    decoder: translatable("decoder masked self-attention"), cross: translatable("cross-attention")};
  // What a reader may type, and pad, so that the attention maps stay readable: 30 positions at most, below the models'
  // max_positions (64), which the graphs allow.
  const MAX_SOURCE_TOKENS = 20;
  const MAX_PADDING = 10;
  const WASM = "ort-wasm-simd-threaded.wasm";

  const now = () => performance.now();

  // ---------------------------------------------------------------------------------------------------------------
  // What the reader types

  // What transformer.train.tokenizer.tokenize(text, "word") does, with Python's Unicode classes: lower-case, then runs
  // of letters ([^\W\d_]+), single decimal digits (\d), single other non-space characters ([^\w\s]) and "_".
  const SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"; // str.isspace
  const WORD = new RegExp("[\\p{L}\\p{Nl}\\p{No}]+|\\p{Nd}|[^\\p{L}\\p{N}_" + SPACE + "]|_", "gu");

  function tokenize(text, level) {
    if (level === "char") return Array.from(text);
    return text.toLowerCase().match(WORD) || [];
  }

  // What transformer.train.subwords does for a SubwordVocabulary: NFC; "▁" read as a space; every run of Unicode
  // White_Space one space, none at either end (normalize); a "▁" for each space and one in front; the pieces of
  // PIECE_PATTERN (a "▁" and the letters after it, or one digit, one "▁" or one other sign); in each piece,
  // the merge of lowest rank among neighbouring symbols, leftmost first, until none applies (apply_merges); each
  // symbol's id, or <unk>'s for a character the vocabulary lacks.
  const SUBWORD_SPACE = "\u2581";
  const WHITESPACE_RUN = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;
  const PIECE = /\u2581?[\p{L}\p{M}]+|\p{N}|\u2581|[^\p{L}\p{M}\p{N}\u2581]/gu;
  const subwordTables = new WeakMap(); // info -> {stoi, ranks}, made once per model

  function subwordTable(info) {
    if (!subwordTables.has(info)) {
      const stoi = new Map(info.src_vocab.map((token, id) => [token, id]));
      const ranks = new Map(info.merges.map(([left, right], rank) => [left + "\u0000" + right, rank]));
      subwordTables.set(info, {stoi, ranks});
    }
    return subwordTables.get(info);
  }

  function normalizeSubwords(text) {
    return text.normalize("NFC").replaceAll(SUBWORD_SPACE, " ").replace(WHITESPACE_RUN, " ").replace(/^ +| +$/g, "");
  }

  function preTokenize(text) {
    const normalized = normalizeSubwords(text);
    return normalized ? (SUBWORD_SPACE + normalized.replaceAll(" ", SUBWORD_SPACE)).match(PIECE) : [];
  }

  function applyMerges(piece, ranks) {
    const symbols = Array.from(piece); // code points, as Python's str
    while (symbols.length > 1) {
      let best = Infinity, at = -1;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const rank = ranks.get(symbols[i] + "\u0000" + symbols[i + 1]);
        if (rank !== undefined && rank < best) {
          best = rank;
          at = i;
        }
      }
      if (at < 0) break;
      symbols.splice(at, 2, symbols[at] + symbols[at + 1]);
    }
    return symbols;
  }

  // text -> {tokens, ids, unknown}: tokens as SubwordVocabulary.tokenize gives them ("<unk>" for a character the
  // vocabulary lacks), ids as its encode, unknown those characters, in order, as its unknown().
  function encodeSubwords(text, info) {
    const {stoi, ranks} = subwordTable(info), unk = stoi.get("<unk>"), tokens = [], ids = [], unknown = [];
    for (const piece of preTokenize(text)) {
      for (const symbol of applyMerges(piece, ranks)) {
        const id = stoi.get(symbol);
        if (id === undefined) unknown.push(symbol);
        tokens.push(id === undefined ? "<unk>" : symbol);
        ids.push(id === undefined ? unk : id);
      }
    }
    return {tokens, ids, unknown};
  }

  // The words of `text` (runs of letters) that a subword vocabulary holds only in pieces, even after a space: the
  // byte-pair merges make every word that is frequent in the training text one token, so a word in pieces ("hello":
  // ▁ h el l o) is one the model hardly ever read.
  function splitWords(text, info) {
    const {ranks} = subwordTable(info);
    return preTokenize(text).filter((piece) => /^\u2581?[\p{L}\p{M}]+$/u.test(piece))
      .map((piece) => piece.replace(SUBWORD_SPACE, ""))
      .filter((word) => applyMerges(SUBWORD_SPACE + word, ranks).length > 1);
  }

  // ids -> text, as SubwordVocabulary.decode: up to the first </s>, without <pad> and <s>; the tokens joined, each
  // "▁" a space, but for the first token's (the space in front of the text).
  function decodeSubwords(ids, vocab, manifest) {
    const end = ids.indexOf(manifest.eos_id), kept = (end >= 0 ? ids.slice(0, end) : ids)
      .filter((id) => id !== manifest.pad_id && id !== manifest.bos_id);
    return kept.map((id, i) => vocab[id].replaceAll(SUBWORD_SPACE, i === 0 ? "" : " ")).join("");
  }

  // The output as a reader reads it, up to </s>: a subword model's text, characters joined by nothing, words and
  // symbols by spaces.
  function outputText(info, manifest, ids) {
    if (info.output === "subword") return decodeSubwords(ids, info.tgt_vocab, manifest);
    const end = ids.indexOf(manifest.eos_id);
    return (end >= 0 ? ids.slice(0, end) : ids).map((id) => info.tgt_vocab[id]).join(info.output === "char" ? "" : " ");
  }

  // An input the page rejects: `field` names the control ("source", "padding"), the message what is wrong.
  // A reader's input the page cannot use: `message` says why, in English; `template` and `values` let the page say it
  // in its own language (playground.js's tr: the English template is the key).
  class InputError extends Error {
    constructor(field, template, values) {
      super(fill(template, values));
      this.name = "InputError";
      this.field = field;
      this.template = template;
      this.values = values || {};
    }
  }

  // `template` with each {name} replaced by values[name] (names not given stay as they are).
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, (whole, name) => (values && name in values ? String(values[name]) : whole));
  }

  function isSpecial(manifest, id) {
    return id === manifest.pad_id || id === manifest.bos_id || id === manifest.eos_id;
  }

  // What of a parsed source lies outside what the model learned, each once: its unknown tokens and, for subwords,
  // the words the vocabulary holds only in pieces (splitWords).
  function unfamiliar(text, parsed, info) {
    return [...new Set([...parsed.unknown, ...(info.input === "subword" ? splitWords(text, info) : [])])];
  }

  // The reader's source -> {ids, tokens, unknown}. Symbols: labels separated by spaces or commas, each one of the
  // model's symbols. Text: the model's tokenizer; a token its vocabulary lacks becomes <unk> (listed in `unknown`).
  function parseSource(text, info, manifest) {
    const symbols = info.input === "symbols";
    const encoded = info.input === "subword" ? encodeSubwords(text, info) : null;
    const tokens = encoded ? encoded.tokens : symbols ? text.trim().split(/[\s,]+/).filter(Boolean) : tokenize(text, info.input);
    if (!tokens.length) throw new InputError("source", symbols ? "type at least one symbol" : "type a few words");
    if (tokens.length > MAX_SOURCE_TOKENS) {
      const values = {most: MAX_SOURCE_TOKENS, got: tokens.length};
      throw new InputError("source", symbols ? "at most {most} symbols; got {got}" : "at most {most} tokens; got {got}", values);
    }
    if (encoded) return encoded;
    const unk = info.src_vocab.indexOf("<unk>"), unknown = [];
    const ids = tokens.map((token) => {
      const id = info.src_vocab.indexOf(token);
      if (id >= 0 && !isSpecial(manifest, id)) return id;
      if (!symbols && unk >= 0) {
        unknown.push(token);
        return unk;
      }
      const known = info.src_vocab.filter((label, i) => !isSpecial(manifest, i));
      throw new InputError("source", "the symbols are {known}; got {got}", {known: known.join(" "), got: JSON.stringify(token)});
    });
    return {ids, tokens, unknown};
  }

  // The padding field's value -> {count, asked, clamped}: count is what the page uses, a whole number from 0 to
  // MAX_PADDING; clamped says that it is not what was asked.
  function readPadding(value) {
    const text = String(value).trim();
    const asked = text === "" ? 0 : Number(text);
    if (!Number.isFinite(asked)) {
      throw new InputError("padding", "padding is a whole number from 0 to {most}; got {got}",
        {most: MAX_PADDING, got: JSON.stringify(text)});
    }
    const count = Math.min(MAX_PADDING, Math.max(0, Math.floor(asked)));
    return {count, asked, clamped: count !== asked};
  }

  // The decoding budget: the model's own (dates: 11), else two tokens more than the source has symbols, as
  // transformer_book.playground.default_max_new_tokens.
  function maxNewTokensFor(info, manifest, src) {
    return info.max_new_tokens || src.filter((id) => id !== manifest.pad_id).length + 2;
  }

  // What a reader may type as a decoder-only model's prefix: a source, its separator and a start of its copy.
  const MAX_PREFIX_TOKENS = 2 * MAX_SOURCE_TOKENS + 1;

  // A decoder-only model's prefix -> {ids, tokens}: its symbols and the separator (<s>) or </s>, separated by spaces
  // or commas; <pad> is no token a model continues.
  function parsePrefix(text, info, manifest) {
    const tokens = text.trim().split(/[\s,]+/).filter(Boolean);
    if (!tokens.length) throw new InputError("source", "type at least one symbol");
    if (tokens.length > MAX_PREFIX_TOKENS) {
      throw new InputError("source", "at most {most} tokens; got {got}", {most: MAX_PREFIX_TOKENS, got: tokens.length});
    }
    const ids = tokens.map((token) => {
      const id = info.tgt_vocab.indexOf(token);
      if (id >= 0 && id !== manifest.pad_id) return id;
      const known = info.tgt_vocab.filter((label, i) => i !== manifest.pad_id);
      throw new InputError("source", "the tokens are {known}; got {got}", {known: known.join(" "), got: JSON.stringify(token)});
    });
    return {ids, tokens, unknown: []};
  }

  // How many tokens a decoder-only model continues a prefix by: two more than the prefix has (room for a copy and its
  // </s>), within the model's positions, as transformer_book.playground.default_continuation.
  function continuationBudget(info, prefix) {
    return Math.max(1, Math.min(prefix.length + 2, info.max_positions - prefix.length));
  }

  // A temperature and a top-k as the page's fields give them -> {temperature, topK} (topK null: every token), or an
  // InputError naming the field, with transformer.decoding.check_sampling's rules.
  function readSampling(temperatureText, topKText, vocabSize) {
    const text = String(temperatureText).trim(), temperature = text === "" ? 1 : Number(text);
    if (!(temperature > 0 && Number.isFinite(temperature))) {
      throw new InputError("temperature", "temperature must be a positive number; got {got}", {got: JSON.stringify(text)});
    }
    const kText = String(topKText).trim(), topK = kText === "" ? null : Number(kText);
    if (topK !== null && !(Number.isInteger(topK) && topK >= 1 && topK <= vocabSize)) {
      throw new InputError("top-k", "top-k is a whole number from 1 to {most}, or empty for every token; got {got}",
        {most: vocabSize, got: JSON.stringify(kText)});
    }
    return {temperature, topK};
  }

  // The distribution transformer.decoding.sampling_probs draws from, for V logits (a typed array): logits /
  // temperature; with topK, every score below the topK-th largest left out (ties with it kept); the softmax (float64).
  function samplingProbs(logits, temperature, topK) {
    const V = logits.length, scores = Float64Array.from(logits, (x) => x / temperature);
    const floor = topK ? Float64Array.from(scores).sort((a, b) => b - a)[topK - 1] : -Infinity;
    let top = -Infinity, sum = 0;
    for (let i = 0; i < V; i++) if (scores[i] >= floor && scores[i] > top) top = scores[i];
    const out = new Float64Array(V);
    for (let i = 0; i < V; i++) if (scores[i] >= floor) sum += (out[i] = Math.exp(scores[i] - top));
    for (let i = 0; i < V; i++) out[i] /= sum;
    return out;
  }

  // A seeded generator of numbers in [0, 1) (mulberry32): the same seed, the same draws, in any browser.
  function seededRandom(seed) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // One token drawn from `probs` with the number u in [0, 1): the first whose cumulative probability passes u (never
  // one of probability 0).
  function sampleNext(probs, u) {
    let total = 0, last = 0;
    for (let i = 0; i < probs.length; i++) {
      if (probs[i] <= 0) continue;
      total += probs[i];
      last = i;
      if (u < total) return i;
    }
    return last;
  }

  // A decoder-only model's continuation of `prefix`, against a step: step(row) -> Promise<{logits}>, the next-token
  // logits (V) after the row. Greedy (the argmax of the logits, as GPT.generate) when `sampling` is null, else drawn
  // with sampleNext from samplingProbs(temperature, topK), the numbers from seededRandom(seed). Stops after </s> or
  // maxNewTokens tokens. Returns {tokens, steps: [{logits, probs (the model's), drawnFrom (what the token was chosen
  // from), ms}], last (the last step's output), row (its input), ended: "eos" | "budget"}.
  async function generate(step, {prefix, eos, maxNewTokens, sampling = null}) {
    const tokens = [], steps = [], random = sampling ? seededRandom(sampling.seed) : null;
    let last = null;
    while (tokens.length < maxNewTokens) {
      const started = now();
      last = await step([...prefix, ...tokens]);
      const logits = Float64Array.from(last.logits), probs = samplingProbs(logits, 1, null);
      const drawnFrom = sampling ? samplingProbs(logits, sampling.temperature, sampling.topK) : probs;
      const token = sampling ? sampleNext(drawnFrom, random()) : argmax(logits);
      steps.push({logits: Array.from(logits), probs: Array.from(probs), drawnFrom: Array.from(drawnFrom), ms: now() - started});
      tokens.push(token);
      if (token === eos) break;
    }
    const ended = tokens[tokens.length - 1] === eos ? "eos" : "budget";
    return {tokens, steps, last, row: [...prefix, ...tokens.slice(0, -1)], ended};
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Decoding, against a decoder step: step(rows) -> Promise<{logits}>, rows k arrays of ids of one length

  // Row `row` of (k, V) logits -> log-probabilities (float64) with the `excluded` ids at -Infinity: the softmax over
  // the other ids, as transformer.decoding._next_log_probs computes it.
  function logProbs(logits, row, V, excluded) {
    const scores = logits.subarray(row * V, (row + 1) * V), out = new Float64Array(V);
    let top = -Infinity, sum = 0;
    for (let i = 0; i < V; i++) if (!excluded.has(i) && scores[i] > top) top = scores[i];
    for (let i = 0; i < V; i++) if (!excluded.has(i)) sum += Math.exp(scores[i] - top);
    const norm = top + Math.log(sum);
    for (let i = 0; i < V; i++) out[i] = excluded.has(i) ? -Infinity : scores[i] - norm;
    return out;
  }

  function argmax(values) {
    let best = 0;
    for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // Greedy decoding, or decoding along given tokens (`forced`: teacher forcing, to draw a beam's best hypothesis).
  // Returns {tokens, steps: [{logits, probs, ms}], last (the last step's output), tgt (its decoder input),
  // ended: "eos" | "budget" | "forced"}.
  async function greedyDecode(step, {vocabSize: V, bos, eos, excluded, maxNewTokens, forced = null}) {
    const tokens = [], steps = [], budget = forced ? forced.length : maxNewTokens;
    let last = null;
    while (tokens.length < budget) {
      const started = now();
      last = await step([[bos, ...tokens]]);
      const logp = logProbs(last.logits, 0, V, excluded);
      const token = forced ? forced[tokens.length] : argmax(logp);
      steps.push({logits: Array.from(last.logits.subarray(0, V)), probs: Array.from(logp, Math.exp), ms: now() - started});
      tokens.push(token);
      if (!forced && token === eos) break;
    }
    const ended = forced ? "forced" : tokens[tokens.length - 1] === eos ? "eos" : "budget";
    return {tokens, steps, last, tgt: [bos, ...tokens.slice(0, -1)], ended};
  }

  // GNMT's length normalisation, as transformer.decoding.length_penalty_factor.
  function lengthPenaltyFactor(length, alpha) {
    return Math.pow((5 + length) / 6, alpha);
  }

  // The k best of the candidate scores, best first (ties: the lower index first, as torch.topk on a CPU).
  function topK(candidates, k) {
    const order = [];
    candidates.forEach((x, i) => { if (x > -Infinity) order.push(i); });
    order.sort((a, b) => candidates[b] - candidates[a] || a - b);
    return order.slice(0, k);
  }

  // The k best of finished hypotheses `kept` and `added` by score, best first (the earlier one first on a tie).
  function keepBest(kept, added, k) {
    return [...kept, ...added].filter((h) => h.score > -Infinity)
      .map((h, i) => ({h, i})).sort((x, y) => y.h.score - x.h.score || x.i - y.i).slice(0, k).map(({h}) => h);
  }

  // Beam search for one source, as transformer.decoding.beam_search (tensor2tensor's search, the paper's code): every
  // step extends each live hypothesis (all beamSize of them after the first step, run as one batch) by every token.
  // An extension by </s> joins the finished list, ranked by its length-penalised score (the list keeps the beamSize
  // best); the other extensions compete for the beamSize live places on their summed log-probability. The search
  // stops once the best finished score beats what the best live hypothesis could still reach (its sum over the
  // largest penalty), or after maxNewTokens steps, where the live hypotheses end as they are. Returns {tokens, score,
  // hypotheses (the finished list, best first: the first is returned), trace, stepMs}: trace.parents, .tokens and
  // .scores per step (live place k extended place parents[t][k] of the step before with tokens[t][k]), and
  // trace.best: where the returned hypothesis ended ({step, slot, ended}: "eos", the </s> that step added to live
  // place `slot` of the step before; "budget", live place `slot` at the last step).
  async function beamSearch(step, {vocabSize: V, bos, eos, excluded, beamSize, maxNewTokens, lengthPenalty}) {
    let live = [{tokens: [bos], logProb: 0}], finished = [];
    const trace = {parents: [], tokens: [], scores: []}, stepMs = [];
    const bestPossible = Math.max(lengthPenaltyFactor(1, lengthPenalty), lengthPenaltyFactor(maxNewTokens, lengthPenalty));
    for (let t = 0; t < maxNewTokens; t++) {
      const started = now();
      const {logits} = await step(live.map((h) => h.tokens));
      const candidates = new Float64Array(live.length * V), ending = [];
      live.forEach((h, k) => {
        const logp = logProbs(logits, k, V, excluded), logProb = h.logProb + logp[eos];
        ending.push({tokens: [...h.tokens.slice(1), eos], logProb, length: t + 1, step: t, slot: k, ended: "eos",
          score: logProb / lengthPenaltyFactor(t + 1, lengthPenalty)});
        for (let v = 0; v < V; v++) candidates[k * V + v] = v === eos ? -Infinity : h.logProb + logp[v];
      });
      finished = keepBest(finished, ending, beamSize);
      live = topK(candidates, beamSize).map((index) => ({
        tokens: [...live[Math.floor(index / V)].tokens, index % V], logProb: candidates[index], parent: Math.floor(index / V),
      }));
      trace.parents.push(live.map((h) => h.parent));
      trace.tokens.push(live.map((h) => h.tokens[h.tokens.length - 1]));
      trace.scores.push(live.map((h) => h.logProb));
      if (t === maxNewTokens - 1) { // out of steps: the live hypotheses end here, as they are
        finished = keepBest(finished, live.map((h, k) => ({tokens: h.tokens.slice(1), logProb: h.logProb, length: t + 1,
          step: t, slot: k, ended: "budget", score: h.logProb / lengthPenaltyFactor(t + 1, lengthPenalty)})), beamSize);
      }
      stepMs.push(now() - started);
      if (finished.length && live.length && finished[0].score > live[0].logProb / bestPossible) break;
    }
    const best = finished[0];
    trace.best = {step: best.step, slot: best.slot, ended: best.ended};
    const hypotheses = finished.map(({tokens, logProb, length, score}) => ({tokens, logProb, length, score}));
    return {tokens: best.tokens, score: best.score, hypotheses, trace, stepMs};
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The models, loaded from the site

  // (L, B, H, Tq, Tk) attention tensor -> nested arrays [L][H][Tq][Tk] of batch row b
  function attentionMaps(tensor, b) {
    const [L, B, H, Tq, Tk] = tensor.dims, data = tensor.data, out = [];
    for (let l = 0; l < L; l++) {
      const layer = [];
      for (let h = 0; h < H; h++) {
        const rows = [];
        for (let q = 0; q < Tq; q++) {
          const start = (((l * B + b) * H + h) * Tq + q) * Tk;
          rows.push(Array.from(data.subarray(start, start + Tk)));
        }
        layer.push(rows);
      }
      out.push(layer);
    }
    return out;
  }

  // A model of one stack, GPT-style (transformer_book.descendants.GPT): a prefix in, its continuation out.
  function isDecoderOnly(info) {
    return info.kind === "decoder-only";
  }

  // Its graph files: a decoder-only model's one, an encoder-decoder's two.
  function graphFiles(info) {
    return isDecoderOnly(info) ? ["gpt.onnx"] : ["encoder.onnx", "decoder_step.onnx"];
  }

  // Every head on: {encoder, decoder, cross}, each (L, H) of 1.
  function allHeads(info) {
    const masks = {};
    for (const kind of KINDS) masks[kind] = Array.from({length: info.layers[kind]}, () => new Array(info.n_heads).fill(1));
    return masks;
  }

  function anySilenced(masks) {
    return KINDS.some((kind) => masks[kind].some((layer) => layer.includes(0)));
  }

  // The playground of the site whose _static/ folder is at `staticUrl` (its models, in playground/) and whose vendored
  // assets are at `vendorUrl` (ONNX Runtime Web, in ort/: the English site's, which the Chinese shares). Decoding a
  // model loads what it needs first; load(name) starts that early. onProgress(listener) reports the downloads:
  // {loaded, total} bytes (total null while a size is unknown).
  function createPlayground(staticUrl, vendorUrl) {
    const ortDir = vendorUrl + "ort/", modelDir = staticUrl + "playground/";
    const timings = {}; // milliseconds since the page started: when loading started, ONNX Runtime and each model ready
    const downloads = new Map(), listeners = new Set(), graphs = {}, sessions = {}, warmed = {};
    let manifestPromise = null, runtimePromise = null;

    function manifest() {
      if (!manifestPromise) {
        manifestPromise = (async () => {
          const response = await fetch(modelDir + "manifest.json");
          if (!response.ok) throw new Error(`playground models missing (${response.status} ${response.url})`);
          return response.json();
        })();
      }
      return manifestPromise;
    }

    function progress() {
      let loaded = 0, total = 0;
      for (const d of downloads.values()) {
        loaded += d.loaded;
        total = total === null || d.total === null ? null : total + d.total;
      }
      return {loaded, total};
    }

    function onProgress(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    }

    function report() {
      const p = progress();
      listeners.forEach((listener) => listener(p));
    }

    // The body of `url` as a stream, its bytes counted as they arrive. A size is known from Content-Length, unless
    // the server compressed the response on the way (`encoded`: the length counts other bytes than those that arrive).
    async function fetchCounted(url) {
      timings.loadStarted = timings.loadStarted || now();
      const entry = {loaded: 0, total: null};
      downloads.set(url, entry);
      report();
      const response = await fetch(url);
      if (!response.ok) throw new Error(`could not load ${url} (${response.status})`);
      const length = response.headers.get("Content-Length"), encoded = Boolean(response.headers.get("Content-Encoding"));
      if (length !== null && !encoded) entry.total = Number(length);
      const counter = new TransformStream({
        transform(chunk, controller) {
          entry.loaded += chunk.length;
          report();
          controller.enqueue(chunk);
        },
        flush() {
          entry.total = entry.loaded;
          report();
        },
      });
      return {body: response.body.pipeThrough(counter), encoded};
    }

    async function bytesOf(stream) {
      return new Uint8Array(await new Response(stream).arrayBuffer());
    }

    async function download(url) {
      return bytesOf((await fetchCounted(url)).body);
    }

    // ONNX Runtime Web's WebAssembly: gzipped (3.7 MB instead of 14 MB) and unpacked here as it arrives, where the
    // browser can (DecompressionStream); a host that unpacked it on the way already (Content-Encoding) delivers the
    // .wasm itself.
    async function wasmBinary() {
      if (typeof DecompressionStream === "undefined") return download(ortDir + WASM);
      const {body, encoded} = await fetchCounted(ortDir + WASM + ".gz");
      if (!encoded) return bytesOf(body.pipeThrough(new DecompressionStream("gzip")));
      const bytes = await bytesOf(body);
      const gzipped = bytes[0] === 0x1f && bytes[1] === 0x8b; // gzipped again on the way, and unpacked once
      return gzipped ? bytesOf(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))) : bytes;
    }

    function runtime() {
      if (!runtimePromise) {
        runtimePromise = (async () => {
          const [ort, binary] = await Promise.all([import(ortDir + "ort.wasm.min.mjs"), wasmBinary()]);
          ort.env.wasm.numThreads = 1; // no SharedArrayBuffer, so no cross-origin isolation needed
          // In a worker: compiling the WebAssembly (much of it at the first run) and every run leave the page free.
          ort.env.wasm.proxy = true;
          ort.env.wasm.wasmPaths = ortDir;
          ort.env.wasm.wasmBinary = binary;
          timings.runtime = now();
          return ort;
        })();
        runtimePromise.catch(() => { runtimePromise = null; });
      }
      return runtimePromise;
    }

    // The bytes of the model `name`'s two graphs, downloaded once: prefetch(name) starts that early, so that a page
    // can download the next model while ONNX Runtime still builds the sessions of the one before.
    function graphsOf(name) {
      if (!graphs[name]) {
        graphs[name] = manifest().then((m) => Promise.all(graphFiles(m.models[name])
          .map((file) => download(`${modelDir}${name}/${file}`))));
        graphs[name].catch(() => { delete graphs[name]; });
      }
      return graphs[name];
    }

    // ONNX Runtime Web and the model `name`: {ort, encoder, decoder} sessions (a decoder-only model's: {ort, gpt}),
    // created once.
    function sessionsOf(name) {
      if (!sessions[name]) {
        sessions[name] = (async () => {
          const [ort, bytes, m] = await Promise.all([runtime(), graphsOf(name), manifest()]);
          const options = {executionProviders: ["wasm"], graphOptimizationLevel: "all"};
          const created = await Promise.all(bytes.map((graph) => ort.InferenceSession.create(graph, options)));
          if (isDecoderOnly(m.models[name])) return {ort, gpt: created[0]};
          return {ort, encoder: created[0], decoder: created[1]};
        })();
        sessions[name].catch(() => { delete sessions[name]; });
      }
      return sessions[name];
    }

    // The model `name` ready to decode: its sessions, and two tokens decoded from a one-symbol source, which take
    // the first run's extra time (the runtime compiles and allocates what the graphs need then) before the reader's.
    function load(name) {
      if (!warmed[name]) {
        warmed[name] = (async () => {
          const m = await manifest(), info = m.models[name];
          const first = info.src_vocab.findIndex((label, id) => !isSpecial(m, id));
          if (isDecoderOnly(info)) await continuation(name, [first], null, 2);
          else await decode(name, [first], null, 2);
          timings[name] = now();
        })();
        warmed[name].catch(() => { delete warmed[name]; });
      }
      return warmed[name];
    }

    function isLoaded(name) { // loaded and warmed up
      return name in timings;
    }

    function idTensor(ort, rows) {
      return new ort.Tensor("int64", BigInt64Array.from(rows.flat().map(BigInt)), [rows.length, rows[0].length]);
    }

    function headMask(ort, info, masks, kind) {
      return new ort.Tensor("float32", Float32Array.from(masks[kind].flat()), [info.layers[kind], info.n_heads]);
    }

    // Encode one source (ids, padding allowed) once, with head masks {encoder, decoder, cross}: (L, H) of 1/0.
    // Returns the decoder step for that source, what a search needs to know, and the encoder's attention.
    async function encode(name, src, masks) {
      const [m, session] = await Promise.all([manifest(), sessionsOf(name)]);
      const info = m.models[name], ort = session.ort;
      masks = masks || allHeads(info);
      const started = now();
      const out = await session.encoder.run({src: idTensor(ort, [src]), head_mask: headMask(ort, info, masks, "encoder")});
      const encodeMs = now() - started;
      const selfMask = headMask(ort, info, masks, "decoder"), crossMask = headMask(ort, info, masks, "cross");
      const tiles = {}; // the memory and source mask repeated for k decoder inputs (a beam), made once per k
      function tile(k) {
        if (!tiles[k]) {
          const [, S, D] = out.memory.dims, one = out.memory.data, memory = new Float32Array(k * one.length);
          for (let i = 0; i < k; i++) memory.set(one, i * one.length);
          const real = src.map((id) => (id !== m.pad_id ? 1 : 0));
          tiles[k] = {
            memory: new ort.Tensor("float32", memory, [k, S, D]),
            srcMask: new ort.Tensor("bool", Uint8Array.from(Array.from({length: k}, () => real).flat()), [k, src.length]),
          };
        }
        return tiles[k];
      }
      async function step(rows) {
        const t = tile(rows.length);
        // A run hands its inputs over to the worker: the ones kept for the next steps go as copies.
        const copy = (tensor) => new ort.Tensor(tensor.type, tensor.data.slice(), tensor.dims);
        const result = await session.decoder.run({
          tgt: idTensor(ort, rows), memory: copy(t.memory), src_mask: copy(t.srcMask), self_head_mask: copy(selfMask),
          cross_head_mask: copy(crossMask),
        });
        return {logits: result.logits.data, selfAttention: result.self_attention, crossAttention: result.cross_attention};
      }
      const options = { // what greedyDecode and beamSearch need to know of the model
        vocabSize: info.tgt_vocab.length, bos: m.bos_id, eos: m.eos_id, pad: m.pad_id,
        excluded: new Set([m.pad_id, m.bos_id]), maxNewTokens: maxNewTokensFor(info, m, src),
      };
      return {manifest: m, info, step, options, started, encodeMs, encoderAttention: attentionMaps(out.attention, 0)};
    }

    // Greedy decoding of model `name` (or along `forced` tokens), as transformer.decoding.greedy_decode: {src,
    // tokens, logits and probs of each step, attention (every map of the last step), tgt, ended, stepMs, totalMs}.
    async function decode(name, src, masks, maxNewTokens, forced) {
      const encoded = await encode(name, src, masks), budget = maxNewTokens || encoded.options.maxNewTokens;
      const r = await greedyDecode(encoded.step, {...encoded.options, maxNewTokens: budget, forced});
      return {
        src, tokens: r.tokens, logits: r.steps.map((s) => s.logits), probs: r.steps.map((s) => s.probs), tgt: r.tgt,
        ended: r.ended, maxNewTokens: budget,
        attention: {
          encoder: encoded.encoderAttention, decoder: attentionMaps(r.last.selfAttention, 0),
          cross: attentionMaps(r.last.crossAttention, 0),
        },
        encodeMs: encoded.encodeMs, stepMs: r.steps.map((s) => s.ms), totalMs: now() - encoded.started,
      };
    }

    // Beam search of model `name`, as transformer.decoding.beam_search: beamSearch's result with src and totalMs.
    async function beamSearchOf(name, src, masks, beamSize, maxNewTokens, lengthPenalty) {
      const encoded = await encode(name, src, masks), budget = maxNewTokens || encoded.options.maxNewTokens;
      const r = await beamSearch(encoded.step, {
        ...encoded.options, beamSize, maxNewTokens: budget,
        lengthPenalty: lengthPenalty === undefined ? encoded.manifest.beam.length_penalty : lengthPenalty,
      });
      return {src, ...r, maxNewTokens: budget, totalMs: now() - encoded.started};
    }

    // What the page shows for a source: greedy decoding (beamSize 1), or beam search and then its best hypothesis
    // decoded along (for its probabilities and attention maps), with the beam in `beam`.
    async function search(name, src, masks, beamSize) {
      if (beamSize === 1) return decode(name, src, masks);
      const [m, beam] = await Promise.all([manifest(), beamSearchOf(name, src, masks, beamSize)]);
      const r = await decode(name, src, masks, null, beam.tokens);
      const ended = beam.tokens[beam.tokens.length - 1] === m.eos_id ? "eos" : "budget";
      return {...r, beam, ended, maxNewTokens: beam.maxNewTokens, stepMs: beam.stepMs, totalMs: beam.totalMs + r.totalMs};
    }

    // The decoder-only model `name` continuing `prefix` (ids): greedily, or sampled with {temperature, topK, seed}
    // (generate). {prefix, tokens, logits, probs and drawnFrom of each step, attention {decoder: every map of the last
    // step, [L][H][T][T]}, tgt (that step's input row), ended, maxNewTokens, stepMs, totalMs}.
    async function continuation(name, prefix, sampling, maxNewTokens) {
      const [m, session] = await Promise.all([manifest(), sessionsOf(name)]);
      const info = m.models[name], ort = session.ort, V = info.tgt_vocab.length, started = now();
      async function step(row) {
        const result = await session.gpt.run({tokens: idTensor(ort, [row])});
        const T = row.length;
        return {logits: result.logits.data.slice((T - 1) * V, T * V), attention: result.attention};
      }
      const budget = maxNewTokens || continuationBudget(info, prefix);
      const r = await generate(step, {prefix, eos: m.eos_id, maxNewTokens: budget, sampling});
      return {
        src: prefix, prefix, tokens: r.tokens, logits: r.steps.map((s) => s.logits), probs: r.steps.map((s) => s.probs),
        drawnFrom: r.steps.map((s) => s.drawnFrom), tgt: r.row, ended: r.ended, maxNewTokens: budget, sampling,
        attention: {decoder: attentionMaps(r.last.attention, 0)}, stepMs: r.steps.map((s) => s.ms), totalMs: now() - started,
      };
    }

    async function parseSourceOf(name, text) { // the ids the page decodes for a reader's input
      const m = await manifest(), info = m.models[name];
      return isDecoderOnly(info) ? parsePrefix(text, info, m) : parseSource(text, info, m);
    }

    return {
      manifest, prefetch: (name) => graphsOf(name).then(() => undefined),
      prefetchRuntime: () => runtime().then(() => undefined), load, isLoaded, onProgress, progress, timings, decode, beamSearch: beamSearchOf, search,
      continuation, parseSource: parseSourceOf, tokenize,
    };
  }

  return {
    KINDS, KIND_NAMES, MAX_SOURCE_TOKENS, MAX_PADDING, MAX_PREFIX_TOKENS, InputError, translatable, fill, tokenize, normalizeSubwords, preTokenize,
    encodeSubwords, splitWords, decodeSubwords, outputText, parseSource, unfamiliar, readPadding, maxNewTokensFor, logProbs, greedyDecode, beamSearch, lengthPenaltyFactor, allHeads, anySilenced,
    isDecoderOnly, parsePrefix, continuationBudget, readSampling, samplingProbs, seededRandom, sampleNext, generate, createPlayground,
  };
});
