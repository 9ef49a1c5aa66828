"""The playground's engine (book/_ext/playground_engine.js) on its own, in Node: no page, no browser, no build.

Its word tokenizer against the package's (transformer.train.tokenizer.tokenize) on awkward texts, and its subword
tokenizer against SubwordVocabulary (transformer.train.subwords: tokens, ids, unknown characters and decoding back to
text) on awkward texts and a few hundred random ones; how it reads a reader's
source and padding (what it rejects, what it brings into range and says so); its greedy decoding and beam search
against a toy decoder step whose answers can be worked out by hand (the length penalty choosing the longer
hypothesis, finished hypotheses kept apart from the live ones, the early stop, ties, the budget). That the engine
computes what PyTorch does with the book's trained models is tests/site/test_playground_browser.py, in the built page.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.bpe import pre_tokenize
from transformer.train.subwords import SubwordVocabulary
from transformer.train.tokenizer import tokenize
from transformer_book.playground import SUBWORD_TEXTS, TOKENIZER_TEXTS, vocabulary_manifest

ENGINE = Path(__file__).resolve().parents[2] / "book" / "_ext" / "playground_engine.js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="Node is needed (`make setup` installs npm, which brings it)")

# A toy decoder step over ids 0 <pad>, 1 <s>, 2 </s>, 3 a, 4 b, 5 c: the next-token probabilities depend on the last
# token only. After <s>, </s> (0.49) narrowly beats a (0.48); after a, </s> is nearly certain. So greedy decoding
# stops at once, while a beam of 2 also finishes "a </s>", whose length penalty lifts it above "</s>" (alpha 0.6).
TOY = """
const E = require(process.argv[1]);
const P = {1: [0, 0, 0.49, 0.48, 0.02, 0.01], 3: [0, 0, 0.997, 0.001, 0.001, 0.001], 4: [0, 0, 0.5, 0.2, 0.2, 0.1],
           5: [0, 0, 0.25, 0.25, 0.25, 0.25], 2: [0, 0, 0.25, 0.25, 0.25, 0.25], 0: [0, 0, 0.25, 0.25, 0.25, 0.25]};
const calls = [];
function step(rows) {
  calls.push(rows.map((r) => r.slice()));
  const logits = rows.flatMap((r) => P[r[r.length - 1]].map((p) => (p > 0 ? Math.log(p) : -30)));
  return Promise.resolve({logits: Float32Array.from(logits)});
}
const alwaysA = (rows) => Promise.resolve({logits: Float32Array.from(rows.flatMap(() => [0, 0, 0, 10, 0, 0]))});
const options = {vocabSize: 6, bos: 1, eos: 2, pad: 0, excluded: new Set([0, 1])};
"""


def run_node(body: str) -> object:
    """Run ``body`` (JavaScript: an async function body that returns a JSON-able value) with the engine as ``E`` and the
    toy step; return the value."""
    script = (
        TOY + f"(async () => {{ {body} }})().then((v) => process.stdout.write(JSON.stringify(v)), "
        "(e) => { console.error(e.stack); process.exit(1); });"
    )
    done = subprocess.run([NODE, "-e", script, str(ENGINE)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_engine_needs_no_page() -> None:
    names = run_node("return Object.keys(E).sort();")
    assert {"tokenize", "parseSource", "readPadding", "greedyDecode", "beamSearch", "createPlayground"} <= set(names)
    assert "document" not in ENGINE.read_text() and "window" not in ENGINE.read_text()


def test_tokenizer_equals_the_package_s_word_tokenizer_on_awkward_texts() -> None:
    texts = [
        *TOKENIZER_TEXTS,
        "",
        "   ",
        "a_b__c",
        "ⅫⅢ 3rd",
        "١٢ مارس",
        "日本語 テキスト",
        "tab\tand\nnewline\x1cgroup",
        "😀 x",
    ]
    page = run_node(f"return {json.dumps(texts)}.map((t) => E.tokenize(t, 'word'));")
    for text, tokens in zip(texts, page, strict=True):
        assert tokens == tokenize(text, "word"), text
    assert run_node("return E.tokenize('ab c', 'char');") == list("ab c")


@pytest.fixture(scope="module")
def subwords() -> tuple[SubwordVocabulary, dict]:
    """A byte-pair vocabulary of the translation task (learned from 3,000 training pairs) and the manifest entry the
    page gets for it (transformer_book.playground.write_playground)."""
    from transformer.train.translation import translation_pairs

    pairs = translation_pairs(3_000, "train", seed=0)
    vocab = SubwordVocabulary.train([p.english for p in pairs] + [p.german for p in pairs], 500)
    return vocab, vocabulary_manifest(vocab, vocab)


AWKWARD = (  # characters a reader may type that are rare or absent in the pairs, and the ways spaces can be written
    "aZ09 ,.-€£$%:/'\"()äöüÄÖÜßéèÉçñøå\u0301\u0308ΩЖ日本😀\u00a0\u202f\u2009\t\n\u2581\ufeff½²Ⅻ١\u0660_<>&"
)


def random_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` texts of up to 24 characters drawn from :data:`AWKWARD` and the pairs' letters."""
    import random

    rng = random.Random(seed)
    alphabet = AWKWARD + "abcdefghijklmnopqrstuvwxyz     " * 3 + "0123456789"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24))) for _ in range(n)]


