"""Session state: the keys and defaults of the app's widgets, and the user's current selection."""

from __future__ import annotations

from collections.abc import Sequence
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
}


@dataclass(frozen=True)
class Selection:
    """What the shared controls say: model, input and the head in focus (layers and heads from 0).

    ``model`` is the model shown, which is the typed one unless that failed to load.
    """

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


def keep_choice(key: str, choices: range | Sequence, widget_key: str | None = None) -> tuple[object, object] | None:
    """Before drawing a widget whose choices can change: keep the user's choice, clamp it only if it must.

    Streamlit makes a new widget when a slider's range (or its options) changes and resets it to its
    default, losing the user's choice (case C24). Called just before the widget is drawn, this writes
    the choice back into the widget's state whenever the choices changed since the last run, so a
    choice that is still valid survives; one that is not becomes the nearest valid value (a range) or
    the default (options).

    Args:
        key: the permanent session-state key of the choice (in :data:`DEFAULTS`).
        choices: the widget's valid values now: a ``range`` for a slider, a sequence for a selectbox.
        widget_key: the widget's own key when it differs from ``key`` (see :func:`page_widget_key`).

    Returns:
        ``(old, new)`` when the choice had to change, for a note to the user; otherwise ``None``.
    """
    widget_key = widget_key or key
    s = st.session_state
    signature = (choices.start, choices.stop) if isinstance(choices, range) else tuple(choices)
    changed = s.get(f"_choices_{widget_key}") != signature
    s[f"_choices_{widget_key}"] = signature
    current = s.get(widget_key, s.get(key, DEFAULTS.get(key)))
    valid = current in choices
    if valid and not changed:
        return None  # nothing to write: writing on every run would override key presses still in flight
    if valid:
        new = current
    elif isinstance(choices, range):
        new = min(max(int(current), choices.start), choices.stop - 1)
    else:
        new = DEFAULTS.get(key) if DEFAULTS.get(key) in choices else choices[0]
    s[key] = new
    if widget_key != key:
        s[widget_key] = new
    return None if valid else (current, new)


def model_shape(info: ModelInfo | None) -> tuple[int, int]:
    """Layers and heads for the sliders: the loaded model's, else the last one that loaded."""
    if info is not None:
        st.session_state["_shape"] = (info.num_layers, info.num_heads)
    return st.session_state.get("_shape", BUNDLED_SHAPE)


def typed_model() -> str:
    """The model the user asked for in the Model box (the bundled one when the box is cleared)."""
    return (st.session_state["model"] or "").strip() or BUNDLED_MODEL


def set_active_model(name: str) -> None:
    """Record the model actually shown (the typed one, or the previous one when it failed to load)."""
    st.session_state["_active_model"] = name


def active_model() -> str:
    """The model shown now: the last one that loaded in this session (the bundled one before any)."""
    return st.session_state.get("_active_model", BUNDLED_MODEL)


def selection() -> Selection:
    s = st.session_state
    # the model actually shown: a typed model that failed to load leaves the previous one in place
    return Selection(active_model(), s["text"], s["pair"] or None, s["layer"], s["head"], s["fit_range"])
