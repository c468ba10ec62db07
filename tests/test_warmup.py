"""Cold start: the package imports lazily; ``app.py`` is also the server's entry point, whose
lifespan imports torch and transformers and loads the bundled model as the server starts."""

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.web.server.app_discovery import discover_asgi_app

import attention_viz
from attention_viz.ui.server import warmup

ROOT = Path(__file__).resolve().parent.parent


def test_importing_the_package_and_the_warmup_loads_neither_torch_nor_transformers():
    code = (
        "import sys, attention_viz, attention_viz.ui.server.warmup; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_public_name_resolves_from_its_module():
    from attention_viz import extraction
    from attention_viz.models import loading

    for name in attention_viz.__all__:
        assert getattr(attention_viz, name) is not None, name
    assert attention_viz.extract is extraction.extract and attention_viz.load_model is loading.load_model
    assert set(attention_viz.__all__) <= set(dir(attention_viz))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        attention_viz.nothing_here  # noqa: B018
    code = "import attention_viz as av; print(av.figures.head_grid is av.head_grid, av.analysis.measures.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "attention_viz.analysis.measures"]  # submodules, as before the lazy imports


def test_app_py_is_the_servers_entry_point_and_runs_no_session_when_imported():
    found = discover_asgi_app(ROOT / "app.py")  # what `streamlit run app.py` looks for
    assert found.is_asgi_app and found.import_string == "app:app"
    code = (
        "import sys, app, streamlit as st; from attention_viz.ui.server import warmup; "
        "print(isinstance(app.app, st.App), sorted(m for m in ('torch', 'transformers') if m in sys.modules), "
        "warmup._preload is None)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "[]", "True"]  # imported, not run: the lifespan preloads


def test_the_preload_puts_the_bundled_model_in_the_cache_every_session_reads():
    code = """
import asyncio
from attention_viz.ui.server import warmup

async def serve():
    async with warmup.lifespan(object()):  # as st.App's lifespan does when the server starts
        assert warmup._preload.done.wait(300)

asyncio.run(serve())
from attention_viz.models import loading
from attention_viz.ui.server import cache

def refuse(*args, **kwargs):
    raise AssertionError("loaded again")

loading.load_model = refuse
import gc
done = warmup._preload.done.is_set()
print(cache.model(loading.BUNDLED_MODEL).info.num_layers, done, gc.get_freeze_count() > 100_000)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # from the cache (all-MiniLM-L6-v2 has 6 layers), and frozen with torch and transformers: Streamlit's
    # collection after every run skips them
    assert done.stdout.split() == ["6", "True", "True"]
    assert "missing ScriptRunContext" not in done.stderr  # the preload's cached call outside a run is expected


def test_a_failed_preload_lets_sessions_go_on_and_logs_why(monkeypatch, caplog):
    from attention_viz.ui.server import cache

    def broken(name):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(cache, "model", broken)
    preload = warmup._Preload()
    with caplog.at_level(logging.ERROR, logger="attention_viz"):
        preload._run()  # in this thread: the same work the background thread does
    assert preload.imported.is_set() and preload.done.is_set()  # nobody waits forever
    assert "preloading failed" in caplog.text and "disk on fire" in caplog.text


def test_a_model_that_does_not_load_is_left_to_the_first_session_to_report(monkeypatch, caplog):
    """Cached like any load failure; the session shows the app's message and logs one line (no traceback
    in the server's log)."""
    from attention_viz.models.loading import ModelLoadError
    from attention_viz.ui.server import cache

    def missing(name):
        raise ModelLoadError(f"could not load model {name!r}: folder '/tmp/empty' has no config.json", "no_config")

    monkeypatch.setattr(cache, "model", missing)
    preload = warmup._Preload()
    with caplog.at_level(logging.DEBUG, logger="attention_viz"):
        preload._run()
    assert preload.done.is_set() and caplog.text == ""


def test_the_opening_example_is_computed_once_at_the_start_and_no_session_runs_the_model_for_it():
    """Every forward of either encoder is counted after the preload: the first session's first run (and the
    second's) opens on the example and finds all of it cached."""
    code = """
import asyncio, os
from attention_viz.ui.server import warmup

async def serve():
    async with warmup.lifespan(object()):
        assert warmup._preload.done.wait(300)

asyncio.run(serve())
import torch
from streamlit.testing.v1 import AppTest
from transformers import PreTrainedModel
from attention_viz.models.encoder import BertEncoder

forwards = []
torch.nn.modules.module.register_module_forward_pre_hook(
    lambda module, _: forwards.append(1) if isinstance(module, PreTrainedModel | BertEncoder) else None
)
for session in range(2):
    at = AppTest.from_file(os.path.abspath("app.py"), default_timeout=300).run()
    assert not at.exception, at.exception
    print(len(forwards), end=" ")
print(warmup._preload.ready.is_set())
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["0", "0", "True"]
