"""The theme's pages, made to work for a reader: the book's stylesheet, icons drawn once, sidebar toggles that open,
tables that show they scroll, search results that quote each page's own text, toggles of hidden cells named by the
words they show, and a real page for the site's ``index.html``.

- ``book.css`` (in ``book/_ext``, copied to ``_static/``) on every page: outputs and inline code wrap instead of
  widening the page, and the rest of the book's own style.
- :data:`ICONS_JS`, :data:`NAV_JS` and :data:`SCROLL_HINT_JS` on every page, :data:`SEARCH_JS` on the search page
  (each says why).
- Scripts that Sphinx lists twice are listed once (:func:`_dedupe_scripts`).
- After the build: the toggle of a hidden cell is named by the words it shows (:data:`HIDDEN_CELL_TOGGLE`), and the
  site's ``index.html``, Jupyter Book's bare redirect to the first chapter, gets a title and a link to follow.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from sphinx.application import Sphinx

from transformer_book.i18n import translatable

from .editions import edition, translated
from .output import copy_to_static, is_html, rewrite_pages

STYLESHEET = "book.css"  # in book/_ext, copied to _static/

# pydata-sphinx-theme 0.17 and sphinx-book-theme 1.3 bind their sidebar toggles with document.querySelector, i.e. to
# the first ".primary-toggle" (".secondary-toggle") of the page: the header's, which the book theme hides. The ☰ a
# reader sees, in the article's header, got no handler, so the chapter list could not be opened, on a phone not at
# all (pydata/pydata-sphinx-theme#2451). Forward its clicks to the bound button: at >= 992 px the book theme's handler
# shows or hides the sidebar, below it the pydata theme's opens the sidebar as a dialog.
NAV_JS = """document.addEventListener("DOMContentLoaded", function () {
  ["primary", "secondary"].forEach(function (side) {
    var buttons = Array.prototype.slice.call(document.querySelectorAll("." + side + "-toggle"));
    buttons.slice(1).forEach(function (button) {
      button.addEventListener("click", function (event) {
        event.preventDefault();
        event.stopPropagation();
        buttons[0].click();
      });
    });
  });
});"""


# pydata-sphinx-theme's icons are Font Awesome's JavaScript, which draws each <i class="fa-..."> of the page as an SVG
# once the page is parsed and then watches every change to the page for new ones: each of the thousands of elements
# that plotly.js adds and moves while it draws a figure went through its observer (about a tenth of a chapter's
# scripting). The book's icons are all in the page when it loads, so they are drawn then, and not watched for after.
ICONS_JS = "window.FontAwesomeConfig = {observeMutations: false};"


# A table (or a code block) wider than the column scrolls sideways inside its box, which only shows a cut edge: while
# more of it lies to the right, the box carries "book-scrolls-more" and book.css fades its right edge, so the cut
# reads as "there is more" (the box is a stop of the Tab key, whose arrow keys scroll it).
SCROLL_HINT_JS = """document.addEventListener("DOMContentLoaded", function () {
  var boxes = document.querySelectorAll(
    ".bd-article .pst-scrollable-table-container, .bd-article .book-table, .bd-article div.highlight pre");
  function mark(box) {
    box.classList.toggle("book-scrolls-more", box.scrollWidth - box.clientWidth - box.scrollLeft > 1);
  }
  boxes.forEach(function (box) {
    mark(box);
    box.addEventListener("scroll", function () { mark(box); }, {passive: true});
  });
  window.addEventListener("resize", function () { boxes.forEach(mark); });
});"""


# Sphinx's search shows a few lines of each page it finds, taken from the page's [role="main"], which in this theme
# also holds the article's toolbar (download buttons), the page's table of contents for printing ("Contents") and the
# links to the previous and next chapters, so every snippet started "....pdf Attention Contents". The search page
# drops the theme's frame from each page before Sphinx reads it.
SEARCH_CHROME = (
    ".bd-header-article, .bd-sidebar-secondary, .onlyprint, .prev-next-area, .bd-footer-article, .bd-footer-content"
)
SEARCH_JS = """(function () {
  function withoutChrome() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.bookChrome) return;
    var htmlToText = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll("__CHROME__").forEach(function (el) { el.remove(); });
      return htmlToText(doc.documentElement.outerHTML, anchor);
    };
    Search.htmlToText.bookChrome = true;
  }
  withoutChrome();
  document.addEventListener("DOMContentLoaded", withoutChrome);
})();""".replace("__CHROME__", SEARCH_CHROME)


def _copy_stylesheet(app: Sphinx) -> None:
    if is_html(app):
        copy_to_static(app, STYLESHEET)


def _add_nav_js(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    app.add_js_file(None, body=ICONS_JS, priority=900)
    app.add_js_file(None, body=NAV_JS, priority=900)
    app.add_js_file(None, body=SCROLL_HINT_JS, priority=900)
    if pagename == "search":
        app.add_js_file(None, body=SEARCH_JS, priority=900)


def _dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    # Sphinx 7.4 with Jupyter Book 1 repeats some inline scripts (sphinx-thebe's `const THEBE_JS_URL = ...`, a
    # SyntaxError the second time), once with filename None and once ''; keep the first of identical entries.
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for js in scripts:
        attributes = getattr(js, "attributes", {})
        key = (str(getattr(js, "filename", js) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


# myst-nb's toggle of a hidden cell says "Show code cell source" but names itself "Toggle hidden content" for
# screen readers, so a reader who says what they see (voice control) cannot press it: its own words are its name.
HIDDEN_CELL_TOGGLE = '<summary aria-label="Toggle hidden content">'
START = translatable("Start reading")  # the link of the site's index.html to the first chapter
REDIRECT = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)"\s*/?>', re.IGNORECASE)


def _give_the_redirect_a_page(index: Path, title: str, lang: str, start: str) -> None:
    """Jupyter Book writes the site's index.html as a bare ``<meta http-equiv="Refresh">``: no title (a tab, a
    bookmark or a search engine shows the address) and nothing to follow where a browser does not redirect. Make it a
    page with the book's title, the same redirect and a link to the first chapter."""
    text = index.read_text(encoding="utf-8") if index.is_file() else ""
    target = REDIRECT.search(text)
    if target is None or "<title>" in text:
        return
    url, name = html.escape(target.group(1)), html.escape(title)
    index.write_text(
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n<title>{name}</title>\n'
        f'<meta http-equiv="Refresh" content="0; url={url}">\n<link rel="canonical" href="{url}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n</head>\n<body>\n'
        f'<main><h1>{name}</h1>\n<p><a href="{url}">{html.escape(start)}</a></p></main>\n</body>\n</html>\n',
        encoding="utf-8",
    )


def _finish_pages(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or not is_html(app):
        return
    rewrite_pages(app, lambda text, page: text.replace(HIDDEN_CELL_TOGGLE, "<summary>"))
    outdir = Path(app.outdir)
    lang = "zh-CN" if edition(app) == "zh" else "en"
    title = app.config.html_title or app.config.project
    _give_the_redirect_a_page(outdir / "index.html", title, lang, translated(app, [START])[START])


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", _copy_stylesheet)
    app.add_css_file(STYLESHEET)
    app.connect("html-page-context", _add_nav_js)
    app.connect("html-page-context", _dedupe_scripts, priority=900)  # after every other extension added its scripts
    app.connect("build-finished", _finish_pages)
