"""The lecture screen in a real browser (Debian's Chromium): the click sequences that used to end on
Streamlit's error page, the keyboard steppers, the one-screen layout measured at a projector's 1280 × 720 and
at 800 × 600, and on every page nothing fetched from another host and no layout fault."""

import re
from urllib.parse import urlsplit

import numpy as np
import pytest
from browser import ARTIFACTS, IDLE, MAP, plotly_z_once_close, settled
from playwright.sync_api import expect

from attention_viz.extraction import extract
from attention_viz.ui.text import i18n
from attention_viz.ui.view import state

PAGES = ("compare", "all_heads", "head_stats", "head_similarity", "rollout", "inside", "article")
ERROR_BOX = "[data-testid='stException']"
ZH = i18n.table("zh")
# What the main area shows: its text and every chart's data. An action's run has happened once it changed.
SIGNATURE = """() => JSON.stringify([document.querySelector('.stMainBlockContainer').innerText,
    Array.from(document.querySelectorAll('.js-plotly-plot'), el => (el._fullData || []).map(trace =>
        [trace.y && Array.from(trace.y), trace.z && JSON.stringify(trace.z).slice(0, 4000), String(trace.text)]))])"""


def _act(page, action) -> None:
    """Do ``action`` and wait until the page shows its result and the run that drew it is over."""
    before = page.evaluate(SIGNATURE)
    action()
    page.wait_for_function(f"before => ({SIGNATURE})() !== before", arg=before, timeout=90_000)
    page.wait_for_selector(IDLE, timeout=90_000)


def _open(chromium, url: str, width: int = 1280, height: int = 720, query: str = ""):
    """A new session on ``url`` + ``query``, once its first chart is drawn and still."""
    page = chromium.new_page(viewport={"width": width, "height": height})
    page.goto(f"{url}/{query}")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
    page.wait_for_selector(IDLE, timeout=90_000)
    settled(page, ".js-plotly-plot")
    return page


def _no_error_page(page) -> None:
    assert page.locator(ERROR_BOX).count() == 0
    assert page.get_by_text("This app has encountered an error").count() == 0
    expect(page.locator("[data-testid='stSidebar'] textarea").first).to_be_visible()  # the sidebar stays


def _heading(page, text: str) -> None:
    expect(page.get_by_role("heading", name=text, exact=True)).to_be_visible(timeout=60_000)


def _language(page, name: str) -> None:
    _act(page, lambda: page.locator("[data-testid='stSidebar'] label").filter(has_text=name).first.click())


def _choose(page, selector: str, option: str) -> None:
    """Pick ``option`` in the selectbox inside ``selector``. A token option reads "10: it" with the token
    between invisible bidi isolates: typing "10:" finds it, and its name is matched around them."""
    box = page.locator(f"{selector} input[role='combobox']").first
    token = re.fullmatch(r"(\d+): (.+)", option)
    typed = f"{token[1]}:" if token else option
    name = re.compile(rf"^{token[1]}: [\u2066-\u2069]?{re.escape(token[2])}[\u2066-\u2069]?$") if token else option

    def choose() -> None:
        box.click()
        box.fill(typed)  # the list shows the options that match what is typed
        page.get_by_role("option", name=name, exact=not token).first.click()

    _act(page, choose)


# Compare's map draws its own ‹ › buttons (in the browser)
MAP_BUTTONS = {
    f"step_{unit}_{direction}": f".av-stepper.av-{unit} button >> nth={0 if direction == 'previous' else -1}"
    for unit in ("layer", "head")
    for direction in ("previous", "next")
}
MAP_FOCUS = "select.av-focus"  # and its Query token box


def _click(page, key: str) -> None:
    if key in MAP_BUTTONS and page.locator(".av-stepper").count():
        _act(page, lambda: page.locator(MAP_BUTTONS[key]).click())
        return
    _act(page, lambda: page.locator(f".st-key-{key} button").first.click())


def _focus(page, query: int) -> None:
    _act(page, lambda: page.locator(MAP_FOCUS).select_option(str(query)))


# --- Click sequences -------------------------------------------------------------------------------------


