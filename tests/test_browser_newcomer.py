"""What a new user tripped over, in a real browser: the link to the view in one compact control, Head
statistics' tags and header at 800 × 600, and a chart with a control character still exporting its PNG."""

import io
from urllib.parse import quote

import numpy as np
from browser import ARTIFACTS, idle, settled
from PIL import Image
from playwright.sync_api import expect

OPACITY_CHAIN = """button => {
    const seen = [];
    for (let e = button; e && !e.classList.contains('st-key-share_link'); e = e.parentElement) {
        const style = getComputedStyle(e);
        seen.push(style.visibility === 'visible' && Number(style.opacity) > 0.5);
    }
    return seen.every(Boolean);
}"""


def test_the_link_to_this_view_is_one_compact_control_in_view_whose_button_copies_it(server, chromium):
    """At 1280 × 720 the box was below the sidebar's fold, and opened it showed a ~690-character link over ~25
    lines with its copy button (shown only on hover) scrolled out of sight."""
    url, _, _ = server
    context = chromium.new_context(viewport={"width": 1280, "height": 720})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    page = context.new_page()
    page.goto(f"{url}/?layer=2&head=5")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
    idle(page)
    opener = page.locator(".st-key-share_box button").first
    box = opener.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 720, box  # no scrolling needed
    examples = page.get_by_role("combobox", name="Examples", exact=True).bounding_box()
    assert examples["y"] + examples["height"] <= 720, examples  # and it takes no row: the Examples box stays in view
    switch = page.locator(".st-key-presentation").bounding_box()  # was below the fold, past five boxes
    assert switch is not None and switch["y"] >= 0 and switch["y"] + switch["height"] <= 720, switch
    opener.click()
    code = page.locator(".st-key-share_link [data-testid='stCode']").first
    expect(code).to_contain_text("head=5", timeout=60_000)
    shape = code.bounding_box()
    assert shape["height"] < 70 and shape["y"] + shape["height"] <= 720, shape  # one line, in view
    button = code.locator("button[aria-label='Copy to clipboard']")
    place = button.bounding_box()
    assert place is not None and place["x"] + place["width"] <= 1280 and place["y"] + place["height"] <= 720, place
    assert button.evaluate(OPACITY_CHAIN)  # shown without hovering the box
    page.mouse.move(900, 600)  # the pointer elsewhere: a lecturer's first click goes straight to the button
    button.click()
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied.startswith(url) and "head=5" in copied and "layer=2" in copied and "\n" not in copied
    context.close()


def test_a_label_with_a_bell_character_is_drawn_visibly_and_the_chart_still_saves_a_png(server, chromium, family_dir):
    """A bell (U+0007) in a byte-level BPE label was drawn as a box, and the camera icon then saved nothing:
    SVG refuses the character, so plotly's image export failed without a word."""
    url, _, _ = server
    folder = family_dir("roberta")
    page = chromium.new_page(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    text = quote("ring the bell\x07 now")
    page.goto(f"{url}/?page=inside&model={quote(folder)}&text={text}")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)
    idle(page)
    settled(page, ".js-plotly-plot")
    texts = page.locator(".js-plotly-plot").evaluate_all(
        "charts => charts.map(c => [...c.querySelectorAll('svg text')].map(e => e.textContent))"
    )
    assert not any("\x07" in label for chart in texts for label in chart), texts
    index = next(i for i, chart in enumerate(texts) if any("␇" in label for label in chart))  # drawn visibly
    chart = page.locator(".js-plotly-plot").nth(index)
    chart.scroll_into_view_if_needed()
    chart.hover()
    with page.expect_download(timeout=60_000) as download:
        chart.locator(".modebar-btn[data-title*='png' i]").first.click()
    saved = download.value
    path = saved.path()
    assert saved.suggested_filename.endswith(".png") and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.close()


OVERLAPS = """chart => {
    const boxes = [...chart.querySelectorAll('.textpoint text')].map(e => e.getBoundingClientRect())
        .filter(b => b.width > 0);
    const close = [];
    boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
        const apart = Math.max(b.left - a.right, a.left - b.right);
        const overlapY = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (overlapY > 0 && apart < 3) close.push([a.left, a.right, b.left, b.right, a.top]);
    }));
    return [boxes.length, close];
}"""


def test_head_statistics_tags_do_not_run_together_at_800_by_600(server, chromium):
    """Two neighbouring "broad" tags read "broadbroad": no gap between them at 800 × 600."""
    url, _, _ = server
    for language in ("en", "zh"):
        page = chromium.new_page(viewport={"width": 800, "height": 600})
        page.goto(f"{url}/?page=head_stats&lang={language}")
        page.wait_for_selector(".js-plotly-plot .textpoint text", timeout=90_000)
        idle(page)
        settled(page, ".js-plotly-plot")
        count, close = page.locator(".js-plotly-plot").last.evaluate(OVERLAPS)
        assert count > 20 and not close, (language, close)
        page.close()


def _runs(empty) -> list[tuple[int, int]]:
    """``(start, length)`` of each run of True in a 1-D boolean array."""
    edges = np.diff(np.concatenate([[0], empty.astype(np.int8), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return list(zip(starts.tolist(), (stops - starts).tolist(), strict=True))


def test_all_heads_thumbnails_have_a_gap_and_rows_are_as_close_as_columns_at_800_by_600(server, chromium):
    """At 800 × 600 the 29 px thumbnails touched side by side, with 60 px between rows."""
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 800, "height": 600})
    page.goto(f"{url}/?page=all_heads")
    page.wait_for_selector(".st-key-head_grid_box .js-plotly-plot .main-svg", timeout=90_000)
    idle(page)
    settled(page, ".st-key-head_grid_box .js-plotly-plot")
    # In pixels: the thumbnails' heatmap, where the page's white shows through the gaps between them (the
    # lightest attention is (247, 251, 255), not white).
    shot = page.locator(".st-key-head_grid_box .heatmaplayer image").screenshot()
    pixels = np.asarray(Image.open(io.BytesIO(shot)).convert("RGB")).astype(int)
    white = (pixels >= 254).all(-1)
    # mostly white: a gap (the outline of the head in focus crosses one)
    columns, rows = _runs(white.mean(0) > 0.8), _runs(white.mean(1) > 0.8)
    inner_columns = [run for run in columns if run[0] > 0 and sum(run) < white.shape[1]]
    inner_rows = [run for run in rows if run[0] > 0 and sum(run) < white.shape[0]]
    assert len(inner_columns) == 11 and len(inner_rows) == 5, (columns, rows)  # 12 heads, 6 layers
    across = min(length for _, length in inner_columns)
    down = [length for _, length in inner_rows]
    assert across >= 3 and inner_columns[0][0] >= 20, columns  # a gap, and thumbnails still large enough
    assert all(abs(gap - across) <= 2 for gap in down), (across, down)  # rows as far apart as columns
    page.screenshot(path=ARTIFACTS / "all_heads_800x600.png")
    page.close()
