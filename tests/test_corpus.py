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
from benchmarks.tiny import one_forward_per_head

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
    """Sentence B is embedded as B in a batch too (token_type_ids asked for explicitly, as some tokenizers
    return none)."""
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


def _padded(loaded, texts, side="right"):
    """``(input_ids, token_type_ids, attention_mask)`` of ``texts`` padded on ``side``."""
    tokenizer = copy.deepcopy(loaded.tokenizer)  # the shared tokenizer is left as it is
    tokenizer.padding_side = side
    encoded = tokenizer.pad([tokenizer(a, b, return_token_type_ids=True) for a, b in texts], return_tensors="pt")
    return [encoded[k] for k in ("input_ids", "token_type_ids", "attention_mask")]


TEXTS = [(LONG, None), (SHORT, None), ("Another short one.", None), ("The cat sat on the mat.", "It slept.")]


def _check_against_the_definition(loaded, side):
    batch = _padded(loaded, TEXTS, side)
    assert (batch[2][:, 0] == 0).any() if side == "left" else (batch[2][:, -1] == 0).any()  # padded
    expected = one_forward_per_head(loaded.encoder, *batch)
    found = importance_sums(loaded.encoder, *batch)
    assert found.shape == (loaded.info.num_layers, loaded.info.num_heads) and found.dtype == np.float64
    assert_allclose(found / len(TEXTS), expected / len(TEXTS), atol=1e-6, rtol=0)
    assert (found > 0).all()


def test_importance_equals_one_forward_per_head_on_the_bundled_model(bundled):
    _check_against_the_definition(bundled, "right")


@pytest.mark.parametrize("side", ["right", "left"])
def test_importance_equals_one_forward_per_head_with_padding_on_either_side(tiny_model, side):
    _check_against_the_definition(tiny_model, side)


def test_importance_reports_each_layer_once_and_refuses_a_text_with_no_token(tiny_model):
    ids = torch.tensor([[101, 1996, 4937, 102], [101, 102, 0, 0]])
    mask = (ids != 0).long()
    done = []
    importance_sums(tiny_model.encoder, ids, torch.zeros_like(ids), mask, on_layer=done.append)
    assert done == list(range(tiny_model.info.num_layers))
    mask[1] = 0
    with pytest.raises(ValueError, match="at least one real token"):
        importance_sums(tiny_model.encoder, ids, torch.zeros_like(ids), mask)


def test_a_long_text_runs_in_chunks_with_the_same_numbers(tiny_model, monkeypatch):
    from attention_viz.analysis import importance

    same_length = [("The cat sat.", None), ("A dog ran.", None), ("It was red.", None)]
    batch = _padded(tiny_model, [*same_length, TEXTS[0]])
    assert (batch[2].sum(1)[:3] == batch[2].sum(1)[0]).all()  # three texts run together
    whole = importance_sums(tiny_model.encoder, *batch)
    monkeypatch.setattr(importance, "ATTENTION_CELLS", 1)  # one sequence, one text per layer call
    assert_allclose(importance_sums(tiny_model.encoder, *batch), whole, atol=1e-6, rtol=0)


def test_text_statistics_are_the_statistics_and_the_importance_of_one_text(tiny_model):
    from attention_viz.analysis import text_statistics

    result = extract(tiny_model, SHORT, "It slept.")
    frame = text_statistics(tiny_model.encoder, result.weights, result.encoding)
    expected = head_statistics(result.weights, TokenKinds.from_encoding(result.encoding))
    pd.testing.assert_frame_equal(frame.drop(columns="importance"), expected)
    importance = head_importance(tiny_model.encoder, result.encoding)
    np.testing.assert_array_equal(frame["importance"].to_numpy(), importance.reshape(-1))  # layer-major


def test_shared_attention_for_the_ablated_layer_equals_the_layer_with_head_masks(tiny_model):
    heads = tiny_model.info.num_heads
    x = torch.randn(3, 5, tiny_model.info.hidden_size, generator=torch.Generator().manual_seed(0))  # (g, n, hidden)
    off = 1 - torch.eye(heads).repeat_interleave(3, dim=0)  # (h * g, h)
    for layer in tiny_model.encoder.layers:
        with torch.inference_mode():
            expected, _ = layer(x.repeat(heads, 1, 1), None, None, off)
            found = layer.without_each_head(x)
        torch.testing.assert_close(found, expected, atol=1e-6, rtol=0)
