"""#11–#14 and #19, what a lecturer feels: measured in headless Chromium at 1280 × 720 on ``streamlit run app.py``.

- **#11 head change**: the key press (→, which Compare's map element answers in the browser) → the map
  showing the new head (its canvas painted from the maps the browser holds), p50 over 15 presses (p95 in
  the note), at 16 and at 512 tokens;
- **#12 new sentence**: Ctrl+Enter in the Sentence box → the map showing the new sentence, median over
  seven 10-token sentences;
- **#13 warm first map**: a new browser (no cache) on a warm server, page request → the main map's cells
  painted; baseline: the same for a one-line Streamlit page (``bare_page.py``, its title painted), visited
  in turn with the app in the same browser: what Streamlit itself takes before any page of it shows;
- **#14 Inside a head**: the key press → every chart of the page showing the new head;
- **#19 the map element**: a layer step at 512 tokens (↓ once the browser has fetched the layers above and
  below ahead; baseline: a second ↓ at once, to a layer not fetched yet);
  10 presses 30 ms apart (steps the map took, and whether the title, the boxes and the address agree once
  the keys stop); the bytes a head step brings (the map element's share: its messages and bundles; and the
  whole page's: every WebSocket frame and HTTP response from the key until the page is idle), beside the
  maps the browser holds (what re-sending them would cost).

Each is timed inside the page (``performance.now()``: from the key's ``keydown`` event, or from the
navigation's start, to the animation frame in which the chart's drawn data has changed; for the map
element, the frame after it painted the new head), so the generator's own scheduling is not counted.

Baseline of #11, #12 and #14, in the same page and run: plotly.js redrawing the very figures the app sent
(``Plotly.react`` of the chart's own data and layout into a detached div of the same size), that is the
drawing that no server could save the browser; the ratio says how many drawings the user waits for.
"""

from __future__ import annotations

import statistics
import sys

from benchmarks.harness import ROOT, Row, Settings, text_of_tokens

sys.path.insert(0, str(ROOT / "tests"))
from browser import CHROMIUM_ARGS, IDLE, MAP, MAP_DRAWN, chromium_path, idle, streamlit_server  # tests/browser.py

ELEMENT = '[data-testid="attention-map"]'
MAP_PAINTED = ELEMENT + "[data-ready='1']"  # the element has painted a head from its maps (canvas)

# The map element: the next keydown (window, capture phase: before the element's own listener) starts the
# clock; it stops in the first animation frame after the element painted another head than now.
_ARM_MAP = """selector => {
    const map = document.querySelector(selector);
    const shown = () => map.dataset.layer + ':' + map.dataset.head + ':' + map.dataset.ready;
    const before = shown();
    const felt = window.__felt = {start: null, end: null};
    window.addEventListener('keydown', () => { if (felt.start === null) felt.start = performance.now(); },
        {capture: true, once: true});
    const tick = () => {
        if (felt.start !== null && map.dataset.ready === '1' && shown() !== before) {
            felt.end = performance.now(); return;
        }
        requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
}"""

# The chart's drawn data, compared between frames: trace types, row labels and the first row of values.
_SIGNATURE = """el => (el && el._fullData) ? JSON.stringify(el._fullData.map(t =>
    [t.type, t.y && Array.from(t.y).slice(0, 3), t.z && t.z.length, t.z && Array.from(t.z[0] || []).slice(0, 8)]))
    : null"""

