"""Minimal pairs: token alignment, and the heads' change for a token against a direct transformers computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention_viz.analysis import minimal_pairs as mp
from attention_viz.extraction import InputError


def test_alignment_pairs_equal_and_same_length_runs_and_says_what_has_no_counterpart():
    a = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    b = ["[CLS]", "the", "cater", "##pill", "##ar", "sat", "[SEP]"]
    pairs = mp.align(a, b)
    assert pairs == [(0, 0), (1, 1), (2, None), (None, 2), (None, 3), (None, 4), (3, 5), (4, 6)]
    assert mp.changed(a, b, pairs) == ([2], [2, 3, 4])
    swapped = mp.align(["x", "big", "y"], ["x", "small", "y"])
    assert swapped == [(0, 0), (1, 1), (2, 2)] and mp.changed(["x", "big", "y"], ["x", "small", "y"], swapped) == (
        [1],
        [1],
    )


def _direct(loaded, text: str) -> tuple[np.ndarray, list[str]]:
    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        out = loaded.model(**enc, output_attentions=True)
    tokens = loaded.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    return torch.stack(out.attentions)[:, 0].double().numpy(), tokens


def _js_by_formula(p: np.ndarray, q: np.ndarray) -> float:
    m = (p + q) / 2
    kl = lambda x: sum(x[k] * np.log2(x[k] / m[k]) for k in range(len(x)) if x[k] > 0)  # noqa: E731
    return (kl(p) + kl(q)) / 2


@pytest.mark.parametrize("preset", sorted(mp.PRESETS))
def test_presets_align_one_to_one_and_rank_heads_as_transformers_gives(bundled, preset):
    text_a, text_b = mp.PRESETS[preset]
    pair = mp.minimal_pair(bundled, text_a, text_b)
    assert pair.one_to_one and len(pair.changed_a) == 1 and len(pair.changed_b) == 1
    weights_a, tokens_a = _direct(bundled, text_a)
    weights_b, tokens_b = _direct(bundled, text_b)
    assert tokens_a == list(pair.a.encoding.tokens) and tokens_b == list(pair.b.encoding.tokens)
    query = tokens_a.index("it") if "it" in tokens_a else tokens_a.index("cabinet")
    ranking = mp.head_ranking(pair.a.weights, pair.b.weights, pair.pairs, query, by="tv")
    assert list(ranking["tv"]) == sorted(ranking["tv"], reverse=True) and len(ranking) == 72
    for _, row in ranking.head(5).iterrows():
        layer, head = int(row["layer"]), int(row["head"])
        p, q = weights_a[layer, head, query], weights_b[layer, head, query]  # same length: keys pair one to one
        assert row["tv"] == pytest.approx(0.5 * np.abs(p - q).sum(), abs=1e-6)
        assert row["js"] == pytest.approx(_js_by_formula(p, q), abs=1e-6)
    layer, head = int(ranking["layer"][0]), int(ranking["head"][0])
    np.testing.assert_allclose(
        mp.difference_map(pair.a.weights, pair.b.weights, pair.pairs, layer, head),
        weights_b[layer, head] - weights_a[layer, head],
        atol=1e-6,
    )


def test_unequal_tokenisations_pool_the_keys_without_counterpart(bundled):
    pair = mp.minimal_pair(bundled, "The cat sat on the mat.", "The caterpillar sat on the mat.")
    assert not pair.one_to_one and pair.changed_b
    p, q = mp.comparable_rows(pair.a.weights, pair.b.weights, pair.pairs, 1)  # "the"
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(q.sum(-1), 1.0, atol=1e-6)
    weights_b, _ = _direct(bundled, "The caterpillar sat on the mat.")
    _, keys_b = mp.matched(pair.pairs)
    unpaired = [j for j in range(weights_b.shape[-1]) if j not in set(keys_b)]
    np.testing.assert_allclose(q[..., -1], weights_b[:, :, 1, unpaired].sum(-1), atol=1e-6)
    with pytest.raises(ValueError, match="no counterpart"):
        mp.comparable_rows(pair.a.weights, pair.b.weights, pair.pairs, pair.changed_a[0])


def test_a_pair_where_no_token_aligns_is_refused_with_its_own_error(family_model):
    gpt2 = family_model("gpt2")  # no special tokens to align on
    assert mp.align(["H", "i"], ["B", "y", "e", "Ġ", "n", "o", "w"]) == [(0, None), (1, None)] + [
        (None, j) for j in range(7)
    ]
    with pytest.raises(mp.NothingAlignedError, match="no token of the first sentence aligns") as caught:
        mp.minimal_pair(gpt2, "Hi", "Bye now")
    assert isinstance(caught.value, InputError) and caught.value.code == "nothing_aligned"
    pair = mp.minimal_pair(gpt2, "Hi", "Hi now")  # one token in common is enough
    assert (0, 0) in pair.pairs and not pair.one_to_one