def test_chinese_then_head_then_difference(server, chromium):
    url, _, _ = server
    page = _open(chromium, url)
    _language(page, "中文")
    _click(page, "step_head_next")
    _heading(page, ZH["compare.title"].format(layer=3, head=2))
    _act(page, page.locator(".av-kinds button").filter(has_text=ZH["compare.view_difference"]).click)
    _no_error_page(page)
    for language in ("English", "中文"):
        _language(page, language)
        _no_error_page(page)
    _click(page, "step_head_next")
    _heading(page, ZH["compare.title"].format(layer=3, head=3))
    # every option box shows a label of the current language
    variant = page.locator("[class*='st-key-_variant-'] input").input_value()
    focus = page.locator(f"{MAP_FOCUS} option:checked").inner_text()
    assert ZH["compare.variant_exact"] in variant and ZH["compare.focus_none"] in focus
    page.screenshot(path=ARTIFACTS / "sequence_chinese.png")
    page.close()


def test_focus_then_example_then_head(server, chromium):
    url, _, _ = server
    page = _open(chromium, url)
    _focus(page, 10)
    expect(page.locator(".av-bars.js-plotly-plot")).to_be_visible()
    _choose(page, "[class*='st-key-_example-']", "Repeated words")
    _click(page, "step_head_next")
    _no_error_page(page)
    _heading(page, "Layer 2, head 10")
    page.close()


def test_focus_then_hide_special_then_head_and_a_pair_block(server, chromium):
    url, _, _ = server
    page = _open(chromium, url)
    _focus(page, 10)
    _act(page, page.locator(".st-key-_hide_special label").first.click)
    _click(page, "step_head_next")
    _no_error_page(page)
    _heading(page, "Layer 3, head 2")
    _choose(page, "[class*='st-key-_example-']", "Sentence pair")
    _focus(page, 3)
    _choose(page, "[class*='st-key-_block-']", "B → A")
    _no_error_page(page)
    rows = page.eval_on_selector(MAP, "el => el._fullData[0].z.length")
    assert rows == 7  # the cat is on the mat . : B's queries, [SEP] hidden
    page.close()


def test_inside_chinese_then_temperature(server, chromium):
    url, _, _ = server
    page = _open(chromium, url, query="?page=inside")
    _language(page, "中文")
    slider = page.get_by_role("slider", name=ZH["inside.temperature"])
    slider.focus()
    _act(page, lambda: slider.press("ArrowRight"))
    _no_error_page(page)
    expect(slider).to_have_value("1.1")
    page.close()


# --- Keyboard stepping -----------------------------------------------------------------------------------


def test_arrow_keys_step_heads_and_layers_without_focusing_a_widget(server, chromium, bundled):
    url, _, _ = server
    page = _open(chromium, url)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # no widget has the focus
    for key, heading in (
        ("ArrowRight", "Layer 3, head 2"),
        ("ArrowDown", "Layer 4, head 2"),
        ("ArrowLeft", "Layer 4, head 1"),
    ):
        _act(page, lambda key=key: page.keyboard.press(key))
        _heading(page, heading)
    weights = extract(bundled, state.EXAMPLE_TEXT).weights[4, 1]
    np.testing.assert_allclose(plotly_z_once_close(page, weights), weights, atol=1e-7)  # its plotly layer follows
    page.close()


# --- One screen ------------------------------------------------------------------------------------------

# The boxes a lecturer needs at once: the plot area of the main map with every tick label, the layer
# and head controls, and (with the sidebar open) the Sentence box.
BOXES = """() => {
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const el = document.querySelector('[data-testid="attention-map"] .js-plotly-plot'), size = el._fullLayout._size;
    const chart = el.getBoundingClientRect();
    const plot = [chart.left + size.l, chart.top + size.t, chart.left + size.l + size.w, chart.top + size.t + size.h];
    const sentence = document.querySelector('[data-testid="stSidebar"] textarea');
    const visible = sentence && sentence.getBoundingClientRect().width > 0;
    return {
        plot: plot,
        ticks: Array.from(el.querySelectorAll('.xtick text, .ytick text'), box),
        rows: el._fullData[0].z.length,
        controls: Array.from(document.querySelectorAll('.av-stepper select, .av-stepper button'), box),
        sentence: visible ? box(sentence) : null,
        presentation: visible ? box(document.querySelector('.st-key-presentation')) : null,
        title: box(document.querySelector('[data-testid="attention-map"] .av-status')),
        expand: document.querySelector('[data-testid="stExpandSidebarButton"]')
            ? box(document.querySelector('[data-testid="stExpandSidebarButton"]')) : null,
        viewport: [window.innerWidth, window.innerHeight],
    };
}"""


