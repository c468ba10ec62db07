"""Cold start (issue 10, #5): the package imports lazily, and a cold process's first run sends an empty chart
so the browser loads plotly.js while torch and transformers are imported."""

import subprocess
import sys

import pytest
from streamlit.testing.v1 import AppTest

import attention_viz

SCRIPT = """
import streamlit as st
from attention_viz.ui import warmup
slot = warmup.start_plotly()
st.write("drawn" if slot is not None else "warm")
if st.session_state.get("clear"):
    warmup.clear(slot)
"""


def test_importing_the_package_and_the_warmup_loads_neither_torch_nor_transformers():
    code = (
        "import sys, attention_viz, attention_viz.ui.warmup; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_public_name_resolves_from_its_module():
    from attention_viz import extraction, loading

    for name in attention_viz.__all__:
        assert getattr(attention_viz, name) is not None, name
    assert attention_viz.extract is extraction.extract and attention_viz.load_model is loading.load_model
    assert set(attention_viz.__all__) <= set(dir(attention_viz))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        attention_viz.nothing_here  # noqa: B018
    code = "import attention_viz as av; print(av.figures.head_grid is av.head_grid, av.metrics.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "attention_viz.metrics"]  # submodules, as before the lazy imports


def _run(clear: bool) -> AppTest:
    at = AppTest.from_string(SCRIPT)
    at.session_state["clear"] = clear
    return at.run()


def test_a_cold_process_draws_an_empty_chart_and_clears_it(monkeypatch):
    monkeypatch.delitem(sys.modules, "transformers")  # as on the first run after `streamlit run`
    drawn = _run(clear=False)
    assert drawn.markdown[0].value == "drawn"
    (chart,) = drawn.get("plotly_chart")
    assert chart.proto.spec and '"data":[]' in chart.proto.spec.replace(" ", "")  # nothing to draw: just plotly.js
    cleared = _run(clear=True)
    assert cleared.markdown[0].value == "drawn" and not cleared.get("plotly_chart")


def test_a_warm_process_draws_nothing():
    import transformers  # noqa: F401  (the app's imports are done)

    at = _run(clear=False)
    assert at.markdown[0].value == "warm" and not at.get("plotly_chart")
