"""Helpers for real-browser tests: a ``streamlit run app.py`` server on a free loopback port, and
Debian's chromium driven by playwright (never ``playwright install``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
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


MAP = ".st-key-map .js-plotly-plot"  # Compare's map (a cold start sends an empty warm-up chart before it)
MAP_DRAWN = MAP + " .heatmaplayer"


class Running(tuple):
    """``(url, log_path, started_at)``, with the server's ``process`` as an attribute."""

    process: subprocess.Popen


@contextlib.contextmanager
def streamlit_server():
    """Start the app; yield ``(url, log_path, started_at)`` (a :class:`Running`); stop it afterwards."""
    port = free_port()
    log = Path(tempfile.mkdtemp()) / "streamlit.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
    ]
    started = time.monotonic()
    with log.open("w") as out:
        server = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not start:\n{log.read_text()}")
            time.sleep(0.25)
        running = Running((url, log, started))
        running.process = server
        yield running
    finally:
        server.terminate()
        server.wait(timeout=20)


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError("Debian's chromium is needed: apt-get install -y chromium")
    return path
