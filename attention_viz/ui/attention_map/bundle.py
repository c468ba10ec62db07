"""The map element's bundles: which layers one holds, their binary format, and the bundles a session names.

A bundle is the maps of the layers the browser holds, packed once (:func:`attention_viz.ui.attention_map.serving.pack`:
a JSON header, then little-endian float32; the reader is ``attention_map.js``). What it holds (:data:`BUDGET`,
16 MiB of float32): every layer's heads when they fit (a 16-token sentence: 74 KB), else the current layer's
(512 tokens: 12.6 MB for 12 heads), else the current head only. Compare's hold both its maps (pretrained and from
scratch: twice the bytes). A small bundle (at most :data:`INLINE_MAX`) also travels once as base64 in the data of
the run that made it, so the browser paints it without a request that would wait for the rest of the page's run.

When one layer is held, the element's data names the bundles of every other layer (:func:`neighbours`), each
registered to be made from the maps' recipe (:class:`attention_viz.analysis.layer_maps.Recipe`) only when the
browser asks (:meth:`~attention_viz.ui.attention_map.serving._Store.put_later`): a layer step never needs a run of
the page. A session remembers its element's bundle ids (:func:`memo`), so a rerun re-sends none.

Offers: :data:`BUDGET`, :data:`OVERVIEW_BINS`, :data:`INLINE_MAX`, :func:`held_layers`, :func:`holds_heads`,
:func:`bundle` (the format), :func:`from_maps` (a :class:`~attention_viz.analysis.layer_maps.HeldMaps` packed),
:func:`inline`, :func:`memo`, :func:`bundle_id`, :func:`neighbours`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from attention_viz.analysis.layer_maps import HeldMaps
from attention_viz.figures import heatmaps
from attention_viz.figures.grid import pool_attention
from attention_viz.figures.layout import isolate, shorten_label
from attention_viz.ui.attention_map.serving import ROUTE, STORE, pack

BUDGET = 16 * 2**20  # bytes of float32 maps one bundle may hold (see the module docstring)
OVERVIEW_BINS = 48  # the overview's pooled bins a side (attention_viz.figures.overview's)
INLINE_MAX = 2**20  # bytes of a bundle sent inside the element's data, once (about 60 tokens, every layer)
MEMO_BUNDLES = 6  # bundle ids a session remembers per element (the held layer, its neighbours, the last steps)


def held_layers(layers: int, heads: int, queries: int, keys: int, layer: int, budget: int = BUDGET) -> tuple:
    """The layers a bundle holds: all of them when ``layers × heads × queries × keys`` float32 fit ``budget``
    bytes, else ``layer`` alone (its heads, or the one head shown when even they do not fit: see
    :func:`holds_heads`)."""
    if layers * heads * queries * keys * 4 <= budget:
        return tuple(range(layers))
    return (layer,)


def holds_heads(heads: int, queries: int, keys: int, budget: int = BUDGET) -> bool:
    """Whether one layer's heads fit ``budget`` bytes of float32."""
    return heads * queries * keys * 4 <= budget


