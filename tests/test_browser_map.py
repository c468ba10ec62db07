"""Compare's attention map element in a real browser (Debian's Chromium): the keys, the ‹ › buttons and the
Layer/Head boxes move one view; fast presses are all counted; the page, the boxes and the address follow the
map; a click focuses a query; long inputs pan in the browser; Back restores the view the address names; under
a base path (behind a proxy) every route of the app answers there and the map is drawn whole.

The element's state is read from its root's data attributes (``data-layer``, ``data-head``, ``data-focus``,
``data-query-start``, ``data-key-start``), which it writes when it paints.
"""

import base64
import io
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit
from xml.etree import ElementTree

import numpy as np
import pytest
from browser import ARTIFACTS, IDLE, MAP, idle, streamlit_server, wait_until
from PIL import Image
from playwright.sync_api import expect

from attention_viz.extraction import extract
from attention_viz.figures import bundles
from attention_viz.figures.layout import DENSE
from attention_viz.models.loading import bundled_model_path
from attention_viz.ui.attention_map import serving
from attention_viz.ui.text import i18n
from attention_viz.ui.view import state

ELEMENT = '[data-testid="attention-map"]'
LONG = " ".join(f"word{i % 7} and" for i in range(30))  # about 62 tokens: a window with an overview
WINDOW = DENSE.window  # the window of a long input on a screen (its labels at the smaller size)
QUARTER = WINDOW // 4  # Shift + an arrow moves the window by a quarter of it


def _open(chromium, url: str, query: str = "", width: int = 1280, height: int = 720):
    page = chromium.new_page(viewport={"width": width, "height": height})
    page.goto(f"{url}/{query}")
    page.wait_for_selector(f"{ELEMENT}[data-ready='1']", timeout=120_000)
    page.wait_for_selector(f"{MAP} .heatmaplayer", timeout=120_000)
    idle(page)
    page.mouse.click(5, page.viewport_size["height"] - 5)  # the page, not a widget, has the keys
    return page


def _view(page) -> dict:
    data = page.eval_on_selector(ELEMENT, "e => ({...e.dataset})")
    return {name: int(data[name]) for name in ("layer", "head", "focus", "queryStart", "keyStart")}


# The address names the view the map shows: the map has reported its last step (a report leaves at most 60 ms
# after a key), or adopted the view the address names (Back). A focus of -1 may be left out of the address.
REPORTED = """s => { const d = document.querySelector(s).dataset, a = new URLSearchParams(location.search);
    return a.get('layer') === d.layer && a.get('head') === d.head && (a.get('focus') || '-1') === d.focus; }"""


def _settle(page) -> None:
    """Until the map and the address agree, the page's reruns for the map's reports are over and the page
    agrees with the map."""
    page.wait_for_function(REPORTED, arg=ELEMENT, timeout=60_000)
    page.wait_for_selector(IDLE, timeout=90_000)
    idle(page)


def _address_names(page, layer: int, head: int) -> None:
    """Until the address names ``layer`` and ``head`` (the map's report of a step has left)."""
    named = "([l, h]) => { const a = new URLSearchParams(location.search); return a.get('layer') === l && a.get('head') === h; }"  # noqa: E501
    page.wait_for_function(named, arg=[str(layer), str(head)], timeout=30_000)


# plotly's toolbar (modebar) fades its groups in while the pointer is over a chart and out after it left (0.3 s of
# opacity, plotly's CSS on ".modebar--hover > :not(.watermark)")
TOOLBAR_OPACITY = """([s, opacity]) => [...document.querySelectorAll(s + ' .modebar--hover > :not(.watermark)')]
    .every(g => getComputedStyle(g).opacity === opacity)"""


def _toolbar_shown(page, chart: str = MAP) -> None:
    """Until ``chart``'s toolbar has faded in whole."""
    page.wait_for_function(TOOLBAR_OPACITY, arg=[chart, "1"], timeout=30_000)


def _steady(page, selector: str, frames: int = 10) -> None:
    """Until ``selector``'s box has kept its place and size for ``frames`` animation frames in a row."""
    steady = """([s, frames]) => { const e = document.querySelector(s); if (!e) return false;
        const r = e.getBoundingClientRect(), box = [r.x, r.y, r.width, r.height].join();
        const seen = window.__avSteady;
        if (seen.box === box) seen.count += 1; else { seen.box = box; seen.count = 0; }
        return seen.count >= frames; }"""
    page.evaluate("() => { window.__avSteady = {box: null, count: 0}; }")
    page.wait_for_function(steady, arg=[selector, frames], polling="raf", timeout=60_000)


def _address(page) -> dict:
    query = urlsplit(page.evaluate("location.href")).query  # the address the map writes as it steps
    return {key: values[0] for key, values in parse_qs(query, keep_blank_values=True).items()}


def _agrees(page, layer: int, head: int) -> None:
    """The map, the page's title, the Layer and Head boxes and the address all show ``layer`` and ``head``."""
    view = _view(page)
    assert (view["layer"], view["head"]) == (layer, head)
    expect(page.get_by_role("heading", name=f"Layer {layer}, head {head}", exact=True)).to_be_visible(timeout=60_000)
    expect(page.get_by_role("combobox", name="Layer", exact=True)).to_have_value(str(layer), timeout=30_000)
    expect(page.get_by_role("combobox", name="Head", exact=True)).to_have_value(str(head), timeout=30_000)
    wait_until(lambda: (_address(page)["layer"], _address(page)["head"]) == (str(layer), str(head)), 30, "address")


def _drawn_z(page) -> np.ndarray:
    """The heatmap plotly draws once the keys stop (the canvas shows the same head at once)."""
    return np.array(page.evaluate(f'() => document.querySelector("{MAP}")._fullData[0].z'), dtype=np.float64)


