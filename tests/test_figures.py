"""Figures: orientation and hover, size at 512 tokens, one row per token, thumbnails."""

import base64
import json

import numpy as np
import pytest

from attention_viz.figures import (
    MISSING_COLOUR,
    attention_heatmap,
    difference_heatmap,
    grid_height,
    head_grid,
    head_overview,
    isolate,
    label_text,
    pool_attention,
    shared_range,
    unique_labels,
)
from attention_viz.figures.grid import thumbnail

LABELS = ["[CLS]", "the", "cat", "saw", "the", "dog", "[SEP]"]


def _decode(array_json):
    """A plotly JSON array: a plain list, or base64 ``bdata`` (plotly 6+)."""
    if isinstance(array_json, dict):
        dtype = {"f4": np.float32, "f8": np.float64}[array_json["dtype"]]
        flat = np.frombuffer(base64.b64decode(array_json["bdata"]), dtype=dtype)
        shape = array_json.get("shape", str(len(flat)))
        return flat.reshape([int(n) for n in str(shape).split(",")])
    return np.asarray(array_json)


def _weights(n, seed=0):
    raw = np.random.default_rng(seed).random((n, n)).astype(np.float32)
    return raw / raw.sum(-1, keepdims=True)


def test_rows_are_queries_top_to_bottom():
    """Attention is not symmetric: rows are queries (query 0, [CLS], at the top), columns keys, and the hover
    reads "query → key: weight"."""
    weights = _weights(len(LABELS))
    figure = attention_heatmap(weights, LABELS, title="layer 0, head 0")
    trace = figure.data[0]
    assert np.array_equal(trace.z, weights)  # z[i] is query i's row
    assert [label_text(y) for y in trace.y] == LABELS
    assert [label_text(x) for x in trace.x] == LABELS
    assert tuple(figure.layout.yaxis.range) == (len(LABELS) - 0.5, -0.5)  # query 0 ([CLS]) at the top
    assert figure.layout.yaxis.scaleanchor == "x"  # square cells
    assert trace.hovertemplate.startswith("%{y} → %{x}: %{z")
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)


def test_every_token_has_its_own_row_even_when_labels_repeat():
    figure = attention_heatmap(_weights(len(LABELS)), LABELS)
    assert len(set(figure.data[0].y)) == len(LABELS)
    a, b = isolate("a"), isolate("b")
    assert unique_labels(["a", "b", "a", "a", "a"]) == [a, b, a + "\u200c", a + "\u200c\u200b", a + "\u200c\u200c"]
    repeated = unique_labels(["hello"] * 512)
    assert len(set(repeated)) == 512 and max(map(len, repeated)) == len(isolate("hello")) + 9  # log2(511) digits
    assert {label_text(label) for label in repeated} == {"hello"}


def test_fitted_and_shared_colour_range():
    weights, other = _weights(4), _weights(4, seed=1) * 0.5
    trace = attention_heatmap(weights, list("abcd"), zrange=None).data[0]
    assert trace.zmin == pytest.approx(weights.min()) and trace.zmax == pytest.approx(weights.max())
    shared = shared_range(weights, other)
    assert shared == (pytest.approx(min(weights.min(), other.min())), pytest.approx(weights.max()))
    trace = attention_heatmap(other, list("abcd"), zrange=shared).data[0]
    assert (trace.zmin, trace.zmax) == shared


def test_shape_is_checked():
    with pytest.raises(ValueError, match="3 query and 3 key labels"):
        attention_heatmap(_weights(4), ["a", "b", "c"])


def test_difference_is_centred_at_zero():
    difference = _weights(4) - _weights(4, seed=1)
    trace = difference_heatmap(difference, list("abcd")).data[0]
    assert (trace.zmin, trace.zmid, trace.zmax) == (-1.0, 0.0, 1.0)
    fitted = difference_heatmap(difference, list("abcd"), fit_range=True).data[0]
    assert fitted.zmax == pytest.approx(np.abs(difference).max()) and fitted.zmin == -fitted.zmax
    zero = difference_heatmap(np.zeros((2, 2)), ["a", "b"], fit_range=True).data[0]
    assert zero.zmax > zero.zmin


def test_one_head_at_512_tokens_is_base64_and_small():
    """262,144 cells go to plotly as float32 base64 (about 1.5 MB of JSON, against 5.6 MB as a list)."""
    labels = ["[CLS]"] + ["hello"] * 510 + ["[SEP]"]  # repeated labels must not grow the figure
    figure = attention_heatmap(_weights(512), labels)
    spec = json.loads(figure.to_json())
    z = spec["data"][0]["z"]
    assert isinstance(z, dict) and z["dtype"] == "f4"  # float32 as base64, not a list of rounded floats
    assert np.array_equal(_decode(z), figure.data[0].z)
    assert len(figure.to_json()) < 1_600_000


def test_pooling_keeps_rows_distributions():
    weights = np.stack([_weights(100, seed) for seed in range(3)])  # (3, 100, 100)
    pooled, starts = pool_attention(weights, 48)
    assert pooled.shape == (3, 48, 48) and starts[0] == 0 and len(starts) == 48
    np.testing.assert_allclose(pooled.sum(-1), 1, atol=1e-5)
    small, starts = pool_attention(weights[:, :10, :10], 48)
    assert small.shape == (3, 10, 10) and starts.tolist() == list(range(10))
    # a block of equal values pools to itself (mean over queries, sum over keys)
    uniform = np.full((96, 96), 1 / 96, dtype=np.float32)
    np.testing.assert_allclose(pool_attention(uniform, 48)[0], 1 / 48, rtol=1e-5)


