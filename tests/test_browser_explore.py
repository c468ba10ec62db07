"""Compare explored in the browser: every move within the maps the page holds runs nothing on the server.

A head or layer step (keys, the ‹ › buttons, the Layer and Head boxes), a click on a cell, a window pan and the
Pretrained / From scratch / Difference switch are drawn by the map element from its data; the title, the boxes,
the numbers, the focus token's bars, the line view, the example's note and the address follow in the browser.
The server's script runs are counted as the browser's WebSocket messages (each run is asked for by one); the
view reaches the server with the next run something else causes (a new sentence, a toggle, a page switch,
Back), and a link copied after the steps opens them.
"""

from __future__ import annotations

import json
import re
import urllib.parse

import numpy as np
import pytest
from browser import ARTIFACTS, MAP_DRAWN, idle, plotly_z_once_close, wait_for_header, wait_for_map_view
from playwright.sync_api import expect

from attention_viz.extraction import extract
from attention_viz.ui.view import state

MAP_ELEMENT = "[data-testid='attention-map']"
LONG = " ".join(f"w{i % 37}" for i in range(60))  # more tokens than the map's window: a pan has room


class Socket:
    """The WebSocket messages a page sends (each script run is asked for by one) and the bytes both ways."""

    def __init__(self, page) -> None:
        self.sent, self.received = [], []
        page.on("websocket", self._watch)

    def _watch(self, socket) -> None:
        socket.on("framesent", lambda frame: self.sent.append(len(frame)))
        socket.on("framereceived", lambda frame: self.received.append(len(frame)))

    def mark(self) -> tuple[int, int]:
        return len(self.sent), len(self.received)

    def since(self, mark: tuple[int, int]) -> tuple[int, int]:
        """``(messages sent, bytes both ways)`` since ``mark``."""
        sent, received = self.sent[mark[0] :], self.received[mark[1] :]
        return len(sent), sum(sent) + sum(received)


def _open(chromium, url: str, width: int = 1280, height: int = 720):
    page = chromium.new_page(viewport={"width": width, "height": height})
    socket = Socket(page)
    page.goto(url)
    page.wait_for_selector(MAP_DRAWN, timeout=120_000)
    idle(page)
    return page, socket


def _view(page) -> dict:
    data = page.locator(MAP_ELEMENT).evaluate("e => ({...e.dataset})")
    return {
        "layer": int(data["layer"]),
        "head": int(data["head"]),
        "focus": int(data["focus"]),
        "query_start": int(data["queryStart"]),
        "map_view": data.get("mapView"),
    }


def _address(page) -> dict:
    return dict(urllib.parse.parse_qsl(page.evaluate("location.search").lstrip("?")))


def _address_shows(page, head: int) -> None:
    """Until the address names ``head`` (the map writes it once the keys rest)."""
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('head') === '{head}'", timeout=30_000)


def _reported(page) -> None:
    """Until the address names the whole view the map shows: the map's report of the last move has left, and with
    it anything the move asks of the server (a report sends it at once); then until the page is idle, so that a
    run it asked for would have started."""
    reported = """s => { const d = document.querySelector(s).dataset, a = new URLSearchParams(location.search);
        return a.get('layer') === d.layer && a.get('head') === d.head && (a.get('focus') || '-1') === d.focus
            && (a.get('query_start') || '0') === d.queryStart && (a.get('map_view') || 'pretrained') === d.mapView; }"""
    page.wait_for_function(reported, arg=MAP_ELEMENT, timeout=30_000)
    idle(page)


def _settle(page) -> None:
    """Until the map's plotly and details caught up with the last move (their redraw waits for the keys to stop)."""
    caught_up = "s => { const m = document.querySelector(s); return m.dataset.ready === '1' && m.dataset.plotly === m.dataset.details; }"  # noqa: E501
    page.wait_for_function(caught_up, arg=MAP_ELEMENT, timeout=30_000)


