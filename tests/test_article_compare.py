"""The article's differences one at a time: none = the correct layer, all = the article's layer."""

import numpy as np
import pytest
import torch

from attention_viz.analysis import article_compare
from attention_viz.models.article import ArticleSelfAttention


@pytest.fixture
def setup():
    hidden = np.random.default_rng(0).normal(size=(7, 32)).astype(np.float32)
    return hidden, *article_compare.seeded_layers(32, 4, seed=5)


def test_no_difference_is_the_correct_layer(setup):
    hidden, correct, article = setup
    with torch.inference_mode():
        _, expected = correct(torch.from_numpy(hidden)[None])
    np.testing.assert_allclose(article_compare.variant_weights(hidden, correct, article), expected[0], atol=1e-6)


def test_shared_projections_and_embed_scaling_is_the_articles_layer(setup):
    hidden, correct, article = setup
    x = torch.from_numpy(hidden)[None]
    with torch.inference_mode():
        _, designed = article(x, x, x, None)
        _, printed = ArticleSelfAttention(32, 4, apply_projections=False)(x, x, x, None)
    both = article_compare.variant_weights(hidden, correct, article, ["shared", "embed_scaling"])
    np.testing.assert_allclose(both, designed[0], atol=1e-6)
    as_printed = article_compare.variant_weights(hidden, correct, article, article_compare.DIFFERENCES)
    np.testing.assert_allclose(as_printed, printed[0], atol=1e-6)


def test_each_difference_alone_changes_the_weights(setup):
    hidden, correct, article = setup
    base = article_compare.variant_weights(hidden, correct, article)
    for difference in article_compare.DIFFERENCES:
        one = article_compare.variant_weights(hidden, correct, article, [difference])
        np.testing.assert_allclose(one.sum(-1), 1, atol=1e-6)
        assert np.abs(one - base).max() > 1e-3, difference


def test_same_seed_same_layers_and_global_rng_untouched():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = article_compare.seeded_layers(32, 4, 9)
    after = torch.rand(1)
    b = article_compare.seeded_layers(32, 4, 9)
    assert torch.equal(before, after)
    assert torch.equal(a[0].query.weight, b[0].query.weight) and torch.equal(a[1].keys.weight, b[1].keys.weight)
    with pytest.raises(ValueError, match="unknown differences"):
        article_compare.variant_weights(np.zeros((2, 32), np.float32), *a, ["nope"])


def test_article_maps_are_both_variants_of_one_seeded_pair(setup):
    hidden, correct, article = setup
    base, changed = article_compare.article_maps(hidden, 4, 5, ["shared", "embed_scaling"])
    np.testing.assert_array_equal(base, article_compare.variant_weights(hidden, correct, article))
    expected = article_compare.variant_weights(hidden, correct, article, ["shared", "embed_scaling"])
    np.testing.assert_array_equal(changed, expected)
    assert base.shape == changed.shape == (4, 7, 7)
    with pytest.raises(ValueError, match="unknown differences"):
        article_compare.article_maps(hidden, 4, 5, ["bias"])
