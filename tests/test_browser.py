"""What a person sees: the real app in headless Chromium (Debian's), driven by playwright.

The shared server of conftest.py; one page per viewport, reused for every input.
"""

import itertools
import json
import time

import numpy as np
import pytest
from browser import ARTIFACTS, IDLE, MAP, settled, wait_for_map_view
from browser import set_choice as _set_choice
from browser import wait_for_header as _wait_for_header
from playwright.sync_api import expect

from attention_viz import figures
from attention_viz.extraction import extract
from attention_viz.ui.view.state import EXAMPLE_HEAD, EXAMPLE_LAYER

SENTENCE = "The trophy didn't fit in the suitcase because it was too big."
LAYER, HEAD = 4, 7
INPUTS = {
    "sentence": SENTENCE,
    "45 tokens": "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat near "
    "the door, and the birds outside sing loudly to greet the rising sun over the quiet hills.",
    # WordPiece makes a word of over 100 characters one [UNK], labelled with all 120 typed characters
    "long word": "The sequence " + "acgt" * 30 + " was long .",
    "512 tokens": "hello " * 600,
}
VIEWPORTS = {"1280x720": (1280, 720), "800x600": (800, 600)}

# What the main map draws, read from plotly.js: the plot area (gd._fullLayout._size), each axis' drawn
# length, the tick label boxes, the title and colour bar boxes, and the chart's own box (the map element's:
# it writes the title above its plotly chart).
MEASURE = """el => {
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const element = el.closest('[data-testid="attention-map"]') || el;
    const full = el._fullLayout, bar = el.querySelector('.colorbar');
    const title = element.querySelector('.av-status') || el.querySelector('.gtitle');
    return {
        size: {w: full._size.w, h: full._size.h},
        x: full.xaxis._length, y: full.yaxis._length,
        font: full.xaxis.tickfont.size,
        rows: el._fullData[0].z.length, columns: el._fullData[0].z[0].length,
        z: Array.from(el._fullData[0].z, row => Array.from(row)),
        xticks: Array.from(el.querySelectorAll('.xtick text'), box),
        yticks: Array.from(el.querySelectorAll('.ytick text'), box),
        title: title ? box(title) : null, titleText: title ? title.textContent : null,
        bar: bar ? box(bar.querySelector('.cbfills')) : null,
        chart: box(element), viewport: [window.innerWidth, window.innerHeight],
    };
}"""


def _wait_for_map(page, first_label: str, rows: int) -> None:
    """Wait until the main map shows ``rows`` rows starting with ``first_label`` (as the figure writes it:
    between bidi isolates, escaped for plotly), drawn and settled."""
    page.wait_for_function(
        """([sel, first, n]) => { const all = document.querySelectorAll(sel), el = all[0];
            const running = document.querySelector('[data-testid="stStatusWidget"]');
            return all.length === 1 && !running && el.data && el.data[0].y.length === n
                && el.data[0].y[0] === first  // as the figure writes it
                && el.querySelectorAll('.ytick text').length === n; }""",
        arg=[MAP, figures.unique_labels([first_label])[0], rows],  # as the figure writes it: isolated, escaped
        timeout=90_000,
    )
    settled(page, MAP)  # plotly redraws once more when the tick labels change its margins


def _type(page, text: str) -> None:
    box = page.get_by_label("Sentence", exact=True)
    box.fill(text)
    box.press("Control+Enter")


def _show(page, selector: str) -> None:
    """Scroll the chart to the top of the window, just below Streamlit's header."""
    page.eval_on_selector(selector, "el => el.scrollIntoView({block: 'start'})")
    page.mouse.move(page.viewport_size["width"] - 100, 300)  # over the main area, which scrolls
    page.mouse.wheel(0, -70)
    settled(page, selector)


def _overlaps(boxes, axis: str, font: float) -> list:
    """Neighbouring tick labels that touch: y labels by their boxes; x labels are vertical (-90°), so
    the perpendicular distance between neighbours is the distance between their centres along x."""
    if axis == "y":
        ordered = sorted(boxes, key=lambda b: b[1])
        return [(a, b) for a, b in itertools.pairwise(ordered) if b[1] < a[3] - 0.5]
    centres = sorted((b[0] + b[2]) / 2 for b in boxes)
    return [(a, b) for a, b in itertools.pairwise(centres) if b - a < font]


def _inside(inner, outer, slack: float = 1.0) -> bool:
    return (
        inner[0] >= outer[0] - slack
        and inner[1] >= outer[1] - slack
        and inner[2] <= outer[2] + slack
        and inner[3] <= outer[3] + slack
    )