def bundle(
    maps: np.ndarray,
    layers: Sequence[int],
    row_labels: Sequence[str],
    key_labels: Sequence[str],
    overview: bool,
    only_head: int | None = None,
    ranges: np.ndarray | dict | None = None,
    scratch: np.ndarray | None = None,
) -> bytes:
    """Pack the maps of the held ``layers``: ``maps`` is ``(len(layers), heads, queries, keys)`` float32,
    or ``(len(layers), 1, queries, keys)`` with ``only_head`` the one head held (header ``only_head``).

    The header gives ``layers``, ``heads``, ``queries``, ``keys``; ``maps`` and ``overview`` (or null) as
    ``{offset, shape}``; ``y``/``x``: the query and key categories as plotly shows them (distinct,
    isolated: :func:`attention_viz.figures.unique_labels`); ``y_text``/``x_text``: their ticks (shortened).
    The overview is the square map pooled to :data:`OVERVIEW_BINS` bins a side (rows still sum to 1).
    ``ranges``, ``(len(layers), heads, 2)``, is each head's own colour range (``ranges`` in the header: a
    fitted range); without it the element's one range applies to every head. With ``scratch`` (Compare: the
    from-scratch maps of the same heads, same shape) the header's ``scratch`` (and ``overview_scratch``) give
    them, ``maps`` being the pretrained ones: the browser switches between the two and their difference
    (``scratch − pretrained`` in float32, as numpy computes it) without asking the server; ``ranges`` is then
    ``{"attention": ..., "difference": ...}`` (each ``(len(layers), heads, 2)``) or ``None``.

    Raises:
        ValueError: maps that do not match the layers, the labels or each other; a value that is not finite.
    """
    maps = np.asarray(maps, dtype=np.float32)
    held, heads, queries, keys = maps.shape
    if held != len(layers) or (queries, keys) != (len(row_labels), len(key_labels)):
        raise ValueError(f"maps {maps.shape} do not match {len(layers)} layers and the labels")
    header: dict = {
        "layers": [int(layer) for layer in layers],
        "heads": heads,
        "only_head": only_head,
        "queries": queries,
        "keys": keys,
        "maps": {"offset": 0, "shape": list(maps.shape)},
        "overview": None,
        "ranges": _ranges(ranges),
        "scratch": None,
        "overview_scratch": None,
        "y": heatmaps.unique_labels(row_labels),
        "x": heatmaps.unique_labels(key_labels),
        "y_text": [isolate(shorten_label(label)) for label in row_labels],
        "x_text": [isolate(shorten_label(label)) for label in key_labels],
    }
    arrays = [maps]
    offset = maps.nbytes
    if scratch is not None:
        scratch = np.asarray(scratch, dtype=np.float32)
        if scratch.shape != maps.shape:
            raise ValueError(f"scratch maps {scratch.shape} do not match the pretrained maps {maps.shape}")
        header["scratch"] = {"offset": offset, "shape": list(scratch.shape)}
        arrays.append(scratch)
        offset += scratch.nbytes
    if overview and queries == keys:
        for name, values in (("overview", maps), ("overview_scratch", scratch)):
            if values is None:
                continue
            pooled, starts = pool_attention(values, OVERVIEW_BINS)
            header[name] = {"offset": offset, "shape": list(pooled.shape), "starts": starts.tolist()}
            arrays.append(pooled)
            offset += pooled.nbytes
    return pack(header, arrays)


def _ranges(ranges: np.ndarray | dict | None):
    """Fitted colour ranges as the header gives them (lists), by map kind when given by kind."""
    if ranges is None:
        return None
    if isinstance(ranges, dict):
        return {kind: np.asarray(value, dtype=float).tolist() for kind, value in ranges.items()}
    return np.asarray(ranges, dtype=float).tolist()


def from_maps(held: HeldMaps, overview: bool, only_head: int | None = None) -> bytes:
    """The bundle of ``held``'s maps (:func:`bundle`), of the head ``only_head`` alone when given; with
    ``held.scratch`` both maps and the ranges by kind (``attention``, ``difference``)."""
    one = slice(None) if only_head is None else slice(only_head, only_head + 1)
    maps, scratch, ranges = held.maps[:, one], held.scratch, held.ranges
    if scratch is not None:
        scratch = scratch[:, one]
        if ranges is not None:
            ranges = {"attention": ranges, "difference": held.difference_ranges}
    if isinstance(ranges, dict):
        ranges = {kind: np.asarray(value)[:, one] for kind, value in ranges.items()}
    elif ranges is not None:
        ranges = np.asarray(ranges)[:, one]
    return bundle(maps, held.layers, held.query_labels, held.key_labels, overview, only_head, ranges, scratch)


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
