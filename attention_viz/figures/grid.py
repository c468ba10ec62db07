"""Every head at once: thumbnails of pooled attention, one per layer and head, each clickable."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attention_viz.figures import plotting
from attention_viz.figures.heatmaps import ATTENTION_COLORSCALE, shared_range

THUMBNAIL_SIZE = 48
GAP = 0.17  # the gap between thumbnails, in thumbnails (at least one cell): 5 px at 800 × 600, 10 at 1280 × 720
ROW_TITLE_ROOM = 0.98  # the thumbnails end here (a fraction of the plot's width); the layer titles sit to the right
MAX_THUMBNAIL = 0.2  # the most of the plot's width one thumbnail takes (a model of one to four heads)
TITLE_FONT = 11  # px: the head and layer titles (H0, L0, ...) on a screen; a page scales it for a projector
MARGIN = {"l": 10, "r": 40, "t": 40, "b": 10}  # px around the grid: the head titles above, the colour bar right
NOMINAL_WIDTH = 800  # px: the width the figure's own height is for (a chart drawn where CSS does not size it)
GROUP_LINE = {"color": "#555", "width": 1.5}  # between the columns of two key/value groups, in the gap
OUTLINE = {"color": "#d62728", "width": 3}  # around the head in focus


def pool_attention(weights: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Shrink ``(..., t, t)`` attention to at most ``(..., size, size)`` for thumbnails.

    Tokens are cut into ``size`` contiguous bins; a cell is the mean over its query bin of the sum
    over its key bin, so each row is still a distribution that sums to 1.

    Returns:
        ``(pooled, starts)``: pooled float32 ``(..., m, m)`` with ``m = min(t, size)``, and the first
        token index of each bin ``(m,)``.
    """
    weights = np.asarray(weights, dtype=np.float32)
    t = weights.shape[-1]
    if t <= size:
        return weights, np.arange(t)
    starts = np.array([b[0] for b in np.array_split(np.arange(t), size)])
    by_key = np.add.reduceat(weights, starts, axis=-1)  # (..., t, m)
    counts = np.diff(np.append(starts, t)).astype(np.float32)  # (m,)
    pooled = np.add.reduceat(by_key, starts, axis=-2) / counts[:, None]  # (..., m, m)
    return pooled.astype(np.float32), starts


def gap_cells(queries: int, keys: int) -> int:
    """The cells between two thumbnails of ``queries`` by ``keys`` cells (:data:`GAP` of the longer side, at
    least 1): the same between rows as between columns."""
    return max(1, round(GAP * max(queries, keys)))


def grid_height(layers: int, heads: int, queries: int = THUMBNAIL_SIZE, keys: int | None = None) -> tuple[float, float]:
    """The grid's height for a width ``w`` (px) as ``(ratio, fixed)``: ``height = ratio * w + fixed``.

    ``queries``, ``keys``: the input's lengths (a thumbnail has at most :data:`THUMBNAIL_SIZE` cells a side;
    ``keys`` defaults to ``queries``). Square cells, so the same gap between rows as between columns, need a
    plot as tall as ``ratio`` times its width; the margins (:data:`MARGIN`) add the rest. A page sizes the
    chart's box by it (the server does not know the width); with a fixed height, narrow screens had
    thumbnails touching side by side and far apart from row to row.
    """
    rows, columns = min(queries, THUMBNAIL_SIZE), min(queries if keys is None else keys, THUMBNAIL_SIZE)
    gap = gap_cells(rows, columns)
    ratio = _width(heads) * (layers * (rows + gap) - gap) / (heads * (columns + gap) - gap)
    return ratio, MARGIN["t"] + MARGIN["b"] - ratio * (MARGIN["l"] + MARGIN["r"])


def _width(heads: int) -> float:
    """The grid's width in fractions of the plot's: up to the layer titles, each thumbnail at most
    :data:`MAX_THUMBNAIL` (a model of few heads)."""
    return min(ROW_TITLE_ROOM, heads * MAX_THUMBNAIL)