def test_subword_tokenizer_equals_the_vocabulary_on_awkward_and_random_texts(subwords) -> None:
    vocab, info = subwords
    texts = [
        *SUBWORD_TEXTS,
        "",
        "   ",
        "\u2581",
        "\u2581\u2581x",
        "<pad> </s>",
        "ＡＢＣ",
        "e\u0301",
        *random_texts(400),
    ]
    page = run_node(
        f"const info = {json.dumps(info)}; "
        f"return {json.dumps(texts)}.map((t) => [E.encodeSubwords(t, info), E.preTokenize(t)]);"
    )
    for text, (encoded, pieces) in zip(texts, page, strict=True):
        expected = {"tokens": vocab.tokenize(text), "ids": vocab.encode(text), "unknown": vocab.unknown(text)}
        assert encoded == expected, f"{text!r}: the page {encoded}, Python {expected}"
        assert encoded["ids"] == vocab.reference_encode(text), text
        assert pieces == pre_tokenize(text), text
    known = [t for t in texts if not vocab.unknown(t)]
    assert len(known) > 100 and any(vocab.unknown(t) for t in texts)  # both kinds of text are tried


def test_subword_decoding_equals_the_vocabulary_s_on_any_ids(subwords) -> None:
    import random

    vocab, info = subwords
    rng = random.Random(0)
    specials = [PAD_ID, BOS_ID, EOS_ID, 3]
    sequences = [
        [rng.choice(specials) if rng.random() < 0.15 else rng.randrange(len(vocab)) for _ in range(rng.randint(0, 12))]
        for _ in range(300)
    ]
    sequences += [vocab.encode(text) for text in SUBWORD_TEXTS]
    page = run_node(
        f"const info = {json.dumps(info)}, m = {json.dumps(MANIFEST)}; "
        f"return {json.dumps(sequences)}.map((ids) => [E.decodeSubwords(ids, info.tgt_vocab, m), "
        "E.outputText(info, m, ids)]);"
    )
    for ids, (text, output) in zip(sequences, page, strict=True):
        assert text == output == vocab.decode(ids), ids


def test_subword_sources_are_parsed_with_their_unknown_characters_and_limits(subwords) -> None:
    vocab, info = subwords
    assert parse("in 5 Tagen ☃", info) == {
        "tokens": vocab.tokenize("in 5 Tagen ☃"),
        "ids": vocab.encode("in 5 Tagen ☃"),
        "unknown": ["☃"],
    }
    assert parse("in 5 Tagen ☃", info)["tokens"][-1] == "<unk>"
    assert parse("  \t ", info) == {"error": "type a few words", "field": "source", "input": True}
    assert parse(" ".join(["9"] * 11), info)["error"] == "at most 20 tokens; got 22"  # a "▁" before every digit


