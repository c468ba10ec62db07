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
from apptools import decode

from attention_viz import figures
from attention_viz.figures import plotting

rng = np.random.default_rng(0)


def _attention(*shape):
    weights = rng.random(shape).astype(np.float32)
    return weights / weights.sum(-1, keepdims=True)


LABELS = ["[CLS]", "the", "animal", "the", "##s", "a" * 30, "it", "[SEP]"]
W = _attention(8, 8)
GRID = rng.random((6, 12))
GRID[2, 3] = np.nan  # a statistic with no value for one head: drawn grey
TAGS = ["previous-token, broad" if i % 5 == 0 else "[CLS]" if i % 7 == 0 else "" for i in range(72)]
IMPORTANCE = rng.random((6, 12))
POSITIONS = rng.normal(size=(72, 2))
SCORES = rng.normal(size=8)
SCORES[2] = -np.inf  # a masked key
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
    "head overview": lambda: figures.head_overview(GRID, TAGS, "T", "entropy", ("head", "layer"), IMPORTANCE, (1, 2)),
    "head overview, fixed range, own labels": lambda: figures.head_overview(
        GRID, TAGS, "T", "c", zrange=(0, 1), tag_labels=[str(i) for i in range(72)]
    ),
    "similarity map": lambda: figures.similarity_map(POSITIONS, 12, "S", "layer", "head", (3, 4)),
    "step heatmap": lambda: figures.step_heatmap(W[:, :5], LABELS, "keys (8, 5)", "head_dim"),
    "step heatmap, one vector": lambda: figures.step_heatmap(np.zeros(5, np.float32), ["q"], "q"),
    "key bars, masked": lambda: figures.key_bars(SCORES, LABELS, "scores", [2], ".2f", 1, "masked"),
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


def _json(figure) -> dict:
    return json.loads(pio.to_json(figure, validate=False))


def test_head_overview_carries_every_head_s_values_tags_and_size():
    figure = _json(FIGURES["head overview"]())
    (trace,) = figure["data"]
    layer_of, head_of = np.repeat(np.arange(6), 12), np.tile(np.arange(12), 6)
    assert np.array_equal(decode(trace["x"]), head_of) and np.array_equal(decode(trace["y"]), layer_of)
    expected = [[int(layer), int(head)] for layer, head in zip(layer_of, head_of, strict=True)]
    assert [row[:2] for row in trace["customdata"]] == expected
    assert [row[2] for row in trace["customdata"]] == TAGS
    assert trace["text"][0] == "prev+broad" and trace["text"][7] == "CLS" and trace["text"][1] == ""
    finite = GRID[np.isfinite(GRID)]
    low, high = finite.min(), finite.max()
    colors = trace["marker"]["color"]
    assert colors[2 * 12 + 3] == figures.MISSING_COLOUR  # NaN: grey, not the low end of the scale
    np.testing.assert_array_equal(np.delete(np.asarray(colors, dtype=object), 27), np.delete(GRID.reshape(-1), 27))
    assert trace["customdata"][27][3] == "—" and trace["customdata"][0][3] == f"{GRID[0, 0]:.4f}"
    assert (trace["marker"]["cmin"], trace["marker"]["cmax"]) == (low, high)
    sizes = decode(trace["marker"]["size"])
    np.testing.assert_allclose(sizes, 8 + 18 * np.sqrt(IMPORTANCE.reshape(-1) / IMPORTANCE.max()))  # MARK_SIZE (8, 26)
    line = trace["marker"]["line"]
    assert line["color"][14] == "red" and line["width"][14] == 3  # layer 1, head 2 selected
    assert set(line["color"][:14] + line["color"][15:]) == {"rgba(0,0,0,0.3)"}
    assert trace["marker"]["colorbar"]["title"]["text"] == "entropy"
    layout = figure["layout"]
    assert layout["title"]["text"] == "T" and layout["height"] == 492
    assert (layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]) == ("head", "layer")
    assert layout["yaxis"]["range"] == [5.6, -0.6]  # layer 0 at the top
    assert trace["marker"]["colorscale"][0] == [0.0, "#440154"]  # Viridis, resolved in Python
    plain = _json(FIGURES["head overview, fixed range, own labels"]())["data"][0]
    assert plain["text"] == [str(i) for i in range(72)] and (plain["marker"]["cmin"], plain["marker"]["cmax"]) == (0, 1)
    assert set(decode(plain["marker"]["size"])) == {20.0}  # no importance: one size, MARK_SIZE[1] - 6


def test_similarity_map_places_each_head_and_labels_the_selected_one_and_those_with_room():
    (trace,) = _json(FIGURES["similarity map"]())["data"]
    np.testing.assert_array_equal(decode(trace["x"]), POSITIONS[:, 0])
    np.testing.assert_array_equal(decode(trace["y"]), POSITIONS[:, 1])
    index = np.arange(72)
    np.testing.assert_array_equal(decode(trace["customdata"]), np.stack([index // 12, index % 12], axis=1))
    np.testing.assert_array_equal(decode(trace["marker"]["color"]), index // 12)
    assert trace["text"][40] == "3·4" and trace["textfont"]["color"][40] == "red"
    assert all(text in ("", f"{i // 12}·{i % 12}") for i, text in enumerate(trace["text"]))
    assert trace["marker"]["line"]["color"][40] == "red" and trace["marker"]["line"]["width"][40] == 3
    assert trace["marker"]["cmax"] == 5 and trace["hovertemplate"].startswith("layer %{customdata[0]}, head")


def test_step_heatmap_and_key_bars_carry_values_labels_and_shapes():
    (heat,) = _json(FIGURES["step heatmap"]())["data"]
    np.testing.assert_array_equal(decode(heat["z"]), W[:, :5])
    assert heat["y"] == figures.unique_labels(LABELS) and heat["y"][3] != heat["y"][1]  # "the" twice, two rows
    bound = float(np.abs(W[:, :5]).max())
    assert (heat["zmin"], heat["zmax"], heat["zmid"]) == (-bound, bound, 0.0)
    layout = _json(FIGURES["step heatmap"]())["layout"]
    assert layout["title"]["text"] == "keys (8, 5)" and layout["xaxis"]["title"]["text"] == "head_dim"
    assert layout["yaxis"]["autorange"] == "reversed" and layout["height"] == 234
    assert _json(FIGURES["step heatmap, one vector"]())["layout"]["height"] == 160  # room for 3 colour-bar ticks
    (bars,) = _json(FIGURES["key bars, masked"]())["data"]
    np.testing.assert_array_equal(decode(bars["y"]), np.where(np.isfinite(SCORES), SCORES, 0))
    assert bars["text"][2] == "masked" and bars["text"][0] == format(SCORES[0], ".2f")
    assert bars["marker"]["color"][2] == "#bbbbbb" and bars["marker"]["color"][0] == "#1f77b4"
    assert bars["marker"]["line"]["width"] == [0, 2.5, 0, 0, 0, 0, 0, 0]  # the query token outlined
    assert bars["x"] == figures.unique_labels(LABELS)
    assert _json(FIGURES["key bars, masked"]())["layout"]["xaxis"]["tickangle"] == -90  # upright labels
    with pytest.raises(ValueError, match="expected 8 values"):
        figures.key_bars(SCORES[:3], LABELS, "t")
    with pytest.raises(ValueError, match="expected 8 rows"):
        figures.step_heatmap(W[:3], LABELS, "t")
