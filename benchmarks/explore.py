"""#21, exploring Compare in the browser: each kind of move felt, and what it sends to the server.

``python -m benchmarks.explore [--page compare] [--moves 15] [--output FILE]`` starts ``streamlit run app.py``,
opens the page (``compare``, ``article``: the article's layer, ``rollout``: Rollout & norms) in headless Chromium
at 1280 × 720 and makes each kind of move ``--moves`` times. On Compare: the → key, the ‹ › buttons, the Head
box, a click on a cell (focus), the map switch (Pretrained / From scratch / Difference), and a pan of a long
input's window (Shift + ↓); on the article's layer: the → key, the › buttons, the Head box and a cell click (the
three maps step together); on Rollout & norms (one map per layer): the ↓ key, the layer's › button and the Layer
box. For each it records:

- **felt**: from the input's event (``keydown``, ``click``: a click is made when the button is released,
  ``change``; window, capture phase: before the page's own listeners) to the first
  animation frame in which the map element has painted the new view (its data attributes changed and it is
  ready), timed inside the page with ``performance.now()``;
- **script runs**: WebSocket messages the page sent (each run of the app's script is asked for by one);
- **bytes**: WebSocket bytes both ways and HTTP responses from the move until the page is still.

Baseline in the same page and run: the platform's own floor, an input that the page does not answer (F12, a key
no listener takes) to the next animation frame; no move can be felt sooner than that frame.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser import CHROMIUM_ARGS, MAP_DRAWN, chromium_path, idle, streamlit_server  # noqa: E402  tests/browser.py

ELEMENT = '[data-testid="attention-map"]'
LONG = " ".join(f"w{i % 37}" for i in range(60))  # more tokens than the window: room to pan

# The next input event starts the clock; it stops in the first animation frame after the element painted a
# view other than the one shown now (or, for the floor, in the first frame at all).
_ARM = """([selector, floor]) => {
    const map = document.querySelector(selector);
    const shown = () => ['layer', 'head', 'focus', 'queryStart', 'mapView'].map(k => map.dataset[k]).join(':');
    const before = shown();
    const felt = window.__felt = {start: null, end: null};
    const start = () => { if (felt.start === null) felt.start = performance.now(); };
    for (const type of ['keydown', 'click', 'change']) {
        window.addEventListener(type, start, {capture: true, once: true});
    }
    const tick = () => {
        if (felt.start !== null && (floor || (map.dataset.ready === '1' && shown() !== before))) {
            felt.end = performance.now(); return;
        }
        requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
}"""


class Traffic:
    def __init__(self, page) -> None:
        self.sent, self.bytes, self.received, self.responses = 0, 0, 0, 0
        page.on("websocket", self._watch)
        page.on("response", self._response)

    def _watch(self, socket) -> None:
        socket.on("framesent", self._sent)
        socket.on("framereceived", self._received)

    def _received(self, frame) -> None:
        self.received += 1
        self._count(len(frame))

    def _sent(self, frame) -> None:
        self.sent += 1
        self._count(len(frame))

    def _count(self, size: int) -> None:
        self.bytes += size

    def _response(self, response) -> None:
        with contextlib.suppress(Exception):  # a response without a body (304, a redirect)
            self.bytes += len(response.body())
            self.responses += 1


def _felt(page, move, floor: bool = False) -> float:
    page.evaluate(_ARM, [ELEMENT, floor])
    move()
    page.wait_for_function("() => window.__felt.end !== null", timeout=30_000)
    return page.evaluate("() => window.__felt.end - window.__felt.start")


def _moves(page, name: str = "compare") -> dict:
    """The moves of the page ``name``, each a function that makes one (alternating so that each changes the
    view)."""
    state = {"kind": 0, "focus": 0, "head": 0, "layer": 0}
    kinds = ["scratch", "difference", "pretrained"]

    def button():
        page.locator(".av-stepper.av-head button").last.click()

    def box():
        state["head"] = (state["head"] + 5) % 12
        page.locator(".av-stepper.av-head select").select_option(str(state["head"]))

    if name == "rollout":

        def layer_box():
            state["layer"] = (state["layer"] + 2) % 6
            page.locator(".av-stepper.av-layer select").select_option(str(state["layer"]))

        return {
            "key ↓": lambda: page.keyboard.press("ArrowDown"),
            "button ›": lambda: page.locator(".av-stepper.av-layer button").last.click(),
            "Layer box": layer_box,
        }

    def cell():
        plot = page.locator(f"{ELEMENT} .av-cells").first.bounding_box()
        state["focus"] = (state["focus"] + 3) % 14 + 1
        page.mouse.click(plot["x"] + plot["width"] / 2, plot["y"] + plot["height"] * (state["focus"] + 0.5) / 16)

    def switch():
        state["kind"] = (state["kind"] + 1) % 3
        page.locator(f".av-kinds button[data-kind={kinds[state['kind']]}]").click()

    if name == "article":
        key = lambda: page.keyboard.press("ArrowRight")  # noqa: E731
        return {"key →": key, "button ›": button, "Head box": box, "cell click": cell}
    return {
        "key →": lambda: page.keyboard.press("ArrowRight"),
        "button ›": button,
        "Head box": box,
        "cell click": cell,
        "map switch": switch,
    }


def _summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1)}


def measure(url: str, moves: int, name: str = "compare") -> dict:
    from playwright.sync_api import sync_playwright

    results = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        traffic = Traffic(page)
        page.goto(url if name == "compare" else f"{url}/?page={name}")
        page.wait_for_selector(MAP_DRAWN, timeout=120_000)
        idle(page)
        page.locator(ELEMENT).first.click(position={"x": 5, "y": 5})
        floor = [_felt(page, lambda: page.keyboard.press("F12"), floor=True) for _ in range(moves)]
        results["floor: an unanswered key to the next frame"] = _summary(floor)
        for move_name, move in _moves(page, name).items():
            sent, moved, received, responses = traffic.sent, traffic.bytes, traffic.received, traffic.responses
            samples = [_felt(page, move) for _ in range(moves)]
            page.wait_for_timeout(500)
            results[move_name] = {
                **_summary(samples),
                "script_runs": traffic.sent - sent,
                "bytes": traffic.bytes - moved,
                "messages_received": traffic.received - received,
                "http_responses": traffic.responses - responses,
            }
        if name != "compare":
            browser.close()
            return results
        page.goto(f"{url}/?text={urllib.parse.quote_plus(LONG)}")
        page.wait_for_selector(MAP_DRAWN, timeout=120_000)
        idle(page)
        page.locator(ELEMENT).click(position={"x": 5, "y": 5})
        sent, moved = traffic.sent, traffic.bytes
        samples = [
            _felt(page, lambda i=i: page.keyboard.press("Shift+ArrowDown" if i % 2 else "Shift+ArrowUp"))
            for i in range(1, 2 * (moves // 2) + 1)
        ]
        page.wait_for_timeout(500)
        results["pan (Shift + ↓/↑), 62 tokens"] = {
            **_summary(samples),
            "script_runs": traffic.sent - sent,
            "bytes": traffic.bytes - moved,
        }
        browser.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=15)
    parser.add_argument("--page", choices=("compare", "article", "rollout"), default="compare")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    load = Path("/proc/loadavg").read_text().split()[:3]
    with streamlit_server() as (url, _, _):
        results = measure(url, args.moves, args.page)
    report = {
        "row": 21,
        "date": time.strftime("%Y-%m-%dT%H:%M"),
        "machine": platform.node(),
        "page": args.page,
        "load": load,
        "moves": results,
    }
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    suffix = "" if args.page == "compare" else f"-{args.page}"
    output = args.output or ROOT / "benchmarks" / "results" / f"{time.strftime('%Y-%m-%dT%H%M')}-explore{suffix}.json"
    output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
