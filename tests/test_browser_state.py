"""Case C24 in a real browser: a choice survives a model switch typed in the Model box (AppTest cannot
type a new option, and the fault only shows when Streamlit rebuilds the layer and head boxes)."""

import pytest
from browser import ARTIFACTS, CHROMIUM_ARGS, chromium_path, streamlit_server
from playwright.sync_api import expect, sync_playwright
from test_browser import _set_choice, _wait_for_header


@pytest.fixture(scope="module")
def server():
    with streamlit_server() as running:
        yield running


def _choose_model(page, name: str) -> None:
    box = page.get_by_role("combobox", name="Model")
    box.click()
    box.fill(name)
    box.press("Enter")


def test_c24_choice_survives_a_model_switch_and_is_clamped_with_a_note(server, tiny_model_dir):
    url, _, _ = server
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url)
        page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=90_000)
        _set_choice(page, "Layer", 1)
        _set_choice(page, "Head", 2)
        _wait_for_header(page, "Layer 1, head 2")

        _choose_model(page, tiny_model_dir)  # 2 layers × 4 heads: 1, 2 is valid there
        expect(page.get_by_text("2 layers × 4 heads, hidden")).to_be_visible(timeout=60_000)
        _wait_for_header(page, "Layer 1, head 2")
        _choose_model(page, "all-MiniLM-L6-v2")  # and back
        expect(page.get_by_text("6 layers × 12 heads, hidden")).to_be_visible(timeout=60_000)
        _wait_for_header(page, "Layer 1, head 2")
        expect(page.get_by_role("combobox", name="Head", exact=True)).to_have_value("2")

        _set_choice(page, "Layer", 5)
        _set_choice(page, "Head", 9)
        _wait_for_header(page, "Layer 5, head 9")
        _choose_model(page, tiny_model_dir)  # out of range there: clamped, with a note
        _wait_for_header(page, "Layer 1, head 3")
        expect(page.get_by_text("Layer 5 is not in this model (0 to 1): showing 1.")).to_be_visible()
        expect(page.get_by_text("Head 9 is not in this model (0 to 3): showing 3.")).to_be_visible()
        page.screenshot(path=ARTIFACTS / "c24_clamped.png", full_page=True)

        _choose_model(page, "/no/such/folder")  # fails: the tiny model stays, one message in the main area
        expect(page.get_by_text("Could not load the model")).to_be_visible(timeout=60_000)
        _wait_for_header(page, "Layer 1, head 3")
        message = page.get_by_role("alert").first.inner_text()
        assert "/no/such/folder" in message and "\\" not in message
        page.screenshot(path=ARTIFACTS / "model_failed.png", full_page=True)
        page.set_viewport_size({"width": 800, "height": 600})
        page.wait_for_timeout(800)
        page.screenshot(path=ARTIFACTS / "model_failed_800.png", full_page=True)
        browser.close()


def test_a_megabyte_paste_keeps_the_text_and_the_app_responsive(server):
    url, _, _ = server
    big = "word " * 200_000
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url)
        page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=90_000)
        box = page.get_by_label("Sentence", exact=True)
        box.fill(big)
        box.press("Control+Enter")
        expect(page.get_by_text("1,000,000 characters; the limit is 5,000")).to_be_visible(timeout=60_000)
        assert len(box.input_value()) == len(big)  # nothing the user typed is lost
        _set_choice(page, "Head", 4)  # still answers
        expect(page.get_by_role("combobox", name="Head", exact=True)).to_have_value("4")
        box.fill("The cat sat.")
        box.press("Control+Enter")
        page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=60_000)
        page.screenshot(path=ARTIFACTS / "after_big_paste.png", full_page=True)
        browser.close()
