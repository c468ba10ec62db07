"""The browser's bundles, made without Streamlit: the maps' binary layout, what a bundle holds (the budget), and
Inside a head's steps packed for every held head (:mod:`attention_viz.figures.bundles`,
:mod:`attention_viz.analysis.step_bundles`)."""

import json
import struct

import numpy as np
import pytest

from attention_viz import figures
from attention_viz.analysis import step_bundles, steps
from attention_viz.extraction import encode
from attention_viz.figures import bundles


def test_a_bundle_is_its_header_and_little_endian_float32_maps():
    maps = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4) / 100
    payload = bundles.bundle(maps, (1, 2), ["a", "b", "a", "<s>"], ["a", "b", "a", "<s>"], overview=False)
    assert payload[:4] == b"AVM1"
    (length,) = struct.unpack("<I", payload[4:8])
    header = json.loads(payload[8 : 8 + length])
    start = 8 + length + (-(8 + length) % 4)
    assert start % 4 == 0 and len(payload) == start + maps.nbytes
    assert np.array_equal(np.frombuffer(payload[start:], dtype="<f4").reshape(maps.shape), maps)
    assert header["layers"] == [1, 2] and header["maps"] == {"offset": 0, "shape": [2, 3, 4, 4]}
    assert len(set(header["y"])) == 4  # repeated labels stay distinct rows
    assert header["y_text"][3] == "\u2068&lt;s&gt;\u2069"  # written for plotly, isolated
    again, values = bundles.unpack(payload)
    assert again == header and np.array_equal(values.reshape(maps.shape), maps)


def test_the_overview_is_pooled_rows_that_still_sum_to_one():
    rng = np.random.default_rng(0)
    weights = rng.random((1, 2, 100, 100)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    labels = [f"t{i}" for i in range(100)]
    header, values = bundles.unpack(bundles.bundle(weights, (0,), labels, labels, overview=True))
    entry = header["overview"]
    pooled = values[entry["offset"] // 4 :].reshape(entry["shape"])
    assert entry["shape"] == [1, 2, bundles.OVERVIEW_BINS, bundles.OVERVIEW_BINS]
    np.testing.assert_allclose(pooled.sum(-1), 1, atol=1e-5)


def test_the_budget_holds_every_layer_of_a_sentence_and_one_layer_of_512_tokens():
    assert bundles.held_layers(6, 12, 16, 16, 3) == tuple(range(6))  # 74 KB
    assert bundles.held_layers(6, 12, 512, 512, 3) == (3,)  # 75 MB for all: the layer's 12.6 MB
    assert bundles.holds_heads(12, 512, 512) and not bundles.holds_heads(16, 1024, 1024)
    with pytest.raises(ValueError, match="not finite"):
        bundles.pack({}, [np.array([np.nan], dtype=np.float32)])


def test_inside_steps_bundle_holds_each_heads_charts_as_the_page_draws_them(bundled):
    """What the element draws for a head it steps to: that head's numbers (float32, as the steps give them) and
    the charts' fields that follow them, equal to the figures the page draws for that head."""
    from attention_viz.ui.text import i18n

    encoding = encode(bundled.tokenizer, "The cat sat on the mat.")
    labels = encoding.labels
    hidden = steps.layer_inputs(bundled.encoder, encoding)
    model = np.stack(
        [steps.layer_weights(steps.layer_vectors(bundled.encoder, h, i), 2, 0.2) for i, h in enumerate(hidden)]
    )
    settings = {"query": 2, "masked": (1,), "scaling": 0.2, "temperature": 2.0, "as_model": False, "theta": 0.0}
    made = lambda layer: steps.layer_steps(bundled.encoder, hidden[layer], layer, 2, 0.2, 2.0, (1,))  # noqa: E731
    header, values = bundles.unpack(step_bundles.payload(made, (2, 3), i18n.table("en"), labels, settings, model))
    entry = header["layers"][1]
    assert [e["layer"] for e in header["layers"]] == [2, 3] and entry["error"] is None
    own = steps.head_steps(*steps.head_vectors(bundled.encoder, hidden[3], 3, 5), 2, 0.2, 2.0, (1,))
    by_key = {step["key"]: step for step in entry["steps"]}
    assert list(by_key) == [
        f"step_{name}" for name in ("query", "keys", "dots", "scores", "weights", "values", "context")
    ]

    def head_values(step, head=5):
        array = step["array"]
        count = int(np.prod(array["shape"][1:]))
        start = array["offset"] // 4 + head * count
        return values[start : start + count].reshape(array["shape"][1:])

    assert np.array_equal(head_values(by_key["step_weights"]), own.weights)
    assert np.array_equal(head_values(by_key["step_keys"]), own.keys)
    assert np.array_equal(head_values(by_key["step_context"]), own.context[None])
    bars = figures.key_bars(own.weights, labels, "w", (1,), ".3f", 2, "masked").to_plotly_json()
    patch = by_key["step_weights"]["patches"][5]
    assert patch["trace"]["text"] == list(bars["data"][0]["text"]) and patch["trace"]["text"][1] == "masked"
    assert patch["layout"]["yaxis"]["range"] == list(bars["layout"]["yaxis"]["range"])
    assert patch["layout"]["margin"]["l"] == bars["layout"]["margin"]["l"]
    keys = figures.step_heatmap(own.keys, labels, "k").to_plotly_json()["data"][0]
    heat = by_key["step_keys"]["patches"][5]["trace"]
    assert (heat["zmin"], heat["zmax"]) == (keys["zmin"], keys["zmax"])
    assert heat["colorbar"]["ticktext"] == list(keys["colorbar"]["ticktext"])
    assert entry["values"]["total"][5] == f"{own.weights.sum():.6f}"
    assert entry["check"][5]["kind"] == "info" and '"cat"' in entry["check"][5]["text"]


def test_inside_steps_texts_leave_a_tokens_braces_as_they_are():
    """A token that looks like a field stays text: only the template's own fields are filled in the browser."""
    from attention_viz.ui.text import i18n

    text = step_bundles.segments(i18n.table("en"), "inside.step_query", ("head",), token="{head}", layer=3, d=32)
    assert text["bold"] == "The query."
    assert ["head"] in text["text"] and text["text"].count(["head"]) == 1
    assert "{head}" in text["text"]  # the token: a literal part, never filled


def test_the_line_under_the_steps_is_parity_as_the_model_computes_else_the_entropy_change():
    model = np.array([[0.5, 0.5], [0.25, 0.75]])
    ours = np.array([[0.5, 0.5], [0.5, 0.5]])
    assert step_bundles.check_line(model, model, 1, True) == (
        "success",
        "inside.parity",
        {"worst": "0.0e+00", "bound": "1e-05"},
    )
    kind, key, values = step_bundles.check_line(ours, model, 1, True)
    assert (kind, key, values["worst"]) == ("error", "inside.parity", "2.5e-01")  # |0.5 - 0.25|
    # row 1: the model's (0.25, 0.75) has 0.811 bits, ours (0.5, 0.5) one bit
    assert step_bundles.check_line(ours, model, 1, False) == (
        "info",
        "inside.changed",
        {"model_bits": "0.811", "our_bits": "1.000"},
    )
