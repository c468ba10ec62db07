"""Exploring heads: statistics, tags, views, rollout up to a layer, norm-based attention, similarity."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose

from attention_viz import analysis
from attention_viz.analysis import (
    TokenKinds,
    ViewOptions,
    apply_view,
    head_divergence,
    head_statistics,
    mds_layout,
    norm_based_attention,
    rollout_and_norms,
    statistic_grid,
    statistic_sums,
    statistics_frame,
    transformed_values,
    word_groups,
)
from attention_viz.analysis.stats import is_punctuation
from attention_viz.extraction import encode, extract

# [CLS] hi , [SEP]: one layer, one head; every statistic below is worked out by hand.
HAND = np.array([[1.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0], [0.0, 0.25, 0.25, 0.5], [0.0, 0.0, 0.0, 1.0]])
HAND_KINDS = TokenKinds.from_tokens(["[CLS]", "hi", ",", "[SEP]"], [True, False, False, True], [0, 0, 0, 0])


def test_statistics_on_a_hand_made_head():
    row = head_statistics(HAND[None, None], HAND_KINDS).iloc[0]
    assert (row["layer"], row["head"]) == (0, 0)
    assert row["cls"] == pytest.approx((1 + 0.5) / 4)
    assert row["sep"] == pytest.approx((0.5 + 1) / 4)
    assert row["punctuation"] == pytest.approx((0.5 + 0.25) / 4)
    assert row["self"] == pytest.approx((1 + 0.25 + 1) / 4)
    assert row["previous"] == pytest.approx((0.5 + 0.25 + 0) / 3)  # queries 1-3 have a previous token
    assert row["next"] == pytest.approx((0 + 0.5 + 0.5) / 3)  # queries 0-2 have a next token
    assert row["distance"] == pytest.approx((0 + 1 + 0.75 + 0) / 4)
    assert row["entropy"] == pytest.approx((0 + 1 + 1.5 + 0) / 4)  # bits
    assert row["uniform_entropy"] == pytest.approx(2.0)
    assert np.isnan(row["a_to_b"]) and np.isnan(row["b_to_a"])  # a single text has no pair shares
    assert row["tags"] == "self"


def test_pair_shares_and_broad_tag():
    kinds = TokenKinds.from_tokens(["[CLS]", "a", "[SEP]", "b", "[SEP]"], [1, 0, 1, 0, 1], [0, 0, 0, 1, 1])
    uniform = np.full((1, 1, 5, 5), 0.2)
    row = head_statistics(uniform, kinds).iloc[0]
    assert row["a_to_b"] == pytest.approx(0.4)  # 2 of 5 keys are in B
    assert row["b_to_a"] == pytest.approx(0.6)
    assert row["entropy"] == pytest.approx(np.log2(5))
    assert row["tags"] == "broad"  # no pair tags: [CLS]/[SEP] in A would make most heads "B→A"


def test_a_causal_heads_uniform_entropy_is_over_the_keys_each_query_sees_within_its_window():
    """Uniform attention over what each query may see (itself and the tokens before it; on a sliding layer of
    window 2, at most 2 of them) has the head's own entropy, and the head is "broad"."""
    t = 4
    kinds = TokenKinds.from_tokens(list("abcd"), [False] * t, [0] * t)
    full = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]  # row i: 1/(i + 1) on keys 0..i
    window = np.tril(np.ones((t, t))) - np.tril(np.ones((t, t)), -2)  # keys i-1 and i
    window /= window.sum(-1, keepdims=True)
    frame = head_statistics(np.stack([full[None], window[None]]), kinds, causal=True, windows=(None, 2))
    by_hand = [(0 + 1 + np.log2(3) + 2) / 4, (0 + 1 + 1 + 1) / 4]  # log2 of the keys seen, query by query
    np.testing.assert_allclose(frame["uniform_entropy"], by_hand, rtol=1e-12)
    np.testing.assert_allclose(frame["entropy"], by_hand, rtol=1e-12)
    assert all("broad" in tags.split(", ") for tags in frame["tags"])  # (and "self": early queries see little else)
    not_causal = head_statistics(full[None, None], kinds).iloc[0]
    assert not_causal["uniform_entropy"] == pytest.approx(2.0)  # an encoder's query sees all 4 keys
    with pytest.raises(ValueError, match="one per layer"):
        head_statistics(full[None, None], kinds, causal=True, windows=(None, 2))


