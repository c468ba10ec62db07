"""Session state: the keys and defaults of the app's widgets, and the user's current selection."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from attention_viz.loading import BUNDLED_MODEL, ModelInfo

# A sentence that shows something on one click: in all-MiniLM-L6-v2, layer 3 head 1 sends 0.68 of
# "it"'s attention to "animal", its referent, and 0.05 to "street" (checked in tests/test_app.py).
EXAMPLE_TEXT = "The animal didn't cross the street because it was too tired."
EXAMPLE_LAYER, EXAMPLE_HEAD = 3, 1
BUNDLED_SHAPE = (6, 12)  # layers, heads of all-MiniLM-L6-v2: the sliders' range before any model loaded

DEFAULTS = {
    "model": BUNDLED_MODEL,
    "text": EXAMPLE_TEXT,
    "pair": "",
    "layer": EXAMPLE_LAYER,
    "head": EXAMPLE_HEAD,
    "fit_range": False,
    "variant": "exact",
    "seed": 0,
    # View toggles of the heatmap views (attention_viz/ui/view_options.py; issue 8).
    "word_level": False,
    "hide_special": False,
    "block": "all",
}


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
    """Fill in defaults once per session."""
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)


def page_widget_key(key: str) -> str:
    """The widget key of a control that lives on one page only.

    Streamlit drops a widget's state when a page without it runs, so such a widget uses this key,
    starts from the permanent ``key`` and copies its value back there with :func:`remember`.
    """
    return f"_{key}"


def remember(key: str) -> None:
    """``on_change`` callback: keep a page widget's value under its permanent key."""
    st.session_state[key] = st.session_state[page_widget_key(key)]


def model_shape(info: ModelInfo | None) -> tuple[int, int]:
    """Layers and heads for the sliders: the loaded model's, else the last one that loaded.

    Clamps the layer and head into range after a switch to a smaller model. Slider state is written
    only when it must change: writing it on every run would override key presses still in flight.
    """
    if info is not None:
        st.session_state["_shape"] = (info.num_layers, info.num_heads)
    layers, heads = st.session_state.get("_shape", BUNDLED_SHAPE)
    for key, count in (("layer", layers), ("head", heads)):
        if not 0 <= st.session_state[key] < count:
            st.session_state[key] = min(max(int(st.session_state[key]), 0), count - 1)
    return layers, heads


def selection() -> Selection:
    s = st.session_state
    model = (s["model"] or "").strip() or BUNDLED_MODEL  # one cache entry whether cleared or named
    return Selection(model, s["text"], s["pair"] or None, s["layer"], s["head"], s["fit_range"])