def head_grid(
    weights: np.ndarray,
    thumbnail_size: int = THUMBNAIL_SIZE,
    fit_range: bool = False,
    colorscale: str = ATTENTION_COLORSCALE,
    selected: tuple[int, int] | None = None,
    title_font: int = TITLE_FONT,
    heads_per_group: int = 1,
) -> go.Figure:
    """Every head of every layer as a grid of small heatmaps: layers as rows, heads as columns.

    Drawn as ONE heatmap: the thumbnails are blocks of one matrix, with empty (NaN) cells between them. A
    grid of 72 heatmaps on 72 axis pairs took plotly.js about 13 times as long to draw (benchmarks/README.md,
    #20). Long inputs are pooled to ``thumbnail_size`` tokens a side (:func:`pool_attention`), so the figure
    stays small whatever the input length (benchmark #4 measures its bytes).

    Args:
        weights: ``(layers, heads, query, key)``.
        thumbnail_size: the most rows and columns a thumbnail has.
        fit_range: one colour range fitted to all values instead of the fixed 0-1.
        colorscale: a plotly colour scale name.
        selected: ``(layer, head)`` to outline, or ``None``.
        title_font: the head and layer titles' size (px).
        heads_per_group: query heads per key/value head (grouped-query attention, ``h / h_kv``): above the
            head titles a label names each group's key/value head ("kv 0" over heads 0 to ``g - 1``), and a
            thin vertical line (a layout shape, ``name`` ``"kv group"``) separates one group's column of
            thumbnails from the next. 1: no groups, nothing added.

    Returns:
        A ``plotly.graph_objects.Figure`` with two traces on one axis pair of categories (a row per query
        bin named ``"layer l, query q"``, a column per key bin named ``"head h, key k"``, and the gaps'):
        the heatmap, whose ``meta`` gives ``layers``, ``heads``, ``queries`` and ``keys`` (a thumbnail's rows and
        columns) and ``gap`` (head ``h`` of layer ``l`` is the block from row ``l * (queries + gap)`` and column
        ``h * (keys + gap)``: :func:`thumbnail`), then one scatter trace of invisible markers, one per thumbnail with
        ``customdata = (layer, head)``: Streamlit reports a click on a scatter point as a selection (it
        reports none for heatmaps), so a click opens a head. Its height is :func:`grid_height` at
        :data:`NOMINAL_WIDTH`; the cells are square at any width (``scaleanchor``).
    """
    pooled, starts = pool_attention(weights, thumbnail_size)  # (L, H, m, n): m query bins, n key bins
    layers, heads, queries, keys = pooled.shape
    query_starts = starts if queries == len(starts) else np.arange(queries)  # cross-attention: fewer queries
    gap = gap_cells(queries, keys)
    down, across = queries + gap, keys + gap  # from one thumbnail's first row (column) to the next one's
    blocks = np.full((layers, down, heads, across), np.nan, dtype=np.float32)
    blocks[:, :queries, :, :keys] = pooled.transpose(0, 2, 1, 3)  # (L, query, H, key)
    z = blocks.reshape(layers * down, heads * across)[: layers * down - gap, : heads * across - gap]
    rows = [_name("layer", layer, "query", query_starts, i) for layer in range(layers) for i in range(down)]
    columns = [_name("head", head, "key", starts, i) for head in range(heads) for i in range(across)]
    rows, columns = rows[: len(z)], columns[: z.shape[1]]
    pooled_note = " (pooled)" if len(starts) < weights.shape[-1] else ""
    heatmap = {
        "type": "heatmap",
        "z": z,
        "x": columns,
        "y": rows,
        "coloraxis": "coloraxis",
        "hoverongaps": False,
        "hovertemplate": f"%{{y}} → %{{x}}: %{{z:.3f}}{pooled_note}<extra></extra>",
        "meta": {"layers": layers, "heads": heads, "queries": queries, "keys": keys, "gap": gap},
    }
    title = {"font": {"size": title_font}, "showarrow": False}
    annotations = [
        {**title, "text": f"H{head}", "xref": "x", "x": head * across + (keys - 1) / 2, "xanchor": "center"}
        | {"yref": "paper", "y": 1.0, "yanchor": "bottom"}
        for head in range(heads)
    ] + [
        {**title, "text": f"L{layer}", "textangle": 90, "xref": "x", "x": z.shape[1] - 0.5, "xanchor": "left"}
        | {"yref": "y", "y": layer * down + (queries - 1) / 2, "yanchor": "middle", "xshift": 2}
        for layer in range(layers)
    ]
    shapes = []
    if heads_per_group > 1:
        annotations += _group_labels(heads, heads_per_group, across, keys, title_font)
        shapes += _group_separators(heads, heads_per_group, across, gap, len(z))
    if selected is not None:
        layer, head = selected
        x0, y0 = head * across - 0.5, layer * down - 0.5
        shapes.append({"type": "rect", "x0": x0, "x1": x0 + keys, "y0": y0, "y1": y0 + queries, "line": dict(OUTLINE)})
    axis = {"type": "category", "visible": False, "fixedrange": True, "constrain": "domain", "showgrid": False}
    zmin, zmax = shared_range(pooled) if fit_range else (0.0, 1.0)
    ratio, fixed = grid_height(layers, heads, queries, keys)
    layout = {
        # fixed ranges: the click targets' 40 px markers would pad an automatic one
        "xaxis": {**axis, "domain": [0, _width(heads)], "range": [-0.5, z.shape[1] - 0.5]},
        "yaxis": {**axis, "range": [len(z) - 0.5, -0.5], "scaleanchor": "x", "scaleratio": 1},  # layer 0 on top
        "annotations": annotations,
        "coloraxis": {
            "colorscale": plotting.colorscale(colorscale),
            "cmin": zmin,
            "cmax": zmax,
            "colorbar": {"thickness": 12},
        },
        "height": round(ratio * NOMINAL_WIDTH + fixed),
        "margin": dict(MARGIN),
        "plot_bgcolor": "rgba(0,0,0,0)",  # the gaps show the page
        "clickmode": "event+select",
    }
    if shapes:
        layout["shapes"] = shapes
    targets = _click_targets(layers, heads, columns, rows, (down, across), (queries, keys))
    return plotting.figure([heatmap, targets], layout)


