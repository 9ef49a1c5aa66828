"""The Chinese edition (zh/) is complete and in step with the English: every chapter has its twin, whose code is the
English code, character for character, and whose prose translates the English as it is now; every word the code shows
has a translation (scripts/translate.py lists what needs doing; transformer_book.i18n shows it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import translate  # noqa: E402

from transformer_book import i18n  # noqa: E402

CHAPTERS = translate.english_chapters()


@pytest.mark.parametrize("english", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_has_a_current_chinese_translation(english):
    problems = translate.chapter_problems(english)
    assert not problems, "\n".join(map(str, problems)) + "\n(python scripts/translate.py status lists them all)"


def test_every_word_the_code_shows_has_a_chinese_translation():
    problems = translate.catalogue_problems()
    assert not problems, "\n".join(map(str, problems))


def test_the_chinese_table_of_contents_lists_the_english_chapters_in_order_and_the_glossary():
    english = [f for f in translate.toc_files(ROOT)]
    chinese = translate.toc_files(ROOT / "zh")
    assert [f for f in chinese if f != "book/glossary"] == english
    assert "book/glossary" in chinese


def test_the_chinese_configuration_differs_from_the_english_only_where_the_language_does():
    english = yaml.safe_load((ROOT / "_config.yml").read_text())
    chinese = yaml.safe_load((ROOT / "zh" / "_config.yml").read_text())
    for key in ("execute", "parse", "html", "launch_buttons"):
        assert chinese[key] == english[key], key
    assert chinese["repository"] == {**english["repository"], "path_to_book": "zh"}
    language_only = {"language", "html_search_language", "templates_path"}
    assert {k: v for k, v in chinese["sphinx"]["config"].items() if k not in language_only} == {
        k: v for k, v in english["sphinx"]["config"].items() if k not in language_only
    }
    assert chinese["sphinx"]["config"]["language"] == "zh_CN"


def test_a_changed_english_sentence_is_named_with_its_chapter_and_cell(tmp_path, monkeypatch):
    english = CHAPTERS[0]
    chinese = translate.twin(english)
    nb = nbformat.read(english, 4)
    cell = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
    nb.cells[cell].source += "\n\nOne more English sentence."
    (tmp_path / "book").mkdir()
    nbformat.write(nb, tmp_path / "book" / english.name)
    (tmp_path / "zh" / "book").mkdir(parents=True)
    (tmp_path / "zh" / "book" / english.name).write_bytes(chinese.read_bytes())
    monkeypatch.setattr(translate, "ROOT", tmp_path)
    monkeypatch.setattr(translate, "ZH", tmp_path / "zh")
    problems = translate.chapter_problems(tmp_path / "book" / english.name)
    assert [str(p) for p in problems] == [
        f"zh/book/{english.name} cell {cell} (id {nb.cells[cell].id}): the English changed since it was translated: "
        f"{translate.first_line(nb.cells[cell].source)!r}"
    ]


def test_a_template_without_its_translation_shows_english_with_a_warning_or_fails_when_strict(monkeypatch):
    monkeypatch.setattr(i18n, "_language", "zh")
    with pytest.warns(UserWarning, match="no zh translation"):
        assert i18n.tr("An English sentence no catalogue has, {n}.", n=3) == "An English sentence no catalogue has, 3."
    monkeypatch.setenv(i18n.STRICT_ENV, "1")
    with pytest.raises(KeyError, match="scripts/translate.py status"):
        i18n.tr("An English sentence no catalogue has.")


def test_templates_are_filled_in_the_language_set(monkeypatch):
    entries = [entry for _, entry in translate.catalogue_entries()]
    english, chinese = next(((e["en"], e["zh"]) for e in entries if not i18n.fields(e["en"])), (None, None))
    if english is None:
        pytest.skip("no catalogue entry without fields")
    monkeypatch.setattr(i18n, "_language", "zh")
    assert i18n.tr(english) == chinese
    monkeypatch.setattr(i18n, "_language", "en")
    assert i18n.tr(english) == english


def test_the_notebook_language_comes_from_its_metadata_its_folder_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(i18n.LANGUAGE_ENV, raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    folder = tmp_path / "zh" / "book"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    assert i18n.notebook_language() == "zh"
    monkeypatch.chdir(tmp_path)
    assert i18n.notebook_language() == "en"
    notebook = tmp_path / "anywhere.ipynb"
    notebook.write_text(json.dumps({"metadata": {"transformer_book": {"language": "zh"}}, "cells": []}))
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    assert i18n.notebook_language() == "zh"
    monkeypatch.setenv(i18n.LANGUAGE_ENV, "en")
    assert i18n.notebook_language() == "en"


def test_on_colab_the_language_is_read_from_the_open_notebook(monkeypatch, tmp_path):
    import types

    message = types.SimpleNamespace(
        blocking_request=lambda kind, timeout_sec: {"ipynb": {"metadata": {"transformer_book": {"language": "zh"}}}}
    )
    colab = types.ModuleType("google.colab")
    colab._message = message
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.delenv(i18n.LANGUAGE_ENV, raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert i18n.notebook_language() == "zh"


def test_the_words_of_the_pages_scripts_are_read_off_their_source_not_searched_for(tmp_path):
    """book/_ext's scripts are read as JavaScript: a call's English is a string, strings joined by +, or either of a
    condition's; a name's strings are marked where they are written; a comment, a regular expression or a method of
    the same name is no template; English that cannot be read off the source is named with its line."""
    from static_book import words

    script = tmp_path / "page.js"
    script.write_text(
        "// tr(\"in a comment\") and /* tr('in a block') */\n"
        "function tr(text, values) { return text.replace(/\"|'tr(\"no\")'/g, '') / 2; }\n"
        'const NAMES = {a: translatable("encoder self-attention"), b: translatable(\'it\\\'s "quoted"\')};\n'
        'label.textContent = tr("Heatmap of each step; " + "the token chosen: {chosen}", {chosen: tr(", ")});\n'
        'status.textContent = tr(done ? "Decoding…" : "Decoded {n} tokens.", {n}) + `${tr("step")} of ${n}`;\n'
        'throw new InputError("source", "type a few words"); other.tr("a method"); tr(NAMES[kind]);\n'
        'tr(`${n} words`); tr("one " + count);\n',
        encoding="utf-8",
    )
    found, problems = words.script_templates(script)
    assert found == [
        ("encoder self-attention", 3),
        ('it\'s "quoted"', 3),
        ("Heatmap of each step; the token chosen: {chosen}", 4),
        (", ", 4),
        ("Decoding…", 5),
        ("Decoded {n} tokens.", 5),
        ("step", 5),
        ("type a few words", 6),
    ]
    assert [line for line, _ in problems] == [7, 7] and "pass a string" in problems[0][1]


def test_a_word_of_a_page_s_script_without_a_translation_or_a_translation_no_code_asks_for_is_named(
    tmp_path, monkeypatch
):
    """The pages' scripts are checked with the chapters: their English needs a translation in the catalogue, named by
    file and line where it is missing, and a catalogue entry that only a script asked for is named, by file and line,
    once no script does."""
    from static_book import words

    ext = tmp_path / "book" / "_ext"
    ext.mkdir(parents=True)
    (ext / "page.js").write_text('tr("Decode");\n\ntr("A word no catalogue has, {n}", {n});\n', encoding="utf-8")
    with monkeypatch.context() as patch:
        patch.setattr(translate, "ROOT", tmp_path)
        patch.setattr(words, "EXT", ext)
        found = translate.script_templates()
    monkeypatch.setattr(translate, "script_templates", lambda: found)
    problems = [str(p) for p in translate.catalogue_problems()]
    assert "book/_ext/page.js line 3: no zh translation of 'A word no catalogue has, {n}'" in problems
    site = json.loads((translate.LOCALE / "zh" / "site.json").read_text(encoding="utf-8"))
    line = translate.entry_lines(translate.LOCALE / "zh" / "site.json")[[e["en"] for e in site].index("Decoding…")]
    assert f"transformer_book/locale/zh/site.json line {line}: the code no longer shows 'Decoding…'" in problems
    assert not any("'Decode'" in problem for problem in problems)  # still asked for, by page.js


def test_both_editions_build_through_the_same_local_extensions():
    english = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["local_extensions"]
    chinese = yaml.safe_load((ROOT / "zh" / "_config.yml").read_text())["sphinx"]["local_extensions"]
    assert chinese == {name: f"../{path}" for name, path in english.items()}  # zh/_config.yml sits one folder down