def test_tags_previous_and_next_token_heads():
    t = 6
    previous = np.eye(t, k=-1)
    previous[0, 0] = 1.0  # [CLS] has no previous token: it attends to itself
    following = np.eye(t, k=1)
    following[-1, -1] = 1.0
    weights = np.stack([previous, following])[None]  # (1, 2, t, t)
    kinds = TokenKinds.from_tokens(["[CLS]", "a", "b", "c", "d", "[SEP]"], [1, 0, 0, 0, 0, 1], [0] * t)
    frame = head_statistics(weights, kinds)
    assert list(frame["tags"]) == ["previous-token", "next-token"]
    assert frame["previous"].iloc[0] == pytest.approx(1.0)
    assert frame["distance"].iloc[0] == pytest.approx(5 / 6)


def test_corpus_sums_weigh_every_query_once():
    other = np.full((1, 1, 2, 2), 0.5)
    kinds = TokenKinds.from_tokens(["[CLS]", "[SEP]"], [1, 1], [0, 0])
    total = statistic_sums(HAND[None, None], HAND_KINDS) + statistic_sums(other, kinds)
    frame = statistics_frame(total)
    assert frame["self"].iloc[0] == pytest.approx((1 + 0.25 + 1 + 0.5 + 0.5) / 6)
    assert frame["previous"].iloc[0] == pytest.approx((0.75 + 0.5) / 4)


def test_statistics_frame_is_layer_major_and_grid_round_trips():
    rng = np.random.default_rng(1)
    weights = rng.random((3, 4, 5, 5))
    weights /= weights.sum(-1, keepdims=True)
    kinds = TokenKinds.from_tokens(["[CLS]", "a", "b", "c", "[SEP]"], [1, 0, 0, 0, 1], [0] * 5)
    frame = head_statistics(weights, kinds)
    assert list(frame["layer"]) == [0] * 4 + [1] * 4 + [2] * 4 and list(frame["head"]) == [0, 1, 2, 3] * 3
    grid = statistic_grid(frame, "self")
    assert_allclose(grid, np.diagonal(weights, axis1=-2, axis2=-1).mean(-1))


def test_statistics_refuse_a_mismatched_shape():
    with pytest.raises(ValueError, match="layers, heads, t, t"):
        statistic_sums(HAND, HAND_KINDS)


def test_punctuation_tokens():
    assert is_punctuation(",") and is_punctuation("...") and is_punctuation("。") and is_punctuation("##!")
    assert not is_punctuation("a") and not is_punctuation("$5") and not is_punctuation("")


def test_merge_refuses_a_grouping_that_leaves_out_a_token(bundled):
    """[CLS]/[SEP] have no word id (-1): merging by word ids alone would drop them, so it is refused."""
    encoding = encode(bundled.tokenizer, "I have a new GPU!")
    weights = np.full((encoding.num_tokens, encoding.num_tokens), 1 / encoding.num_tokens)
    with pytest.raises(ValueError, match="every token needs a group"):
        analysis.merge_word_pieces(weights, encoding.word_ids)  # -1 for [CLS]/[SEP]
    with pytest.raises(ValueError, match="without gaps"):
        analysis.merge_word_pieces(np.eye(3), np.array([0, 2, 2]))


def test_word_level_keeps_cls_and_sep_and_rows_sum_to_one(bundled):
    """Words, not pieces, of "I have a new GPU!" at layer 3, head 1: [CLS] and [SEP] keep rows and columns of
    their own, so rows sum to 1 (dropped, the rows summed to 0.19-0.93)."""
    result = extract(bundled, "I have a new GPU!")
    view = apply_view(result.weights[3, 1], result.encoding, ViewOptions(word_level=True))
    assert view.query_labels == ("[CLS]", "I", "have", "a", "new", "GPU", "!", "[SEP]")
    assert view.key_labels == view.query_labels
    assert_allclose(view.matrix.sum(-1), 1, atol=1e-5)  # dropping [CLS]/[SEP] gave 0.19-0.93
    groups, labels, special, _ = word_groups(result.encoding)
    assert list(special) == [True] + [False] * 6 + [True]
    assert labels == view.query_labels and len(groups) == result.encoding.num_tokens


