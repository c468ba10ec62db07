"""nginx in front of the replicas keeps the files that never change under one address (Streamlit's static
files, the app's plotly.js) and answers later browsers itself; the page, the maps' data and everything else
still reach a replica every time."""

import gzip
import http.client
import http.server
import os
import pwd
import stat
from typing import ClassVar

import pytest
from nginx_front import nginx_before

from deploy import replicas

PAGE, SCRIPT, PLOTLY, BUNDLE = (
    "/",
    "/static/js/index.abc123.js",
    "/attention-viz/plotly-9.9.9.min.js",
    "/attention-viz/maps/a1",
)
SOURCE = b"console.log('plotly');" * 100


class Replica(http.server.BaseHTTPRequestHandler):
    """A stand-in replica under the base path ``base``, answering as the app's server does: the page and a
    bundle uncached, a static script immutable, plotly.js immutable and compressed for a browser that accepts
    gzip. Every request it gets is in ``asked`` (the path without the base)."""

    base = ""
    asked: ClassVar[list[str]] = []

    def do_GET(self):
        path = self.path.removeprefix(self.base) or "/"
        self.asked.append(path)
        headers, body = {"Cache-Control": "public, immutable, max-age=31536000"}, b"script"
        if path == PLOTLY:
            headers["Vary"], body = "Accept-Encoding", SOURCE
            if "gzip" in self.headers.get("Accept-Encoding", ""):
                headers["Content-Encoding"], body = "gzip", gzip.compress(SOURCE, mtime=0)
        elif path in (PAGE, BUNDLE):
            headers, body = {"Cache-Control": "no-cache"}, path.encode()
        self.send_response(200)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _get(port: int, path: str, accept: str | None = None) -> tuple[int, str | None, bytes]:
    """``(status, X-Cache-Status, body)`` of ``GET path`` through nginx, with ``Accept-Encoding: accept``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path, headers={"Accept-Encoding": accept} if accept else {})
    response = connection.getresponse()
    found = (response.status, response.getheader("X-Cache-Status"), response.read())
    connection.close()
    return found


@pytest.mark.parametrize("base_path", ["", "attviz"])
def test_nginx_keeps_the_files_that_never_change_and_passes_the_rest_on(base_path):
    base = f"/{base_path}" if base_path else ""
    replica = type("Replica", (Replica,), {"base": base, "asked": []})
    with nginx_before(replica, base_path) as port:
        # a static script: the first browser's request reaches the replica, the next ones are nginx's
        assert [_get(port, base + SCRIPT) for _ in range(3)] == [(200, "MISS", b"script")] + [
            (200, "HIT", b"script")
        ] * 2
        # plotly.js: kept once compressed and once not (it varies by Accept-Encoding), whatever each browser's
        # header says exactly, each browser getting what it accepts
        for accept in ("gzip, deflate, br", "gzip", "deflate, gzip;q=0.8", "br, gzip"):
            status, _, body = _get(port, base + PLOTLY, accept)
            assert (status, gzip.decompress(body)) == (200, SOURCE)
        for accept in (None, "identity", "br"):
            assert _get(port, base + PLOTLY, accept)[::2] == (200, SOURCE)
        # the page and the maps' data: never kept
        for _ in range(2):
            assert _get(port, base + PAGE)[::2] == (200, b"/") and _get(port, base + BUNDLE)[::2] == (
                200,
                BUNDLE.encode(),
            )
    assert replica.asked.count(SCRIPT) == 1 and replica.asked.count(PLOTLY) == 2
    assert replica.asked.count(PAGE) == 2 and replica.asked.count(BUNDLE) == 2


def test_what_nginx_keeps_only_its_workers_can_write():
    """The files nginx keeps go to every browser: their folder is its workers' alone (as root they run as
    ``nobody``), unlike the folders where it buffers requests."""
    prefix = replicas.nginx_prefix()
    kept = (prefix / "assets").stat()
    assert stat.S_IMODE(kept.st_mode) == 0o700
    assert kept.st_uid == (pwd.getpwnam("nobody").pw_uid if os.geteuid() == 0 else os.geteuid())