# Arms a watch: the next keydown (capture phase, before Streamlit sees it) starts the clock; the clock
# stops in the first animation frame in which every chart at ``selectors`` shows other data than now
# (``selectors`` null: every plotly chart shown on the page now, by its place among those shown, and the map
# element's head: its plotly chart keeps its data while its canvas paints the new head).
_ARM_KEY = (
    """selectors => {
    const chartData = """
    + _SIGNATURE
    + """;
    const map = document.querySelector('"""
    + ELEMENT
    + """');
    const signature = el => el === map ? (map.dataset.ready === '1' ? map.dataset.layer + ':' + map.dataset.head : null)
        : chartData(el);
    const shown = el => el.offsetParent !== null && !(map && map.contains(el));
    const charts = () => selectors ? selectors.map(s => document.querySelector(s))
        : [...(map ? [map] : []), ...Array.from(document.querySelectorAll('.js-plotly-plot')).filter(shown)];
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


def map_steps(page, key: str, changes: int) -> list[float]:
    """``changes`` presses of ``key`` on Compare's map element: milliseconds from each keydown to the frame
    after the element painted the new head; waits for the page's rerun after each."""
    felt = []
    for _ in range(changes):
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        idle(page, frames=3)
        page.evaluate(_ARM_MAP, ELEMENT)
        page.keyboard.press(key)
        page.wait_for_function("() => window.__felt.end !== null", timeout=120_000, polling=20)
        felt.append(float(page.evaluate("() => window.__felt.end - window.__felt.start")))
        page.wait_for_timeout(150)  # the element's report leaves within 60 ms
        page.wait_for_selector(IDLE, timeout=120_000)
    return felt


def layer_steps(page, changes: int) -> tuple[list[float], list[float]]:
    """``changes`` ↓ presses on Compare's map element, each once the browser has fetched the next layer
    ahead (as after a lecturer's pause), and each followed by a second ↓ at once (30 ms later), to a layer
    not fetched yet: milliseconds from keydown to the new layer painted, for both kinds."""
    ahead, not_ahead = [], []
    fetched = """([selector, layer]) => (document.querySelector(selector).dataset.held || '').split(',')
        .includes(String(layer))"""  # fetched ahead, or in the bundle of the page's own data
    for _ in range(changes):
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        layers = page.eval_on_selector(ELEMENT, "e => +e.dataset.shape.split('x')[0]")
        following = (page.eval_on_selector(ELEMENT, "e => +e.dataset.layer") + 1) % layers
        page.wait_for_function(fetched, arg=[ELEMENT, following], timeout=120_000, polling=50)
        for felt in (ahead, not_ahead):
            if felt is ahead:
                idle(page, frames=3)
            else:
                page.wait_for_timeout(30)
            page.evaluate(_ARM_MAP, ELEMENT)
            page.keyboard.press("ArrowDown")
            page.wait_for_function("() => window.__felt.end !== null", timeout=120_000, polling=20)
            felt.append(float(page.evaluate("() => window.__felt.end - window.__felt.start")))
        page.wait_for_timeout(150)
        page.wait_for_selector(IDLE, timeout=120_000)
    return ahead, not_ahead


def _percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _settle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=120_000)
    idle(page)


