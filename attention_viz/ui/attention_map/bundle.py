"""The map element's bundles in a session: the small one sent inline, and the ids a session names.

A bundle is the maps of the layers the browser holds, packed once (:mod:`attention_viz.figures.bundles`: which
layers one holds, the format, the maps' header; the reader is ``attention_map.js``). A small bundle (at most
:data:`INLINE_MAX`) also travels once as base64 in the data of the run that made it, so the browser paints it
without a request that would wait for the rest of the page's run.

When one layer is held, the element's data names the bundles of every other layer (:func:`neighbours`), each
registered to be made from the maps' recipe (:class:`attention_viz.analysis.layer_maps.Recipe`) only when the
browser asks (:meth:`~attention_viz.ui.attention_map.serving._Store.put_later`): a layer step never needs a run of
the page. A session remembers its element's bundle ids (:func:`memo`), so a rerun re-sends none.

Offers: :data:`INLINE_MAX`, :func:`inline`, :func:`memo`, :func:`bundle_id`, :func:`neighbours`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import streamlit as st

from attention_viz.ui.attention_map.serving import ROUTE, STORE

INLINE_MAX = 2**20  # bytes of a bundle sent inside the element's data, once (about 60 tokens, every layer)
MEMO_BUNDLES = 6  # bundle ids a session remembers per element (the held layer, its neighbours, the last steps)


def inline(made: list[bytes]) -> str | None:
    """A bundle this run made, as base64, when it is at most :data:`INLINE_MAX` bytes: it travels with the
    element's data, so a new sentence's map is painted without a request that would wait for the rest of
    the page's run (the server's one interpreter). Later runs name the bundle only (the browser holds it);
    a browser that missed this run fetches it by its path."""
    if not made or len(made[0]) > INLINE_MAX:
        return None
    return base64.b64encode(made[0]).decode("ascii")


def memo(key: str, content_key: tuple, only_head: int | None) -> dict:
    """The ids of the element ``key``'s bundles by held layers, for this content (a new content: none)."""
    s = st.session_state
    found = s.get(f"_{key}_bundles")
    if found is None or found["content"] != (content_key, only_head):
        for old in () if found is None else found["ids"].values():
            STORE.forget(old)
        found = {"content": (content_key, only_head), "ids": {}}
        s[f"_{key}_bundles"] = found
    return found


def bundle_id(memo: dict, layers: tuple, register: Callable[[], str], keep: int = MEMO_BUNDLES) -> str:
    """The id of the bundle of ``layers`` (registered now if it is not in the store); the memo keeps the
    last ``keep`` (at least :data:`MEMO_BUNDLES`)."""
    ids = memo["ids"]
    found = ids.pop(layers, None)
    if found is None or found not in STORE:
        found = register()
    ids[layers] = found  # the newest last
    while len(ids) > max(keep, MEMO_BUNDLES):
        STORE.forget(ids.pop(next(iter(ids))))
    return found


def neighbours(memo: dict, count: int, layer: int, layers: tuple, make: Callable[[tuple], bytes]) -> dict:
    """The bundles of the other layers (of ``count``) when one layer is held, by layer, made only when the
    browser asks (it fetches the layers above and below the one it shows, and any layer a step reaches): a
    layer step never needs a run of the page. None when every layer is held."""
    found = {}
    if len(layers) < count:
        order = sorted(
            set(range(count)) - set(layers), key=lambda other: min((other - layer) % count, (layer - other) % count)
        )
        for other in reversed(order):  # the nearest registered last: the memo keeps the newest
            ahead = (other,)
            named = bundle_id(memo, ahead, lambda a=ahead: STORE.put_later(lambda: make(a)), count + 2)
            found[str(other)] = f"{ROUTE}/maps/{named}"
    return found