def test_every_move_within_the_held_maps_runs_nothing_on_the_server(server, chromium, bundled):
    url, _, _ = server
    page, socket = _open(chromium, url)
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})  # the page has the keys (not a text box)
    mark = socket.mark()
    for key in ("ArrowRight", "ArrowRight", "ArrowDown", "ArrowLeft"):
        page.keyboard.press(key)
    page.locator(".av-stepper.av-head button").last.click()  # ›
    page.locator(".av-stepper.av-layer button").first.click()  # ‹
    page.locator(".av-stepper.av-head select").select_option("7")
    page.locator(".av-kinds button[data-kind=scratch]").click()
    page.locator(".av-focus").select_option("4")
    # a click on a cell of row 2 (the plot's third of 16 rows) focuses that query
    cells = page.locator(f"{MAP_ELEMENT} .av-cells").bounding_box()
    page.mouse.click(cells["x"] + cells["width"] / 2, cells["y"] + cells["height"] * 2.5 / 16)
    _settle(page)
    assert _view(page) == {"layer": 3, "head": 7, "focus": 2, "query_start": 0, "map_view": "scratch"}
    _reported(page)
    messages, moved = socket.since(mark)
    assert messages == 0 and moved == 0, (messages, moved)
    # what follows the view in the browser: the title, the boxes, the numbers, the bars, the lines, the address
    wait_for_header(page, "Layer 3, head 7")
    expect(page.locator(".av-stepper.av-layer select")).to_have_value("3")
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    bars = page.eval_on_selector(".av-bars.js-plotly-plot", "e => e.data.map(t => Array.from(t.y))")
    np.testing.assert_array_equal(np.float32(bars[0]), weights[3, 7, 2])  # the focus row, exactly
    np.testing.assert_allclose(bars[1], weights[3, 7, 2], atol=1e-5)  # from scratch: equal to 1e-5
    shapes = page.eval_on_selector(".av-lines.js-plotly-plot", "e => e.layout.shapes.map(s => [s.y0, s.y1])")
    assert {y0 for y0, _ in shapes} == {2} and len(shapes) == weights.shape[-1]  # the focus row's lines only
    numbers = page.locator(".av-number").all_inner_texts()
    from attention_viz import analysis

    scratch_weights = extract(bundled, state.EXAMPLE_TEXT).weights  # the exact variant: the same numbers
    entropy = analysis.row_entropy(scratch_weights[3, 7]).mean()
    assert numbers[2].startswith(f"{entropy:.3f}")
    assert (_address(page)["layer"], _address(page)["head"], _address(page)["focus"]) == ("3", "7", "2")
    assert _address(page)["map_view"] == "scratch"
    page.screenshot(path=ARTIFACTS / "explore_after_moves.png")
    page.close()


def test_a_pan_runs_nothing_and_the_difference_is_scratch_minus_pretrained(server, chromium):
    url, _, _ = server
    page, socket = _open(chromium, f"{url}/?text={urllib.parse.quote_plus(LONG)}")
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})
    mark = socket.mark()
    page.keyboard.press("Shift+ArrowDown")  # the window a quarter down
    page.locator(".av-kinds button[data-kind=difference]").click()
    _settle(page)
    assert _view(page)["query_start"] > 0
    _reported(page)
    assert socket.since(mark) == (0, 0)
    z = page.eval_on_selector(f"{MAP_ELEMENT} .js-plotly-plot", "e => e.data[0].z.flat()")
    assert max(abs(v) for v in z) <= 1e-5  # exact variant: the difference is rounding only
    assert _address(page)["query_start"] == str(_view(page)["query_start"])
    page.close()


def test_twenty_steps_then_a_new_sentence_keeps_the_view_and_the_link_opens_it(server, chromium):
    url, _, _ = server
    page, _ = _open(chromium, url)
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})
    for _ in range(20):
        page.keyboard.press("ArrowRight")
    layer, head = divmod(state.EXAMPLE_LAYER * 12 + state.EXAMPLE_HEAD + 20, 12)
    wait_for_map_view(page, layer, head)
    page.wait_for_function(f"() => location.search.includes('&layer={layer}&head={head}&')")  # once the keys rest
    link = page.evaluate("location.href")
    box = page.get_by_label("Sentence", exact=True)
    box.fill("Dogs chase cats and cats chase mice.")
    box.press("Control+Enter")
    # the new sentence's map (the title names the same head before and after the run, so wait for the rows)
    page.wait_for_function(
        "s => { const p = document.querySelector(s); return !!p?.data && p.data[0].y.join(' ').includes('chase'); }",
        arg=f"{MAP_ELEMENT} .js-plotly-plot",
        timeout=60_000,
    )
    idle(page)
    wait_for_map_view(page, layer, head)  # at the head the steps reached
    expect(page.locator(".av-title")).to_have_text(f"Layer {layer}, head {head}")
    other = chromium.new_page(viewport={"width": 1280, "height": 720})  # a new browser context: another person
    other.goto(link)
    other.wait_for_selector(MAP_DRAWN, timeout=120_000)
    wait_for_map_view(other, layer, head)
    wait_for_header(other, f"Layer {layer}, head {head}")
    other.close()
    page.close()


