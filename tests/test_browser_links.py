"""A shared link in a real browser: it opens the same page, head and language, and its own link box
gives a link that does the same."""

import re

from browser import ARTIFACTS
from playwright.sync_api import expect

from attention_viz.ui import links


def _sees_inside_layer4_head7_in_chinese(page) -> None:
    expect(page.get_by_role("heading", name=re.compile("^第 4 层第 7 个头的内部"))).to_be_visible(timeout=90_000)
    # generous waits: on a loaded machine the sidebar's widgets can arrive after the page's heading
    expect(page.get_by_role("combobox", name="注意力头", exact=True)).to_have_value("7", timeout=60_000)
    expect(page.get_by_role("combobox", name="层", exact=True)).to_have_value("4", timeout=60_000)
    expect(page.get_by_role("radio", name="中文", exact=True)).to_be_checked(timeout=60_000)
    expect(page.get_by_label("句子", exact=True)).to_have_value("它太累了。", timeout=60_000)


def test_a_shared_link_opens_the_same_head_and_language(server, chromium):
    url, _, _ = server
    shared = links.query_string({"page": "inside", "lang": "zh", "layer": "4", "head": "7", "text": "它太累了。"})
    ARTIFACTS.mkdir(exist_ok=True)
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/?{shared}")
    _sees_inside_layer4_head7_in_chinese(page)
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    page.screenshot(path=ARTIFACTS / "shared_link.png")
    page.get_by_text("本视图的链接").click()
    copied = page.locator("[data-testid='stSidebar'] code", has_text=url).first.inner_text().replace("\n", "")
    assert copied.startswith(url) and "head=7" in copied and "lang=zh" in copied
    # the box stays open in another language and on another page (each makes it a new widget)
    box = page.locator("[data-testid='stSidebar'] code", has_text=url).first
    page.locator("[data-testid='stSidebar'] label").filter(has_text="English").first.click()
    expect(box).to_contain_text("lang=en", timeout=60_000)
    page.locator("a[href$='all_heads']").first.click()
    expect(box).to_contain_text("page=all_heads", timeout=60_000)
    other = chromium.new_page(viewport={"width": 800, "height": 600})  # a student opens it (a new context)
    other.goto(copied)
    _sees_inside_layer4_head7_in_chinese(other)
    other.close()
    page.close()
