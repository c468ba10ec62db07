"""The project's nginx configuration (deploy/nginx.conf) run in front of a stand-in replica: a plain HTTP
server of the test's own, so that what nginx does with a request can be checked without starting the app."""

from __future__ import annotations

import contextlib
import http.server
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest
from browser import wait_until

from deploy import replicas


@contextlib.contextmanager
def nginx_before(handler: type[http.server.BaseHTTPRequestHandler], base_path: str = "") -> Iterator[int]:
    """Start ``handler`` as the one replica and nginx in front of it with the project's configuration (the
    replicas under ``base_path``); yield nginx's port; stop both. Skips the test where nginx is not installed."""
    try:
        binary = replicas.nginx_binary()
    except RuntimeError as missing:
        pytest.skip(str(missing))
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = replicas.free_port()
    prefix = replicas.nginx_prefix()
    config = replicas.nginx_config(prefix, f"127.0.0.1:{port}", [f"127.0.0.1:{upstream.server_port}"], base_path)
    (prefix / "nginx.conf").write_text(config)
    command = [binary, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"]
    nginx = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:

        def answers() -> bool:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            assert nginx.poll() is None, (prefix / "error.log").read_text()
            return False

        wait_until(answers, 30, "nginx did not start")
        yield port
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)
        upstream.shutdown()