def test_the_element_is_declared_and_served_from_a_fresh_server_start(server):
    """The server that `streamlit run app.py` starts (the editable install of requirements.txt) finds the
    element's manifest in pyproject.toml and serves its module, the app's plotly.js and no unknown bundle."""
    url, _, _ = server
    base = f"{url}/_stcore/bidi-components/attention-viz.attention_map"
    with urllib.request.urlopen(f"{base}/attention_map.js", timeout=30) as response:
        assert response.status == 200 and b"export default function" in response.read()
    with urllib.request.urlopen(f"{base}/plotly_loader.js", timeout=30) as response:
        assert b"mapPainted" in response.read()
    with urllib.request.urlopen(f"{url}/{serving.PLOTLY_PATH}", timeout=60) as response:
        assert response.read() == serving.PLOTLY_JS.read_bytes()
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(f"{url}/{serving.ROUTE}/maps/not-a-bundle", timeout=30)
    assert gone.value.code == 404


def test_keys_buttons_and_boxes_in_any_order_move_one_view(server, chromium, bundled):
    url, _, _ = server
    page = _open(chromium, url)
    layer, head = state.EXAMPLE_LAYER, state.EXAMPLE_HEAD
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    page.keyboard.press("ArrowRight")  # a key: the map steps in the browser
    _settle(page)
    _agrees(page, layer, head + 1)
    np.testing.assert_allclose(_drawn_z(page), weights[layer, head + 1], atol=1e-7)
    page.locator(".av-stepper.av-layer button").last.click()  # a button (the map's own, in the browser)
    _settle(page)
    _agrees(page, layer + 1, head + 1)
    page.mouse.click(5, 715)
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowLeft")
    _settle(page)
    _agrees(page, layer, head)
    page.get_by_role("combobox", name="Head", exact=True).select_option("7")  # a box
    _settle(page)
    _agrees(page, layer, 7)
    page.mouse.click(5, 715)
    page.keyboard.press("ArrowRight")  # the key steps from the box's head, once
    _settle(page)
    _agrees(page, layer, 8)
    page.wait_for_function(f'() => document.querySelector("{MAP}")._fullData[0].z.length > 0')
    np.testing.assert_allclose(_drawn_z(page), weights[layer, 8], atol=1e-7)
    page.close()


def test_ten_fast_presses_are_ten_steps_and_the_page_agrees(server, chromium):
    url, _, _ = server
    page = _open(chromium, url)
    layer, head = state.EXAMPLE_LAYER, state.EXAMPLE_HEAD
    for press in range(10):
        if press:
            page.wait_for_timeout(30)  # a person's fast presses, 30 ms apart: inside the map's 60 ms report window
        page.keyboard.press("ArrowRight")
    expected = state.stepped(layer, head, "head", 10, state.BUNDLED_SHAPE)  # wraps into the next layer
    assert (_view(page)["layer"], _view(page)["head"]) == expected  # the map has them all before the server
    _settle(page)
    _agrees(page, *expected)
    page.close()


def test_a_click_on_a_cell_focuses_its_query(server, chromium, bundled):
    url, _, _ = server
    page = _open(chromium, url)
    labels = extract(bundled, state.EXAMPLE_TEXT).encoding.labels
    it = labels.index("it")
    box = page.eval_on_selector(
        ".av-cells", "c => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }"
    )
    x, y, width, height = box
    page.mouse.click(x + width * 0.3, y + height * (it + 0.5) / len(labels))
    _settle(page)
    assert _view(page)["focus"] == it
    box = page.get_by_role("combobox", name="Query token (or click its row in the map)")
    expect(box).to_have_value(str(it), timeout=30_000)
    assert box.locator("option:checked").inner_text() == f"{it}: \u2068it\u2069"
    assert _address(page)["focus"] == str(it)
    shapes = page.evaluate(f'() => document.querySelector("{MAP}")._fullLayout.shapes.map(s => [s.y0, s.y1])')
    assert shapes == [[it - 0.5, it + 0.5]]  # the outline plotly draws (the PNG's), as the canvas shows it
    page.close()


def test_a_long_input_pans_in_the_browser_and_the_address_follows(server, chromium, bundled):
    url, _, _ = server
    page = _open(chromium, url, "?" + urllib.parse.urlencode({"text": LONG}))
    total = extract(bundled, LONG).encoding.num_tokens
    assert total > WINDOW and page.locator(".av-overview").is_visible()
    page.keyboard.press("Shift+ArrowRight")  # keys a quarter window to the right
    page.keyboard.press("Shift+ArrowDown")  # queries a quarter window down
    _settle(page)
    view = _view(page)
    assert (view["keyStart"], view["queryStart"]) == (QUARTER, QUARTER)
    assert (_address(page)["key_start"], _address(page)["query_start"]) == (str(QUARTER), str(QUARTER))
    weights = extract(bundled, LONG).weights[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD]
    shown = slice(QUARTER, QUARTER + WINDOW)
    np.testing.assert_allclose(_drawn_z(page), weights[shown, shown], atol=1e-7)
    page.locator(".av-overview").scroll_into_view_if_needed()
    overview = page.eval_on_selector(
        ".av-overview", "c => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width]; }"
    )
    x, y, side = overview
    page.mouse.click(x + side - 2, y + side - 2)  # the overview's corner: the last window
    _settle(page)
    view = _view(page)
    assert (view["keyStart"], view["queryStart"]) == (total - WINDOW, total - WINDOW)
    assert _address(page)["query_start"] == str(total - WINDOW)  # the address follows
    page.keyboard.press("ArrowRight")  # a head step keeps the window
    _settle(page)
    assert _view(page)["keyStart"] == total - WINDOW
    page.close()


