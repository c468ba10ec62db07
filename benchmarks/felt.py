"""#11–#14, what a lecturer feels: measured in headless Chromium at 1280 × 720 on a real ``streamlit run app.py``.

- **#11 head change**: the key press (→, the Head stepper's shortcut) → the main map showing the new head's
  data, p50 over 15 presses, at 16 and at 512 tokens;
- **#12 new sentence**: Ctrl+Enter in the Sentence box → the map showing the new sentence, median over
  seven 10-token sentences;
- **#13 warm first map**: a new browser (no cache) on a warm server, page request → the main map drawn;
  baseline: the same navigation's DOMContentLoaded, Streamlit's own scripts loaded;
- **#14 Inside a head**: the key press → every chart of the page showing the new head.

Each is timed inside the page (``performance.now()``: from the key's ``keydown`` event, or from the
navigation's start, to the animation frame in which the chart's drawn data has changed), so the
generator's own scheduling is not counted.

Baseline of #11, #12 and #14, in the same page and run: plotly.js redrawing the very figures the app sent
(``Plotly.react`` of the chart's own data and layout into a detached div of the same size), that is the
drawing that no server could save the browser; the ratio says how many drawings the user waits for.
"""

from __future__ import annotations

import statistics
import sys

from benchmarks.harness import ROOT, Row, Settings, text_of_tokens

sys.path.insert(0, str(ROOT / "tests"))
from browser import CHROMIUM_ARGS, IDLE, MAP, MAP_DRAWN, chromium_path, idle  # tests/browser.py

# The chart's drawn data, compared between frames: trace types, row labels and the first row of values.
_SIGNATURE = """el => (el && el._fullData) ? JSON.stringify(el._fullData.map(t =>
    [t.type, t.y && Array.from(t.y).slice(0, 3), t.z && t.z.length, t.z && Array.from(t.z[0] || []).slice(0, 8)]))
    : null"""

# Arms a watch: the next keydown (capture phase, before Streamlit sees it) starts the clock; the clock
# stops in the first animation frame in which every chart at ``selectors`` shows other data than now
# (``selectors`` null: every plotly chart on the page that is drawn now, by its place in the page).
_ARM_KEY = (
    """selectors => {
    const signature = """
    + _SIGNATURE
    + """;
    const charts = () => selectors ? selectors.map(s => document.querySelector(s))
        : Array.from(document.querySelectorAll('.js-plotly-plot'));
    const before = charts().map(signature);
    const watched = before.map((b, i) => i).filter(i => before[i] !== null);
    const felt = window.__felt = {start: null, end: null, charts: watched.length};
    document.addEventListener('keydown', () => { if (felt.start === null) felt.start = performance.now(); },
        {capture: true, once: true});
    const tick = () => {
        const now = felt.start === null ? null : charts().map(signature);
        if (now && watched.every(i => now[i] !== null && now[i] !== before[i])) {
            felt.end = performance.now(); return;
        }
        requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
}"""
)

# Redraw the chart at ``selector`` from its own data and layout into a detached div of the same size,
# ``times`` times; the median milliseconds of one drawing. Streamlit's plotly.js chunk sets ``window.Plotly``.
_REDRAW = """async ([selector, times]) => {
    const el = document.querySelector(selector);
    const Plotly = window.Plotly;
    if (!el || !Plotly) return null;
    const div = document.createElement('div');
    div.style.cssText = `position:absolute;left:-10000px;top:0;width:${el.clientWidth}px;height:${el.clientHeight}px`;
    document.body.appendChild(div);
    const spent = [];
    for (let i = 0; i < times; i++) {
        const start = performance.now();
        await Plotly.react(div, JSON.parse(JSON.stringify(el.data)), JSON.parse(JSON.stringify(el.layout)));
        await new Promise(r => requestAnimationFrame(r));
        spent.push(performance.now() - start);
        Plotly.purge(div);
    }
    div.remove();
    spent.sort((a, b) => a - b);
    return spent[Math.floor(spent.length / 2)];
}"""


def felt_change(page, press, selectors: list[str] | None, timeout_ms: int = 120_000) -> float:
    """Milliseconds from the keydown that ``press()`` sends to the frame in which every chart at
    ``selectors`` (None: every chart drawn on the page) shows new data; then waits for the run to end."""
    page.evaluate(_ARM_KEY, selectors)
    press()
    page.wait_for_function("() => window.__felt.end !== null", timeout=timeout_ms, polling=50)
    spent = page.evaluate("() => window.__felt.end - window.__felt.start")
    page.wait_for_selector(IDLE, timeout=timeout_ms)
    return float(spent)


def head_changes(page, changes: int, selectors: list[str] | None = (MAP,)) -> list[float]:
    """``changes`` presses of → (next head) with the focus outside any text box; ``selectors`` as for
    :func:`felt_change`."""
    selectors = None if selectors is None else list(selectors)
    felt = []
    for _ in range(changes):
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # no box has the focus
        idle(page, frames=3)
        felt.append(felt_change(page, lambda: page.keyboard.press("ArrowRight"), selectors))
    return felt