def test_word_level_values_of_a_split_word(bundled):
    """In "I have a new GPU!", "gpu" is gp and ##u: to a word, the sum over its pieces; from a word, the mean."""
    encoding = encode(bundled.tokenizer, "I have a new GPU!")
    assert encoding.tokens[4:8] == ("new", "gp", "##u", "!")
    t = encoding.num_tokens
    weights = np.zeros((t, t))
    sub = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [0.4, 0.3, 0.2, 0.1], [0.7, 0.1, 0.1, 0.1]])
    weights[4:8, 4:8] = sub
    weights[[0, 1, 2, 3, 8], 0] = 1.0
    view = apply_view(weights, encoding, ViewOptions(word_level=True))
    assert_allclose(view.matrix[4:7, 4:7], [[0.1, 0.5, 0.4], [0.325, 0.5, 0.175], [0.7, 0.2, 0.1]], atol=1e-12)


def test_hide_special_renormalises(bundled):
    result = extract(bundled, "The cat sat.")
    view = apply_view(result.weights, result.encoding, ViewOptions(hide_special=True))
    assert view.renormalised and "[CLS]" not in view.query_labels and "[SEP]" not in view.key_labels
    assert view.matrix.shape == (6, 12, 4, 4)
    assert_allclose(view.matrix.sum(-1), 1, atol=1e-9)
    kept = result.weights[..., 1:-1, 1:-1]
    assert_allclose(view.matrix, kept / kept.sum(-1, keepdims=True), atol=1e-6)
    assert_allclose(result.weights.sum(-1), 1, atol=1e-5)  # the raw view is untouched
    raw = apply_view(result.weights, result.encoding, ViewOptions())
    assert not raw.renormalised and raw.query_labels == result.encoding.labels


def test_pair_blocks_are_slices_and_match_the_pair_shares(bundled):
    result = extract(bundled, "The cat sat.", "It slept.")  # [CLS] the cat sat . [SEP] | it slept . [SEP]
    a_to_b = apply_view(result.weights, result.encoding, ViewOptions(block="AB"))
    assert a_to_b.matrix.shape == (6, 12, 6, 4)  # non-square
    assert a_to_b.query_labels == ("[CLS]", "The", "cat", "sat", ".", "[SEP]")
    assert a_to_b.key_labels == ("It", "slept", ".", "[SEP]")
    assert_allclose(a_to_b.matrix, result.weights[..., :6, 6:], atol=1e-7)
    frame = head_statistics(result.weights, TokenKinds.from_encoding(result.encoding))
    assert_allclose(frame["a_to_b"], a_to_b.matrix.sum(-1).mean(-1).reshape(-1), atol=1e-6)
    b_to_a = apply_view(result.weights, result.encoding, ViewOptions(word_level=True, hide_special=True, block="BA"))
    assert b_to_a.query_labels == ("It", "slept", ".") and b_to_a.key_labels == ("The", "cat", "sat", ".")
    single = extract(bundled, "The cat sat.")
    assert apply_view(single.weights, single.encoding, ViewOptions(block="AB")).matrix.shape[-2:] == (6, 6)
    with pytest.raises(ValueError, match="unknown block"):
        apply_view(single.weights, single.encoding, ViewOptions(block="AC"))


ROLLOUT_A1 = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
ROLLOUT_A2 = np.array([[0.5, 0.25, 0.25], [0.3, 0.4, 0.3], [0.2, 0.2, 0.6]])


def test_rollout_up_to_a_layer():
    """Two head-averaged 3 × 3 layers with a rollout computed by hand: up to layer 0, then up to layer 1."""
    weights = np.stack([ROLLOUT_A1, ROLLOUT_A2])
    first = (ROLLOUT_A1 + np.eye(3)) / 2
    assert_allclose(analysis.attention_rollout(weights, up_to_layer=0), first / first.sum(-1, keepdims=True))
    expected = [[0.6188, 0.2125, 0.1688], [0.1975, 0.5550, 0.2475], [0.1300, 0.1300, 0.7400]]
    assert_allclose(analysis.attention_rollout(weights, up_to_layer=1), expected, atol=1e-4)
    with pytest.raises(ValueError, match="out of range"):
        analysis.attention_rollout(weights, up_to_layer=2)


