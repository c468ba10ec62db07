"""A class measured at the server: N simulated students that speak Streamlit's own protocol, no browser.

Each student does what the browser does for a person: it asks ``/`` (behind nginx this is where the replica
cookie is set) and ``/_stcore/health`` (the XSRF cookie), opens the WebSocket at ``/_stcore/stream`` with
the page's ``Origin``, the ``streamlit`` subprotocol and the XSRF token, and sends ``BackMsg`` protobufs
(``rerun_script`` with the widget states) and reads the ``ForwardMsg`` replies. It sets a sentence of its
own, then every ``interval`` seconds changes the layer or the head (and now and then types a new sentence),
and times each change from the message sent to the map's data received (the ``plotly_chart`` element keyed
``map``). Every map received is decoded and compared with :func:`attention_viz.extraction.extract` for the
student's own sentence and head: a map with another sentence's tokens is cross-talk, one with its tokens
and other values is wrong. The map element's maps come as the browser gets them: from the run's data when the
bundle travels inside it, else fetched over HTTP once (the server's store then holds its bytes). How a change
is told to the server is a :class:`Step` (the Layer and Head boxes, :class:`BoxStep`; the map element's
reported view, :class:`ElementStep`; and what the browser sends when it draws every step itself,
:class:`BrowserStep`).

``--step browser`` is the class as the browser explores what it holds: a layer or head step sends
NOTHING (counted as a step drawn in the browser, no server cost); a new sentence (1 change in 12) is a
rerun that carries the student's current view (the hidden ``browser_view`` input's value, or where the page
has none the map element's reported view); now and then (1 change in 24) the student switches to All heads
and back to Compare, and the map it comes back to must be its own sentence at its own view. Each kind of
change is timed apart (p50, p95, errors), and so is each student's first map (the opening example, checked
like any map) while they arrive 8 at a time.

With ``--page-files`` each arriving student also fetches what a new browser fetches from the server: the scripts and
styles the page's HTML names, and plotly.js once its first map has come (:data:`_PAGE_FILE`). A class of real
browsers asks for them; without them the server's cost of a student's arrival is its first run alone. A student's
first map is then timed from its first request to the map, the files before the WebSocket included.

Bounded: every student stops after ``seconds`` (each wait has a timeout), only 127.0.0.1 is spoken to. The
server's CPU seconds and resident memory come from /proc; the load average is recorded with the figures.

A class of 200 on one server for 5 minutes, a change every 5 s, a new sentence in one change of 12::

    .venv/bin/python tests/class_load.py --sessions 200 --seconds 300 --step browser

and on 2 replicas behind nginx (deploy/replicas.py): ``--replicas 2``. The short form runs in the test
suite (tests/test_class_load.py). The browser form, for a real-browser check, is tests/load.py.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import contextlib
import json
import os
import random
import re
import struct
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

import numpy as np
from streamlit.proto.WidgetStates_pb2 import WidgetState

sys.path.insert(0, str(Path(__file__).resolve().parent))  # browser.py and load.py beside this file
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the package, when run as a script

from load import _cpu_s, _rss_mb, _servers, sentence_for

from attention_viz.figures.layout import label_text
from attention_viz.ui.attention_map.serving import PLOTLY_PATH
from attention_viz.ui.view.view_schema import DEFAULTS, EXAMPLE_TEXT

MAP_KEY = "map"  # the key of the Compare page's attention map as a plotly chart (its id ends with "-map")
ELEMENT_KEY = "attention_map"  # the key of the map as a browser element (components v2), where the app has it
BOX_LAYER, BOX_HEAD, TEXT = "_layer", "_head", "text"  # widget keys of the Layer and Head boxes and the text
BROWSER_VIEW = "browser_view"  # the hidden text input that carries the browser's view to the server's next run
OTHER_PAGE, HOME_PAGE = "all_heads", "compare"  # a page switch: to All heads and back to Compare (url paths)
PAGE_SWITCH_SHARE = 1 / 24  # in --step browser: the share of changes that switch pages
TIMEOUT_S = 60.0  # the most one change may take before it counts as an error
CONNECT_TIMEOUT_S = 120.0
FILE_FETCHES = 6  # files a student fetches at once (Chromium's connections to one host over HTTP/1.1)
# What a new browser fetches besides the page and its messages (``--page-files``): every script and style the page's
# HTML names (Streamlit's entry script and the modules it preloads, the app's element modules and their imports),
# and plotly.js once the map has painted. Not Streamlit's lazy chunks of each kind of widget, fonts and icons
# (about 50 smaller files a real browser asks for as the first run arrives).
_PAGE_FILE = re.compile(r"""(?:src|href)=["']\./([^"'?#]+\.(?:js|css))["']""")
ARRIVING_AT_ONCE = 8  # students opening the page at the same moment
RSS_TOLERANCE = 0.10


@dataclass
class Page:
    """What a student knows of its page, from the elements the server sent: widget ids and box options."""

    ids: dict[str, str] = field(default_factory=dict)  # widget key -> element id
    options: dict[str, list[str]] = field(default_factory=dict)  # box key -> its options' shown labels
    reports: int = 0  # views the map element has reported (its ``seq``)
    pages: dict[str, str] = field(default_factory=dict)  # a page's url path -> its script hash (navigation)
    shown: set[str] = field(default_factory=set)  # the widget ids of the run in progress or last run
    shape: tuple[int, int] = (0, 0)  # layers, heads: from the map element's data (Compare draws its own boxes)

    def learn(self, element) -> None:
        kind = element.WhichOneof("type")
        widget = getattr(element, kind)
        element_id = getattr(widget, "id", "")
        if not element_id.startswith("$$ID-"):
            return
        key = element_id.split("-", 2)[2].split("~")[0]
        self.ids[key] = element_id
        self.shown.add(element_id)
        if kind == "selectbox":
            self.options[key] = list(widget.options)

    def learn_pages(self, navigation) -> None:
        """The pages' script hashes, by url path (the default page also under :data:`HOME_PAGE`'s)."""
        for page in navigation.app_pages:
            self.pages[page.url_pathname] = page.page_script_hash
            if page.is_default:
                self.pages.setdefault(HOME_PAGE, page.page_script_hash)


class Step(Protocol):
    """How a change of layer or head is told to the server: the widget states the browser would send."""

    name: str
    local: bool  # a step within held data is drawn in the browser and sends nothing

    def states(self, page: Page, layer: int, head: int) -> list: ...


class BoxStep:
    """The Layer and Head boxes Compare had beside its map (Streamlit select boxes, the value the option's
    label), for the runs measured before the map drew its own boxes; Compare has none now."""

    name = "boxes"
    local = False

    def states(self, page: Page, layer: int, head: int) -> list:
        return [
            _string_state(page.ids[BOX_LAYER], page.options[BOX_LAYER][layer]),
            _string_state(page.ids[BOX_HEAD], page.options[BOX_HEAD][head]),
        ]


class ElementStep:
    """The map as a browser element (Streamlit components v2, key :data:`ELEMENT_KEY`): a step in the
    browser reports the whole view as the element's state, ``{"view": {layer, head, focus, query_start,
    key_start, seq}}`` (``seq`` counts the element's reports), which the browser sends as the element's
    ``json_value``; the page then follows (the boxes, the link) in a rerun."""

    name = "element"
    local = False

    def states(self, page: Page, layer: int, head: int) -> list:
        page.reports += 1
        view = {"layer": layer, "head": head, "focus": -1, "query_start": 0, "key_start": 0, "seq": page.reports}
        state = WidgetState(id=page.ids[ELEMENT_KEY])
        state.json_value = json.dumps({"view": view})
        return [state]


class BrowserStep:
    """The browser draws a step within the data it holds and tells the server nothing (:attr:`local`); the view
    reaches the server with the next run something else causes, as the hidden text input ``browser_view``'s
    value (its ``string_value``), ``{"seq": n, "view": {layer, head, focus, query_start, key_start, map_view}}``.
    On a page without that input the view goes as the map element's reported view (:class:`ElementStep`)."""

    name = "browser"
    local = True

    def states(self, page: Page, layer: int, head: int) -> list:
        if BROWSER_VIEW not in page.ids:
            return ElementStep.states(self, page, layer, head)
        page.reports += 1
        view = {"layer": layer, "head": head, "focus": -1, "query_start": 0, "key_start": 0}
        view["map_view"] = DEFAULTS["map_view"]
        return [_string_state(page.ids[BROWSER_VIEW], json.dumps({"seq": page.reports, "view": view}))]


STEPS: dict[str, type] = {"boxes": BoxStep, "element": ElementStep, "browser": BrowserStep}


def _string_state(widget_id: str, value: str):
    state = WidgetState(id=widget_id)
    state.string_value = value
    return state


def _array(value) -> np.ndarray:
    """A plotly array as the figure JSON holds it: a list, or ``{"dtype", "bdata", "shape"}`` (plotly 6)."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", len(flat))).split(",")]
        return flat.reshape(shape).astype(np.float64)
    return np.asarray(value, dtype=np.float64)


def decode_bundle(payload: bytes) -> tuple[dict, np.ndarray]:
    """The header and ``(held layers, heads, query, key)`` maps of a map element's bundle: ``"AVM1"``, the
    header's length (uint32 LE), the header (UTF-8 JSON), zero padding to a multiple of 4, float32 LE."""
    if payload[:4] != b"AVM1":
        raise ValueError("not an attention-map bundle")
    (length,) = struct.unpack("<I", payload[4:8])
    header = json.loads(payload[8 : 8 + length].decode("utf-8"))
    base = 8 + length + (-(8 + length) % 4) + header["maps"]["offset"]  # offsets count from the first array
    shape = header["maps"]["shape"]
    count = int(np.prod(shape))
    return header, np.frombuffer(payload, dtype="<f4", count=count, offset=base).reshape(shape).astype(np.float64)


def decode_map(spec: str) -> tuple[list[str], np.ndarray] | None:
    """``(query labels, weights (query, key))`` of the map's heatmap trace, or None if it has none."""
    figure = json.loads(spec)
    for trace in figure.get("data", []):
        if trace.get("type") == "heatmap" and "z" in trace and "y" in trace:
            return [label_text(str(y)) for y in trace["y"]], _array(trace["z"])
    return None


@dataclass
class Report:
    sessions: int
    seconds: float
    interval_s: float
    new_sentence_share: float
    replicas: int = 0
    step: str = "boxes"
    page_switch_share: float = 0.0
    page_files: bool = False  # each student also fetches the files a browser fetches (:meth:`Student.fetch_files`)
    page_file_bytes: int = 0  # the bytes of those files received, compressed as sent
    connected: int = 0
    changes: int = 0
    new_sentences: int = 0  # typed during the class (an arrival's sentence counts under ``arrivals``)
    arrivals: int = 0  # students that opened the page and set their own sentence
    page_switches: int = 0  # each leg counts: to All heads, back to Compare
    browser_steps: int = 0  # steps drawn in the browser from the data it holds: nothing sent
    reruns: int = 0  # runs the students asked the server for (a first visit, a change, each page switch)
    checks: int = 0
    first_map_checks: int = 0
    errors: list[str] = field(default_factory=list)
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    cross_talk: int = 0
    wrong_values: int = 0
    change_s: list[float] = field(default_factory=list)
    new_sentence_s: list[float] = field(default_factory=list)
    arrival_sentence_s: list[float] = field(default_factory=list)  # the sentence set on arriving, 8 at a time
    page_switch_s: list[float] = field(default_factory=list)
    first_map_s: list[float] = field(default_factory=list)  # from asking "/" to the first map, per student
    rss_mb: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, MB of all servers)
    server_cpu_s: float = 0.0
    generator_cpu_s: float = 0.0
    load_average: list[float] = field(default_factory=list)  # at the start, and at the end (1-minute)
    sessions_per_replica: dict[str, int] = field(default_factory=dict)

    @property
    def rss_growth(self) -> float | None:
        """RSS at the end against RSS once every student had its first map (relative)."""
        if len(self.rss_mb) < 2:
            return None
        return (self.rss_mb[-1][1] - self.rss_mb[0][1]) / self.rss_mb[0][1]

    @property
    def passed(self) -> bool:
        return (
            not self.errors
            and self.cross_talk == 0
            and self.wrong_values == 0
            and self.connected == self.sessions
            and self.checks > 0
        )

    def error(self, kind: str, message: str) -> None:
        """Record a failed change of ``kind`` (``arrival``, ``change``, ``new_sentence``, ``page_switch``)."""
        self.errors.append(message)
        self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1

    def summary(self) -> dict:
        session_minutes = self.sessions * self.seconds / 60
        everything = self.change_s + self.new_sentence_s + self.page_switch_s  # what the server answered
        timings = {"change_s", "new_sentence_s", "arrival_sentence_s", "page_switch_s", "first_map_s", "rss_mb"}
        timings.add("errors")
        return {
            **{k: v for k, v in asdict(self).items() if k not in timings},
            "errors": len(self.errors),
            "first_errors": self.errors[:10],
            "change_p50_s": _percentile(self.change_s, 50),
            "change_p95_s": _percentile(self.change_s, 95),
            "change_max_s": _percentile(self.change_s, 100),
            "new_sentence_p50_s": _percentile(self.new_sentence_s, 50),
            "new_sentence_p95_s": _percentile(self.new_sentence_s, 95),
            "arrival_sentence_p50_s": _percentile(self.arrival_sentence_s, 50),
            "arrival_sentence_p95_s": _percentile(self.arrival_sentence_s, 95),
            "page_switch_p50_s": _percentile(self.page_switch_s, 50),
            "page_switch_p95_s": _percentile(self.page_switch_s, 95),
            "first_map_p50_s": _percentile(self.first_map_s, 50),
            "first_map_p95_s": _percentile(self.first_map_s, 95),
            "first_map_max_s": _percentile(self.first_map_s, 100),
            "all_p95_s": _percentile(everything, 95),
            "rss_mb": [(round(t), round(mb, 1)) for t, mb in self.rss_mb],
            "rss_growth": None if self.rss_growth is None else round(self.rss_growth, 4),
            "server_cpu_s_per_session_minute": round(self.server_cpu_s / max(session_minutes, 1e-9), 3),
            "passed": self.passed,
        }


