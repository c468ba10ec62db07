"""Hard to fool, in a real browser: outside text shows as text on every page, right-to-left tokens read right
in the hover, and a long head importance run says how long it takes and stops when asked.

The shared server of conftest.py and one browser for the module (headless Chromium, Debian's, driven by
playwright); each test opens its own page, so its own session.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from browser import ARTIFACTS, MAP, idle
from playwright.sync_api import expect

from attention_viz import links

PAGES = ("compare", "all_heads", "head_stats", "head_similarity", "rollout", "inside", "article")
# Markup of every kind in the text fields, the model name, the link's parameter names and values and an
# upload's name; each carries a word of its own ("BIGWORD") so an element made of it can be found.
TEXT = (
    "[Session expired](https://example.invalid/login) ![x](http://127.0.0.1:9/p.png) **IMPORTANT** "
    "$\\huge{BIGWORD}$ <b>bold</b> <img src=http://127.0.0.1:9/q.png> a \\ b `tick` 😀 :smile: "
    ":material/home: שלום עולם"
)
PAIR = "# Heading > quote 1. one www.example.invalid <a href='https://example.invalid'>x</a>"
MODEL = "[reload](https://example.invalid/m) **MODELWORD** $x^2$ :material/bolt:"
NAMES = (
    "[Session expired: log in again](https://example.invalid/login)",
    "**IMPORTANT**",
    "$\\huge{BIG}$",
    "![x](http://127.0.0.1:9/p.png)",
    "<h1>HTMLHEAD</h1>",
)
UPLOAD = "**bad** $x^2$ [spoof](https:example.invalid) <b>x</b> \\ ``t`` 😀 :smile: שלום.txt"
MARKERS = ("example.invalid", "127.0.0.1:9", "IMPORTANT", "BIG", "bold", "Heading", "MODELWORD", "HTMLHEAD", "spoof")
# Elements the Markdown or HTML in the corpus would make; none may hold a marker (code spans may).
MADE = "a, img, strong, b, em, del, h1, h2, h3, h4, h5, h6, .katex, blockquote, li, hr, table"
FOUND = """([sel, markers]) => Array.from(document.querySelectorAll(sel)).map(
    e => [e.tagName, e.textContent, e.getAttribute('href') || '', e.getAttribute('src') || '']
).filter(([, text, href, src]) => markers.some(m => (text + href + src).includes(m)))"""


def _settled(page) -> None:
    idle(page)  # a rerun may follow the first run at once (the page a link asks for)


def _made_of_markup(page) -> list:
    return page.evaluate(FOUND, [MADE, list(MARKERS)])


def _foreign(requests: list[str], url: str) -> list[str]:
    """Requests that left the app: none may go to an address the corpus holds, or anywhere else."""
    allowed = {urlsplit(url).netloc}
    return [r for r in requests if not r.startswith(("data:", "blob:")) and urlsplit(r).netloc not in allowed]


@pytest.mark.parametrize("name", PAGES)
def test_markup_from_a_link_shows_as_text_on_every_page(name, server, chromium):
    url, _, _ = server
    query = {"page": name, "text": TEXT, "pair": PAIR, "model": MODEL, "layer": TEXT, **dict.fromkeys(NAMES, "1")}
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{url}/?{links.query_string(query)}")
    warning = page.locator("[data-testid='stAlertContentWarning']", has_text="could not be read")
    expect(warning).to_be_visible(timeout=120_000)
    error = page.locator("[data-testid='stAlertContentError']", has_text="Could not load the model")
    expect(error).to_be_visible(timeout=120_000)
    _settled(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"markup_{name}.png", full_page=True)
    assert _made_of_markup(page) == []
    assert page.locator(".katex").count() == 0
    shown = warning.inner_text()
    for key in [*NAMES, "layer", "model"]:
        assert key in shown, (key, shown)
    assert MODEL in error.inner_text()
    # the boxes keep the link's text (a rerun may still be redrawing the sidebar: wait for it, not a fixed time)
    expect(page.get_by_label("Sentence", exact=True)).to_have_value(TEXT, timeout=30_000)
    expect(page.get_by_label("Second sentence (optional)", exact=True)).to_have_value(PAIR, timeout=30_000)
    assert _foreign(requests, url) == []
    page.close()


def test_a_backslash_token_stays_in_the_inside_heading(server, chromium):
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    query = links.query_string({"page": "inside", "text": "a \\ b", "inside_query": "2"})
    page.goto(f"{url}/?{query}")
    heading = page.get_by_role("heading", name=re.compile("^Inside layer"))
    expect(heading).to_have_text('Inside layer 3, head 1: where "\\" looks', timeout=120_000)
    expect(page.get_by_text('The layer\'s input vector of "\\" times')).to_be_visible()
    page.close()


def _upload(page, name: str, content: bytes) -> None:
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        {"name": name, "mimeType": "text/plain", "buffer": content}
    )


def test_an_upload_s_name_shows_as_text_and_an_empty_upload_says_so(server, chromium):
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{url}/?page=head_stats")
    page.locator("[data-testid='stRadio'] label").filter(has_text="an uploaded .txt file").click()
    expect(page.locator("[data-testid='stFileUploaderDropzoneInput']")).to_have_count(1, timeout=60_000)
    _upload(page, UPLOAD, b"\xff\xfe\x00not UTF-8 \x81")
    error = page.locator("[data-testid='stAlertContentError']", has_text="is not UTF-8 text")
    expect(error).to_be_visible(timeout=60_000)
    _settled(page)
    assert UPLOAD in error.inner_text()
    assert _made_of_markup(page) == [] and page.locator(".katex").count() == 0
    assert _foreign(requests, url) == []
    for content in (b"", b"\n\n  \n\t\n", "\u200b\n\ufeff\u200b\n\u00ad".encode()):
        _upload(page, "empty.txt", content)
        expect(page.get_by_text("The corpus is empty")).to_be_visible(timeout=60_000)
        _settled(page)
    page.close()


# The first line of the hover ("query → key: weight") as shown: its text and each character's centre along x,
# read from the SVG text layout (getExtentOfChar follows the bidi reordering; invisible characters have none).
HOVER_LINE = """() => {
    const text = document.querySelector('.hoverlayer .hovertext text');
    if (!text) return null;
    const lines = text.querySelectorAll('tspan.line'), line = lines.length ? lines[0] : text;
    const s = line.textContent, centres = [];
    for (let i = 0; i < s.length; i++) {
        let c = null;
        try { const r = line.getExtentOfChar(i); if (r.width > 0) c = r.x + r.width / 2; } catch (e) {}
        centres.push(c);
    }
    return {s, centres};
}"""
CELL = """([row, column]) => {
    const el = document.querySelector('[data-testid="attention-map"] .js-plotly-plot'), full = el._fullLayout;
    const box = el.querySelector('.nsewdrag').getBoundingClientRect();
    return [box.left + full.xaxis.l2p(column), box.top + full.yaxis.l2p(row)];
}"""


def _centre(line: dict, start: int, end: int) -> float:
    found = [x for x in line["centres"][start:end] if x is not None]
    assert found, (line["s"], start, end)
    return sum(found) / len(found)


@pytest.mark.parametrize("query, key", [("שלום", "עולם"), ("مرحبا", "بالعالم")])
def test_the_hover_reads_query_key_weight_with_right_to_left_tokens(query, key, server, chromium):
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/?{links.query_string({'text': f'{query} {key}', 'word_level': '1'})}")
    page.wait_for_selector("[data-testid='attention-map'] .js-plotly-plot .heatmaplayer", timeout=120_000)
    _settled(page)
    labels = page.evaluate(f'() => document.querySelector("{MAP}")._fullData[0].y')
    row, column = (next(i for i, label in enumerate(labels) if word in label) for word in (query, key))
    x, y = page.evaluate(CELL, [row, column])
    page.mouse.move(x, y)
    page.wait_for_function(HOVER_LINE, timeout=30_000)
    line = page.evaluate(HOVER_LINE)
    page.screenshot(path=ARTIFACTS / f"hover_rtl_{row}_{column}.png")
    text = line["s"]
    arrow, colon = text.index(" → "), text.rindex(": ")
    spans = {
        "query": (text.index(query), text.index(query) + len(query)),
        "arrow": (arrow + 1, arrow + 2),
        "key": (text.index(key, arrow), text.index(key, arrow) + len(key)),
        "weight": (colon + 2, len(text)),
    }
    order = sorted(spans, key=lambda name: _centre(line, *spans[name]))
    assert order == ["query", "arrow", "key", "weight"], (text, order)
    page.close()


def test_head_importance_says_how_long_it_takes_and_stops(server, chromium):
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/?page=head_stats")
    page.locator("[data-testid='stRadio'] label").filter(has_text="the bundled corpus").click()
    expect(page.locator("[data-testid='stDataFrame']")).to_be_visible(timeout=180_000)  # statistics alone
    _settled(page)
    page.get_by_text("Also head importance").click()
    expect(page.get_by_text(re.compile(r"Texts done: \d+ of 264 \(about .+ left\)"))).to_be_visible(timeout=180_000)
    page.screenshot(path=ARTIFACTS / "importance_estimate.png")
    stop = page.locator(".st-key-_corpus_stop button")  # the page's own, not Streamlit's Stop in the toolbar
    expect(stop).to_contain_text("Stop")
    stop.click()
    expect(page.get_by_text(re.compile(r"Stopped after \d+ of 264 texts"))).to_be_visible(timeout=60_000)
    _settled(page)
    assert page.locator("[data-testid='stProgress']").count() == 0
    assert stop.count() == 0
    expect(page.locator(".st-key-_corpus_again button")).to_contain_text("Run again")
    page.close()