def test_norm_based_attention_by_hand():
    weights = np.array([[[0.5, 0.5], [1.0, 0.0]]])  # (h=1, t=2, t=2)
    transformed = np.array([[[3.0, 0.0], [0.0, 4.0]]])  # (h, t, hidden): norms 3 and 4
    per_head, layer = norm_based_attention(weights, transformed)
    assert_allclose(per_head, [[[1.5, 2.0], [3.0, 0.0]]])
    assert_allclose(layer, per_head[0])  # one head: ‖α f‖ = α ‖f‖
    turned = np.array([[[0.0, 3.0], [4.0, 0.0]]])  # a second head sends the same norms, turned 90°
    _, summed = norm_based_attention(np.concatenate([weights, weights]), np.concatenate([transformed, turned]))
    assert summed[0, 0] == pytest.approx(np.hypot(1.5, 1.5))  # ‖0.5 (3, 0) + 0.5 (0, 3)‖
    opposite = np.concatenate([transformed, -transformed])  # two heads sending opposite vectors cancel
    _, cancelled = norm_based_attention(np.concatenate([weights, weights]), opposite)
    assert_allclose(cancelled, 0.0)


def test_transformed_values_rebuild_the_attention_output(bundled):
    encoding = encode(bundled.tokenizer, "The cat sat on the mat.")
    encoder, layer = bundled.encoder, 2
    with torch.inference_mode():
        output = encoder(torch.from_numpy(encoding.input_ids)[None])
        x = output.hidden_states[layer]  # (1, t, hidden)
        attended, weights = encoder.layers[layer].attention(x)
    transformed = transformed_values(encoder, layer, x[0])  # (h, t, hidden)
    rebuilt = np.einsum("hij,hjd->id", weights[0].double().numpy(), transformed)
    rebuilt += encoder.layers[layer].attention.output.bias.detach().double().numpy()
    assert_allclose(rebuilt, attended[0].double().numpy(), atol=1e-4)


def test_rollout_and_norms(bundled):
    result = extract(bundled, "The cat sat on the mat.")
    maps = rollout_and_norms(bundled.encoder, result.encoding, 3)
    assert_allclose(maps.raw, result.weights[3].mean(0), atol=1e-5)
    assert_allclose(maps.rollout, analysis.attention_rollout(result.weights[:4]), atol=1e-5)
    assert_allclose(maps.rollout.sum(-1), 1, atol=1e-9)
    assert maps.norm.shape == (9, 9) and maps.norm_per_head.shape == (12, 9, 9) and (maps.norm >= 0).all()
    with pytest.raises(ValueError, match="out of range"):
        rollout_and_norms(bundled.encoder, result.encoding, 6)


def test_head_divergence_known_values_and_clamped_round_off():
    to_first = np.tile([1.0, 0.0], (2, 1))
    to_second = np.tile([0.0, 1.0], (2, 1))
    x = np.nextafter(0.5, 0)
    edge_p, edge_q = np.tile([x, 1 - x], (2, 1)), np.tile([1 - x, x], (2, 1))
    weights = np.stack([np.stack([to_first, to_second]), np.stack([edge_p, edge_q])])  # (2, 2, 2, 2)
    divergence = head_divergence(weights)
    assert divergence.shape == (4, 4)
    assert divergence[0, 1] == pytest.approx(1.0)  # disjoint one-hot rows: 1 bit
    assert divergence[2, 3] >= 0.0  # 0 in exact arithmetic, below 0 by round-off unless clamped
    assert_allclose(divergence, divergence.T)
    assert_allclose(np.diagonal(divergence), 0.0)


def test_mds_layout_keeps_identical_heads_together():
    rng = np.random.default_rng(0)
    weights = rng.random((2, 3, 5, 5)) ** 4
    weights /= weights.sum(-1, keepdims=True)
    weights[1, 2] = weights[0, 0]  # heads 0 and 5 attend identically
    positions = mds_layout(head_divergence(weights))
    assert positions.shape == (6, 2)
    distances = np.linalg.norm(positions[:, None] - positions[None], axis=-1)
    assert distances[0, 5] < 0.5 * np.sort(distances[0])[2]
    assert_allclose(mds_layout(head_divergence(weights)), positions)  # reproducible for a seed


def test_read_only_cached_encodings_give_no_torch_warning(bundled):
    """The cache makes result arrays read-only; torch.from_numpy on them warns (and would share the memory)."""
    import warnings

    from attention_viz.analysis import head_importance

    encoding = encode(bundled.tokenizer, "The cat sat.")
    expected = rollout_and_norms(bundled.encoder, encoding, 1).rollout
    for array in (encoding.input_ids, encoding.token_type_ids):
        array.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importance = head_importance(bundled.encoder, encoding)
        maps = rollout_and_norms(bundled.encoder, encoding, 1)
    assert importance.shape == (6, 12) and (importance >= 0).all()
    assert_allclose(maps.rollout, expected)
