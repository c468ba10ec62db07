"""One head's map and a difference map, sized so every drawn row and column keeps a readable label.

Conventions: rows are queries (from), top to bottom in token order; columns are keys (to)
along the x axis; hover reads "query → key: weight" with the full tokens and their indices; every token
has its own row and column even when two tokens read the same; cells are square. Data go to plotly as
float32 arrays, which plotly encodes as base64 (4 bytes a cell, a third more as text).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict, Unpack

import numpy as np
import plotly.graph_objects as go

from attention_viz.figures import plotting
from attention_viz.figures.layout import NORMAL, MapStyle, isolate, plotly_text, shorten_label, text_width

ATTENTION_COLORSCALE = "Blues"
DIFFERENCE_COLORSCALE = "RdBu_r"
FOCUS_COLOR = "#ff7f0e"
QUERY_TITLE = "query (attending)"  # default axis titles; pages pass them in the user's language
KEY_TITLE = "key (attended to)"
INDEX_HOVER_UP_TO = 128 * 128  # cells; above this the hover leaves out the indices (keep JSON small)
_INVISIBLE_DIGITS = str.maketrans("01", "\u200b\u200c")  # zero-width space and non-joiner
_RIGHT = 10  # the right margin (px)


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Labels as a figure shows them: isolated (:func:`attention_viz.figures.isolate`, so right-to-left
    tokens read right) and made distinct with invisible characters, so plotly gives each token its own row.

    Plotly merges equal category labels ("the" ... "the") into one row. The n-th repeat of a label
    gets n written in binary with zero-width characters (a few characters even at 512 repeats), so
    labels look the same on the axis and in the hover text. Tokenizers drop these characters from
    the input, so a suffixed label cannot collide with a typed one. Labels are written for plotly
    (:func:`~attention_viz.figures.layout.plotly_text`): ``<s>`` shows as ``<s>``;
    :func:`attention_viz.figures.label_text` reads a label back.
    """
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        count = seen.get(label, 0)
        seen[label] = count + 1
        out.append(isolate(plotly_text(label)) + (format(count, "b").translate(_INVISIBLE_DIGITS) if count else ""))
    return out


RANGE_FLOOR = 1e-12  # the least width of a fitted colour range (a constant map still needs a non-empty one)


def head_ranges(*maps: np.ndarray, difference: bool = False, low: float | None = None) -> np.ndarray:
    """Each map's fitted colour range over its last two axes (query, key), shared by all the given maps.

    The one place a colour range is fitted: the map element's per-head ranges (every page's) and
    :func:`shared_range` (the figures').

    Args:
        maps: arrays of one shape ``(..., query, key)``, e.g. ``(layers, heads, query, key)``.
        difference: the maps are differences: a range symmetric about 0, ``±max|value|``.
        low: a fixed lower end (``0.0`` for norms, which start at 0), else the maps' least value.

    Returns:
        float64 ``(..., 2)``: ``[low, high]`` per map, ``high >= low +`` :data:`RANGE_FLOOR`.

    Raises:
        ValueError: no maps, or maps of different shapes.
    """
    if not maps or len({np.shape(m) for m in maps}) != 1:
        raise ValueError(f"expected maps of one shape, got {[np.shape(m) for m in maps]}")
    axes = (-2, -1)
    if difference:
        bound = np.maximum(np.max([np.abs(m).max(axis=axes) for m in maps], axis=0).astype(np.float64), RANGE_FLOOR)
        return np.stack([-bound, bound], axis=-1)
    high = np.max([np.max(m, axis=axes) for m in maps], axis=0).astype(np.float64)
    least = np.min([np.min(m, axis=axes) for m in maps], axis=0).astype(np.float64) if low is None else low
    least = np.broadcast_to(np.asarray(least, dtype=np.float64), high.shape)
    return np.stack([least, np.maximum(high, least + RANGE_FLOOR)], axis=-1)


