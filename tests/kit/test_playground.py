"""The playground's reference values (transformer_book.playground) are what the package computes: greedy_decode's
tokens, the teacher-forced logits of those steps, the attention maps and beam_search's best hypothesis, with heads
silenced by the package's ablation; and the vocabulary's own tokenization. For the decoder-only model: GPT.generate's
continuation, its logits and maps, top-1 sampling equal to it, and the distribution sampling_probs gives
(transformer_book.playground_gpt). The page's side is tests/site/test_playground_browser.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from transformer import Transformer, beam_search, greedy_decode
from transformer.decoding import sampling_probs
from transformer.tokens import BOS_ID, EOS_ID, PAD_ID
from transformer.train.recipes import small_model_config
from transformer.train.subwords import SubwordVocabulary
from transformer.train.tokenizer import UNK_ID, Vocabulary
from transformer.train.translation import translation_train_config
from transformer_book.ablation import ablate_heads
from transformer_book.descendants import GPT, small_gpt_config
from transformer_book.playground import (
    BEAM_SIZE,
    LENGTH_PENALTY,
    PLAYGROUND_ENV,
    PlaygroundModel,
    default_max_new_tokens,
    first_effective_ablation,
    head_masks,
    playground_dir,
    playground_html,
    playground_translation_train_config,
    reference_case,
    reference_cases,
    tokenizer_cases,
    vocabulary_manifest,
    write_playground,
)
from transformer_book.playground_gpt import PlaygroundGPT, default_continuation, gpt_reference_case


def test_playground_translator_is_the_translation_recipe_cut_short():
    full, short = translation_train_config(), playground_translation_train_config()
    assert (short.steps, short.batch_size, short.eval_every) == (1500, 32, 1500)
    assert dataclasses.replace(short, steps=full.steps, batch_size=full.batch_size, eval_every=full.eval_every) == full
    assert playground_translation_train_config(steps=10).steps == 10


@pytest.fixture(scope="module")
def model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(small_model_config(d_model=32, n_heads=4, d_ff=64)).eval()  # four heads, as the masks below


def test_reference_case_holds_greedy_decode_tokens_their_logits_and_every_map(model: Transformer) -> None:
    src = [3, 5, 7, 9, 0, 0]
    case = reference_case(model, src)
    source = torch.tensor([src])
    tokens = greedy_decode(model, source, default_max_new_tokens(src))[0].tolist()
    assert case["tokens"] == (tokens[: tokens.index(EOS_ID) + 1] if EOS_ID in tokens else tokens)
    assert case["max_new_tokens"] == 4 + 2
    tgt = torch.tensor([[BOS_ID, *case["tokens"][:-1]]])
    with torch.no_grad():
        expected = model(source, tgt)[0]
    assert torch.allclose(torch.tensor(case["logits"]), expected, atol=1e-6)
    T, S = len(case["tokens"]), len(src)
    shapes = {"encoder": (2, 4, S, S), "decoder": (2, 4, T, T), "cross": (2, 4, T, S)}
    assert {kind: tuple(torch.tensor(maps).shape) for kind, maps in case["attention"].items()} == shapes
    assert torch.tensor(case["attention"]["encoder"])[..., 4:].abs().max() == 0  # padding keys get no weight


def test_silenced_reference_is_the_ablated_model_and_its_masks_say_which_heads(model: Transformer) -> None:
    src, silenced = [4, 6, 8, 10, 12], {("cross", 1): [0, 2], ("encoder", 0): [3]}
    case = reference_case(model, src, silenced)
    with ablate_heads(model, silenced), torch.no_grad():
        expected = model(torch.tensor([src]), torch.tensor([[BOS_ID, *case["tokens"][:-1]]]))[0]
    assert torch.allclose(torch.tensor(case["logits"]), expected, atol=1e-6)
    assert case["head_mask"]["cross"] == [[1.0] * 4, [0.0, 1.0, 0.0, 1.0]]
    assert case["head_mask"]["encoder"][0] == [1.0, 1.0, 1.0, 0.0]
    assert case["head_mask"]["decoder"] == head_masks(model)["decoder"] == [[1.0] * 4] * 2
    assert all(layer.cross_attn.head_mask is None for layer in model.decoder.layers)  # restored


@pytest.mark.parametrize("src", [[], [0, 3], [3, 13]])
def test_reference_case_rejects_sources_it_cannot_decode(model: Transformer, src: list[int]) -> None:
    with pytest.raises(ValueError, match=r"src must be non-empty ids in \[0, 13\) not starting with padding; got"):
        reference_case(model, src)


def test_the_static_build_names_the_folder_and_the_html_names_the_models(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(PLAYGROUND_ENV, str(tmp_path))
    assert playground_dir() == tmp_path
    monkeypatch.delenv(PLAYGROUND_ENV)
    assert playground_dir().is_dir() and playground_dir() != tmp_path
    html = playground_html(["copy", "reverse"])
    assert 'class="transformer-playground" data-models="copy reverse"' in html


def test_the_book_extension_reruns_playground_notebooks_whose_models_are_missing(tmp_path) -> None:
    """CI keeps only jupyter-cache between runs: a cached playground notebook would leave its page without models."""
    from types import SimpleNamespace

    import nbformat
    from jupyter_cache import get_cache
    from static_book import playground

    (tmp_path / "book").mkdir()
    notebooks = {}
    for name, code in (("play", "write_playground(models, folder, sources)"), ("other", "print(1)")):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        notebooks[name] = tmp_path / "book" / f"{name}.ipynb"
        nbformat.write(nb, notebooks[name])
    cache = get_cache(tmp_path / "cache")
    for path in notebooks.values():
        cache.cache_notebook_file(str(path), check_validity=False)
    app = SimpleNamespace(
        builder=SimpleNamespace(format="html"),
        outdir=str(tmp_path / "html"),
        srcdir=str(tmp_path),
        env=SimpleNamespace(mystnb_config=SimpleNamespace(execution_cache_path=str(tmp_path / "cache"))),
    )
    (tmp_path / "html" / playground.PLAYGROUND_OUT).mkdir(parents=True)
    (tmp_path / "html" / playground.PLAYGROUND_OUT / "manifest.json").write_text("{}")
    playground._rerun_playground_without_models(app)  # the models are there: the cache stays
    assert len(cache.list_cache_records()) == 2
    (tmp_path / "html" / playground.PLAYGROUND_OUT / "manifest.json").unlink()
    playground._rerun_playground_without_models(app)
    assert [Path(r.uri).name for r in cache.list_cache_records()] == ["other.ipynb"]


def test_reference_case_holds_beam_search_best_hypothesis_and_score(model: Transformer) -> None:
    src = [3, 5, 7, 9, 11, 0]
    case = reference_case(model, src, max_new_tokens=5)
    tokens, score = beam_search(model, torch.tensor([src]), BEAM_SIZE, 5, LENGTH_PENALTY)
    assert case["beam"] == {
        "size": BEAM_SIZE,
        "length_penalty": LENGTH_PENALTY,
        "tokens": tokens[0].tolist(),
        "score": pytest.approx(float(score[0])),
    }
    assert case["max_new_tokens"] == 5 and len(case["tokens"]) <= 5


def test_reference_cases_end_with_the_first_source_ablated_where_the_output_changes(model: Transformer) -> None:
    entry = PlaygroundModel(model, [[3, 5, 7, 9], [4, 6, 0]])
    cases = reference_cases(entry)
    assert [c["src"] for c in cases] == [[3, 5, 7, 9], [4, 6, 0], [3, 5, 7, 9]]
    silenced = first_effective_ablation(model, [3, 5, 7, 9])
    assert cases[-1]["silenced"] == [[kind, layer, heads] for (kind, layer), heads in silenced.items()]
    assert cases[-1]["tokens"] != cases[0]["tokens"]


def test_playground_model_shows_text_models_in_their_vocabularies_and_checks_them() -> None:
    source, target = Vocabulary.build(["the third of May"]), Vocabulary.build(["2001-05-03"], level="char")
    torch.manual_seed(0)
    model = Transformer(small_model_config(src_vocab_size=len(source), tgt_vocab_size=len(target), d_model=32, d_ff=64))
    entry = PlaygroundModel(model, [source.encode("the third of may")], source, target, max_new_tokens=11)
    assert entry.labels("source") == source.itos and entry.labels("target") == target.itos
    assert entry.text(entry.sources[0]) == "the third of may"
    assert entry.text(target.encode("2001-05-03"), "target") == "2001-05-03"
    with pytest.raises(ValueError, match="give both source_vocab and target_vocab"):
        PlaygroundModel(model, [[4]], source)
    with pytest.raises(ValueError, match=r"reads and writes one vocabulary; this one has 8 source and 10 target ids"):
        PlaygroundModel(model, [[4]])
    with pytest.raises(ValueError, match=r"must match the model's embeddings \(8, 10\); got \(10, 8\)"):
        PlaygroundModel(model, [[4]], target, source)
    assert PlaygroundModel(model, [[4]], source, target, trained_source_tokens=(4, 4)).trained_source_tokens == (4, 4)
    for lengths in ((0, 5), (6, 5), (3,)):
        with pytest.raises(ValueError, match=r"must be \(shortest, longest\) with 1 <= shortest <= longest; got"):
            PlaygroundModel(model, [[4]], source, target, trained_source_tokens=lengths)


def test_tokenizer_cases_are_the_vocabulary_s_tokens_and_ids_unknown_words_as_unk() -> None:
    vocab = Vocabulary.build(["the third of May, 2001"])
    (case,) = tokenizer_cases(vocab, ["The THIRD of Mai,2001"])
    assert case["tokens"] == ["the", "third", "of", "mai", ",", "2", "0", "0", "1"]
    assert case["ids"] == vocab.encode("the third of mai, 2001") and case["ids"][3] == UNK_ID
    assert PAD_ID not in case["ids"]


def test_the_manifest_gives_the_page_each_vocabulary_s_kind_tokens_and_merges() -> None:
    words, chars = Vocabulary.build(["the third of May"]), Vocabulary.build(["2001-05-03"], level="char")
    assert vocabulary_manifest(words, chars) == {
        "input": "word",
        "output": "char",
        "src_vocab": words.itos,
        "tgt_vocab": chars.itos,
    }
    subwords = SubwordVocabulary.train(["drei hundert", "three hundred", "dreihundert"], 130)
    info = vocabulary_manifest(subwords, subwords)
    assert (info["input"], info["output"]) == ("subword", "subword")
    assert info["src_vocab"] == info["tgt_vocab"] == subwords.itos
    assert [tuple(m) for m in info["merges"]] == subwords.merges and info["merges"]  # in the order they were learned


def test_subword_tokenizer_cases_hold_tokens_ids_and_the_text_decoded_back() -> None:
    vocab = SubwordVocabulary.train(["drei hundert", "three hundred"], 120)
    (case,) = tokenizer_cases(vocab, ["  THREE   hundred ☃ "])
    assert case["ids"] == vocab.encode("  THREE   hundred ☃ ") and UNK_ID in case["ids"]
    assert case["tokens"] == vocab.tokenize("  THREE   hundred ☃ ") and "<unk>" in case["tokens"]
    assert case["decoded"] == "THREE hundred <unk>"  # spaces normalised, the unknown character shown as <unk>


# ----------------------------------------------------------------------------------------------------------------
# The decoder-only model


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    return GPT(small_gpt_config(n_layers=2)).eval()


def test_gpt_reference_is_generate_s_continuation_its_logits_maps_and_sampling_distribution(gpt) -> None:
    prefix = [3, 5, 7, BOS_ID]
    case = gpt_reference_case(gpt, prefix, (0.5, 2))
    budget = default_continuation(gpt, prefix)
    generated = gpt.generate(torch.tensor([prefix]), budget)[0].tolist()
    assert case["max_new_tokens"] == budget == len(prefix) + 2
    assert case["tokens"] == (generated[: generated.index(EOS_ID) + 1] if EOS_ID in generated else generated)
    assert case["top_1"] == case["tokens"]
    row = torch.tensor([[*prefix, *case["tokens"][:-1]]])
    with torch.no_grad():
        logits = gpt(row)[0, len(prefix) - 1 :]
        maps = gpt.attention_maps(row)
    assert torch.allclose(torch.tensor(case["logits"]), logits, atol=1e-5)
    assert torch.equal(torch.tensor(case["logits"]).argmax(-1), torch.tensor(case["tokens"]))  # each step's argmax
    assert torch.allclose(torch.tensor(case["probs"]), logits[0].softmax(-1), atol=1e-6)
    expected = sampling_probs(logits[:1], 0.5, 2)[0]
    assert torch.allclose(torch.tensor(case["sampling"]["probs"]), expected, atol=1e-6)
    assert (torch.tensor(case["sampling"]["probs"]) > 0).sum() >= 2
    assert len(case["attention"]["decoder"]) == 2
    assert torch.allclose(torch.tensor(case["attention"]["decoder"][1]), maps[1][0], atol=1e-6)


def test_gpt_reference_rejects_padding_and_ids_outside_the_vocabulary(gpt) -> None:
    for prefix in ([], [3, PAD_ID, 4], [3, 13]):
        with pytest.raises(ValueError, match="prefix must be non-empty ids in"):
            gpt_reference_case(gpt, prefix)


def test_a_gpt_entry_is_exported_as_one_graph_with_its_manifest_entry(gpt, tmp_path) -> None:
    with pytest.raises(TypeError, match="model must be a transformer_book.descendants.GPT"):
        PlaygroundGPT(torch.nn.Linear(2, 2), [[3, BOS_ID]])
    with pytest.raises(ValueError, match="temperature must be a positive finite number"):
        PlaygroundGPT(gpt, [[3, BOS_ID]], sampling=(0.0, None))
    entry = PlaygroundGPT(gpt, [[3, 4, BOS_ID]], trained_source_tokens=(1, 10), label="a GPT")
    manifest = write_playground({"gpt": entry}, tmp_path)
    info = manifest["models"]["gpt"]
    assert sorted(p.name for p in (tmp_path / "gpt").iterdir()) == ["gpt.onnx", "reference.json"]
    assert info["kind"] == "decoder-only" and info["examples"] == ["3 4 <s>"] and info["separator"] == "<s>"
    assert info["layers"] == {"encoder": 0, "decoder": 2, "cross": 0} and info["tgt_vocab"][BOS_ID] == "<s>"
    assert json.loads((tmp_path / "gpt" / "reference.json").read_text())["cases"][0]["prefix"] == [3, 4, BOS_ID]
