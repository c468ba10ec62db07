"""Caches that know when a model changed on disk, and corpus runs computed once for many sessions."""

import threading

import numpy as np
import pytest
from apptools import no_errors, run_app
from conftest import make_tiny_bert

from attention_viz import analysis
from attention_viz.analysis import max_abs_difference
from attention_viz.extraction import extract
from attention_viz.models import loading
from attention_viz.ui.server import cache, cache_heads

TEXT = "The animal did not cross the street because it was tired."


def test_a_folder_saved_again_in_place_is_loaded_again_with_its_new_weights(tmp_path):
    """A fine-tuned checkpoint re-saved into its folder was served from the cache with the old weights, and
    the parity check compared the stale copies."""
    folder = make_tiny_bert(tmp_path / "model", seed=0, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
    first = cache.model(folder)
    old = np.array(cache.pretrained(first, TEXT, None).weights)
    assert cache.model(folder) is first and not cache.was_reloaded(first)  # nothing changed: the same copy

    make_tiny_bert(tmp_path / "model", seed=1, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
    second = cache.model(folder)
    assert second is not first and second.info.revision != first.info.revision
    assert cache.was_reloaded(second) and not cache.was_reloaded(first)
    new = cache.pretrained(second, TEXT, None).weights
    expected = extract(loading.load_model(folder), TEXT).weights  # the new weights, read directly
    np.testing.assert_allclose(new, expected, atol=1e-6)
    assert max_abs_difference(old, new) > 0.05
    scratch = cache.scratch(second, TEXT, None, "exact", 0).weights
    assert cache.parity(second, TEXT, None) == pytest.approx(max_abs_difference(scratch, expected), abs=1e-6)
    assert cache.model(folder) is second  # and it stays loaded


def test_the_sidebar_says_the_model_was_loaded_again(tmp_path):
    folder = make_tiny_bert(tmp_path / "model", seed=0, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
    at = run_app(model=folder)
    no_errors(at)
    assert not any("loaded again" in caption.value for caption in at.sidebar.caption)
    make_tiny_bert(tmp_path / "model", seed=2, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
    fresh = run_app(model=folder)  # a new session
    no_errors(fresh)
    assert any("loaded again" in caption.value for caption in fresh.sidebar.caption)


def test_the_revision_follows_weights_and_config_not_time(tmp_path):
    folder = make_tiny_bert(tmp_path / "model", seed=0, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
    revision = loading.disk_revision(folder)
    assert len(revision) == 16 and loading.disk_revision(folder) == revision
    config = tmp_path / "model" / "config.json"
    stat = config.stat()
    config.write_text(config.read_text().replace('"hidden_act"', '"hidden_act" ', 1))
    import os

    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same time: the config's text still tells
    assert loading.disk_revision(folder) != revision
    assert loading.disk_revision(str(tmp_path / "missing")) == ""


# --- one run for many sessions --------------------------------------------------------------------------


@pytest.fixture
def forwards(family_model, monkeypatch):
    """``(loaded, count)``: a tiny model whose every forward (transformers' and ours) is counted."""
    loaded = family_model("bert")
    count = {"forwards": 0}
    lock = threading.Lock()

    def counted(module, args):
        with lock:
            count["forwards"] += 1

    handles = [loaded.model.register_forward_pre_hook(counted), loaded.encoder.register_forward_pre_hook(counted)]
    cache_heads._corpus_runs().clear()
    yield loaded, count
    for handle in handles:
        handle.remove()
    cache_heads._corpus_runs().clear()


@pytest.mark.parametrize("importance", [False, True])
def test_two_sessions_starting_the_same_corpus_run_compute_it_once(forwards, importance):
    """The second waits for the first's result and reports its progress meanwhile, instead of computing the
    whole corpus again (twice the model forwards)."""
    loaded, count = forwards
    corpus = "\n".join(f"Sentence number {i} is about a cat on a mat." for i in range(24))
    cache_heads.corpus_statistics(loaded, corpus, 4, importance)  # one run alone: its forwards
    alone = count["forwards"]
    assert alone > 0
    cache_heads._corpus_runs().clear()
    count["forwards"] = 0

    started, waiting = threading.Event(), threading.Event()
    seen = {"first": [], "second": []}
    results = {}

    def held_progress(done, total):  # the first run goes on once the second waits for it and shows its progress
        seen["first"].append(done)
        started.set()
        assert waiting.wait(30), "the second session never showed the running one's progress"

    def second_progress(done, total):
        seen["second"].append((done, total))
        waiting.set()

    def run(name, progress):
        results[name] = cache_heads.corpus_statistics(loaded, corpus, 4, importance, progress)

    first = threading.Thread(target=run, args=("first", held_progress))
    first.start()
    assert started.wait(30)
    second = threading.Thread(target=run, args=("second", second_progress))
    second.start()
    first.join(120)
    second.join(120)
    assert count["forwards"] == alone  # computed once
    assert results["first"] is results["second"]
    assert seen["second"] and all(total == 24 for _, total in seen["second"])  # the waiting one saw progress
    assert seen["second"][-1][0] >= seen["second"][0][0]


def test_a_stopped_first_run_leaves_the_waiting_session_to_compute_it(forwards):
    loaded, _ = forwards
    corpus = "\n".join(f"Line {i} of a short corpus." for i in range(12))
    started, release = threading.Event(), threading.Event()

    class StoppedError(Exception):
        pass

    def stopped(done, total):
        started.set()
        release.wait(10)
        raise StoppedError  # Streamlit ends a run this way when its user presses Stop

    errors, results = [], {}

    def first():
        try:
            cache_heads.corpus_statistics(loaded, corpus, 4, False, stopped)
        except StoppedError:
            errors.append("stopped")

    one = threading.Thread(target=first)
    one.start()
    assert started.wait(30)
    waiting = threading.Event()  # set once the second session is waiting on the first's run

    def second():
        results["r"] = cache_heads.corpus_statistics(loaded, corpus, 4, False, lambda done, total: waiting.set())

    two = threading.Thread(target=second)
    two.start()
    assert waiting.wait(30)  # it passes the running one's progress on while it waits
    release.set()
    one.join(60)
    two.join(120)
    assert errors == ["stopped"] and results["r"].num_texts == 12
    direct = analysis.corpus_statistics(loaded, analysis.parse_corpus(corpus), 4, divergence=True)
    np.testing.assert_allclose(results["r"].statistics["entropy"], direct.statistics["entropy"], atol=1e-6)


def test_two_sessions_asking_for_the_same_atlas_build_it_once(forwards):
    """The atlas had no single flight: a second session asking while it ran built the whole atlas again."""
    loaded, count = forwards
    corpus = "\n".join(f"Sentence number {i} is about a cat on a mat." for i in range(16))
    cache_heads._atlas_runs().clear()
    cache_heads.atlas(loaded, corpus, 4)  # one run alone: its forwards
    alone = count["forwards"]
    cache_heads._atlas_runs().clear()
    count["forwards"] = 0
    started, waiting, results = threading.Event(), threading.Event(), {}

    def held(done, total):
        started.set()
        assert waiting.wait(30), "the second session never showed the running one's progress"

    def run(name, progress):
        results[name] = cache_heads.atlas(loaded, corpus, 4, progress)

    first = threading.Thread(target=run, args=("first", held))
    first.start()
    assert started.wait(30)
    second = threading.Thread(target=run, args=("second", lambda done, total: waiting.set()))
    second.start()
    first.join(120)
    second.join(120)
    assert alone > 0 and count["forwards"] == alone  # built once
    assert results["first"] is results["second"] and results["first"].num_texts == 16
    cache_heads._atlas_runs().clear()
