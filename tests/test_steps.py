"""Inside a head: the step-by-step numbers equal BERT's attention; masking and temperature behave."""

import numpy as np
import pytest
import torch

from attention_viz.analysis import steps
from attention_viz.extraction import InputError, encode, extract

TEXT = "The animal didn't cross the street because it was too tired."


def _vectors(loaded, layer, head, text=TEXT, pair=None):
    encoding = encode(loaded.tokenizer, text, pair)
    hidden = steps.layer_inputs(loaded.encoder, encoding)[layer]
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


def _one_forward_per_head_change(loaded, encoding, layer, head):
    """Vectors as Inside a head computed them with one encoder run per head: that layer's input from a
    full forward, then the head's columns of the three projections."""
    ids, types = torch.tensor(encoding.input_ids)[None], torch.tensor(encoding.token_type_ids)[None]
    with torch.inference_mode():
        hidden = loaded.encoder(ids, types).hidden_states[layer][0].float().numpy()  # (t, hidden)
        attention = loaded.encoder.layers[layer].attention
        d = attention.head_dim
        x = torch.from_numpy(hidden)[None]  # (1, t, hidden)
        return [
            p(x)[0, :, head * d : (head + 1) * d].numpy() for p in (attention.query, attention.key, attention.value)
        ]


def test_inputs_of_every_layer_from_one_run_give_the_same_steps_bit_for_bit(bundled, tiny_model):
    for loaded, text, pair in ((bundled, TEXT, None), (tiny_model, "The cat sat", "It slept")):
        encoding = encode(loaded.tokenizer, text, pair)
        inputs = steps.layer_inputs(loaded.encoder, encoding)  # one run for every layer and head below
        info = loaded.info
        assert inputs.shape == (info.num_layers, encoding.num_tokens, info.hidden_size)
        scaling = steps.scaling_factor("exact", info.head_dim, info.hidden_size)
        for layer in range(info.num_layers):
            vectors = steps.layer_vectors(loaded.encoder, inputs[layer], layer)  # (3, h, t, d)
            assert vectors.shape == (3, info.num_heads, encoding.num_tokens, info.head_dim)
            for head in sorted({0, info.num_heads // 2, info.num_heads - 1}):
                expected = _one_forward_per_head_change(loaded, encoding, layer, head)
                for ours, theirs in zip(vectors[:, head], expected, strict=True):
                    np.testing.assert_array_equal(ours, theirs)
                new = steps.head_steps(*vectors[:, head], 1, scaling, 1.5, [0])
                old = steps.head_steps(*expected, 1, scaling, 1.5, [0])
                for name in ("dots", "scores", "weights", "context", "all_weights"):
                    np.testing.assert_array_equal(getattr(new, name), getattr(old, name))


def test_layer_and_head_out_of_range_name_the_valid_range(tiny_model):
    encoding = encode(tiny_model.tokenizer, "The cat sat")
    hidden = steps.layer_inputs(tiny_model.encoder, encoding)[0]
    layers, heads = tiny_model.info.num_layers, tiny_model.info.num_heads
    with pytest.raises(IndexError, match=f"0-{layers - 1}"):
        steps.layer_vectors(tiny_model.encoder, hidden, layers)
    with pytest.raises(IndexError, match=f"0-{heads - 1}"):
        steps.head_vectors(tiny_model.encoder, hidden, 0, heads)
    with pytest.raises(IndexError, match=f"0-{layers - 1}"):
        steps.layer_vectors(tiny_model.encoder, hidden, -1)


def test_step_figures_shorten_long_labels_and_keep_the_bars_readable():
    """A 120-character token (an [UNK] piece) is written shortened on the step charts' axes, as on the map,
    and the bar chart grows below rather than squeezing its bars."""
    from attention_viz.figures.steps import BAR_PLOT_HEIGHT, key_bars, step_heatmap

    labels = ["[CLS]", "W" * 120, "[SEP]"]
    bars = key_bars(np.array([0.2, 0.5, 0.3]), labels, "weights").to_plotly_json()["layout"]
    assert max(len(text) for text in bars["xaxis"]["ticktext"]) <= 22  # 20 characters and the bidi isolates
    margin = bars["margin"]
    assert bars["height"] - margin["t"] - margin["b"] >= BAR_PLOT_HEIGHT
    heat = step_heatmap(np.ones((3, 4)), labels, "keys").to_plotly_json()["layout"]
    assert max(len(text) for text in heat["yaxis"]["ticktext"]) <= 22
    assert heat["margin"]["l"] < 300  # room for 20 wide characters (256 px), not for 120


# --- rotary positions (RoPE): the rotation step and the score over distance ---------------------------------

ROPE_FAMILIES = ("llama", "qwen3", "gemma2")  # plain; q/k norms before the rotation; scaling, cap and window


def _model_weights(loaded, ids: torch.Tensor) -> list[np.ndarray]:
    """transformers' own attention weights, ``L × (h, t, t)``."""
    with torch.inference_mode():
        output = loaded.model(input_ids=ids, output_attentions=True, use_cache=False)
    return [w[0].double().numpy() for w in output.attentions]


@pytest.mark.parametrize("family", ROPE_FAMILIES)
def test_the_rotated_query_and_key_give_the_model_s_scores(family_model, family):
    """q and k after RoPE, scaled (and capped), are the model's pre-softmax scores: transformers' weights of a
    row are their softmax, so their log differences are the scores' differences (to 1e-5)."""
    loaded = family_model(family)
    decoder = loaded.encoder
    encoding = encode(loaded.tokenizer, TEXT, None)
    hidden = steps.layer_inputs(decoder, encoding)  # (L, t, hidden)
    theirs = _model_weights(loaded, torch.tensor(encoding.input_ids)[None])
    t = encoding.num_tokens
    for layer in range(loaded.info.num_layers):
        rules = steps.layer_rules(decoder, layer)
        for head in range(loaded.info.num_heads):
            rotated = [steps.rotation_step(decoder, hidden[layer], layer, head, p) for p in range(t)]
            q = np.stack([r.query_after for r in rotated]).astype(np.float64)  # (t, d)
            k = np.stack([r.key_after for r in rotated]).astype(np.float64)
            scores = q @ k.T * rules.scaling
            if rules.softcap is not None:
                scores = np.tanh(scores / rules.softcap) * rules.softcap
            vectors = steps.head_vectors(decoder, hidden[layer], layer, head)
            assert np.array_equal(q.astype(np.float32), vectors[0]) and np.array_equal(k.astype(np.float32), vectors[1])
            for query in range(t):
                seen = np.flatnonzero(theirs[layer][head, query] > 0)  # causal, and inside a sliding window
                logs = np.log(theirs[layer][head, query, seen])
                np.testing.assert_allclose(
                    scores[query, seen] - scores[query, seen[-1]], logs - logs[-1], atol=1e-5, rtol=0
                )


def test_the_rotation_turns_each_pair_by_position_times_frequency(family_model):
    loaded = family_model("llama")
    decoder = loaded.encoder
    hidden = steps.layer_inputs(decoder, encode(loaded.tokenizer, TEXT, None))[1]
    first, later = (steps.rotation_step(decoder, hidden, 1, 3, p) for p in (0, 5))
    assert np.array_equal(first.query_after, first.query_before) and not np.any(first.angles)  # position 0
    d = decoder.config.head_dim
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)  # (d/2,): Su et al. 2021's frequencies
    np.testing.assert_allclose(later.angles, 5 * theta, rtol=1e-6)
    for before, after in ((later.query_before, later.query_after), (later.key_before, later.key_after)):
        x1, x2 = before[: d // 2].astype(np.float64), before[d // 2 :].astype(np.float64)
        turned = np.concatenate(
            [x1 * np.cos(5 * theta) - x2 * np.sin(5 * theta), x1 * np.sin(5 * theta) + x2 * np.cos(5 * theta)]
        )
        np.testing.assert_allclose(after, turned, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="rotary"):
        steps.rotation_step(family_model("gpt2").encoder, hidden, 0, 0, 0)


@pytest.mark.parametrize("family", ROPE_FAMILIES)
def test_identical_tokens_at_equal_distance_score_equally(family_model, family):
    """One token repeated: layer 0 sees the same input at every position, so the model's scores (transformers'
    weights' log differences) depend on the distance alone, and equal :func:`steps.distance_scores` from any
    start."""
    loaded = family_model(family)
    decoder, n = loaded.encoder, 12
    ids = torch.full((1, n), loaded.tokenizer.convert_tokens_to_ids("Ġthe"))
    with torch.inference_mode():
        inputs = decoder.attention_input(decoder(ids).hidden_states, 0)[0].numpy()  # (n, hidden)
    assert np.array_equal(inputs[0], inputs[-1])
    theirs = _model_weights(loaded, ids)[0]  # (h, n, n)
    for head in range(loaded.info.num_heads):
        curve = steps.distance_scores(decoder, inputs[0], 0, head, n)  # (n,)
        np.testing.assert_allclose(steps.distance_scores(decoder, inputs[0], 0, head, n, start=7), curve, atol=1e-5)
        assert np.ptp(curve) > 1e-3  # a curve, not a constant
        for query in range(n):
            seen = np.flatnonzero(theirs[head, query] > 0)
            logs = np.log(theirs[head, query, seen])
            expected = curve[query - seen] - curve[0]  # key j is query - j tokens back; the query itself: 0
            np.testing.assert_allclose(logs - logs[-1], expected, atol=1e-5, rtol=0)
