"""Session state: the keys and defaults of the app's widgets, and the user's current selection."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from attention_viz.loading import BUNDLED_MODEL

# A sentence that shows something on one click: in all-MiniLM-L6-v2, layer 3 head 1 sends 0.68 of
# "it"'s attention to "animal", its referent, and 0.05 to "street" (checked in tests/test_app.py).
EXAMPLE_TEXT = "The animal didn't cross the street because it was too tired."
EXAMPLE_LAYER, EXAMPLE_HEAD = 3, 1
MAX_CHARS = 5000

DEFAULTS = {
    "model": BUNDLED_MODEL,
    "text": EXAMPLE_TEXT,
    "pair": "",
    "layer": EXAMPLE_LAYER,
    "head": EXAMPLE_HEAD,
    "fit_range": False,
    "variant": "exact",
    "seed": 0,
}
# Widgets that live on one page only: Streamlit drops their state when another page runs, so it is
# re-assigned every run to survive page changes.
PAGE_KEYS = ("variant", "seed")


@dataclass(frozen=True)
class Selection:
    """What the shared controls say: model, input and the head in focus (layers and heads from 0)."""

    model: str
    text: str
    pair: str | None
    layer: int
    head: int
    fit_range: bool


def init() -> None:
    """Fill in defaults once per session and keep page-only widget values across pages."""
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    for key in PAGE_KEYS:
        st.session_state[key] = st.session_state[key]


def clamp(key: str, upper: int) -> None:
    """Keep an index widget's value within ``0..upper`` (after switching to a smaller model)."""
    st.session_state[key] = min(max(int(st.session_state[key]), 0), upper)


def selection() -> Selection:
    s = st.session_state
    return Selection(s["model"], s["text"], s["pair"] or None, s["layer"], s["head"], s["fit_range"])