@pytest.fixture(scope="module")
def measured(server, chromium, bundled):
    """Every input at every viewport: what the main map draws (one page per viewport, reused)."""
    url, _, _ = server
    ARTIFACTS.mkdir(exist_ok=True)
    results = {}
    for viewport, (width, height) in VIEWPORTS.items():
        page = chromium.new_page(viewport={"width": width, "height": height})
        page.goto(url)
        page.wait_for_selector(f"{MAP} .heatmaplayer", timeout=90_000)
        for name, text in INPUTS.items():
            encoding = extract(bundled, text).encoding
            _type(page, text)
            window = figures.map_style(False, encoding.num_tokens).window
            _wait_for_map(page, encoding.labels[0], min(encoding.num_tokens, window))
            results[viewport, name] = page.eval_on_selector(MAP, MEASURE), encoding
            _show(page, MAP)
            page.screenshot(path=ARTIFACTS / f"map_{viewport}_{name.replace(' ', '_')}.png")
        page.close()
    (ARTIFACTS / "plot_sizes.json").write_text(
        json.dumps(
            {
                f"{viewport} {name}": {"plot_area": m["size"], "x_length": m["x"], "y_length": m["y"]}
                for (viewport, name), (m, _) in results.items()
            },
            indent=1,
        )
    )
    return results


@pytest.mark.parametrize("viewport", VIEWPORTS)
@pytest.mark.parametrize("name", INPUTS)
def test_main_map_is_large_labelled_and_unclipped(measured, bundled, viewport, name):
    m, encoding = measured[viewport, name]
    window = figures.map_style(False, encoding.num_tokens).window
    drawn = min(encoding.num_tokens, window)
    assert (m["rows"], m["columns"]) == (drawn, drawn)
    # the map shows the first window of the core's weights (all of them when they fit)
    expected = extract(bundled, INPUTS[name]).weights[EXAMPLE_LAYER, EXAMPLE_HEAD][:drawn, :drawn]
    np.testing.assert_allclose(m["z"], expected, atol=1e-7)
    # square cells, and a large map on a projector: on 1280 x 720 the whole map fits the window's height
    # beside its controls (at 800 x 600 the map takes the width it has)
    assert m["x"] / m["columns"] == pytest.approx(m["y"] / m["rows"], abs=0.5)
    if viewport == "1280x720":
        assert min(m["x"], m["y"]) >= 360, m
    else:
        assert min(m["x"], m["y"]) >= 250, m
    assert m["bar"][3] - m["bar"][1] <= m["y"]  # the colour bar is no taller than the map
    # one tick label per drawn row and column, none touching its neighbour, none longer than 20 characters
    assert len(m["xticks"]) == m["columns"] and len(m["yticks"]) == m["rows"]
    assert not _overlaps(m["yticks"], "y", m["font"]), m["yticks"]
    assert not _overlaps(m["xticks"], "x", m["font"]), m["xticks"]
    # nothing clipped: the title inside the chart, the chart inside the window's width
    assert m["title"] is not None and _inside(m["title"], m["chart"]), (m["title"], m["chart"])
    assert m["chart"][2] <= m["viewport"][0]


def test_long_word_keeps_the_map_of_a_short_sentence(measured):
    # 20 shortened characters take about 80 px more than "suitcase" (before shortening: 64 px against 121),
    # across and down: the map fits the window with both
    for viewport, share in (("1280x720", 0.8), ("800x600", 0.75)):
        short, _ = measured[viewport, "sentence"]
        long, _ = measured[viewport, "long word"]
        assert min(long["x"], long["y"]) >= share * min(short["x"], short["y"]), viewport