def shared_range(*maps: np.ndarray) -> tuple[float, float]:
    """One colour range ``(min, max)`` over all the given maps, so equal colours mean equal weights
    (:func:`head_ranges` over every value)."""
    low, high = head_ranges(np.concatenate([np.ravel(m) for m in maps])[None]).tolist()
    return low, high


def _check(matrix: np.ndarray, labels: Sequence[str], key_labels: Sequence[str] | None) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    keys = labels if key_labels is None else key_labels
    if matrix.ndim != 2 or matrix.shape != (len(labels), len(keys)):
        raise ValueError(
            f"expected a (query, key) matrix for {len(labels)} query and {len(keys)} key labels, "
            f"got shape {matrix.shape}"
        )
    return matrix


def label_room(labels: Sequence[str], font_size: int) -> int:
    """Pixels the longest shortened label needs, written in ``font_size`` px (an upper estimate,
    :func:`~attention_viz.figures.layout.text_width`)."""
    widest = max((text_width(shorten_label(label), font_size) for label in labels), default=font_size)
    return int(widest) + 6


def _top(style: MapStyle) -> int:
    """The top margin (px): the title, then the colour bar and its tick labels (room for CJK line heights)."""
    return 3 * style.font_size + 40


def _left(labels: Sequence[str], style: MapStyle) -> int:
    """The left margin (px): the query labels, then the axis title written upwards (a CJK line's height)."""
    return label_room(labels, style.font_size) + 2 * style.font_size + 8


def _bottom(keys: Sequence[str], style: MapStyle) -> int:
    """The bottom margin (px): the key labels written downwards, then the axis title."""
    return label_room(keys, style.font_size) + 2 * style.font_size + 14


def margins(labels: Sequence[str], key_labels: Sequence[str] | None = None, style: MapStyle = NORMAL) -> dict:
    """The margins (px) around a map's square plot, as :func:`attention_heatmap` reserves them: ``{l, r, t, b}``
    for the query labels, the right edge, the title with the colour bar, and the key labels."""
    keys = labels if key_labels is None else key_labels
    return {"l": _left(labels, style), "r": _RIGHT, "t": _top(style), "b": _bottom(keys, style)}


def category_ticks(labels: Sequence[str]) -> dict:
    """A category axis's tick settings for ``labels`` (as :func:`unique_labels` names the rows): one tick
    per label, never thinned by plotly, written shortened (:func:`~attention_viz.figures.layout.shorten_label`)
    where a label is longer than the axis keeps; the hover still shows it whole."""
    short = [shorten_label(label) for label in labels]
    if short == list(labels):
        return {"tickmode": "linear", "tick0": 0, "dtick": 1}
    return {"tickmode": "array", "tickvals": unique_labels(labels), "ticktext": [isolate(s) for s in short]}


def _axis(labels: Sequence[str], title: str, style: MapStyle) -> dict:
    ticks = category_ticks(labels)
    return {
        "title": {"text": title, "font": {"size": style.font_size}},
        "type": "category",
        "automargin": False,  # the margins are reserved (_left, _bottom): no second drawing to measure them
        **ticks,
        "tickfont": {"size": style.font_size},
        "showgrid": False,
        "constrain": "domain",
    }


class MapOptions(TypedDict, total=False):
    """What a map shows besides its values, the keyword arguments :func:`attention_heatmap` and
    :func:`difference_heatmap` share (each optional; the defaults are :func:`_heatmap`'s).

    Attributes:
        key_labels: one label per key column, when the keys are not the queries (default: the query labels).
        style: font and plot size (:func:`attention_viz.figures.map_style`; default ``NORMAL``).
        query_start, key_start: the token index of the first row and column, for the hover (default 0).
        focus: a row (in this matrix) to outline, or ``None`` (default).
        selectable: add invisible markers so a click on a cell is reported as a selection (Streamlit).
        query_title, key_title: the y (query) and x (key) axis titles, e.g. in the user's language.
    """

    key_labels: Sequence[str] | None
    style: MapStyle
    query_start: int
    key_start: int
    focus: int | None
    selectable: bool
    query_title: str
    key_title: str


