"""The browser's bundles: maps and numbers packed once as a JSON header and little-endian float32 arrays.

The format (:func:`pack`, read back by :func:`unpack`; the browser's reader is ``attention_map.js``):
``"AVM1"``, the header's length (uint32 LE), the header as UTF-8 JSON, zero padding to a multiple of 4, then the
arrays as float32, one after another, each found by the byte offset the header gives.

A maps bundle (:func:`bundle`) holds the maps of the layers the browser holds. What it holds (:data:`BUDGET`,
16 MiB of float32): every layer's heads when they fit (a 16-token sentence: 74 KB), else the current layer's
(512 tokens: 12.6 MB for 12 heads), else the current head only (:func:`held_layers`, :func:`holds_heads`).
Compare's hold both its maps (pretrained and from scratch: twice the bytes). Inside a head's steps are packed
the same way (:mod:`attention_viz.analysis.step_bundles`).

No Streamlit here: the app's element (:mod:`attention_viz.ui.attention_map.element`) names, keeps and serves the
bundles (:mod:`attention_viz.ui.attention_map.serving`). Offers: :data:`MAGIC`, :data:`BUDGET`,
:data:`OVERVIEW_BINS`, :func:`pack`, :func:`unpack`, :func:`held_layers`, :func:`holds_heads`, :func:`bundle`,
:func:`from_maps` (a :class:`~attention_viz.analysis.layer_maps.HeldMaps` packed).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from attention_viz.figures import heatmaps
from attention_viz.figures.grid import pool_attention
from attention_viz.figures.layout import isolate, shorten_label

if TYPE_CHECKING:
    from attention_viz.analysis.layer_maps import HeldMaps

MAGIC = b"AVM1"
BUDGET = 16 * 2**20  # bytes of float32 maps one bundle may hold (see the module docstring)
OVERVIEW_BINS = 48  # the overview's pooled bins a side (attention_viz.figures.overview's)


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


def pack(header: dict, arrays: Sequence) -> bytes:
    """A bundle: ``"AVM1"``, the header's length (uint32 LE), the header as UTF-8 JSON, zero padding to a
    multiple of 4, then ``arrays`` as little-endian float32, one after another.

    Each array's byte offset (from the first array) is given in the header by the caller; see
    :func:`bundle` for the maps' header's fields. Raises ``ValueError`` for a non-finite value.
    """
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    parts = [MAGIC, struct.pack("<I", len(head)), head, b"\0" * (-(8 + len(head)) % 4)]
    for array in arrays:
        values = np.ascontiguousarray(array, dtype="<f4")
        if not np.isfinite(values).all():
            raise ValueError("a map to draw has a value that is not finite")
        parts.append(values.tobytes())
    return b"".join(parts)


def unpack(payload: bytes) -> tuple[dict, object]:
    """The header and the float32 values of a bundle made by :func:`pack` (for tests and benchmarks)."""
    if payload[:4] != MAGIC:
        raise ValueError("not an attention-map bundle")
    (length,) = struct.unpack("<I", payload[4:8])
    header = json.loads(payload[8 : 8 + length].decode("utf-8"))
    base = 8 + length + (-(8 + length) % 4)
    return header, np.frombuffer(payload[base:], dtype="<f4")
