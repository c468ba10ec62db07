"""The page tells the browser to fetch the app's element modules at once, with Streamlit's own scripts.

The map element and the page-wide one (:mod:`attention_viz.ui.attention_map`) are ES modules that Streamlit
imports only when the first run's data names them, after its scripts have loaded, and each of their imports only
once the importing module runs: fetched one after another then, they held up the first map. An ASGI
middleware adds ``<link rel="modulepreload">`` for each of them to the page's HTML, so the browser has them
when the data arrives.

plotly.js (the plotly package's own ``plotly.min.js``, served by the app) is not preloaded: the map paints its
cells from its data without it, and ``plotly_loader.js`` fetches and runs it once that is done. Preloaded with
the page, its 1.5 MB went alongside Streamlit's own scripts: the page's DOMContentLoaded came about 0.15 s later
and the first map about 0.2 s later, and plotly's own drawing no sooner (benchmarks/README.md, #20). Streamlit's
own plotly chunk is not preloaded either: pages drawn with the element do not need it, and a page that draws
``st.plotly_chart`` loads it as usual (so nothing here depends on the file layout of Streamlit's build).

Source: the HTML standard's ``modulepreload`` link type; Starlette's pure ASGI middleware pattern.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

# Where Streamlit serves a custom component's files (``_stcore/bidi-components/<project>.<component>/<file>``, its
# ``buildBidiComponentURL``), and the modules the page runs first: the map element's and the page-wide one's.
COMPONENT_URL = "_stcore/bidi-components/attention-viz.{component}/{file}"
ENTRY_MODULES = (("attention_map", "attention_map.js"), ("svg_buttons", "svg_buttons.js"))
MAP_MODULE = COMPONENT_URL.format(component="attention_map", file="attention_map.js")
_HERE = Path(__file__).parent
_IMPORT = re.compile(r"""^import\s[^"';]*["']\./([\w.-]+\.js)["']""", re.MULTILINE)


def module_files(entry: str) -> list[str]:
    """``entry`` (a module beside this file) and every module it imports, directly or not (``import ... from
    "./x.js"``), in the order first met. A browser fetches an import only once it runs the module that
    imports it (Chromium does not preload a preloaded module's imports), so each needs its own link."""
    found = [entry]
    for name in found:
        found += [n for n in _IMPORT.findall((_HERE / name).read_text(encoding="utf-8")) if n not in found]
    return found


@functools.cache
def links() -> bytes:
    """The ``<link>`` tags of the first modules' files with their imports (:data:`ENTRY_MODULES`,
    :func:`module_files`): ready when the first run's data arrives, instead of fetched module after module then
    (the first map waited for them)."""
    tags = []
    for component, entry in ENTRY_MODULES:
        for file in module_files(entry):
            tags.append(f'<link rel="modulepreload" href="./{COMPONENT_URL.format(component=component, file=file)}">')
    return "".join(tags).encode()


def with_links(html: bytes) -> bytes:
    """``html`` with :func:`links` just before ``</head>`` (unchanged if it has none)."""
    return html.replace(b"</head>", links() + b"</head>", 1)


class PreloadLinks:
    """ASGI middleware: adds :func:`links` to every whole HTML page the server sends (a ``200`` ``text/html``
    response to ``GET`` or ``HEAD``). Its length is corrected and its ``ETag`` dropped (the body is not the
    file's any more); a partial response (``206``) is passed on as it is."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        method = scope.get("method")
        if scope["type"] != "http" or method not in ("GET", "HEAD") or not links():
            await self.app(scope, receive, send)
            return
        start: dict | None = None
        body: list[bytes] = []

        def headers_for(length: int) -> list:
            kept = [(k, v) for k, v in start.get("headers", []) if k not in (b"content-length", b"etag")]
            return [*kept, (b"content-length", str(length).encode())]

        async def rewrite(message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                html = headers.get(b"content-type", b"").startswith(b"text/html")
                if message.get("status") == 200 and html and b"content-encoding" not in headers:
                    start = message  # held until the whole body is here
                    return
                await send(message)
            elif start is not None:
                body.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                if method == "HEAD":  # no body to rewrite: the length the GET's rewritten body has
                    length = int(dict(start.get("headers", [])).get(b"content-length", b"0")) + len(links())
                    await send({**start, "headers": headers_for(length)})
                    await send({"type": "http.response.body", "body": b""})
                    return
                html = with_links(b"".join(body))
                await send({**start, "headers": headers_for(len(html))})
                await send({"type": "http.response.body", "body": html})
            else:
                await send(message)

        await self.app(scope, receive, rewrite)
