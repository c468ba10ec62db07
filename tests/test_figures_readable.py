"""Readable maps at any length: windows, shortened labels, non-square blocks, focus, lines, click targets."""

import numpy as np
import pytest

from attention_viz.figures import (
    DENSE,
    NORMAL,
    PRESENTATION,
    TITLE_FONT,
    attention_heatmap,
    difference_heatmap,
    focus_bars,
    grid_height,
    head_grid,
    isolate,
    label_text,
    line_view,
    map_style,
    overview,
    shorten_label,
    step_heatmap,
    window_around,
    window_slice,
    window_start,
)
from attention_viz.figures.layout import LABEL_AIR, SMALLEST_SIDE

LONG = "acgt" * 30  # one 120-character word: WordPiece makes it a single [UNK], labelled as typed


def _weights(q, k, seed=0):
    raw = np.random.default_rng(seed).random((q, k)).astype(np.float32)
    return raw / raw.sum(-1, keepdims=True)


def test_long_labels_are_shortened_on_the_axis_and_full_in_the_hover():
    assert shorten_label(LONG) == LONG[:19] + "…" and len(shorten_label(LONG)) == 20
    assert shorten_label("animal") == "animal" and shorten_label("x" * 20) == "x" * 20
    labels = ["[CLS]", "the", "sequence", LONG, "was", "long", ".", "[SEP]"]
    figure = attention_heatmap(_weights(8, 8), labels)
    for axis in (figure.layout.xaxis, figure.layout.yaxis):
        assert list(axis.ticktext) == [isolate(shorten_label(label)) for label in labels]
        assert [label_text(v) for v in axis.tickvals] == labels  # one tick per row and column
    assert isolate(LONG) in figure.data[0].x  # the category, shown in the hover, is the full label
    short = attention_heatmap(_weights(8, 8), ["[CLS]", "the", "cat", "sat", "on", "a", "mat", "[SEP]"])
    assert figure.layout.height - short.layout.height <= 0.62 * NORMAL.font_size * 20  # room for 20 characters only


def test_windows_stay_inside_the_tokens():
    assert window_slice(0, 10, 18) == slice(0, 10)  # all tokens when they fit
    assert window_slice(500, 512, 18) == slice(494, 512)
    assert window_slice(-3, 45, 18) == slice(0, 18)
    assert window_start(30, 45, 18) == 27
    assert window_around(40, 512, 18) == 31 and window_around(2, 512, 18) == 0
    assert window_around(511, 512, 18) == 494
    assert map_style(True) is PRESENTATION and map_style(False) is NORMAL and map_style(False, 18) is NORMAL
    assert map_style(False, NORMAL.window + 1) is DENSE and map_style(True, 45) is PRESENTATION
    assert PRESENTATION.font_size > NORMAL.font_size and PRESENTATION.min_cell > NORMAL.min_cell
    for style in (NORMAL, DENSE, PRESENTATION):  # vertical key labels one cell apart must not touch
        assert style.min_cell >= style.font_size + 4


def test_non_square_block_with_its_own_key_labels_and_hover_indices():
    weights = _weights(3, 5)
    figure = attention_heatmap(weights, ["a", "b", "c"], key_labels=list("vwxyz"), query_start=10, key_start=20)
    trace = figure.data[0]
    assert np.array_equal(trace.z, weights)
    assert list(map(label_text, trace.y)) == ["a", "b", "c"] and list(map(label_text, trace.x)) == list("vwxyz")
    assert trace.customdata[2][4].tolist() == [12, 24]  # token indices of query c → key z
    assert trace.hovertemplate.startswith("%{y} → %{x}: %{z")
    diff = difference_heatmap(weights - 0.2, ["a", "b", "c"], key_labels=list("vwxyz"))
    assert diff.data[0].z.shape == (3, 5)
    with pytest.raises(ValueError, match="3 query and 4 key labels"):
        attention_heatmap(weights, ["a", "b", "c"], key_labels=list("wxyz"))


def test_selectable_map_has_a_click_target_per_cell_and_outlines_the_focus_row():
    weights = _weights(4, 4)
    figure = attention_heatmap(weights, list("abcd"), selectable=True, focus=2, query_start=5, key_start=7)
    markers = figure.data[1]
    assert markers.type == "scatter" and len(markers.x) == 16
    assert markers.customdata[2 * 4 + 3].tolist() == [7, 10, weights[2, 3]]  # row 2, column 3 → tokens 7, 10
    assert markers.marker.opacity == 0
    (shape,) = figure.layout.shapes
    assert (shape.y0, shape.y1) == (1.5, 2.5)


def test_focus_bars_are_the_rows():
    pretrained, scratch = _weights(1, 6)[0], _weights(1, 6, seed=1)[0]
    figure = focus_bars({"pretrained": pretrained, "from scratch": scratch}, list("abcdef"))
    assert [trace.name for trace in figure.data] == ["pretrained", "from scratch"]
    assert np.array_equal(figure.data[0].y, pretrained) and np.array_equal(figure.data[1].y, scratch)


