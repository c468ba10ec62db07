"""Many users at once: one ``streamlit run`` on 127.0.0.1 and N headless Chromium sessions.

Each session (a Playwright browser context) types its own sentence, then, round after round, switches
to another head and waits until the map shows that head of ITS sentence, checked against the core's
own :func:`attention_viz.extraction.extract` (so cross-talk through the caches would be caught). A
thread asks the health endpoint every second throughout. The run passes when no session fails, every
check matches, the health endpoint always answered, and the server's resident memory after round 5
(and after the last round) is within 10% of after round 1.

A class (40 sessions for 5 minutes, each changing head every 5 s and typing a new sentence every 60 s)::

    .venv/bin/python tests/load.py --sessions 40 --seconds 300 --interval 5 --new-sentence-every 60

and the same against 2 replicas behind nginx (deploy/replicas.py; every session must stay on its replica)::

    .venv/bin/python tests/load.py --sessions 40 --seconds 300 --interval 5 --new-sentence-every 60 --replicas 2

Without ``--interval`` rounds follow each other at once (a stress test). The short forms (3 sessions, 10 s;
and 2 replicas) run in the test suite (tests/test_load.py), the first against the suite's shared server. The
CPU seconds of the servers and of the load generator (this process and its Chromium) are measured from /proc
and reported, so a run says what one session costs the server. Figures go to stdout and ``test-artifacts/load.json``.
This browser form checks what a person sees; a class's capacity is measured at the server, without browsers,
by tests/class_load.py.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # browser.py beside this file
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the package, when run as a script

from browser import ARTIFACTS, CHROMIUM_ARGS, MAP_DRAWN, Running, chromium_path, streamlit_server

from deploy.replicas import Deployment, replicas_behind_nginx

# Every selector the load test depends on, in one place (the pages' layout may change around them).
SENTENCE_BOX = "Sentence"  # the text area's label
BOX_LAYER, BOX_HEAD = "Layer", "Head"  # the layer and head boxes beside the map
# The first plotly chart whose first trace is a heatmap with exactly these (query) labels; plotly.js
# keeps each chart's decoded data on its div (_fullData); the bidi isolates around each label and the
# suffixes that keep duplicates apart are invisible characters, stripped here.
HEATMAP_FOR_LABELS = """labels => {
  for (const el of document.querySelectorAll('.js-plotly-plot')) {
    const trace = el._fullData && el._fullData[0];
    if (!trace || trace.type !== 'heatmap' || !trace.y) continue;
    const y = Array.from(trace.y, s => String(s).replace(/[\\u200b\\u200c]+$/, '').replace(/^\\u2068|\\u2069$/g, ''));
    if (y.length === labels.length && y.every((s, i) => s === labels[i]))
      return Array.from(trace.z, row => Array.from(row));
  }
  return null;
}"""
WORDS = ["cat", "dog", "owl", "fox", "bee", "ant", "elk", "yak", "emu", "cow", "pig", "hen", "ram", "eel"]
RSS_TOLERANCE = 0.10
HEALTH_TIMEOUT_S = 20  # an answer later than this counts as a failure
TIMEOUT_S = 180  # the most a page may take to show what it should (2 shared cores, 20 browsers)
ARRIVING_AT_ONCE = 4
MIN_ROUNDS = 5


def sentence_for(session: int, version: int = 0) -> str:
    """A sentence of its own for each session (different words and lengths), and a new one per ``version``."""
    a, b = WORDS[(session + version) % len(WORDS)], WORDS[(3 * session + 5 + 2 * version) % len(WORDS)]
    return f"Session {session}.{version}: the {a} watched the {b}" + " closely" * ((session + version) % 4) + "."


@dataclass
class Report:
    sessions: int
    seconds: float
    interval_s: float = 0.0
    new_sentence_every_s: float = 0.0
    replicas: int = 0
    rounds: int = 0
    new_sentences: int = 0
    checks: int = 0
    failures: list[str] = field(default_factory=list)
    health_ok: int = 0
    health_failed: int = 0
    health_max_s: float = 0.0
    rss_mb: list[float] = field(default_factory=list)
    head_switch_s: list[float] = field(default_factory=list)
    new_sentence_s: list[float] = field(default_factory=list)
    server_cpu_s: float = 0.0
    generator_cpu_s: float = 0.0
    sessions_per_replica: dict[str, int] = field(default_factory=dict)

    @property
    def rss_growth(self) -> float:
        """Largest relative change of RSS after round 5 (and later) against after round 1."""
        if len(self.rss_mb) < MIN_ROUNDS:
            return float("inf")
        first = self.rss_mb[0]
        return max(abs(r - first) / first for r in self.rss_mb[MIN_ROUNDS - 1 :])

    @property
    def passed(self) -> bool:
        return (
            not self.failures
            and self.health_failed == 0
            and self.rounds >= MIN_ROUNDS
            and self.rss_growth <= RSS_TOLERANCE
        )

    def summary(self) -> dict:
        switches = self.head_switch_s
        session_minutes = self.sessions * self.seconds / 60
        return {
            **{k: v for k, v in asdict(self).items() if k not in {"head_switch_s", "new_sentence_s", "rss_mb"}},
            "rss_mb": [round(r, 1) for r in self.rss_mb],
            "rss_growth_after_round_5": round(self.rss_growth, 4),
            "head_switch_median_s": _percentile(switches, 50),
            "head_switch_p95_s": _percentile(switches, 95),
            "head_switch_max_s": _percentile(switches, 100),
            "new_sentence_median_s": _percentile(self.new_sentence_s, 50),
            "server_cpu_s_per_session_minute": round(self.server_cpu_s / max(session_minutes, 1e-9), 2),
            "passed": self.passed,
        }


def _percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _cpu_s(pid: int) -> float:
    """User plus system CPU seconds of ``pid`` and of its children that have ended (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _tree_cpu_s(pid: int) -> float:
    total = 0.0
    for process in _descendants(pid):
        with contextlib.suppress(OSError):
            total += _cpu_s(process)
    return total


def _watch_health(url: str, report: Report, stop: threading.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=HEALTH_TIMEOUT_S) as response:
                ok = response.status == 200
        except OSError:
            ok = False
        report.health_max_s = max(report.health_max_s, time.monotonic() - started)
        if ok:
            report.health_ok += 1
        else:
            report.health_failed += 1
        stop.wait(1.0)


def _box(page, label: str):
    """The layer or head box of Compare's map (its own, drawn in the browser)."""
    return page.locator(f".av-stepper.av-{label.lower()} select")


async def _set_choice(page, label: str, value: int) -> None:
    """Choose ``value`` in the layer or head box, as a person does."""
    await _box(page, label).select_option(str(value))


async def _shown_map(page, labels: list[str], expected: np.ndarray, timeout_s: float = 0) -> None:
    """Wait until the session's page shows ``expected`` for its own labels; raise if it never does."""
    timeout_s = timeout_s or TIMEOUT_S
    deadline = time.monotonic() + timeout_s
    shown = None
    while time.monotonic() < deadline:
        shown = await page.evaluate(HEATMAP_FOR_LABELS, labels)
        if shown is not None and np.shape(shown) == expected.shape and np.allclose(shown, expected, atol=1e-6):
            return
        await asyncio.sleep(0.2)
    what = "no map with this sentence's labels" if shown is None else "a map with other values"
    raise AssertionError(f"{what} after {timeout_s:.0f} s")


def _head(session: int, round_number: int, heads: int) -> int:
    """Heads go up and down one or two at a time, differently per session (0 .. heads - 1)."""
    cycle = list(range(heads)) + list(range(heads - 2, 0, -1))
    return cycle[(session * 3 + round_number * (1 + session % 2)) % len(cycle)]


class Session:
    def __init__(self, number: int, context, bundled):
        self.number, self.context, self.bundled = number, context, bundled
        self.version = 0
        self._expect(sentence_for(number))
        self.page = None
        self.layer = self.head = 0

    def _expect(self, sentence: str) -> None:
        from attention_viz.extraction import extract

        self.sentence = sentence
        result = extract(self.bundled, sentence)  # what the core says this session must see
        self.weights, self.labels = result.weights, list(result.encoding.labels)

    async def type_sentence(self, report: Report) -> None:
        """Type this session's next sentence (Ctrl+Enter) and wait for its map at the same layer and head."""
        self.version += 1
        self._expect(sentence_for(self.number, self.version))
        started = time.monotonic()
        box = self.page.get_by_label(SENTENCE_BOX, exact=True)
        await box.fill(self.sentence)
        await box.press("Control+Enter")
        await _shown_map(self.page, self.labels, self.weights[self.layer, self.head])
        report.new_sentence_s.append(time.monotonic() - started)
        report.new_sentences += 1
        report.checks += 1

    async def start(self, url: str, arrivals: asyncio.Semaphore) -> None:
        async with arrivals:  # users arrive a few at a time, not all in the same instant
            self.context.set_default_timeout(TIMEOUT_S * 1000)
            self.page = await self.context.new_page()
            await self.page.goto(url, wait_until="commit")
            await self.page.wait_for_selector(MAP_DRAWN)
            box = self.page.get_by_label(SENTENCE_BOX, exact=True)
            await box.fill(self.sentence)
            await box.press("Control+Enter")
            self.layer = int(await _box(self.page, BOX_LAYER).input_value())
            self.head = int(await _box(self.page, BOX_HEAD).input_value())
            await _shown_map(self.page, self.labels, self.weights[self.layer, self.head])

    async def switch_head(self, head: int, report: Report) -> None:
        started = time.monotonic()
        await _set_choice(self.page, BOX_HEAD, head)
        self.head = head
        await _shown_map(self.page, self.labels, self.weights[self.layer, head])
        report.head_switch_s.append(time.monotonic() - started)
        report.checks += 1


async def _drive(url: str, pids: list[int], report: Report, bundled) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        sessions = [
            Session(n, await browser.new_context(viewport={"width": 1280, "height": 720}), bundled)
            for n in range(report.sessions)
        ]

        async def guarded(session: Session, step) -> None:
            try:
                await step
            except Exception as exc:  # a failed session is a finding, not a crash of the whole run
                report.failures.append(f"session {session.number}: {type(exc).__name__}: {str(exc)[:200]}")

        arrivals = asyncio.Semaphore(ARRIVING_AT_ONCE)
        await asyncio.gather(*(guarded(s, s.start(url, arrivals)) for s in sessions))
        heads = bundled.info.num_heads
        started = time.monotonic()
        ends = started + report.seconds
        server_cpu = sum(_cpu_s(pid) for pid in pids)
        generator_cpu = _tree_cpu_s(os.getpid())
        sentences_typed = 0
        while not report.failures and (time.monotonic() < ends or report.rounds < MIN_ROUNDS):
            round_started = time.monotonic()
            round_number = report.rounds + 1
            due = int((round_started - started) // report.new_sentence_every_s) if report.new_sentence_every_s else 0
            if due > sentences_typed:  # every session types its next sentence, then goes on changing heads
                sentences_typed = due
                await asyncio.gather(*(guarded(s, s.type_sentence(report)) for s in sessions))
            await asyncio.gather(
                *(guarded(s, s.switch_head(_head(s.number, round_number, heads), report)) for s in sessions)
            )
            report.rounds = round_number
            report.rss_mb.append(sum(_rss_mb(pid) for pid in pids))
            if report.interval_s:  # a person looks at the map before the next change
                await asyncio.sleep(max(0.0, report.interval_s - (time.monotonic() - round_started)))
        report.seconds = round(time.monotonic() - started, 1)
        report.server_cpu_s = round(sum(_cpu_s(pid) for pid in pids) - server_cpu, 1)
        report.generator_cpu_s = round(_tree_cpu_s(os.getpid()) - generator_cpu, 1)
        await browser.close()


@contextlib.contextmanager
def _servers(replicas: int, server: Running | Deployment | None):
    """``(url, pids, deployment)``: the given server or deployment, a new ``streamlit run``, or ``replicas``
    behind nginx."""
    if isinstance(server, Deployment):
        yield server.url, server.replica_pids, server
        return
    if replicas:
        with replicas_behind_nginx(replicas) as deployment:
            yield deployment.url, deployment.replica_pids, deployment
        return
    with contextlib.nullcontext(server) if server is not None else streamlit_server() as running:
        yield running[0], [running.process.pid], None


def run(
    sessions: int = 3,
    seconds: float = 10,
    interval: float = 0,
    new_sentence_every: float = 0,
    replicas: int = 0,
    server: Running | None = None,
    bundled=None,
) -> Report:
    """Run the load test and return its figures (see :class:`Report`).

    Args:
        sessions: browser sessions at once (one Chromium, a context each).
        seconds: how long the rounds go on (at least ``MIN_ROUNDS`` rounds).
        interval: seconds from the start of one round to the next (0: at once).
        new_sentence_every: every this many seconds each session types a new sentence (0: never).
        replicas: 0 for one server; else this many replicas behind nginx (deploy/replicas.py).
        server: a running server (as :func:`browser.streamlit_server` yields) to use when ``replicas`` is 0, or
            replicas already behind nginx (a :class:`deploy.replicas.Deployment`); without one, what
            ``replicas`` says is started for the run.
        bundled: the loaded bundled model (loaded here if not given).
    """
    if bundled is None:
        from attention_viz.models.loading import load_model

        bundled = load_model()
    report = Report(sessions, seconds, interval, new_sentence_every, replicas)
    with _servers(replicas, server) as (url, pids, deployment):
        served_before = deployment.served_websockets() if deployment is not None else {}
        stop = threading.Event()
        watcher = threading.Thread(target=_watch_health, args=(url, report, stop), daemon=True)
        watcher.start()
        try:
            asyncio.run(_drive(url, pids, report, bundled))
        finally:
            stop.set()
            watcher.join(timeout=15)
        if deployment is not None:
            report.sessions_per_replica = deployment.served_websockets(since=served_before)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "load.json").write_text(json.dumps(report.summary(), indent=2))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--interval", type=float, default=0, help="seconds between one session's head changes")
    parser.add_argument("--new-sentence-every", type=float, default=0, help="seconds between new sentences")
    parser.add_argument("--replicas", type=int, default=0, help="run this many replicas behind nginx")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = run(args.sessions, args.seconds, args.interval, args.new_sentence_every, args.replicas)
    print(json.dumps(report.summary(), indent=2))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