def test_back_and_forward_after_steps_and_after_a_run(server, chromium):
    url, _, _ = server
    page, _ = _open(chromium, url)
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})
    start = (state.EXAMPLE_LAYER, state.EXAMPLE_HEAD)
    page.keyboard.press("ArrowRight")
    wait_for_map_view(page, start[0], start[1] + 1)
    _address_shows(page, start[1] + 1)  # the step's address is written once the keys rest
    page.keyboard.press("ArrowRight")
    wait_for_map_view(page, start[0], start[1] + 2)
    _address_shows(page, start[1] + 2)
    page.go_back()
    wait_for_map_view(page, start[0], start[1] + 1)
    wait_for_header(page, f"Layer {start[0]}, head {start[1] + 1}")
    page.go_forward()
    wait_for_map_view(page, start[0], start[1] + 2)
    page.locator(".st-key-fit_range label").click()  # a run: the server takes the view, the address keeps it
    idle(page)
    wait_for_map_view(page, start[0], start[1] + 2)
    assert _address(page)["head"] == str(start[1] + 2) and _address(page)["fit_range"] == "1"
    page.go_back()  # before the toggle: the same head, the toggle off
    idle(page)
    wait_for_map_view(page, start[0], start[1] + 2)
    expect(page.locator(".st-key-fit_range input")).not_to_be_checked()
    page.close()


def test_back_at_once_after_a_step_keeps_the_entry_back_went_to(server, chromium):
    """Back pressed at once after a step, most often before the map has written the step's address (its report
    waits for the keys to rest): the entry Back went to keeps its own address (the one before the step; or the
    step before it, when the report got out first on a busy machine), and the map, the title and the address
    agree on it. A report sent after Back wrote the step's address over that entry."""
    url, _, _ = server
    page, _ = _open(chromium, url)
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})
    start = (state.EXAMPLE_LAYER, state.EXAMPLE_HEAD)
    page.keyboard.press("ArrowRight")
    _address_shows(page, start[1] + 1)
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")  # its report still waits when Back comes
    page.go_back(wait_until="commit")
    idle(page)
    # until no map has a report waiting: the step's report has left (before Back) or been dropped (after it)
    page.wait_for_function("s => !document.querySelector(s + '[data-reporting]')", arg=MAP_ELEMENT)
    idle(page)
    head = int(_address(page)["head"])
    assert head in (start[1], start[1] + 1)  # never the step Back went back over (start + 2)
    wait_for_map_view(page, start[0], head)
    expect(page.locator(".av-title")).to_have_text(f"Layer {start[0]}, head {head}")
    page.close()


def test_two_tabs_of_one_browser_explore_on_their_own_and_a_language_switch_keeps_the_view(server, chromium):
    url, _, _ = server
    context = chromium.new_context(viewport={"width": 1280, "height": 720})
    first, second = context.new_page(), context.new_page()
    for page in (first, second):
        page.goto(url)
        page.wait_for_selector(MAP_DRAWN, timeout=120_000)
        idle(page)
    first.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})
    first.keyboard.press("ArrowDown")
    wait_for_map_view(first, state.EXAMPLE_LAYER + 1, state.EXAMPLE_HEAD)
    second.locator(".av-stepper.av-head select").select_option("9")
    second.get_by_text("中文").click()  # a run of the second tab: its own view, in Chinese
    idle(second)
    wait_for_map_view(second, state.EXAMPLE_LAYER, 9)
    expect(second.locator(".av-title")).to_have_text(f"第 {state.EXAMPLE_LAYER} 层，第 9 个头")
    first.get_by_text("中文").click()
    idle(first)
    wait_for_map_view(first, state.EXAMPLE_LAYER + 1, state.EXAMPLE_HEAD)
    assert json.loads(first.locator(".st-key-browser_view input").input_value())["view"]["head"] == state.EXAMPLE_HEAD
    context.close()


# --- The article's layer and Rollout & norms: their maps step in the browser too --------------------------------

ARTICLE_LEAD = f".st-key-article_correct {MAP_ELEMENT}"  # the map with the keys; the two beside it follow it


def _map_shows(page, selector: str) -> dict:
    data = page.locator(selector).evaluate("e => ({...e.dataset})")
    return {name: int(data[name]) for name in ("layer", "head", "focus")}


