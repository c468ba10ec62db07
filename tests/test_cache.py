"""attention_viz.ui.cache: results are shared between reruns and sessions, read-only, never copied."""

import numpy as np
import pytest

from attention_viz.extraction import extract
from attention_viz.ui import cache

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
