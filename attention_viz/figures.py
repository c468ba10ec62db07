"""Plotly figures of attention: one head's map, a difference map and a grid of every head.

Figure functions take numpy arrays and strings and return ``plotly.graph_objects.Figure``; they know
nothing of models or of Streamlit, so a notebook gets the same figures as the app.

Conventions (case C13): rows are queries (from), top to bottom in token order; columns are keys (to)
along the x axis; hover reads "query → key: weight"; every token has its own row and column even when
two tokens read the same; cells are square. Data go to plotly as float32 arrays, which plotly encodes
as base64 (about 1.5 MB of JSON for one head at 512 tokens, case C14).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

ATTENTION_COLORSCALE = "Blues"
DIFFERENCE_COLORSCALE = "RdBu_r"
THUMBNAIL_SIZE = 48
ALL_TICKS_UP_TO = 80  # tokens; above this plotly thins the tick labels, every cell still has its row
_INVISIBLE_DIGITS = str.maketrans("01", "\u200b\u200c")  # zero-width space and non-joiner


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Labels made distinct with invisible characters, so plotly gives each token its own row.

    Plotly merges equal category labels ("the" ... "the") into one row. The n-th repeat of a label
    gets n written in binary with zero-width characters (a few characters even at 512 repeats), so
    labels look the same on the axis and in the hover text. Tokenizers drop these characters from
    the input, so a suffixed label cannot collide with a typed one.
    """
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        count = seen.get(label, 0)
        seen[label] = count + 1
        out.append(label + (format(count, "b").translate(_INVISIBLE_DIGITS) if count else ""))
    return out


def _check_square(matrix: np.ndarray, labels: Sequence[str]) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] != len(labels):
        raise ValueError(f"expected a (query, key) matrix for {len(labels)} labels, got shape {matrix.shape}")
    return matrix


def _heatmap(matrix, labels, title, colorscale, hovertemplate, zmin, zmax, zmid=None):
    axis_labels = unique_labels(labels)
    trace = go.Heatmap(
        z=matrix,
        x=axis_labels,
        y=axis_labels,
        colorscale=colorscale,
        zmin=zmin,
        zmax=zmax,
        zmid=zmid,
        hovertemplate=hovertemplate,
        colorbar={"thickness": 12, "len": 0.8, "y": 1, "yanchor": "top"},
    )
    figure = go.Figure(trace)
    n = len(labels)
    ticks = {"tickmode": "linear", "dtick": 1} if n <= ALL_TICKS_UP_TO else {}
    ticks["tickfont"] = {"size": 12 if n <= 24 else 10 if n <= 48 else 8}
    figure.update_layout(
        template="plotly_white",
        title={"text": title, "x": 0.5, "xanchor": "center", "font": {"size": 14}},
        height=int(np.clip(150 + 12 * n, 340, 720)),
        margin={"l": 10, "r": 10, "t": 48, "b": 10},
        xaxis={
            "title": "key (attended to)",
            "type": "category",
            "automargin": True,
            "tickangle": -60,
            "side": "bottom",
            "constrain": "domain",
            **ticks,
        },
        yaxis={
            "title": "query (attending)",
            "type": "category",
            "automargin": True,
            "autorange": "reversed",
            "scaleanchor": "x",
            "scaleratio": 1,
            **ticks,
            "constrain": "domain",
            "constraintoward": "top",
        },
    )
    return figure


def shared_range(*maps: np.ndarray) -> tuple[float, float]:
    """One colour range ``(min, max)`` over all the given maps, so equal colours mean equal weights."""
    low = min(float(np.min(m)) for m in maps)
    high = max(float(np.max(m)) for m in maps)
    return low, max(high, low + 1e-12)


def attention_heatmap(
    weights: np.ndarray,
    labels: Sequence[str],
    title: str = "",
    zrange: tuple[float, float] | None = (0.0, 1.0),
    colorscale: str = ATTENTION_COLORSCALE,
) -> go.Figure:
    """One head's attention as a heatmap.

    Args:
        weights: ``(query, key)`` attention weights (rows sum to 1), e.g. ``result.weights[layer, head]``.
        labels: one label per token (``encoding.labels``), used for both axes.
        title: figure title.
        zrange: the colour range; ``None`` fits it to these values. Give maps that are compared the
            same range (see :func:`shared_range`).
        colorscale: a plotly colour scale name.

    Returns:
        A ``plotly.graph_objects.Figure`` with one heatmap trace.

    Raises:
        ValueError: if ``weights`` is not square with one row per label.
    """
    matrix = _check_square(weights, labels)
    zmin, zmax = shared_range(matrix) if zrange is None else zrange
    hover = "%{y} → %{x}: %{z:.4f}<extra></extra>"
    return _heatmap(matrix, labels, title, colorscale, hover, zmin, zmax)


def difference_heatmap(
    difference: np.ndarray,
    labels: Sequence[str],
    title: str = "",
    fit_range: bool = False,
) -> go.Figure:
    """A difference of two attention maps on a diverging scale centred at 0.

    Args:
        difference: ``(query, key)``, e.g. ``scratch - pretrained``; values in [-1, 1].
        labels: one label per token.
        title: figure title.
        fit_range: range ``±max|difference|`` instead of the fixed ``±1``.

    Returns:
        A ``plotly.graph_objects.Figure``; red where the difference is positive, blue where negative.
    """
    matrix = _check_square(difference, labels)
    bound = float(np.abs(matrix).max()) if fit_range else 1.0
    bound = bound or 1e-12  # an all-zero difference still needs a non-empty range
    hover = "%{y} → %{x}: %{z:+.3g}<extra></extra>"
    return _heatmap(matrix, labels, title, DIFFERENCE_COLORSCALE, hover, -bound, bound, zmid=0.0)


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
        A ``plotly.graph_objects.Figure`` with ``layers * heads`` heatmap traces sharing one colour axis.
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
    figure.update_xaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    figure.update_yaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False, autorange="reversed")
    figure.update_layout(
        template="plotly_white",
        coloraxis={"colorscale": colorscale, "cmin": zmin, "cmax": zmax, "colorbar": {"thickness": 12}},
        height=max(320, 90 * layers + 60),
        margin={"l": 10, "r": 40, "t": 40, "b": 10},
    )
    return figure
