"""Corpus runs (padding invariance, progress, cancel) and head importance by ablation."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from numpy.testing import assert_allclose

from attention_viz.analysis import (
    CancelledError,
    TokenKinds,
    batch_attention,
    bundled_corpus,
    corpus_statistics,
    head_importance,
    head_statistics,
    importance_sums,
    parse_corpus,
)
from attention_viz.analysis.importance import cosine_distance, mean_pool
from attention_viz.analysis.stats import STATISTICS
from attention_viz.extraction import InputError, encode, extract

SHORT = "The cat sat."
LONG = "A much longer sentence, with many more words in it, pads the short one when they share a batch."


def _numbers(frame: pd.DataFrame) -> np.ndarray:
    return frame[list(STATISTICS)].to_numpy(dtype=np.float64)


def test_padding_never_changes_a_text_s_statistics(bundled):
    ((_, alone),) = list(batch_attention(bundled, [(SHORT, None)]))
    ((inputs, batched),) = list(batch_attention(bundled, [(LONG, None), (SHORT, None)], batch_size=2))
    assert inputs["attention_mask"][1].sum() < inputs["attention_mask"].shape[1]  # the short text was padded
    assert batched[1][0].shape == alone[0][0].shape
    assert_allclose(batched[1][0], alone[0][0], atol=2e-6)
    assert_allclose(
        _numbers(head_statistics(*batched[1])), _numbers(head_statistics(*alone[0])), atol=1e-5, equal_nan=True
    )


def test_corpus_of_one_text_equals_the_text_view(bundled):
    result = extract(bundled, SHORT, "It slept.")
    expected = head_statistics(result.weights, TokenKinds.from_encoding(result.encoding))
    corpus = corpus_statistics(bundled, [(LONG, None), (SHORT, "It slept.")][1:], batch_size=4)
    assert_allclose(_numbers(corpus.statistics), _numbers(expected), atol=1e-5)
    assert list(corpus.statistics["tags"]) == list(expected["tags"])


def test_pairs_in_a_padded_batch_get_their_token_types(bundled):
    """C02/C19: sentence B is embedded as B in a batch too (token_type_ids asked for explicitly)."""
    ((inputs, items),) = list(batch_attention(bundled, [(LONG, None), ("The cat sat.", "It slept.")], batch_size=2))
    assert inputs["token_type_ids"][1].tolist()[:10] == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert_allclose(items[1][0], extract(bundled, "The cat sat.", "It slept.").weights, atol=2e-6)
    assert list(items[1][1].segments) == [0] * 6 + [1] * 4


def test_corpus_progress_cancel_skip_and_errors(bundled):
    calls = []
    texts = [(SHORT, None), ("\u200b", None), (LONG, None)]  # a zero-width space normalises to nothing
    result = corpus_statistics(bundled, texts, batch_size=2, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 3), (2, 3), (3, 3)]
    assert (result.num_texts, result.num_skipped) == (2, 1)
    assert result.statistics.shape[0] == 72 and {"layer", "head", "tags"} <= set(result.statistics.columns)
    with pytest.raises(CancelledError, match="after 2 of 3"):
        corpus_statistics(bundled, texts, batch_size=2, cancel=lambda: bool(calls.append(None)) or len(calls) > 4)
    with pytest.raises(InputError, match="at least 1"):
        corpus_statistics(bundled, texts, batch_size=0)
    with pytest.raises(InputError, match="empty"):
        corpus_statistics(bundled, [])
    with pytest.raises(InputError, match="no line"):
        corpus_statistics(bundled, [("\u200b", None)])


def test_parse_corpus():
    assert parse_corpus("One.\n\n  \nTwo.\tThree.\n") == [("One.", None), ("Two.", "Three.")]
    with pytest.raises(InputError, match="empty"):
        parse_corpus(" \n\t\n")


def test_bundled_corpus_is_varied():
    texts = parse_corpus(bundled_corpus())
    assert len(texts) >= 200
    assert any("\u4e00" <= c <= "\u9fff" for a, _ in texts for c in a)  # some Chinese
    assert any(b for _, b in texts)  # some sentence pairs


def test_no_head_mask_and_all_ones_match_transformers(bundled):
    encoding = encode(bundled.tokenizer, "Ablating nothing changes nothing.")
    ids = torch.from_numpy(encoding.input_ids)[None]
    with torch.inference_mode():
        theirs = bundled.model(input_ids=ids).last_hidden_state
        plain = bundled.encoder(ids).last_hidden_state
        ones = bundled.encoder(ids, head_mask=torch.ones(6, 12)).last_hidden_state
    torch.testing.assert_close(plain, theirs, atol=1e-5, rtol=0)
    torch.testing.assert_close(ones, plain, atol=0, rtol=0)
    mask = torch.ones_like(ids)
    assert cosine_distance(mean_pool(ones, mask), mean_pool(theirs, mask)).item() == pytest.approx(0.0, abs=1e-6)


def test_ablating_a_head_equals_zeroing_its_output_weights(bundled):
    encoding = encode(bundled.tokenizer, "The cat sat on the mat.")
    importance = head_importance(bundled.encoder, encoding)
    assert importance.shape == (6, 12) and (importance > 0).all() and (importance <= 2).all()
    layer, head, d = 4, 7, bundled.info.head_dim
    pruned = copy.deepcopy(bundled.encoder)
    with torch.no_grad():
        pruned.layers[layer].attention.output.weight[:, head * d : (head + 1) * d] = 0
    ids = torch.from_numpy(encoding.input_ids)[None]
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        full = mean_pool(bundled.encoder(ids).last_hidden_state, mask)
        without = mean_pool(pruned(ids).last_hidden_state, mask)
    assert importance[layer, head] == pytest.approx(cosine_distance(full, without).item(), abs=1e-6)


def test_importance_is_the_same_alone_and_in_a_padded_batch(bundled):
    ((inputs, _),) = list(batch_attention(bundled, [(LONG, None), (SHORT, None)], batch_size=2))
    batch = [inputs[k] for k in ("input_ids", "token_type_ids", "attention_mask")]
    both = importance_sums(bundled.encoder, *batch)
    long_alone = head_importance(bundled.encoder, encode(bundled.tokenizer, LONG))
    short_alone = head_importance(bundled.encoder, encode(bundled.tokenizer, SHORT))
    assert_allclose(both, long_alone + short_alone, atol=1e-5)


def test_corpus_importance_and_divergence(bundled):
    texts = [(SHORT, None), (LONG, None)]
    result = corpus_statistics(bundled, texts, batch_size=2, importance=True, divergence=True)
    expected = (
        head_importance(bundled.encoder, encode(bundled.tokenizer, SHORT))
        + head_importance(bundled.encoder, encode(bundled.tokenizer, LONG))
    ) / 2
    assert_allclose(result.statistics["importance"], expected.reshape(-1), atol=1e-5)
    assert result.divergence.shape == (72, 72)
    assert (result.divergence >= 0).all() and (result.divergence <= 1).all()
