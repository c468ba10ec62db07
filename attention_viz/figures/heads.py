"""Plotly figures for exploring heads: the head overview, the head-similarity map.

Figures take arrays and strings (axis titles come from the page, in the user's language), know nothing
of models or Streamlit, and return ``plotly.graph_objects.Figure`` built from dicts
(:func:`attention_viz.figures.plotting.figure`). Points carry ``(layer, head)`` in ``customdata`` so a
page can open the head a user clicks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from attention_viz.figures import plotting

OVERVIEW_COLORSCALE = "Viridis"
MARK_SIZE = (8, 26)  # px: smallest and largest mark; 12 heads across 450 px leave 37 px per mark


PLAIN_SIZE = float(MARK_SIZE[1] - 6)  # px: a mark without an importance


def _mark_sizes(importance: np.ndarray | None, count: int) -> np.ndarray:
    """Mark sizes in px, area proportional to ``importance``; a head whose importance is missing (NaN) gets the
    plain size of a figure without importance, not the smallest mark (that would say "0")."""
    if importance is None:
        return np.full(count, PLAIN_SIZE)
    values = np.asarray(importance, dtype=np.float64).reshape(-1)
    known = np.isfinite(values)
    top = values[known].max() if known.any() and values[known].max() > 0 else 1.0
    scaled = MARK_SIZE[0] + (MARK_SIZE[1] - MARK_SIZE[0]) * np.sqrt(np.clip(np.where(known, values, 0), 0, None) / top)
    return np.where(known, scaled, PLAIN_SIZE)  # area ∝ value


def _value_texts(values: np.ndarray, missing: str) -> list[str]:
    """Each value as the hover writes it (4 decimals), or :data:`~attention_viz.figures.plotting.MISSING_TEXT`
    and the reason ``missing`` where it is NaN."""
    absent = plotting.MISSING_TEXT + (f" ({missing})" if missing else "")
    return [f"{value:.4f}" if np.isfinite(value) else absent for value in values]


_SHORT_TAGS = {"previous-token": "prev", "next-token": "next", "[CLS]": "CLS", "[SEP]": "SEP", "punctuation": "punct"}


def _short_tags(tags: str) -> str:
    """Tags shortened for the text beside a mark (the hover and the table have them in full)."""
    return "+".join(_SHORT_TAGS.get(tag, tag) for tag in tags.split(", ") if tag)


def head_overview(
    grid: np.ndarray,
    tags: Sequence[str],
    title: str,
    colorbar_title: str,
    axis_titles: tuple[str, str] = ("head", "layer"),
    importance: np.ndarray | None = None,
    selected: tuple[int, int] | None = None,
    zrange: tuple[float, float] | None = None,
    tag_labels: Sequence[str] | None = None,
    missing: str = "",
) -> go.Figure:
    """Every head as a square mark at (head, layer), coloured by a statistic, sized by importance.

    Args:
        grid: ``(layers, heads)`` the statistic; NaN where it is missing (not applicable, nothing to measure).
        tags: ``layers * heads`` tag strings, layer-major (shown on the mark's hover and as text).
        title, colorbar_title: texts.
        axis_titles: x and y axis titles.
        importance: ``(layers, heads)`` head importance; the mark's area is proportional to it (a NaN
            head gets the plain size). ``None``: all marks the same size.
        selected: ``(layer, head)`` outlined in red.
        zrange: the colour range; ``None`` fits it to the values.
        tag_labels: ``layers * heads`` texts beside the marks, below them in even columns and above them in
            odd ones (e.g. short tags in the user's language);
            ``None``: ``tags`` shortened ("previous-token" → "prev").
        missing: why a NaN head has no value (in the user's language), said in its hover after
            :data:`~attention_viz.figures.plotting.MISSING_TEXT`.

    Returns:
        A figure with one scatter trace, selectable by click: ``customdata`` = ``[layer, head, tags, value]``
        with the value as the hover writes it (4 decimals, or "—" and ``missing``). ``marker.color`` is the
        statistic, a float array; where a head's value is missing it is a list with
        :data:`~attention_viz.figures.plotting.MISSING_COLOUR` (grey, outside the colour scale) in its place.
    """
    grid = np.asarray(grid, dtype=np.float64)
    layers, heads = grid.shape
    layer_of, head_of = np.repeat(np.arange(layers), heads), np.tile(np.arange(heads), layers)  # layer-major
    values = grid.reshape(-1).copy()  # (layers * heads,), layer-major; the figure keeps its own
    finite = values[np.isfinite(values)]
    zmin, zmax = zrange or (
        (float(finite.min()), float(max(finite.max(), finite.min() + 1e-12))) if finite.size else (0, 1)
    )
    sizes = _mark_sizes(importance, layers * heads)
    short = [_short_tags(tag) for tag in tags] if tag_labels is None else list(tag_labels)
    trace = {
        "type": "scatter",
        "x": head_of,
        "y": layer_of,
        "mode": "markers+text",
        "text": short,
        # Neighbouring heads' tags on alternate sides of their marks: 12 heads across 450 px leave 37 px each,
        # and two "broad" side by side ran together ("broadbroad") at 800 x 600.
        "textposition": ["bottom center" if head % 2 == 0 else "top center" for head in head_of],
        "textfont": {"size": 10, "color": "#444"},
        "customdata": [
            [int(lay), int(hd), tag, shown]
            for lay, hd, tag, shown in zip(layer_of, head_of, tags, _value_texts(values, missing), strict=True)
        ],
        "hovertemplate": (
            f"{axis_titles[1]} %{{customdata[0]}}, {axis_titles[0]} %{{customdata[1]}}<br>"
            f"{colorbar_title}: %{{customdata[3]}}<br>%{{customdata[2]}}<extra></extra>"
        ),
        "marker": {
            "symbol": "square",
            "size": sizes,
            # plotly.js draws a colour string in a numeric colour array as that colour, outside the scale
            # (makeColorScaleFunc, src/components/colorscale/helpers.js); tests/test_browser.py checks the pixels
            "color": values
            if finite.size == values.size
            else [float(v) if np.isfinite(v) else plotting.MISSING_COLOUR for v in values],
            "colorscale": plotting.colorscale(OVERVIEW_COLORSCALE),
            "cmin": zmin,
            "cmax": zmax,
            "line": _outline(layer_of, head_of, selected, ("rgba(0,0,0,0.3)", 0.5)),
            "colorbar": {"title": {"text": colorbar_title, "side": "right"}, "thickness": 12},
        },
    }
    layout = {
        "title": {"text": title, "x": 0.5, "xanchor": "center", "font": {"size": 14}},
        "height": int(np.clip(120 + 62 * layers, 320, 760)),
        "margin": {"l": 10, "r": 10, "t": 48, "b": 10},
        "xaxis": {"title": {"text": axis_titles[0]}, "dtick": 1, "range": [-0.6, heads - 0.4], "zeroline": False},
        "yaxis": {"title": {"text": axis_titles[1]}, "dtick": 1, "range": [layers - 0.4, -0.6], "zeroline": False},
        "clickmode": "event+select",
        "dragmode": False,
    }
    return plotting.figure([trace], layout)


def _outline(layer_of: np.ndarray, head_of: np.ndarray, selected, plain: tuple[str, float]) -> dict:
    """Marker outlines: the selected ``(layer, head)`` red and 3 px wide, every other ``plain`` (colour, width)."""
    chosen = [(lay, hd) == selected for lay, hd in zip(layer_of, head_of, strict=True)]
    return {
        "color": ["red" if is_selected else plain[0] for is_selected in chosen],
        "width": [3 if is_selected else plain[1] for is_selected in chosen],
    }


SIMILARITY_HEIGHT = 560  # px
SIMILARITY_PLOT_PX = 480  # the plot area's smaller side at that height in a narrow column (800 x 600)
LABEL_FONT = 10  # px
SELECTED_FONT = 12  # px: the head in focus
MARKER_PX = 13


def _room_labels(positions: np.ndarray, texts: list[str], first: int | None, plot_px: float) -> list[bool]:
    """Which points' labels fit above them without covering another label or another point's marker.

    Greedy, the selected point first then in order: a label (``len * 0.62 * font`` wide, one line high,
    centred above its marker, with 2 px to spare on every side; the selected one in its larger font) is kept
    when its box overlaps no kept label and no other marker.
    ``plot_px``: pixels the data's larger extent spans (the axes keep one scale, ``scaleanchor``).
    """
    extent = np.ptp(positions, axis=0).max() if len(positions) > 1 else 1.0
    px = positions * (plot_px / max(float(extent), 1e-12))  # data units to pixels; y up
    half_marker = MARKER_PX / 2
    boxes: list[tuple[float, float, float, float]] = []
    keep = [False] * len(texts)
    order = ([first] if first is not None else []) + [i for i in range(len(texts)) if i != first]
    for i in order:
        font = SELECTED_FONT if i == first else LABEL_FONT
        width, height = len(texts[i]) * 0.62 * font + 4, font * 1.2 + 4
        x, y = px[i]
        box = (x - width / 2, x + width / 2, y + half_marker - 2, y + half_marker - 2 + height)  # l, r, bottom, top
        clear_of_labels = all(box[1] < b[0] or box[0] > b[1] or box[3] < b[2] or box[2] > b[3] for b in boxes)
        others = np.delete(px, i, axis=0)
        near = (
            (others[:, 0] + half_marker > box[0])
            & (others[:, 0] - half_marker < box[1])
            & (others[:, 1] + half_marker > box[2])
            & (others[:, 1] - half_marker < box[3])
        )
        if i == first or (clear_of_labels and not near.any()):
            keep[i] = True
            boxes.append(box)
    return keep


def group_outline(points: np.ndarray) -> str:
    """An SVG path around ``points`` ``(n, 2)``: their convex hull, closed (``M x y L x y ... Z``); the segment
    between them for two points (or for points on one line)."""
    unique = sorted({(float(x), float(y)) for x, y in np.asarray(points, dtype=np.float64)})

    def cross(o, a, b) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def chain(ordered):
        kept: list[tuple[float, float]] = []
        for point in ordered:
            while len(kept) >= 2 and cross(kept[-2], kept[-1], point) <= 0:
                kept.pop()
            kept.append(point)
        return kept

    hull = unique if len(unique) < 3 else chain(unique)[:-1] + chain(unique[::-1])[:-1]  # Andrew's monotone chain
    path = "M " + " L ".join(f"{x!r} {y!r}" for x, y in hull)
    return path + " Z" if len(hull) > 2 else path


def _group_outlines(positions: np.ndarray, num_heads: int, size: int, selected: tuple[int, int]) -> list[dict]:
    """The outlines of the key/value groups of the selected head's layer (see :func:`similarity_map`)."""
    layer, head = selected
    shapes = []
    for group in range(num_heads // size):
        first = layer * num_heads + group * size
        own = group == head // size
        shapes.append(
            {
                "type": "path",
                "path": group_outline(positions[first : first + size]),
                "xref": "x",
                "yref": "y",
                "line": {
                    "color": "#444" if own else "#888",
                    "width": 1.5 if own else 1,
                    "dash": "solid" if own else "dot",
                },
                "layer": "below",
                "name": f"kv {layer}·{group}",
            }
        )
    return shapes


def similarity_map(
    positions: np.ndarray,
    num_heads: int,
    title: str,
    layer_title: str,
    head_title: str,
    selected=None,
    heads_per_group: int = 1,
) -> go.Figure:
    """Heads placed by MDS of their JS divergence (Clark et al. 2019, fig. 6), coloured by layer.

    Args:
        positions: ``(layers * heads, 2)`` from :func:`attention_viz.analysis.mds_layout`, layer-major.
        num_heads: heads per layer.
        title, layer_title, head_title: texts.
        selected: ``(layer, head)`` outlined in red and always labelled "layer·head" (in red).
        heads_per_group: query heads per key/value head (grouped-query attention): the hover names each head's
            key/value head, and in the selected head's layer the heads that share one are outlined together
            (a layout shape per group, ``name`` ``"kv L·g"``, along their convex hull: :func:`group_outline`;
            the selected head's group solid, the others dotted). Every layer's groups at once would cross the
            whole map. 1: no groups.

    Returns:
        A figure with one scatter trace (``customdata`` = ``[layer, head]``), selectable by click. Every
        head is labelled "layer·head" where the label has room (it would cover no other label or marker in
        a 480 px plot); in the dense clusters only the hover names a head.
    """
    positions = np.asarray(positions, dtype=np.float64)
    index = np.arange(positions.shape[0])
    layer_of, head_of = index // num_heads, index % num_heads
    texts = [f"{lay}·{hd}" for lay, hd in zip(layer_of, head_of, strict=True)]
    chosen = [(lay, hd) == selected for lay, hd in zip(layer_of, head_of, strict=True)]
    first = chosen.index(True) if any(chosen) else None
    room = _room_labels(positions, texts, first, SIMILARITY_PLOT_PX)
    trace = {
        "type": "scatter",
        "x": positions[:, 0],
        "y": positions[:, 1],
        "mode": "markers+text",
        "text": [text if fits else "" for text, fits in zip(texts, room, strict=True)],
        "textposition": "top center",
        "textfont": {
            "size": [SELECTED_FONT if is_selected else LABEL_FONT for is_selected in chosen],
            "color": ["red" if is_selected else "#444" for is_selected in chosen],
        },
        "customdata": np.stack([layer_of, head_of, *([head_of // heads_per_group] if heads_per_group > 1 else [])], 1),
        "hovertemplate": f"{layer_title} %{{customdata[0]}}, {head_title} %{{customdata[1]}}"
        + (" (kv %{customdata[2]})" if heads_per_group > 1 else "")
        + "<extra></extra>",
        "marker": {
            "size": MARKER_PX,
            "color": layer_of,
            "colorscale": plotting.colorscale("Turbo"),
            "cmin": 0,
            "cmax": max(int(layer_of.max()), 1),
            "colorbar": {"title": {"text": layer_title, "side": "right"}, "thickness": 12, "dtick": 1},
            "line": _outline(layer_of, head_of, selected, ("white", 1)),
        },
    }
    layout = {
        "title": {"text": title, "x": 0.5, "xanchor": "center", "font": {"size": 14}},
        "height": SIMILARITY_HEIGHT,
        "margin": {"l": 10, "r": 10, "t": 48, "b": 10},
        "xaxis": {"showticklabels": False, "zeroline": False, "title": {"text": ""}},
        "yaxis": {"showticklabels": False, "zeroline": False, "title": {"text": ""}, "scaleanchor": "x"},
        "clickmode": "event+select",
        "dragmode": False,
    }
    if heads_per_group > 1 and selected is not None:
        layout["shapes"] = _group_outlines(positions, num_heads, heads_per_group, selected)
    return plotting.figure([trace], layout)
