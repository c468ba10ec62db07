"""Views around the map: an overview of the whole matrix, a token's attention as bars, bertviz's lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from attention_viz.figures import plotting
from attention_viz.figures.grid import pool_attention
from attention_viz.figures.heatmaps import ATTENTION_COLORSCALE, FOCUS_COLOR, unique_labels
from attention_viz.figures.layout import NORMAL, MapStyle, isolate, plotly_text, shorten_label

LINE_COLOR = "#1f6feb"
BAR_COLORS = ("#1f6feb", "#ff7f0e")


def overview(
    weights: np.ndarray,
    rows: slice,
    columns: slice,
    style: MapStyle = NORMAL,
    zrange: tuple[float, float] = (0.0, 1.0),
    colorscale: str = ATTENTION_COLORSCALE,
) -> go.Figure:
    """The whole ``(query, key)`` matrix, small, with the window the map shows outlined.

    Long inputs are pooled to :data:`THUMBNAIL_SIZE` bins a side (:func:`pool_attention`, rows still sum
    to 1); the axes count tokens, so the outline is at the window's token indices.

    Args:
        weights: ``(query, key)`` attention of one head.
        rows, columns: the queries and keys the map shows (``slice``).
        style: its ``overview_side`` is the plot's side in px.
        zrange, colorscale: as the map's.

    Returns:
        A ``plotly.graph_objects.Figure``: one heatmap trace, one rectangle shape (the window).
    """
    weights = np.asarray(weights, dtype=np.float32)
    pooled, starts = pool_attention(weights, 48)  # (m, m) bins, starts: first token of each
    q, k = weights.shape
    heatmap = {
        "type": "heatmap",
        "z": pooled,
        "x": starts,
        "y": starts,
        "zmin": zrange[0],
        "zmax": zrange[1],
        "colorscale": plotting.colorscale(colorscale),
        "showscale": False,
        "hovertemplate": "query %{y} → key %{x}: %{z:.3f}<extra></extra>",
    }
    window = {
        "type": "rect",
        "x0": columns.start - 0.5,
        "x1": columns.stop - 0.5,
        "y0": rows.start - 0.5,
        "y1": rows.stop - 0.5,
        "line": {"color": FOCUS_COLOR, "width": 2},
    }
    font = {"size": max(10, style.font_size - 2)}
    layout = {
        "shapes": [window],
        "width": style.overview_side + 50,
        "height": style.overview_side + 40,
        "margin": {"l": 40, "r": 10, "t": 10, "b": 30},
        "xaxis": {"range": [-0.5, k - 0.5], "tickfont": font, "showgrid": False, "fixedrange": True, "nticks": 4},
        "yaxis": {
            "range": [q - 0.5, -0.5],
            "tickfont": font,
            "showgrid": False,
            "fixedrange": True,
            "nticks": 4,
            "scaleanchor": "x",
        },
    }
    return plotting.figure([heatmap], layout)


def focus_bars(
    rows: Mapping[str, np.ndarray],
    key_labels: Sequence[str],
    title: str = "",
    style: MapStyle = NORMAL,
    key_start: int = 0,
) -> go.Figure:
    """One query's attention over the keys as grouped bars, one series per source.

    Args:
        rows: ``{name: (key,) weights}``, e.g. ``{"pretrained": w[i], "from scratch": v[i]}``.
        key_labels: one label per key (shortened on the axis, full in the hover).
        title: figure title.
        style: font size.
        key_start: the token index of the first key, for the hover.

    Returns:
        A ``plotly.graph_objects.Figure`` with one bar trace per entry of ``rows``, in order.
    """
    x = unique_labels(key_labels)
    data = [
        {
            "type": "bar",
            "x": x,
            "y": np.asarray(row, dtype=np.float32),
            "name": name,
            "marker": {"color": color},
            "customdata": np.arange(len(x)) + key_start,
            "hovertemplate": f"{name}<br>key %{{customdata}} %{{x}}: %{{y:.4f}}<extra></extra>",
        }
        for (name, row), color in zip(rows.items(), BAR_COLORS * len(rows), strict=False)
    ]
    font = {"size": style.font_size}
    longest = max((len(shorten_label(label)) for label in key_labels), default=1)
    layout = {
        "title": {"text": title, "x": 0, "xref": "container", "xanchor": "left", "font": {"size": style.font_size + 2}},
        "barmode": "group",
        "height": style.side // 2 + int(0.62 * style.font_size * longest) + 60,
        "margin": {"l": 10, "r": 10, "t": 40 + style.font_size, "b": 10},
        "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom", "font": font},
        "xaxis": {
            "type": "category",
            "tickmode": "array",
            "tickvals": x,
            "ticktext": [isolate(shorten_label(label)) for label in key_labels],
            "tickangle": -90,
            "tickfont": font,
            "automargin": True,
        },
        "yaxis": {"title": {"text": "weight", "font": font}, "tickfont": font, "range": [0, 1], "automargin": True},
        "dragmode": False,
    }
    return plotting.figure(data, layout)


def line_view(
    weights: np.ndarray,
    labels: Sequence[str],
    key_labels: Sequence[str] | None = None,
    title: str = "",
    style: MapStyle = NORMAL,
    query_start: int = 0,
    key_start: int = 0,
    focus: int | None = None,
) -> go.Figure:
    """bertviz's head view with plotly: queries on the left, keys on the right, a line per query → key.

    A line's opacity is its weight (Vig 2019, bertviz); with ``focus`` only that query's lines are drawn.
    Give it a window of the matrix (as the map has) so a long input never draws 512 × 512 lines.

    Args:
        weights: ``(query, key)`` weights in [0, 1].
        labels: one label per query; also the key labels unless ``key_labels``.
        key_labels: one label per key.
        title: figure title.
        style: font size; rows are spaced to keep labels apart.
        query_start, key_start: token index of the first query and key (for the hover).
        focus: the row (in ``weights``) whose lines alone are drawn, or ``None`` for all.

    Returns:
        A ``plotly.graph_objects.Figure``: two text traces (queries, keys) and one line shape per
        drawn query → key pair, in row-major order, with ``opacity`` equal to the weight.
    """
    weights = np.asarray(weights, dtype=np.float32)
    keys = labels if key_labels is None else key_labels
    q, k = weights.shape
    font = {"size": style.font_size}
    data = []
    for side, names, start, anchor in ((0, labels, query_start, "left"), (1, keys, key_start, "right")):
        index = np.arange(len(names))
        highlighted = [focus is not None and side == 0 and i == focus for i in index]
        data.append(
            {
                "type": "scatter",
                "x": np.full(len(names), side),
                "y": index,
                "mode": "text",
                "text": [isolate(shorten_label(name)) for name in names],
                "textposition": f"middle {anchor}",
                "textfont": {"size": style.font_size, "color": [FOCUS_COLOR if h else "#1b1f24" for h in highlighted]},
                "customdata": np.stack(
                    [index + start, np.array([isolate(plotly_text(n)) for n in names], dtype=object)], axis=-1
                ),
                "hovertemplate": ("query" if side == 0 else "key")
                + " %{customdata[0]}: %{customdata[1]}<extra></extra>",
                "showlegend": False,
            }
        )
    rows = range(q) if focus is None else [focus]
    gap = 0.08  # lines start just beside the labels
    # Only what differs per line is written per line; the rest comes once, from the template's shape
    # defaults, which makes a 24-token window's 576 lines several times cheaper to copy and serialise.
    line = {"type": "line", "x0": gap, "x1": 1 - gap, "line": {"color": LINE_COLOR, "width": 2}, "layer": "below"}
    # str() of a float32 is its shortest exact form: "0.22", not 0.2199999988079071 in the JSON
    shapes = [{"y0": i, "y1": j, "opacity": float(str(weights[i, j]))} for i in rows for j in range(k)]
    spacing = 1.6 * style.font_size
    layout = {
        "title": {"text": title, "x": 0, "xref": "container", "xanchor": "left", "font": {"size": style.font_size + 2}},
        "shapes": shapes,
        "height": int(max(q, k) * spacing) + 80,
        "margin": {"l": 10, "r": 10, "t": 40 + style.font_size, "b": 10},
        "xaxis": {"visible": False, "range": [-0.9, 1.9], "fixedrange": True},
        "yaxis": {"visible": False, "range": [max(q, k) - 0.5, -0.5], "fixedrange": True},
        "font": font,
        "dragmode": False,
    }
    return plotting.figure(data, layout, shape_defaults=line)
