"""The map element's maps, made in the core: one function per map kind, each layer's maps equal to what the
analysis gives for it, a recipe that makes the same maps later, and the one fitted colour range."""

import numpy as np
import pytest

from attention_viz import analysis, figures
from attention_viz.analysis import article_compare, layer_maps, steps
from attention_viz.extraction import extract
from attention_viz.figures import heatmaps

TEXT = "The cat sat on the mat because it was tired."


def test_head_ranges_fit_each_head_and_share_across_maps():
    rng = np.random.default_rng(0)
    first, second = rng.random((2, 3, 4, 5)), rng.random((2, 3, 4, 5))
    ranges = figures.head_ranges(first, second)
    assert ranges.shape == (2, 3, 2)
    np.testing.assert_array_equal(ranges[..., 0], np.minimum(first.min((-2, -1)), second.min((-2, -1))))
    np.testing.assert_array_equal(ranges[..., 1], np.maximum(first.max((-2, -1)), second.max((-2, -1))))
    difference = figures.head_ranges(second - first, difference=True)
    np.testing.assert_array_equal(difference[..., 1], np.abs(second - first).max((-2, -1)))
    np.testing.assert_array_equal(difference[..., 0], -difference[..., 1])
    norms = figures.head_ranges(first + 2, low=0.0)  # norms start at 0
    assert (norms[..., 0] == 0).all() and np.array_equal(norms[..., 1], (first + 2).max((-2, -1)))
    flat = figures.head_ranges(np.full((1, 2, 2), 0.25, np.float32))  # a constant map: still a range
    assert flat[0, 0] == 0.25 and flat[0, 1] == 0.25 + heatmaps.RANGE_FLOOR
    zero = figures.head_ranges(np.zeros((2, 2)), difference=True)
    assert zero.tolist() == [-heatmaps.RANGE_FLOOR, heatmaps.RANGE_FLOOR]
    assert figures.shared_range(first[0, 0], second[1, 2][:2]) == (
        min(first[0, 0].min(), second[1, 2][:2].min()),
        max(first[0, 0].max(), second[1, 2][:2].max()),
    )
    with pytest.raises(ValueError, match="one shape"):
        figures.head_ranges(first, second[:, :2])


def test_compare_maps_are_both_models_attention_with_their_fitted_ranges(bundled):
    result = extract(bundled, TEXT)
    encoding = result.encoding
    scratch = result.weights[::-1].copy()  # another model's maps, as far as the function can tell
    held = layer_maps.compare(
        (1, 4), pretrained=result.weights, scratch=scratch, encoding=encoding, options=analysis.ViewOptions(), fit=True
    )
    assert held.layers == (1, 4) and held.query_labels == tuple(encoding.labels)
    np.testing.assert_array_equal(held.maps, result.weights[[1, 4]])
    np.testing.assert_array_equal(held.scratch, scratch[[1, 4]])
    head = held.maps[1, 3], held.scratch[1, 3]
    assert tuple(held.ranges[1, 3]) == figures.shared_range(*head)  # the element's range is the figures' range
    assert held.difference_ranges[1, 3, 1] == np.abs(head[1] - head[0]).max()
    words = analysis.ViewOptions(word_level=True, hide_special=True)
    view = analysis.apply_view(result.weights[4], encoding, words)
    held = layer_maps.compare(
        (4,), pretrained=result.weights, scratch=scratch, encoding=encoding, options=words, fit=False
    )
    assert held.query_labels == view.query_labels and held.ranges is None
    np.testing.assert_array_equal(held.maps[0], view.matrix.astype(np.float32))


def test_a_recipe_makes_any_layer_later_as_the_kind_made_it_with_the_rest(bundled):
    """The element makes the other layers' bundles from the recipe alone (in a request's thread): a layer made
    alone is the same layer made with every other, for each kind."""
    result = extract(bundled, TEXT)
    encoding, layers = result.encoding, bundled.info.num_layers
    hidden = steps.layer_inputs(bundled.encoder, encoding)
    settings = dict(query=1, scaling=0.125, temperature=1.0, masked=(), causal=False)
    recipes = [
        layer_maps.Recipe(
            "compare",
            ("k",),
            dict(
                pretrained=result.weights,
                scratch=result.weights,
                encoding=encoding,
                options=analysis.ViewOptions(hide_special=True),
                fit=True,
            ),
        ),
        layer_maps.Recipe(
            "inside", ("k",), dict(encoder=bundled.encoder, hidden=hidden, labels=encoding.labels, fit=True, **settings)
        ),
        layer_maps.Recipe(
            "rollout",
            ("k",),
            dict(encoder=bundled.encoder, encoding=encoding, kind="norm", options=analysis.ViewOptions()),
        ),
        layer_maps.Recipe(
            "article",
            ("k",),
            dict(
                memo=layer_maps.article_memo(hidden, bundled.info.num_heads, 3, ("embed_scaling",)),
                labels=encoding.labels,
                panel="difference",
                fit=True,
            ),
        ),
    ]
    for recipe in recipes:
        every = recipe.maps(range(layers))
        alone = recipe.maps([4])
        assert alone.layers == (4,) and alone.query_labels == every.query_labels, recipe.kind
        np.testing.assert_allclose(alone.maps[0], every.maps[4], atol=1e-6, err_msg=recipe.kind)
        np.testing.assert_allclose(alone.ranges[0], every.ranges[4], atol=1e-6, err_msg=recipe.kind)


def test_each_kind_gives_what_the_analysis_gives_for_the_layer(bundled):
    result = extract(bundled, TEXT)
    encoding = result.encoding
    hidden = steps.layer_inputs(bundled.encoder, encoding)
    # Inside a head with the model's own scaling: the model's attention
    inside = layer_maps.inside(
        (2,),
        encoder=bundled.encoder,
        hidden=hidden,
        labels=encoding.labels,
        query=1,
        scaling=steps.layer_rules(bundled.encoder, 2).scaling,
        temperature=1.0,
        masked=(),
        causal=False,
        fit=False,
    )
    np.testing.assert_allclose(inside.maps[0], result.weights[2], atol=1e-5)
    # Rollout & norms: the head average, one map per layer
    raw = layer_maps.rollout(
        (5,), encoder=bundled.encoder, encoding=encoding, kind="raw", options=analysis.ViewOptions()
    )
    assert raw.maps.shape == (1, 1, encoding.num_tokens, encoding.num_tokens) and raw.ranges is None
    np.testing.assert_allclose(raw.maps[0, 0], result.weights[5].mean(0), atol=1e-5)
    # the article's layer: one computation, three panels
    memo = layer_maps.article_memo(hidden, bundled.info.num_heads, 7, ("embed_scaling",))
    correct, changed = article_compare.article_maps(hidden[3], bundled.info.num_heads, 7, ("embed_scaling",))
    panels = {
        panel: layer_maps.article((3,), memo=memo, labels=encoding.labels, panel=panel, fit=True)
        for panel in layer_maps.ARTICLE_PANELS
    }
    np.testing.assert_array_equal(panels["correct"].maps[0], correct)
    np.testing.assert_array_equal(panels["changed"].maps[0], changed)
    np.testing.assert_array_equal(panels["difference"].maps[0], changed - correct)
    np.testing.assert_array_equal(panels["correct"].ranges, panels["changed"].ranges)  # one range for both
    assert tuple(panels["correct"].ranges[0, 1]) == figures.shared_range(correct[1], changed[1])
    with pytest.raises(ValueError, match="unknown panel"):
        layer_maps.article((3,), memo=memo, labels=encoding.labels, panel="sum", fit=True)