def _percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


def _cookie_header(cookies: dict[str, str]) -> str:
    """A ``Cookie`` header's value: ``name=value`` pairs joined by ``; ``."""
    return "; ".join(f"{k}={v}" for k, v in cookies.items())


class Student:
    """One simulated browser session: its WebSocket, its page's widgets, its sentence and head."""

    def __init__(self, number: int, url: str, step: Step, bundled, expected: dict, page_files: bool = False):
        self.number, self.url, self.step, self.bundled = number, url, step, bundled
        self.page, self.version, self.layer, self.head = Page(), 0, 0, 0
        self._expected = expected  # sentence -> (labels, weights), shared by all students (the core's result)
        self.sentence = sentence_for(number)
        self.socket = None
        self.maps: asyncio.Queue = asyncio.Queue()
        self.finished: asyncio.Queue = asyncio.Queue()
        self.states: dict = {}  # widget id -> WidgetState: the values this student has set
        self.cookies: dict[str, str] = {}
        self.bundles: dict[str, bytes] = {}  # the map element's bundle, by its path
        self.page_files = page_files  # fetch the files a browser fetches on arriving (:meth:`fetch_files`)
        self.file_bytes = 0

    @property
    def layers(self) -> int:
        """The model's layers: the Layer box's options, or (Compare's map has its own boxes) the map's data."""
        return len(self.page.options[BOX_LAYER]) if BOX_LAYER in self.page.options else self.page.shape[0]

    @property
    def heads(self) -> int:
        return len(self.page.options[BOX_HEAD]) if BOX_HEAD in self.page.options else self.page.shape[1]

    async def expected(self, sentence: str) -> tuple[list[str], np.ndarray]:
        """The core's labels and ``(layers, heads, query, key)`` weights for ``sentence``, computed in a thread
        (torch leaves the GIL) while the server answers, so the other students' timings go on."""
        if sentence not in self._expected:
            loop = asyncio.get_running_loop()
            self._expected[sentence] = loop.run_in_executor(None, _core_answer, self.bundled, sentence)
        return await self._expected[sentence]

    async def connect(self, report: Report | None = None) -> None:
        """Open the page as a browser does: ``/``, the health check, then the WebSocket and a first run; with
        ``report``, time the first map from the first request and check it (the opening example, at the view
        its data names)."""
        started = time.monotonic()
        cookies = self.cookies = await asyncio.to_thread(self._cookies)
        parsed = urlparse(self.url)
        from websockets.asyncio.client import connect

        self.socket = await connect(
            f"ws://{parsed.netloc}/_stcore/stream",
            origin=self.url,
            subprotocols=["streamlit", cookies.get("_streamlit_xsrf", "")],
            additional_headers={"Cookie": _cookie_header(cookies)},
            max_size=None,
            open_timeout=CONNECT_TIMEOUT_S,
        )
        self.reader = asyncio.create_task(self._read())
        await self._rerun([], report=report)
        await asyncio.wait_for(self.finished.get(), CONNECT_TIMEOUT_S)
        if report is not None:
            await self._first_map(report, started)
        if self.page_files:  # the browser fetches plotly.js once the map has painted (plotly_loader.js)
            await asyncio.to_thread(self.fetch_files, [PLOTLY_PATH], self.cookies)
        if report is not None:
            report.page_file_bytes += self.file_bytes

    async def _first_map(self, report: Report, started: float) -> None:
        """Check the first run's map (the opening example at the view its data names); record its time."""
        labels, weights = await self.expected(EXAMPLE_TEXT)
        while not self.maps.empty():
            received, sent = self.maps.get_nowait()
            if sent is None:
                raise RuntimeError("the first page showed an exception")
            if sent[0] == "chart":
                shown, view = decode_map(sent[1]), None
            else:
                view = json.loads(sent[1]).get("view", {})
                shown = await self._element_map(sent[1], view.get("layer"), view.get("head"))
            if shown is None:
                continue
            if shown[0] != labels:
                raise RuntimeError(f"the first map is not the opening example: {shown[0][:9]}")
            if view is not None and not np.allclose(shown[1], weights[view["layer"], view["head"]], atol=1e-6):
                report.wrong_values += 1
                raise RuntimeError("the opening example's first map shows other values")
            report.first_map_checks += 1
            report.first_map_s.append(received - started)
            return
        raise RuntimeError("the first run drew no map")

    def _cookies(self) -> dict[str, str]:
        """The cookies a browser holds after loading the page: nginx's replica, Streamlit's XSRF token. With
        ``page_files``, the page's own scripts and styles are fetched between the two, as a browser does."""
        jar: dict[str, str] = {}
        for path in ("/", "/_stcore/health"):
            request = urllib.request.Request(self.url + path)
            if jar:
                request.add_header("Cookie", _cookie_header(jar))
            with urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S) as response:
                page = response.read()
                for header in response.headers.get_all("Set-Cookie") or []:
                    name, _, rest = header.partition("=")
                    jar[name.strip()] = rest.split(";", 1)[0]
            if path == "/" and self.page_files:
                self.fetch_files(_PAGE_FILE.findall(page.decode("utf-8", "replace")), jar)
        return jar

    def fetch_files(self, paths: list[str], cookies: dict[str, str]) -> None:
        """Fetch ``paths`` (relative to the page) as a browser with an empty cache does: :data:`FILE_FETCHES` at a
        time (a browser's connections to one host), ``Accept-Encoding: gzip``, the ``cookies`` it holds, each
        body read whole; their bytes as sent are counted in ``file_bytes``."""
        cookie = _cookie_header(cookies)

        def fetch(path: str) -> int:
            request = urllib.request.Request(f"{self.url}/{path}", headers={"Accept-Encoding": "gzip, deflate, br"})
            if cookie:
                request.add_header("Cookie", cookie)
            with urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S) as response:
                return len(response.read())

        with concurrent.futures.ThreadPoolExecutor(FILE_FETCHES) as pool:
            self.file_bytes += sum(pool.map(fetch, paths))

    async def _rerun(self, states: list, page: str = "", report: Report | None = None) -> None:
        """Ask for a run with ``states``, on the page ``page`` (a url path; ``""``: the page the session is on)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        message = BackMsg()
        message.rerun_script.query_string = ""
        message.rerun_script.page_script_hash = self.page.pages[page] if page else ""
        self.page.shown = set()
        if report is not None:
            report.reruns += 1
        message.rerun_script.widget_states.widgets.extend(states)
        await self.socket.send(message.SerializeToString())

    async def _read(self) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        with contextlib.suppress(Exception):  # a closed socket ends the reader; the waits time out
            async for data in self.socket:
                message = ForwardMsg()
                message.ParseFromString(data)
                kind = message.WhichOneof("type")
                if kind == "script_finished":
                    self.finished.put_nowait(time.monotonic())
                elif kind == "navigation":
                    self.page.learn_pages(message.navigation)
                elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                    element = message.delta.new_element
                    self.page.learn(element)
                    what = element.WhichOneof("type")
                    if what == "plotly_chart" and element.plotly_chart.id.endswith(f"-{MAP_KEY}"):
                        self.maps.put_nowait((time.monotonic(), ("chart", element.plotly_chart.spec)))
                    elif what == "bidi_component" and element.bidi_component.id.endswith(f"-{ELEMENT_KEY}"):
                        component = element.bidi_component
                        data = component.json or component.mixed.json
                        self.page.shape = tuple(json.loads(data).get("shape", self.page.shape))
                        self.maps.put_nowait((time.monotonic(), ("element", data)))
                    elif what == "exception":
                        self.maps.put_nowait((time.monotonic(), None))

    async def change(
        self, report: Report, layer: int, head: int, sentence: str | None = None, arriving: bool = False
    ) -> None:
        """Send one change, wait for the map of this student's sentence at ``(layer, head)``, time it (a sentence
        set while ``arriving`` apart from the class's)."""
        changed = self.step.states(self.page, layer, head)
        if sentence is not None:
            changed.append(_string_state(self.page.ids[TEXT], sentence))
        states = dict(self._shown_states(), **{state.id: state for state in changed})  # every value it has
        answer = asyncio.ensure_future(self.expected(sentence or self.sentence))
        while not self.maps.empty():
            self.maps.get_nowait()
        while not self.finished.empty():
            self.finished.get_nowait()
        started = time.monotonic()
        await self._rerun(list(states.values()), report=report)
        elapsed = await self._map_shown(report, started, answer, layer, head) - started
        if arriving:
            self.sentence = sentence
            report.arrival_sentence_s.append(elapsed)
            report.arrivals += 1
        elif sentence is not None:
            self.sentence = sentence
            report.new_sentence_s.append(elapsed)
            report.new_sentences += 1
        else:
            report.change_s.append(elapsed)
            report.changes += 1
        self.layer, self.head = layer, head
        self.states = {k: v for k, v in states.items() if not v.HasField("trigger_value")}  # a trigger fires once
        await asyncio.wait_for(self.finished.get(), max(0.1, started + TIMEOUT_S - time.monotonic()))  # the end

    def _shown_states(self) -> dict:
        """The values this student has set of the widgets its last run showed (the browser forgets the others)."""
        return {key: state for key, state in self.states.items() if key in self.page.shown}

    async def switch(self, report: Report) -> None:
        """Switch to All heads (timed to the end of its run), then back to Compare (timed to the map of this
        student's sentence at its view, checked), each leg a rerun with the browser's values and its view."""
        for page in (OTHER_PAGE, HOME_PAGE):
            states = dict(self._shown_states(), **{s.id: s for s in self.step.states(self.page, self.layer, self.head)})
            answer = asyncio.ensure_future(self.expected(self.sentence))
            while not self.maps.empty():
                self.maps.get_nowait()
            while not self.finished.empty():
                self.finished.get_nowait()
            started = time.monotonic()
            await self._rerun(list(states.values()), page, report)
            if page == HOME_PAGE:
                received = await self._map_shown(report, started, answer, self.layer, self.head)
            else:
                received = await asyncio.wait_for(self.finished.get(), TIMEOUT_S)
                while not self.maps.empty():
                    if self.maps.get_nowait()[1] is None:
                        raise RuntimeError("All heads showed an exception")
                answer.cancel()
            report.page_switch_s.append(received - started)
            report.page_switches += 1
            self.states = {k: v for k, v in states.items() if not v.HasField("trigger_value")}
            if page == HOME_PAGE:
                await asyncio.wait_for(self.finished.get(), max(0.1, started + TIMEOUT_S - time.monotonic()))

    async def _map_shown(self, report: Report, started: float, answer, layer: int, head: int) -> float:
        """Wait for the map of this student's sentence at ``(layer, head)`` and check it (``answer``: the core's
        labels and weights); when it arrived (``time.monotonic()``)."""
        deadline = started + TIMEOUT_S
        labels, weights = await answer
        while True:
            received, sent = await asyncio.wait_for(self.maps.get(), max(0.1, deadline - time.monotonic()))
            if sent is None:
                raise RuntimeError("the page showed an exception")
            shown = decode_map(sent[1]) if sent[0] == "chart" else await self._element_map(sent[1], layer, head)
            if shown is None:
                continue  # an empty map while the page loads, or the element's view before the step
            received = max(received, time.monotonic()) if sent[0] == "element" else received
            report.checks += 1
            shown_labels, shown_weights = shown
            if shown_labels != labels:
                other = "Session" in shown_labels and shown_labels[shown_labels.index("Session") + 1] != str(
                    self.number
                )
                report.cross_talk += other  # another student's sentence ("Session N.v: ...")
                raise RuntimeError(f"a map of {'another student' if other else 'a wrong'} sentence: {shown_labels[:9]}")
            expected = weights[layer, head]
            if shown_weights.shape != expected.shape or not np.allclose(shown_weights, expected, atol=1e-6):
                report.wrong_values += 1
                raise RuntimeError(f"the map of layer {layer}, head {head} shows other values")
            return received

    async def _element_map(self, data: str, layer: int, head: int) -> tuple[list[str], np.ndarray] | None:
        """The map element's head ``(layer, head)`` once its data shows that view: from its bundle, as the
        browser gets it (``attention_map.js``): the bytes inside the data of the run that made it (``inline``,
        base64) when they are there, else fetched over HTTP once per bundle; None while the view is another."""
        data = json.loads(data)
        path = data["bundle"]
        if data.get("inline") and path not in self.bundles:  # the browser fetches no bundle its data carried
            self.bundles = {path: base64.b64decode(data["inline"])}
        view = data.get("view", {})
        if (view.get("layer"), view.get("head")) != (layer, head):
            return None
        if path not in self.bundles:
            self.bundles = {path: await asyncio.to_thread(self._get, "/" + path.lstrip("/"))}  # the newest only
        header, maps = decode_bundle(self.bundles[path])
        if layer not in header["layers"] or header.get("only_head") not in (None, head):
            raise RuntimeError(f"the bundle for layer {layer}, head {head} does not hold it")
        held = maps[header["layers"].index(layer), 0 if header.get("only_head") is not None else head]
        return [label_text(label) for label in header["y"]], held

    def _get(self, path: str) -> bytes:
        request = urllib.request.Request(self.url + path)
        request.add_header("Cookie", _cookie_header(self.cookies))
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.read()

    async def close(self) -> None:
        if self.socket is not None:
            with contextlib.suppress(Exception):
                await self.socket.close()
        with contextlib.suppress(Exception):
            self.reader.cancel()