def _switch_page(page, name: str) -> None:
    page.get_by_role("link", name=name).click()
    page.wait_for_selector(MAP_DRAWN, timeout=120_000)
    idle(page)


def _step_to_layer_3_head_7(page, socket, element: str):
    """Gives the keys to the page (a click on ``element``, not a text box), then steps from the opening view
    (layer 3, head 1; 1-based) to (3, 7) with each control: the keys, the steppers' buttons and the head's
    list. Returns the ``socket``'s mark from before the first step."""
    page.locator(element).click(position={"x": 5, "y": 5})
    mark = socket.mark()
    for key in ("ArrowRight", "ArrowRight", "ArrowDown"):  # (3, 1) → (3, 3) → (4, 3)
        page.keyboard.press(key)
    page.locator(".av-stepper.av-head button").last.click()  # › (4, 4)
    page.locator(".av-stepper.av-layer button").first.click()  # ‹ (3, 4)
    page.locator(".av-stepper.av-head select").select_option("7")  # (3, 7)
    return mark


def test_the_articles_layer_steps_in_the_browser_with_the_heads_numbers(server, chromium, bundled):
    from attention_viz import analysis
    from attention_viz.analysis import article_compare
    from attention_viz.ui.server import cache

    url, _, _ = server
    page, socket = _open(chromium, f"{url}/?page=article")
    mark = _step_to_layer_3_head_7(page, socket, ARTICLE_LEAD)
    cells = page.locator(f"{ARTICLE_LEAD} .av-cells").bounding_box()  # a click on row 2 of 16: its query in focus
    page.mouse.click(cells["x"] + cells["width"] / 2, cells["y"] + cells["height"] * 2.5 / 16)
    page.wait_for_function(
        "s => [...document.querySelectorAll(s)].every(m => m.dataset.ready === '1' && m.dataset.focus === '2')",
        arg=MAP_ELEMENT,
        timeout=30_000,
    )
    # the last move's report has left (its address written), and with it anything it asked of the server
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('focus') === '2' && location.search.includes('head=7')",
        timeout=30_000,
    )
    idle(page)
    assert socket.since(mark) == (0, 0)
    # the three maps show the head; the title, the boxes, the numbers and the note follow it
    shown = [_map_shows(page, f".st-key-{key} {MAP_ELEMENT}") for key in ("article_correct", "article_changed")]
    assert shown == [{"layer": 3, "head": 7, "focus": 2}] * 2
    expect(page.locator(".av-title")).to_have_text("The article's layer next to a correct one (layer 3, head 7)")
    expect(page.locator(".av-stepper.av-layer select")).to_have_value("3")
    text = state.EXAMPLE_TEXT
    differences = tuple(state.DEFAULTS["article_diffs"].split(","))  # the article's layer: both of its choices
    correct, changed = article_compare.article_maps(cache.layer_inputs(bundled, text, None)[3], 12, 0, differences)
    expected = [
        f"{analysis.row_entropy(correct[7]).mean():.3f}",
        f"{analysis.row_entropy(changed[7]).mean():.3f}",
        f"{analysis.max_abs_difference(changed[7], correct[7]):.3f}",
    ]
    assert page.locator(".av-number").all_inner_texts() == expected
    expect(page.locator(".av-notes")).to_contain_text("entering layer 3 of the loaded model")
    z = page.eval_on_selector(f".st-key-article_changed {MAP_ELEMENT} .js-plotly-plot", "e => e.data[0].z")
    np.testing.assert_allclose(z, changed[7][: len(z), : len(z[0])], atol=1e-6)  # the follower's map: the head's
    assert (_address(page)["layer"], _address(page)["head"]) == ("3", "7")
    expect(page.locator(".st-key-off_server_view button")).to_be_visible()  # the files are the server's head's
    page.screenshot(path=ARTIFACTS / "explore_article_after_steps.png")
    page.go_back()  # Back: the view the address before the click names (a run of the page), drawn and titled
    page.wait_for_function("() => new URLSearchParams(location.search).get('focus') !== '2'", timeout=30_000)
    idle(page)
    address = _address(page)
    page.wait_for_function(
        "([s, l, h]) => { const m = document.querySelector(s); return m.dataset.layer === l && m.dataset.head === h; }",
        arg=[ARTICLE_LEAD, address["layer"], address["head"]],
        timeout=30_000,
    )
    title = f"The article's layer next to a correct one (layer {address['layer']}, head {address['head']})"
    expect(page.locator(".av-title")).to_have_text(title)
    for key in ("article_changed", "article_difference"):  # the maps beside it show the address's head too
        page.wait_for_function(
            "([s, l, h]) => { const d = document.querySelector(s).dataset; return d.layer === l && d.head === h }",
            arg=[f".st-key-{key} {MAP_ELEMENT}", address["layer"], address["head"]],
            timeout=30_000,
        )
    page.go_forward()
    page.wait_for_function("() => new URLSearchParams(location.search).get('focus') === '2'", timeout=30_000)
    idle(page)
    _switch_page(page, "Compare")  # the next run takes the view
    wait_for_map_view(page, 3, 7)
    expect(page.locator(".av-title")).to_have_text("Layer 3, head 7")
    page.close()


