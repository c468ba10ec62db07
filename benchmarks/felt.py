"""What a lecturer feels, measured in headless Chromium at 1280 × 720 on a real ``streamlit run app.py``.

- **head change**: the key press (→, the Head stepper's shortcut) → the main map showing the new head's
  data, p50 over ``changes`` presses, at 16 and at 512 tokens;
- **new sentence**: Ctrl+Enter in the Sentence box → the map showing the new sentence, median over
  8–10-token sentences;
- **warm first map**: a new browser tab on a warm server, page request → the main map drawn;
- **Inside a head**: the key press → every chart of the page showing the new head.

Each is timed inside the page (``performance.now()``: from the key's ``keydown`` event, or from the
navigation's start, to the animation frame in which the chart's drawn data has changed), so the
generator's own scheduling is not counted.

Baseline of each, in the same page and run: plotly.js redrawing the very figure the app sent
(``Plotly.react`` of the chart's own data and layout into a detached div of the same size), that is the
drawing that no server could save the browser; the ratio says how many drawings the user waits for.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field

from benchmarks.harness import ROOT

sys.path.insert(0, str(ROOT / "tests"))
from browser import CHROMIUM_ARGS, IDLE, MAP, MAP_DRAWN, chromium_path, idle  # tests/browser.py

# The chart's drawn data, compared between frames: trace types, row labels and the first row of values.
_SIGNATURE = """el => (el && el._fullData) ? JSON.stringify(el._fullData.map(t =>
    [t.type, t.y && Array.from(t.y).slice(0, 3), t.z && t.z.length, t.z && Array.from(t.z[0] || []).slice(0, 8)]))
    : null"""

# Arms a watch: the next keydown (capture phase, before Streamlit sees it) starts the clock; the clock
# stops in the first animation frame in which every chart at ``selectors`` shows other data than now.
_ARM_KEY = (
    """selectors => {
    const signature = """
    + _SIGNATURE
    + """;
    const before = selectors.map(s => signature(document.querySelector(s)));
    const felt = window.__felt = {start: null, end: null};
    document.addEventListener('keydown', () => { if (felt.start === null) felt.start = performance.now(); },
        {capture: true, once: true});
    const tick = () => {
        if (felt.start !== null && selectors.every((s, i) => {
            const now = signature(document.querySelector(s));
            return now !== null && now !== before[i];
        })) { felt.end = performance.now(); return; }
        requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
}"""
)

# Redraw the chart at ``selector`` from its own data and layout into a detached div of the same size,
# ``times`` times; the median milliseconds of one drawing (Streamlit's bundled plotly.js does not leave a
# global ``Plotly``; the chart's div carries the same library's methods via its ``_context``? no: we find
# the library on the element's prototype chain through ``el.__proto__`` is not reliable, so the page's
# own library is reached through the chart's ``_fullLayout._modules``' owner: ``el.layout`` and ``el.data``
# are redrawn with the library object that plotly.js attaches as ``window.Plotly`` when present.
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


@dataclass
class Felt:
    """Milliseconds felt for one kind of change (every sample kept)."""

    samples_ms: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float | None:
        return statistics.median(self.samples_ms) if self.samples_ms else None


def felt_change(page, press, selectors: list[str], timeout_ms: int = 120_000) -> float:
    """Milliseconds from the keydown that ``press()`` sends to the frame in which every chart at
    ``selectors`` shows new data; then waits for the run to end."""
    page.evaluate(_ARM_KEY, selectors)
    press()
    page.wait_for_function("() => window.__felt.end !== null", timeout=timeout_ms, polling=50)
    spent = page.evaluate("() => window.__felt.end - window.__felt.start")
    page.wait_for_selector(IDLE, timeout=timeout_ms)
    return float(spent)


def head_changes(page, changes: int, selectors: list[str] | None = None) -> Felt:
    """``changes`` presses of → (next head) with the focus outside any text box."""
    selectors = selectors or [MAP]
    felt = Felt()
    for _ in range(changes):
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # no box has the focus
        idle(page, frames=3)
        felt.samples_ms.append(felt_change(page, lambda: page.keyboard.press("ArrowRight"), selectors))
    return felt


def new_sentence(page, text: str) -> float:
    box = page.locator("textarea").first
    box.fill(text)
    return felt_change(page, lambda: box.press("Control+Enter"), [MAP])


def first_map(browser, url: str) -> float:
    """Milliseconds from the page request (navigation start) to the main map drawn, in a new tab."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(url, wait_until="commit")
    page.wait_for_selector(MAP_DRAWN, timeout=180_000)
    spent = page.evaluate("() => performance.now()")  # since the navigation started (timeOrigin)
    page.close()
    return float(spent)


def redraw_ms(page, selector: str = MAP, times: int = 7) -> float | None:
    return page.evaluate(_REDRAW, [selector, times])


if __name__ == "__main__":  # a quick look: python -m benchmarks.felt [head16 sentence warm head512]
    from playwright.sync_api import sync_playwright

    from benchmarks.harness import text_of_tokens
    from browser import streamlit_server

    from attention_viz.models.loading import load_model, BUNDLED_MODEL

    want = set(sys.argv[1:]) or {"head16", "sentence", "warm", "head512"}
    tok = load_model(BUNDLED_MODEL).tokenizer
    with streamlit_server(env={"PYTHONPATH": str(ROOT)}) as running, sync_playwright() as pw:
        url = running[0]
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url)
        page.wait_for_selector(MAP_DRAWN, timeout=180_000)
        idle(page)
        out = {"first_map_cold_page_ms": page.evaluate("() => performance.now()")}
        if "head16" in want:
            out["head16"] = head_changes(page, 15).samples_ms
            out["redraw16"] = redraw_ms(page)
        if "sentence" in want:
            sentences = [f"The {w} sat on the mat near the door." for w in ("cat", "dog", "owl", "fox", "hen")]
            out["sentence"] = [new_sentence(page, s) for s in sentences]
        if "warm" in want:
            out["warm_first"] = [first_map(browser, url) for _ in range(3)]
        if "head512" in want:
            new_sentence(page, text_of_tokens(tok, 512))
            out["head512"] = head_changes(page, 15).samples_ms
            out["redraw512"] = redraw_ms(page)
        browser.close()
    for k, v in out.items():
        if isinstance(v, list):
            print(k, "p50", round(statistics.median(v)), [round(x) for x in v])
        else:
            print(k, v)
