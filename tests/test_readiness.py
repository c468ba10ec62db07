"""Ready means ready: ``/ready`` answers ok only once the model is loaded, and the replica setup waits for it."""

import asyncio
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from browser import streamlit_server, wait_until

from attention_viz.models.loading import bundled_model_path
from attention_viz.ui.server import warmup
from deploy import replicas


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as refused:
        return refused.code


class _Preload:
    def __init__(self, ready: bool, done: bool) -> None:
        self.ready, self.done = threading.Event(), threading.Event()
        if ready:
            self.ready.set()
        if done:
            self.done.set()


@pytest.mark.parametrize(
    ("preload", "status", "says"),
    [
        (None, 503, b"loading"),  # no preload started (not served by streamlit run)
        (_Preload(ready=False, done=False), 503, b"loading"),
        (_Preload(ready=False, done=True), 503, b"failed"),  # the model failed to load: never ready
        (_Preload(ready=True, done=True), 200, b"ok"),
    ],
)
def test_readiness_answers_ok_only_with_the_model_loaded(monkeypatch, preload, status, says):
    monkeypatch.setattr(warmup, "_preload", preload)
    response = asyncio.run(warmup.readiness(None))
    assert response.status_code == status and says in response.body


def test_a_fresh_server_is_healthy_before_it_is_ready_and_ready_once_the_model_is_loaded():
    """``/_stcore/health`` answers about 1 s after the start, seconds before the model can draw a map;
    ``/ready`` did not exist (404), so a proxy could only check health."""
    weights = str(bundled_model_path() / "model.safetensors")
    with streamlit_server() as running:
        url = running[0]
        assert _status(f"{url}/_stcore/health") == 200
        first = _status(f"{url}/ready")
        maps = f"/proc/{running.process.pid}/maps"
        assert first == 503 or weights in Path(maps).read_text()  # not ready before the weights are read
        wait_until(lambda: _status(f"{url}/ready") == 200, 240, "never ready", every_s=0.25)
        assert weights in Path(maps).read_text()  # ready: the model's weights are loaded
    assert first == 503, "ready at once: the model loaded before the first check (a machine this fast?)"


def test_the_replica_setup_waits_for_readiness_and_nginx_passes_it_on(monkeypatch, tmp_path):
    asked = []

    class Answer:
        status = 200

    def urlopen(url, timeout):
        asked.append(url)
        if len(asked) < 3:
            raise urllib.error.HTTPError(url, 503, "not ready", None, None)
        return Answer()

    class Running:
        def poll(self):
            return None

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(replicas.time, "sleep", lambda s: None)
    replicas._wait_ready("http://127.0.0.1:9", Running(), tmp_path / "log", time.monotonic() + 5)
    assert asked == ["http://127.0.0.1:9/ready"] * 3  # a 503 is waited out, not taken as up
    config = replicas.nginx_config(tmp_path, "127.0.0.1:8600", ["127.0.0.1:8601", "127.0.0.1:8602"])
    block = config.split("location = /ready", 1)[1].split("}", 1)[0]
    assert "proxy_pass http://replicas_health" in block and "http_503" in block


def test_under_a_base_path_the_replicas_are_checked_there_and_nginx_passes_it_on(tmp_path):
    """Replicas started with ``--server.baseUrlPath attviz`` answer health and readiness under ``/attviz/``:
    nginx's own checks must ask there (at the root they get 404)."""
    config = replicas.nginx_config(tmp_path, "127.0.0.1:8600", ["127.0.0.1:8601"], base_path="attviz")
    assert "location = /attviz/ready {" in config and "location = /attviz/_stcore/health {" in config
    assert "{base}" not in config and "location = /ready" not in config
    plain = replicas.nginx_config(tmp_path, "127.0.0.1:8600", ["127.0.0.1:8601"])
    assert "location = /ready {" in plain and "location = /_stcore/health {" in plain
    log = tmp_path / "access.log"
    lines = [
        '127.0.0.1 [t] "GET /attviz/_stcore/stream HTTP/1.1" 101 127.0.0.1:8601 r0',
        '127.0.0.1 [t] "GET /_stcore/stream HTTP/1.1" 101 127.0.0.1:8602 r1',
        '127.0.0.1 [t] "GET /attviz/?text=_stcore/stream HTTP/1.1" 200 127.0.0.1:8601 r0',
        '127.0.0.1 [t] "-" 400 - ',
    ]
    log.write_text("\n".join(lines) + "\n")
    deployment = replicas.Deployment(url="http://127.0.0.1:8600/attviz", access_log=log)
    assert deployment.served_websockets() == {"127.0.0.1:8601": 1, "127.0.0.1:8602": 1}