SYMBOLS = {"input": "symbols", "src_vocab": ["<pad>", "<s>", "</s>", "a", "b", "c"]}
WORDS = {"input": "word", "src_vocab": ["<pad>", "<s>", "</s>", "<unk>", "the", "3", "rd"]}
MANIFEST = {"pad_id": 0, "bos_id": 1, "eos_id": 2}


def parse(text: str, info: dict) -> dict:
    return run_node(f"""try {{ return E.parseSource({json.dumps(text)}, {json.dumps(info)}, {json.dumps(MANIFEST)}); }}
      catch (e) {{ return {{error: e.message, field: e.field, input: e instanceof E.InputError}}; }}""")


def test_sources_are_read_as_the_model_s_ids_and_bad_ones_rejected_with_the_reason() -> None:
    assert parse(" a, b  c ", SYMBOLS) == {"ids": [3, 4, 5], "tokens": ["a", "b", "c"], "unknown": []}
    assert parse("The 3RD of", WORDS) == {"ids": [4, 5, 6, 3], "tokens": ["the", "3", "rd", "of"], "unknown": ["of"]}
    rejected = {
        "a x": 'the symbols are a b c; got "x"',
        "a </s>": 'the symbols are a b c; got "</s>"',
        "  ": "type at least one symbol",
        " ".join(["a"] * 21): "at most 20 symbols; got 21",
    }
    for text, message in rejected.items():
        assert parse(text, SYMBOLS) == {"error": message, "field": "source", "input": True}, text
    assert parse(",.", WORDS)["ids"] == [3, 3]  # punctuation is a token: unknown, not an error
    assert parse("", WORDS)["error"] == "type a few words"


@pytest.mark.parametrize(
    ("value", "count", "clamped"),
    [
        ("0", 0, False),
        ("", 0, False),
        (" 4 ", 4, False),
        ("10", 10, False),
        ("99", 10, True),
        ("-3", 0, True),
        ("2.5", 2, True),
        ("1e3", 10, True),
    ],
)
def test_padding_is_brought_into_zero_to_ten_and_says_when_it_was(value: str, count: int, clamped: bool) -> None:
    assert run_node(f"return E.readPadding({json.dumps(value)});") == {
        "count": count,
        "asked": float(value) if value.strip() else 0,
        "clamped": clamped,
    }


def test_padding_that_is_not_a_number_is_rejected() -> None:
    error = run_node("try { E.readPadding('ten'); } catch (e) { return [e.field, e.message]; }")
    assert error == ["padding", 'padding is a whole number from 0 to 10; got "ten"']


def test_log_probabilities_exclude_pad_and_bos_and_sum_to_one() -> None:
    logp = run_node("""return Array.from(E.logProbs(Float32Array.from([5, 7, 1, 2, 3, 0, 9, 9, 9, 9, 9, 9]), 0, 6,
      new Set([0, 1])), (x) => (x === -Infinity ? null : x));""")
    assert logp[:2] == [None, None]
    assert math.isclose(sum(math.exp(x) for x in logp[2:]), 1.0, rel_tol=1e-12)
    assert math.isclose(logp[2] - logp[5], 1.0, rel_tol=1e-6)  # the softmax keeps the logits' differences


def test_greedy_decoding_stops_at_eos_or_at_the_budget_and_can_follow_given_tokens() -> None:
    greedy = run_node("""const r = await E.greedyDecode(step, {...options, maxNewTokens: 5});
      return [r.tokens, r.ended, r.tgt, calls];""")
    assert greedy == [[2], "eos", [1], [[[1]]]]
    forced = run_node("""const r = await E.greedyDecode(step, {...options, maxNewTokens: 5, forced: [3, 2]});
      return [r.tokens, r.ended, r.tgt, r.steps.map((s) => Math.round(s.probs[2] * 1000))];""")
    assert forced == [[3, 2], "forced", [1, 3], [490, 997]]
    budget = run_node("""const r = await E.greedyDecode(alwaysA, {...options, maxNewTokens: 3});
      return [r.tokens, r.ended, r.tgt];""")
    assert budget == [[3, 3, 3], "budget", [1, 3, 3]]


