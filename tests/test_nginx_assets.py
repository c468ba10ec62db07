"""nginx in front of the replicas keeps the files that never change under one address (Streamlit's static
files, the app's plotly.js) and answers later browsers itself; the page, the maps' data and everything else
still reach a replica every time."""

import gzip
import http.client
import http.server
from typing import ClassVar

import pytest
from nginx_front import nginx_before

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
        # plotly.js: kept once per encoding (it varies by Accept-Encoding), each browser getting what it accepts
        for _ in range(2):
            status, _, body = _get(port, base + PLOTLY, "gzip, deflate, br")
            assert (status, gzip.decompress(body)) == (200, SOURCE)
            assert _get(port, base + PLOTLY)[::2] == (200, SOURCE)
        # the page and the maps' data: never kept
        for _ in range(2):
            assert _get(port, base + PAGE)[::2] == (200, b"/") and _get(port, base + BUNDLE)[::2] == (
                200,
                BUNDLE.encode(),
            )
    assert replica.asked.count(SCRIPT) == 1 and replica.asked.count(PLOTLY) == 2
    assert replica.asked.count(PAGE) == 2 and replica.asked.count(BUNDLE) == 2