def test_a_layer_step_at_a_long_input_paints_from_the_neighbours_fetched_ahead(server, chromium, bundled):
    """Past the budget for every layer the browser holds one layer and fetches the layers above and below as
    soon as it has drawn it: ↓ paints the next layer in the key's own event, before any server reply, with
    the right values; once the page follows, the new layer's own neighbours are fetched."""
    url, _, _ = server
    text = " ".join("abcdefg"[i % 7] for i in range(250))  # 252 tokens (a link's text: 1000 characters at most)
    result = extract(bundled, text)
    assert 6 * 12 * result.encoding.num_tokens**2 * 4 > bundles.BUDGET
    page = _open(chromium, url, "?" + urllib.parse.urlencode({"text": text}))
    layer, head = state.EXAMPLE_LAYER, state.EXAMPLE_HEAD
    ahead = lambda: page.eval_on_selector(ELEMENT, "e => e.dataset.ahead")  # noqa: E731
    wait_until(lambda: ahead() == f"{layer - 1},{layer + 1}", 60, "ahead")
    painted = page.evaluate(
        """selector => {
        document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowDown', bubbles: true}));
        const map = document.querySelector(selector);
        return [map.dataset.layer, map.dataset.ready];
    }""",
        ELEMENT,
    )
    assert painted == [str(layer + 1), "1"]  # painted at once: no "Loading layer"
    _settle(page)
    _agrees(page, layer + 1, head)
    np.testing.assert_allclose(_drawn_z(page), result.weights[layer + 1, head, :WINDOW, :WINDOW], atol=1e-7)
    wait_until(lambda: ahead().endswith(str(layer + 2)), 60, "the next layer's neighbours")
    page.close()


def test_the_language_switch_keeps_the_view_and_translates_the_map(server, chromium):
    url, _, _ = server
    page = _open(chromium, url)
    page.keyboard.press("ArrowRight")
    _settle(page)
    page.locator("[data-testid='stSidebar'] label").filter(has_text="中文").first.click()
    page.wait_for_function(f"() => document.querySelector('{ELEMENT} .av-status').textContent.includes('第')")
    _settle(page)
    assert (_view(page)["layer"], _view(page)["head"]) == (state.EXAMPLE_LAYER, state.EXAMPLE_HEAD + 1)
    page.mouse.click(5, 715)
    page.keyboard.press("ArrowRight")
    _settle(page)
    assert page.locator(f"{ELEMENT} .av-status").text_content().startswith(f"第 {state.EXAMPLE_LAYER} 层")
    assert _address(page)["head"] == str(state.EXAMPLE_HEAD + 2) and _address(page)["lang"] == "zh"
    page.close()


def test_a_new_sentence_while_a_step_is_in_flight(server, chromium, bundled):
    """A sentence typed while the step's run is under way is never lost (the run the browser sends may still
    carry the address and the boxes from before the step), the page agrees with the map on one head, and
    the short sentence's maps come with the element's data, with no request for them.

    The step itself may be undone on a busy machine: the sentence's run carries the Head box the browser
    showed before the step's run came back, which Streamlit takes for a choice in the box."""
    url, _, _ = server
    tokens = extract(bundled, "The cat sat on the mat.").encoding.num_tokens
    page = _open(chromium, url)
    fetched = []
    page.on("request", lambda request: fetched.append(request.url) if "/maps/" in request.url else None)
    page.keyboard.press("ArrowRight")
    # The step's report leaves within 60 ms (the address names the step), and its run is then under way: no one
    # types a sentence sooner. (Two runs asked for within a few milliseconds are Streamlit's to order.)
    _address_names(page, state.EXAMPLE_LAYER, state.EXAMPLE_HEAD + 1)
    text = page.locator("[data-testid='stSidebar'] textarea").first
    text.fill("The cat sat on the mat.")
    text.press("Control+Enter")
    page.wait_for_function(f"() => document.querySelector('{ELEMENT}').dataset.ready === '1'")
    page.wait_for_function(f'() => document.querySelector("{MAP}")._fullData[0].y.length === {tokens}', timeout=60_000)
    _settle(page)
    expect(text).to_have_value("The cat sat on the mat.")
    head = _view(page)["head"]
    assert head in (state.EXAMPLE_HEAD, state.EXAMPLE_HEAD + 1)
    _agrees(page, state.EXAMPLE_LAYER, head)
    assert fetched == []
    weights = extract(bundled, "The cat sat on the mat.").weights
    np.testing.assert_allclose(_drawn_z(page), weights[state.EXAMPLE_LAYER, head], atol=1e-7)
    page.close()


def test_a_model_switch_steps_through_the_new_models_heads(server, chromium, tiny_model_dir):
    """A tiny model of 2 layers of 4 heads: the map steps through its 8 heads and wraps, its layer 1, head 1
    kept from the bundled model's view."""
    url, _, _ = server
    page = _open(chromium, url, "?" + urllib.parse.urlencode({"layer": 1, "head": 1}))
    model = page.get_by_role("combobox", name="Model", exact=True)
    model.fill(tiny_model_dir)
    model.press("Enter")
    page.wait_for_function(f"() => document.querySelector('{ELEMENT}').dataset.shape === '2x4'", timeout=120_000)
    _settle(page)
    _agrees(page, 1, 1)
    page.mouse.click(5, 715)
    for _ in range(3):  # heads 2, 3, then the very first head (the model has no layer 2)
        page.keyboard.press("ArrowRight")
    _settle(page)
    _agrees(page, 0, 0)
    page.keyboard.press("ArrowUp")  # layers wrap too
    _settle(page)
    _agrees(page, 1, 0)
    page.close()


def test_back_restores_the_view_the_address_names(server, chromium):
    url, _, _ = server
    page = _open(chromium, url)
    page.keyboard.press("ArrowRight")
    _settle(page)
    page.keyboard.press("ArrowRight")
    _settle(page)
    _agrees(page, state.EXAMPLE_LAYER, state.EXAMPLE_HEAD + 2)
    page.go_back()
    _settle(page)  # the map adopts the view the address names
    address = _address(page)
    view = _view(page)
    assert (str(view["layer"]), str(view["head"])) == (address["layer"], address["head"])
    _agrees(page, int(address["layer"]), int(address["head"]))
    page.close()


def test_no_focus_frame_around_the_main_area_after_a_click(server, chromium):
    url, _, _ = server
    page = _open(chromium, url)
    page.mouse.click(page.viewport_size["width"] - 40, page.viewport_size["height"] - 40)  # the main area
    page.keyboard.press("ArrowRight")  # a key makes the focus "visible": Streamlit rings it with a shadow
    style = page.evaluate(
        """() => { const main = document.activeElement;
            return [main.dataset.testid, getComputedStyle(main).outlineStyle,
                    getComputedStyle(main, '::before').boxShadow]; }"""
    )
    assert style == ["stMain", "none", "none"]
    page.close()