def _core_answer(bundled, sentence: str) -> tuple[list[str], np.ndarray]:
    from attention_viz.extraction import extract

    result = extract(bundled, sentence)
    return list(result.encoding.labels), result.weights


def _next_change(rng: random.Random, layers: int, heads: int, layer: int, head: int) -> tuple[int, int]:
    """Another layer (one time in three) or another head, one or two steps away, within range."""
    if rng.random() < 1 / 3 and layers > 1:
        return (layer + rng.choice([-1, 1])) % layers, head
    return layer, (head + rng.choice([-2, -1, 1, 2])) % heads


async def _arrive(student: Student, report: Report, arrivals: asyncio.Semaphore, rng: random.Random) -> bool:
    """Open the page and set the student's sentence at a layer and head of its own; False if it failed."""
    try:
        async with arrivals:
            await student.connect(report)
            report.connected += 1
            layer, head = rng.randrange(student.layers), rng.randrange(student.heads)
            if student.step.local:  # stepped there in the browser, then typed its sentence
                report.browser_steps += 1
            await student.change(report, layer, head, sentence=student.sentence, arriving=True)
        return True
    except Exception as exc:  # a failed student is a finding, not a crash of the whole run
        report.error("arrival", f"session {student.number} arriving: {type(exc).__name__}: {str(exc)[:200]}")
        await student.close()
        return False


