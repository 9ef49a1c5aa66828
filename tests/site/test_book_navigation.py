"""The chapter menu of the built book opens and closes, on a phone and on a laptop, in headless Chromium.

pydata-sphinx-theme 0.17 binds its sidebar toggle to a hidden button (pydata/pydata-sphinx-theme#2451); the book's
extension forwards the visible one's clicks (``NAV_JS`` in book/_ext/static_book/pages.py). Needs the built site, as
tests/site/test_book_browser.py does, whose server and browser this test shares."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from chromium import SITE, edition_pages

PHONE, LAPTOP = {"width": 390, "height": 844}, {"width": 1280, "height": 900}
PAGE = "book/02_embeddings.html"

pytestmark = pytest.mark.skipif(not (SITE / "index.html").is_file(), reason="the book is not built: run `make book`")


def _visible_toggle(page: object) -> object:
    """The one ☰ a reader can see (the theme renders two)."""
    toggles = [t for t in page.query_selector_all(".primary-toggle") if t.is_visible()]
    assert len(toggles) == 1, f"expected one visible chapter-menu button, found {len(toggles)}"
    return toggles[0]


@pytest.fixture(scope="module")
def chapter(browser: object, server: tuple) -> Iterator[Callable[[dict], object]]:  # noqa: F811
    """The chapter at a screen size, in one tab per size that this file's tests share: loading the chapter is most of
    a test's time. The tab is loaded again only when a test left the chapter (the search, last in the file, does)."""
    contexts = {}

    def open_at(viewport: dict) -> object:
        size = (viewport["width"], viewport["height"])
        if size not in contexts:
            contexts[size] = browser.new_context(viewport=viewport)
            contexts[size].new_page()
        page = contexts[size].pages[0]
        if page.url != f"{server[0]}/{PAGE}":
            page.goto(f"{server[0]}/{PAGE}", wait_until="load")
        return page

    yield open_at
    for context in contexts.values():
        context.close()


def test_the_chapter_menu_opens_and_closes_on_a_phone(chapter: Callable[[dict], object]) -> None:
    page = chapter(PHONE)
    modal = page.locator("#pst-primary-sidebar-modal")
    assert not modal.evaluate("d => d.open")
    _visible_toggle(page).click()
    page.wait_for_function("document.querySelector('#pst-primary-sidebar-modal').open")
    chapters = modal.locator("a.reference.internal")
    assert chapters.count() >= 10, "the opened menu lists the chapters"
    assert chapters.first.is_visible()
    page.keyboard.press("Escape")
    page.wait_for_function("!document.querySelector('#pst-primary-sidebar-modal').open")


def test_the_chapter_menu_hides_and_shows_on_a_laptop(chapter: Callable[[dict], object]) -> None:
    page = chapter(LAPTOP)
    sidebar = page.locator("#pst-primary-sidebar")
    assert sidebar.is_visible(), "the chapter list starts open on a laptop"
    toggle = _visible_toggle(page)
    toggle.click()
    # Hidden on wide screens means visibility: hidden after a transition, which Playwright's visibility counts.
    sidebar.wait_for(state="hidden")
    toggle.click()
    sidebar.wait_for(state="visible")


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_one_search_box_and_it_opens_the_search(chapter: Callable[[dict], object], viewport: dict) -> None:
    page = chapter(viewport)
    searches = [
        s
        for s in page.query_selector_all(".search-button__button, form.bd-search")
        if s.evaluate("e => e.checkVisibility({visibilityProperty: true})")
    ]
    assert len(searches) == 1, f"expected one visible search box or button, found {len(searches)}"
    searches[0].click()
    page.wait_for_function("document.querySelector('#pst-search-dialog').open")
    page.keyboard.type("attention")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search.html?q=attention*")
    page.wait_for_selector("#search-results li", timeout=15_000)
    # Each result quotes the page found: its own text, not the theme's toolbar ("....pdf Attention Contents ...").
    page.wait_for_selector("#search-results li p.context", timeout=15_000)
    snippets = [" ".join(t.split()) for t in page.locator("#search-results li p.context").all_text_contents()]
    toolbar = [t[:60] for t in snippets if re.match(r"\W*(\.ipynb|\.pdf|\.md|Contents)\b", t) or " Contents " in t[:80]]
    assert snippets and not toolbar, f"search results quote the page's toolbar: {toolbar}"


def test_every_page_links_to_the_same_page_in_the_other_edition() -> None:
    """Each chapter of either edition has a language switch whose link opens the same chapter in the other (the
    Chinese glossary, which the English lacks, opens the English book's start)."""
    for name in edition_pages():
        page = SITE / f"{name}.html"
        link = re.search(
            r'<nav class="book-language"[^>]*><a href="([^"]+)" hreflang="([^"]+)"', page.read_text("utf-8")
        )
        assert link, f"{name}: no link to the other edition"
        target = (page.parent / link[1]).resolve()
        assert target.is_file(), f"{name}: its language switch points at {link[1]}, which was not built"
        twin = name.removeprefix("zh/") if name.startswith("zh/") else f"zh/{name}"
        expected = SITE / ("index" if name == "zh/book/glossary" else twin)
        assert target == expected.with_suffix(".html").resolve(), f"{name}: the switch opens {target}"
        assert link[2] == ("en" if name.startswith("zh/") else "zh-CN")


def test_the_language_switch_opens_the_chinese_chapter_and_comes_back(chapter: Callable[[dict], object]) -> None:
    page = chapter(PHONE)
    switch = page.get_by_role("navigation", name="Language / 语言").get_by_role("link")
    assert switch.inner_text() == "中文"
    switch.click()
    page.wait_for_url(f"**/zh/{PAGE}")
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    assert "嵌入" in page.locator("h1").first.inner_text()
    page.get_by_role("navigation", name="Language / 语言").get_by_role("link").click()
    page.wait_for_url(f"**/{PAGE}")
    assert "/zh/" not in page.url


def test_the_chinese_search_finds_chinese_words(chapter: Callable[[dict], object], server: tuple) -> None:  # noqa: F811
    """The Chinese edition's index is split into words (jieba): a two-character word finds the chapters about it."""
    page = chapter(LAPTOP)
    page.goto(f"{server[0]}/zh/search.html?q=掩码", wait_until="load")
    page.wait_for_selector("#search-results li", timeout=15_000)
    found = page.locator("#search-results li a").all_text_contents()
    assert any("掩码" in title for title in found), f"searching 掩码 found {found}"


def test_the_chinese_pages_open_the_chinese_notebooks_on_colab() -> None:
    """The rocket's Colab link of a Chinese page opens that page's notebook under zh/ of the repository."""
    for name in edition_pages():
        if not name.startswith("zh/book/") or name == "zh/book/glossary":
            continue
        links = set(
            re.findall(r'https://colab\.research\.google\.com/github/[^"]+', (SITE / f"{name}.html").read_text("utf-8"))
        )
        assert links and all(link.endswith(f"/blob/main/{name}.ipynb") for link in links), (
            f"{name}: Colab opens {links}"
        )