def new_sentence(page, text: str) -> float:
    box = page.locator("textarea").first
    box.fill(text)
    return felt_change(page, lambda: box.press("Control+Enter"), [MAP])


def first_map(browser, url: str) -> tuple[float, float]:
    """A new browser (a context: no cache) opens ``url``: milliseconds from the page request (navigation
    start) to the main map drawn, and to DOMContentLoaded (Streamlit's own scripts loaded)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    tab.goto(url, wait_until="commit")
    tab.wait_for_selector(MAP_DRAWN, timeout=180_000)
    drawn = tab.evaluate("() => performance.now()")  # since the navigation started (timeOrigin)
    scripts = tab.evaluate("() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    context.close()
    return float(drawn), float(scripts)


def redraw_ms(page, selector: str = MAP, times: int = 7) -> float | None:
    return page.evaluate(_REDRAW, [selector, times])


def _charts_redraw_ms(page) -> float:
    """The median drawing of every chart drawn on the page now, summed: drawing the page's charts once."""
    count = page.evaluate("() => document.querySelectorAll('.js-plotly-plot').length")
    total = 0.0
    for index in range(count):
        drawn = page.evaluate(
            "i => { const el = document.querySelectorAll('.js-plotly-plot')[i]; return !!(el && el._fullData); }", index
        )
        if drawn:
            page.evaluate("i => document.querySelectorAll('.js-plotly-plot')[i].setAttribute('data-felt', i)", index)
            total += redraw_ms(page, f".js-plotly-plot[data-felt='{index}']", 3) or 0.0
    return total


def _row(
    id_: str,
    figure: str,
    size: str,
    samples: list[float],
    baseline: float | None,
    baseline_name: str,
    target_ms: float,
    note: str = "",
) -> Row:
    p50 = statistics.median(samples)
    return Row(
        id=id_,
        figure=figure,
        size=size,
        ours=p50,
        ours_unit="ms",
        baseline=baseline,
        baseline_unit="ms",
        baseline_name=baseline_name,
        ratio=p50 / baseline if baseline else None,
        target=f"≤ {target_ms:g} ms",
        passed=p50 <= target_ms,
        note=note,
        samples={"ms": [round(x, 1) for x in samples]},
    )


REDRAW = "plotly.js drawing the same chart once, same page"


def felt_rows(tokenizer, settings: Settings) -> list[Row]:
    """#11 head change (16 and 512 tokens; 128 in --quick), #12 new sentence, #13 warm first map, #14 Inside a
    head, all felt in Chromium on one ``streamlit run app.py``."""
    from browser import streamlit_server  # tests/browser.py
    from playwright.sync_api import sync_playwright

    changes = 5 if settings.quick else 15
    long_tokens = 128 if settings.quick else 512
    rows: list[Row] = []
    with streamlit_server(env={"PYTHONPATH": str(ROOT)}) as running, sync_playwright() as playwright:
        url = running[0]
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url)
        page.wait_for_selector(MAP_DRAWN, timeout=180_000)
        idle(page)
        short = head_changes(page, changes)
        rows.append(
            _row(
                "11",
                "head change felt: → key to the map's new data drawn",
                "16 tokens",
                short,
                redraw_ms(page),
                REDRAW,
                100,
            )
        )
        words = ("cat", "dog", "owl", "fox", "hen", "ant", "bee")[: 2 if settings.quick else 7]
        typed = [new_sentence(page, f"The {word} sat on the mat near the door.") for word in words]
        rows.append(
            _row(
                "12", "new sentence felt: Ctrl+Enter to its map drawn", "10 tokens", typed, redraw_ms(page), REDRAW, 300
            )
        )
        new_sentence(page, text_of_tokens(tokenizer, long_tokens))
        long = head_changes(page, changes)
        rows.append(
            _row(
                "11",
                "head change felt: → key to the map's new data drawn",
                f"{long_tokens} tokens",
                long,
                redraw_ms(page),
                REDRAW,
                200,
            )
        )
        visits, scripts = zip(*(first_map(browser, url) for _ in range(1 if settings.quick else 3)), strict=True)
        rows.append(
            _row(
                "13",
                "first map in a new browser on a warm server: page request to the map drawn",
                "opening sentence",
                list(visits),
                statistics.median(scripts),
                "the same page's own scripts loaded (DOMContentLoaded)",
                1000,
            )
        )
        page.goto(url + "/?page=inside")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
        idle(page)
        inside = head_changes(page, changes, None)
        charts = page.evaluate("() => window.__felt.charts")
        rows.append(
            _row(
                "14",
                "Inside a head felt: → key to every chart's new data drawn",
                f"{charts} charts",
                inside,
                _charts_redraw_ms(page),
                "plotly.js drawing each of its charts once",
                200,
            )
        )
        browser.close()
    return rows