def _cell(chromium, url: str, width: int, height: int, presentation: bool, tokens: int) -> float:
    page = _open(chromium, url, f"?presentation={int(presentation)}", width, height)
    if presentation and width < 1000:  # Presentation collapses the sidebar once, which moves the map
        expect(page.locator("[data-testid='stSidebar']")).to_have_attribute("data-collapsed", "true", timeout=30_000)
    _steady(page, ".av-cells")  # the element sizes itself to the window
    idle(page)
    cell = page.eval_on_selector(".av-cells", "c => c.getBoundingClientRect().width") / tokens
    bottom = page.eval_on_selector(f"{MAP}", "e => e.getBoundingClientRect().bottom")
    page.close()
    assert bottom <= height + 1, "the whole map is on the screen"
    return cell


@pytest.mark.parametrize("viewport", [(1280, 720), (800, 600)])
def test_presentation_enlarges_the_maps_cells(server, chromium, bundled, viewport):
    """The opening sentence's cells are at least 1.2 times as large in Presentation as on a screen, and the
    map still fits the window (its controls go under it; at 800 px the sidebar is collapsed once)."""
    url, _, _ = server
    tokens = extract(bundled, state.EXAMPLE_TEXT).encoding.num_tokens
    normal = _cell(chromium, url, *viewport, False, tokens)
    projected = _cell(chromium, url, *viewport, True, tokens)
    assert projected >= 1.2 * normal, (normal, projected)


def test_compare_loads_one_copy_of_plotly_js(server, chromium):
    """The map, its bars and its lines draw with the app's plotly.js; Streamlit's own plotly chunk (another
    4.8 MB) is not fetched, and the app's is fetched once."""
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    fetched = []
    page.on("request", lambda request: fetched.append(request.url))
    page.goto(f"{url}/?focus=3")  # a token in focus: the bars are drawn too
    page.wait_for_selector(f"{MAP} .heatmaplayer", timeout=120_000)
    idle(page)
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 3", timeout=60_000)
    assert sum(serving.PLOTLY_PATH in address for address in fetched) == 1, fetched
    assert not [address for address in fetched if "PlotlyChart" in address]
    assert page.evaluate("() => document.querySelectorAll('script[data-av-plotly]').length") == 1
    page.close()


# --- What a person sees, in pixels ----------------------------------------------------------------------------
# The page's DOM holds plotly's hover label, tick labels and colour bar even where something drawn over them
# hides them, so these tests read the screen: screenshots of a region with and without the pointer.

EN = i18n.table("en")
SVG = "{http://www.w3.org/2000/svg}"
BOX = "e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }"


def _pixels(page, x: float, y: float, width: float, height: float) -> np.ndarray:
    """The screen's ``(height, width, 3)`` RGB pixels of a region of the viewport (CSS px at scale 1)."""
    x0, y0 = max(0, int(x)), max(0, int(y))
    clip = {"x": x0, "y": y0, "width": int(x + width) - x0, "height": int(y + height) - y0}
    return np.asarray(Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("RGB"), dtype=np.int16)


def _dark(pixels: np.ndarray, below: int = 110) -> np.ndarray:
    """Where a pixel is dark grey or black (text, plotly's hover box): every channel low and about equal."""
    return (pixels.max(axis=-1) < below) & (pixels.max(axis=-1) - pixels.min(axis=-1) < 25)


def _away(page, chart: str = MAP) -> None:
    """The pointer off ``chart`` (plotly hides its hover label and fades its toolbar out), and the page still."""
    page.mouse.move(5, page.viewport_size["height"] - 5)
    page.wait_for_function("s => !document.querySelector(s + ' .hoverlayer .hovertext')", arg=chart, timeout=30_000)
    page.wait_for_function(TOOLBAR_OPACITY, arg=[chart, "0"], timeout=30_000)
    idle(page)


def _tokens(page) -> list[str]:
    return page.evaluate(f'() => document.querySelector("{MAP}")._fullData[0].y')


