"""A cold start's first run: the browser loads plotly.js while the server imports torch and transformers.

Streamlit's front end fetches and parses plotly.js (several MB) only when the first chart arrives. On a
cold start that chart comes after some 8 s of imports and model loading, and the browser then needed
another 2.5 s to draw it (measured in headless Chromium on a 2-core machine). An empty 1-px chart sent
before those imports lets the browser do that work in parallel (issue 10, figure #5). It is drawn only
while transformers is not yet imported in this process, i.e. on the first run after ``streamlit run``,
and cleared when the run ends. This module imports streamlit and plotly only.

Sessions arriving together on a cold server share one lock: the first holds it while it draws the chart
and again while it imports torch and transformers (:func:`importing`). Building a figure while another
thread imports would fail, because plotly looks numpy and pandas up in ``sys.modules``, where they may
be half-imported (``AttributeError: partially initialized module 'numpy'``, found by the load test).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator

import plotly.graph_objects as go
import streamlit as st

KEY = "plotly_warmup"
_LOCK = threading.Lock()


def start_plotly() -> object | None:
    """Draw the empty chart on a cold process's first run; returns its slot for :func:`clear`, else None."""
    with _LOCK:
        if "transformers" in sys.modules:  # warm: the imports ahead take milliseconds
            return None
        return _draw()


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """Hold around the app's heavy imports: no warm-up chart is built while they run."""
    with _LOCK:
        yield


def _draw() -> object:
    slot = st.empty()
    empty = go.Figure(
        layout={"xaxis": {"visible": False}, "yaxis": {"visible": False}, "margin": dict.fromkeys("lrtb", 0)}
    )
    slot.plotly_chart(empty, height=1, key=KEY, config={"displayModeBar": False, "staticPlot": True})
    return slot


def clear(slot: object | None) -> None:
    """Remove the chart :func:`start_plotly` drew (nothing when it drew none)."""
    if slot is not None:
        slot.empty()
