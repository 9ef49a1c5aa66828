"""The chapter menu of the built book opens and closes, on a phone and on a laptop, in headless Chromium.

pydata-sphinx-theme 0.17 binds its sidebar toggle to a hidden button (pydata/pydata-sphinx-theme#2451); the book's
extension forwards the visible one's clicks (``NAV_JS`` in book/_ext/offline_assets.py). Needs the built site, as
tests/test_book_browser.py does, whose server and browser this test shares."""

from __future__ import annotations

import pytest
from test_book_browser import SITE, browser, server  # noqa: F401  (pytest fixtures)

PHONE, LAPTOP = {"width": 390, "height": 844}, {"width": 1280, "height": 900}
PAGE = "book/02_embeddings.html"

pytestmark = pytest.mark.skipif(not (SITE / "index.html").is_file(), reason="the book is not built: run `make book`")


def _visible_toggle(page: object) -> object:
    """The one ☰ a reader can see (the theme renders two)."""
    toggles = [t for t in page.query_selector_all(".primary-toggle") if t.is_visible()]
    assert len(toggles) == 1, f"expected one visible chapter-menu button, found {len(toggles)}"
    return toggles[0]


def _open_page(browser: object, url: str, viewport: dict) -> tuple[object, object]:  # noqa: F811
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.goto(url, wait_until="load")
    return context, page


def test_the_chapter_menu_opens_and_closes_on_a_phone(browser: object, server: tuple) -> None:  # noqa: F811
    context, page = _open_page(browser, f"{server[0]}/{PAGE}", PHONE)
    try:
        modal = page.locator("#pst-primary-sidebar-modal")
        assert not modal.evaluate("d => d.open")
        _visible_toggle(page).click()
        page.wait_for_function("document.querySelector('#pst-primary-sidebar-modal').open")
        chapters = modal.locator("a.reference.internal")
        assert chapters.count() >= 10, "the opened menu lists the chapters"
        assert chapters.first.is_visible()
        page.keyboard.press("Escape")
        page.wait_for_function("!document.querySelector('#pst-primary-sidebar-modal').open")
    finally:
        context.close()


def test_the_chapter_menu_hides_and_shows_on_a_laptop(browser: object, server: tuple) -> None:  # noqa: F811
    context, page = _open_page(browser, f"{server[0]}/{PAGE}", LAPTOP)
    try:
        sidebar = page.locator("#pst-primary-sidebar")
        assert sidebar.is_visible(), "the chapter list starts open on a laptop"
        toggle = _visible_toggle(page)
        toggle.click()
        # Hidden on wide screens means visibility: hidden after a transition, which Playwright's visibility counts.
        sidebar.wait_for(state="hidden")
        toggle.click()
        sidebar.wait_for(state="visible")
    finally:
        context.close()


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_one_search_box_and_it_opens_the_search(browser: object, server: tuple, viewport: dict) -> None:  # noqa: F811
    context, page = _open_page(browser, f"{server[0]}/{PAGE}", viewport)
    try:
        searches = [
            s for s in page.query_selector_all(".search-button__button, form.bd-search")
            if s.evaluate("e => e.checkVisibility({visibilityProperty: true})")
        ]
        assert len(searches) == 1, f"expected one visible search box or button, found {len(searches)}"
        searches[0].click()
        page.wait_for_function("document.querySelector('#pst-search-dialog').open")
        page.keyboard.type("attention")
        page.keyboard.press("Enter")
        page.wait_for_url("**/search.html?q=attention*")
        page.wait_for_selector("#search-results li", timeout=15_000)
    finally:
        context.close()
