"""The app's own routes for its browser elements: plotly.js and the maps' bundles.

Light on purpose: ``app.py`` imports it as the server starts (before torch and the model are loaded in the
background), to give ``st.App`` its routes.

- ``/attention-viz/plotly-<version>.min.js``: the plotly package's own ``plotly.min.js`` (the one copy a
  page loads; nothing comes from another host), cached by the browser for good. Compressed once per process
  (:func:`plotly_gzip`) and sent as it is to every browser that accepts gzip: left to Streamlit's gzip
  middleware, its 4.8 MB were compressed again for every new browser, about 0.12 s of the server's CPU each,
  on the thread that carries every session's messages (a class arriving queued behind it).
- ``/attention-viz/maps/<id>``: a bundle of maps (:func:`attention_viz.figures.bundles.pack`), kept in :data:`STORE`.
  A bundle the page made is named by its content (:func:`content_id`, the BLAKE2b digest of its bytes): every session
  that shows the same sentence the same way names the same bundle, the server keeps it once, and a browser that has
  it never fetches it again (``Cache-Control: immutable``, the id as its ``ETag``, ``304`` to ``If-None-Match``). A
  bundle registered to be made on request has a random id until then; it is served with its digest as ``ETag`` and
  cached for an hour.
- any other ``/attention-viz/...``: 404. Without it, Streamlit's front end would answer such a path with its
  page (``index.html``, 200: the fallback of a single-page app), which a script or a bundle request would
  take for its file.

Under a base path (``streamlit run app.py --server.baseUrlPath attviz``, the app behind a proxy at
``/attviz/``) every path here is under it: ``/attviz/attention-viz/...`` (:func:`app_path`). Streamlit 1.67's
``st.App(routes=...)`` puts the app's routes before its own exactly as given, at the server's root: it
prefixes only its own routes with ``server.baseUrlPath``, and mounts its front end at the base path, where
every path it does not know gets its page with status 200. So ``app.py`` passes the base path here. The
browser side builds these addresses from its modules' own address, which is under the base path too
(``plotly_loader.js``).

Source: Starlette's ``Route`` and responses, which ``st.App(routes=...)`` mounts beside Streamlit's own
(``streamlit/web/server/starlette/starlette_app.py``: ``App._build_starlette_app``, ``_with_base`` in
``starlette_routes.py``, the front end's ``Mount`` in ``starlette_static_routes.py``).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import importlib.util
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

ROUTE = "attention-viz"  # the first segment of the app's own paths
STORE_BUDGET = 512 * 2**20  # bytes of bundles the server keeps for the browsers to fetch (oldest go first)
PLOTLY_JS = Path(importlib.util.find_spec("plotly").origin).parent / "package_data" / "plotly.min.js"
PLOTLY_PATH = f"{ROUTE}/plotly-{importlib.metadata.version('plotly')}.min.js"
PENDING_MAX = 64  # bundles registered to be made on request (each holds its maps' source, not their bytes)


def content_id(payload: bytes) -> str:
    """The id of a bundle made now: the BLAKE2b digest of its bytes (16 bytes, 32 lowercase hex digits).

    The same bytes always get the same id, in every session, replica and restart, so the bytes under an
    id never change; knowing an id tells nothing that the bundle's own content does not (the sentence is in
    it)."""
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


def is_content_id(bundle_id: str) -> bool:
    """Whether ``bundle_id`` names a bundle by its content (:func:`content_id`), not at random (``put_later``)."""
    return len(bundle_id) == 32 and all(c in "0123456789abcdef" for c in bundle_id)


class _Store:
    """Bundles by id, the oldest dropped past :data:`STORE_BUDGET` bytes (thread-safe: sessions and the
    server's request handlers share it). A bundle :meth:`put` stores is named by its content
    (:func:`content_id`): sessions showing the same sentence share one copy and one id.

    A bundle may also be registered before it is made (:meth:`put_later`): it is made on its first
    :meth:`get` (in the request handler's thread), so that a page can name the bundles the browser will
    want next without making them in its rerun."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._items: OrderedDict[str, bytes | Callable[[], bytes]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def put(self, payload: bytes) -> str:
        """Store ``payload`` (once: the same bytes again only mark it as the newest); its :func:`content_id`."""
        bundle_id = content_id(payload)
        with self._lock:
            if isinstance(self._items.get(bundle_id), bytes):
                self._items.move_to_end(bundle_id)
                return bundle_id
            self._items[bundle_id] = payload
            self._size += len(payload)
            self._evict()
            return bundle_id

    def put_recipe(self, payload: bytes, make: Callable[[], bytes]) -> str:
        """Name ``payload`` by its :func:`content_id` but keep only ``make``, which makes the same bytes again on
        the first :meth:`get` (a page that sent the bytes inside its element's data: the browser has them, and
        asks for the path only if it missed that run). Counted with :meth:`put_later`'s bundles; the id."""
        bundle_id = content_id(payload)
        with self._lock:
            if bundle_id in self._items:
                self._items.move_to_end(bundle_id)
                return bundle_id
            self._items[bundle_id] = make
            self._trim_pending()
        return bundle_id

    def _trim_pending(self) -> None:
        pending = [i for i, item in self._items.items() if callable(item)]
        for old in pending[: max(0, len(pending) - PENDING_MAX)]:  # the oldest never asked for
            del self._items[old]

    def put_later(self, make: Callable[[], bytes]) -> str:
        """Register the bundle that ``make()`` returns (called at most once, on the first :meth:`get`, from
        any thread: it must not use Streamlit); its id now (random: the content is not known yet)."""
        bundle_id = secrets.token_urlsafe(16)
        with self._lock:
            self._items[bundle_id] = make
            self._trim_pending()
        return bundle_id

    def forget(self, bundle_id: str) -> None:
        """Drop a bundle registered with :meth:`put_later` that was not made yet (a page no longer names it)."""
        with self._lock:
            if callable(self._items.get(bundle_id)):
                del self._items[bundle_id]

    def _evict(self) -> None:
        while self._size > self.budget and len(self._items) > 1:
            _, dropped = self._items.popitem(last=False)
            if isinstance(dropped, bytes):
                self._size -= len(dropped)

    def get(self, bundle_id: str) -> bytes | None:
        with self._lock:
            payload = self._items.get(bundle_id)
            if payload is not None:
                self._items.move_to_end(bundle_id)
        if callable(payload):  # made now, outside the lock (two first requests may both make it)
            made = payload()
            with self._lock:
                if self._items.get(bundle_id) is payload:
                    self._items[bundle_id] = made
                    self._size += len(made)
                    self._evict()
            payload = made
        return payload

    def __contains__(self, bundle_id: str) -> bool:
        with self._lock:
            return bundle_id in self._items


STORE = _Store(STORE_BUDGET)


IMMUTABLE = "public, max-age=31536000, immutable"  # a content-addressed bundle: its bytes never change


_PLOTLY_GZIP: list[bytes] = []  # made once (:func:`plotly_gzip`)
_PLOTLY_GZIP_LOCK = threading.Lock()


def plotly_gzip() -> bytes:
    """plotly.min.js compressed with gzip (RFC 1952), made on the first call and kept for the process (about
    1.4 MB; ``app.py`` makes it as the server starts): a call while it is being made waits for it, and gets the
    same bytes. ``mtime=0``, so the same file always gives the same bytes."""
    with _PLOTLY_GZIP_LOCK:
        if not _PLOTLY_GZIP:
            _PLOTLY_GZIP.append(gzip.compress(PLOTLY_JS.read_bytes(), compresslevel=9, mtime=0))
        return _PLOTLY_GZIP[0]


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an ``Accept-Encoding`` header accepts gzip: ``gzip`` (or ``*``) listed without ``q=0``
    (RFC 9110 12.5.3). ``accepts_gzip("gzip, deflate, br") is True``; ``accepts_gzip("gzip;q=0") is False``."""
    weights = {}
    for item in (accept_encoding or "").lower().split(","):
        name, *params = (part.strip() for part in item.split(";"))
        q = next((p.removeprefix("q=") for p in params if p.startswith("q=")), "1")
        try:
            weights[name] = float(q)
        except ValueError:
            weights[name] = 0.0
    return weights.get("gzip", weights.get("*", 0.0)) > 0


def _serve_plotly(request):
    """plotly.min.js: gzip-compressed once (:func:`plotly_gzip`) for a browser that accepts gzip, the file as it
    is otherwise. Either way its ``Content-Encoding`` is set (``gzip``, or ``identity`` as the bundles' is), so
    the server's gzip middleware passes it on: it would compress the file again for any ``Accept-Encoding`` that
    names gzip, ``gzip;q=0`` too. A sync handler: Starlette runs it in a worker thread, so the first
    compression keeps no message waiting."""
    from starlette.responses import FileResponse, Response

    headers = {"Cache-Control": IMMUTABLE, "Vary": "Accept-Encoding"}
    if accepts_gzip(request.headers.get("accept-encoding")):
        headers["Content-Encoding"] = "gzip"
        return Response(plotly_gzip(), media_type="text/javascript", headers=headers)
    headers["Content-Encoding"] = "identity"
    return FileResponse(PLOTLY_JS, media_type="text/javascript", headers=headers)


MADE_ON_REQUEST = "private, max-age=3600"  # a bundle under a random id (made on request)


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (weak or strong, in a list, or ``*``; RFC 9110 13.1.2)."""
    if not if_none_match:
        return False
    tags = [tag.strip() for tag in if_none_match.split(",")]
    return "*" in tags or etag in (tag.removeprefix("W/") for tag in tags)


def _serve_bundle(request):
    """A bundle's bytes with its validator: ``ETag`` (the content id, quoted), and ``304 Not Modified``
    without a body when the request's ``If-None-Match`` names it. A content-addressed id (:func:`is_content_id`)
    is answered ``304`` even after the store dropped it: the bytes under that id cannot have changed."""
    from starlette.responses import Response

    bundle_id = request.path_params["bundle_id"]
    content_named = is_content_id(bundle_id)
    cache = IMMUTABLE if content_named else MADE_ON_REQUEST
    if content_named and _matches(request.headers.get("if-none-match"), f'"{bundle_id}"'):
        return Response(status_code=304, headers={"ETag": f'"{bundle_id}"', "Cache-Control": cache})
    payload = STORE.get(bundle_id)
    if payload is None:
        return Response(b"gone", status_code=404, media_type="text/plain")
    etag = f'"{bundle_id if content_named else content_id(payload)}"'
    if _matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers={"ETag": etag, "Cache-Control": cache})
    # Already compact; "identity" keeps the server's gzip from spending CPU on megabytes of floats.
    headers = {"Cache-Control": cache, "ETag": etag, "Content-Encoding": "identity"}
    return Response(payload, media_type="application/octet-stream", headers=headers)


def _not_found(request):
    from starlette.responses import Response

    return Response(b"not found", status_code=404, media_type="text/plain")


def app_path(base: str | None, path: str) -> str:
    """The server path of ``path`` (from the app's root, e.g. ``ready``) under the base path ``base``
    (Streamlit's ``server.baseUrlPath``; surrounding slashes optional, ``""`` or ``None`` for none):
    ``app_path("attviz", "/ready") == "/attviz/ready"``, ``app_path("", "ready") == "/ready"``."""
    return "/" + "/".join(part for part in ((base or "").strip("/"), path.strip("/")) if part)


def routes(base: str | None = "") -> list:
    """The app's routes for ``st.App(routes=...)``, under the base path ``base`` (:func:`app_path`):
    plotly.js (the plotly package's own file, its version in the path, cached for good), the bundles (by
    id, :data:`STORE`, with their ``ETag``; 304 to a matching ``If-None-Match``, 404 for an id it does not
    hold) and 404 for any other path under ``/attention-viz/``."""
    from starlette.routing import Route

    return [
        Route(app_path(base, PLOTLY_PATH), _serve_plotly, methods=["GET"]),
        Route(app_path(base, f"{ROUTE}/maps/{{bundle_id}}"), _serve_bundle, methods=["GET"]),
        Route(app_path(base, f"{ROUTE}/{{rest:path}}"), _not_found, methods=["GET"]),
    ]
