"""Every head at once: thumbnails of pooled attention, one per layer and head, each clickable."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attention_viz.figures import plotting
from attention_viz.figures.heatmaps import ATTENTION_COLORSCALE, shared_range

THUMBNAIL_SIZE = 48
SPACING = 0.012  # the gap between thumbnails, in fractions of the plot's width (5 px at 800 × 600, 10 at 1280 × 720)
ROW_TITLE_ROOM = 0.98  # the thumbnails end here; the layer titles (L0, L1, ...) sit to the right
MAX_THUMBNAIL = 0.2  # the most of the plot's width one thumbnail takes
TITLE_FONT = 11  # px: the head and layer titles (H0, L0, ...) on a screen; a page scales it for a projector
MARGIN = {"l": 10, "r": 40, "t": 40, "b": 10}  # px around the grid: the head titles above, the colour bar right
NOMINAL_WIDTH = 800  # px: the width the figure's own height is for (a chart drawn where CSS does not size it)


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


def grid_height(layers: int, heads: int) -> tuple[float, float]:
    """The grid's height for a width ``w`` (px) as ``(ratio, fixed)``: ``height = ratio * w + fixed``.

    Square thumbnails with the same gap between rows as between columns (:data:`SPACING`) need a plot as tall
    as ``ratio`` times its width; the margins (:data:`MARGIN`) add the rest. A page sizes the chart's box by
    it (the server does not know the width); with a fixed height, narrow screens had thumbnails touching
    side by side and far apart from row to row.
    """
    ratio = layers * _domain_size(heads) + (layers - 1) * SPACING
    return ratio, MARGIN["t"] + MARGIN["b"] - ratio * (MARGIN["l"] + MARGIN["r"])


def _domain_size(heads: int) -> float:
    """A thumbnail's side in fractions of the plot's width: a row of ``heads`` fills the width up to the layer
    titles, each at most :data:`MAX_THUMBNAIL` (a model of one or two heads)."""
    return min(MAX_THUMBNAIL, (ROW_TITLE_ROOM - SPACING * (heads - 1)) / heads)


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

    Long inputs are pooled to ``thumbnail_size`` tokens a side (:func:`pool_attention`), so the figure
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
        A ``plotly.graph_objects.Figure`` with ``layers * heads`` heatmap traces sharing one colour axis
        (trace ``layer * heads + head``), then one scatter trace of invisible markers, one per thumbnail
        with ``customdata = (layer, head)``, on an axis pair over the whole grid: Streamlit reports a
        click on a scatter point as a selection (it reports none for heatmaps), so a click opens a head.
        Its height is :func:`grid_height` at :data:`NOMINAL_WIDTH`; the thumbnails are square with equal gaps
        at a width ``w`` when the chart is ``grid_height`` tall there.
    """
    pooled, starts = pool_attention(weights, thumbnail_size)  # (L, H, m, m)
    layers, heads = pooled.shape[:2]
    pooled_note = " (pooled)" if len(starts) < weights.shape[-1] else ""
    ratio, fixed = grid_height(layers, heads)
    row_end = heads * _domain_size(heads) + (heads - 1) * SPACING  # the layer titles sit to the right
    x_domains = _domains(heads, SPACING, row_end)  # left to right
    y_domains = _domains(layers, SPACING / ratio, 1.0)[::-1]  # layer 0 at the top; the same gap in px
    data, layout = [], {}
    thumbnail_axis = {
        "showticklabels": False,
        "ticks": "",
        "showgrid": False,
        "zeroline": False,
        "fixedrange": True,
        "constrain": "domain",  # square thumbnails at any width, centred in their cells
    }
    for layer in range(layers):
        for head in range(heads):
            n = layer * heads + head + 1
            suffix = "" if n == 1 else str(n)
            data.append(
                {
                    "type": "heatmap",
                    "z": pooled[layer, head],
                    "x": starts,
                    "y": starts,
                    "coloraxis": "coloraxis",
                    "hovertemplate": f"layer {layer}, head {head}{pooled_note}<br>"
                    "query %{y} → key %{x}: %{z:.3f}<extra></extra>",
                    "xaxis": f"x{suffix}",
                    "yaxis": f"y{suffix}",
                }
            )
            layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": x_domains[head], **thumbnail_axis}
            layout[f"yaxis{suffix}"] = {
                "anchor": f"x{suffix}",
                "domain": y_domains[layer],
                **thumbnail_axis,
                "autorange": "reversed",
                "scaleanchor": f"x{suffix}",
                "scaleratio": 1,
            }
    title = {"font": {"size": title_font}, "showarrow": False, "xref": "paper", "yref": "paper"}
    annotations = [
        {**title, "text": f"H{head}", "x": sum(x_domains[head]) / 2, "xanchor": "center", "y": 1.0, "yanchor": "bottom"}
        for head in range(heads)
    ] + [
        {
            **title,
            "text": f"L{layer}",
            "textangle": 90,
            "x": row_end,
            "xanchor": "left",
            "y": sum(y_domains[layer]) / 2,
            "yanchor": "middle",
        }
        for layer in range(layers)
    ]
    shapes = []
    if heads_per_group > 1:
        annotations += _group_labels(heads, heads_per_group, x_domains, title_font)
        shapes += _group_separators(heads, heads_per_group, x_domains)
    if selected is not None:
        layer, head = selected
        n = layer * heads + head + 1
        suffix = "" if n == 1 else str(n)
        shapes.append(
            {
                "type": "rect",
                "xref": f"x{suffix} domain",
                "yref": f"y{suffix} domain",
                "x0": 0,
                "y0": 0,
                "x1": 1,
                "y1": 1,
                "line": {"color": "#d62728", "width": 3},
            }
        )
    data.append(_click_targets(layers, heads, x_domains, y_domains))
    n = layers * heads + 1  # the click targets' axis pair, after the thumbnails' own
    hidden = {"visible": False, "fixedrange": True, "domain": [0, 1], "range": [0, 1]}
    layout[f"xaxis{n}"] = {**hidden, "anchor": f"y{n}"}
    layout[f"yaxis{n}"] = {**hidden, "anchor": f"x{n}"}
    zmin, zmax = shared_range(pooled) if fit_range else (0.0, 1.0)
    layout.update(
        annotations=annotations,
        coloraxis={
            "colorscale": plotting.colorscale(colorscale),
            "cmin": zmin,
            "cmax": zmax,
            "colorbar": {"thickness": 12},
        },
        height=round(ratio * NOMINAL_WIDTH + fixed),
        margin=dict(MARGIN),
        plot_bgcolor="rgba(0,0,0,0)",  # the click targets' subplot lies over the thumbnails: keep it see-through
        clickmode="event+select",
    )
    if shapes:
        layout["shapes"] = shapes
    return plotting.figure(data, layout)