def test_rollout_steps_layers_in_the_browser_and_a_page_switch_keeps_them(server, chromium, bundled):
    url, _, _ = server
    page, socket = _open(chromium, f"{url}/?page=rollout")
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})
    mark = socket.mark()
    for key in ("ArrowDown", "ArrowDown"):  # layer 3 → 5
        page.keyboard.press(key)
    page.locator(".av-stepper.av-layer button").first.click()  # ‹ 4
    page.locator(".av-stepper.av-layer select").select_option("1")
    page.keyboard.press("ArrowUp")  # 0
    assert page.locator(".av-stepper.av-head").count() == 0  # one map per layer: no head to step
    page.wait_for_function(
        "s => { const m = document.querySelector(s); return m.dataset.ready === '1' && m.dataset.layer === '0'; }",
        arg=MAP_ELEMENT,
        timeout=30_000,
    )
    page.wait_for_function("() => new URLSearchParams(location.search).get('layer') === '0'", timeout=30_000)
    idle(page)  # the last move's report has left, and with it anything it asked of the server
    assert socket.since(mark) == (0, 0)
    expect(page.locator(".av-title")).to_have_text("Rollout & norms: layer 0")
    expect(page.locator(".av-stepper.av-layer select")).to_have_value("0")
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    z = plotly_z_once_close(page, weights[0].mean(0))  # plotly redraws once the keys stop
    np.testing.assert_allclose(z, weights[0].mean(0), atol=1e-5)  # the raw head average of layer 0
    address = _address(page)
    assert address["layer"] == "0" and address.get("head", str(state.EXAMPLE_HEAD)) == str(state.EXAMPLE_HEAD)
    page.screenshot(path=ARTIFACTS / "explore_rollout_after_steps.png")
    other = chromium.new_page(viewport={"width": 1280, "height": 720})  # the link after the steps: another person
    other.goto(page.evaluate("location.href"))
    other.wait_for_selector(MAP_DRAWN, timeout=120_000)
    expect(other.locator(".av-title")).to_have_text("Rollout & norms: layer 0", timeout=60_000)
    other.close()
    _switch_page(page, "Compare")  # the layer the steps reached, the head as it was
    wait_for_map_view(page, 0, state.EXAMPLE_HEAD)
    page.close()


# --- Inside a head: the steps above the map follow its steps in the browser ---------------------------------------

INSIDE_STEPS = ".st-key-inside_browser_steps"  # the steps the element draws for a head it stepped to


def _steps_shown(page, layer: int, head: int) -> None:
    """Until the map shows ``layer``, ``head`` and the steps above it have been drawn for that head."""
    page.wait_for_function(
        "([s, v]) => { const m = document.querySelector(s); return m.dataset.ready === '1' && m.dataset.steps === v; }",
        arg=[MAP_ELEMENT, f"{layer}:{head}"],
        timeout=30_000,
    )


def _chart(page, key: str) -> dict:
    """A step chart's trace as plotly holds it in the page (the element's, for the head it stepped to)."""
    return page.eval_on_selector(
        f"{INSIDE_STEPS} [data-key='{key}'].js-plotly-plot", "e => ({z: e.data[0].z, y: e.data[0].y})"
    )


def _inside_expected(bundled, layer: int, head: int, query: int):
    from attention_viz.analysis import steps
    from attention_viz.extraction import encode

    hidden = steps.layer_inputs(bundled.encoder, encode(bundled.tokenizer, state.EXAMPLE_TEXT))[layer]
    queries, keys, values = steps.head_vectors(bundled.encoder, hidden, layer, head)
    return steps.head_steps(queries, keys, values, query, bundled.info.head_dim**-0.5)