def fast_presses(page, presses: int = 10, apart_ms: int = 30) -> tuple[int, bool]:
    """``presses`` → keys ``apart_ms`` apart: the heads the map stepped, and whether the page's title, the
    Head box and the address name the map's head once the page is idle."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    view = lambda: page.eval_on_selector(ELEMENT, "e => [+e.dataset.layer, +e.dataset.head]")  # noqa: E731
    layer, head = view()
    for _ in range(presses):
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(apart_ms)
    _settle(page)
    new_layer, new_head = view()
    heads = page.eval_on_selector(ELEMENT, "e => +e.dataset.shape.split('x')[1]")
    steps = (new_layer * heads + new_head) - (layer * heads + head)
    title = page.locator("h2").first.inner_text()
    box = page.get_by_role("combobox", name="Head", exact=True).input_value()
    agree = title.endswith(f"{new_layer}, head {new_head}") and box == str(new_head)
    agree = agree and f"layer={new_layer}&head={new_head}&" in page.url
    return steps, agree


def step_bytes(page, key: str = "ArrowRight") -> tuple[int, int, int]:
    """Bytes the browser receives for one step, from the key until the page is idle: the map element's
    share (its WebSocket messages and bundle fetches), the whole page's (every WebSocket frame and HTTP
    response), and the size of the maps the browser holds (the bundle it has)."""
    import base64

    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    client = page.context.new_cdp_session(page)
    client.send("Network.enable")
    frames: list[bytes] = []
    responses: dict[str, str] = {}
    finished: dict[str, int] = {}
    client.on("Network.webSocketFrameReceived", lambda e: frames.append(_frame_bytes(e["response"], base64)))
    client.on("Network.responseReceived", lambda e: responses.__setitem__(e["requestId"], e["response"]["url"]))
    client.on("Network.loadingFinished", lambda e: finished.__setitem__(e["requestId"], int(e["encodedDataLength"])))
    held = page.evaluate(
        """async () => { const entries = performance.getEntriesByType('resource')
            .filter(e => e.name.includes('/attention-viz/maps/')); const last = entries[entries.length - 1];
            return last ? (last.decodedBodySize || last.transferSize) : 0; }"""
    )
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)
    _settle(page)
    client.detach()
    element = 0
    for frame in frames:
        message = ForwardMsg()
        try:
            message.ParseFromString(frame)
        except Exception:
            continue
        if message.WhichOneof("type") == "delta" and message.delta.WhichOneof("type") == "new_element":
            found = message.delta.new_element
            if found.WhichOneof("type") == "bidi_component" and found.bidi_component.component_name.endswith(
                ".attention_map"
            ):
                element += len(frame)
    bundles = sum(size for rid, size in finished.items() if "/attention-viz/maps/" in responses.get(rid, ""))
    page_total = sum(len(frame) for frame in frames) + sum(finished.values())
    return element + bundles, page_total, int(held)


def _frame_bytes(response: dict, base64) -> bytes:
    data = response.get("payloadData", "")
    return base64.b64decode(data) if response.get("opcode") == 2 else data.encode()


def new_sentence(page, text: str) -> float:
    box = page.locator("textarea").first
    box.fill(text)
    return felt_change(page, lambda: box.press("Control+Enter"), [MAP])


def first_map(browser, url: str) -> tuple[float, float, float]:
    """A new browser (a context: no cache) opens ``url``: milliseconds from the page request (navigation
    start) to the map's cells painted (the element's canvas, from its data, before or without plotly.js),
    to the map drawn by plotly (axes, labels, colour bar), and to DOMContentLoaded (Streamlit's own scripts)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    tab.add_init_script(
        """new MutationObserver((_, observer) => {
            const map = document.querySelector('[data-testid="attention-map"][data-ready="1"]');
            if (map && window.__painted === undefined) { window.__painted = performance.now(); observer.disconnect(); }
        }).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-ready']});"""
    )
    tab.goto(url, wait_until="commit")
    tab.wait_for_selector(MAP_DRAWN, timeout=180_000)
    drawn = tab.evaluate("() => performance.now()")  # since the navigation started (timeOrigin)
    painted = tab.evaluate("() => window.__painted === undefined ? null : window.__painted")
    scripts = tab.evaluate("() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    context.close()
    return float(painted if painted is not None else drawn), float(drawn), float(scripts)


def first_text(browser, url: str) -> float:
    """A new browser (a context: no cache) opens the bare Streamlit page (``benchmarks/bare_page.py``) at
    ``url``: milliseconds from the page request to its title painted, the floor under #13."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    tab.add_init_script(
        """new MutationObserver((_, observer) => {
            if (document.querySelector('h1') && window.__painted === undefined) {
                window.__painted = performance.now(); observer.disconnect();
            }
        }).observe(document, {subtree: true, childList: true});"""
    )
    tab.goto(url, wait_until="commit")
    tab.wait_for_function("() => window.__painted !== undefined", timeout=180_000)
    painted = tab.evaluate("() => window.__painted")
    context.close()
    return float(painted)


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


def _element_rows(page, size: str, presses: bool = True) -> list[Row]:
    """#19 on the page as it is: 10 fast presses, and the bytes of one head step."""
    rows = []
    if presses:
        steps, agree = fast_presses(page)
        rows.append(
            Row(
                id="19",
                figure="10 presses 30 ms apart: heads the map stepped (page, boxes and address agree after)",
                size=size,
                ours=float(steps),
                ours_unit="steps",
                baseline=10.0,
                baseline_unit="presses",
                baseline_name="presses sent",
                ratio=steps / 10,
                target="= 10, agreeing",
                passed=steps == 10 and agree,
                note="agree" if agree else "the page did not agree with the map",
            )
        )
    element, whole, held = step_bytes(page)
    rows.append(
        Row(
            id="19",
            figure="bytes of one head step: the map element's share (whole page in the note)",
            size=size,
            ours=float(element),
            ours_unit="bytes",
            baseline=float(held) or None,
            baseline_unit="bytes",
            baseline_name="the maps the browser holds (re-sending them)",
            ratio=element / held if held else None,
            target="≤ 2048 bytes",
            passed=element <= 2048,
            note=f"whole page {whole} bytes (target at 16 tokens: ≤ 56 KB, half of the plotly design's)",
            samples={"element_bytes": [element], "page_bytes": [whole]},
        )
    )
    return rows


def felt_rows(tokenizer, settings: Settings) -> list[Row]:
    """#11 head change (16 and 512 tokens; 256 in --quick), #12 new sentence, #13 warm first map, #14 Inside a
    head, #19 the map element (layer step, fast presses, bytes), all felt in Chromium on one
    ``streamlit run app.py``."""
    from playwright.sync_api import sync_playwright

    changes = 5 if settings.quick else 15
    long_tokens = 256 if settings.quick else 512  # 256: over the budget for every layer, so #19 fetches ahead
    rows: list[Row] = []
    with streamlit_server(env={"PYTHONPATH": str(ROOT)}) as running, sync_playwright() as playwright:
        url = running[0]
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url)
        page.wait_for_selector(MAP_DRAWN, timeout=180_000)
        idle(page)
        rows.append(_head_change_row(page, "16 tokens", changes))
        rows.extend(_element_rows(page, "16 tokens"))
        rows.append(_new_sentence_row(page, 2 if settings.quick else 7))
        new_sentence(page, text_of_tokens(tokenizer, long_tokens))
        page.wait_for_selector(MAP_PAINTED, timeout=180_000)
        _settle(page)
        rows.append(_head_change_row(page, f"{long_tokens} tokens", changes))
        rows.append(_layer_step_row(page, f"{long_tokens} tokens", 2 if settings.quick else 5))
        rows.extend(_element_rows(page, f"{long_tokens} tokens", presses=False))
        rows.append(_first_map_row(browser, url, 1 if settings.quick else 3))
        rows.append(_inside_row(page, url, changes))
        browser.close()
    return rows