async def _attend(student: Student, report: Report, ends: float, rng: random.Random) -> None:
    """Every ``interval`` seconds a change until the class ends: now and then a new sentence or a page switch,
    else a step of layer or head (sent to the server, or drawn in the browser for a :attr:`Step.local` step)."""
    kind = "change"
    try:
        await asyncio.sleep(rng.uniform(0, report.interval_s))  # students do not click in step
        while time.monotonic() + report.interval_s < ends:
            tick, roll = time.monotonic(), rng.random()
            if roll < report.new_sentence_share:
                kind, student.version = "new_sentence", student.version + 1
                await student.change(report, student.layer, student.head, sentence_for(student.number, student.version))
            elif roll < report.new_sentence_share + report.page_switch_share:
                kind = "page_switch"
                await student.switch(report)
            else:
                kind = "change"
                step = _next_change(rng, student.layers, student.heads, student.layer, student.head)
                if student.step.local:  # drawn in the browser from the data it holds: nothing reaches the server
                    student.layer, student.head = step
                    report.browser_steps += 1
                else:
                    await student.change(report, *step)
            await asyncio.sleep(max(0.0, report.interval_s - (time.monotonic() - tick)))
    except Exception as exc:
        report.error(kind, f"session {student.number} ({kind}): {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        await student.close()


async def _watch_memory(pids: list[int], report: Report, started: float, stop: asyncio.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(OSError, RuntimeError):
            report.rss_mb.append((time.monotonic() - started, sum(_rss_mb(pid) for pid in pids)))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), 10)


