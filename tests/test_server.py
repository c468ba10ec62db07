"""Server settings against a real ``streamlit run`` on 127.0.0.1 (the shared ``server`` of conftest.py): the
model preloaded at start, XSRF on, foreign WebSocket origins refused; and the start-up log of a plain
``streamlit run app.py``."""

import base64
import os
import socket
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest
from browser import streamlit_server, wait_until

from attention_viz.models.loading import bundled_model_path

CONFIG = Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml"


def test_the_server_loads_the_bundled_model_before_any_browser_asks(server):
    """app.py's st.App lifespan preloads (attention_viz.ui.server.warmup): the shared server fixture watches the
    process's memory maps before it hands the server to any test, so no session has run, yet the model's
    weights are read. safetensors maps the file, and the loaded tensors keep it mapped."""
    weights = str(bundled_model_path() / "model.safetensors")
    assert server.preloaded_s is not None, f"the bundled model was not loaded at server start ({weights})"
    _, log, _ = server
    assert "missing ScriptRunContext" not in log.read_text() and "preloading failed" not in log.read_text()


def _handshake(url: str, origin: str | None) -> str:
    """Open a WebSocket to /_stcore/stream by hand; return the HTTP status line of the answer."""
    parsed = urlparse(url)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET /_stcore/stream HTTP/1.1",
        f"Host: {parsed.netloc}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Protocol: streamlit",
    ]
    if origin:
        lines.append(f"Origin: {origin}")
    with socket.create_connection((parsed.hostname, parsed.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return sock.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def test_config_keeps_the_protections_on():
    server = tomllib.loads(CONFIG.read_text())["server"]
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True
    assert server["corsAllowedOrigins"] == [] and server["maxUploadSize"] == 2


def test_websocket_from_a_foreign_origin_is_refused(server):
    url, _, _ = server
    assert " 101 " in _handshake(url, url) + " "  # the app's own page may connect
    refused = _handshake(url, "https://evil.example")
    assert " 101" not in refused and refused.startswith("HTTP/1.1 "), refused
    assert " 101" not in _handshake(url, "http://attacker.test:8501")


def test_xsrf_cookie_is_set_and_an_upload_without_the_token_is_refused(server):
    import urllib.error
    import urllib.request

    url, _, _ = server
    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=30) as response:
        cookies = response.headers.get_all("Set-Cookie") or []
    assert any(cookie.startswith("_streamlit_xsrf=") for cookie in cookies), cookies
    upload = urllib.request.Request(f"{url}/_stcore/upload_file/session/file", data=b"x", method="PUT")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(upload, timeout=30)
    assert refused.value.code == 403


def test_a_plain_start_names_its_address_and_logs_no_warning():
    """Started as a lecturer starts it (no address given), Streamlit asked checkip.amazonaws.com for the
    machine's external address and, offline, logged "Did not auto detect external IP" at every start."""
    with streamlit_server(address=None) as running:
        _, log, _ = running
        wait_until(lambda: "URL: " in log.read_text(), 60, "no address in the start-up log")
        started = log.read_text()
    assert "You can now view your Streamlit app" in started and "URL: http://localhost:" in started, started
    assert "external IP" not in started, started