def test_type_a_sentence_pick_a_head_click_a_row_and_a_thumbnail(server, chromium, bundled):
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    opened = time.monotonic()
    page.goto(url)
    page.wait_for_selector(f"{MAP} .heatmaplayer", timeout=90_000)
    first_heatmap_s = time.monotonic() - opened
    expected = extract(bundled, SENTENCE)
    _type(page, SENTENCE)
    _wait_for_map(page, expected.encoding.labels[0], expected.encoding.num_tokens)
    _set_choice(page, "Layer", LAYER)
    _wait_for_header(page, f"Layer {LAYER}, head 1")
    _set_choice(page, "Head", HEAD - 1)
    _wait_for_header(page, f"Layer {LAYER}, head {HEAD - 1}")
    wait_for_map_view(page, LAYER, HEAD - 1)
    page.evaluate("() => document.activeElement.blur()")  # the arrow keys step the head from anywhere but a box
    changed = time.monotonic()  # one head change, timed from key press to the new header
    page.keyboard.press("ArrowRight")
    _wait_for_header(page, f"Layer {LAYER}, head {HEAD}")
    head_change_s = time.monotonic() - changed
    page.wait_for_selector(IDLE, timeout=60_000)  # the run that drew the header, and the map below it, is over
    settled(page, MAP)
    m = page.eval_on_selector(MAP, MEASURE)
    np.testing.assert_allclose(m["z"], expected.weights[LAYER, HEAD], atol=1e-7)
    _show(page, MAP)
    page.screenshot(path=ARTIFACTS / "compare.png")
    expect(page.get_by_text("Matches transformers")).to_be_visible()

    # a click on a cell puts its query in focus: its bars appear with that row's weights
    it = expected.encoding.tokens.index("it")
    _show(page, MAP)  # the cell must be on screen to be clicked
    cell = page.eval_on_selector(
        MAP,
        """(el, [row, col]) => { const f = el._fullLayout, r = el.getBoundingClientRect();
            return [r.left + f.xaxis._offset + f.xaxis.l2p(col), r.top + f.yaxis._offset + f.yaxis.l2p(row)]; }""",
        [it, 2],
    )
    page.mouse.click(*cell)
    page.wait_for_selector(".av-bars.js-plotly-plot .bars", timeout=60_000)
    bars = page.eval_on_selector(".av-bars.js-plotly-plot", "el => Array.from(el._fullData[0].y)")
    np.testing.assert_allclose(bars, expected.weights[LAYER, HEAD, it], atol=1e-7)

    # All heads: a click on a thumbnail opens that head in Compare
    page.get_by_role("link", name="All heads").click()
    _wait_for_header(page, "All heads: 6 layers × 12 heads")
    grid = ".st-key-head_grid .js-plotly-plot"
    page.wait_for_selector(f"{grid} .heatmaplayer", timeout=60_000)
    settled(page, grid)
    page.screenshot(path=ARTIFACTS / "all_heads.png")
    assert page.eval_on_selector(grid, "el => el.data.length") == 2  # the thumbnails as one heatmap, the targets
    assert page.get_by_label("Sentence", exact=True).input_value() == SENTENCE  # kept across pages
    target = page.eval_on_selector(
        grid,
        """el => { const f = el._fullLayout, r = el.getBoundingClientRect(), xa = f.xaxis, ya = f.yaxis;
            const p = el._fullData[1], i = 2 * 12 + 5;
            return [r.left + xa._offset + xa.l2p(xa.d2l(p.x[i])), r.top + ya._offset + ya.l2p(ya.d2l(p.y[i]))]; }""",
    )
    thumbnail = page.eval_on_selector(  # layer 2, head 5: its drawn size, its centre and one cell's side
        grid,
        """el => { const f = el._fullLayout, r = el.getBoundingClientRect(), xa = f.xaxis, ya = f.yaxis;
            const m = el.data[0].meta, side = m.keys, step = side + m.gap, middle = (side - 1) / 2;
            const cell = Math.abs(xa.l2p(1) - xa.l2p(0)), tall = Math.abs(ya.l2p(1) - ya.l2p(0));
            return [side * cell, m.queries * tall, r.left + xa._offset + xa.l2p(5 * step + middle),
                    r.top + ya._offset + ya.l2p(2 * step + middle), cell]; }""",
    )
    assert abs(thumbnail[0] - thumbnail[1]) <= 1  # square, not squashed
    np.testing.assert_allclose(thumbnail[2:4], target, atol=thumbnail[4])  # the click target on its thumbnail
    page.mouse.click(*target)
    _wait_for_header(page, "Layer 2, head 5")
    expect(page.locator(".av-stepper.av-layer select")).to_have_value("2")
    page.close()
    (ARTIFACTS / "timings.json").write_text(
        json.dumps({"open_to_first_heatmap_s": round(first_heatmap_s, 2), "head_change_s": round(head_change_s, 2)})
    )


def _open_scatter(chromium, address: str, chart: str, seconds: float):
    """A 1280×720 page at ``address`` once the scatter ``chart`` shows its marks (within ``seconds``), the app
    is idle and the chart has settled."""
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(address)
    page.wait_for_selector(f"{chart} .scatterlayer .point", timeout=seconds * 1000)
    page.wait_for_selector(IDLE, timeout=seconds * 1000)
    settled(page, chart)
    return page


