"""Shared fixtures: the bundled model, tiny random BERTs and tiny models of every family built offline in a temp
dir, one real Streamlit server for every browser and server test, and a headless Chromium per test module.

The suite runs on pytest-xdist workers (``-n auto`` in pyproject.toml), one per core. The files of
:data:`SERVER_FILES` (every test of the shared server or of a browser, and the load tests) are one unit of work
that one worker runs first and in order, so the shared server starts once per run; every other test file is a
unit of its own. The other workers run at a lower priority (``os.nice``): the browser tests spend about a
third of their time waiting for the server or the page, and the other tests fill those gaps without taking a
core from the browser tests' timed waits. Each worker keeps torch's threads (their count changes the last bits
of a result, which tests compare across processes), and they sleep instead of spinning while they wait
(``OMP_WAIT_POLICY``): two workers' threads spinning on two cores wait for each other at every operation.
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
    """``-n auto``: one worker per core, at most four (each loads the models once)."""
    return max(1, min(4, os.cpu_count() or 1))


# Every file with a test of the shared server (``server``), of a browser (``chromium``) or of the replicas
# (``replicas``), and so the load tests, which count rounds in a fixed time: one unit of work for one worker,
# at full priority. A test of these fixtures elsewhere fails, saying so. The files that start servers (and a
# browser) of their own but time nothing they assert (the quick benchmark run, the readiness checks) run on
# the other workers like any file.
SERVER_FILES = {
    "test_browser.py",
    "test_browser_explore.py",
    "test_browser_fresh_server.py",
    "test_browser_hard_to_fool.py",
    "test_browser_lecture.py",
    "test_browser_links.py",
    "test_browser_map.py",
    "test_browser_newcomer.py",
    "test_browser_state.py",
    "test_class_load.py",
    "test_fonts.py",
    "test_load.py",
    "test_server.py",
}
SERVER_FIXTURES = {"server", "chromium", "replicas"}
SERVER_UNIT = "the server's tests"
BACKGROUND_NICENESS = 10  # a worker outside the server's unit gets about a tenth of a busy core's share


def _in_server_unit(path: str | Path) -> bool:
    return Path(path).name in SERVER_FILES


def pytest_xdist_make_scheduler(config, log):
    """For ``--dist loadscope`` (pyproject.toml's addopts), xdist's scheduler by unit of work with the units
    above (the hook is xdist's documented way to plug one in); any other ``--dist`` is left to xdist. xdist's
    own ``xdist_group`` marks cannot do it under pytest 9.2: xdist 3.8 writes the group into a test's id
    through an attribute that pytest 9.2 no longer reads, so every test became a unit of its own."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ServerFilesTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SERVER_UNIT if _in_server_unit(path) else path

    return ServerFilesTogether(config, log)


def pytest_collection_modifyitems(config, items) -> None:
    """The server's unit first, in its order (pyproject.toml's addopts keep xdist from reordering the units):
    one worker takes it before any other test, so it does not lower its priority before the unit is done.
    Not so after pytest's ``--ff`` or ``--nf``, which reorder the tests after this, or a worker's crash (xdist
    queues its unit last): the server's unit may then run on a worker of lower priority, only slower."""
    items.sort(key=lambda item: not _in_server_unit(item.path))  # stable: each file keeps its order


def pytest_runtest_setup(item) -> None:
    """A test of a server outside :data:`SERVER_FILES` fails, saying so. On a run of several workers, a worker
    lowers its priority before its first test outside the server's unit (once: a process cannot raise it
    again; where the system refuses, it carries on as it is). The worker of the server's unit, and the server
    and browsers it starts, keep theirs."""
    outside = not _in_server_unit(item.path)
    if outside and SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
        pytest.fail(f"{item.nodeid} uses a server or a browser: add its file to SERVER_FILES in tests/conftest.py")
    if outside and int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1 and not _niced:
        _niced.append(True)
        with contextlib.suppress(OSError):
            os.nice(BACKGROUND_NICENESS)


_niced: list[bool] = []  # whether this worker has lowered its priority (or tried to)


TINY_CONFIGS = {
    "h32-l2-heads4": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37),
    "h24-l3-heads1": dict(hidden_size=24, num_hidden_layers=3, num_attention_heads=1, intermediate_size=48),
    "h32-l2-heads8-tanh": dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=8, intermediate_size=64, hidden_act="gelu_new"
    ),
}


@pytest.fixture(autouse=True)
def _no_shared_memo():
    """Each test starts with nothing kept for every session (:func:`attention_viz.ui.server.cache.shared_memo`):
    what one test's app runs made is not another's to find (a test that breaks a figure's maker must see it
    called)."""
    from attention_viz.ui.server import cache

    cache.shared_memo.clear()
    yield


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


@pytest.fixture(scope="session")
def replicas():
    """Two app replicas behind nginx (deploy/replicas.py), started once for the load tests that need them
    (each replica loads torch and the model). Yields the :class:`deploy.replicas.Deployment`; a test counts
    the sessions it sent with ``served_websockets(since=...)``."""
    from deploy.replicas import replicas_behind_nginx

    with replicas_behind_nginx(2) as deployment:
        yield deployment


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