def _head_change_row(page, size: str, changes: int) -> Row:
    """#11: ``changes`` presses of → on the map, each from the key to the map's new head painted."""
    felt = map_steps(page, "ArrowRight", changes)
    return _row(
        "11",
        "head change felt: → key to the map's new head painted",
        size,
        felt,
        redraw_ms(page),
        REDRAW,
        16,
        note=f"p95 {_percentile(felt, 0.95):.1f} ms (target ≤ 50 ms)",
    )


def _new_sentence_row(page, count: int) -> Row:
    """#12: ``count`` new sentences, each from Ctrl+Enter to its map drawn."""
    words = ("cat", "dog", "owl", "fox", "hen", "ant", "bee")[:count]
    typed = [new_sentence(page, f"The {word} sat on the mat near the door.") for word in words]
    return _row(
        "12", "new sentence felt: Ctrl+Enter to its map drawn", "10 tokens", typed, redraw_ms(page), REDRAW, 300
    )


def _layer_step_row(page, size: str, steps: int) -> Row:
    """#19: ↓ to a layer fetched ahead, against a second ↓ to a layer not fetched yet."""
    ahead, not_ahead = layer_steps(page, steps)
    return _row(
        "19",
        "layer step felt: ↓ key to the new layer's head painted (fetched ahead: its neighbours)",
        size,
        ahead,
        statistics.median(not_ahead),
        "a second ↓ 30 ms later, to a layer not fetched yet (the page's rerun, then its fetch)",
        300,
        note=f"p95 {_percentile(ahead, 0.95):.1f} ms; not fetched: p95 {_percentile(not_ahead, 0.95):.0f} ms",
    )


def _first_map_row(browser, url: str, visits: int) -> Row:
    """#13: ``visits`` new browsers on the warm server, each from the page request to the map's cells painted,
    in turn with as many visits of a one-line Streamlit page (its title painted): Streamlit's own floor."""
    felt, drawn, scripts, bare = [], [], [], []
    with streamlit_server(app="benchmarks/bare_page.py") as floor:
        first_text(browser, floor[0])  # its first start (script compiled, caches filled) not counted
        for _ in range(visits):
            for found, kept in zip(first_map(browser, url), (felt, drawn, scripts), strict=True):
                kept.append(found)
            bare.append(first_text(browser, floor[0]))
    return _row(
        "13",
        "first map in a new browser on a warm server: page request to the map's cells painted",
        "opening sentence",
        felt,
        statistics.median(bare),
        "a one-line Streamlit page's title painted (Streamlit's own floor), same browser",
        1000,
        note=f"drawn by plotly (labels, colour bar, hover) at {statistics.median(drawn):.0f} ms; "
        f"the app page's DOMContentLoaded at {statistics.median(scripts):.0f} ms",
    )


def _inside_row(page, url: str, changes: int) -> Row:
    """#14: Inside a head, ``changes`` presses of →, each to every chart's new data drawn."""
    page.goto(url + "/?page=inside")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
    idle(page)
    inside = head_changes(page, changes, None)
    charts = page.evaluate("() => window.__felt.charts")
    return _row(
        "14",
        "Inside a head felt: → key to every chart's new data drawn",
        f"{charts} charts",
        inside,
        _charts_redraw_ms(page),
        "plotly.js drawing each of its charts once",
        200,
    )
