"""Compare's readable view through AppTest: the window, token focus, line view and presentation setting
show exactly the core's weights."""

import numpy as np
from apptools import ALL_HEADS, COMPARE
from apptools import chart as _chart
from apptools import decode as _decode
from apptools import no_errors as _no_errors
from apptools import run_app as _app
from apptools import z as _z
from replay import control

from attention_viz import figures
from attention_viz.extraction import extract
from attention_viz.figures import label_text
from attention_viz.ui.view import state

LONG = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat near the door, " * 3


def test_moved_window_shows_the_core_weights_for_that_window(bundled):
    at = _app(text=LONG, layer=2, head=4)
    weights = extract(bundled, LONG).weights[2, 4]
    total = weights.shape[0]
    size = figures.map_style(False, total).window
    assert total > size
    control(at, "slider", "query_start").set_value(30).run()
    control(at, "slider", "key_start").set_value(total - size).run()
    _no_errors(at)
    shown = _chart(at, "map")
    assert np.array_equal(_z(shown), weights[30 : 30 + size, total - size :])
    labels = extract(bundled, LONG).encoding.labels
    assert [label_text(y) for y in shown["data"][0]["y"]] == list(labels[30 : 30 + size])
    assert _decode(shown["data"][0]["customdata"])[0, 0].tolist() == [30, total - size]  # hover indices
    outline = shown["overview"]["window"]  # the overview beside the map outlines the window
    assert (outline["y0"], outline["x0"]) == (29.5, total - size - 0.5)
    assert "tokens" in at.caption[0].value and str(total) in at.caption[0].value


def test_focus_bars_are_that_querys_row_and_its_lines_are_the_weights(bundled):
    at = _app()
    result = extract(bundled, state.EXAMPLE_TEXT)
    it = result.encoding.tokens.index("it")
    control(at, "selectbox", "focus").set_value(it).run()
    _no_errors(at)
    expected = result.weights[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD]
    pretrained, scratch = _chart(at, "focus_bars")["data"]
    assert np.array_equal(_decode(pretrained["y"]), expected[it])
    assert np.abs(_decode(scratch["y"]) - expected[it]).max() <= 1e-5
    (outline,) = _chart(at, "map")["layout"]["shapes"]  # the row is outlined in the map
    assert (outline["y0"], outline["y1"]) == (it - 0.5, it + 0.5)
    lines = _chart(at, "lines")["layout"]["shapes"]
    assert [line["y0"] for line in lines] == [it] * len(expected)
    np.testing.assert_allclose([line["opacity"] for line in lines], expected[it], rtol=1e-6)
    control(at, "selectbox", "focus").set_value(-1).run()
    lines = _chart(at, "lines")["layout"]["shapes"]
    np.testing.assert_allclose(np.reshape([line["opacity"] for line in lines], expected.shape), expected, rtol=1e-6)


def test_focus_on_a_far_token_moves_the_window_to_it(bundled):
    at = _app(text="hello " * 600)
    control(at, "selectbox", "focus").set_value(300).run()
    _no_errors(at)
    size = figures.map_style(False, 512).window
    start = figures.window_around(300, 512, size)
    assert control(at, "slider", "query_start").value == start
    weights = extract(bundled, "hello " * 600).weights[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD]
    assert np.array_equal(_z(_chart(at, "map")), weights[start : start + size, :size])
    bars = _chart(at, "focus_bars")["data"][0]
    assert np.array_equal(_decode(bars["y"]), weights[300, :size])


def test_presentation_is_larger_and_stays_on_across_pages():
    at = _app(text=LONG)
    at.toggle(key="presentation").set_value(True).run()
    _no_errors(at)
    shown = _chart(at, "map")
    big = figures.PRESENTATION
    assert _z(shown).shape == (big.window, big.window)
    assert shown["layout"]["xaxis"]["tickfont"]["size"] == big.font_size
    at.switch_page(ALL_HEADS).run()
    at.switch_page(COMPARE).run()
    assert at.toggle(key="presentation").value
    assert _chart(at, "map")["layout"]["xaxis"]["tickfont"]["size"] == big.font_size