@pytest.mark.parametrize("viewport", [(1280, 720), (800, 600)])
def test_the_hover_labels_colour_bar_and_focus_outline_are_drawn_on_screen(server, chromium, viewport):
    """Over "it" → "animal" the hover label shows: a dark box with light text beside the pointer. The tick
    labels beside each row and under each column, the colour bar's gradient and its tick labels are drawn,
    and the toolbar that shows while the pointer is over the map covers none of the colour bar. A click on a
    cell outlines its row in the focus colour."""
    url, _, _ = server
    page = _open(chromium, url, width=viewport[0], height=viewport[1])
    _away(page)
    tokens = _tokens(page)
    n, it, animal = len(tokens), tokens.index("\u2068it\u2069"), tokens.index("\u2068animal\u2069")
    x, y, width, height = page.eval_on_selector(".av-cells", BOX)
    cell = height / n
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"map_{viewport[0]}x{viewport[1]}.png")

    # every row's and column's label is drawn beside it, past its tick mark (the smallest, "." and "'", are a
    # few pixels of ink); the page is white there otherwise
    rows = _pixels(page, x - 75, y, 69, height).min(axis=-1) < 220
    columns = _pixels(page, x, y + height + 6, width, 60).min(axis=-1) < 220
    for i in range(n):
        band = slice(int(i * cell + 2), int((i + 1) * cell - 2))
        assert rows[band].sum() >= 2, f"no label drawn beside row {i} ({tokens[i]})"
        assert columns[:, band].sum() >= 2, f"no label drawn under column {i} ({tokens[i]})"

    # the colour bar: light to dark blue along it, its "0", "0.5" and "1" under it
    bx, by, bw, bh = page.eval_on_selector(f"{MAP} .cbfills", BOX)
    line = _pixels(page, bx, by + bh / 2, bw, 1)[0].sum(axis=-1)
    ends = [line[int(f * (len(line) - 1))] for f in (0.05, 0.5, 0.95)]
    assert ends[0] > 650 and ends[0] > ends[1] + 100 and ends[1] > ends[2] + 100 and ends[2] < 300, ends
    ticks = _dark(_pixels(page, bx - 12, by + bh + 1, bw + 24, 24), 150)
    for f in (0.0, 0.5, 1.0):
        near = ticks[:, int(f * bw) : int(f * bw) + 24]
        assert near.sum() >= 6, f"no tick label drawn at {f} of the colour bar"
    bar_region = (bx - 12, by - 4, bw + 24, bh + 30)
    bar_before = _pixels(page, *bar_region)

    # the hover label: a region around the cell before and with the pointer on it
    px, py = x + (animal + 0.5) * cell, y + (it + 0.5) * cell
    region = (px - 220, py - 70, 440, 140)
    before = _pixels(page, *region)
    page.mouse.move(px, py)
    page.wait_for_selector(f"{MAP} .hoverlayer .hovertext", timeout=30_000)
    _toolbar_shown(page)
    after = _pixels(page, *region)
    page.screenshot(path=ARTIFACTS / f"map_hover_{viewport[0]}x{viewport[1]}.png")
    changed = np.abs(after - before).sum(axis=-1) > 60
    assert changed.sum() > 1500, f"the hover label is not drawn: {changed.sum()} pixels changed"
    ys, xs = np.nonzero(changed)
    label = after[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    assert label.shape[0] >= 25 and label.shape[1] >= 80, label.shape  # two lines of text, "it → animal: ..."
    assert _dark(label).mean() > 0.4, "the label's dark box"
    assert (label.min(axis=-1) > 200).mean() > 0.04, "the label's light text"

    # the toolbar, shown while the pointer is over the map, covers none of the colour bar and its labels
    assert page.locator(f"{MAP} .modebar").is_visible()
    toolbar = page.eval_on_selector(f"{MAP} .modebar", BOX)
    bar_with_toolbar = _pixels(page, *bar_region)
    assert np.array_equal(bar_with_toolbar, bar_before), (toolbar, bar_region)
    assert toolbar[0] >= bar_region[0] + bar_region[2], (toolbar, bar_region)

    # a click on a cell: its row outlined in the focus colour, on screen; no other row
    page.mouse.click(px, py)
    page.wait_for_function(f"() => document.querySelector('{ELEMENT}').dataset.focus === '{it}'")
    _away(page)
    cells = _pixels(page, x, y, width, height)
    orange = (cells[..., 0] > 220) & (np.abs(cells[..., 1] - 127) < 40) & (cells[..., 2] < 60)
    top, bottom = int(it * cell), int((it + 1) * cell)
    assert orange[top : top + 5].any(axis=0).mean() > 0.9, "the outline's top edge"
    assert orange[bottom - 5 : bottom].any(axis=0).mean() > 0.9, "the outline's bottom edge"
    assert not orange[: top - 2].any() and not orange[bottom + 2 :].any(), "an outline on another row"
    page.close()


def _download(page, chart: str, title: str):
    """Hover ``chart`` (its toolbar shows), click the toolbar's button ``title``; the download."""
    box = page.eval_on_selector(chart, BOX)
    page.mouse.move(box[0] + box[2] / 2, box[1] + box[3] / 2)
    with page.expect_download(timeout=60_000) as download:
        page.locator(f"{chart} .modebar-btn[data-title='{title}']").click()
    return download.value


def _svg(download) -> ElementTree.Element:
    root = ElementTree.parse(download.path()).getroot()  # raises on a file that is not XML
    assert root.tag == f"{SVG}svg", root.tag
    return root


def test_the_map_and_its_bars_save_an_svg_named_as_their_png(server, chromium):
    """The toolbar of the map and of the focus bars saves an SVG beside the PNG: the same file name with .svg,
    a valid SVG of the chart (the map's heatmap image, its title and tick labels; the bars and their title)."""
    url, _, _ = server
    page = _open(chromium, url, "?focus=10")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 3", timeout=60_000)
    idle(page)
    png, svg = EN["attention_map.png_button"], EN["attention_map.svg_button"]

    saved_png, saved_svg = _download(page, MAP, png), _download(page, MAP, svg)
    stem = page.eval_on_selector(MAP, "e => e.dataset.filename")
    assert stem.startswith("attention_all-MiniLM-L6-v2_layer3_head1")
    assert (saved_png.suggested_filename, saved_svg.suggested_filename) == (f"{stem}.png", f"{stem}.svg")
    root = _svg(saved_svg)
    text = "".join(root.itertext())
    assert f"Layer {state.EXAMPLE_LAYER}, head {state.EXAMPLE_HEAD}" in text  # the title the screen shows
    assert "animal" in text and "because" in text  # tick labels
    images = [
        image.get("href") or image.get("{http://www.w3.org/1999/xlink}href") or "" for image in root.iter(f"{SVG}image")
    ]
    cells = [Image.open(io.BytesIO(base64.b64decode(i.split(",", 1)[1]))) for i in images if i.startswith("data:")]
    assert cells and min(cells[0].size) >= len(_tokens(page)), "the heatmap's cells, a pixel or more each"

    bars = ".av-bars.js-plotly-plot"
    saved_png = _download(page, bars, "Download plot as a PNG")  # plotly's own camera (its own words)
    saved_svg = _download(page, bars, svg)
    stem = saved_png.suggested_filename.removesuffix(".png")
    assert stem.startswith("attention_all-MiniLM-L6-v2_layer3_head1") and saved_png.suggested_filename.endswith(".png")
    assert saved_svg.suggested_filename == f"{stem}.svg"
    root = _svg(saved_svg)
    text = "".join(root.itertext())
    assert "it" in text and "animal" in text, text
    bars = [e for e in root.iter() if (e.get("class") or "").split() == ["point"] and e.find(f"{SVG}path") is not None]
    assert len(bars) == 2 * len(_tokens(page)), "a bar per key, pretrained and from scratch"
    page.close()


def _status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("Content-Type", "")


def _box_pixels(page, box: tuple[float, float, float, float]) -> np.ndarray:
    """The screen's RGB pixels inside ``box`` (left, top, right, bottom in CSS px), as a person sees them."""
    left, top, right, bottom = box
    clip = {"x": left, "y": top, "width": max(1.0, right - left), "height": max(1.0, bottom - top)}
    return np.asarray(Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("RGB"), dtype=np.int16)


def _labels_and_colour_bar(page) -> tuple[float, float]:
    """The share of dark (text) pixels left of the map's cells, where the query labels are, and of blue
    (colour bar) pixels in the band above the cells, where the colour bar is."""
    cells = page.eval_on_selector(
        ".av-cells", "c => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.right, r.bottom]; }"
    )
    plot = page.eval_on_selector(
        ".av-plot", "p => { const r = p.getBoundingClientRect(); return [r.x, r.y, r.right]; }"
    )
    left = _box_pixels(page, (plot[0], cells[1], cells[0] - 8, cells[3]))
    above = _box_pixels(page, (cells[0], plot[1], plot[2], cells[1] - 4))
    dark = (left.max(axis=2) < 110).mean()
    blue = ((above[..., 2] - above[..., 0]) > 60).mean()
    return dark, blue


def test_under_a_base_path_every_route_answers_there_and_the_map_is_drawn_whole(chromium):
    """Behind a proxy at ``/attviz/`` (``--server.baseUrlPath attviz``): readiness says 503 until the model is
    loaded, then 200; plotly.js is JavaScript; an unknown bundle or file is 404, not the front end's page; and
    the map of a long input (its bundle fetched, too large to travel inline) has its labels and colour bar."""
    weights = str(bundled_model_path() / "model.safetensors")
    text = " ".join(f"word{i % 7} and" for i in range(60))
    with streamlit_server("--server.baseUrlPath", "attviz") as running:
        url = running[0]
        assert url.endswith("/attviz")
        first = _status(f"{url}/ready")[0]
        maps = f"/proc/{running.process.pid}/maps"
        assert first == 503 or weights in Path(maps).read_text()  # not ready before the weights are read
        wait_until(lambda: _status(f"{url}/ready")[0] == 200, 240, "never ready", every_s=0.25)
        status, kind = _status(f"{url}/{serving.PLOTLY_PATH}")
        assert status == 200 and kind.startswith("text/javascript")
        assert _status(f"{url}/{serving.ROUTE}/maps/not-a-bundle")[0] == 404
        assert _status(f"{url}/{serving.ROUTE}/plotly-0.0.0.min.js")[0] == 404
        root = url.removesuffix("/attviz")
        assert _status(f"{root}/ready")[0] == 404 and _status(f"{root}/{serving.PLOTLY_PATH}")[0] == 404
        assert first == 503, "ready at once: the model loaded before the first check (a machine this fast?)"

        page = chromium.new_page(viewport={"width": 1280, "height": 720})
        answered = []
        page.on("response", lambda response: answered.append((response.url, response.status)))
        page.goto(f"{url}/?" + urllib.parse.urlencode({"text": text}))
        page.wait_for_selector(f"{ELEMENT}[data-ready='1']", timeout=120_000)
        idle(page)
        wait_until(lambda: min(_labels_and_colour_bar(page)) > 0, 60, "no labels or colour bar drawn", every_s=0.5)
        dark, blue = _labels_and_colour_bar(page)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / "base_path_map.png")
        assert dark > 0.01 and blue > 0.05, (dark, blue)
        ours = [(address, code) for address, code in answered if f"/{serving.ROUTE}/" in address]
        assert (f"{url}/{serving.PLOTLY_PATH}", 200) in ours
        assert any(f"{url}/{serving.ROUTE}/maps/" in address and code == 200 for address, code in ours), ours
        assert all(address.startswith(f"{url}/") for address, _ in ours), ours
        page.close()


