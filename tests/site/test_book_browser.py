"""The built book in a real browser: every page of the toc opened in headless Chromium, with no network.

Needs the built site (``make book``; ``make test`` builds it first) and Debian's Chromium at /usr/bin/chromium
(``BOOK_CHROMIUM`` overrides the path). The site is served on 127.0.0.1; every request to any other host is aborted
and recorded, and the test fails if there was one. Every page is opened once at 390 x 844 (a phone, with touch) and
once at 1280 x 900 (a laptop), and every check of that size runs on that one load (a load is most of a page's time).
At both sizes: no JavaScript errors, no page scrolls sideways, no figure is wider than the screen, no text of a figure
overlaps other text, leaves its figure or its box, or touches a heatmap's cells (``figure_text.js`` beside this file
says exactly what it measures), every figure has an accessible name, no plotly menu or slider is drawn on a figure
(the book shows them as HTML controls above it, which the Tab key reaches); with ``BOOK_FIGURE_SHOTS=dir`` every
figure is saved there as a PNG for anyone to look through (the PNGs take as long as the checks). Each size is opened
twice, with the reader's system asking for light and for dark colours: the page must follow it, and in both every
heatmap row and column keeps its label (a stacked panel its row labels), every figure is named by its own title,
its controls stay inside its box, no figure's box scrolls sideways, no formula is wider than the column, a table
that scrolls sideways is a stop of the Tab key, and on a phone code wraps. At the laptop's size, after those
screenshots: axe-core finds no critical or serious violation in the page's content (in light colours, and on an
English page in dark colours too: a run takes seconds, and what it checks depends neither on the width nor, but for
the text, on the edition); every plotly figure drawn, as many as the
build's executed notebook made (and at least ``MIN_FIGURES``); operating each control of each figure from the
keyboard (a slider step with an arrow key, a button with Enter, a menu entry) changes what the figure draws and
leaves its text readable; a choice of view (a head picker) says which one is shown; every bertviz view drawn, its
controls reachable and operable from the keyboard; on a Chinese page, no figure and none of those controls named in
figures.js's English (``figure_names.py``); MathJax typeset the math and put none of it in the tab order.
With ``BOOK_SCREENSHOTS=dir`` each page is saved as a full-page PNG there.

The site is served under a sub-path, ``/<repository>/``, as GitHub Pages serves it, so a link that assumes the site
sits at the server's root fails here too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest
from category_labels import unlabelled_categories
from chromium import PREFIX, ROOT, SITE, VIEWPORTS, PageRun, _load, build_folder, edition_pages, toc_pages
from figure_names import english_names, figure_name_prefixes, untitled_names

SCREENSHOTS = os.environ.get("BOOK_SCREENSHOTS", "")
# Pages that must show at least this many plotly figures (every figure a page has must render in any case).
MIN_FIGURES = {"book/01_introduction": 1}  # the architecture diagram
BERTVIZ_PAGE = "book/__bertviz_offline_check.html"  # served from memory by the test, next to the chapters
# The reader's system colour scheme: the book follows it on a first visit (_config.yml's default_mode: auto), and the
# dark theme frames outputs differently (book.css), so every page is checked in both.
# Text of a figure that a reader cannot read (overlapping, cut off, out of its box): tests/site/figure_text.js.
FIGURE_TEXT = (Path(__file__).with_name("figure_text.js")).read_text(encoding="utf-8")
# axe-core, fetched by scripts/vendor_assets.sh for the tests only (the build does not ship it to readers).
AXE = ROOT / "book" / "_vendor" / "tests" / "axe.min.js"
AXE_IMPACTS = ("critical", "serious")
# Where axe looks: the article, what the book writes, and the bars with the theme's buttons that the book names anew
# (book/_templates/). Not the rest of the theme's frame (its navigation, the search dialog: pydata-sphinx-theme's,
# which its authors test with axe-core), nor what other projects draw in it and
# that takes most of axe's time: the inside of a figure (an image with a name, role="img", which axe does check),
# MathJax's formulas (their tab stops are checked on their own) and Pygments' highlighted code.
AXE_CONTEXT = {
    "include": [".bd-article", ".bd-header-article", ".sidebar-primary-item .search-button-field"],
    "exclude": [".plotly-graph-div svg", ".bertviz-vis svg", "mjx-container", "div.highlight"],
}
# The theme's sticky header would cover part of a figure scrolled into view for its screenshot.
NO_TRANSITIONS = "*, *::before, *::after { transition: none !important; }"
STICKY_HIDDEN = ".bd-header-article, .bd-header, .skip-link { visibility: hidden !important; }"
FIGURE_SHOTS = Path(os.environ["BOOK_FIGURE_SHOTS"]) if os.environ.get("BOOK_FIGURE_SHOTS") else None


pytestmark = pytest.mark.skipif(
    not (SITE / "index.html").is_file(), reason=f"the book is not built ({SITE} missing): run `make book` first"
)


# JavaScript helpers run in the page.
ALL_PLOTS_DRAWN = "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))"
FIGURE_STATE = """(i) => {
  const gd = document.querySelectorAll('.plotly-graph-div')[i];
  const layout = Object.assign({}, gd.layout); delete layout.updatemenus; delete layout.sliders;
  return JSON.stringify([gd.data, layout]);
}"""
TOO_WIDE = """() => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) => {
  const column = gd.closest('.cell_output') || gd.parentElement.parentElement;
  return {figure: i, width: gd._fullLayout.width, column: column.clientWidth};
}).filter(f => f.width > f.column + 1)"""
CONTROLS = """(i) => {
  const gd = document.querySelectorAll('.plotly-graph-div')[i];
  // The page's figures.js shows plotly's menus and sliders as HTML controls in a bar just before the figure's wrapper.
  const bar = gd.parentElement.previousElementSibling;
  if (!bar || !bar.classList.contains('book-figure-controls')) return [];
  return [...bar.querySelectorAll('select, input[type=range], .book-figure-buttons')].map((el, k) => {
    if (el.tagName === 'SELECT') return {type: 'select', k, n: el.options.length, current: Number(el.value)};
    if (el.tagName === 'INPUT') return {type: 'range', k, n: Number(el.max) + 1, current: Number(el.value)};
    const buttons = [...el.querySelectorAll('button')];
    return {type: buttons.some(b => b.hasAttribute('aria-pressed')) ? 'choice' : 'buttons', k, n: buttons.length,
            current: Math.max(0, buttons.findIndex(b => b.getAttribute('aria-pressed') === 'true'))};
  });
}"""
READY = "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.dataset.bookFigure === 'ready')"
PLOTLY_CONTROLS_SHOWN = """() => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) =>
  ({figure: i, menus: gd.querySelectorAll('g.updatemenu-header-group').length,
    sliders: gd.querySelectorAll('g.slider-group').length})).filter(f => f.menus || f.sliders)"""
# Every figure named for assistive technology; every control above a figure reachable with the Tab key.
# (prefixes): what a figure's name starts with before its title, in either edition ("Figure: ", "图：").
UNNAMED_FIGURES = """(prefixes) => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) =>
  ({figure: i, role: gd.getAttribute('role'), name: gd.getAttribute('aria-label') || ''}))
  .filter(f => f.role !== 'img'
    || !prefixes.reduce((name, p) => name.startsWith(p) ? name.slice(p.length) : name, f.name).trim())"""
UNREACHABLE_CONTROLS = """() => [...document.querySelectorAll('.book-figure-controls')].flatMap(bar =>
  [...bar.querySelectorAll('select, input, button')].filter(el => el.tabIndex < 0 || el.disabled)
  .map(el => el.outerHTML.slice(0, 80)))"""
CHOICE_SHOWN = """(i) => {
  const gd = document.querySelectorAll('.plotly-graph-div')[i];
  const pressed = [...gd.parentElement.previousElementSibling.querySelectorAll('button[aria-pressed=true]')];
  const title = gd.getAttribute('aria-label') || '';
  return {pressed: pressed.map(b => b.textContent), title,
          named: pressed.length === 1 && title.includes(pressed[0].textContent.trim())};
}"""
# A figure's accessible name is its title: a figure without one is named from its axes, which plotly fills with its
# editing placeholder ("Click to enter X axis title"), or not at all (`untitled`: "an interactive plot" in either
# edition).
UNTITLED_FIGURES = """(untitled) => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) => {
  const title = gd.layout.title, text = title ? (typeof title === 'string' ? title : title.text || '') : '';
  return {figure: i, title: text, name: gd.getAttribute('aria-label') || ''};
}).filter((f) => !f.title.trim() || /click to enter/i.test(f.name) || untitled.some((u) => f.name.includes(u)))"""
# The HTML controls above a figure inside the figure's box (a menu as wide as its longest entry ran past it).
CONTROLS_OUTSIDE = """() => [...document.querySelectorAll('.book-figure-controls')].flatMap((bar, i) => {
  const box = bar.parentElement, style = getComputedStyle(box), frame = box.getBoundingClientRect();
  const right = frame.right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
  return [...bar.querySelectorAll('select, input, button, output')].map((el) =>
    ({bar: i, control: el.tagName.toLowerCase() + ' ' + (el.getAttribute('aria-label') || el.textContent || '').trim(),
      px: Math.round(el.getBoundingClientRect().right - right)})).filter((c) => c.px > 1);
})"""
# Boxes of the text that scroll sideways (scrollWidth past their width, overflow-x auto or scroll), outside figures.
SIDEWAYS_BOXES = """() => [...document.querySelectorAll('.bd-article *')].filter((el) => el.clientWidth > 0
    && el.scrollWidth > el.clientWidth + 1 && !el.closest('.plotly-graph-div, .bertviz-frame, svg')
    && ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
  .map((el) => ({box: el.tagName.toLowerCase()
      + (typeof el.className === 'string' && el.className ? '.' + el.className.split(' ')[0] : ''),
    tab: el.tabIndex, name: el.getAttribute('aria-label') || '', text: el.textContent.trim().slice(0, 40),
    figure: !!el.querySelector('.plotly-graph-div'), px: el.scrollWidth - el.clientWidth}))"""
THEME = "() => document.documentElement.dataset.theme"
MATH_TAB_STOPS = "() => document.querySelectorAll('mjx-container[tabindex]:not([tabindex=\"-1\"])').length"
# Text in a figure that a reader cannot read: drawn smaller than 9 px (heatmap numbers in cells too small for them
# are hidden by figures.js; the hover label still gives the value).
TINY_TEXT = """() => [...document.querySelectorAll('.plotly-graph-div')].flatMap((gd, i) =>
  [...gd.querySelectorAll('svg text')].filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0
    && parseFloat(getComputedStyle(t).fontSize) < 8.95)
  .map(t => ({figure: i, text: t.textContent.slice(0, 30), px: parseFloat(getComputedStyle(t).fontSize)}))).slice(0, 5)"""


def _control_actions(page: object, index: int, controls: list[dict]) -> Iterator[tuple[str, Iterator[str]]]:
    """For each control of figure ``index``: its name and the ways to operate it from the keyboard (a slider's arrow
    keys, Enter on a button, every other entry of a menu), each yielding a description once done."""
    figure = page.locator(".plotly-graph-div").nth(index)
    bar = figure.locator("xpath=../preceding-sibling::div[contains(@class, 'book-figure-controls')][1]")
    items = bar.locator("select, input[type=range], .book-figure-buttons")

    def operate(control: dict) -> Iterator[str]:
        item = items.nth(control["k"])
        if control["type"] == "range":  # a step to the right, or to the left from the last
            for key in ("ArrowRight", "ArrowLeft") if control["current"] < control["n"] - 1 else ("ArrowLeft",):
                item.focus()
                page.keyboard.press(key)
                yield key
        elif control["type"] == "select":
            for target in [t for t in range(control["n"]) if t != control["current"]]:
                item.select_option(str(target))
                yield f"entry {target}"
        else:  # buttons: Play (the first) changes the figure; a choice: every other one
            targets = (
                [0] if control["type"] == "buttons" else [t for t in range(control["n"]) if t != control["current"]]
            )
            for target in targets:
                item.locator("button").nth(target).focus()
                page.keyboard.press("Enter")
                yield f"button {target}"

    for control in controls:
        yield f"{control['type']} {control['k']}", control, operate(control)


def figure_text_defects(page: object, limit: int = 12, only: int | None = None) -> list[dict]:
    """Text of the page's figures (of figure ``only`` alone, when given) that a reader cannot read (``figure_text.js``):
    at most ``limit`` findings."""
    return page.evaluate(f"([limit, only]) => ({FIGURE_TEXT})(limit, only)", [limit, only])


# axe-core walks every node inside what it checks, excluded ones too (a chapter's highlighted code, formulas and
# figure drawings are nine tenths of its 10,000-16,000 nodes, and most of a run's 3 s): while it runs, the children of
# each excluded element are set aside, the element keeping its size, and then put back, the same nodes, untouched.
AXE_RUN = """async ([context, excluded]) => {
  const aside = [...document.querySelectorAll(excluded.join(', '))].map((root) => {
    const box = root.getBoundingClientRect();
    return {root, nodes: [...root.childNodes], style: root.getAttribute('style'), box};
  });
  aside.forEach(({root, box}) => {
    root.replaceChildren();
    root.style.minWidth = box.width + 'px';
    root.style.minHeight = box.height + 'px';
  });
  try {
    return await axe.run(context, {resultTypes: ['violations']});
  } finally {
    aside.reverse().forEach(({root, nodes, style}) => {
      root.replaceChildren(...nodes);
      if (style === null) root.removeAttribute('style'); else root.setAttribute('style', style);
    });
  }
}"""


def axe_violations(page: object) -> list[str]:
    """axe-core's critical and serious violations in the page's content (``AXE_CONTEXT``), one line each."""
    assert AXE.is_file(), f"{AXE} missing: `make vendor` (scripts/vendor_assets.sh) fetches axe-core for the tests"
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(path=str(AXE))
    results = page.evaluate(AXE_RUN, [AXE_CONTEXT, AXE_CONTEXT["exclude"]])
    return [
        f"{v['id']} ({v['impact']}): {v['help']}: "
        + "; ".join(n["target"][0] if isinstance(n["target"][0], str) else str(n["target"][0]) for n in v["nodes"][:4])
        for v in results["violations"]
        if v["impact"] in AXE_IMPACTS
    ]


def executed_notebook(name: str) -> dict:
    """The build's executed notebook: from the execution cache when the build has one (myst-nb writes the *unexecuted*
    source to _build/jupyter_execute when it takes a notebook from the cache), else from _build/jupyter_execute."""
    source = nbformat.read(ROOT / f"{name}.ipynb", as_version=4)
    cache_dir = build_folder(name) / ".jupyter_cache"
    if cache_dir.is_dir():
        from jupyter_cache import get_cache

        try:
            return get_cache(str(cache_dir)).merge_match_into_notebook(source)[1]
        except KeyError:  # not in the cache: the build executed it without caching (an error, or another mode)
            pass
    executed = build_folder(name) / "jupyter_execute" / f"{name.removeprefix('zh/')}.ipynb"
    assert executed.is_file(), f"{executed} missing: the build writes every executed notebook there"
    return nbformat.read(executed, as_version=4)


def expected_figures(name: str) -> int:
    """Plotly figures in the build's executed notebook: outputs that carry one, whether or not the page shows it (none
    on a page of text, the glossary)."""
    if not (ROOT / f"{name}.ipynb").is_file():
        return 0
    count = 0
    for cell in executed_notebook(name)["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = data.get("text/html", "")
            html = "".join(html) if isinstance(html, list) else html
            count += html.count('class="plotly-graph-div"') or int("application/vnd.plotly.v1+json" in data)
    return count


def check_page(run: PageRun, name: str, shots: str) -> None:
    page = run.page
    source = page.content()
    n_figures = page.locator(".plotly-graph-div").count()
    assert n_figures >= MIN_FIGURES.get(name, 0), f"{name}: {n_figures} plotly figures, expected {MIN_FIGURES[name]}"
    expected = expected_figures(name)
    assert n_figures == expected, f"{name}: the page shows {n_figures} plotly figures, its notebook made {expected}"
    violations = axe_violations(page)  # once a page (a run takes seconds): what it checks does not depend on the width
    assert not violations, f"{name}: axe-core:\n" + "\n".join(violations)
    if n_figures:
        page.wait_for_function(ALL_PLOTS_DRAWN, timeout=30_000)
        page.wait_for_function(READY, timeout=30_000)
        too_wide = page.evaluate(TOO_WIDE)
        assert not too_wide, (
            f"{name}: figures wider than the page's column (clipped; leave layout.width unset): {too_wide}"
        )
    for i in range(n_figures):
        for control, spec, actions in _control_actions(page, i, page.evaluate(CONTROLS, i)):
            before = page.evaluate(FIGURE_STATE, i)  # every control must change what is drawn
            tried = []
            for action in actions:
                tried.append(action)
                try:
                    page.wait_for_function(f"(before) => ({FIGURE_STATE})({i}) !== before", arg=before, timeout=5_000)
                    break
                except Exception:  # noqa: BLE001 (playwright's TimeoutError: try the control's next entry)
                    continue
            else:
                raise AssertionError(
                    f"{name}: figure {i}: {control} did not change the figure (tried {', '.join(tried)})"
                )
            page.wait_for_function(READY, timeout=10_000)
            defects = figure_text_defects(page, only=i)
            assert not defects, (
                f"{name}: figure {i} after {control} ({tried[-1]}): text a reader cannot read: {defects}"
            )
            if spec["type"] == "choice":  # the pressed button, and the figure's title, say which view is shown
                state = page.evaluate(CHOICE_SHOWN, i)
                assert state["named"], f"{name}: figure {i}: {control} does not say which view it shows: {state}"

    views = page.locator(".bertviz-view")
    for i in range(views.count()):
        view = views.nth(i)
        view.locator(".bertviz-vis svg text").first.wait_for(state="attached", timeout=30_000)
        stops = view.locator(".bertviz-vis svg [tabindex='0'][role][aria-label]")
        assert stops.count() > 0, f"{name}: bertviz view {i}: nothing in its picture can be reached from the keyboard"
        drawn = view.locator(".bertviz-vis").inner_html()
        stops.first.focus()
        page.keyboard.press("Space")
        page.wait_for_function(
            "([i, drawn]) => document.querySelectorAll('.bertviz-view .bertviz-vis')[i].innerHTML !== drawn",
            arg=[i, drawn],
            timeout=5_000,
        )

    icons = page.locator("i[class*='fa-']").count()  # the theme's icons, each drawn as an SVG once the page is parsed
    assert icons == 0, f"{name}: {icons} of the theme's icons not drawn (Font Awesome's <i> elements left in the page)"

    if name.startswith("zh/"):  # figures.js's words, translated: no figure or control is named in its English
        english = english_names(page)
        assert not english, f"{name}: figures or their controls named in English (figures.js's words): {english}"

    if re.search(r'class="math notranslate nohighlight"', source):
        page.wait_for_selector("mjx-container", state="attached", timeout=30_000)
        page.evaluate("() => window.MathJax.startup.promise")
        assert page.locator("mjx-merror").count() == 0, f"{name}: MathJax reported an error in the math"
        tab_stops = page.evaluate(MATH_TAB_STOPS)
        assert tab_stops == 0, f"{name}: {tab_stops} formulas are stops of the Tab key (MathJax's menu puts them there)"

    if shots:  # the whole page in one viewport (a full_page screenshot stitches the sticky header mid-page)
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
        height = min(page.evaluate("() => document.documentElement.scrollHeight"), 16_000)
        page.set_viewport_size({"width": 1280, "height": height})
        page.wait_for_timeout(1_000)  # plotly redraws responsive figures after a resize
        page.screenshot(path=str(Path(shots) / f"{name.replace('/', '__')}.png"))
    assert not run.errors, f"{name}: errors in the page:\n" + "\n".join(run.errors)
    assert not run.external, f"{name}: requests left the machine:\n" + "\n".join(run.external)
    assert not run.failed, f"{name}: requests that found nothing (a path outside {PREFIX}/?):\n" + "\n".join(run.failed)


SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
FIGURES_OFF_SCREEN = """() => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) => {
  const box = gd.getBoundingClientRect();
  return {figure: i, left: Math.round(box.left), right: Math.round(box.right)};
}).filter(f => f.left < -1 || f.right > window.innerWidth + 1)"""
# bertviz's fixed-width views: zoomed no smaller than 0.7 (its 13 px labels stay at least 9 px), their frame inside the
# screen, and the whole picture in view (no sideways scrolling inside the frame to find a head).
BERTVIZ_DRAWN = (
    "() => [...document.querySelectorAll('.bertviz-view')].every(v => v.querySelector('.bertviz-vis svg text'))"
)
BERTVIZ_FIT = """() => [...document.querySelectorAll('.bertviz-frame')].map((frame, i) => {
  const view = frame.querySelector('.bertviz-fit'), svg = frame.querySelector('.bertviz-vis svg');
  const box = frame.getBoundingClientRect(), picture = svg.getBoundingClientRect(), zoom = parseFloat(view.style.zoom);
  return {view: i, zoom, inside: box.left >= -1 && box.right <= window.innerWidth + 1,
          inView: picture.left >= box.left - 1 && picture.right <= box.right + 1};
}).filter(v => !(v.zoom >= 0.69 && v.inside && v.inView))"""


def check_fits_the_screen(run: PageRun, name: str, size: str, scheme: str = "light") -> None:
    """At ``size`` in the ``scheme`` colours: the page follows the reader's scheme; nothing scrolls sideways, every
    figure fits the screen, no figure text is smaller than 9 px or unreadable (``figure_text.js``), every row and
    column of a heatmap is labelled, every figure is named by its title and its controls are HTML ones that the Tab
    key reaches, inside the figure's box; bertviz views readable and whole; a box of the text that scrolls sideways
    (a table) is a stop of the Tab key, never a formula, a figure's box or (on a phone) code; each figure saved as a
    PNG (before any control moves)."""
    page = run.page
    where = f"{name} at {size} width, {scheme}"
    theme = page.evaluate(THEME)
    assert theme == scheme, f"{where}: the reader's system asks for {scheme} colours, the page shows {theme}"
    figures = page.locator(".plotly-graph-div")
    if figures.count():
        page.wait_for_function(ALL_PLOTS_DRAWN, timeout=30_000)
        page.wait_for_function(READY, timeout=30_000)
        tiny = page.evaluate(TINY_TEXT)
        assert not tiny, f"{name} at {size} width: figure text too small to read: {tiny}"
        defects = figure_text_defects(page)
        assert not defects, f"{name} at {size} width: figure text a reader cannot read: {defects}"
        shown = page.evaluate(PLOTLY_CONTROLS_SHOWN)
        assert not shown, f"{name} at {size} width: plotly menus or sliders drawn on a figure, not above it: {shown}"
        unnamed = page.evaluate(UNNAMED_FIGURES, figure_name_prefixes())
        assert not unnamed, f"{name} at {size} width: figures without an accessible name: {unnamed}"
        unreachable = page.evaluate(UNREACHABLE_CONTROLS)
        assert not unreachable, f"{name} at {size} width: figure controls the Tab key cannot reach: {unreachable}"
        unlabelled = unlabelled_categories(page)
        assert not unlabelled, f"{where}: heatmap rows or columns without their label: {unlabelled}"
        untitled = page.evaluate(UNTITLED_FIGURES, untitled_names())
        assert not untitled, f"{where}: figures not named by a title of their own: {untitled}"
        outside = page.evaluate(CONTROLS_OUTSIDE)
        assert not outside, f"{where}: figure controls running past the figure's box (px): {outside}"
    if page.locator(".bertviz-view").count():
        page.wait_for_function(BERTVIZ_DRAWN, timeout=30_000)
        unfit = page.evaluate(BERTVIZ_FIT)
        assert not unfit, f"{name} at {size} width: bertviz views unreadable or not wholly in view: {unfit}"
    overflow = page.evaluate(SIDEWAYS)
    assert overflow <= 1, f"{name} at {size} width: the page scrolls sideways by {overflow} px"
    boxes = page.evaluate(SIDEWAYS_BOXES)
    formulas = [b for b in boxes if b["box"].startswith("mjx-container")]
    assert not formulas, f"{where}: formulas wider than the column (no key reaches them to scroll): {formulas}"
    figure_boxes = [b for b in boxes if b["figure"]]
    assert not figure_boxes, f"{where}: figures whose box scrolls sideways (cut off): {figure_boxes}"
    unreachable_boxes = [b for b in boxes if b["tab"] < 0]
    assert not unreachable_boxes, f"{where}: boxes that scroll sideways but no key reaches: {unreachable_boxes}"
    code = [b for b in boxes if b["box"] == "pre"]
    assert size != "phone" or not code, f"{where}: code that runs past the screen's edge (it wraps on a phone): {code}"
    off_screen = page.evaluate(FIGURES_OFF_SCREEN)
    assert not off_screen, f"{name} at {size} width: figures wider than the screen: {off_screen}"
    save_figure_shots(page, name, f"{size}_{scheme}")
    assert not run.errors, f"{where}: errors in the page:\n" + "\n".join(run.errors)


def save_figure_shots(page: object, name: str, size: str) -> None:
    """Each figure with its controls as a PNG, the sticky header hidden once for all of them (a style per screenshot
    made the page recompute its style twice a figure), then shown again for the checks that follow."""
    figures = page.locator(".plotly-graph-div")
    if FIGURE_SHOTS is None or not figures.count():
        return
    FIGURE_SHOTS.mkdir(parents=True, exist_ok=True)
    hidden = page.add_style_tag(content=STICKY_HIDDEN)
    for i in range(figures.count()):
        edition = "zh__" if name.startswith("zh/") else ""  # the Chinese chapter's figures beside the English
        shot = FIGURE_SHOTS / f"{edition}{name.split('/')[-1]}__{i:02d}__{size}.png"
        figures.nth(i).locator("xpath=../..").screenshot(path=str(shot))
    hidden.evaluate("style => style.remove()")


@pytest.mark.parametrize("size", VIEWPORTS)
@pytest.mark.parametrize("name", edition_pages())
def test_page(server: tuple[str, type], browser: object, cached_context: Callable, name: str, size: str) -> None:
    """The page opened once at each size, in light colours and then in dark (the reader's system setting, which the
    page follows as it changes): it fits the screen in both (``check_fits_the_screen``); at the laptop's size it also
    passes ``check_page`` in light colours (figures, their controls, bertviz, MathJax, requests), after the figures'
    screenshots, and axe-core checks it again in dark colours (its contrast is another; on the English page only: the
    Chinese page's elements have the same colours, which its light pass and the English dark pass check)."""
    base, _ = server
    assert (SITE / f"{name}.html").is_file(), f"{name}.html is in a table of contents but was not built"
    run = PageRun(browser, f"{base}/{name}.html", context=cached_context(size))
    try:
        check_fits_the_screen(run, name, size, "light")
        if size == "laptop":
            check_page(run, name, SCREENSHOTS)
        run.page.evaluate("() => window.scrollTo(0, 0)")
        run.page.add_style_tag(content=NO_TRANSITIONS)  # the theme fades colours: axe must see them as they end
        run.page.emulate_media(color_scheme="dark")
        run.page.wait_for_function(f"() => ({THEME})() === 'dark'", timeout=5_000)
        check_fits_the_screen(run, name, size, "dark")
        if size == "laptop" and not name.startswith("zh/"):  # a Chinese page has the English page's colours
            violations = axe_violations(run.page)
            assert not violations, f"{name} in dark colours: axe-core:\n" + "\n".join(violations)
    finally:
        run.close()


# Chapter 6's layer diagram (no axis shown, a menu of states): the first figure of the page drawn that way.
LAYER_DIAGRAM = """() => [...document.querySelectorAll('.plotly-graph-div')].findIndex(gd =>
  (gd.layout.updatemenus || []).length && gd.layout.xaxis.visible === false && (gd.layout.shapes || []).length > 10)"""
# Bands of a figure's box with nothing drawn across them (px, top first): between the box's top, what the figure draws
# (its title, shapes, labels, arrows) and the box's bottom. A diagram drawn on a y-range of another state's leaves one.
EMPTY_BANDS = """(i) => {
  const gd = document.querySelectorAll('.plotly-graph-div')[i], frame = gd.parentElement.getBoundingClientRect();
  const spans = [...gd.querySelectorAll('.main-svg .shapelayer path, .main-svg .infolayer path, '
                                         + '.main-svg .infolayer text, .main-svg .g-gtitle text')]
    .map((el) => el.getBoundingClientRect()).filter((r) => r.height > 0)
    .map((r) => [r.top - frame.top, r.bottom - frame.top]).sort((a, b) => a[0] - b[0]);
  const bands = [];
  let reached = 0;
  spans.forEach(([top, bottom]) => {
    if (top > reached) bands.push({at: Math.round(reached), px: Math.round(top - reached)});
    reached = Math.max(reached, bottom);
  });
  bands.push({at: Math.round(reached), px: Math.round(frame.height - reached)});
  return bands;
}"""
# The diagram's plot area, its width and its column's, and the size of each of its labels.
DIAGRAM_SIZE = """(i) => {
  const gd = document.querySelectorAll('.plotly-graph-div')[i];
  return {plot: gd._fullLayout._size.h, width: gd._fullLayout.width, column: gd.parentElement.clientWidth,
          fonts: gd._fullLayout.annotations.map((a) => a.font.size)};
}"""
MAX_EMPTY_BAND = 30  # px: about two lines of the diagram's text


def open_layer_diagram(browser: object, context: object, base: str, edition: str) -> tuple[PageRun, int]:
    """Chapter 6 of ``edition`` ("" or "zh/") in ``context`` (a phone's), every figure drawn and fitted; and its layer
    diagram's index."""
    run = PageRun(browser, f"{base}/{edition}book/06_model.html", context=context)
    run.page.wait_for_function(ALL_PLOTS_DRAWN, timeout=30_000)
    run.page.wait_for_function(READY, timeout=30_000)
    return run, run.page.evaluate(LAYER_DIAGRAM)


def diagram_defects(page: object, index: int) -> list:
    """What a reader of the layer diagram would see wrong: text out of place (``figure_text.js``), and bands of its box
    taller than ``MAX_EMPTY_BAND`` with nothing in them."""
    page.wait_for_function(READY, timeout=10_000)
    bands = [band for band in page.evaluate(EMPTY_BANDS, index) if band["px"] > MAX_EMPTY_BAND]
    return figure_text_defects(page, only=index) + [{"empty band": band} for band in bands]


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_a_diagrams_menu_on_a_phone_keeps_every_label_in_its_box(
    server: tuple[str, type], browser: object, cached_context: Callable, edition: str
) -> None:
    """Chapter 6's layer diagram redraws its boxes and labels for each entry of its menu (a relayout of its shapes and
    annotations): on a phone each new drawing is fitted as the first was, its labels shrunk or wrapped into their
    boxes and its explanation inside the figure, and the figure is as tall as that drawing (the post-norm states are
    shorter than the pre-norm one: drawn on its y-range, they left empty bands of 60 and 110 px). (check_page
    operates every control at the laptop's size only.)"""
    base, _ = server
    run, index = open_layer_diagram(browser, cached_context("phone"), base, edition)
    try:
        page = run.page
        assert not diagram_defects(page, index), f"figure {index} as drawn: {diagram_defects(page, index)}"
        controls = page.evaluate(CONTROLS, index)
        for control, _, actions in _control_actions(page, index, controls):
            for action in actions:
                defects = diagram_defects(page, index)
                assert not defects, f"figure {index} after {control} ({action}) on a phone: {defects}"
        assert not run.errors, "\n".join(run.errors)
    finally:
        run.close()


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_a_diagram_switched_between_states_and_widths_stays_tight_and_as_wide_as_its_column(
    server: tuple[str, type], browser: object, cached_context: Callable, edition: str
) -> None:
    """The layer diagram's states differ in height (pre-norm is taller): switched on a phone, then the screen turned
    to a laptop's width and back, each state keeps its plot area's height (one scale: no box grows or shrinks), the
    figure follows its column's width, each state looks at a width as it did there before (its labels' sizes: a
    narrow column's once stuck to a menu entry), and no state leaves an empty band or text out of place."""
    base, _ = server
    run, index = open_layer_diagram(browser, cached_context("phone"), base, edition)
    try:
        page = run.page
        menu = (
            page.locator(".plotly-graph-div")
            .nth(index)
            .locator("xpath=../preceding-sibling::div[contains(@class, 'book-figure-controls')][1]//select")
        )
        last = str(page.evaluate(CONTROLS, index)[0]["n"] - 1)  # pre-norm
        plots, fonts = {}, {}
        for width, entry in (
            ("phone", last),
            ("laptop", None),
            ("laptop", "0"),
            ("phone", None),
            ("phone", last),
            ("phone", "2"),
            ("laptop", None),
            ("laptop", last),
            ("phone", None),
            ("laptop", None),
        ):
            if entry is None:
                page.set_viewport_size(VIEWPORTS[width])
                page.wait_for_timeout(300)  # the ResizeObserver's turn
            else:
                menu.select_option(entry)
                state = "pre-norm" if entry == last else "post-norm"
                shown = entry
            where = f"{state} (entry {shown}) at the {width}'s width"
            defects = diagram_defects(page, index)
            assert not defects, f"{where}: {defects}"
            size = page.evaluate(DIAGRAM_SIZE, index)
            assert abs(size["width"] - size["column"]) <= 1, (
                f"{where}: drawn {size['width']} px wide in a column of {size['column']}"
            )
            assert abs(plots.setdefault(state, size["plot"]) - size["plot"]) <= 1, (
                f"{where}: a plot area {size['plot']} px high, {plots[state]} px before"
            )
            assert fonts.setdefault((shown, width), size["fonts"]) == size["fonts"], f"{where}: its labels resized"
        assert not run.errors, "\n".join(run.errors)
    finally:
        run.close()


def test_a_table_wider_than_a_phone_fades_where_more_of_it_lies(
    server: tuple[str, type], browser: object, cached_context: Callable
) -> None:
    """Chapter 16's table of settings is wider than a phone: its box scrolls sideways, and while more of it lies to
    the right its right edge fades (a visible hint, where a cut edge says nothing); scrolled to its end, it does not."""
    base, _ = server
    run = PageRun(browser, f"{base}/book/16_differences_from_the_paper.html", context=cached_context("phone"))
    hinted = """() => [...document.querySelectorAll('.bd-article .pst-scrollable-table-container, .bd-article .book-table')]
      .filter(b => b.scrollWidth > b.clientWidth + 1).map(b => ({more: b.classList.contains('book-scrolls-more'),
        mask: getComputedStyle(b).maskImage || getComputedStyle(b).webkitMaskImage}))"""
    try:
        page = run.page
        page.wait_for_load_state("load")
        boxes = page.evaluate(hinted)
        assert boxes and all(b["more"] and b["mask"] != "none" for b in boxes), boxes
        page.evaluate(
            """() => document.querySelectorAll('.bd-article .pst-scrollable-table-container, .bd-article .book-table')
            .forEach(b => { b.scrollLeft = b.scrollWidth; })"""
        )
        page.wait_for_function(f"() => ({hinted})().every(b => !b.more && b.mask === 'none')", timeout=5_000)
    finally:
        run.close()


def test_index_redirects_to_root(server: tuple[str, type], browser: object) -> None:
    """The site's index.html sends the browser to the first chapter; for a browser that does not follow the redirect
    (or a reader who stops it) it has the book's title and a link there."""
    first = toc_pages()[0]
    index = (SITE / "index.html").read_text(encoding="utf-8")
    title = re.search(r"^title:\s*(.+?)\s*$", (ROOT / "_config.yml").read_text(), re.MULTILINE).group(1)
    assert f"<title>{title}</title>" in index, "index.html has no title (a tab or a bookmark would show its address)"
    assert re.search(rf'<a href="{re.escape(first)}\.html">', index), "index.html has no link to the first chapter"
    base, _ = server
    run = PageRun(browser, f"{base}/index.html")
    try:  # the redirect is done once the first chapter's response arrives; test_page checks that chapter's loading
        run.page.wait_for_url(re.compile(re.escape(toc_pages()[0]) + r"\.html$"), timeout=10_000, wait_until="commit")
        assert not run.external, run.external
    finally:
        run.close()


@pytest.mark.parametrize("size", VIEWPORTS)
def test_a_page_of_the_cached_context_reaches_no_other_machine_and_says_which_it_asked_for(
    server: tuple[str, type], browser: object, cached_context: Callable, size: str
) -> None:
    """test_page's pages open in a context that keeps its cache, so no route intercepts their requests: a request to
    another host, by name or by address, must still fail (the context's proxy answers nothing) and be recorded, a
    script, a fetch and an image."""
    base, handler = server
    wanted = ["https://cdn.jsdelivr.net/npm/x.js", "https://example.org/data.json", "http://8.8.8.8/pixel.png"]
    handler.extra_pages["book/__external_request_check.html"] = (
        f"<!doctype html><meta charset='utf-8'><script src='{wanted[0]}'></script>"
        f"<script>window.fetched = fetch('{wanted[1]}').then(() => 'answered', () => 'failed')</script>"
        f"<img src='{wanted[2]}' alt='a pixel'>"
    ).encode()
    run = PageRun(browser, f"{base}/book/__external_request_check.html", context=cached_context(size))
    try:
        assert run.page.evaluate("() => window.fetched") == "failed"
        assert sorted(run.external) == sorted(wanted)
    finally:
        run.close()


def test_bertviz_output_rewritten_and_drawn_offline(server: tuple[str, type], browser: object) -> None:
    """bertviz's own HTML (require.js, d3 and jQuery from CDNs), rewritten as the build rewrites pages, draws offline."""
    torch = pytest.importorskip("torch")
    head_view = pytest.importorskip("bertviz").head_view
    base, handler = server
    html = head_view(attention=[torch.rand(1, 2, 4, 4).softmax(-1)], tokens=list("abcd"), html_action="return").data
    assert "https://" in html  # bertviz still points at its CDNs: the rewriting below is what makes it offline
    from static_book import cdn, vendor

    rewritten = cdn.rewrite_html(html, vendor.vendor_url_for(SITE / BERTVIZ_PAGE, SITE))
    assert not re.search(r"(src=|paths|: )\s*['\"]https?://", rewritten), "a CDN URL survived the rewriting"
    handler.extra_pages[BERTVIZ_PAGE] = f"<!doctype html><meta charset='utf-8'><body>{rewritten}</body>".encode()
    run = PageRun(browser, f"{base}/{BERTVIZ_PAGE}")
    try:
        run.page.locator("#vis svg text").first.wait_for(state="attached", timeout=30_000)
        assert not run.errors, run.errors
        assert not run.external, run.external
    finally:
        run.close()


def test_no_cdn_urls_in_built_pages() -> None:
    """No <script src>, <link href> (stylesheets) or RequireJS path in the built site points off the machine."""
    offending = []
    pattern = re.compile(
        r"<script[^>]+src=[\"']https?://[^\"']+|<link[^>]+rel=[\"']stylesheet[\"'][^>]+href=[\"']https?://[^\"']+"
        r"|<link[^>]+href=[\"']https?://[^\"']+[^>]+rel=[\"']stylesheet|paths\s*:\s*\{[^}]*https?://[^}]*\}",
        re.IGNORECASE,
    )
    for page in SITE.rglob("*.html"):
        if page.is_relative_to(SITE / "_static"):
            continue
        for match in pattern.finditer(page.read_text(encoding="utf-8")):
            offending.append(f"{page.relative_to(SITE)}: {match.group(0)[:160]}")
    assert not offending, "CDN URLs in the built site:\n" + "\n".join(offending)


def test_no_markdown_table_is_left_as_text_in_built_pages() -> None:
    """Every table a page computes is drawn as a table, in both editions: no running text (code aside) holds a
    Markdown table's delimiter row (book/_ext/computed_markdown.py says how one was left as text)."""
    check = _load(ROOT / "book" / "_ext" / "computed_markdown.py")
    offending = [
        f"{page.relative_to(SITE)}: {row}"
        for page in sorted(SITE.rglob("*.html"))
        if not page.is_relative_to(SITE / "_static")
        for row in check.tables_left_as_text(page.read_text(encoding="utf-8"))
    ]
    assert (SITE / "zh" / "index.html").is_file(), "the Chinese edition is not in the built site"
    assert not offending, "Markdown tables shown as text:\n" + "\n".join(offending)


def test_toc_pages_listed() -> None:
    pages = toc_pages()
    assert pages[0] == "book/01_introduction" and len(pages) == len(set(pages)) > 1, pages


def _defect_figures() -> list[tuple[str, object]]:
    """One small figure per kind of defect ``figure_text.js`` reports (and a clean one), with the check it must fail."""
    go = pytest.importorskip("plotly.graph_objects")
    figures = []
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    fig.add_annotation(x=0.5, y=0.5, text="one note", showarrow=False)
    fig.add_annotation(x=0.5, y=0.5, text="another", showarrow=False)
    figures.append(("overlap", fig))
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    fig.add_annotation(x=1.1, y=0.5, xref="paper", yref="paper", xanchor="left", text="past the edge", showarrow=False)
    figures.append(("outside", fig))
    fig = go.Figure(go.Scatter(x=[0, 10], y=[0, 1], mode="markers"))
    fig.add_shape(type="rect", x0=4, x1=6, y0=0.4, y1=0.6)
    fig.add_annotation(x=5, y=0.5, text="a label much wider than its box", showarrow=False)
    figures.append(("box", fig))
    fig = go.Figure(go.Heatmap(z=[[0.123456] * 14], texttemplate="%{z:.4f}", textfont_size=12, showscale=False))
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    figures.append(("overlap", fig))  # the numbers of neighbouring cells run together
    fig = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]], y=["first row", "second row"], showscale=False))
    fig.update_yaxes(ticklabelstandoff=-6)
    figures.append(("plot", fig))  # row labels into the cells
    fig = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name="a"), go.Scatter(x=[0, 1], y=[1, 0], name="b")])
    fig.update_layout(legend=dict(orientation="h", y=-1.2), margin=dict(b=300))
    figures.append(("detached", fig))
    fig = go.Figure(
        go.Heatmap(
            z=[[0, 1], [1, 0]],
            x=["a", "b"],
            y=["c", "d"],
            texttemplate="%{z}",
            colorbar=dict(title=dict(text="w", side="right")),
        )
    )
    fig.update_layout(title="A clean figure", xaxis_title="key", yaxis_title="query")
    fig.update_xaxes(ticklabelstandoff=4)
    fig.update_yaxes(ticklabelstandoff=4)
    figures.append(("", fig))
    for _, fig in figures:
        fig.update_layout(width=340, height=300 if fig.layout.margin.b is None else 520)
    return figures


