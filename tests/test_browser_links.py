"""A shared link in a real browser: it opens the same page, head and language, and its own link box
gives a link that does the same."""

import re

from browser import ARTIFACTS, MAP_DRAWN, idle, wait_for_map_view
from playwright.sync_api import expect

from attention_viz import links


def _sees_inside_layer4_head7_in_chinese(page) -> None:
    expect(page.get_by_role("heading", name=re.compile("^第 4 层第 7 个头的内部"))).to_be_visible(timeout=90_000)
    # generous waits: on a loaded machine the sidebar's widgets can arrive after the page's heading
    expect(page.get_by_role("combobox", name="注意力头", exact=True)).to_have_value("7", timeout=60_000)
    expect(page.get_by_role("combobox", name="层", exact=True)).to_have_value("4", timeout=60_000)
    expect(page.get_by_role("radio", name="中文", exact=True)).to_be_checked(timeout=60_000)
    expect(page.get_by_label("句子", exact=True)).to_have_value("它太累了。", timeout=60_000)


LINK_BOX = ".st-key-share_link"  # the popover's panel with the link


def _open_link_box(page, label: str) -> None:
    page.locator(".st-key-share_box button").first.click()
    page.locator(LINK_BOX).first.wait_for(timeout=60_000)


def test_a_shared_link_opens_the_same_head_and_language(server, chromium):
    url, _, _ = server
    shared = links.query_string({"page": "inside", "lang": "zh", "layer": "4", "head": "7", "text": "它太累了。"})
    ARTIFACTS.mkdir(exist_ok=True)
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/?{shared}")
    _sees_inside_layer4_head7_in_chinese(page)
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    page.screenshot(path=ARTIFACTS / "shared_link.png")
    _open_link_box(page, "链接")
    copied = page.locator(f"{LINK_BOX} code", has_text=url).first.inner_text().replace("\n", "")
    assert copied.startswith(url) and "head=7" in copied and "lang=zh" in copied
    # in another language and on another page the box gives that view's link
    page.keyboard.press("Escape")
    page.locator("[data-testid='stSidebar'] label").filter(has_text="English").first.click()
    expect(page.get_by_role("heading", name=re.compile("^Inside layer 4, head 7"))).to_be_visible(timeout=60_000)
    _open_link_box(page, "Link")
    expect(page.locator(f"{LINK_BOX} code").first).to_contain_text("lang=en", timeout=60_000)
    page.keyboard.press("Escape")
    page.locator("a[href$='all_heads']").first.click()
    # the page is there (as a person waits to see it) before its link is asked for
    expect(page.get_by_role("heading", name=re.compile("^All heads: "))).to_be_visible(timeout=60_000)
    _open_link_box(page, "Link")
    expect(page.locator(f"{LINK_BOX} code").first).to_contain_text("page=all_heads", timeout=60_000)
    other = chromium.new_page(viewport={"width": 800, "height": 600})  # a student opens it (a new context)
    other.goto(copied)
    _sees_inside_layer4_head7_in_chinese(other)
    other.close()
    page.close()


def test_a_head_change_that_reruns_only_the_page_keeps_the_address_and_the_open_link_box_true(server, chromium):
    """Compare's body is a fragment: a head change reruns it alone. The address bar must still follow the
    view, and an open "link to this view" box (in the sidebar, outside the fragment) must show the new head."""
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{url}/?layer=2&head=3")
    expect(page.get_by_role("heading", name="Layer 2, head 3")).to_be_visible(timeout=90_000)
    page.wait_for_selector(MAP_DRAWN, timeout=120_000)
    idle(page)  # the map has its keys once it is drawn and the page's runs are over
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("ArrowRight")  # the box is closed: the map steps in the browser
    expect(page.get_by_role("heading", name="Layer 2, head 4")).to_be_visible(timeout=60_000)
    expect(page).to_have_url(re.compile(r"head=4"), timeout=60_000)
    _open_link_box(page, "Link")
    box = page.locator(f"{LINK_BOX} code", has_text=url).first
    expect(box).to_contain_text("head=4", timeout=60_000)
    idle(page)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("ArrowRight")  # the box is open: the whole app reruns, the link follows
    expect(page.get_by_role("heading", name="Layer 2, head 5")).to_be_visible(timeout=60_000)
    expect(box).to_contain_text("head=5", timeout=60_000)
    expect(page).to_have_url(re.compile(r"head=5"), timeout=60_000)
    page.close()


def test_the_page_preloads_the_apps_modules_and_not_plotly_js(server):
    """The page's HTML starts downloading the map element's modules with Streamlit's scripts, and neither the
    app's plotly.js (fetched once the map has painted: preloaded, it held up the first map) nor Streamlit's
    plotly chunk; the app serves its copy of plotly.js, the plotly package's own file."""
    import urllib.request

    from attention_viz.ui.attention_map import serving

    url, _, _ = server
    with urllib.request.urlopen(f"{url}/all_heads", timeout=30) as response:
        html = response.read()
        assert int(response.headers["content-length"]) == len(html) and response.headers.get("etag") is None
    page = html.decode()
    assert serving.PLOTLY_PATH not in page and "plotly.min.js" not in page and "plotly-" not in page
    assert "PlotlyChart" not in page
    with urllib.request.urlopen(f"{url}/{serving.PLOTLY_PATH}", timeout=30) as script:
        assert script.read() == serving.PLOTLY_JS.read_bytes()
    # and the map element's module and the page-wide one, each with every module it imports, from where
    # Streamlit serves the component: a browser fetches an import only when it runs the importing module
    modules = re.findall(r'<link rel="modulepreload" href="\./([\w./-]+)">', page)
    prefix = "_stcore/bidi-components/attention-viz."
    assert {m.removeprefix(prefix) for m in modules} >= {
        "attention_map/attention_map.js",
        "attention_map/plotly_loader.js",
        "attention_map/browser_view.js",
        "svg_buttons/svg_buttons.js",
        "svg_buttons/history_entries.js",
    }
    for module in modules:
        with urllib.request.urlopen(f"{url}/{module}", timeout=30) as script:
            assert script.read() == (serving.Path(serving.__file__).parent / module.split("/")[-1]).read_bytes()
    head = urllib.request.urlopen(urllib.request.Request(f"{url}/all_heads", method="HEAD"), timeout=30)
    assert int(head.headers["content-length"]) == len(html)  # what a GET of the page sends


def test_stepping_off_an_example_keeps_its_name_and_the_page_leads_back_to_its_head(server, chromium):
    """The Examples box names the example whose sentence is in the Sentence box, whatever the head: a head
    change reruns only the page, which then offers the way back to the example's own head."""
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(url)
    expect(page.get_by_role("heading", name="Layer 3, head 1")).to_be_visible(timeout=90_000)
    examples = page.get_by_role("combobox", name="Examples", exact=True)
    expect(examples).to_have_value("Pronoun", timeout=60_000)
    wait_for_map_view(page, 3, 1)
    back = page.get_by_role("button", name="Back to the example's layer 3, head 1")
    expect(back).to_be_hidden()  # drawn (Compare's map shows it as it steps off the head), not shown
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("heading", name="Layer 3, head 2")).to_be_visible(timeout=60_000)
    expect(examples).to_have_value("Pronoun")
    back.click()
    expect(page.get_by_role("heading", name="Layer 3, head 1")).to_be_visible(timeout=60_000)
    wait_for_map_view(page, 3, 1)
    expect(back).to_be_hidden(timeout=30_000)
    expect(page.get_by_text("Pronoun.", exact=False).first).to_be_visible()
    page.close()