async def _drive(url: str, pids: list[int], report: Report, bundled, step: Step, seed: int) -> None:
    expected: dict = {}
    students = [Student(n, url, step, bundled, expected, report.page_files) for n in range(report.sessions)]
    arrivals = asyncio.Semaphore(ARRIVING_AT_ONCE)
    rngs = [random.Random(seed * 100_003 + n) for n in range(report.sessions)]
    arrived = await asyncio.gather(*(_arrive(s, report, arrivals, r) for s, r in zip(students, rngs, strict=True)))
    server_cpu, generator_cpu = sum(_cpu_s(pid) for pid in pids), _cpu_s(os.getpid())
    started = time.monotonic()  # the class starts once every student has its first map
    ends = started + report.seconds
    stop = asyncio.Event()
    memory = asyncio.create_task(_watch_memory(pids, report, started, stop))
    present = [(s, r) for s, r, ok in zip(students, rngs, arrived, strict=True) if ok]
    await asyncio.gather(*(_attend(s, report, ends, r) for s, r in present))
    stop.set()
    await memory
    with contextlib.suppress(OSError, RuntimeError):
        report.rss_mb.append((time.monotonic() - started, sum(_rss_mb(pid) for pid in pids)))
    report.seconds = round(time.monotonic() - started, 1)
    report.server_cpu_s = round(sum(_cpu_s(pid) for pid in pids) - server_cpu, 1)
    report.generator_cpu_s = round(_cpu_s(os.getpid()) - generator_cpu, 1)