def _inside_viewport(box, viewport) -> bool:
    return box[0] >= 0 and box[1] >= 0 and box[2] <= viewport[0] and box[3] <= viewport[1]


def _collapse_sidebar(page) -> None:
    """Collapse the sidebar and wait until the map has been drawn again at the main area's new width (the
    map collapses it itself in Presentation under 1000 px)."""
    if page.locator("[data-testid='stSidebar']").get_attribute("data-collapsed") == "true":
        settled(page, MAP)
        return
    width = page.eval_on_selector(MAP, "el => el._fullLayout.width")
    page.locator("[data-testid='stSidebar']").hover()
    page.locator("[data-testid='stSidebarCollapseButton'] button").click()
    expect(page.locator("[data-testid='stSidebar']")).to_have_attribute("data-collapsed", "true")
    page.wait_for_function(
        "([sel, width]) => document.querySelector(sel)._fullLayout.width !== width", arg=[MAP, width], timeout=30_000
    )
    settled(page, MAP)


@pytest.mark.parametrize("presentation", [False, True], ids=["normal", "presentation"])
@pytest.mark.parametrize("viewport", ["1280x720", "800x600"])
def test_sentence_controls_and_the_whole_map_are_on_one_screen(server, chromium, bundled, viewport, presentation):
    url, _, _ = server
    width, height = map(int, viewport.split("x"))
    page = _open(chromium, url, width, height, f"?presentation={int(presentation)}")
    if width < 1000:  # sidebar collapsed is fine at 800 × 600
        _collapse_sidebar(page)
    page.screenshot(path=ARTIFACTS / f"one_screen_{viewport}_{'presentation' if presentation else 'normal'}.png")
    m = page.evaluate(BOXES)
    tokens = extract(bundled, state.EXAMPLE_TEXT).encoding.num_tokens
    assert m["rows"] == tokens  # the opening sentence whole: every row drawn
    assert _inside_viewport(m["plot"], m["viewport"]), m["plot"]
    assert all(_inside_viewport(tick, m["viewport"]) for tick in m["ticks"]), m["ticks"]
    if not presentation:  # Presentation puts the controls under the larger map (the keys step it)
        assert all(_inside_viewport(control, m["viewport"]) for control in m["controls"]), m["controls"]
    if width >= 1000:
        assert m["sentence"] is not None and _inside_viewport(m["sentence"], m["viewport"]), m["sentence"]
        assert _inside_viewport(m["presentation"], m["viewport"]), m["presentation"]  # the switch, no scrolling
    else:  # the sidebar closed: its » (which opens it) keeps clear of the map's title
        title, expand = m["title"], m["expand"]
        apart = expand[2] + 8 <= title[0] or expand[3] + 8 <= title[1] or title[3] + 8 <= expand[1]
        assert apart, (expand, title)
    side = min(m["plot"][2] - m["plot"][0], m["plot"][3] - m["plot"][1])
    assert side / tokens >= (16 if presentation else 12) + 2  # cells stay one label size plus some air
    page.close()


def test_presentation_enlarges_all_text_and_draws_18_tokens_whole(server, chromium):
    url, _, _ = server
    sentence = "The quick brown fox jumps over the lazy dog while the cat sleeps on the mat."  # 18 tokens
    sizes = {}
    for presentation in (0, 1):
        page = _open(chromium, url, query=f"?presentation={presentation}&text={sentence.replace(' ', '+')}")
        sizes[presentation] = page.evaluate(
            """() => Object.fromEntries([['heading', 'h2'], ['sidebar', '[data-testid="stSidebar"] label p'],
                ['control', '.av-stepper.av-layer label span'], ['caption', '[data-testid="stCaptionContainer"]']]
                .map(([name, sel]) => [name, parseFloat(getComputedStyle(document.querySelector(sel)).fontSize)]))"""
        )
        if presentation:
            assert page.eval_on_selector(MAP, "el => el._fullData[0].z.length") == 18
        page.close()
    assert all(sizes[1][name] >= 1.15 * sizes[0][name] for name in sizes[0]), sizes