def _toolbar_download(page, chart: str, title: str):
    """Scroll ``chart`` into view and hover it (its toolbar shows), click the toolbar's button ``title``."""
    page.locator(chart).scroll_into_view_if_needed()
    box = page.eval_on_selector(chart, BOX)
    page.mouse.move(box[0] + box[2] / 2, box[1] + box[3] / 2)
    with page.expect_download(timeout=60_000) as download:
        page.locator(f"{chart} .modebar-btn[data-title='{title}']").click(timeout=30_000)
    return download.value


def _saves_an_svg_as_its_png(page, chart: str, screenshot: str) -> ElementTree.Element:
    """The toolbar of Streamlit's plotly ``chart``: the camera, the SVG button right after it; the PNG's and
    the SVG's files have one name; the SVG parses, chart-sized. Returns the SVG's root."""
    png, svg = "Download plot as a PNG", EN["attention_map.svg_button"]  # plotly's own words; the app's
    button = page.locator(f"{chart} .modebar-btn[data-title='{svg}']")
    button.wait_for(state="attached", timeout=120_000)
    titles = page.eval_on_selector_all(f"{chart} .modebar-btn", "bs => bs.map(b => b.dataset.title)")
    assert titles[:2] == [png, svg], titles
    page.locator(chart).scroll_into_view_if_needed()
    page.locator(chart).hover()  # the toolbar shows
    button.hover()  # its tooltip
    _toolbar_shown(page, chart)
    page.screenshot(path=ARTIFACTS / screenshot)
    saved_png = _toolbar_download(page, chart, png)
    saved_svg = _toolbar_download(page, chart, svg)
    stem = page.eval_on_selector(chart, "gd => gd._context.toImageButtonOptions.filename")
    assert stem.startswith("attention_all-MiniLM-L6-v2_layer3_head1_"), stem
    assert (saved_png.suggested_filename, saved_svg.suggested_filename) == (f"{stem}.png", f"{stem}.svg")
    root = _svg(saved_svg)
    size = page.eval_on_selector(chart, "gd => [gd._fullLayout.width, gd._fullLayout.height]")
    assert [float(root.get("width")), float(root.get("height"))] == size, "the chart as shown, at its size"
    return root


