"""Inside a head: the step-by-step numbers equal BERT's attention; masking and temperature behave."""

import numpy as np
import pytest
import torch

from attention_viz.analysis import steps
from attention_viz.extraction import InputError, encode, extract

TEXT = "The animal didn't cross the street because it was too tired."


def _vectors(loaded, layer, head, text=TEXT, pair=None):
    encoding = encode(loaded.tokenizer, text, pair)
    hidden = steps.layer_input(loaded.encoder, encoding, layer)
    return steps.head_vectors(loaded.encoder, hidden, layer, head)


@pytest.mark.parametrize(("layer", "head"), [(0, 0), (3, 1), (5, 11)])
def test_bert_scaling_gives_transformers_weights(bundled, layer, head):
    expected = extract(bundled, TEXT).weights[layer, head]
    info = bundled.info
    scaling = steps.scaling_factor("exact", info.head_dim, info.hidden_size)
    for query in (0, 8):
        result = steps.head_steps(*_vectors(bundled, layer, head), query, scaling)
        np.testing.assert_allclose(result.weights, expected[query], atol=1e-5, rtol=0)
        np.testing.assert_allclose(result.all_weights, expected, atol=1e-5, rtol=0)


def test_each_step_follows_from_the_one_before(tiny_model):
    info = tiny_model.info
    queries, keys, values = _vectors(tiny_model, 1, info.num_heads - 1, "The cat sat", "It slept")
    assert queries.shape == keys.shape == values.shape == (8, info.head_dim)
    s = steps.head_steps(queries, keys, values, 2, 0.5, temperature=2.0)
    np.testing.assert_allclose(s.dots, keys @ queries[2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s.scores, s.dots * 0.25, rtol=1e-6)
    expected = torch.softmax(torch.from_numpy(s.scores.astype(np.float64)), -1).numpy()
    np.testing.assert_allclose(s.weights, expected, atol=1e-7)
    np.testing.assert_allclose(s.context, s.weights @ values, rtol=1e-6)
    np.testing.assert_allclose(s.all_weights.sum(-1), 1, atol=1e-6)


def test_masked_keys_get_exactly_zero_and_rows_still_sum_to_one(bundled):
    queries, keys, values = _vectors(bundled, 3, 1)
    s = steps.head_steps(queries, keys, values, 8, 0.125, masked=[0, 2, 15])
    assert (s.weights[[0, 2, 15]] == 0).all() and (s.all_weights[:, [0, 2, 15]] == 0).all()
    assert np.isneginf(s.scores[[0, 2, 15]]).all()
    np.testing.assert_allclose(s.all_weights.sum(-1), 1, atol=1e-6)
    kept = [k for k in range(16) if k not in (0, 2, 15)]
    plain = steps.head_steps(queries, keys, values, 8, 0.125)
    np.testing.assert_allclose(s.weights[kept], plain.weights[kept] / plain.weights[kept].sum(), rtol=1e-5)


def test_article_scaling_flattens_and_temperature_sharpens(bundled):
    info = bundled.info
    vectors = _vectors(bundled, 3, 1)
    bert = steps.head_steps(*vectors, 8, steps.scaling_factor("exact", info.head_dim, info.hidden_size))
    article = steps.head_steps(*vectors, 8, steps.scaling_factor("article-scaling", info.head_dim, info.hidden_size))
    np.testing.assert_allclose(article.scores * np.sqrt(info.num_heads), bert.scores, rtol=1e-5)
    assert article.weights.max() < bert.weights.max()
    cold = steps.head_steps(*vectors, 8, bert.scaling, temperature=0.1)
    assert cold.weights.max() > bert.weights.max()


def test_bad_settings_are_refused_with_a_message(bundled):
    vectors = _vectors(bundled, 0, 0)
    with pytest.raises(InputError, match="every key is masked"):
        steps.head_steps(*vectors, 0, 1.0, masked=range(16))
    with pytest.raises(InputError, match="temperature"):
        steps.head_steps(*vectors, 0, 1.0, temperature=0)
    with pytest.raises(InputError, match="out of range"):
        steps.head_steps(*vectors, 16, 1.0)
    with pytest.raises(InputError, match="unknown scaling"):
        steps.scaling_factor("x", 32, 384)
