"""The run's state: the model shown, the head in focus, and the named moves pages make on the view.

Every setting of the view lives in ``st.session_state`` under a key of
:data:`~attention_viz.ui.view.view_schema.DEFAULTS`. This module reads them for a page (:func:`selection`) and
changes them by name (:func:`open_head`, :func:`set_focus`, :func:`set_window`, :func:`step`), so no page
writes ``st.session_state`` itself. The view's other jobs have their own modules: the schema
(:mod:`~attention_viz.ui.view.view_schema`), the URL (:mod:`~attention_viz.ui.view.url_state`) and the widget
protocol (:mod:`~attention_viz.ui.view.widgets`); their names are re-exported here, so ``state.X`` works
for each of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from attention_viz import figures
from attention_viz.models.loading import BUNDLED_MODEL, ModelInfo
from attention_viz.ui.view.url_state import (  # noqa: F401  (re-exported: state.X for every job)
    FALLBACK_ORIGIN,
    PAGE_PATH_ROOM,
    app_root,
    init,
    link_notes,
    link_pending,
    query_room,
    requested_page,
    settle_view,
    view_query,
    write_url,
)
from attention_viz.ui.view.view_schema import (  # noqa: F401
    ALIASES,
    ATLAS_SOURCES,
    BUNDLED_SHAPE,
    CHOICES,
    DEFAULTS,
    EXAMPLE_HEAD,
    EXAMPLE_LAYER,
    EXAMPLE_TEXT,
    EXPERIMENTS,
    FREE_TEXTS,
    MAP_VIEWS,
    MAX_GENERATED,
    OPENING,
    PAGE_KEY,
    RANGES,
    RENAMED_PAGES,
    ROLLOUT_MAPS,
    SCOPES,
    link_rules,
    stepped,
)
from attention_viz.ui.view.widgets import (  # noqa: F401
    begin_fragment_run,
    begin_run,
    callback_failed,
    choice_row,
    control,
    guarded,
    set_text,
    text_box,
    widget_key,
)


@dataclass(frozen=True)
class Selection:
    """What the shared controls say: model, input and the head in focus (layers and heads from 0).

    ``model`` is the model shown, which is the typed one unless that failed to load; ``presentation`` is
    the projector's view (larger text and cells).
    """

    model: str
    text: str
    pair: str | None
    layer: int
    head: int
    fit_range: bool
    presentation: bool = False


def model_shape(info: ModelInfo | None) -> tuple[int, int]:
    """Layers and heads for the controls: the loaded model's, else the last one that loaded."""
    if info is not None:
        st.session_state["_shape"] = (info.num_layers, info.num_heads)
    return st.session_state.get("_shape", BUNDLED_SHAPE)


def keep_in_model(shape: tuple[int, int]) -> list[tuple[str, int, int]]:
    """Clamp the chosen layer and head into a model of ``shape``; ``(key, old, new)`` for each that moved.

    A choice that is still valid stays, so a switch to another model and back keeps the head.
    """
    moved = []
    for key, count in zip(("layer", "head"), shape, strict=True):
        old = st.session_state.get(key, DEFAULTS[key])
        new = min(max(old, 0), count - 1) if isinstance(old, int) and not isinstance(old, bool) else 0
        if new != old:
            st.session_state[key] = new
            moved.append((key, old, new))
    return moved


# --- Named moves on the view ------------------------------------------------------------------------------

_OPEN_COMPARE = "_open_compare"
# The stored first query and key of each map's window, when its tokens do not fit.
WINDOW_KEYS = {"compare": ("query_start", "key_start"), "rollout": ("rollout_query_start", "rollout_key_start")}


def open_head(layer: int, head: int) -> None:
    """Choose ``(layer, head)`` and ask for Compare to show it (a click on a head in All heads, Head
    statistics, Head similarity): in a callback, before the sidebar's Layer and Head boxes are drawn."""
    st.session_state["layer"], st.session_state["head"] = layer, head
    st.session_state[_OPEN_COMPARE] = True


def choose_head(layer: int, head: int) -> None:
    """Choose ``(layer, head)`` on the page shown (a click on a head in the Head atlas): in a callback."""
    st.session_state["layer"], st.session_state["head"] = layer, head


def open_event(layer: int, head: int, text: str, pair: str | None, query: int, key: int, total: int) -> None:
    """Open an attention event in Compare (the Head atlas's button): ``text`` and ``pair`` as the input,
    ``(layer, head)`` chosen, query token ``query`` in focus and the map's window on it and on ``key``, out of
    the text's ``total`` tokens. The view toggles go back to the token-level map, whose positions the
    event's are. In a callback, before the sidebar is drawn."""
    set_text("text", text)
    set_text("pair", pair or "")
    for name in ("word_level", "hide_special", "block"):
        st.session_state[name] = DEFAULTS[name]
    size = figures.map_style(st.session_state.get("presentation", False), total).window
    query_key, key_key = WINDOW_KEYS["compare"]
    st.session_state["focus"] = query
    st.session_state[query_key] = figures.window_around(query, total, size)
    st.session_state[key_key] = figures.window_around(key, total, size)
    open_head(layer, head)


def head_to_open() -> bool:
    """Whether a head was just chosen to open in Compare (:func:`open_head`), once."""
    return bool(st.session_state.pop(_OPEN_COMPARE, False))


def set_focus(query: int, total: int, size: int) -> None:
    """Put query token ``query`` in focus (-1: none), moving Compare's query window of ``size`` tokens out
    of ``total`` to it when it is outside."""
    query_key, _ = WINDOW_KEYS["compare"]
    st.session_state["focus"] = query
    start = st.session_state[query_key]
    if query >= 0 and not start <= query < start + size:
        st.session_state[query_key] = figures.window_around(query, total, size)


def set_window(view: str, queries: int, keys: int, size: int) -> tuple[int, int]:
    """Keep the window of ``view``'s map (``"compare"`` or ``"rollout"``, :data:`WINDOW_KEYS`) inside its
    ``queries`` and ``keys``: each stored start moved in so that ``size`` tokens fit from it. Returns the
    ``(query_start, key_start)`` stored."""
    starts = []
    for key, count in zip(WINDOW_KEYS[view], (queries, keys), strict=True):
        st.session_state[key] = figures.window_start(st.session_state[key], count, size)
        starts.append(st.session_state[key])
    return starts[0], starts[1]


def step(unit: str, delta: int) -> None:
    """``on_click`` of a step button: move the chosen layer or head (see :func:`stepped`)."""
    s = st.session_state
    s["layer"], s["head"] = stepped(s["layer"], s["head"], unit, delta, model_shape(None))


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
    return Selection(
        active_model(), s["text"], s["pair"] or None, s["layer"], s["head"], s["fit_range"], s["presentation"]
    )
