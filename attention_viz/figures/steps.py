"""Small plotly figures for the step-by-step views: vectors and matrices as heatmaps, per-key bars.

These take numpy arrays and strings and return ``plotly.graph_objects.Figure`` built from dicts
(:func:`attention_viz.figures.plotting.figure`); they know nothing of models or Streamlit. Every title
carries the array's shape, e.g. ``keys K (tokens, head_dim) = (16, 32)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from attention_viz.figures import plotting
from attention_viz.figures.heatmaps import category_ticks, label_room, unique_labels
from attention_viz.figures.layout import text_width

VECTOR_COLORSCALE = "RdBu_r"
MASKED_COLOR = "#bbbbbb"
FONT_SIZE = 12  # plotly's default: the ticks and axis titles of these figures
# The margins are reserved from the labels' widths (no plotly automargin: it draws a chart twice, and a page
# of eight of these charts waited for sixteen drawings on a head change).
TICK_ROOM = 2 * FONT_SIZE + 8  # a row of horizontal tick labels (numbers) with its gap
TITLE_ROOM = 2 * FONT_SIZE  # an axis title with its gap
BAR_PLOT_HEIGHT = 200  # px of a bar chart's plot area, whatever its labels take below it


def _layout(title: str, height: int, xaxis: dict, yaxis: dict, left: int, bottom: int) -> dict:
    return {
        "title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 13}},
        "height": height,
        "margin": {"l": left, "r": 10, "t": 40, "b": bottom},
        "xaxis": xaxis,
        "yaxis": yaxis,
    }


def _number_room(*values: float) -> int:
    """Pixels for tick labels of numbers up to these values (plotly writes about 4 significant digits)."""
    return int(max(text_width(f"{value:.4g}", FONT_SIZE) for value in (*values, 0.0))) + 12


def colorbar_ticks(bound: float) -> dict:
    """A diverging colour bar's ticks over ``[-bound, bound]``: its two ends and 0, written with 3 significant
    digits. Plotly's own ticks left a one-row chart (a query vector, 140 px) a single "0"."""
    values = [-bound, 0.0, bound]
    return {"tickmode": "array", "tickvals": values, "ticktext": [f"{value:.3g}" for value in values]}


def heatmap_range(matrix: np.ndarray) -> dict:
    """What of a :func:`step_heatmap`'s trace follows its values: ``zmin``, ``zmax`` (``∓max|matrix|``) and the
    colour bar's ticks (:func:`colorbar_ticks`), as trace fields."""
    bound = float(np.abs(np.asarray(matrix, dtype=np.float32)).max()) or 1e-12
    return {"zmin": -bound, "zmax": bound, "colorbar": colorbar_ticks(bound)}


def step_heatmap(matrix: np.ndarray, row_labels: Sequence[str], title: str, column_title: str = "") -> go.Figure:
    """A ``(rows, columns)`` matrix (vectors as rows) on a diverging scale centred at 0.

    Args:
        matrix: ``(rows, columns)``, e.g. keys ``(tokens, head_dim)`` or a query ``(1, head_dim)``.
        row_labels: one label per row (token labels).
        title: the title, with the shape.
        column_title: the x axis title (e.g. ``head_dim``).

    Returns:
        A figure with one heatmap; hover reads ``row, column: value``; the colour bar is ticked at
        ``-max|matrix|``, 0 and ``max|matrix|`` (:func:`colorbar_ticks`).
    """
    matrix = np.atleast_2d(np.asarray(matrix, dtype=np.float32))
    if matrix.shape[0] != len(row_labels):
        raise ValueError(f"expected {len(row_labels)} rows, got shape {matrix.shape}")
    height = int(np.clip(90 + 18 * matrix.shape[0], 160, 520))  # one row: a 64 px colour bar for its three ticks
    trace = {
        "type": "heatmap",
        "z": matrix,
        "y": unique_labels(row_labels),
        "colorscale": plotting.colorscale(VECTOR_COLORSCALE),
        "zmid": 0.0,
        "hovertemplate": "%{y}, %{x}: %{z:.4f}<extra></extra>",
        **heatmap_range(matrix),
    }
    trace["colorbar"] = {"thickness": 10, **trace["colorbar"]}
    yaxis = {"type": "category", "autorange": "reversed", "automargin": False, **category_ticks(row_labels)}
    left = label_room(row_labels, FONT_SIZE) + 10
    bottom = TICK_ROOM + (TITLE_ROOM if column_title else 0)
    xaxis = {"title": {"text": column_title}, "automargin": False}
    return plotting.figure([trace], _layout(title, height, xaxis, yaxis, left, bottom))