def test_streamlits_charts_save_an_svg_named_as_their_png(server, chromium):
    """Every chart Streamlit draws (st.plotly_chart) has the SVG button beside its camera: on All heads the
    grid of 6 × 12 thumbnails (one heatmap, the layer and head labels), on Inside a head a step's bars (its
    title, a bar per key), each saved under the PNG's name with .svg."""
    url, _, _ = server
    ARTIFACTS.mkdir(exist_ok=True)
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{url}/?page=all_heads")
    root = _saves_an_svg_as_its_png(page, ".st-key-head_grid .js-plotly-plot", "svg_button_all_heads.png")
    text = [t.strip() for t in root.itertext()]
    assert {f"H{h}" for h in range(12)} | {f"L{layer}" for layer in range(6)} <= set(text), text
    assert len(list(root.iter(f"{SVG}image"))) == 1, "the thumbnails' one heatmap image"

    page.goto(f"{url}/?page=inside")
    chart = ".st-key-step_weights .js-plotly-plot"
    root = _saves_an_svg_as_its_png(page, chart, "svg_button_inside.png")
    tokens = page.eval_on_selector(chart, "gd => gd._fullData[0].x")
    text = "".join(root.itertext())
    assert EN["inside.fig_weights"].format(n=len(tokens)) in text, text
    bars = [e for e in root.iter() if (e.get("class") or "").split() == ["point"] and e.find(f"{SVG}path") is not None]
    assert len(bars) == len(tokens) == 16, "a bar per key"
    page.close()


def test_a_tiny_llama_opened_as_a_folder_draws_compare_and_all_heads_with_its_groups(server, chromium, family_dir):
    """A Llama-style decoder (2 layers, 4 query heads sharing 2 key/value heads) opened by its folder: Compare's
    map is painted causal (every cell above the diagonal the colour of 0, the first row's one key dark), and All
    heads paints 8 thumbnails, a "kv" label over each group and the line between the groups, in pixels."""
    url, _, _ = server
    folder = family_dir("llama")
    query = "?" + urllib.parse.urlencode({"model": folder, "text": "The cat sat on the mat.", "layer": 1, "head": 2})
    page = _open(chromium, url, query)
    page.wait_for_function(f"() => document.querySelector('{ELEMENT}').dataset.shape === '2x4'", timeout=120_000)
    _settle(page)
    _away(page)
    n = len(_tokens(page))
    x, y, width, height = page.eval_on_selector(".av-cells", BOX)
    cells = _pixels(page, x, y, width, height)
    size = height / n
    centre = lambda i, j: cells[int((i + 0.5) * size), int((j + 0.5) * size)]  # noqa: E731
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "tiny_llama_compare.png")
    for i in range(n):
        for j in range(i + 1, n):
            assert centre(i, j).min() > 235, f"cell {i}, {j} above the diagonal is painted {centre(i, j)}"
    assert centre(0, 0)[0] < 80, f"the first token's one key (weight 1) is painted {centre(0, 0)}"

    page.goto(f"{url}/?" + urllib.parse.urlencode({"page": "all_heads", "model": folder, "text": "The cat sat."}))
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
    idle(page)
    chart = ".js-plotly-plot"
    _away(page, chart)
    _, cy, _, _ = page.eval_on_selector(chart, BOX)
    # the thumbnails' edges on the screen, from the one heatmap's categories (its meta gives their rows and columns)
    spans = page.eval_on_selector(
        chart,
        """e => { const f = e._fullLayout, xa = f.xaxis, ya = f.yaxis, m = e.data[0].meta;
            const r = e.getBoundingClientRect(), across = m.keys + m.gap, down = m.queries + m.gap;
            const X = v => r.left + xa._offset + xa.l2p(v), Y = v => r.top + ya._offset + ya.l2p(v);
            return {x: [0, 1, 2, 3].map(h => [X(h * across - 0.5), X(h * across + m.keys - 0.5)]),
                    y: [0, 1].map(l => [Y(l * down - 0.5), Y(l * down + m.queries - 0.5)]), top: f._size.t}; }""",
    )
    page.screenshot(path=ARTIFACTS / "tiny_llama_all_heads.png")
    top, bottom = spans["y"][0][0], spans["y"][1][1]  # layer 0's top, layer 1's bottom
    for head, (x0, x1) in enumerate(spans["x"]):  # each of layer 0's and 1's thumbnails has blue cells
        for y0, y1 in spans["y"]:
            inside = _pixels(page, x0 + 2, y0 + 2, x1 - x0 - 4, y1 - y0 - 4)
            blue = (inside[..., 2] - inside[..., 0] > 60).sum()
            assert blue > 20, f"head {head}'s thumbnail is not painted ({blue} blue pixels)"
    gap = (spans["x"][1][1] + spans["x"][2][0]) / 2  # between head 1 and head 2: the groups' border
    line = _pixels(page, gap - 2, top, 5, bottom - top)
    grey = _dark(line, 140).any(axis=1)  # per row of pixels: a dark grey pixel in the 5 px around the gap
    assert grey.mean() > 0.9, f"the line between the groups is drawn on {grey.mean():.0%} of the grid's height"
    for a, b in ((0, 1), (2, 3)):  # inside a group, between its two heads: no line
        inner = (spans["x"][a][1] + spans["x"][b][0]) / 2
        assert _dark(_pixels(page, inner - 2, top, 5, bottom - top), 140).any(axis=1).mean() < 0.1
    left, right = spans["x"][0][0], spans["x"][3][1]
    above = _pixels(page, left, cy + 2, right - left, spans["top"] - 18)
    labels = above.max(axis=-1) < 200  # ink of plotly's slate-blue text on white, above the head titles
    halves = np.array_split(labels.any(axis=0), 2)  # "kv 0" over heads 0-1, "kv 1" over heads 2-3
    assert all(half.sum() >= 8 for half in halves), [half.sum() for half in halves]
    page.close()