def test_beam_search_lets_the_length_penalty_choose_the_longer_hypothesis() -> None:
    result = run_node("""const r = await E.beamSearch(step, {...options, beamSize: 2, maxNewTokens: 5, lengthPenalty: 0.6});
      return {tokens: r.tokens, score: r.score, hypotheses: r.hypotheses, trace: r.trace, calls};""")
    long, short = math.log(0.48) + math.log(0.997), math.log(0.49)
    assert result["tokens"] == [3, 2] and math.isclose(result["score"], long / (7 / 6) ** 0.6, rel_tol=1e-6)
    # step 1: "</s>" joins the finished list, a and b take the live places; step 2: "a </s>" (penalised) beats it,
    # and no live hypothesis (b a, b b: log 0.02 + log 0.2) can reach it any more, so the search stops
    assert result["trace"]["tokens"] == [[3, 4], [3, 4]] and result["trace"]["parents"] == [[0, 0], [1, 1]]
    assert result["calls"] == [[[1]], [[1, 3], [1, 4]]]
    assert [(h["tokens"], h["length"]) for h in result["hypotheses"]] == [([3, 2], 2), ([2], 1)]
    assert math.isclose(result["hypotheses"][1]["score"], short, rel_tol=1e-6)
    assert result["trace"]["best"] == {"step": 1, "slot": 0, "ended": "eos"}
    unpenalised = run_node("""const r = await E.beamSearch(step, {...options, beamSize: 2, maxNewTokens: 5, lengthPenalty: 0});
      return [r.tokens, r.trace.tokens.length];""")
    assert unpenalised == [[2], 1]  # without the penalty "</s>" (0.49) beats every live hypothesis (a: 0.48) at once
    one = run_node("""const r = await E.beamSearch(step, {...options, beamSize: 1, maxNewTokens: 5, lengthPenalty: 0.6});
      return r.tokens;""")
    assert one == [3, 2]  # a beam of one is not greedy decoding: it keeps "</s>" apart and goes on with a


def test_beam_search_breaks_ties_by_the_lower_id() -> None:
    first = run_node("""const r = await E.beamSearch((rows) => step(rows.map((r) => (r.length === 1 ? [5] : r))),
      {...options, beamSize: 3, maxNewTokens: 1, lengthPenalty: 0.6});
      return r.trace.tokens[0];""")
    assert first == [3, 4, 5]  # after "c" every token is equally likely: a, b, c (the lowest ids but </s>, which
    # leaves for the finished list) take the live places, in order


def test_beam_search_stops_at_the_budget_with_unfinished_hypotheses() -> None:
    result = run_node("""const r = await E.beamSearch(alwaysA, {...options, beamSize: 2, maxNewTokens: 3, lengthPenalty: 0.6});
      return {steps: r.trace.tokens.length, first: [r.hypotheses[0].tokens, r.hypotheses[0].length], best: r.tokens,
              ended: r.trace.best};""")
    # "a a a", still live at the budget, ends there and beats every hypothesis that took </s> (about e^-10 each)
    assert result == {
        "steps": 3,
        "first": [[3, 3, 3], 3],
        "best": [3, 3, 3],
        "ended": {"step": 2, "slot": 0, "ended": "budget"},
    }


# ----------------------------------------------------------------------------------------------------------------
# The decoder-only model: its prefix, the distribution it samples from (transformer.decoding.sampling_probs), its
# seeded draws and its continuation against the toy step


def test_sampling_probs_are_transformer_decoding_s_with_ties_at_the_k_th_kept() -> None:
    import torch

    from transformer.decoding import sampling_probs

    rows = [[2.0, 1.0, 1.0, 0.0, -1.0], [0.5, -3.0, 0.25, 7.0, 0.5], [0.0, 0.0, 0.0, 0.0, 0.0]]
    settings = [(1.0, None), (0.5, 2), (2.0, 1), (0.7, 3), (3.0, 5)]
    page = run_node(
        f"return {json.dumps(rows)}.flatMap((row) => {json.dumps(settings)}.map(([t, k]) =>"
        " Array.from(E.samplingProbs(Float32Array.from(row), t, k))));"
    )
    expected = [sampling_probs(torch.tensor([row]), t, k)[0].tolist() for row in rows for t, k in settings]
    assert len(page) == len(expected)
    for got, want in zip(page, expected, strict=True):
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 1e-6, (got, want)