def run(
    sessions: int = 3,
    seconds: float = 20,
    interval: float = 5,
    new_sentence_share: float = 1 / 12,
    replicas: int = 0,
    server=None,
    bundled=None,
    step: str = "element",
    seed: int = 0,
    page_switch_share: float | None = None,
    page_files: bool = False,
) -> Report:
    """Run a class against one server (``server``, or a new ``streamlit run``) or ``replicas`` behind nginx.

    Args:
        sessions: students at once.
        seconds: how long the class goes on; each student stops before its next change would end past it.
        interval: seconds from one change of a student to its next.
        new_sentence_share: the share of changes that type a new sentence instead of a layer or head.
        replicas: 0 for one server; else this many behind nginx (deploy/replicas.py).
        server: a running server (as :func:`browser.streamlit_server` yields), used when ``replicas`` is 0, or
            replicas already behind nginx (a :class:`deploy.replicas.Deployment`).
        bundled: the loaded bundled model, for the expected maps (loaded here if not given).
        step: how a change is sent (a key of :data:`STEPS`).
        seed: the students' choices of layer, head and pace.
        page_switch_share: the share of changes that switch to All heads and back; ``None``:
            :data:`PAGE_SWITCH_SHARE` with ``step="browser"``, else none (the older modes as they were).
        page_files: each arriving student also fetches the files a browser fetches (the page's scripts and
            styles, then plotly.js; :data:`_PAGE_FILE`), as a class of real browsers asks the server for them.

    Returns:
        :class:`Report`, with the load average before and after.
    """
    if bundled is None:
        from attention_viz.models.loading import load_model

        bundled = load_model()
    if page_switch_share is None:
        page_switch_share = PAGE_SWITCH_SHARE if step == "browser" else 0.0
    report = Report(sessions, seconds, interval, new_sentence_share, replicas, step, page_switch_share, page_files)
    report.load_average = [round(os.getloadavg()[0], 2)]
    with _servers(replicas, server) as (url, pids, deployment), _one_thread():
        if urlparse(url).hostname != "127.0.0.1":
            raise ValueError(f"the class talks to 127.0.0.1 only, not {url}")
        _wait_ready(url)  # the students arrive at a warm server (the model loaded, the opening example computed)
        served_before = deployment.served_websockets() if deployment is not None else {}
        asyncio.run(_drive(url, pids, report, bundled, STEPS[step](), seed))
        if deployment is not None:
            report.sessions_per_replica = deployment.served_websockets(since=served_before)
    report.load_average.append(round(os.getloadavg()[0], 2))
    return report