def test_a_missing_score_is_painted_grey_not_at_the_bottom_of_the_scale(server, chromium):
    """Duplicate-token on a text where no token repeats has no value: every head's mark grey, none purple."""
    import io

    from PIL import Image

    url, _, _ = server
    chart = ".st-key-all_heads_scores .js-plotly-plot"
    page = _open_scatter(chromium, f"{url}/?page=all_heads&text=A%20cat%20sat.&all_heads_colour=duplicate", chart, 90)
    page.screenshot(path=ARTIFACTS / "all_heads_missing.png")
    shot = page.locator(chart).screenshot()
    # the plot area (the colour bar, purple at its foot, lies outside it), and the marks' opacity: plotly.js
    # draws marks of several sizes at 0.7 over the white paper
    s, opacity = page.eval_on_selector(chart, "el => [el._fullLayout._size, el._fullData[0].marker.opacity]")
    page.close()
    pixels = np.asarray(Image.open(io.BytesIO(shot)).convert("RGB")).astype(float)
    pixels = pixels[int(s["t"]) : int(s["t"] + s["h"]), int(s["l"]) : int(s["l"] + s["w"])]

    def drawn(colour) -> np.ndarray:
        return opacity * np.asarray(colour, dtype=float) + (1 - opacity) * 255

    grey = drawn([int(figures.MISSING_COLOUR[i : i + 2], 16) for i in (1, 3, 5)])
    viridis_low = drawn([0x44, 0x01, 0x54])  # the bottom of the scale, where a missing value was drawn
    assert (np.abs(pixels - grey).max(-1) <= 3).sum() >= 72 * 100  # 72 marks of 20 px a side, grey inside
    assert (np.abs(pixels - viridis_low).max(-1) <= 16).sum() == 0


def test_a_click_on_a_head_of_the_atlas_outlines_it_and_shows_its_events(server, chromium):
    """The Head atlas built on the server: a click on the previous-token head 0·2 moves the red outline onto its
    mark (read from the pixels) and shows that head's events; another number up moves the marks and the
    outline goes with 0·2; its strongest event opens in Compare at 0·2, with its sentence and its query in
    focus."""
    import io

    from PIL import Image

    from attention_viz.analysis import atlas, bundled_corpus, parse_corpus
    from attention_viz.models.loading import load_model

    url, _, _ = server
    chart = ".st-key-atlas_scatter .js-plotly-plot"
    page = _open_scatter(chromium, f"{url}/?page=atlas&layer=3&head=1", chart, 240)
    where = """(el, i) => { const f = el._fullLayout, r = el.getBoundingClientRect(), p = el._fullData[0];
        return [r.left + f.xaxis._offset + f.xaxis.l2p(p.x[i]), r.top + f.yaxis._offset + f.yaxis.l2p(p.y[i])]; }"""

    def red_around(point) -> int:
        shot = np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB")).astype(int)
        x, y = int(point[0]), int(point[1])
        box = shot[y - 12 : y + 13, x - 12 : x + 13]
        return int(((box[..., 0] > 200) & (box[..., 1] < 60) & (box[..., 2] < 60)).sum())

    page.locator(chart).scroll_into_view_if_needed()
    before, target = page.eval_on_selector(chart, where, 3 * 12 + 1), page.eval_on_selector(chart, where, 2)
    assert red_around(before) >= 20 and red_around(target) < 20  # the head in focus is outlined, 0·2 not
    page.mouse.click(*target)
    expect(page.get_by_text("Layer 0, head 2", exact=True)).to_be_visible(timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    settled(page, chart)
    before, target = page.eval_on_selector(chart, where, 3 * 12 + 1), page.eval_on_selector(chart, where, 2)
    assert red_around(target) >= 20 and red_around(before) < 20  # the outline moved with the click
    page.screenshot(path=ARTIFACTS / "atlas_clicked.png")
    box = page.locator("[class*='st-key-_atlas_y'][data-stale='false'] input[role='combobox']")  # the key may end ~…
    box.click()
    box.fill("entropy")
    page.get_by_role("option", name="entropy (bits)", exact=True).first.click()
    page.wait_for_function(
        f"() => document.querySelector('{chart}')._fullLayout.yaxis.title.text === 'entropy (bits)'", timeout=60_000
    )
    page.wait_for_selector(IDLE, timeout=60_000)
    settled(page, chart)
    page.locator(chart).scroll_into_view_if_needed()
    moved = page.eval_on_selector(chart, where, 2)
    assert abs(moved[0] - target[0]) + abs(moved[1] - target[1]) > 5  # entropy up: 0·2's mark moved (from the top down)
    assert red_around(moved) >= 20  # and the outline with it
    page.screenshot(path=ARTIFACTS / "atlas_entropy.png")
    built = atlas.build_atlas(load_model(), parse_corpus(bundled_corpus()), sample=0)
    event = built.head_events(0, 2).iloc[0]
    page.get_by_role("button", name="Open in Compare").click()
    _wait_for_header(page, "Layer 0, head 2")
    wait_for_map_view(page, 0, 2)
    expect(page.get_by_label("Sentence", exact=True)).to_have_value(built.texts[int(event["text"])][0])
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=\"attention-map\"]').dataset.focus === '{int(event['query'])}'",
        timeout=60_000,
    )
    page.screenshot(path=ARTIFACTS / "atlas_opened_in_compare.png")
    page.close()
