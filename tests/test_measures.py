"""Attention measures and reductions: entropy, Jensen-Shannon divergence, WordPiece-to-word merging, hiding
[CLS]/[SEP], attention rollout, and bounds kept under round-off."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from attention_viz.analysis import (
    attention_rollout,
    drop_tokens,
    js_divergence,
    max_abs_difference,
    merge_word_pieces,
    row_entropy,
)


def test_row_entropy_in_bits():
    weights = np.array([[1.0, 0, 0, 0], [0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0, 0]])
    assert_allclose(row_entropy(weights), [0.0, 2.0, 1.0])


def test_js_divergence_in_bits():
    p = np.array([[1.0, 0.0], [0.5, 0.5], [0.9, 0.1]])
    q = np.array([[0.0, 1.0], [0.5, 0.5], [0.5, 0.5]])
    # disjoint supports: 1 bit; equal rows: 0; and one value worked by hand (m = [0.7, 0.3])
    hand = 0.5 * (0.9 * np.log2(0.9 / 0.7) + 0.1 * np.log2(0.1 / 0.3)) + 0.5 * (
        0.5 * np.log2(0.5 / 0.7) + 0.5 * np.log2(0.5 / 0.3)
    )
    assert_allclose(js_divergence(p, q), [1.0, 0.0, hand])
    with pytest.raises(ValueError, match="shapes differ"):
        js_divergence(p, q[:2])


def test_max_abs_difference():
    assert max_abs_difference(np.array([0.1, 0.5]), np.array([0.2, 0.25])) == pytest.approx(0.25)


def test_word_pieces_merge_to_words_by_sum_to_and_mean_from():
    """In "I have a new GPU!", "gpu" is two pieces, gp and ##u. Over [new, gp, ##u, !], attention to a word is the sum
    over its pieces and from a word the mean (Clark et al. 2019): rows still sum to 1 (averaging both axes
    would give row sums of .75/.75/.90)."""
    sub = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [0.4, 0.3, 0.2, 0.1], [0.7, 0.1, 0.1, 0.1]])
    words = merge_word_pieces(sub, np.array([0, 1, 1, 2]))  # new, gp ##u, !
    assert_allclose(words, [[0.1, 0.5, 0.4], [0.325, 0.5, 0.175], [0.7, 0.2, 0.1]], atol=1e-12)
    assert_allclose(words.sum(-1), 1)
    stacked = merge_word_pieces(np.stack([sub, sub]), np.array([0, 1, 1, 2]))  # leading axes kept
    assert stacked.shape == (2, 3, 3)


def test_hiding_special_tokens_renormalises_each_row():
    """(CLS .05, the .05, cat .10, sat .05, SEP .75) without [CLS]/[SEP] is (the .25, cat .50, sat .25)."""
    row = np.array([0.05, 0.05, 0.10, 0.05, 0.75])  # CLS the cat sat SEP
    weights = np.tile(row, (5, 1))
    kept = drop_tokens(weights, np.array([False, True, True, True, False]))
    assert_allclose(kept, np.tile([0.25, 0.50, 0.25], (3, 1)))
    assert_allclose(weights.sum(-1), 1)  # the raw view is untouched


def test_hiding_leaves_a_row_with_nothing_kept_at_zero():
    weights = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [0.2, 0.4, 0.4]])
    kept = drop_tokens(weights, np.array([True, False, True]))
    assert_allclose(kept, [[0.0, 0.0], [1 / 3, 2 / 3]])  # query 0 gave all its weight to a hidden token


def test_attention_rollout_of_two_layers_by_hand():
    """Abnar & Zuidema 2020: per layer (A + I) / 2 with rows renormalised, later layers on the left; two
    head-averaged 3 × 3 layers give a known R whose rows sum to 1 (values computed in float64)."""
    a1 = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    a2 = np.array([[0.5, 0.25, 0.25], [0.3, 0.4, 0.3], [0.2, 0.2, 0.6]])
    expected = [[0.6188, 0.2125, 0.1688], [0.1975, 0.5550, 0.2475], [0.1300, 0.1300, 0.7400]]
    rollout = attention_rollout(np.stack([a1, a2]))
    assert_allclose(rollout, expected, atol=1e-4)
    assert_allclose(rollout.sum(-1), 1, atol=1e-12)  # renormalising without keepdims would miss this
    heads = np.stack([np.stack([a1, a1]), np.stack([a2, a2])])  # (layers, heads, t, t): heads averaged
    assert_allclose(attention_rollout(heads), rollout)


def test_rollout_rows_sum_to_one_on_unnormalised_input():
    rng = np.random.default_rng(0)
    weights = rng.random((4, 5, 5))  # rows do not sum to 1: the per-layer renormalisation must fix that
    weights /= weights.sum(-1, keepdims=True)
    weights[:, :, 0] += 0.3
    assert_allclose(attention_rollout(weights).sum(-1), 1, atol=1e-12)


def test_js_divergence_is_clamped_to_zero_at_a_rounding_bound():
    """p = [x, 1 − x], q = [1 − x, x] with x just below 0.5 diverge by 0 exactly; computed naively the result
    can be −8e−17, printed as "-0.000"."""
    x = np.nextafter(0.5, 0)
    p, q = np.array([[x, 1 - x]]), np.array([[1 - x, x]])
    js = js_divergence(p, q)
    assert js[0] >= 0 and not np.signbit(js[0])
    assert f"{js[0]:.3f}" == "0.000"


def test_divergence_and_entropy_bounds_hold_on_many_random_rows():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.full(7, 0.05), size=(200, 7))  # (200, 7, 7), nearly one-hot rows
    q = np.where(rng.random((200, 7, 1)) < 0.5, p, rng.dirichlet(np.full(7, 0.05), size=(200, 7)))
    js = js_divergence(p, q)
    entropy = row_entropy(p)
    assert (js >= 0).all() and (js <= 1).all() and not np.signbit(js).any()
    assert (entropy >= 0).all() and (entropy <= np.log2(7)).all() and not np.signbit(entropy).any()


def test_entropy_of_a_one_hot_row_is_plus_zero():
    entropy = row_entropy(np.array([[1.0, 0.0, 0.0]]))
    assert not np.signbit(entropy[0]) and f"{entropy[0]:.3f}" == "0.000"
    assert row_entropy(np.full((1, 4), 0.25))[0] == 2.0


def test_max_abs_difference_over_blocks_finds_the_largest_entry_anywhere_and_keeps_nan():
    """The difference is taken block by block (a million entries each): the largest entry counts wherever it
    lies, in float64, a NaN anywhere gives NaN, and shapes broadcast as NumPy's do."""
    from attention_viz.analysis.measures import _BLOCK

    a = np.zeros(2 * _BLOCK + 7, dtype=np.float32)
    b = np.zeros_like(a)
    for where in (0, _BLOCK - 1, _BLOCK, a.size - 1):
        b[:] = 0
        b[where] = np.float32(0.1)
        assert max_abs_difference(a, b) == float(np.float32(0.1))  # float64 of the float32 entry, exactly
    b[_BLOCK + 3] = np.nan
    assert np.isnan(max_abs_difference(a, b))
    assert max_abs_difference(np.ones((2, 3)), np.array([1.0, 1.5, 0.0])) == 1.0
    with pytest.raises(ValueError):
        max_abs_difference(np.zeros(0), np.zeros(0))
