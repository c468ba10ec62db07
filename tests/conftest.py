"""Shared fixtures: the bundled model, tiny random BERTs and tiny models of every family built offline in a temp
dir, one real Streamlit server for every browser and server test, and a headless Chromium per test module.

The suite runs on pytest-xdist workers (``-n auto --dist loadgroup`` in pyproject.toml): each test file is one
unit that one worker runs in order, and every test of the shared server, of a browser or of a server of its
own (the load and benchmark tests) runs on one worker: the shared server starts once per run, and no two
browser tests share the two cores, which slowed their timed waits past their limits. Each worker keeps
torch's threads (their count changes the last bits of a result, which tests compare across processes), and
they sleep instead of spinning while they wait (``OMP_WAIT_POLICY``): two workers' threads spinning on two
cores wait for each other at every operation.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in the tests may reach the hub
if os.environ.get("PYTEST_XDIST_WORKER"):  # read by OpenMP when torch loads; the server started here inherits it
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
import torch
from browser import CHROMIUM_ARGS, chromium_path, streamlit_server, wait_until
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from transformers import AutoTokenizer, BertConfig, BertModel

from attention_viz.models.loading import bundled_model_path, load_model


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one worker per two cores, at most four (each loads the models once). On a 2-core machine
    that is one worker: a second one's torch threads took the cores from the browser tests' timed waits."""
    return max(1, min(4, (os.cpu_count() or 1) // 2))


def pytest_collection_modifyitems(config, items) -> None:
    """One xdist group per test file, and one for every test of a server or a browser (see the module's docstring)."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        uses_server = "server" in fixtures or "chromium" in fixtures or item.path.name in SERVER_FILES
        item.add_marker(pytest.mark.xdist_group("server" if uses_server else item.path.name))


SERVER_FILES = {"test_benchmarks.py", "test_load.py", "test_class_load.py", "test_readiness.py"}  # servers of their own


TINY_CONFIGS = {
    "h32-l2-heads4": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37),
    "h24-l3-heads1": dict(hidden_size=24, num_hidden_layers=3, num_attention_heads=1, intermediate_size=48),
    "h32-l2-heads8-tanh": dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=8, intermediate_size=64, hidden_act="gelu_new"
    ),
}


@pytest.fixture(scope="session")
def bundled():
    """The bundled all-MiniLM-L6-v2, loaded once for the whole run."""
    return load_model()


def make_tiny_bert(folder, seed: int = 0, max_position_embeddings: int = 64, **sizes) -> str:
    """Save a random BertModel (safetensors) with the bundled WordPiece tokenizer in ``folder``."""
    tokenizer = AutoTokenizer.from_pretrained(bundled_model_path())
    config = BertConfig(vocab_size=tokenizer.vocab_size, max_position_embeddings=max_position_embeddings, **sizes)
    torch.manual_seed(seed)
    model = BertModel(config)
    with torch.no_grad():  # BERT's init (std 0.02) gives near-uniform attention: sharpen it so tests bite
        for name, param in model.named_parameters():
            if name.endswith(("query.weight", "key.weight")):
                param.normal_(0.0, 0.5)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session", params=sorted(TINY_CONFIGS))
def tiny_model(request, tmp_path_factory):
    """Each tiny random BERT config, saved in a temp dir and loaded through load_model."""
    folder = make_tiny_bert(tmp_path_factory.mktemp(request.param), **TINY_CONFIGS[request.param])
    return load_model(folder)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """Folder of one tiny random BERT (4 heads, 2 layers, 64 positions)."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny"), **TINY_CONFIGS["h32-l2-heads4"])


@pytest.fixture(scope="session")
def family_dir(tmp_path_factory):
    """``family_dir(model_type)``: the folder of a tiny random checkpoint of that family, built once."""
    from tiny_families import make_tiny

    built = {}

    def folder(family: str) -> str:
        if family not in built:
            built[family] = make_tiny(family, tmp_path_factory.mktemp(f"tiny-{family}"))
        return built[family]

    return folder


@pytest.fixture(scope="session")
def family_model(family_dir):
    """``family_model(model_type)``: that family's tiny checkpoint through load_model, loaded once."""
    loaded = {}

    def model(family: str):
        if family not in loaded:
            loaded[family] = load_model(family_dir(family))
        return loaded[family]

    return model


@pytest.fixture
def media(monkeypatch):
    """Every file the app hands to a download button, by file id."""
    stored = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        file_id = original(self, path_or_data, mimetype, kind, filename)
        stored[file_id] = path_or_data
        return file_id

    def keep_deferred(self, data_callable, *args, **kwargs):  # built on click: build the CSVs now
        file_id = original_deferred(self, data_callable, *args, **kwargs)
        if str(kwargs.get("file_name", "")).endswith(".csv"):
            stored[file_id] = data_callable()
        return file_id

    original_deferred = MediaFileManager.add_deferred
    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    monkeypatch.setattr(MediaFileManager, "add_deferred", keep_deferred)
    return stored


@pytest.fixture(scope="session")
def server():
    """One ``streamlit run app.py`` with the repository's settings, shared by every test that needs a real
    server (started once: Streamlit, torch and the model load once per run, not once per module).

    Yields ``(url, log_path, started_at)`` with the server's ``process`` and ``preloaded_s`` as attributes:
    the seconds from the start until the process had mapped the bundled model's weights, observed before
    any browser could open a session (None if that never happened within 240 s). Tests share nothing else:
    each opens its own browser context, so each has its own Streamlit session and session state.
    """
    weights = str(bundled_model_path() / "model.safetensors")
    with streamlit_server() as running:
        maps = Path(f"/proc/{running.process.pid}/maps")

        def mapped() -> bool:
            if running.process.poll() is not None or "preloading failed" in running[1].read_text():
                raise RuntimeError("the server stopped or its preload failed")
            return weights in maps.read_text()

        with contextlib.suppress(AssertionError, RuntimeError):  # tests/test_server.py reports it
            wait_until(mapped, 240, "the bundled model was not loaded at server start", every_s=0.25)
            running.preloaded_s = time.monotonic() - running[2]
        yield running


@pytest.fixture(scope="module")
def chromium():
    """Headless Chromium for one test module; each test opens its own context (``chromium.new_page()`` makes
    one). Module-scoped, not session-scoped: while Playwright's sync API runs, its event loop occupies the
    thread, so a test elsewhere that starts Playwright itself (or asyncio) would fail."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()
