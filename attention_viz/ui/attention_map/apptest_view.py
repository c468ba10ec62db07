"""The map element read back without a browser: what ``attention_map.js`` draws at the element's view, as plotly
JSON, for AppTest (the tests' ``chart(at, "map")``) and for protocol-level clients.

Under AppTest there is no browser: the element is recorded as an unknown element and draws nothing; the page
around it runs as in a browser (the view comes from the session's settings). :func:`as_figure` takes the
element's data as sent (the drawing dict of :func:`attention_viz.figures.map_drawing.drawing`, the view,
the bundle's path) and the bundle it names, and picks from them as the browser does
(:func:`~attention_viz.figures.map_drawing.look`, :func:`~attention_viz.figures.map_drawing.png_name`).

Offers: :func:`as_figure`.
"""

from __future__ import annotations

import numpy as np

from attention_viz.figures import map_drawing as drawing
from attention_viz.figures.bundles import unpack
from attention_viz.figures.layout import window_slice
from attention_viz.ui.attention_map.serving import STORE


def as_figure(data: dict) -> dict:
    """What the map element with ``data`` draws at its view, as plotly JSON (``data``, ``layout``, ``config``,
    and ``overview``: the pooled overview's values and the window's outline, or ``None``).

    The element draws in the browser; this reads the same bundle and view back the way
    ``attention_map.js`` does (the window's heatmap with its categories, colour range, hover indices, the
    focus outline, the PNG's name).

    Raises:
        KeyError: the bundle is no longer in :data:`~attention_viz.ui.attention_map.serving.STORE`.
    """
    view, size = data["view"], data["window"]
    kind = drawing.kind(data) or "pretrained"
    path = data.get("kind_bundles", {}).get(kind, data)["bundle"]  # Rollout & norms: each kind its own bundle
    payload = STORE.get(path.rsplit("/", 1)[-1])
    if payload is None:
        raise KeyError(path)
    header, values = unpack(payload)
    look = drawing.look(data)
    shape = header["maps"]["shape"]
    maps = _array(values, header["maps"])
    if header.get("scratch") and kind != "pretrained":
        scratch = _array(values, header["scratch"])
        maps = scratch if kind == "scratch" else scratch - maps  # float32 - float32, as the browser subtracts
    rows = window_slice(view["query_start"], header["queries"], size)
    columns = window_slice(view["key_start"], header["keys"], size)
    q0, k0 = rows.start, columns.start
    nq, nk = rows.stop - rows.start, columns.stop - columns.start
    held = header["layers"].index(view["layer"])
    head = 0 if shape[1] == 1 else view["head"]
    ranges = header["ranges"]
    if isinstance(ranges, dict):
        ranges = ranges["difference" if kind == "difference" else "attention"]
    low, high = ranges[held][head] if ranges else look["zrange"]
    indices = np.stack(np.meshgrid(np.arange(nq) + q0, np.arange(nk) + k0, indexing="ij"), axis=-1)
    texts = data["texts"]
    trace = {
        "type": "heatmap",
        "z": maps[held, head, q0 : q0 + nq, k0 : k0 + nk].tolist(),
        "x": header["x"][k0 : k0 + nk],
        "y": header["y"][q0 : q0 + nq],
        "customdata": indices.tolist(),
        "colorscale": look["colorscale"],
        "zmin": low,
        "zmax": high,
    }
    if look["zmid"] is not None:
        trace["zmid"] = look["zmid"]
    colorbar = look.get("colorbar", texts["colorbar"])  # the kind's own, else the map's
    if colorbar:
        trace["colorbar"] = {"title": {"text": colorbar}}
    shapes = []
    focus = view["focus"] - q0
    if view["focus"] >= 0 and 0 <= focus < nq:
        shapes.append({"type": "rect", "x0": -0.5, "x1": nk - 0.5, "y0": focus - 0.5, "y1": focus + 0.5})
    axis = {"tickfont": {"size": data["font"]}, "type": "category"}
    layout = {
        "title": {"text": look.get("title", texts["title"]).replace("{layer}", str(view["layer"]))},
        "xaxis": {**axis, "ticktext": header["x_text"][k0 : k0 + nk], "title": {"text": texts["key_axis"]}},
        "yaxis": {**axis, "ticktext": header["y_text"][q0 : q0 + nq], "title": {"text": texts["query_axis"]}},
        "shapes": shapes,
    }
    return {
        "data": [trace],
        "layout": layout,
        "config": {"toImageButtonOptions": {"format": "png", "filename": drawing.png_name(data), "scale": 2}},
        "overview": _overview(header, values, held, head, rows, columns, kind),
    }


def _array(values: np.ndarray, entry: dict) -> np.ndarray:
    """One float32 array of a bundle's values, by its header entry (``offset`` in bytes, ``shape``)."""
    start = entry["offset"] // 4
    return values[start : start + int(np.prod(entry["shape"]))].reshape(entry["shape"])


def _overview(
    header: dict, values: np.ndarray, held: int, head: int, rows: slice, columns: slice, kind: str = "pretrained"
) -> dict | None:
    """The pooled overview of the head's map of ``kind`` (when the bundle has one) with the window's outline."""
    entry = header["overview"]
    if entry is None:
        return None
    pooled = _array(values, entry)
    if header.get("overview_scratch") and kind != "pretrained":
        scratch = _array(values, header["overview_scratch"])
        pooled = scratch if kind == "scratch" else scratch - pooled
    return {
        "z": pooled[held, head].tolist(),
        "window": {"y0": rows.start - 0.5, "y1": rows.stop - 0.5, "x0": columns.start - 0.5, "x1": columns.stop - 0.5},
    }
