"""Helpers for real-browser tests: a ``streamlit run app.py`` server on a free loopback port, Debian's
chromium driven by playwright (never ``playwright install``), and waits for what the page shows.

Every wait here is for a condition (a selector, a finished script run, a chart that stopped moving),
never for a fixed time: a loaded machine makes any fixed time too short, an idle one too long.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


MAP = "[data-testid='attention-map'] .js-plotly-plot"  # Compare's map element's plotly chart
MAP_DRAWN = MAP + " .heatmaplayer"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


class Running(tuple):
    """``(url, log_path, started_at)``, with the server's ``process`` as an attribute (and, on the shared
    server of ``conftest.py``, ``preloaded_s``)."""

    process: subprocess.Popen
    preloaded_s: float | None = None


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str, every_s: float = 0.1) -> float:
    """Poll ``condition`` until it holds; return the seconds it took. Raises AssertionError with ``what``
    after ``timeout_s``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"{what} (waited {timeout_s:.0f} s)")
        time.sleep(every_s)
    return time.monotonic() - started


@contextlib.contextmanager
def streamlit_server(
    *options: str,
    cwd: Path = ROOT,
    env: dict | None = None,
    timeout_s: float = 120,
    app: str = "app.py",
    address: str | None = "127.0.0.1",
) -> Iterator[Running]:
    """Start ``streamlit run <app>`` in ``cwd`` with extra command-line ``options``; yield ``(url, log_path,
    started_at)`` (a :class:`Running`) once its health endpoint answers; stop it afterwards. ``address``: the
    one it listens on (``None``: the configuration's, as a plain ``streamlit run app.py``). With a
    ``--server.baseUrlPath`` among ``options``, ``url`` ends in that path (the app's address under it)."""
    port = free_port()
    base = base_path(options)
    log = Path(tempfile.mkdtemp()) / "streamlit.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", **(env or {}))
    command = [sys.executable, "-m", "streamlit", "run", app, "--server.port", str(port)]
    command += [*(["--server.address", address] if address else []), *options]
    started = time.monotonic()
    with log.open("w") as out:
        server = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}" + (f"/{base}" if base else "")

    def healthy() -> bool:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {server.returncode}:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            return urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200
        return False

    try:
        try:
            wait_until(healthy, timeout_s, "streamlit did not answer on /_stcore/health")
        except AssertionError as exc:
            raise RuntimeError(f"{exc}:\n{log.read_text()[-3000:]}") from None
        running = Running((url, log, started))
        running.process = server
        yield running
    finally:
        server.terminate()
        server.wait(timeout=30)


def base_path(options: tuple[str, ...]) -> str:
    """The ``--server.baseUrlPath`` among command-line ``options`` (either form), without its slashes ("" if none)."""
    for i, option in enumerate(options):
        if option == "--server.baseUrlPath" and i + 1 < len(options):
            return options[i + 1].strip("/")
        if option.startswith("--server.baseUrlPath="):
            return option.split("=", 1)[1].strip("/")
    return ""


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError("Debian's chromium is needed: apt-get install -y chromium")
    return path