def _wait_ready(url: str) -> None:
    """Wait until the app's readiness check (``/ready``) answers 200; raise ``TimeoutError`` past
    :data:`CONNECT_TIMEOUT_S`."""
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/ready", timeout=5) as response:
            if response.status == 200:
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url}/ready did not answer 200 in {CONNECT_TIMEOUT_S:.0f} s")
        time.sleep(0.5)


@contextlib.contextmanager
def _one_thread():
    """One torch thread per forward while the class runs: the generator's own forwards (the expected maps)
    leave the cores to the server."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--interval", type=float, default=5, help="seconds between one student's changes")
    parser.add_argument("--new-sentence-share", type=float, default=1 / 12, help="share of changes that type")
    parser.add_argument("--replicas", type=int, default=0, help="run this many replicas behind nginx")
    parser.add_argument("--step", choices=sorted(STEPS), default="element", help="how a change is sent")
    parser.add_argument(
        "--page-switch-share", type=float, help=f"share of changes that switch pages (browser: {PAGE_SWITCH_SHARE:.3f})"
    )
    parser.add_argument(
        "--page-files", action="store_true", help="each arriving student fetches the page's scripts and plotly.js"
    )
    parser.add_argument("--output", type=Path, help="also write the summary here (JSON)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = run(
        args.sessions,
        args.seconds,
        args.interval,
        args.new_sentence_share,
        args.replicas,
        step=args.step,
        page_switch_share=args.page_switch_share,
        page_files=args.page_files,
    )
    summary = json.dumps(report.summary(), indent=2)
    print(summary)
    if args.output:
        args.output.write_text(summary + "\n")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