def _name(what: str, index: int, token: str, starts: np.ndarray, i: int) -> str:
    """A row's or a column's category: ``"layer 2, query 5"`` (the query bin's first token), or for a cell of
    the gap after the block, a name of its own that no hover shows (``"layer 2 ·1"``)."""
    return f"{what} {index}, {token} {starts[i]}" if i < len(starts) else f"{what} {index} ·{i - len(starts) + 1}"


def thumbnail(figure, layer: int, head: int) -> np.ndarray:
    """Head ``head`` of layer ``layer`` as :func:`head_grid` drew it (its pooled ``(queries, keys)`` block).

    ``figure``: the figure, or its plotly JSON as a dict (``z`` may then be plotly's typed-array form: pass the
    decoded array as ``figure["data"][0]["z"]``)."""
    trace = figure["data"][0] if isinstance(figure, dict) else figure.data[0]
    meta, z = trace["meta"], np.asarray(trace["z"], dtype=np.float32)
    top, left = layer * (meta["queries"] + meta["gap"]), head * (meta["keys"] + meta["gap"])
    return z[top : top + meta["queries"], left : left + meta["keys"]]


def _group_labels(heads: int, size: int, step: int, keys: int, title_font: int) -> list[dict]:
    """ "kv 0", "kv 1", ... centred over each group's heads, a line above the head titles (H0, H1, ...)."""
    return [
        {
            "font": {"size": title_font},
            "showarrow": False,
            "xref": "x",
            "yref": "paper",
            "text": f"kv {group}",
            "x": (group * size * step + (group * size + size - 1) * step + keys - 1) / 2,
            "xanchor": "center",
            "y": 1.0,
            "yanchor": "bottom",
            "yshift": round(title_font * 1.4),  # clear of the head titles below it
            "name": "kv group",
        }
        for group in range(heads // size)
    ]


def _group_separators(heads: int, size: int, step: int, gap: int, rows: int) -> list[dict]:
    """A thin vertical line in the middle of the gap before each group's first head but the first, top to
    bottom of the grid."""
    return [
        {
            "type": "line",
            "x0": head * step - gap / 2 - 0.5,
            "x1": head * step - gap / 2 - 0.5,
            "y0": -0.5,
            "y1": rows - 0.5,
            "line": dict(GROUP_LINE),
            "name": "kv group",
        }
        for head in range(size, heads, size)
    ]


def _click_targets(layers: int, heads: int, columns: list[str], rows: list[str], steps: tuple, sides: tuple) -> dict:
    """One invisible square marker at the middle of every thumbnail (point ``layer * heads + head``), on the
    heatmap's categories: the row and the column at the thumbnail's centre. ``steps``: rows and columns from
    one thumbnail to the next; ``sides``: a thumbnail's rows and columns."""
    layer, head = np.divmod(np.arange(layers * heads), heads)
    (down, across), (queries, keys) = steps, sides
    return {
        "type": "scatter",
        "x": [columns[h * across + keys // 2] for h in head],
        "y": [rows[row * down + queries // 2] for row in layer],
        "customdata": np.stack([layer, head], axis=-1),
        "mode": "markers",
        "marker": {"symbol": "square", "size": 40, "opacity": 0},
        "selected": {"marker": {"opacity": 0}},
        "unselected": {"marker": {"opacity": 0}},
        "hovertemplate": "layer %{customdata[0]}, head %{customdata[1]}<extra></extra>",
        "showlegend": False,
    }