def test_inside_a_head_steps_in_the_browser_with_the_heads_steps(server, chromium, bundled):
    url, _, _ = server
    page, socket = _open(chromium, f"{url}/?page=inside")
    mark = _step_to_layer_3_head_7(page, socket, MAP_ELEMENT)
    _steps_shown(page, 3, 7)
    _address_shows(page, 7)  # the last move's report has left, and with it anything it asked of the server
    idle(page)
    assert socket.since(mark) == (0, 0)
    query = list(extract(bundled, state.EXAMPLE_TEXT).encoding.tokens).index("it")  # the example's query token
    expected = _inside_expected(bundled, 3, 7, query)
    expect(page.locator(".av-title")).to_have_text('Inside layer 3, head 7: where "it" looks')
    expect(page.locator(".av-stepper.av-layer select")).to_have_value("3")
    np.testing.assert_allclose(_chart(page, "step_weights")["y"], expected.weights, atol=1e-6)
    np.testing.assert_allclose(_chart(page, "step_dots")["y"], expected.dots, atol=1e-6)
    np.testing.assert_allclose(_chart(page, "step_scores")["y"], expected.scores, atol=1e-6)
    np.testing.assert_allclose(_chart(page, "step_query")["z"], expected.query[None], atol=1e-6)
    np.testing.assert_allclose(_chart(page, "step_keys")["z"], expected.keys, atol=1e-6)
    np.testing.assert_allclose(_chart(page, "step_values")["z"], expected.values, atol=1e-6)
    np.testing.assert_allclose(_chart(page, "step_context")["z"], expected.context[None], atol=1e-6)
    steps_text = page.locator(INSIDE_STEPS).inner_text()
    assert f"they sum to {expected.weights.sum():.6f}" in steps_text and "cut to head 7's 32 numbers" in steps_text
    expect(page.locator(".st-key-inside_browser_check [role='alert']")).to_contain_text("max difference from")
    expect(page.locator(".st-key-inside_server_steps")).to_be_hidden()  # the page's own steps: the server's head
    expect(page.locator(".st-key-off_server_view button")).to_be_visible()  # so are its files
    page.locator(".st-key-map_controls").scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "explore_inside_after_steps.png")
    page.set_viewport_size({"width": 800, "height": 600})
    page.locator(INSIDE_STEPS).scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "explore_inside_after_steps_800.png")
    page.set_viewport_size({"width": 1280, "height": 720})
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})  # the keys again (not the Head box)
    page.keyboard.press("ArrowRight")  # (3, 8)
    _steps_shown(page, 3, 8)
    _address_shows(page, 8)
    page.go_back()  # Back: the view before the last move (a run of the page), its steps drawn and titled
    _address_shows(page, 7)
    idle(page)
    _steps_shown(page, 3, 7)
    expect(page.locator(".av-title")).to_have_text('Inside layer 3, head 7: where "it" looks')
    expect(page.locator(".st-key-inside_server_steps")).to_be_visible()  # the run drew the head's steps
    weights = page.eval_on_selector(".st-key-step_weights .js-plotly-plot", "e => Array.from(e._fullData[0].y)")
    np.testing.assert_allclose(weights, expected.weights, atol=1e-6)
    page.close()


def test_inside_twenty_steps_then_a_new_query_token_keeps_the_head(server, chromium, bundled):
    url, _, _ = server
    page, socket = _open(chromium, f"{url}/?page=inside")
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})
    mark = socket.mark()
    for _ in range(20):
        page.keyboard.press("ArrowRight")
    layer, head = divmod(state.EXAMPLE_LAYER * 12 + state.EXAMPLE_HEAD + 20, 12)
    _steps_shown(page, layer, head)
    _address_shows(page, head)
    idle(page)
    assert socket.since(mark) == (0, 0)
    box = page.locator("[class*='st-key-_inside_query'] input[role='combobox']").first  # a server control: a run
    box.click()
    box.fill("2:")  # the list shows the options that match what is typed
    page.get_by_role("option", name=re.compile(r"^2: [\u2066-\u2069]?animal[\u2066-\u2069]?$")).first.click()
    expect(page.locator(".av-title")).to_have_text(
        f'Inside layer {layer}, head {head}: where "animal" looks', timeout=60_000
    )
    idle(page)
    _steps_shown(page, layer, head)
    expect(page.locator(".st-key-inside_server_steps")).to_be_visible()  # the server's steps are the head's now
    expected = _inside_expected(bundled, layer, head, 2)
    weights = page.eval_on_selector(".st-key-step_weights .js-plotly-plot", "e => Array.from(e._fullData[0].y)")
    np.testing.assert_allclose(weights, expected.weights, atol=1e-6)
    page.close()


