"""attention_viz.ui.server.cache: results are shared between reruns and sessions, read-only, never copied."""

import numpy as np
import pytest
import torch

from attention_viz.analysis import steps
from attention_viz.extraction import extract
from attention_viz.figures.grid import thumbnail
from attention_viz.ui.server import cache, cache_heads

TEXT = "The cat sat on the mat."


@pytest.fixture
def fresh():
    cache.attention.clear()
    yield
    cache.attention.clear()


def test_a_cached_result_is_the_same_object_and_read_only(bundled, fresh):
    first = cache.pretrained(bundled, TEXT, None)
    again = cache.pretrained(bundled, TEXT, None)
    assert again is first  # shared, not unpickled anew on every rerun
    assert np.array_equal(first.weights, extract(bundled, TEXT).weights)
    for array in (first.weights, first.encoding.input_ids, first.encoding.special):
        assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        first.weights[0, 0, 0, 0] = 1.0
    head = first.head(0, 0)
    assert not head.flags.writeable  # views of a shared result cannot write through either


def test_everything_that_changes_a_result_is_in_the_key(bundled, fresh):
    pretrained = cache.pretrained(bundled, TEXT, None)
    assert cache.pretrained(bundled, TEXT, "It slept.") is not pretrained
    assert cache.pretrained(bundled, TEXT + " ", None) is not pretrained
    exact = cache.scratch(bundled, TEXT, None, "exact", 0)
    assert exact is not pretrained and exact.source == "scratch"
    assert cache.scratch(bundled, TEXT, None, "exact", 5) is exact  # the seed only matters to "random"
    random3, random4 = cache.scratch(bundled, TEXT, None, "random", 3), cache.scratch(bundled, TEXT, None, "random", 4)
    assert not np.array_equal(random3.weights, random4.weights)


@pytest.fixture
def tiny(tiny_model_dir):
    """A tiny model, with every text-keyed cache cleared before and after."""
    from attention_viz.models.loading import load_model

    caches = (cache._encoding, cache.attention, cache._layer_inputs, cache._layer_vectors, cache._article_maps)
    for cached in caches:
        cached.clear()
    yield load_model(tiny_model_dir)
    for cached in caches:
        cached.clear()


@pytest.fixture
def forwards():
    """Counts forwards of any transformers model or from-scratch encoder while the test runs."""
    from transformers import PreTrainedModel

    from attention_viz.models.encoder import BertEncoder

    count = {"forwards": 0}

    def counter(module, _inputs):
        if isinstance(module, PreTrainedModel | BertEncoder):
            count["forwards"] += 1

    handle = torch.nn.modules.module.register_module_forward_pre_hook(counter)
    yield count
    handle.remove()


