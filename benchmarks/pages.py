"""#20, pages and the first map beside Streamlit's own floor, in one run and one headless Chromium (1280 × 720).

- **first map in a new browser** on a warm server (a new context: no cache), from the page request to the map's
  cells painted (``felt.first_map``); floor: a one-line Streamlit page (``bare_page.py``), request to its title
  painted (``felt.first_text``), visited in turn.
- **page switch**: a click on a page's link in the sidebar to that page's own content painted: Compare → All
  heads (its grid of heads drawn) and All heads → Compare (the map's cells painted); floor: a two-page
  Streamlit app (``bare_pages.py``), a click on the other page's link to its title painted, switched in turn.
  Beside it, the floor for what All heads draws: the same two-page app whose second page also draws All
  heads' grid for the opening example (the app's own figure, read from a file: nothing computed), a click
  to the grid drawn; and when All heads' title is painted (the page's run has reached it), which splits the
  switch into the server's run and the grid's drawing. Then the floor of the app's own elements: the two-page
  app with the sidebar's, Compare's and All heads' elements and the grid (``bare_elements.py``), switched
  both ways; and the prototypes of a page whose controls are one custom element's (``BARE_PAGES_ONE_ELEMENT``), with
  the sidebar's as well (``BARE_PAGES_ONE_SIDEBAR``).

Each time is taken inside the page (``performance.now()``, from the navigation's start or from the click to
the animation frame that shows the target). Target: each at most 1.3 × its floor. The load average (1 minute)
is recorded. On request: ``python -m benchmarks --only 20``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import ROOT, Row, Settings

sys.path.insert(0, str(ROOT / "tests"))
from browser import CHROMIUM_ARGS, MAP_DRAWN, chromium_path, idle, streamlit_server  # tests/browser.py

from benchmarks.felt import MAP_PAINTED, first_map, first_text

TARGET_RATIO = 1.3
ALL_HEADS_DRAWN = ".st-key-head_grid .js-plotly-plot .main-svg"
ALL_HEADS_TITLE = ".st-key-all_heads_title h2"
# Clicks the sidebar link named ``name`` and times from the click to the first animation frame that shows
# ``target``: an element matching a selector (``["selector", css]``) or an h1 of that text (``["title", text]``).
_SWITCH = """([name, [kind, value]]) => new Promise((resolve, reject) => {
    const link = [...document.querySelectorAll('[data-testid="stSidebarNav"] a')]
        .find(a => a.textContent.trim().endsWith(name));  // after the icon's name
    if (!link) { reject(new Error('no sidebar link ' + name)); return; }
    const shown = kind === 'selector' ? () => document.querySelector(value) !== null
        : () => [...document.querySelectorAll('h1')].some(h => h.textContent.trim() === value);
    const started = performance.now();
    const limit = started + 120000;
    const tick = () => {
        if (shown()) { resolve(performance.now() - started); return; }
        if (performance.now() > limit) { reject(new Error('not shown: ' + name)); return; }
        requestAnimationFrame(tick);
    };
    link.click();
    requestAnimationFrame(tick);
})"""


def _shown(selector: str) -> tuple[str, str]:
    return ("selector", selector)


def _title(text: str) -> tuple[str, str]:
    return ("title", text)


def switch(page, name: str, target: tuple[str, str]) -> float:
    """Milliseconds from a click on the sidebar link ``name`` to ``target`` shown (:data:`_SWITCH`)."""
    found = float(page.evaluate(_SWITCH, [name, list(target)]))
    idle(page)
    return found


def _grid_file(folder) -> str:
    """All heads' grid for the opening example at the default view, as the app draws it, written as JSON in
    ``folder`` (once: a second call finds it)."""
    path = folder / "grid.json"
    if path.exists():
        return str(path)
    from attention_viz import figures
    from attention_viz.extraction import extract
    from attention_viz.models.loading import load_model
    from attention_viz.ui.view.view_schema import DEFAULTS, EXAMPLE_TEXT

    weights = extract(load_model(), EXAMPLE_TEXT).weights
    grid = figures.head_grid(weights, selected=(int(DEFAULTS["layer"]), int(DEFAULTS["head"])))
    path.write_text(grid.to_json(), encoding="utf-8")
    return str(path)


def page_rows(settings: Settings) -> list[Row]:
    """#20: the first map and a page switch each way, beside Streamlit's floor measured in the same run."""
    from playwright.sync_api import sync_playwright

    from attention_viz.ui.text.i18n import t

    visits = 2 if settings.quick else 5
    compare, all_heads = t("app.page_compare"), t("app.page_all_heads")
    load = [round(os.getloadavg()[0], 2)]
    first, bare_first, to_heads, to_compare, bare_switch, elements_first = [], [], [], [], [], []
    heads_title, grid_switch, same_to_heads, same_to_compare, one_element = [], [], [], [], []
    one_each = []
    with (
        tempfile.TemporaryDirectory() as folder,
        streamlit_server(env={"PYTHONPATH": str(ROOT)}) as app,
        streamlit_server(app="benchmarks/bare_page.py") as bare,
        streamlit_server(app="benchmarks/bare_elements.py") as elements,
        streamlit_server(app="benchmarks/bare_pages.py") as two,
        streamlit_server(app="benchmarks/bare_pages.py", env={"BARE_PAGES_FIGURE": _grid_file(Path(folder))}) as grid,
        streamlit_server(app="benchmarks/bare_pages.py", env=_with_elements(Path(folder))) as alike,
        streamlit_server(app="benchmarks/bare_pages.py", env={"BARE_PAGES_ONE_ELEMENT": "1"}) as single,
        streamlit_server(app="benchmarks/bare_pages.py", env=_ONE_EACH) as both,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        first_map(browser, app[0])  # the first visits (caches filled, scripts compiled) are not counted
        first_text(browser, bare[0])
        first_text(browser, elements[0])
        tab = browser.new_page(viewport={"width": 1280, "height": 720})
        tab.goto(app[0])
        tab.wait_for_selector(MAP_DRAWN, timeout=180_000)
        idle(tab)
        floor = browser.new_page(viewport={"width": 1280, "height": 720})
        floor.goto(two[0])
        floor.wait_for_selector("h1:has-text('Page one')", timeout=60_000)
        idle(floor)
        switch(tab, all_heads, _shown(ALL_HEADS_DRAWN))  # warm-up: each page's first run
        switch(tab, compare, _shown(MAP_PAINTED))
        switch(floor, "Two", _title("Page two"))
        switch(floor, "One", _title("Page one"))
        drawn = browser.new_page(viewport={"width": 1280, "height": 720})
        drawn.goto(grid[0])
        drawn.wait_for_selector("h1:has-text('Page one')", timeout=60_000)
        idle(drawn)
        switch(drawn, "Two", _shown(ALL_HEADS_DRAWN))
        switch(drawn, "One", _title("Page one"))
        mirror = _opened(browser, alike[0])
        switch(mirror, "Two", _shown(ALL_HEADS_DRAWN))
        switch(mirror, "One", _title("Page one"))
        prototype = _opened(browser, single[0])
        switch(prototype, "Two", _title("Page two"))
        switch(prototype, "One", _title("Page one"))
        prototype_both = _opened(browser, both[0])
        switch(prototype_both, "Two", _title("Page two"))
        switch(prototype_both, "One", _title("Page one"))
        for _ in range(visits):
            first.append(first_map(browser, app[0])[0])
            bare_first.append(first_text(browser, bare[0]))
            elements_first.append(first_text(browser, elements[0]))
            to_heads.append(switch(tab, all_heads, _shown(ALL_HEADS_DRAWN)))
            to_compare.append(switch(tab, compare, _shown(MAP_PAINTED)))
            bare_switch.append(switch(floor, "Two", _title("Page two")))
            bare_switch.append(switch(floor, "One", _title("Page one")))
            grid_switch.append(switch(drawn, "Two", _shown(ALL_HEADS_DRAWN)))
            switch(drawn, "One", _title("Page one"))
            same_to_heads.append(switch(mirror, "Two", _shown(ALL_HEADS_DRAWN)))
            same_to_compare.append(switch(mirror, "One", _title("Page one")))
            one_element.append(switch(prototype, "Two", _title("Page two")))
            switch(prototype, "One", _title("Page one"))
            one_each.append(switch(prototype_both, "Two", _title("Page two")))
            switch(prototype_both, "One", _title("Page one"))
            heads_title.append(switch(tab, all_heads, _shown(ALL_HEADS_TITLE)))
            tab.wait_for_selector(ALL_HEADS_DRAWN)
            idle(tab)
            switch(tab, compare, _shown(MAP_PAINTED))
        browser.close()
    load.append(round(os.getloadavg()[0], 2))
    floor_first, floor_switch = statistics.median(bare_first), statistics.median(bare_switch)
    floor_grid = statistics.median(grid_switch)
    rows = [
        _row(
            "first map in a new browser on a warm server: request to the map's cells painted",
            first,
            floor_first,
            "a one-line Streamlit page: request to its title painted",
            load,
        ),
        _row(
            "first map in a new browser on a warm server: request to the map's cells painted",
            first,
            statistics.median(elements_first),
            "a bare Streamlit page with Compare's elements (bare_elements.py): request to its title painted",
            load,
        ),
        _row(
            "page switch, Compare → All heads: click in the sidebar to the grid of heads drawn",
            to_heads,
            floor_switch,
            "a two-page Streamlit app: click to the other page's title painted",
            load,
        ),
        _row(
            "page switch, Compare → All heads: click in the sidebar to the grid of heads drawn",
            to_heads,
            floor_grid,
            "the same two-page app whose second page draws All heads' grid (read from a file): click to the grid drawn",
            load,
        ),
        _row(
            "page switch, Compare → All heads: click in the sidebar to the grid of heads drawn",
            to_heads,
            statistics.median(same_to_heads),
            "a two-page app drawing the app's elements (bare_elements.py) and the grid: click to the grid drawn",
            load,
        ),
        _row(
            "page switch, Compare → All heads: click in the sidebar to its title painted (the page's run)",
            heads_title,
            floor_switch,
            "a two-page Streamlit app: click to the other page's title painted",
            load,
        ),
        _row(
            "page switch, All heads → Compare: click in the sidebar to the map's cells painted",
            to_compare,
            floor_switch,
            "a two-page Streamlit app: click to the other page's title painted",
            load,
        ),
        _row(
            "page switch, All heads → Compare: click in the sidebar to the map's cells painted",
            to_compare,
            statistics.median(same_to_compare),
            "a two-page app drawing the app's elements (bare_elements.py): click to Compare's stand-in's title",
            load,
        ),
        _row(
            "prototype: a page of one custom element drawing Compare's 30 controls as plain DOM, sidebar as the app's",
            one_element,
            floor_switch,
            "a two-page Streamlit app: click to the other page's title painted",
            load,
        ),
        _row(
            "prototype: the sidebar and page two each one custom element (the sidebar's 15 and Compare's 30 controls)",
            one_each,
            floor_switch,
            "a two-page Streamlit app: click to the other page's title painted",
            load,
        ),
    ]
    return rows


_ONE_EACH = {"BARE_PAGES_ONE_ELEMENT": "1", "BARE_PAGES_ONE_SIDEBAR": "1"}  # bare_pages.py: sidebar and page, one each


def _with_elements(folder: Path) -> dict:
    """``bare_pages.py``'s settings for its pages to draw the app's elements, All heads' with the grid."""
    return {"BARE_PAGES_FIGURE": _grid_file(folder), "BARE_PAGES_ELEMENTS": "1"}


def _opened(browser, url: str):
    """A new tab at ``url`` (a bare app), its first page's title painted and the page idle."""
    tab = browser.new_page(viewport={"width": 1280, "height": 720})
    tab.goto(url)
    tab.wait_for_selector("h1:has-text('Page one')", timeout=60_000)
    idle(tab)
    return tab


def _row(figure: str, samples: list[float], floor: float, floor_name: str, load: list[float]) -> Row:
    p50 = statistics.median(samples)
    ratio = p50 / floor if floor else None
    return Row(
        id="20",
        figure=figure,
        size="opening example",
        ours=p50,
        ours_unit="ms",
        baseline=floor,
        baseline_unit="ms",
        baseline_name=floor_name + ", same run",
        ratio=ratio,
        target=f"≤ {TARGET_RATIO} × the floor",
        passed=ratio is not None and ratio <= TARGET_RATIO,
        note=f"max {max(samples):.0f} ms over {len(samples)}; load average {load}",
        samples={"ms": [round(x, 1) for x in samples]},
    )