def test_a_tiny_t5_draws_cross_attention_and_the_kind_switch_redraws_the_map(server, chromium, tmp_path):
    """A T5 opened by its folder: Compare paints the cross-attention, target tokens down and source tokens across
    (a wide map: more source than target tokens), for the decoder's 3 layers × 4 heads; the Attention switch in
    the sidebar, reached by Tab, redraws it as the encoder's square source × source map of 2 layers × 4 heads, and
    the address names the kind."""
    from tiny_seq2seq import make_tiny_seq2seq

    from attention_viz.extraction.seq2seq import extract_seq2seq
    from attention_viz.models.loading import load_seq2seq

    url, _, _ = server
    folder = make_tiny_seq2seq("t5", tmp_path / "t5")
    source, target = "Where is it? It is in the box.", "It was tired."
    expected = extract_seq2seq(load_seq2seq(folder), source, target, "pretrained")
    t, s = expected.target.num_tokens, expected.source.num_tokens
    query = {"model": folder, "text": source, "target": target, "attention_kind": "cross", "layer": 1, "head": 2}
    page = _open(chromium, url, "?" + urllib.parse.urlencode(query))
    page.wait_for_function(f"() => document.querySelector('{ELEMENT}').dataset.shape === '3x4'", timeout=120_000)
    _settle(page)
    _away(page)
    assert np.allclose(_drawn_z(page), expected.cross[1, 2], atol=1e-6)
    _, _, width, height = page.eval_on_selector(".av-cells", BOX)
    assert width / height == pytest.approx(s / t, rel=0.05), (width, height, s, t)  # t rows, s columns
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "tiny_t5_cross.png")
    _strongest_cells_are_dark(page, expected.cross[1, 2])

    switch = page.get_by_role("radio", name="Cross-attention")
    switch.focus()  # the switch is a radio group: Tab reaches it, the arrow keys choose
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")  # cross -> decoder -> encoder
    page.wait_for_function(f"() => document.querySelector('{ELEMENT}').dataset.shape === '2x4'", timeout=120_000)
    _settle(page)
    _away(page)
    wait_until(lambda: _address(page).get("attention_kind") == "encoder", 30, "the kind in the address")
    _, _, width, height = page.eval_on_selector(".av-cells", BOX)
    assert width == pytest.approx(height, rel=0.05)  # source × source
    assert np.allclose(_drawn_z(page), expected.encoder[1, 2], atol=1e-6)
    page.screenshot(path=ARTIFACTS / "tiny_t5_encoder.png")
    _strongest_cells_are_dark(page, expected.encoder[1, 2])
    page.close()


def _strongest_cells_are_dark(page, weights: np.ndarray) -> None:
    """In pixels: each row's strongest cell (weight over 0.5) is painted dark blue at its centre, and the cells of
    weight under 0.01 are painted near white, on a grid of as many rows and columns as ``weights`` has."""
    page.eval_on_selector(".av-cells", "e => e.scrollIntoView({block: 'center'})")
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")  # painted
    x, y, width, height = page.eval_on_selector(".av-cells", BOX)
    cells = _pixels(page, x, y, width, height)
    rows, columns = weights.shape
    centre = lambda i, j: cells[int((i + 0.5) * height / rows), int((j + 0.5) * width / columns)]  # noqa: E731
    strong = [(i, int(weights[i].argmax())) for i in range(rows) if weights[i].max() > 0.5]
    assert strong, "no row has a weight over 0.5"
    for i, j in strong:
        assert centre(i, j)[0] < 120 and centre(i, j)[2] > centre(i, j)[0], f"cell {i}, {j} is {centre(i, j)}"
    faint = np.argwhere(weights < 0.01)
    assert len(faint) and all(centre(i, j).min() > 220 for i, j in faint), "a cell near 0 is painted"


EVERY_PAGE = ("compare", "all_heads", "head_stats", "head_similarity", "atlas", "rollout", "inside", "experiments")
EVERY_PAGE += ("article",)


@pytest.mark.parametrize("family", ["llama", "t5"])
def test_every_page_opens_on_a_tiny_llama_and_a_tiny_t5_without_an_error(
    server, chromium, family_dir, tmp_path, family
):
    """Each page opened by its link on a tiny Llama (a decoder with grouped-query attention) and a tiny T5 (an
    encoder–decoder): the page's title drawn, no error box and no exception; on T5 the pages that do not show
    an encoder–decoder say which pages do."""
    from tiny_seq2seq import make_tiny_seq2seq

    folder = family_dir("llama") if family == "llama" else make_tiny_seq2seq("t5", tmp_path / "t5")
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    for name in EVERY_PAGE:
        page.goto(
            f"{url}/?" + urllib.parse.urlencode({"page": name, "model": folder, "text": "The cat sat on the mat."})
        )
        page.wait_for_selector("h1, h2", timeout=120_000)
        idle(page)
        errors = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']").all_inner_texts()
        assert not errors, (family, name, errors)
        assert page.locator("h1, h2").first.inner_text().strip(), (family, name)
        if family == "t5" and name not in ("compare", "all_heads", "head_stats", "inside"):
            assert "Compare, All heads, Head statistics and Inside a head show" in page.inner_text("body"), name
    page.close()


def test_a_map_taken_off_the_page_draws_nothing_more(server, chromium):
    """A page switch takes Compare's map off the page; it must not draw its figure and charts again, at no size, on
    the next page's time (they took about 50 ms of the switch)."""
    url, _, _ = server
    page = _open(chromium, url)
    page.wait_for_selector(".st-key-map_details .js-plotly-plot", timeout=60_000)  # the bars and lines drawn
    idle(page)
    page.evaluate(
        """() => {  // every Plotly.react of the app's own plotly.js from now on (Streamlit's charts have their own)
            const map = document.querySelector('[data-testid="attention-map"]').parentElement.__attentionMap;
            window.__reacts = 0;
            const react = map.Plotly.react;
            map.Plotly.react = (...args) => { window.__reacts += 1; return react.apply(map.Plotly, args); };
        }"""
    )
    page.get_by_role("link", name="All heads").click()
    page.wait_for_selector(".st-key-head_grid .js-plotly-plot .main-svg", timeout=60_000)
    idle(page)
    # until every drawing the old map could still have pending has had its turn: its plotly catch-up (a timer of
    # at most 150 ms, set before this one) and its charts (the next animation frame)
    later = "() => new Promise(r => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)), 150))"
    page.evaluate(later)
    assert page.evaluate("() => window.__reacts") == 0
    page.close()