def test_line_view_opacity_is_the_weight():
    weights = _weights(3, 4)
    figure = line_view(weights, list("abc"), key_labels=list("wxyz"))
    opacities = np.array([shape.opacity for shape in figure.layout.shapes]).reshape(3, 4)
    np.testing.assert_allclose(opacities, weights, rtol=1e-6)
    assert [(s.y0, s.y1) for s in figure.layout.shapes[:2]] == [(0, 0), (0, 1)]
    focused = line_view(weights, list("abc"), key_labels=list("wxyz"), focus=1)
    assert [shape.y0 for shape in focused.layout.shapes] == [1] * 4
    np.testing.assert_allclose([shape.opacity for shape in focused.layout.shapes], weights[1], rtol=1e-6)


def test_overview_outlines_the_window():
    figure = overview(_weights(100, 100), slice(20, 38), slice(0, 18))
    (shape,) = figure.layout.shapes
    assert (shape.x0, shape.x1, shape.y0, shape.y1) == (-0.5, 17.5, 19.5, 37.5)
    assert figure.data[0].z.shape == (48, 48)


def test_grid_click_targets_name_their_head():
    weights = np.stack([np.stack([_weights(5, 5, layer * 3 + h) for h in range(3)]) for layer in range(2)])
    grid = head_grid(weights)
    heatmap, targets = grid.data
    assert targets.type == "scatter" and len(targets.x) == 6
    assert targets.customdata[1 * 3 + 2].tolist() == [1, 2]
    # layer 1, head 2: the target on its thumbnail's middle row and column (5 cells and a gap of 1 a thumbnail)
    assert (targets.x[5], targets.y[5]) == ("head 2, key 2", "layer 1, query 2")
    assert (heatmap.x[2 * 6 + 2], heatmap.y[1 * 6 + 2]) == ("head 2, key 2", "layer 1, query 2")
    assert grid.layout.yaxis.scaleanchor == "x" and grid.layout.yaxis.constrain == "domain"  # square cells


def test_heatmap_axis_titles_default_to_english_and_can_be_translated():
    weights = np.full((2, 2), 0.5)
    default = attention_heatmap(weights, ["a", "b"])
    assert default.layout.yaxis.title.text == "query (attending)"
    assert default.layout.xaxis.title.text == "key (attended to)"
    chinese = difference_heatmap(weights, ["a", "b"], query_title="查询", key_title="键")
    assert (chinese.layout.yaxis.title.text, chinese.layout.xaxis.title.text) == ("查询", "键")


def test_inputs_are_drawn_whole_as_far_as_labels_stay_readable_on_the_smallest_plot():
    """A pair of two short sentences (26 tokens) got a 24 × 24 window that hid its last "." and [SEP]."""
    assert map_style(False, 26).window >= 26 and map_style(False, 30).window >= 30
    for style in (NORMAL, DENSE):  # at 800 × 600 with the sidebar open a cell is the label size plus air
        assert style.window * (style.font_size + LABEL_AIR) <= SMALLEST_SIDE
        assert (style.window + 1) * (style.font_size + LABEL_AIR) > SMALLEST_SIDE  # and no token fewer than fit


@pytest.mark.parametrize("width", [452, 932])  # the main area at 800 × 600 and at 1280 × 720, sidebar open
def test_grid_thumbnails_are_square_and_as_far_apart_down_as_across(width):
    """At 800 × 600 the thumbnails were 29 px squares touching side by side, with 60 px between rows."""
    weights = np.stack([np.stack([_weights(14, 14, layer * 12 + h) for h in range(12)]) for layer in range(6)])
    grid = head_grid(weights)
    layout, meta = grid.layout, grid.data[0].meta
    ratio, fixed = grid_height(6, 12, 14)
    plot_w = width - layout.margin.l - layout.margin.r
    plot_h = ratio * width + fixed - layout.margin.t - layout.margin.b  # the page's box is this tall
    rows, columns = grid.data[0].z.shape
    cell_across = (layout.xaxis.domain[1] - layout.xaxis.domain[0]) * plot_w / columns
    cell_down = plot_h / rows  # the y axis spans the plot's height
    assert cell_across == pytest.approx(cell_down, rel=0.01)  # square cells fill the box both ways
    assert meta["gap"] * cell_across >= 4 and meta["keys"] * cell_across >= 20  # a gap; thumbnails large enough


def test_grid_titles_take_the_size_they_are_given():
    weights = np.stack([np.stack([_weights(4, 4, h) for h in range(3)])])
    assert {a.font.size for a in head_grid(weights).layout.annotations} == {TITLE_FONT}
    assert {a.font.size for a in head_grid(weights, title_font=13).layout.annotations} == {13}


def test_a_query_vectors_colour_bar_is_ticked_at_both_ends_and_zero():
    """A one-row chart (140 px) got a single "0" tick from plotly."""
    vector = np.array([[-2.5, 0.3, 1.2, 4.07]], dtype=np.float32)
    bar = step_heatmap(vector, ["it"], "q").data[0].colorbar
    assert list(bar.tickvals) == pytest.approx([-4.07, 0.0, 4.07]) and list(bar.ticktext) == ["-4.07", "0", "4.07"]