# --- Every page: nothing from another host, no layout fault ---------------------------------------------

# On the whole main area: text cut by its box (an ellipsis), text on text inside a chart, chart text under
# 9 px or outside its chart, and vertical bands of more than 80 px with nothing in them.
FAULTS = """() => {
    const box = r => [r.left, r.top, r.right, r.bottom];
    const visible = e => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
    };
    const main = document.querySelector('.stMainBlockContainer');
    const out = {cut: [], overlaps: [], small: [], gaps: [], outside: []};
    const texts = '[data-testid="stWidgetLabel"] p, button p, [data-testid="stMarkdownContainer"] p, label p, '
        + '[data-testid="stMetricLabel"] p, [data-testid="stMetricValue"] div';
    for (const e of main.querySelectorAll(texts)) {  // wider than its box: shown with an ellipsis
        if (visible(e) && e.scrollWidth > e.clientWidth + 1) out.cut.push(e.textContent.slice(0, 40));
    }
    const spans = [];
    for (const chart of main.querySelectorAll('.js-plotly-plot')) {
        if (!visible(chart)) continue;
        const holder = chart.closest('[class*="st-key-"]');
        const key = holder ? Array.from(holder.classList).find(c => c.startsWith('st-key-')) : '?';
        const c = chart.getBoundingClientRect();
        const items = Array.from(chart.querySelectorAll('text'))
            .filter(t => visible(t) && t.textContent.trim())
            .map(t => ({text: t.textContent.slice(0, 20), b: box(t.getBoundingClientRect()),
                        size: parseFloat(getComputedStyle(t).fontSize)}));
        for (const it of items) {
            if (it.size < 9) out.small.push([key, it.text, it.size]);
            const [l, t, r, b] = it.b;
            const out_of_chart = l < c.left - 1 || r > c.right + 1 || t < c.top - 1 || b > c.bottom + 1;
            if (out_of_chart) out.outside.push([key, it.text]);
        }
        for (let i = 0; i < items.length; i++) for (let j = i + 1; j < items.length; j++) {
            const a = items[i].b, b = items[j].b;
            const w = Math.min(a[2], b[2]) - Math.max(a[0], b[0]), h = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
            if (w > 1.5 && h > 1.5) out.overlaps.push([key, items[i].text, items[j].text]);
        }
        // what a chart draws: its plot areas, texts, colour bars, legends and shapes (not its empty box),
        // and, for the map element, the title line and the window's overview it draws around the plot
        const map = chart.closest('.av-map');
        const around = map ? Array.from(map.querySelectorAll('.av-status, .av-overview-row')) : [];
        const parts = Array.from(chart.querySelectorAll('.nsewdrag, text, .colorbar, .legend, .shapelayer path'))
            .concat(around).filter(visible).map(e => box(e.getBoundingClientRect()));
        if (parts.length) spans.push([Math.min(...parts.map(p => p[1])), Math.max(...parts.map(p => p[3]))]);
    }
    for (const e of main.querySelectorAll('.av-controls, .av-numbers, .av-notes')) {  // a map's controls and details
        if (visible(e)) { const r = e.getBoundingClientRect(); spans.push([r.top, r.bottom]); }
    }
    for (const e of main.querySelectorAll('[data-testid="stElementContainer"], [data-testid="stPopover"]')) {
        if (!visible(e) || e.querySelector('.js-plotly-plot') || e.querySelector('style')) continue;
        if (Array.from(e.querySelectorAll('[data-testid="stElementContainer"]')).some(visible)) continue;
        const r = e.getBoundingClientRect();
        if (r.height >= 2) spans.push([r.top, r.bottom]);
    }
    spans.sort((a, b) => a[0] - b[0]);
    let reach = spans.length ? spans[0][1] : 0;
    for (const [top, bottom] of spans.slice(1)) {  // a band of more than 80 px with nothing in it
        if (top - reach > 80) out.gaps.push([Math.round(reach), Math.round(top - reach)]);
        reach = Math.max(reach, bottom);
    }
    return out;
}"""