def _heatmap(
    matrix: np.ndarray,
    labels: Sequence[str],
    title: str,
    colorscale: str,
    value_format: str,
    zrange: tuple[float, float],
    *,
    zmid: float | None = None,
    value_title: str = "",
    key_labels: Sequence[str] | None = None,
    style: MapStyle = NORMAL,
    query_start: int = 0,
    key_start: int = 0,
    focus: int | None = None,
    selectable: bool = False,
    query_title: str = QUERY_TITLE,
    key_title: str = KEY_TITLE,
) -> go.Figure:
    keys = labels if key_labels is None else key_labels
    x, y = unique_labels(keys), unique_labels(labels)
    q, k = matrix.shape
    indexed = q * k <= INDEX_HOVER_UP_TO
    hover = f"%{{y}} → %{{x}}: %{{z:{value_format}}}"
    hover += "<br>query %{customdata[0]} → key %{customdata[1]}<extra></extra>" if indexed else "<extra></extra>"
    indices = None
    if indexed:
        qi, ki = np.meshgrid(np.arange(q) + query_start, np.arange(k) + key_start, indexing="ij")
        indices = np.stack([qi, ki], axis=-1).astype(np.int32)  # (query, key, 2)
    zmin, zmax = zrange
    data = [
        {
            "type": "heatmap",
            "z": matrix,
            "x": x,
            "y": y,
            "colorscale": plotting.colorscale(colorscale),
            "zmin": zmin,
            "zmax": zmax,
            "hovertemplate": hover,
            "colorbar": {  # horizontal, above the map: never taller than it
                "orientation": "h",
                "thickness": 10,
                "lenmode": "pixels",
                "len": min(240, style.side // 2),
                "x": 1,
                "xanchor": "right",
                "y": 1,
                "yanchor": "bottom",
                "ypad": 6,
                "ticklabelposition": "outside top",
                "tickfont": {"size": style.font_size},
                **(
                    {"title": {"text": value_title, "side": "right", "font": {"size": style.font_size}}}
                    if value_title
                    else {}
                ),
            },
        }
    ]
    if indices is not None:
        data[0]["customdata"] = indices
    if zmid is not None:
        data[0]["zmid"] = zmid
    if selectable:
        data[0]["hoverinfo"] = "skip"
    if selectable and indices is not None:
        # Streamlit reports selections of scatter points only: an invisible marker on every cell makes a
        # click on a row choose that query (it also carries the hover, full tokens and indices).
        data.append(
            {
                "type": "scatter",
                "x": np.tile(np.array(x, dtype=object), q),
                "y": np.repeat(np.array(y, dtype=object), k),
                "customdata": np.concatenate([indices, matrix[..., None]], axis=-1).reshape(-1, 3),  # (q * k, 3)
                "mode": "markers",
                "marker": {"symbol": "square", "size": max(4, style.side / max(q, k) * 0.9), "opacity": 0},
                "selected": {"marker": {"opacity": 0}},
                "unselected": {"marker": {"opacity": 0}},
                "hovertemplate": f"%{{y}} → %{{x}}: %{{customdata[2]:{value_format}}}"
                "<br>query %{customdata[0]:.0f} → key %{customdata[1]:.0f}<extra></extra>",
                "showlegend": False,
            }
        )
    shapes = []
    if focus is not None and 0 <= focus < q:
        shapes.append(
            {
                "type": "rect",
                "x0": -0.5,
                "x1": k - 0.5,
                "y0": focus - 0.5,
                "y1": focus + 0.5,
                "line": {"color": FOCUS_COLOR, "width": 3},
            }
        )
    top, bottom = _top(style), _bottom(keys, style)
    height = style.side + top + bottom
    layout = {
        "title": {
            "text": title,
            "x": 0,
            "xref": "container",
            "xanchor": "left",
            "y": 1,  # above the plot and its colour bar, the margin grown to fit it
            "yref": "paper",
            "yanchor": "bottom",
            "pad": {"l": 8, "b": style.font_size + 28},
            "font": {"size": style.font_size + 4},
        },
        "height": height,
        "margin": {"l": _left(labels, style), "r": _RIGHT, "t": top, "b": bottom, "autoexpand": True},
        # fixed ranges: the click targets' marker size must not pad one axis more than the other
        "xaxis": {**_axis(keys, key_title, style), "tickangle": -90, "side": "bottom", "range": [-0.5, k - 0.5]},
        "yaxis": {
            **_axis(labels, query_title, style),
            "range": [q - 0.5, -0.5],  # query 0 at the top
            "scaleanchor": "x",
            "scaleratio": 1,
            "constraintoward": "top",
        },
        "hoverlabel": {"font": {"size": style.font_size + 2}},
        "dragmode": False,
        "clickmode": "event+select",
    }
    if shapes:
        layout["shapes"] = shapes
    return plotting.figure(data, layout)


def attention_heatmap(
    weights: np.ndarray,
    labels: Sequence[str],
    title: str = "",
    zrange: tuple[float, float] | None = (0.0, 1.0),
    colorscale: str = ATTENTION_COLORSCALE,
    *,
    value_title: str = "",
    **options: Unpack[MapOptions],
) -> go.Figure:
    """One head's attention (or a window of it) as a heatmap with one readable label per row and column.

    Args:
        weights: ``(query, key)`` attention weights, e.g. ``result.weights[layer, head]`` or a window
            ``weights[q0:q1, k0:k1]``; need not be square (a sentence pair's A→B block).
        labels: one label per query row (``encoding.labels``); also the key labels unless ``key_labels``.
        title: figure title.
        zrange: the colour range; ``None`` fits it to these values. Give maps that are compared the
            same range (see :func:`shared_range`).
        colorscale: a plotly colour scale name.
        value_title: the colour bar's title (what the values are, with their unit), if any.
        options: ``key_labels``, ``style``, ``query_start``, ``key_start``, ``focus``, ``selectable``,
            ``query_title``, ``key_title`` (:class:`MapOptions`).

    Returns:
        A ``plotly.graph_objects.Figure``: the heatmap trace first (then the markers if ``selectable``).
        Axis labels longer than 20 characters are shortened with "…"; the hover shows them in full.

    Raises:
        ValueError: if ``weights`` is not ``(len(labels), len(key_labels))``.
    """
    matrix = _check(weights, labels, options.get("key_labels"))
    zrange = shared_range(matrix) if zrange is None else zrange
    return _heatmap(matrix, labels, title, colorscale, ".4f", zrange, value_title=value_title, **options)


def difference_heatmap(
    difference: np.ndarray,
    labels: Sequence[str],
    title: str = "",
    fit_range: bool = False,
    **options: Unpack[MapOptions],
) -> go.Figure:
    """A difference of two attention maps on a diverging scale centred at 0.

    Args:
        difference: ``(query, key)``, e.g. ``scratch - pretrained``; values in [-1, 1].
        labels: one label per query row; also the key labels unless ``key_labels``.
        title: figure title.
        fit_range: range ``±max|difference|`` instead of the fixed ``±1``.
        options: as for :func:`attention_heatmap` (:class:`MapOptions`).

    Returns:
        A ``plotly.graph_objects.Figure``; red where the difference is positive, blue where negative.

    Raises:
        ValueError: if ``difference`` is not ``(len(labels), len(key_labels))``.
    """
    matrix = _check(difference, labels, options.get("key_labels"))
    zrange = tuple(head_ranges(matrix, difference=True).tolist()) if fit_range and matrix.size else (-1.0, 1.0)
    return _heatmap(matrix, labels, title, DIFFERENCE_COLORSCALE, "+.3g", zrange, zmid=0.0, **options)