def test_grid_of_every_head_stays_small_at_512_tokens():
    """Every head of 6 × 12 at 512 tokens is 18.9 million floats: the grid pools each to 48 × 48."""
    rng = np.random.default_rng(0)
    weights = rng.random((6, 12, 512, 512), dtype=np.float32)
    weights /= weights.sum(-1, keepdims=True)
    figure = head_grid(weights)
    assert len(figure.data) == 2  # the thumbnails as one heatmap, then the click targets
    assert all(thumbnail(figure, layer, head).shape == (48, 48) for layer in range(6) for head in range(12))
    np.testing.assert_allclose(thumbnail(figure, 3, 7), pool_attention(weights[3, 7], 48)[0])
    assert len(figure.to_json()) < 3_000_000
    assert "(pooled)" in figure.data[0].hovertemplate


def test_grid_of_cross_attention_has_a_row_per_target_token_and_a_column_per_source_token():
    rng = np.random.default_rng(1)
    weights = rng.random((2, 3, 4, 7), dtype=np.float32)  # (layers, heads, target, source)
    weights /= weights.sum(-1, keepdims=True)
    figure = head_grid(weights, selected=(1, 2))
    meta, gap = figure.data[0].meta, figure.data[0].meta["gap"]
    assert (meta["queries"], meta["keys"]) == (4, 7)
    for layer in range(2):
        for head in range(3):
            np.testing.assert_array_equal(thumbnail(figure, layer, head), weights[layer, head])
    assert figure.data[0].z.shape == (2 * (4 + gap) - gap, 3 * (7 + gap) - gap)
    (outline,) = figure.layout.shapes  # around layer 1, head 2's 4 × 7 cells
    x0, y0 = 2 * (7 + gap) - 0.5, (4 + gap) - 0.5
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (x0, x0 + 7, y0, y0 + 4)
    ratio, _ = grid_height(2, 3, 4, 7)  # the plot as tall as its rows of square cells
    assert ratio == pytest.approx(0.6 * (2 * (4 + gap) - gap) / (3 * (7 + gap) - gap))


def test_grid_of_short_input_is_full_size():
    weights = np.stack([np.stack([_weights(5, layer * 3 + h) for h in range(3)]) for layer in range(2)])
    figure = head_grid(weights)
    assert len(figure.data) == 2
    assert np.array_equal(thumbnail(figure, 1, 2), weights[1, 2])
    gap = figure.data[0].meta["gap"]
    assert np.isnan(figure.data[0].z[5 : 5 + gap]).all()  # the rows between layer 0 and layer 1 are empty
    assert figure.data[0].y[1 * (5 + gap) + 4] == "layer 1, query 4"  # what a hover names


def test_label_widths_count_wide_characters_and_emoji_as_wider():
    """The margins are reserved from estimated label widths (no plotly automargin): CJK counts a font size
    per character, an emoji more (Noto Color Emoji draws it about 1.2 font sizes wide), marks nothing."""
    from attention_viz.figures.layout import text_width

    assert text_width("我喜欢", 12) == 36
    assert text_width("\U0001f600", 12) >= 1.2 * 12
    assert text_width("e\u0301", 12) == text_width("e", 12)  # a combining accent adds no width
    assert text_width("\u2068ab\u2069", 10) == text_width("ab", 10)  # bidi isolates add none either


def test_head_overview_draws_a_missing_value_grey_and_says_why_never_zero():
    """A score with no value (duplicate-token on a text where no token repeats) was painted at the bottom of the
    scale, and its hover said 0.0000."""
    grid = np.array([[0.25, np.nan, 0.75], [np.nan, np.nan, 0.5]])
    importance = np.array([[1.0, 4.0, np.nan], [0.0, 1.0, 1.0]])
    figure = json.loads(
        head_overview(
            grid, [""] * 6, "t", "duplicate-token", importance=importance, missing="no token occurs twice"
        ).to_json()
    )
    (trace,) = figure["data"]
    missing = [1, 3, 4]
    assert [trace["marker"]["color"][i] for i in missing] == [MISSING_COLOUR] * 3
    assert [trace["marker"]["color"][i] for i in (0, 2, 5)] == [0.25, 0.75, 0.5]  # the others keep their values
    assert (trace["marker"]["cmin"], trace["marker"]["cmax"]) == (0.25, 0.75)  # the range is the values'
    shown = [row[3] for row in trace["customdata"]]
    assert [shown[i] for i in missing] == ["— (no token occurs twice)"] * 3
    assert [shown[i] for i in (0, 2, 5)] == ["0.2500", "0.7500", "0.5000"]
    assert "duplicate-token: %{customdata[3]}" in trace["hovertemplate"]
    assert "marker.color" not in trace["hovertemplate"] and not any("0.0000" in text for text in shown)
    sizes = _decode(trace["marker"]["size"])
    assert sizes[2] == 20.0  # no importance: the plain size, not the smallest mark (importance 0)
    assert sizes[3] == 8.0 and sizes[1] == 26.0  # importance 0 and the largest
    every = json.loads(head_overview(np.full((2, 3), np.nan), [""] * 6, "t", "c").to_json())["data"][0]
    assert every["marker"]["color"] == [MISSING_COLOUR] * 6 and {row[3] for row in every["customdata"]} == {"—"}
