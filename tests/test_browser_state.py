"""The sidebar's state in a real browser: a layer and head survive a model switch typed in the Model box
(AppTest cannot type a new option, and the fault only shows when Streamlit rebuilds the boxes), and a
megabyte paste is refused without losing the text."""

from browser import ARTIFACTS, MAP, settled
from browser import set_choice as _set_choice
from browser import wait_for_header as _wait_for_header
from playwright.sync_api import expect


def _choose_model(page, name: str) -> None:
    box = page.get_by_role("combobox", name="Model")
    box.click()
    box.fill(name)
    box.press("Enter")


def test_layer_and_head_survive_a_model_switch_and_out_of_range_ones_are_clamped_with_a_note(
    server, chromium, tiny_model_dir
):
    """Streamlit makes a new widget, reset to its default, when its choices change. Layer 1, head 2, then a
    model of 2 layers × 4 heads: still layer 1, head 2 (valid in both); back to the bundled model: still 1, 2.
    Only a choice out of range is clamped, with a note; a model that fails to load leaves the last one."""
    url, _, _ = server
    ARTIFACTS.mkdir(exist_ok=True)
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
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
    page.screenshot(path=ARTIFACTS / "model_switch_clamped.png", full_page=True)

    _choose_model(page, "/no/such/folder")  # fails: the tiny model stays, one message in the main area
    expect(page.get_by_text("Could not load the model")).to_be_visible(timeout=60_000)
    _wait_for_header(page, "Layer 1, head 3")
    message = page.get_by_role("alert").first.inner_text()
    assert "/no/such/folder" in message and "\\" not in message
    page.screenshot(path=ARTIFACTS / "model_failed.png", full_page=True)
    page.set_viewport_size({"width": 800, "height": 600})
    page.wait_for_function("sel => document.querySelector(sel).getBoundingClientRect().right <= 800", arg=MAP)
    settled(page, MAP)  # the map redrawn at the new width
    page.screenshot(path=ARTIFACTS / "model_failed_800.png", full_page=True)
    page.close()


def test_a_megabyte_paste_keeps_the_text_and_the_app_responsive(server, chromium):
    url, _, _ = server
    big = "word " * 200_000
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(url)
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=90_000)
    box = page.get_by_label("Sentence", exact=True)
    box.fill(big)
    box.press("Control+Enter")
    expect(page.get_by_text("1,000,000 characters; the limit is 5,000")).to_be_visible(timeout=60_000)
    assert len(box.input_value()) == len(big)  # nothing the user typed is lost
    box.fill("The cat sat.")
    box.press("Control+Enter")
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=60_000)
    _set_choice(page, "Head", 4)  # still answers
    expect(page.get_by_role("combobox", name="Head", exact=True)).to_have_value("4")
    page.screenshot(path=ARTIFACTS / "after_big_paste.png", full_page=True)
    page.close()
