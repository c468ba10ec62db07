"""The page tells the browser to fetch plotly.js and the map's script at once, with Streamlit's own scripts.

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

from attention_viz.ui.attention_map.serving import PLOTLY_PATH

# The map element's module as Streamlit serves a custom component's file (``_stcore/bidi-components/<project>.
# <component>/<file>``, its ``buildBidiComponentURL``): preloaded with its imports (plotly_loader.js,
# browser_view.js), the map's script is ready when the first run's data arrives, instead of being fetched
# module after module then (the first map waited about a second for them).
MAP_MODULE = "_stcore/bidi-components/attention-viz.attention_map/attention_map.js"


@functools.cache
def links() -> bytes:
    """The ``<link>`` tags: plotly.js, the app's own copy (served by :mod:`attention_viz.ui.attention_map.serving`),
    and the map element's module (:data:`MAP_MODULE`)."""
    return (
        f'<link rel="preload" as="script" href="./{PLOTLY_PATH}">' + f'<link rel="modulepreload" href="./{MAP_MODULE}">'
    ).encode()


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