GROUP_LINE = {"color": "#555", "width": 1.5}  # between the columns of two key/value groups, in the gap


def _group_labels(heads: int, size: int, x_domains: list[list[float]], title_font: int) -> list[dict]:
    """ "kv 0", "kv 1", ... centred over each group's heads, a line above the head titles (H0, H1, ...)."""
    return [
        {
            "font": {"size": title_font},
            "showarrow": False,
            "xref": "paper",
            "yref": "paper",
            "text": f"kv {group}",
            "x": (x_domains[group * size][0] + x_domains[group * size + size - 1][1]) / 2,
            "xanchor": "center",
            "y": 1.0,
            "yanchor": "bottom",
            "yshift": round(title_font * 1.4),  # clear of the head titles below it
            "name": "kv group",
        }
        for group in range(heads // size)
    ]


def _group_separators(heads: int, size: int, x_domains: list[list[float]]) -> list[dict]:
    """A thin vertical line in the middle of the gap before each group's first head but the first, top to
    bottom of the grid."""
    return [
        {
            "type": "line",
            "xref": "paper",
            "yref": "paper",
            "x0": (x_domains[head - 1][1] + x_domains[head][0]) / 2,
            "x1": (x_domains[head - 1][1] + x_domains[head][0]) / 2,
            "y0": 0,
            "y1": 1,
            "line": dict(GROUP_LINE),
            "name": "kv group",
        }
        for head in range(size, heads, size)
    ]


def _domains(count: int, spacing: float, end: float) -> list[list[float]]:
    """``count`` equal cells of ``[0, end]`` (paper fractions) with ``spacing`` between them, as
    ``plotly.subplots.make_subplots`` lays them out."""
    width = (end - spacing * (count - 1)) / count
    return [[i * (width + spacing), i * (width + spacing) + width] for i in range(count)]


def _click_targets(layers: int, heads: int, x_domains: list[list[float]], y_domains: list[list[float]]) -> dict:
    """One invisible square marker at the centre of every thumbnail, on axes spanning the grid.

    The markers sit at the centres of the thumbnails' own domains (in paper fractions), so they stay on
    the thumbnails whatever the spacing; square thumbnails shrink about those centres.
    """
    n = layers * heads + 1
    layer, head = np.divmod(np.arange(layers * heads), heads)
    x_centres = np.array([sum(domain) / 2 for domain in x_domains])
    y_centres = np.array([sum(domain) / 2 for domain in y_domains])
    return {
        "type": "scatter",
        "x": x_centres[head],
        "y": y_centres[layer],
        "customdata": np.stack([layer, head], axis=-1),
        "mode": "markers",
        "marker": {"symbol": "square", "size": 40, "opacity": 0},
        "selected": {"marker": {"opacity": 0}},
        "unselected": {"marker": {"opacity": 0}},
        "hovertemplate": "layer %{customdata[0]}, head %{customdata[1]}<extra></extra>",
        "xaxis": f"x{n}",
        "yaxis": f"y{n}",
        "showlegend": False,
    }