def test_seeded_draws_repeat_follow_the_distribution_and_never_pick_a_token_of_probability_zero() -> None:
    counts, again, other = run_node(
        """const p = [0, 0.5, 0.2, 0, 0.3], counts = [0, 0, 0, 0, 0];
        const draw = (seed, n) => { const r = E.seededRandom(seed); return Array.from({length: n}, () => E.sampleNext(p, r())); };
        draw(7, 20000).forEach((i) => counts[i]++);
        return [counts, JSON.stringify(draw(3, 50)) === JSON.stringify(draw(3, 50)),
                JSON.stringify(draw(3, 50)) === JSON.stringify(draw(4, 50))];"""
    )
    assert counts[0] == counts[3] == 0
    assert all(abs(c / 20000 - p) < 0.015 for c, p in zip(counts, [0, 0.5, 0.2, 0, 0.3], strict=True))
    assert again and not other


def test_a_continuation_is_greedy_or_sampled_stops_at_eos_and_top_1_sampling_is_greedy() -> None:
    greedy, top1, budget, hot = run_node(
        """const logits = (last) => Float32Array.from(P[last].map((p) => Math.log(p || 1e-9)));
        const gstep = (row) => Promise.resolve({logits: logits(row[row.length - 1])});
        const go = (sampling, n = 6) => E.generate(gstep, {prefix: [4], eos: 2, maxNewTokens: n, sampling});
        const g = await go(null), t = await go({temperature: 5, topK: 1, seed: 9}), b = await go(null, 1);
        const h = await go({temperature: 2, topK: null, seed: 1}, 20);
        return [[g.tokens, g.ended, g.row], t.tokens, [b.tokens, b.ended], [h.tokens, h.ended]];"""
    )
    assert greedy == [[2], "eos", [4]]  # after b, </s> (0.5) is the most probable
    assert top1 == greedy[0]
    assert budget == [[2], "eos"]
    tokens, ended = hot
    assert (tokens[-1] == 2) == (ended == "eos") and 2 not in tokens[:-1]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "type at least one symbol"),
        ("a <pad> b", 'the tokens are <s> </s> a b c; got "<pad>"'),
        ("a <s> x", 'the tokens are <s> </s> a b c; got "x"'),
    ],
)
def test_a_prefix_is_read_as_symbols_and_the_separator_and_bad_ones_rejected(text: str, error: str) -> None:
    got = run_node(
        f"""const info = {{kind: "decoder-only", tgt_vocab: ["<pad>", "<s>", "</s>", "a", "b", "c"]}};
        const m = {{pad_id: 0, bos_id: 1, eos_id: 2}};
        try {{ return E.parsePrefix({json.dumps(text)}, info, m); }}
        catch (e) {{ return {{error: e.message, field: e.field}}; }}"""
    )
    assert got == {"error": error, "field": "source"}


def test_a_prefix_of_the_separator_and_a_copy_start_is_read_and_sampling_fields_checked() -> None:
    parsed, bad_t, bad_k, ok = run_node(
        """const info = {kind: "decoder-only", tgt_vocab: ["<pad>", "<s>", "</s>", "a", "b", "c"]};
        const m = {pad_id: 0, bos_id: 1, eos_id: 2};
        const fails = (f) => { try { f(); return null; } catch (e) { return [e.field, e.message]; } };
        return [E.parsePrefix(" a, b  <s> a ", info, m).ids, fails(() => E.readSampling("0", "", 6)),
                fails(() => E.readSampling("1", "7", 6)), E.readSampling("", "", 6)];"""
    )
    assert parsed == [3, 4, 1, 3]
    assert bad_t == ["temperature", 'temperature must be a positive number; got "0"']
    assert bad_k[0] == "top-k" and "from 1 to 6" in bad_k[1]
    assert ok == {"temperature": 1, "topK": None}