DRAWN = """i => {
    const chart = document.querySelectorAll('[data-testid="stPlotlyChart"]')[i];
    const plot = chart && chart.querySelector('.js-plotly-plot');
    return !!(plot && plot._fullLayout);
}"""


def _draw_every_chart(page) -> None:
    """Bring each chart into view until plotly has drawn it (Streamlit draws a chart below the fold only
    once it is scrolled to), then go back to the top and wait for the first chart to be still."""
    charts = page.locator("[data-testid='stPlotlyChart']")
    for index in range(charts.count()):
        charts.nth(index).scroll_into_view_if_needed()
        page.wait_for_function(DRAWN, arg=index, timeout=60_000)
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
    settled(page, ".js-plotly-plot")


# The options of every row of pills or segmented control that reach past the main area's right edge.
OPTIONS_PAST_THE_EDGE = """() => {
    const edge = document.querySelector('[data-testid="stMain"]').getBoundingClientRect().right;
    return Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stButtonGroup"] button'))
        .filter(b => b.getBoundingClientRect().right > edge + 1).map(b => b.innerText);
}"""


@pytest.mark.parametrize("page_name", ["article", "experiments"])
def test_every_option_of_a_row_of_pills_is_in_view_at_800x600(server, chromium, page_name):
    """The article's three differences (and the experiments' three) are all in view in a narrow main area: the
    row wraps instead of scrolling sideways with its last option cut at the window's edge."""
    url, _, _ = server
    page = _open(chromium, url, 800, 600, f"?page={page_name}")
    assert page.locator("[data-testid='stButtonGroup'] button").count() >= 3
    assert page.evaluate(OPTIONS_PAST_THE_EDGE) == []
    page.close()


# The lines of a heading's text that run under the header's menu (⋮), which Presentation's see-through header
# leaves at the top right of the page.
HEADINGS_UNDER_THE_MENU = """() => {
    const menu = document.querySelector('[data-testid="stMainMenu"]').getBoundingClientRect();
    const under = [];
    for (const h of document.querySelectorAll('.stMainBlockContainer h1, .stMainBlockContainer h2')) {
        const range = document.createRange();
        range.selectNodeContents(h);
        for (const r of range.getClientRects()) {
            if (r.left < menu.right && r.right > menu.left && r.top < menu.bottom && r.bottom > menu.top) {
                under.push(h.innerText);
            }
        }
    }
    return under;
}"""


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("page_name", ["article", "inside", "rollout"])
def test_a_long_page_title_in_presentation_keeps_clear_of_the_menu_at_800x600(server, chromium, page_name, language):
    url, _, _ = server
    page = _open(chromium, url, 800, 600, f"?page={page_name}&lang={language}&presentation=1")
    assert page.evaluate(HEADINGS_UNDER_THE_MENU) == []
    page.close()


@pytest.mark.parametrize("mode", ["en", "zh-presentation"])
@pytest.mark.parametrize("viewport", ["1280x720", "800x600"])
def test_every_page_fetches_only_from_its_own_origin_and_has_no_cut_label_overlap_tiny_text_or_blank_band(
    server, chromium, viewport, mode
):
    """Every page in English and in Chinese Presentation, at both sizes: nothing requested from another host
    (every request and WebSocket, from the first byte on), and none of the layout faults above."""
    url, _, _ = server
    width, height = map(int, viewport.split("x"))
    language, presentation = ("zh", 1) if mode == "zh-presentation" else ("en", 0)
    page = chromium.new_page(viewport={"width": width, "height": height})
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("websocket", lambda socket: requested.append(socket.url))
    faults = {}
    for name in PAGES:
        page.goto(f"{url}/?page={name}&lang={language}&presentation={presentation}")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
        page.wait_for_selector(IDLE, timeout=90_000)
        _no_error_page(page)
        _draw_every_chart(page)
        found = {kind: items for kind, items in page.evaluate(FAULTS).items() if items}
        if found:
            faults[name] = found
            page.screenshot(path=ARTIFACTS / f"fault_{name}_{viewport}_{mode}.png", full_page=True)
    page.close()
    origin = urlsplit(url).netloc
    foreign = sorted(
        {u for u in requested if urlsplit(u).scheme not in ("data", "blob") and urlsplit(u).netloc != origin}
    )
    assert len(requested) > 100 and not foreign, foreign
    assert not faults, faults
