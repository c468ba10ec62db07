"""What a person sees: the real app in headless Chromium (Debian's), driven by playwright."""

import json
import os
import time

import numpy as np
import pytest
from browser import ARTIFACTS, CHROMIUM_ARGS, chromium_path, streamlit_server
from playwright.sync_api import expect, sync_playwright

from attention_viz.extraction import extract

SENTENCE = "The trophy didn't fit in the suitcase because it was too big."
LAYER, HEAD = 4, 7

# plotly.js keeps each chart's decoded data (base64 arrays included) in _fullData on its div
HEATMAP_Z = """els => els.map(el => Array.from(el._fullData[0].z, row => Array.from(row)))"""


def _set_slider(page, label: str, value: int) -> None:
    """Move a slider with quick key presses, as a person does (none may be lost to a rerun)."""
    slider = page.get_by_role("slider", name=label)  # Streamlit's slider is an <input type="range">
    slider.focus()
    slider.press("Home")
    for _ in range(value):
        slider.press("ArrowRight")
    expect(slider).to_have_value(str(value))


def _wait_for_rows(page, rows: int) -> None:
    page.wait_for_function(
        "n => { const el = document.querySelector('.js-plotly-plot'); return el && el.data[0].y.length === n; }",
        arg=rows,
        timeout=60_000,
    )


def _wait_for_header(page, text: str) -> None:
    expect(page.get_by_role("heading", name=text)).to_be_visible(timeout=60_000)


@pytest.fixture(scope="module")
def server():
    with streamlit_server() as running:
        yield running


def test_type_a_sentence_pick_a_head_and_see_its_heatmaps(server, bundled):
    url, _, started = server
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(url)
        page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=90_000)
        first_heatmap_s = time.monotonic() - started

        text = page.get_by_label("Sentence", exact=True)
        text.fill(SENTENCE)
        text.press("Control+Enter")
        _wait_for_rows(page, extract(bundled, SENTENCE).encoding.num_tokens)
        _set_slider(page, "Layer", LAYER)
        _wait_for_header(page, f"Layer {LAYER}, head 1")
        _set_slider(page, "Head", HEAD - 1)
        _wait_for_header(page, f"Layer {LAYER}, head {HEAD - 1}")
        changed = time.monotonic()  # one head change, timed from key press to the new header
        page.get_by_role("slider", name="Head").press("ArrowRight")
        _wait_for_header(page, f"Layer {LAYER}, head {HEAD}")
        head_change_s = time.monotonic() - changed
        page.wait_for_timeout(1000)  # let plotly finish drawing before the screenshot
        page.screenshot(path=ARTIFACTS / "compare.png", full_page=True)

        expected = extract(bundled, SENTENCE)
        tokens = expected.encoding.num_tokens
        pretrained, scratch, difference = page.eval_on_selector_all(".js-plotly-plot", HEATMAP_Z)
        assert np.array(pretrained).shape == (tokens, tokens)  # one row and column per token
        np.testing.assert_allclose(pretrained, expected.weights[LAYER, HEAD], atol=1e-7)
        np.testing.assert_allclose(scratch, expected.weights[LAYER, HEAD], atol=1e-5)
        assert np.abs(difference).max() <= 1e-5
        expect(page.get_by_text("Matches transformers")).to_be_visible()

        page.get_by_role("link", name="All heads").click()
        _wait_for_header(page, "All heads: 6 layers × 12 heads")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .heatmaplayer').length > 0")
        page.wait_for_timeout(1500)
        page.screenshot(path=ARTIFACTS / "all_heads.png", full_page=True)
        grid = page.eval_on_selector(".js-plotly-plot", "el => el.data.length")
        assert grid == 72
        assert page.get_by_label("Sentence", exact=True).input_value() == SENTENCE  # kept across pages
        browser.close()
    (ARTIFACTS / "timings.json").write_text(
        json.dumps({"start_to_first_heatmap_s": round(first_heatmap_s, 2), "head_change_s": round(head_change_s, 2)})
    )


def test_c17_log_is_clean_at_start_and_after_a_file_changes(server):
    _, log, _ = server
    app = os.path.join(os.path.dirname(__file__), "..", "app.py")
    os.utime(app)  # a file change, without changing the file
    time.sleep(2)
    text = log.read_text()
    assert "You can now view your Streamlit app" in text
    for noise in ("Traceback", "torch.classes", "Error", "Inotify"):
        assert noise not in text, text
