"""The maps' bundles as a class shares them: one id per content, served with a validator and as immutable."""

import asyncio
import hashlib

from attention_viz.ui.attention_map import serving


def _request(app, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[bytes, bytes], bytes]:
    """``GET path`` from the ASGI ``app`` with ``headers``, in this thread: ``(status, headers, body)``."""
    sent, requests = [], [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():
        if requests:
            return requests.pop()
        await asyncio.Event().wait()  # no disconnect before the response is sent

    async def send(message):
        sent.append(message)

    raw = [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b""}
    scope |= {"headers": raw, "scheme": "http", "server": ("127.0.0.1", 80), "root_path": "", "http_version": "1.1"}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def _app():
    from starlette.applications import Starlette

    return Starlette(routes=serving.routes(""))


def test_the_same_bytes_get_the_same_id_in_every_store_and_session():
    """Two sessions (two stores here: two replicas or two restarts alike) with the same content name one bundle."""
    payload = b"AVM1 the same sentence, the same map"
    first, second = serving._Store(budget=1000), serving._Store(budget=1000)
    bundle_id = first.put(payload)
    assert bundle_id == second.put(payload) == first.put(payload)
    assert bundle_id == hashlib.blake2b(payload, digest_size=16).hexdigest() and serving.is_content_id(bundle_id)
    assert first.put(b"AVM1 another map") != bundle_id
    assert first._size == len(payload) + len(b"AVM1 another map")  # stored once, counted once


def test_a_bundle_by_content_is_immutable_and_its_etag_gets_304_without_a_body():
    app, payload = _app(), b"AVM1 a class's bundle"
    bundle_id = serving.STORE.put(payload)
    path = f"/{serving.ROUTE}/maps/{bundle_id}"
    status, headers, body = _request(app, path)
    assert (status, body) == (200, payload)
    assert headers[b"cache-control"] == b"public, max-age=31536000, immutable"
    assert headers[b"etag"] == f'"{bundle_id}"'.encode()
    for validator in (f'"{bundle_id}"', f'W/"{bundle_id}"', f'"other", "{bundle_id}"', "*"):
        status, headers, body = _request(app, path, {"If-None-Match": validator})
        assert (status, body) == (304, b""), validator
        assert headers[b"etag"] == f'"{bundle_id}"'.encode()
    status, _, body = _request(app, path, {"If-None-Match": '"a-bundle-it-is-not"'})
    assert (status, body) == (200, payload)


def test_a_browser_that_holds_a_dropped_bundle_still_gets_304_and_one_without_it_gets_404():
    store = serving._Store(budget=10)
    bundle_id = store.put(b"0123456789")
    store.put(b"abcdefghij")  # drops the first
    assert bundle_id not in store
    real, serving.STORE = serving.STORE, store
    try:
        path = f"/{serving.ROUTE}/maps/{bundle_id}"
        assert _request(_app(), path, {"If-None-Match": f'"{bundle_id}"'})[0] == 304  # its bytes cannot have changed
        assert _request(_app(), path)[0] == 404
    finally:
        serving.STORE = real


def test_a_bundle_made_on_request_keeps_a_random_id_and_is_served_with_its_digest_and_for_an_hour():
    app, payload = _app(), b"AVM1 made when the browser asks"
    bundle_id = serving.STORE.put_later(lambda: payload)
    assert not serving.is_content_id(bundle_id)
    status, headers, body = _request(app, f"/{serving.ROUTE}/maps/{bundle_id}")
    etag = f'"{serving.content_id(payload)}"'.encode()
    assert (status, body, headers[b"etag"]) == (200, payload, etag)
    assert headers[b"cache-control"] == b"private, max-age=3600"
    status, _, body = _request(app, f"/{serving.ROUTE}/maps/{bundle_id}", {"If-None-Match": etag.decode()})
    assert (status, body) == (304, b"")


def test_a_bundle_sent_inside_the_element_is_kept_as_its_recipe_and_served_by_content_when_asked():
    """A new sentence's bundle travels in the element's data: the server keeps only how to make it (no bytes, so
    a class's new sentences do not fill the store), under its content id, and makes it for a browser that asks."""
    store, payload, made = serving._Store(budget=1000), b"AVM1 a bundle that went inline", []
    recipe = lambda: made.append(1) or payload  # noqa: E731
    bundle_id = store.put_recipe(payload, recipe)
    assert bundle_id == serving.content_id(payload) and bundle_id in store
    assert store._size == 0 and not made  # nothing held, nothing made yet
    assert store.put_recipe(payload, recipe) == bundle_id  # another session, the same content: one entry
    assert store.get(bundle_id) == payload and made == [1]  # asked for: made once, then kept
    assert store.get(bundle_id) == payload and made == [1] and store._size == len(payload)
    assert store.put(payload) == bundle_id and store._size == len(payload)  # the bytes are not counted twice
