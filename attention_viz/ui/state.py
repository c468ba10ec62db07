"""Session state: the keys and defaults of the app's widgets, and the user's current selection."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from attention_viz.analysis import BLOCKS
from attention_viz.analysis.steps import SCALINGS
from attention_viz.models.encoder import Variant
from attention_viz.models.loading import BUNDLED_MODEL, ModelInfo
from attention_viz.ui import links
from attention_viz.ui.i18n import DEFAULT_LANGUAGE, LANGUAGE_KEY, LANGUAGES

# A sentence that shows something on one click: in all-MiniLM-L6-v2, layer 3 head 1 sends 0.68 of
# "it"'s attention to "animal", its referent, and 0.05 to "street" (checked in tests/test_app.py).
EXAMPLE_TEXT = "The animal didn't cross the street because it was too tired."
EXAMPLE_LAYER, EXAMPLE_HEAD = 3, 1
MAP_VIEWS = ("pretrained", "scratch", "difference")  # the maps Compare draws large
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
    "presentation": False,  # larger fonts and cells for a projector, on every page
    "map_view": "pretrained",  # the map in focus on Compare: pretrained, scratch or difference
    "focus": -1,  # the query token in focus (its bars, lines and outlined row), -1 for none
    "query_start": 0,  # the first query and key of the map's window when the tokens do not fit
    "key_start": 0,
    LANGUAGE_KEY: DEFAULT_LANGUAGE,
    # Inside a head: the query token (-1: the example's, else the first word), scaling, temperature
    # and the masked keys as comma-separated token positions.
    "inside_query": -1,
    "scaling": "bert",
    "temperature": 1.0,
    "masked": "",
    # The article's layer: the article's differences switched on (comma-separated) and the weights' seed.
    "article_diffs": "shared,embed_scaling",
    "article_seed": 0,
    # View toggles of the heatmap views (attention_viz/ui/view_options.py; issue 8).
    "word_level": False,
    "hide_special": False,
    "block": "all",
}
# What a link may carry beyond its default's type (see attention_viz.ui.links.Rules); add a key's
# allowed values or range here when its type alone is not enough.
CHOICES: dict[str, tuple] = {"variant": tuple(v.value for v in Variant), LANGUAGE_KEY: tuple(LANGUAGES)}
CHOICES["scaling"] = SCALINGS
CHOICES["map_view"] = MAP_VIEWS
CHOICES["block"] = tuple(BLOCKS)
RANGES: dict[str, tuple] = {
    "layer": (0, 1023),
    "head": (0, 1023),
    "inside_query": (-1, 4095),
    "focus": (-1, 4095),  # -1: no token in focus
    "temperature": (0.1, 5.0),  # the Inside page slider's range
}
PAGE_KEY = "page"  # the current page's name in the link (not a widget: the router owns it)
_URL_READ, _URL_NOTES, _URL_PAGE, _URL_VALUES = "_url_read", "_url_notes", "_url_page", "_url_values"


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
    """Fill in defaults once per session, after the settings the page's link carries (read once)."""
    if _URL_READ not in st.session_state:
        st.session_state[_URL_READ] = True
        values, notes = links.from_query(st.query_params.to_dict(), link_rules())
        st.session_state[_URL_PAGE] = values.pop(PAGE_KEY, None)
        st.session_state[_URL_NOTES] = [(note.kind, note.key) for note in notes]
        st.session_state[_URL_VALUES] = dict(values)
        for key, value in values.items():
            st.session_state[key] = value
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)


def link_rules(pages: tuple[str, ...] = ()) -> links.Rules:
    """What a link carries: every key of :data:`DEFAULTS` (whoever added it) and the page."""
    choices = dict(CHOICES, **({PAGE_KEY: pages} if pages else {}))
    return links.Rules({**DEFAULTS, PAGE_KEY: ""}, choices, RANGES)


_RENAMED_PAGES = {"flow": "rollout"}  # links made before a page was renamed still open it


def requested_page(pages: tuple[str, ...]) -> str | None:
    """The page the session's link asked for, once (then ``None``); an unknown name gets a note."""
    requested = st.session_state.pop(_URL_PAGE, None)
    requested = _RENAMED_PAGES.get(requested, requested)
    if requested and requested not in pages:
        st.session_state.setdefault(_URL_NOTES, []).append(("invalid", PAGE_KEY))
        return None
    return requested or None


def link_pending() -> bool:
    """Whether the session's link has not been reported on yet (see :func:`link_notes`)."""
    return bool(st.session_state.get(_URL_NOTES) or st.session_state.get(_URL_VALUES))


def link_notes() -> list[tuple[str, str]]:
    """What was wrong with the session's link, as ``(kind, key)`` (see :class:`links.Note`), once.

    Once the first run has drawn its page, this includes ``("changed", key)`` for each setting the link
    gave that the app had to change (a layer the model does not have, a token past the text's end).
    """
    notes = st.session_state.pop(_URL_NOTES, [])
    given = st.session_state.pop(_URL_VALUES, {})
    return notes + [("changed", key) for key, value in given.items() if st.session_state.get(key) != value]


def view_query(page: str) -> tuple[dict[str, str], list[links.Note]]:
    """The current view as query parameters, and a note for each text cut to fit a link."""
    values = {key: st.session_state.get(key, default) for key, default in DEFAULTS.items()}
    return links.to_query({**values, PAGE_KEY: page}, link_rules())


def write_url(page: str) -> None:
    """Put the current view in the browser's address (only when it changed: no needless messages)."""
    params, _ = view_query(page)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)


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
