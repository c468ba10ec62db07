"""The Llama-style decoders (Llama, Qwen2, Qwen3, Mistral, Gemma 2) from tiny random checkpoints.

Each is saved in a folder and loaded through the project's loader; the from-scratch
:class:`~attention_viz.models.decoder.Decoder` must give transformers' eager attention at every layer and
head (``assert_close`` to 1e-6; it runs the same kernels in the same order, so in practice the same bits).
Beside parity: rotary positions checked by hand, grouped-query heads sharing their keys, Mistral's and
Gemma 2's sliding windows, RoPE scaling, and the named head scores on a decoder.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from tiny_families import DECODERS, GEMMA_WINDOW, MISTRAL_WINDOW, make_tiny, transformers_attentions, twin_attentions

from attention_viz.analysis import head_scores as hs
from attention_viz.analysis import stats, steps
from attention_viz.extraction import InputError, encode, extract, pretrained_attention
from attention_viz.models import families
from attention_viz.models.decoder import Decoder, apply_rotary, rope_frequencies, rotary_angles
from attention_viz.models.encoder import Variant
from attention_viz.models.loading import ModelLoadError, load_model

TEXT = "The animal didn't cross the street because it was too tired."
HEAD_DIM = {"gemma2": 16, "qwen3": 16}  # set in the config apart from hidden / heads; the others: 32 / 4


def _assert_parity(loaded, encoding) -> float:
    """From-scratch == transformers at every layer and head (1e-6); returns the largest difference."""
    theirs, ours = transformers_attentions(loaded, encoding), twin_attentions(loaded, encoding)
    t = encoding.num_tokens
    assert len(theirs) == len(ours) == loaded.info.num_layers
    for layer, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.shape == b.shape == (1, 4, t, t), layer  # per query head, not per key/value head
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0, msg=lambda m, layer=layer: f"layer {layer}: {m}")
    return max(float((a - b).abs().max()) for a, b in zip(ours, theirs, strict=True))


def _causal_rows(weights: np.ndarray) -> None:
    """Rows sum to 1 and nothing is above the diagonal, exactly."""
    t = weights.shape[-1]
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)
    assert np.all(weights[..., np.triu(np.ones((t, t), bool), k=1)] == 0)


@pytest.mark.parametrize("family", DECODERS)
def test_loads_as_a_decoder_and_equals_transformers_eager_attention(family_model, family):
    loaded = family_model(family)
    info = loaded.info
    assert (info.family, info.causal, info.family_name) == (family, True, families.family_for(family).name)
    assert isinstance(loaded.encoder, Decoder) and not loaded.encoder.training
    assert loaded.model.config._attn_implementation == "eager"
    assert (info.num_heads, info.head_dim) == (4, HEAD_DIM.get(family, 8))
    assert loaded.encoder.config.num_key_value_heads == 2
    encoding = encode(loaded.tokenizer, TEXT, None, info.max_positions)
    assert encoding.num_tokens > MISTRAL_WINDOW + 4  # longer than either sliding window
    _assert_parity(loaded, encoding)
    ours = torch.cat(twin_attentions(loaded, encoding)).numpy()  # (L, h, t, t)
    _causal_rows(ours)
    assert ours.std(axis=(-2, -1)).min() > 0.05  # heads with structure: a wrong rotation or mask shows
    hooked = pretrained_attention(loaded.model, encoding)  # the app's fast path: the same weights
    assert np.array_equal(hooked, torch.cat(transformers_attentions(loaded, encoding)).numpy())


@pytest.mark.parametrize("family", DECODERS)
def test_every_variant_keeps_the_causal_mask_and_a_pair_is_refused(family_model, family):
    loaded = family_model(family)
    for variant in Variant:
        weights = extract(loaded, TEXT, source="scratch", variant=variant, seed=3).weights
        _causal_rows(weights)
    exact = extract(loaded, TEXT, source="scratch").weights
    assert not np.allclose(extract(loaded, TEXT, source="scratch", variant="no-scaling").weights, exact)
    np.testing.assert_array_equal(exact, extract(loaded, TEXT).weights)
    with pytest.raises(InputError, match="one text, not a sentence pair") as refused:
        extract(loaded, "Where is it?", "It is in the box.")
    assert refused.value.code == "pair_unsupported"


def test_mistral_sees_only_its_window_below_and_above_it(family_model):
    loaded = family_model("mistral")
    short = encode(loaded.tokenizer, "The cat sat.", None, loaded.info.max_positions)
    long = encode(loaded.tokenizer, TEXT, None, loaded.info.max_positions)
    assert short.num_tokens <= MISTRAL_WINDOW < long.num_tokens
    for encoding in (short, long):
        _assert_parity(loaded, encoding)
    weights = torch.cat(twin_attentions(loaded, long)).numpy()  # (L, h, t, t)
    t = long.num_tokens
    i, j = np.indices((t, t))
    outside = j <= i - MISTRAL_WINDOW  # keys older than the window: exactly 0 in every layer and head
    inside = (j <= i) & ~outside
    assert outside.any() and np.all(weights[..., outside] == 0) and np.all(weights[..., inside] > 0)
    _causal_rows(weights)


def test_gemma2_alternates_a_local_and_a_global_layer_and_caps_its_scores(family_model):
    loaded = family_model("gemma2")
    config = loaded.encoder.config
    assert config.layer_types == ("sliding_attention", "full_attention")
    assert config.scaling == 24**-0.5 and config.attn_logit_softcapping == 5.0
    encoding = encode(loaded.tokenizer, TEXT, None, loaded.info.max_positions)
    weights = torch.cat(twin_attentions(loaded, encoding)).numpy()
    t = encoding.num_tokens
    i, j = np.indices((t, t))
    outside = j <= i - GEMMA_WINDOW
    assert np.all(weights[0][:, outside] == 0) and np.all(weights[1][:, outside] > 0)  # local, then global
    attention = loaded.encoder.layers[1].attention
    with torch.inference_mode():
        x = loaded.encoder.attention_input(loaded.encoder(torch.tensor(encoding.input_ids)[None]).hidden_states, 1)
        q, k, _ = attention.head_vectors(x)
    raw = (q @ k.transpose(-2, -1)) * config.scaling  # (1, h, t, s)
    assert float(raw.abs().max()) > 5.0  # the cap bites: uncapped scores go past it
    capped = torch.tanh(raw / 5.0) * 5.0
    mask = attention.mask(t, q.dtype, None)
    torch.testing.assert_close(torch.softmax(capped + mask, -1)[0].numpy(), weights[1], atol=1e-6, rtol=0)


def test_rope_scores_of_one_token_repeated_depend_only_on_the_distance(family_model):
    """Identical content at every position: the pre-softmax score of query i and key j is a function of
    i - j alone (Su et al. 2021), and not a constant one."""
    loaded = family_model("llama")
    decoder = loaded.encoder
    token = loaded.tokenizer.convert_tokens_to_ids("Ġcat")
    ids = torch.full((1, 12), token)
    with torch.inference_mode():
        x = decoder.attention_input(decoder(ids).hidden_states, 0)  # (1, t, hidden): the same row 12 times
        assert torch.equal(x[0], x[0, :1].expand(12, -1))
        q, k, _ = decoder.layers[0].attention.head_vectors(x)  # (1, h, t, d)
    scores = (q @ k.transpose(-2, -1))[0].numpy()  # (h, t, s)
    for distance in range(12):
        diagonal = np.diagonal(scores, offset=-distance, axis1=1, axis2=2)  # (h, 12 - distance)
        np.testing.assert_allclose(diagonal, diagonal[:, :1].repeat(diagonal.shape[1], 1), atol=1e-4, rtol=1e-5)
    first_column = scores[:, np.arange(12), 0]  # (h, t): distance 0 .. 11
    assert np.ptp(first_column, axis=1).min() > 0.1


def test_rotary_is_the_rotation_of_each_pair_by_position_times_frequency(family_model):
    """``apply_rotary`` against 2 × 2 rotation matrices built by hand: pair (i, i + d/2) at position p
    turns by p · theta ** (-2i / d)."""
    config = family_model("llama").encoder.config
    d, t = config.head_dim, 7
    x = torch.randn(1, 2, t, d, generator=torch.Generator().manual_seed(0))
    cos, sin = rotary_angles(config, t)
    rotated = apply_rotary(x, cos, sin)
    expected = torch.empty_like(x)
    for p in range(t):
        for i in range(d // 2):
            angle = p * config.rope_theta ** (-2 * i / d)
            turn = torch.tensor([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
            pair = x[..., p, [i, i + d // 2]]  # (1, 2 heads, 2)
            expected[..., p, [i, i + d // 2]] = pair @ turn.T
    torch.testing.assert_close(rotated, expected, atol=1e-5, rtol=1e-5)
    assert torch.equal(rotated[..., 0, :], x[..., 0, :])  # position 0 is not turned


@pytest.mark.parametrize("family", DECODERS)
def test_query_heads_of_a_group_share_their_keys_and_values_exactly(family_model, family):
    loaded = family_model(family)
    attention = loaded.encoder.layers[0].attention
    assert attention.key.out_features == 2 * attention.head_dim  # 2 key/value heads for 4 query heads
    encoding = encode(loaded.tokenizer, TEXT, None, loaded.info.max_positions)
    with torch.inference_mode():
        x = loaded.encoder.attention_input(loaded.encoder(torch.tensor(encoding.input_ids)[None]).hidden_states, 0)
        q, k, v = attention.head_vectors(x)  # (1, 4, t, d) each
    for first, second in ((0, 1), (2, 3)):  # heads 0, 1 read key/value head 0; heads 2, 3 head 1
        assert torch.equal(k[:, first], k[:, second]) and torch.equal(v[:, first], v[:, second])
        assert not torch.equal(q[:, first], q[:, second])
    assert not torch.equal(k[:, 1], k[:, 2])


@pytest.mark.parametrize(
    "rope",
    [
        {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
            "rope_theta": 500000.0,
        },
    ],
    ids=["linear", "llama3"],
)
def test_llama_rope_scaling_equals_transformers(tmp_path, rope):
    loaded = load_model(make_tiny("llama", tmp_path, rope_parameters=rope))
    config = loaded.encoder.config
    assert config.rope_type == rope["rope_type"]
    theirs = loaded.model.rotary_emb.inv_freq
    assert torch.equal(rope_frequencies(config), theirs)
    unscaled = rope_frequencies(dataclasses.replace(config, rope_type="default"))
    assert torch.equal(theirs[0], unscaled[0]) != (rope["rope_type"] == "linear")  # llama3 keeps the highest
    assert not torch.equal(theirs[-1], unscaled[-1])  # both slow the lowest frequency down
    _assert_parity(loaded, encode(loaded.tokenizer, TEXT, None, loaded.info.max_positions))


def test_an_unsupported_rope_scaling_gets_a_clear_message(tmp_path):
    rope = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    with pytest.raises(ModelLoadError, match="rope_type 'dynamic' is not supported") as caught:
        load_model(make_tiny("llama", tmp_path, rope_parameters=rope))
    assert caught.value.code == "mismatch"


def test_padded_batch_equals_transformers(family_model):
    """The corpus pages run padded batches: a short text padded on the right sees no padding."""
    from attention_viz.extraction.batch import encode_batch

    loaded = family_model("mistral")
    inputs, rows = encode_batch(loaded.tokenizer, [(TEXT, None), ("Short.", None)], 60, 0)
    assert (inputs["attention_mask"] == 0).any()
    kwargs = families.family_for("mistral").model_kwargs(inputs)
    with torch.inference_mode():
        expected = loaded.model(**kwargs, output_attentions=True).attentions
        ours = loaded.encoder(inputs["input_ids"], None, inputs["attention_mask"]).attentions
    for row, (ids, _, _) in enumerate(rows):
        n = len(ids)
        for a, b in zip(ours, expected, strict=True):
            torch.testing.assert_close(a[row, :, :n, :n], b[row, :, :n, :n], atol=1e-6, rtol=0)


def test_named_head_scores_run_unchanged_on_a_llama(family_model):
    loaded = family_model("llama")
    scores = hs.model_head_scores(loaded, count=2, length=10)
    for kind in (scores.repeated, scores.control):
        for name in ("sink", "previous", "induction"):
            assert kind[name].shape == (2, 4) and np.all((kind[name] >= 0) & (kind[name] <= 1)), name
        assert np.isnan(kind["cls_sep"]).all()  # a decoder has no [CLS]/[SEP]
    # the sink score is the definition on the model's own maps: the mean weight on the first token
    sequences = hs.random_sequences(loaded.tokenizer, 2, 10, 0, causal=True)
    assert sequences.repeated[0, 0] == loaded.tokenizer.bos_token_id  # <s> first, as the tokenizer puts it
    weights = hs._forward_attention(loaded, sequences.repeated)  # (b, L, h, t, t)
    np.testing.assert_allclose(scores.repeated["sink"], weights[..., 1:, 0].mean((0, -1)), atol=1e-6)


@pytest.mark.parametrize("family", DECODERS)
def test_inside_steps_give_the_models_weights_in_every_layer(family_model, family):
    """The Inside page's step-by-step computation with the model's own scaling, window and cap (Gemma 2's
    local layer 0, Mistral's window) gives transformers' weights."""
    loaded = family_model(family)
    info = loaded.info
    encoding = encode(loaded.tokenizer, TEXT, None, info.max_positions)
    theirs = torch.cat(transformers_attentions(loaded, encoding)).numpy()  # (L, h, t, t)
    hidden = steps.layer_inputs(loaded.encoder, encoding)  # (L, t, hidden)
    for layer in range(info.num_layers):
        rules = steps.layer_rules(loaded.encoder, layer)
        scaling = steps.scaling_factor("exact", info.head_dim, info.hidden_size, rules.scaling)
        vectors = steps.layer_vectors(loaded.encoder, hidden[layer], layer)  # (3, h, t, d)
        ours = steps.layer_weights(vectors, 1, scaling, 1.0, (), True, rules.window, rules.softcap)
        np.testing.assert_allclose(ours, theirs[layer], atol=1e-5, rtol=0, err_msg=f"layer {layer}")
    windows = {"mistral": MISTRAL_WINDOW, "gemma2": GEMMA_WINDOW}
    assert steps.layer_rules(loaded.encoder, 0).window == windows.get(family)
    # the model's description names the same windows, and the statistics' uniform entropy counts the keys
    # its own weights reach: query by query, those transformers gives a weight (its causal and window mask)
    rules = tuple(steps.layer_rules(loaded.encoder, layer).window for layer in range(info.num_layers))
    assert info.windows == (rules if family in windows else ())
    reached = (theirs[:, 0] > 0).sum(-1)  # (L, t): keys of non-zero weight, head 0
    seen = stats.keys_seen(theirs.shape[-1], info.num_layers, True, info.windows)
    np.testing.assert_array_equal(seen, reached)


@pytest.mark.parametrize("family", ["llama", "mistral", "gemma2"])
def test_a_layers_steps_are_each_heads_steps_bit_for_bit(family_model, family):
    """Inside a head's steps of every head of a layer (what the page's element draws as it steps) are, head by head,
    :func:`steps.head_steps` of that head's vectors with the layer's window and cap, its rotation and its score
    over distance."""
    loaded = family_model(family)
    info = loaded.info
    hidden = steps.layer_inputs(loaded.encoder, encode(loaded.tokenizer, TEXT, None, info.max_positions))
    for layer in range(info.num_layers):
        rules = steps.layer_rules(loaded.encoder, layer)
        scaling = steps.scaling_factor("exact", info.head_dim, info.hidden_size, rules.scaling)
        found = steps.layer_steps(loaded.encoder, hidden[layer], layer, 9, scaling, 1.5, (8,), True, 16)
        assert found.layer == layer and found.rules == rules and len(found.heads) == info.num_heads
        for head, shown in enumerate(found.heads):
            q, k, v = steps.head_vectors(loaded.encoder, hidden[layer], layer, head)
            own = steps.head_steps(q, k, v, 9, scaling, 1.5, (8,), True, rules.window, rules.softcap)
            for name in ("query", "keys", "values", "dots", "scores", "weights", "context", "all_weights"):
                assert np.array_equal(getattr(shown, name), getattr(own, name)), (layer, head, name)
            rotated = steps.rotation_step(loaded.encoder, hidden[layer], layer, head, 9).vectors
            assert np.array_equal(found.rotations[head], rotated)
            curve = steps.distance_scores(loaded.encoder, hidden[layer][9], layer, head, 16)
            assert np.array_equal(found.distances[head], curve)
            if rules.softcap is None:
                assert found.uncapped is None
            else:
                assert np.array_equal(found.uncapped[head], steps.uncapped_scores(own, scaling))
