"""The page tells the browser to fetch plotly.js and the app's element modules at once, with Streamlit's own scripts.

The app's map and its charts (:mod:`attention_viz.ui.attention_map`) draw with the plotly package's own
``plotly.min.js``, served by the app. Loaded only when the first map arrives over the WebSocket, after
Streamlit's scripts have loaded and the first run has started, it would come late (benchmarks/README.md,
the first map), and the map would wait for it.
An ASGI middleware adds ``<link rel="preload" as="script">`` for it to the page's HTML, so the browser
downloads it while it loads the rest; it runs once the map has painted its first cells from its data
(``plotly_loader.js``), so that parsing it does not hold up the first map. Streamlit's own plotly chunk is
not preloaded: pages drawn with the element do not need it, and a page that draws ``st.plotly_chart``
loads it as usual (so nothing here depends on the file layout of Streamlit's build).

Source: the HTML standard's ``preload`` link type; Starlette's pure ASGI middleware pattern.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from attention_viz.ui.attention_map.serving import PLOTLY_PATH

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
    """The ``<link>`` tags: plotly.js, the app's own copy (served by :mod:`attention_viz.ui.attention_map.serving`),
    and the first modules' files with their imports (:data:`ENTRY_MODULES`, :func:`module_files`): ready when
    the first run's data arrives, instead of fetched module after module then (the first map waited for them)."""
    tags = [f'<link rel="preload" as="script" href="./{PLOTLY_PATH}">']
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