def bar_values(
    values: np.ndarray, masked: Sequence[int] = (), value_format: str = ".3f", masked_label: str = "masked"
) -> tuple[np.ndarray, list[str], list[float], int]:
    """What of a :func:`key_bars` chart follows its values: the bars' heights (0 where a value is ``-inf``), their
    texts (``value_format``; ``masked_label`` on a masked key, ``−∞`` where not finite), the y axis's range (room
    above and below for the upright numbers) and the left margin in px for its tick labels."""
    values = np.asarray(values, dtype=np.float64)
    shown = np.where(np.isfinite(values), values, 0.0)
    masked_set = set(masked)
    text = [
        masked_label if i in masked_set else "−∞" if not np.isfinite(v) else format(v, value_format)
        for i, v in enumerate(values)
    ]
    low, high = min(0.0, float(shown.min(initial=0.0))), max(0.0, float(shown.max(initial=0.0)))
    room = 0.35 * ((high - low) or 1.0)  # above and below the bars: their upright numbers stay off the labels
    bounds = [low - room if low < 0 else low, high + room if high > 0 else high]
    return shown, text, bounds, _number_room(*bounds) + 10


def key_bars(
    values: np.ndarray,
    labels: Sequence[str],
    title: str,
    masked: Sequence[int] = (),
    value_format: str = ".3f",
    highlight: int | None = None,
    masked_label: str = "masked",
) -> go.Figure:
    """One number per key as bars, one bar per token in order; masked keys are grey and labelled.

    Args:
        values: ``(tokens,)``; a masked key's value may be ``-inf`` (it is drawn as an empty bar).
        labels: token labels.
        title: the title, with the shape.
        masked: masked key positions.
        value_format: Python format spec of the numbers on the bars.
        highlight: a position to outline (the query token).
        masked_label: the word after a masked key's value (in the user's language).

    Returns:
        A bar figure; ``y`` holds the values (0 where masked), the bar texts the values as shown.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(labels),):
        raise ValueError(f"expected {len(labels)} values, got shape {values.shape}")
    masked_set = set(masked)
    colors = [MASKED_COLOR if i in masked_set else "#1f77b4" for i in range(len(labels))]
    shown, text, bounds, left = bar_values(values, masked, value_format, masked_label)
    outline = [2.5 if i == highlight else 0 for i in range(len(labels))]
    trace = {
        "type": "bar",
        "x": unique_labels(labels),
        "y": shown,
        "marker": {"color": colors, "line": {"width": outline, "color": "#d62728"}},
        "text": text,
        "textposition": "outside",
        "textangle": -90,  # upright numbers ran together once bars were narrower than the numbers
        "textfont": {"size": 10},
        "constraintext": "none",
        "cliponaxis": False,
        "hovertemplate": "%{x}: %{text}<extra></extra>",
    }
    xaxis = {"type": "category", "tickangle": -90, "automargin": False, **category_ticks(labels)}
    yaxis = {"zeroline": True, "range": bounds, "automargin": False}
    bottom = label_room(labels, FONT_SIZE) + 10
    height = max(300, 40 + BAR_PLOT_HEIGHT + bottom)  # long labels take room below, never from the bars
    return plotting.figure([trace], _layout(title, height, xaxis, yaxis, left, bottom))


def line_room(scores: np.ndarray) -> int:
    """A :func:`distance_line`'s left margin (px) for the tick labels of these scores and the axis title."""
    scores = np.asarray(scores, dtype=np.float64)
    return _number_room(float(scores.min(initial=0.0)), float(scores.max(initial=0.0))) + TITLE_ROOM + 10


def distance_line(scores: np.ndarray, title: str, x_title: str, y_title: str) -> go.Figure:
    """A score per distance as a line with markers: ``scores[Δ]`` at ``x = Δ`` (tokens).

    Args:
        scores: ``(distances,)``, from distance 0.
        title, x_title, y_title: texts.

    Returns:
        A figure with one scatter trace, ``x`` the distances 0 to ``len(scores) - 1`` and ``y`` the scores.
    """
    scores = np.asarray(scores, dtype=np.float64)
    trace = {
        "type": "scatter",
        "x": np.arange(len(scores)),
        "y": scores,
        "mode": "lines+markers",
        "marker": {"size": 4},
        "line": {"width": 1.5},
        "hovertemplate": "%{x}: %{y:.4f}<extra></extra>",
    }
    xaxis = {"title": {"text": x_title}, "automargin": False, "zeroline": False}
    yaxis = {"title": {"text": y_title}, "automargin": False}
    return plotting.figure([trace], _layout(title, 300, xaxis, yaxis, line_room(scores), TICK_ROOM + TITLE_ROOM))
