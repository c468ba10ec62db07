"""Inside one head of an encoder–decoder (tiny random T5 and BART built offline): the steps of the encoder's and
the decoder's self-attention and of the cross-attention give extract_seq2seq's maps, read the right hidden
states (the cross-attention's keys and values: the encoder's output), and add T5's position bias and BART's
scaling as the models do."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_seq2seq import SEQ2SEQ, T5_BUCKETS, T5_MAX_DISTANCE, make_tiny_seq2seq

from attention_viz.analysis.seq2seq_steps import seq2seq_steps, sublayer_inputs
from attention_viz.extraction import InputError
from attention_viz.extraction.seq2seq import KINDS, extract_seq2seq, generate_seq2seq
from attention_viz.models.loading import load_seq2seq
from attention_viz.models.seq2seq import relative_position_bucket

SOURCE = "The animal didn't cross the street because it was too tired. Where is it?"
TARGET = "The cat sat on the mat."


@pytest.fixture(scope="module")
def seq2seq(tmp_path_factory):
    """``seq2seq(family)``: ``(loaded, result, inputs)`` of a tiny ``t5`` or ``bart``, built once."""
    built = {}

    def model(family: str):
        if family not in built:
            loaded = load_seq2seq(make_tiny_seq2seq(family, tmp_path_factory.mktemp(f"tiny-steps-{family}")))
            result = extract_seq2seq(loaded, SOURCE, TARGET, "pretrained")
            built[family] = loaded, result, sublayer_inputs(loaded.twin, result.source, result.target)
        return built[family]

    return model


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("family", SEQ2SEQ)
def test_the_steps_give_extract_seq2seqs_map_for_every_layer_head_and_query(seq2seq, family, kind):
    loaded, result, inputs = seq2seq(family)
    maps = result.maps(kind)  # transformers' (L, h, queries, keys)
    layers, heads, queries, keys = maps.shape
    rows, columns = {"encoder": ("source",) * 2, "decoder": ("target",) * 2, "cross": ("target", "source")}[kind]
    assert (queries, keys) == (getattr(result, rows).num_tokens, getattr(result, columns).num_tokens)
    for layer in range(layers):
        for head in range(heads):
            for query in {0, queries // 2, queries - 1}:
                found = seq2seq_steps(loaded.twin, inputs, kind, layer, head, query)
                np.testing.assert_allclose(found.weights, maps[layer, head, query], rtol=0, atol=1e-6)
                assert abs(float(found.weights.sum()) - 1.0) <= 1e-6
            np.testing.assert_allclose(found.all_weights, maps[layer, head], rtol=0, atol=1e-6)
    assert found.keys.shape == found.values.shape == (keys, found.query.shape[0])
    np.testing.assert_allclose(found.context, found.weights @ found.values, rtol=0, atol=1e-6)


@pytest.mark.parametrize("family", SEQ2SEQ)
def test_the_decoders_weights_are_zero_above_the_query_and_its_masked_keys_named(seq2seq, family):
    loaded, result, inputs = seq2seq(family)
    t = result.target.num_tokens
    for query in range(t):
        found = seq2seq_steps(loaded.twin, inputs, "decoder", 1, 1, query)
        assert found.masked == tuple(range(query + 1, t))
        assert np.all(found.weights[query + 1 :] == 0)
        assert np.all(np.isneginf(found.scores[query + 1 :])) and np.isfinite(found.scores[: query + 1]).all()
        # the seen keys share the whole row: a softmax of their finite scores (a weight may underflow to 0 in
        # float32 where T5's unscaled scores of a random model are far apart, so "> 0" is not the test)
        seen = found.scores[: query + 1].astype(np.float64)
        expected = np.exp(seen - seen.max()) / np.exp(seen - seen.max()).sum()
        np.testing.assert_allclose(found.weights[: query + 1], expected, rtol=0, atol=1e-6)
    for kind in ("encoder", "cross"):  # no causal mask: every source key is seen
        assert seq2seq_steps(loaded.twin, inputs, kind, 0, 0, 0).masked == ()


def _cross_key_weight(loaded, layer: int) -> torch.Tensor:
    """transformers' key projection of decoder layer ``layer``'s cross-attention ``(h·d, hidden)`` and its bias."""
    if loaded.info.family == "t5":
        return loaded.model.decoder.block[layer].layer[1].EncDecAttention.k.weight, None
    projection = loaded.model.model.decoder.layers[layer].encoder_attn.k_proj
    return projection.weight, projection.bias


@pytest.mark.parametrize("family", SEQ2SEQ)
def test_the_cross_attentions_keys_come_from_the_encoders_output(seq2seq, family):
    loaded, result, inputs = seq2seq(family)
    s, t = result.source.num_tokens, result.target.num_tokens
    with torch.inference_mode():  # transformers' own encoder output and cross-attention key weights
        memory = loaded.model.get_encoder()(input_ids=torch.tensor(result.source.input_ids)[None]).last_hidden_state[0]
        layer, head = 2, 1
        weight, bias = _cross_key_weight(loaded, layer)
        keys = memory @ weight.T + (0 if bias is None else bias)  # (s, h·d)
    found = seq2seq_steps(loaded.twin, inputs, "cross", layer, head, t - 1)
    d = found.query.shape[0]
    assert found.keys.shape == (s, d) and s != t
    np.testing.assert_allclose(found.keys, keys[:, head * d : (head + 1) * d].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(inputs.memory, memory.numpy(), rtol=0, atol=1e-5)
    assert not found.has_bias and np.all(found.bias == 0)  # no position bias between the two texts


def test_t5_adds_its_bucketed_relative_bias_unscaled(seq2seq):
    loaded, result, inputs = seq2seq("t5")
    s, t = result.source.num_tokens, result.target.num_tokens
    stacks = {"encoder": (loaded.model.encoder, s, True), "decoder": (loaded.model.decoder, t, False)}
    for kind, (stack, n, bidirectional) in stacks.items():
        table = stack.block[0].layer[0].SelfAttention.relative_attention_bias.weight.detach().numpy()  # (buckets, h)
        query, head = n // 2, 3
        found = seq2seq_steps(loaded.twin, inputs, kind, 1, head, query)
        distance = torch.arange(n) - query  # key - query
        buckets = relative_position_bucket(distance, bidirectional, T5_BUCKETS, T5_MAX_DISTANCE).numpy()
        assert found.has_bias and found.scaling == 1.0  # T5 does not scale its scores
        np.testing.assert_array_equal(found.bias, table[buckets, head])
        seen = np.isfinite(found.scores)
        np.testing.assert_allclose(found.scores[seen], (found.dots + found.bias)[seen], rtol=0, atol=1e-6)


def test_bart_scales_by_its_stacks_head_size_and_adds_no_bias(seq2seq):
    loaded, _, inputs = seq2seq("bart")
    encoder = seq2seq_steps(loaded.twin, inputs, "encoder", 0, 3, 2)  # 4 heads of 8
    decoder = seq2seq_steps(loaded.twin, inputs, "cross", 0, 1, 2)  # 2 heads of 16
    assert encoder.query.shape == (8,) and encoder.scaling == 8**-0.5
    assert decoder.query.shape == (16,) and decoder.scaling == 16**-0.5
    for found in (encoder, decoder):
        assert not found.has_bias
        np.testing.assert_allclose(found.scores, found.dots * found.scaling, rtol=0, atol=1e-6)


def test_bad_kind_layer_head_or_query_raise_clear_errors(seq2seq):
    loaded, result, inputs = seq2seq("bart")
    with pytest.raises(InputError, match="unknown attention kind"):
        seq2seq_steps(loaded.twin, inputs, "sideways", 0, 0, 0)
    with pytest.raises(IndexError, match="layer 2 out of range: 0-1"):
        seq2seq_steps(loaded.twin, inputs, "encoder", 2, 0, 0)  # the encoder has 2 layers
    with pytest.raises(IndexError, match="head 2 out of range: 0-1"):
        seq2seq_steps(loaded.twin, inputs, "cross", 0, 2, 0)  # the decoder has 2 heads
    t = result.target.num_tokens
    with pytest.raises(InputError, match=f"query token {t} out of range"):
        seq2seq_steps(loaded.twin, inputs, "cross", 0, 0, t)  # the cross-attention's queries are target tokens


def test_the_steps_follow_a_target_the_model_wrote(seq2seq):
    loaded, _, _ = seq2seq("bart")
    written = generate_seq2seq(loaded, SOURCE, 4, "pretrained")
    inputs = sublayer_inputs(loaded.twin, written.source, written.target)
    t = written.target.num_tokens
    assert inputs.cross.shape[1] == t and written.generated.sum() >= 1
    for kind in ("decoder", "cross"):
        found = seq2seq_steps(loaded.twin, inputs, kind, 2, 1, t - 1)  # the step after the last written token
        np.testing.assert_allclose(found.all_weights, written.maps(kind)[2, 1], rtol=0, atol=1e-6)