def test_figure_text_check_finds_each_kind_of_defect(server: tuple[str, type], browser: object) -> None:
    """``figure_text.js`` against figures made to fail it, one kind of defect each, and a clean figure it must pass."""
    pio = pytest.importorskip("plotly.io")
    base, handler = server
    figures = _defect_figures()
    body = "".join(pio.to_html(fig, include_plotlyjs=False, full_html=False) for _, fig in figures)
    handler.extra_pages["book/__figure_text_check.html"] = (
        "<!doctype html><meta charset='utf-8'><script src='../_static/vendor/plotly.min.js'></script>"
        f"<body style='font-family: sans-serif'>{body}</body>"
    ).encode()
    run = PageRun(browser, f"{base}/book/__figure_text_check.html")
    try:
        run.page.wait_for_function(ALL_PLOTS_DRAWN, timeout=30_000)
        found = figure_text_defects(run.page, limit=200)
    finally:
        run.close()
    for i, (check, _) in enumerate(figures):
        kinds = sorted({f["check"] for f in found if f["figure"] == i})
        assert kinds == ([check] if check else []), f"figure {i} (expected {check or 'no finding'}): {kinds}: {found}"


PLANT_VIOLATIONS = """() => {
  const after = (selector, element) => [...document.querySelectorAll(`.bd-article ${selector}`)]
    .find((shown) => shown.getClientRects().length).closest('div.cell, p').after(element);
  const faint = document.createElement('p');
  faint.textContent = 'faint words beside the code';
  faint.style.color = '#eeeeee';
  after('div.highlight', faint);
  const paragraph = document.createElement('p'), nameless = document.createElement('button');
  paragraph.append('a button without a name beside a formula ', nameless);
  after('mjx-container', paragraph);
  const image = document.createElement('img');
  image.src = 'missing.png';
  after('.plotly-graph-div', image);
}"""


def test_axe_finds_what_it_checks_beside_the_content_it_sets_aside_and_leaves_the_page_as_it_was(
    server: tuple[str, type], browser: object, cached_context: Callable
) -> None:
    """``axe_violations`` sets aside the children of what axe does not check while axe runs (``AXE_RUN``): a page
    it has run on is the same afterwards, and violations planted next to code, a formula and a figure are found."""
    base, _ = server
    run = PageRun(browser, f"{base}/book/05_attention.html", context=cached_context("laptop"))
    try:
        page = run.page
        page.wait_for_function(ALL_PLOTS_DRAWN, timeout=30_000)
        page.wait_for_function(READY, timeout=30_000)
        page.evaluate("() => window.MathJax.startup.promise")
        article = "() => document.querySelector('.bd-article').outerHTML"
        before = page.evaluate(article)
        assert axe_violations(page) == []
        assert page.evaluate(article) == before, "the page changed while axe-core ran"
        page.evaluate(PLANT_VIOLATIONS)
        found = {violation.split(" ")[0] for violation in axe_violations(page)}
        assert found == {"color-contrast", "button-name", "image-alt"}, found
    finally:
        run.close()