def plotly_z_once_close(page, expected, selector: str = MAP) -> list:
    """The values of the plotly heatmap at ``selector`` once they equal ``expected`` (a 2-D array) to 1e-5: the
    map element redraws its plotly layer a while after the last move, after its cells. The last values read if
    they never do within 30 s (the caller's assertion then says how they differ)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    close = """([s, e]) => { const p = document.querySelector(s); const z = p && p.data && p.data[0].z;
        return !!z && z.length === e.length && z.every((row, i) => row.length === e[i].length
            && row.every((v, j) => Math.abs(v - e[i][j]) <= 1e-5)); }"""
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(close, arg=[selector, expected.tolist()], timeout=30_000)
    return page.eval_on_selector(selector, "e => e.data && e.data[0].z")


# --- waits for what the page shows -------------------------------------------------------------------

# What a plotly chart shows: each trace's row labels, number of rows and first row of values (None while there
# is no chart at the selector).
_SHOWN = """selector => {
    const el = document.querySelector(selector);
    if (!el || !el._fullData) return null;
    return JSON.stringify(el._fullData.map(trace => [trace.type, trace.y && Array.from(trace.y),
        trace.z && trace.z.length, trace.z && Array.from(trace.z[0] || [])]));
}"""


def shown(page, selector: str) -> str | None:
    """What the plotly chart at ``selector`` shows, as a string to compare (None when there is none)."""
    return page.evaluate(_SHOWN, selector)


def wait_for_change(page, selector: str, before: str | None, timeout_ms: int = 90_000) -> None:
    """Wait until the chart at ``selector`` shows something other than ``before`` (from :func:`shown`), then
    until the script run that drew it has finished.

    A change on the page is what says that a run happened: Streamlit's script state on its root element can
    go from running to idle in one render when a run is quick, so a run cannot be told from its states.
    """
    page.wait_for_function(
        f"selector => ({_SHOWN})(selector) !== {json.dumps(before)}", arg=selector, timeout=timeout_ms
    )
    page.wait_for_selector(IDLE, timeout=timeout_ms)


# The geometry of a plotly chart and of its tick labels, in window coordinates: equal in consecutive frames
# once plotly has finished drawing (including its automargin redraw) and the page has stopped scrolling.
_SETTLED = """([selector, frames]) => {
    const el = document.querySelector(selector);
    if (!el || !el._fullLayout) return false;
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const full = el._fullLayout;
    const shape = JSON.stringify([full._size, full.width, full.height, box(el),
        Array.from(el.querySelectorAll('.xtick text, .ytick text, .gtitle, .cbfills'), box)]);
    const seen = (window.__settled ||= {});
    if (seen[selector] && seen[selector].shape === shape) return ++seen[selector].frames >= frames;
    seen[selector] = {shape, frames: 0};
    return false;
}"""


def settled(page, selector: str, frames: int = 10, timeout_ms: int = 60_000) -> None:
    """Wait until the plotly chart at ``selector`` has the same geometry for ``frames`` animation frames
    in a row (drawn, margins final, not scrolling)."""
    page.evaluate("() => { window.__settled = {}; }")  # count from this call on
    page.wait_for_function(_SETTLED, arg=[selector, frames], polling="raf", timeout=timeout_ms)


_IDLE_FOR = """frames => {
    const state = document.querySelector("[data-testid='stApp']")?.getAttribute('data-test-script-state');
    const seen = (window.__idleFor ||= {frames: 0});
    seen.frames = state === 'notRunning' ? seen.frames + 1 : 0;
    return seen.frames >= frames;
}"""


def idle(page, frames: int = 10, timeout_ms: int = 120_000) -> None:
    """Wait until the app has been idle (no script run) for ``frames`` animation frames in a row: a run that
    follows another at once (``st.switch_page`` to the page a link asks for) is over too."""
    page.evaluate("() => { window.__idleFor = {frames: 0}; }")  # count from this call on
    page.wait_for_function(_IDLE_FOR, arg=frames, polling="raf", timeout=timeout_ms)


def set_choice(page, label: str, value: int) -> None:
    """Choose ``value`` in the Layer or Head box beside the map, as a person does (typing narrows its list);
    on Compare, the map's own box (a select, in the browser)."""
    from playwright.sync_api import expect

    own = page.locator(f".av-stepper.av-{label.lower()} select")
    if own.count():
        own.select_option(str(value))
        expect(own).to_have_value(str(value), timeout=60_000)
        return
    box = page.locator(f".st-key-_{label.lower()}[data-stale='false'] input[role='combobox']")  # not a stale copy
    box.click()
    box.fill(str(value))
    page.get_by_role("option", name=str(value), exact=True).first.click()
    expect(box).to_have_value(str(value), timeout=60_000)


def wait_for_header(page, text: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name=text)).to_be_visible(timeout=60_000)


_MAP_SHOWS = """([layer, head]) => {
    const map = document.querySelector('[data-testid="attention-map"]');
    return !!map && map.dataset.ready === '1' && +map.dataset.layer === layer && +map.dataset.head === head;
}"""


def wait_for_map_view(page, layer: int, head: int, timeout_ms: int = 60_000) -> None:
    """Until the map element has painted ``layer``, ``head`` from its data, as a person sees it before pressing
    a key: the element answers the arrow keys once its script has loaded, which may be after the page's title
    shows on a busy machine."""
    page.wait_for_function(_MAP_SHOWS, arg=[layer, head], timeout=timeout_ms)
