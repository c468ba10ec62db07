"""Every head at once: thumbnails of pooled attention, one per layer and head, each clickable."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attention_viz.figures.heatmaps import ATTENTION_COLORSCALE, shared_range

THUMBNAIL_SIZE = 48


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


def head_grid(
    weights: np.ndarray,
    thumbnail_size: int = THUMBNAIL_SIZE,
    fit_range: bool = False,
    colorscale: str = ATTENTION_COLORSCALE,
    selected: tuple[int, int] | None = None,
) -> go.Figure:
    """Every head of every layer as a grid of small heatmaps: layers as rows, heads as columns.

    Long inputs are pooled to ``thumbnail_size`` tokens a side (:func:`pool_attention`), so the figure
    stays small: about 1 MB of JSON for 6 x 12 heads, whatever the input length.

    Args:
        weights: ``(layers, heads, query, key)``.
        thumbnail_size: the most rows and columns a thumbnail has.
        fit_range: one colour range fitted to all values instead of the fixed 0-1.
        colorscale: a plotly colour scale name.
        selected: ``(layer, head)`` to outline, or ``None``.

    Returns:
        A ``plotly.graph_objects.Figure`` with ``layers * heads`` heatmap traces sharing one colour axis
        (trace ``layer * heads + head``), then one scatter trace of invisible markers, one per thumbnail
        with ``customdata = (layer, head)``, on an axis pair over the whole grid: Streamlit reports a
        click on a scatter point as a selection (it reports none for heatmaps), so a click opens a head.
    """
    pooled, starts = pool_attention(weights, thumbnail_size)  # (L, H, m, m)
    layers, heads = pooled.shape[:2]
    figure = make_subplots(
        rows=layers,
        cols=heads,
        horizontal_spacing=0.006,
        vertical_spacing=0.012,
        row_titles=[f"L{layer}" for layer in range(layers)],
        column_titles=[f"H{head}" for head in range(heads)],
    )
    pooled_note = " (pooled)" if len(starts) < weights.shape[-1] else ""
    for layer in range(layers):
        for head in range(heads):
            figure.add_trace(
                go.Heatmap(
                    z=pooled[layer, head],
                    x=starts,
                    y=starts,
                    coloraxis="coloraxis",
                    hovertemplate=f"layer {layer}, head {head}{pooled_note}<br>"
                    "query %{y} → key %{x}: %{z:.3f}<extra></extra>",
                ),
                row=layer + 1,
                col=head + 1,
            )
    if selected is not None:
        layer, head = selected
        figure.add_shape(
            type="rect",
            xref="x domain",
            yref="y domain",
            x0=0,
            y0=0,
            x1=1,
            y1=1,
            row=layer + 1,
            col=head + 1,
            line={"color": "#d62728", "width": 3},
        )
    zmin, zmax = shared_range(pooled) if fit_range else (0.0, 1.0)
    figure.update_xaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, fixedrange=True)
    figure.update_yaxes(
        showticklabels=False, ticks="", showgrid=False, zeroline=False, autorange="reversed", fixedrange=True
    )
    for index in range(1, layers * heads + 1):  # square thumbnails at any width, centred in their cells
        suffix = "" if index == 1 else str(index)
        figure.update_layout(
            {
                f"xaxis{suffix}": {"constrain": "domain"},
                f"yaxis{suffix}": {"scaleanchor": f"x{suffix}", "scaleratio": 1, "constrain": "domain"},
            }
        )
    figure.update_annotations(font={"size": 11})  # "H10" and "H11" apart in 30 px columns
    _add_click_targets(figure, layers, heads)  # after the thumbnails' axis settings: its axes keep their own
    figure.update_layout(
        template="plotly_white",
        coloraxis={"colorscale": colorscale, "cmin": zmin, "cmax": zmax, "colorbar": {"thickness": 12}},
        height=max(320, 90 * layers + 60),
        margin={"l": 10, "r": 40, "t": 40, "b": 10},
        plot_bgcolor="rgba(0,0,0,0)",  # the click targets' subplot lies over the thumbnails: keep it see-through
        clickmode="event+select",
    )
    return figure


def _add_click_targets(figure: go.Figure, layers: int, heads: int) -> None:
    """One invisible square marker at the centre of every thumbnail, on axes spanning the grid.

    The markers sit at the centres of the thumbnails' own domains (in paper fractions), so they stay on
    the thumbnails whatever the spacing; square thumbnails shrink about those centres.
    """
    n = layers * heads + 1  # the axis pair after the thumbnails' own
    layer, head = np.divmod(np.arange(layers * heads), heads)
    x_centres = [sum(figure.layout[f"xaxis{'' if h == 0 else h + 1}"].domain) / 2 for h in range(heads)]
    y_centres = [sum(figure.layout[f"yaxis{'' if r == 0 else r * heads + 1}"].domain) / 2 for r in range(layers)]
    figure.add_trace(
        go.Scatter(
            x=np.array(x_centres)[head],
            y=np.array(y_centres)[layer],
            customdata=np.stack([layer, head], axis=-1),
            mode="markers",
            marker={"symbol": "square", "size": 40, "opacity": 0},
            selected={"marker": {"opacity": 0}},
            unselected={"marker": {"opacity": 0}},
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<extra></extra>",
            xaxis=f"x{n}",
            yaxis=f"y{n}",
            showlegend=False,
        )
    )
    hidden = {"visible": False, "fixedrange": True, "domain": [0, 1], "range": [0, 1]}
    figure.update_layout({f"xaxis{n}": {**hidden, "anchor": f"y{n}"}, f"yaxis{n}": {**hidden, "anchor": f"x{n}"}})