# --- Rollout & norms: the map switch and the window's pan in the browser too -------------------------------------


def _rollout_reported(page) -> None:
    """Until the address names the map kind and the window Rollout's map shows (its report of the last move has
    left, and with it anything the move asks of the server), then until the page is idle."""
    reported = """s => { const d = document.querySelector(s).dataset, a = new URLSearchParams(location.search);
        return d.ready === '1' && (a.get('rollout_map') || 'raw') === d.mapView
            && (a.get('rollout_query_start') || '0') === d.queryStart
            && (a.get('rollout_key_start') || '0') === d.keyStart; }"""
    page.wait_for_function(reported, arg=MAP_ELEMENT, timeout=30_000)
    idle(page)


def _rollout_window(page) -> tuple[int, int]:
    data = page.locator(MAP_ELEMENT).evaluate("e => ({...e.dataset})")
    return int(data["queryStart"]), int(data["keyStart"])


def _core_map(bundled, text: str, kind: str, window: tuple[int, int], size: int) -> np.ndarray:
    """The core's map of ``kind`` (float64) at the example's layer, in the window from ``window``."""
    from attention_viz import analysis

    maps = analysis.rollout_and_norms(bundled.encoder, extract(bundled, text).encoding, state.EXAMPLE_LAYER)
    q0, k0 = window
    return getattr(maps, kind)[q0 : q0 + size, k0 : k0 + size]


@pytest.mark.flaky(reruns=2)  # failed once in a full run on a loaded machine; cause not found yet
def test_rollouts_map_switch_and_pan_run_nothing_and_a_new_sentence_keeps_them(server, chromium, bundled):
    from attention_viz import figures

    url, _, _ = server
    page, socket = _open(chromium, f"{url}/?page=rollout&text={urllib.parse.quote_plus(LONG)}")
    tokens = len(extract(bundled, LONG).encoding.labels)
    size = figures.map_style(False, tokens).window
    assert tokens > size  # a window: the pan has room
    page.locator(MAP_ELEMENT).click(position={"x": 5, "y": 5})  # the page has the keys (not a text box)
    mark = socket.mark()
    page.locator(".av-kinds button[data-kind=norm]").click()
    page.keyboard.press("Shift+ArrowDown")  # the window a quarter down, then a quarter right
    page.keyboard.press("Shift+ArrowRight")
    _rollout_reported(page)
    assert socket.since(mark) == (0, 0)
    window = _rollout_window(page)
    assert window[0] > 0 and window[1] > 0
    expected = _core_map(bundled, LONG, "norm", window, size)
    np.testing.assert_allclose(plotly_z_once_close(page, expected), expected, rtol=1e-6, atol=1e-6)
    colorbar = page.eval_on_selector(f"{MAP_ELEMENT} .js-plotly-plot", "e => e.data[0].colorbar.title.text")
    assert colorbar == "‖α f(x)‖ (hidden units)"  # the norms' unit, the kind's own colour bar
    expect(page.locator(".av-notes")).to_contain_text("Norm-based attention: each weight times")
    mark = socket.mark()
    page.locator(".av-kinds button[data-kind=rollout]").click()
    _rollout_reported(page)
    assert socket.since(mark) == (0, 0)
    assert _rollout_window(page) == window  # the switch keeps the window
    expected = _core_map(bundled, LONG, "rollout", window, size)
    np.testing.assert_allclose(plotly_z_once_close(page, expected), expected, rtol=1e-6, atol=1e-6)
    expect(page.locator(".av-status")).to_contain_text("Rollout: layers 0 to")
    expect(page.locator(".av-kinds button[data-kind=rollout]")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".st-key-off_server_view button")).to_be_visible()  # the files are the server's kind's
    address = _address(page)
    assert address["rollout_map"] == "rollout" and address["rollout_query_start"] == str(window[0])
    page.screenshot(path=ARTIFACTS / "explore_rollout_after_switch_and_pan.png")
    # a run of the server (a new sentence) learns the kind and the window, and draws the new sentence's map there
    other = " ".join(f"x{i % 41}" for i in range(60))
    box = page.get_by_label("Sentence", exact=True)
    box.fill(other)
    box.press("Control+Enter")
    page.wait_for_function(
        "s => { const p = document.querySelector(s); return !!p?.data && p.data[0].y.join(' ').includes('x'); }",
        arg=f"{MAP_ELEMENT} .js-plotly-plot",
        timeout=60_000,
    )
    idle(page)
    count = len(extract(bundled, other).encoding.labels)
    kept = (figures.window_start(window[0], count, size), figures.window_start(window[1], count, size))
    assert _view(page)["map_view"] == "rollout" and _rollout_window(page) == kept
    expected = _core_map(bundled, other, "rollout", kept, size)
    np.testing.assert_allclose(plotly_z_once_close(page, expected), expected, rtol=1e-6, atol=1e-6)
    expect(page.locator(".st-key-at_server_view")).to_be_visible()  # the server drew this kind: its files
    page.close()