def test_a_text_is_encoded_once_for_every_result(tiny, monkeypatch):
    from attention_viz import extraction

    calls = []
    real = extraction.encode
    monkeypatch.setattr(extraction, "encode", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    pretrained = cache.pretrained(tiny, TEXT, "It slept.")
    for variant in ("exact", "article-scaling", "random"):
        assert cache.scratch(tiny, TEXT, "It slept.", variant, 1).encoding is pretrained.encoding
    assert cache.parity(tiny, TEXT, "It slept.") < 1e-5
    for layer, head in ((0, 0), (1, 3)):
        encoding, _ = cache.head_vectors(tiny, TEXT, "It slept.", layer, head)
        assert encoding is pretrained.encoding
    assert cache.article_maps(tiny, TEXT, "It slept.", 1, 0, ("shared",))[0] is pretrained.encoding
    assert len(cache_heads.text_statistics(tiny, TEXT, "It slept.")) == 8
    cache.rollout_and_norms(tiny, TEXT, "It slept.", 1)
    assert calls == [TEXT]


def test_head_and_layer_changes_run_no_forward_and_give_the_steps_vectors(tiny, forwards):
    encoding, _ = cache.head_vectors(tiny, TEXT, None, 0, 0)
    assert forwards["forwards"] == 1  # every layer's input, from one run of the encoder
    hidden = steps.layer_inputs(tiny.encoder, encoding)
    forwards["forwards"] = 0
    for layer in range(tiny.info.num_layers):
        for head in range(tiny.info.num_heads):
            _, vectors = cache.head_vectors(tiny, TEXT, None, layer, head)
            for ours, expected in zip(
                vectors, steps.head_vectors(tiny.encoder, hidden[layer], layer, head), strict=True
            ):
                np.testing.assert_array_equal(ours, expected)
                assert not ours.flags.writeable
        cache.article_maps(tiny, TEXT, None, layer, 3, ())
    assert forwards["forwards"] == 0
    with pytest.raises(IndexError, match="head 4 out of range"):
        cache.head_vectors(tiny, TEXT, None, 0, 4)
    with pytest.raises(IndexError, match="layer 2 out of range"):
        cache.head_vectors(tiny, TEXT, None, 2, 0)


def test_an_over_long_text_is_refused_before_it_is_hashed_or_tokenised(tiny, monkeypatch):
    from attention_viz import extraction
    from attention_viz.extraction import InputError

    monkeypatch.setattr(cache, "_encoding", lambda *args: pytest.fail("the text reached the cache key"))
    monkeypatch.setattr(extraction, "encode", lambda *args: pytest.fail("the text was tokenised"))
    too_long = "x" * (cache.app_settings().limits.max_chars + 1)
    for call in (
        lambda: cache.pretrained(tiny, too_long, None),
        lambda: cache.head_vectors(tiny, TEXT, too_long, 0, 0),
        lambda: cache.article_maps(tiny, too_long, None, 0, 0, ()),
    ):
        with pytest.raises(InputError) as refused:
            call()
        assert refused.value.code == "too_long"


def test_a_class_of_short_sentences_stays_cached_beside_long_texts(bundled, fresh):
    """Forty students' sentences (pretrained and from scratch: 80 results) all stay cached, and long texts
    go to a cache of their own, so they cannot push the short ones out."""
    sentences = [f"Student {i} watched the owl number {i}." for i in range(40)]
    first = {s: (cache.pretrained(bundled, s, None), cache.scratch(bundled, s, None, "exact", 0)) for s in sentences}
    long_text = " ".join(["the owl watched the fox"] * 30)  # about 150 tokens
    for seed in range(10):  # more long results than the long texts' cache holds
        cache.scratch(bundled, long_text, None, "random", seed)
    for sentence, (pretrained, scratch) in first.items():
        assert cache.pretrained(bundled, sentence, None) is pretrained
        assert cache.scratch(bundled, sentence, None, "exact", 0) is scratch


def test_all_heads_grid_is_built_once_for_a_class_on_the_same_sentence(bundled, monkeypatch):
    """Two sessions open All heads on the same sentence and head: the grid is built in the first only, and
    both pages draw the sentence's own attention."""
    from apptools import ALL_HEADS, chart, run_app, z

    from attention_viz import figures

    built = []
    real = figures.head_grid
    monkeypatch.setattr(figures, "head_grid", lambda *args, **kwargs: built.append(1) or real(*args, **kwargs))
    cache._head_grid.clear()
    text = "A class typed the very same sentence for the grid."
    drawn = []
    for _ in range(2):
        at = run_app(text=text, layer=2, head=5)
        at.switch_page(ALL_HEADS).run()
        assert not at.exception
        drawn.append(chart(at, "head_grid"))
    assert len(built) == 1 and drawn[0] == drawn[1]
    weights = extract(bundled, text).weights  # 14 tokens: thumbnails are not pooled
    drawn[1]["data"][0]["z"] = z(drawn[1])  # plotly's typed array, decoded
    for layer, head in ((0, 0), (2, 5), (5, 11)):
        np.testing.assert_allclose(thumbnail(drawn[1], layer, head), weights[layer, head], atol=1e-6)


def test_the_json_size_is_measured_once_per_result_and_forgotten_with_it(bundled, monkeypatch):
    import gc

    from attention_viz.extraction import export

    measured = []
    real = export.attention_json_size
    monkeypatch.setattr(export, "attention_json_size", lambda result: measured.append(result) or real(result))
    result = extract(bundled, "The cat sat on the mat.")
    assert cache.json_size(result) == cache.json_size(result) == real(result) > 0
    assert len(measured) == 1
    other = extract(bundled, "A dog barked at the moon all night long.")
    assert cache.json_size(other) > cache.json_size(result) and len(measured) == 2
    key = id(result)
    del result, measured[:]
    gc.collect()
    assert key not in cache._JSON_SIZES
