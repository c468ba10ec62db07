"""Figures are built from dicts without plotly's validation (attention_viz/figures/plotting.py), for speed.

What validation would have caught is caught here: each figure, rebuilt by ``go.Figure(fig.to_dict())``
with validation on, must build without error and come out unchanged. A misspelt property raises; a colour
scale left as a name (plotly.js reads "Blues" as another scale) changes into a list and fails the equality.
"""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attention_viz import figures
from attention_viz.figures import plotting

rng = np.random.default_rng(0)


def _attention(*shape):
    weights = rng.random(shape).astype(np.float32)
    return weights / weights.sum(-1, keepdims=True)


LABELS = ["[CLS]", "the", "animal", "the", "##s", "a" * 30, "it", "[SEP]"]
W = _attention(8, 8)
FIGURES = {
    "heatmap": lambda: figures.attention_heatmap(W, LABELS, "title"),
    "heatmap, selectable, focus, presentation": lambda: figures.attention_heatmap(
        W, LABELS, "t", None, key_labels=LABELS, style=figures.PRESENTATION, query_start=3, focus=2, selectable=True
    ),
    "heatmap, A→B block": lambda: figures.attention_heatmap(
        _attention(8, 5), LABELS, "t", key_labels=LABELS[:5], selectable=True
    ),
    "heatmap, no hover indices": lambda: figures.attention_heatmap(
        _attention(200, 200), [f"t{i}" for i in range(200)], "t", selectable=True
    ),
    "difference, fitted": lambda: figures.difference_heatmap(W - _attention(8, 8), LABELS, "d", True, focus=1),
    "difference, all zero": lambda: figures.difference_heatmap(np.zeros((8, 8), np.float32), LABELS, "d"),
    "overview": lambda: figures.overview(_attention(100, 100), slice(10, 28), slice(5, 23)),
    "focus bars": lambda: figures.focus_bars({"pretrained": W[1], "scratch": W[2]}, LABELS, "b", figures.DENSE, 3),
    "line view": lambda: figures.line_view(W, LABELS, None, "l"),
    "line view, focus": lambda: figures.line_view(W[:, :5], LABELS, LABELS[:5], "l", figures.PRESENTATION, 2, 1, 3),
    "grid": lambda: figures.head_grid(_attention(3, 4, 8, 8)),
    "grid, pooled, selected, fitted": lambda: figures.head_grid(_attention(6, 12, 60, 60), 48, True, selected=(2, 5)),
}


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_valid_plotly_and_validation_changes_nothing(name):
    figure = FIGURES[name]()
    validated = go.Figure(figure.to_dict())  # raises ValueError on an invalid property or value
    as_built = json.loads(pio.to_json(figure, validate=False))
    assert json.loads(pio.to_json(validated, validate=False)) == as_built
    assert as_built["layout"]["template"]["layout"]["plot_bgcolor"] == "white"  # plotly_white, slimmed


def test_an_invalid_property_is_caught_by_the_round_trip():
    figure = plotting.figure([{"type": "heatmap", "z": W, "colour": "red"}], {})
    with pytest.raises(ValueError, match="colour"):
        go.Figure(figure.to_dict())


def test_colour_scales_are_plotly_py_scales_not_plotly_js_names():
    blues = plotting.colorscale("Blues")
    assert blues[0] == [0.0, "rgb(247,251,255)"] and blues[-1] == [1.0, "rgb(8,48,107)"]  # light to dark
    reversed_scale = plotting.colorscale("RdBu_r")
    assert reversed_scale[0] == [0.0, "rgb(5,48,97)"]  # blue end first, from plotly.py's RdBu
    assert figures.attention_heatmap(W, LABELS).data[0].colorscale[0][1] == "rgb(247,251,255)"


def test_template_keeps_only_the_trace_types_we_draw():
    assert set(plotting.TEMPLATE["data"]) == {"heatmap", "scatter", "bar"}
    assert len(json.dumps(plotting.TEMPLATE)) < len(json.dumps(pio.templates["plotly_white"].to_plotly_json())) / 1.5