def test_a_pan_on_the_articles_layer_and_inside_a_head_runs_nothing(server, chromium):
    """The other pages' maps pan their window in the browser too: the window's keys are the view's own."""
    url, _, _ = server
    for name, lead in (("article", ARTICLE_LEAD), ("inside", MAP_ELEMENT)):
        page, socket = _open(chromium, f"{url}/?page={name}&text={urllib.parse.quote_plus(LONG)}")
        page.locator(lead).click(position={"x": 5, "y": 5})  # the page has the keys (not a text box)
        mark = socket.mark()
        page.keyboard.press("Shift+ArrowDown")
        page.keyboard.press("Shift+ArrowRight")
        page.wait_for_function(
            """s => { const d = document.querySelector(s).dataset, a = new URLSearchParams(location.search);
                return d.ready === '1' && d.queryStart !== '0' && a.get('query_start') === d.queryStart
                    && a.get('key_start') === d.keyStart; }""",
            arg=lead,
            timeout=30_000,
        )
        idle(page)
        assert socket.since(mark) == (0, 0), name
        page.close()


GRID = ".st-key-head_grid .js-plotly-plot"


def _click_thumbnail(page, layer: int, head: int) -> None:
    """A click at the middle of All heads' thumbnail of ``(layer, head)`` (its click target, point
    ``layer * heads + head``), where plotly's axes put it on the screen."""
    point = page.eval_on_selector(
        GRID,
        """(g, [layer, head]) => { const t = g._fullData[1], l = g._fullLayout;
            const heads = new Set(t.x).size, n = layer * heads + head, box = g.getBoundingClientRect();
            return { x: box.left + l.xaxis._offset + l.xaxis.d2p(t.x[n]),
                     y: box.top + l.yaxis._offset + l.yaxis.d2p(t.y[n]) }; }""",
        [layer, head],
    )
    page.mouse.click(point["x"], point["y"])


def test_a_click_on_a_thumbnail_is_one_history_entry_and_back_and_forward_step_over_it(server, chromium):
    """All heads at its opening head; a click on another head's thumbnail opens it in Compare: one new entry in
    the browser's history. Back shows All heads at the old head (the address and the page), Forward the clicked
    head in Compare."""
    url, _, _ = server
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{url}/?page=all_heads")
    page.wait_for_selector(f"{GRID} .heatmaplayer", timeout=120_000)
    idle(page)
    old = (state.EXAMPLE_LAYER, state.EXAMPLE_HEAD)
    opened = (old[0] + 1, (old[1] + 2) % 12)
    old_link = page.get_by_text(f"Open layer {old[0]}, head {old[1]} in Compare")
    expect(old_link).to_be_visible(timeout=60_000)
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('head') === '{old[1]}'", timeout=30_000)
    entries = page.evaluate("history.length")
    _click_thumbnail(page, *opened)
    wait_for_map_view(page, *opened, timeout_ms=120_000)
    wait_for_header(page, f"Layer {opened[0]}, head {opened[1]}")
    _address_shows(page, opened[1])
    idle(page)
    assert page.evaluate("history.length") == entries + 1
    assert (_address(page)["layer"], _address(page)["head"]) == tuple(map(str, opened))
    page.go_back()  # one press: All heads at the old head
    page.wait_for_function("() => location.pathname.endsWith('/all_heads')", timeout=30_000)
    idle(page)
    assert (_address(page)["layer"], _address(page)["head"]) == tuple(map(str, old))
    expect(old_link).to_be_visible(timeout=60_000)
    assert page.evaluate("history.length") == entries + 1
    page.go_forward()  # and back to the clicked head in Compare
    wait_for_map_view(page, *opened, timeout_ms=120_000)
    wait_for_header(page, f"Layer {opened[0]}, head {opened[1]}")
    idle(page)
    assert (_address(page)["layer"], _address(page)["head"]) == tuple(map(str, opened))
    assert not page.evaluate("location.pathname.endsWith('/all_heads')")
    page.close()
