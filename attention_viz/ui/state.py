"""Session state: the view's settings, their defaults and link rules, and the one way a widget is bound to them.

Every setting of the view (page, text, layer, head, toggles) lives under a permanent key of
:data:`DEFAULTS`; widgets and the URL read and write those keys, pages ask this module. A widget's
value is always an id, an index or a number, never a shown label: :func:`control` draws any widget
bound to a setting, keeps the setting valid and makes the widget show it in the current language.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import streamlit as st

from attention_viz.analysis import BLOCKS, STATISTICS, presets
from attention_viz.analysis.head_scores import SCORES
from attention_viz.analysis.knockout import SCOPES as KNOCKOUT_SCOPES
from attention_viz.analysis.minimal_pairs import MEASURES as PAIR_MEASURES
from attention_viz.analysis.minimal_pairs import PRESETS as PAIR_PRESETS
from attention_viz.analysis.steps import SCALINGS
from attention_viz.models.encoder import Variant
from attention_viz.models.loading import BUNDLED_MODEL, ModelInfo
from attention_viz.ui import internals, links
from attention_viz.ui.i18n import DEFAULT_LANGUAGE, LANGUAGE_KEY, LANGUAGES, t

# The example the app opens on, and the text, layer and head it sets (assets/presets/presets.toml).
OPENING = presets.opening()
EXAMPLE_TEXT, EXAMPLE_LAYER, EXAMPLE_HEAD = OPENING.text, OPENING.layer, OPENING.head
MAP_VIEWS = ("pretrained", "scratch", "difference")  # the maps Compare draws large
ROLLOUT_MAPS = ("raw", "rollout", "norm")  # the maps Rollout & norms draws
SCOPES = ("text", "bundled", "upload")  # what Head statistics and Head similarity run over
EXPERIMENTS = ("knockout", "pairs", "predictions")  # the Experiments page's three views
BUNDLED_SHAPE = (6, 12)  # layers, heads of all-MiniLM-L6-v2: the controls' range before any model loaded

DEFAULTS = {
    "model": BUNDLED_MODEL,
    "text": OPENING.text,
    "pair": OPENING.pair,
    "layer": OPENING.layer,
    "head": OPENING.head,
    "fit_range": False,
    "variant": Variant.EXACT.value,
    "seed": 0,
    "presentation": False,  # larger text, fonts and cells for a projector, on every page
    "map_view": "pretrained",  # the map in focus on Compare: pretrained, scratch or difference
    "focus": -1,  # the query token in focus (its bars, lines and outlined row), -1 for none
    "query_start": 0,  # the first query and key of the map's window when the tokens do not fit
    "key_start": 0,
    LANGUAGE_KEY: DEFAULT_LANGUAGE,
    # Inside a head: the query token (-1: the example's, else the first word), scaling, temperature
    # and the masked keys as comma-separated token positions.
    "inside_query": -1,
    "scaling": Variant.EXACT.value,
    "temperature": 1.0,
    "masked": "",
    # The article's layer: the article's differences switched on (comma-separated) and the weights' seed.
    "article_diffs": "shared,embed_scaling",
    "article_seed": 0,
    # View toggles of the heatmap views (attention_viz/ui/view_options.py).
    "word_level": False,
    "hide_special": False,
    "block": "all",
    # Rollout & norms: the map shown and its window.
    "rollout_map": "raw",
    "rollout_query_start": 0,
    "rollout_key_start": 0,
    # Head statistics and Head similarity: over the text, the bundled corpus or an upload; the statistic shown.
    "stats_scope": "text",
    "similarity_scope": "text",
    "stats_statistic": "entropy",
    "stats_importance": False,
    # Named head scores: the random sequences (count, tokens per copy, seed), the score shown, All heads' colour.
    "scores_count": 10,
    "scores_length": 50,
    "scores_seed": 0,
    "scores_shown": "induction",
    "all_heads_colour": "attention",
    # Experiments: which one; the key knocked out and for which heads; the minimal pair, its query token,
    # measure and the head shown (an index into the ranking); the prediction's position.
    "experiment": "knockout",
    "knockout_key": -1,
    "knockout_scope": "head",
    "pairs_preset": "winograd",
    "pairs_a": PAIR_PRESETS["winograd"][0],
    "pairs_b": PAIR_PRESETS["winograd"][1],
    "pairs_query": -1,
    "pairs_measure": "js",
    "pairs_head": 0,
    "predict_position": -1,
}
# What a link may carry beyond its default's type (see attention_viz.ui.links.Rules); add a key's
# allowed values or range here when its type alone is not enough.
CHOICES: dict[str, tuple] = {"variant": tuple(v.value for v in Variant), LANGUAGE_KEY: tuple(LANGUAGES)}
CHOICES["scaling"] = SCALINGS
CHOICES["map_view"] = MAP_VIEWS
CHOICES["block"] = tuple(BLOCKS)
CHOICES["rollout_map"] = ROLLOUT_MAPS
CHOICES["stats_scope"] = CHOICES["similarity_scope"] = SCOPES
CHOICES["stats_statistic"] = (*STATISTICS, "importance")
CHOICES["scores_shown"] = tuple(SCORES)
CHOICES["all_heads_colour"] = ("attention", *SCORES)
CHOICES["experiment"] = EXPERIMENTS
CHOICES["knockout_scope"] = KNOCKOUT_SCOPES
CHOICES["pairs_preset"] = ("custom", *PAIR_PRESETS)
CHOICES["pairs_measure"] = PAIR_MEASURES
RANGES: dict[str, tuple] = {
    "layer": (0, 1023),
    "head": (0, 1023),
    "inside_query": (-1, 4095),
    "focus": (-1, 4095),  # -1: no token in focus
    "temperature": (0.1, 5.0),  # the Inside page slider's range
    "scores_count": (1, 50),
    "scores_length": (2, 4096),
    "scores_seed": (0, 9999),
    "knockout_key": (-1, 4095),
    "pairs_query": (-1, 4095),
    "pairs_head": (0, 11),
    "predict_position": (-1, 4095),
}
# Values that older links wrote under other names.
ALIASES = {"scaling": {"bert": "exact", "article": "article-scaling", "none": "no-scaling"}}
PAGE_KEY = "page"  # the current page's name in the link (not a widget: the router owns it)
_URL_READ, _URL_NOTES, _URL_PAGE, _URL_VALUES = "_url_read", "_url_notes", "_url_page", "_url_values"
_log = logging.getLogger("attention_viz")


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
    """Fill in defaults once per session, after the settings the page's link carries (read once); after the
    browser's Back or Forward, the settings of the address it went to."""
    if _URL_READ not in st.session_state:
        st.session_state[_URL_READ] = True
        values, notes = links.from_query(st.query_params.to_dict(), link_rules())
        st.session_state[_URL_PAGE] = values.pop(PAGE_KEY, None)
        st.session_state[_URL_NOTES] = [(note.kind, note.key) for note in notes]
        st.session_state[_URL_VALUES] = dict(values)
        for key, value in values.items():
            st.session_state[key] = value
    else:
        _follow_history()
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)


_URL_WRITTEN = "_url_written"


def _follow_history() -> None:
    """The browser's Back and Forward: an address other than the one :func:`write_url` last wrote is an
    earlier view of this session, so its settings become the view again (the address and the view agree)."""
    written = st.session_state.get(_URL_WRITTEN)
    current = st.query_params.to_dict()
    if written is None or not current or current == written:
        return
    values, _ = links.from_query(current, link_rules())
    values.pop(PAGE_KEY, None)
    for key, value in values.items():
        st.session_state[key] = value
    st.session_state[_URL_WRITTEN] = current


def link_rules(pages: tuple[str, ...] = ()) -> links.Rules:
    """What a link carries: every key of :data:`DEFAULTS` (whoever added it) and the page."""
    choices = dict(CHOICES, **({PAGE_KEY: pages} if pages else {}))
    return links.Rules({**DEFAULTS, PAGE_KEY: ""}, choices, RANGES, aliases=ALIASES)


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
    st.session_state[_URL_WRITTEN] = params


# --- The widget protocol ------------------------------------------------------------------------------


def widget_key(key: str, labels: Iterable[str] = ()) -> str:
    """The key of the widget bound to the setting ``key``: ``_key``, with a digest of its shown labels.

    Two reasons. Streamlit drops a widget's state when a page without it runs, so a widget never uses
    the permanent key itself. And Streamlit 1.67 passes an option widget's value between browser and
    server as its shown label: a browser still showing a label of an earlier run (another language,
    another text in the focus box) sends that label back, and under the same key Streamlit would hand
    it to the page as the value. With the labels in its key, a widget whose labels changed is a new
    widget, which starts from the stored setting.
    """
    labels = tuple(labels)
    if not labels:
        return f"_{key}"
    digest = hashlib.blake2s("\x1f".join(labels).encode("utf-8"), digest_size=4).hexdigest()
    return f"_{key}~{digest}"


def begin_run(page: str) -> None:
    """Start a run of ``page``: which page widgets the previous run drew, if it was this page's, is known.

    Streamlit tells widgets apart by more than their key: by the page (the stepper on Inside is a new
    widget after a run of Compare), and a slider also by its range. A new widget starts from its
    default unless its value is written first; :func:`control` writes it for a widget that the previous
    run of the same page did not draw as it is now, and otherwise only when the setting changed
    (writing every time would undo a slider's key presses still on their way from the browser).
    """
    s = st.session_state
    same_page = s.get("_drawn_page") == page
    s["_drawn_before"] = s.get("_drawn_now", {}) if same_page else {}
    s["_drawn_now"], s["_drawn_page"] = {}, page
    s[_WHOLE_RUN] = True  # the page's fragment (if any) runs inside this run: see begin_fragment_run


_WHOLE_RUN = "_whole_run"


def begin_fragment_run(page: str) -> bool:
    """Start a run of ``page``'s fragment; return whether it runs on its own (a fragment rerun).

    Inside a run of the whole app :func:`begin_run` already started the page. A fragment rerun
    (``st.fragment``: only the page's body reruns, after one of its own widgets changed) starts the
    page's widgets over as :func:`begin_run` does, since the page's widgets are all in the fragment.
    """
    s = st.session_state
    if s.pop(_WHOLE_RUN, False):
        return False
    begin_run(page)
    s.pop(_WHOLE_RUN, None)
    return True


def guarded(callback: Callable[..., None]) -> Callable[..., None]:
    """A widget callback that never raises: Streamlit would show its error page instead of the app.

    A failure is logged with its traceback and leaves the view as it was; the page says so once
    (see :func:`callback_failed`).
    """

    def run(*args, **kwargs) -> None:
        try:
            callback(*args, **kwargs)
        except Exception:
            _log.exception("a widget callback failed: %s", getattr(callback, "__name__", callback))
            st.session_state["_callback_failed"] = True

    run.__name__ = getattr(callback, "__name__", "callback")
    return run


def callback_failed() -> bool:
    """Whether a widget callback failed before this run (once)."""
    return bool(st.session_state.pop("_callback_failed", False))


def _validity(options: list | None, multi: bool, low: object, high: object) -> Callable[[object], bool]:
    if options is not None and multi:
        return lambda value: isinstance(value, list) and all(item in options for item in value)
    if options is not None:
        return lambda value: value in options and not isinstance(value, list)
    if low is not None and high is not None:
        return lambda value: isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high
    return lambda value: isinstance(value, bool)


def _fallback(key: str, value: object, options: list | None, low: object, high: object, decode) -> object:
    """The valid value nearest to an invalid one: valid items, the default, the first option, or clamped."""
    if options is not None and isinstance(value, list):
        return [item for item in value if item in options]
    if options is not None:
        default = decode(DEFAULTS.get(key)) if decode else DEFAULTS.get(key)
        return default if default in options else options[0]
    if low is not None and high is not None:
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else DEFAULTS.get(key, low)
        return type(low)(min(max(number, low), high))
    return bool(value)


def _keep(key: str, widget: str, valid: Callable, encode: Callable | None, then: Callable | None) -> None:
    """``on_change``: store the widget's value under the permanent key, if it is a valid value."""
    value = st.session_state.get(widget)
    if valid(value):
        st.session_state[key] = encode(value) if encode else value
        if then is not None:
            then(value)


def control(
    draw: Callable,
    label: str,
    key: str,
    options: Sequence | None = None,
    *,
    labels: Callable[[object], str] | None = None,
    decode: Callable | None = None,
    encode: Callable | None = None,
    then: Callable[[object], None] | None = None,
    note: bool = True,
    **widget_options,
):
    """Draw a widget bound to the setting ``key`` of :data:`DEFAULTS`; return its value, always valid.

    The one protocol of every page: the widget's value is the setting itself (an id, an index, a
    number, a bool), ``labels`` only translates it for display. Before drawing, a setting that is not
    valid any more (a token past the end of a shorter text, a label from an old link) becomes the
    nearest valid value, with a note under the widget; the widget then shows the setting. On a change
    the widget stores its value back under ``key`` (then calls ``then``), so the next run, the other
    pages and the link all see it.

    Args:
        draw: a Streamlit widget function, or a container's: ``st.radio``, ``column.selectbox``,
            ``st.multiselect``, ``st.pills``, ``st.toggle``, ``st.slider``, ``st.number_input``.
        label: the widget's label (translated).
        key: the permanent key of the setting.
        options: the choices of an option widget. A number widget gives ``min_value`` and
            ``max_value`` instead; a toggle or checkbox neither.
        labels: the shown text of an option, in the current language (fixed now, so that Streamlit
            can call it outside this run).
        decode, encode: from the stored setting to the widget's value and back, when they differ
            (masked keys stored as ``"0,3"`` and chosen as ``[0, 3]``).
        then: called with the new value after a change was stored.
        note: whether a setting that had to change gets a note under the widget.
        widget_options: passed on to ``draw`` (``help``, ``horizontal``, ``disabled``, ``step`` ...).
    """
    s = st.session_state
    stored = s.get(key, DEFAULTS.get(key))
    value = decode(stored) if decode else stored
    low, high = widget_options.get("min_value"), widget_options.get("max_value")
    if options is not None:
        options = list(options)
        shown = {option: str(labels(option) if labels else option) for option in options}
        widget = widget_key(key, shown.values() if labels else ())
        widget_options["format_func"] = lambda option: shown.get(option, str(option))
        positional: tuple = (label, options)
    else:
        widget = widget_key(key)
        positional = (label,)
    valid = _validity(options, decode is not None and isinstance(value, list), low, high)
    if not valid(value):
        fixed = _fallback(key, value, options, low, high, decode)
        if note and value not in (None, -1, [], ""):
            place = getattr(draw, "__self__", st)
            shown_new = fixed
            if options is not None:
                shown_items = [
                    widget_options["format_func"](item) for item in (fixed if isinstance(fixed, list) else [fixed])
                ]
                shown_new = ", ".join(shown_items) if shown_items else "—"
            place.caption(t("controls.reset", control=label, old=value, new=shown_new))
        value = fixed
    # what else makes Streamlit a new widget
    identity = tuple(widget_options.get(name) for name in internals.WIDGET_IDENTITY)
    if s.get("_drawn_before", {}).get(widget) != identity or widget not in s or s[widget] != value:
        s[widget] = value
    s.setdefault("_drawn_now", {})[widget] = identity
    result = draw(
        *positional, key=widget, on_change=guarded(_keep), args=(key, widget, valid, encode, then), **widget_options
    )
    if not valid(result):  # only Streamlit's own fallback for a label it could not read
        result = value
    s[key] = encode(result) if encode else result
    return result


# --- Layers and heads ---------------------------------------------------------------------------------


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


def stepped(layer: int, head: int, unit: str, delta: int, shape: tuple[int, int]) -> tuple[int, int]:
    """The head ``delta`` steps of ``unit`` (``"layer"`` or ``"head"``) away, wrapping around.

    Heads step through the model in reading order: after the last head of a layer comes head 0 of
    the next layer, after the very last head the first one. Layers keep the head.
    """
    layers, heads = shape
    if unit == "layer":
        return (layer + delta) % layers, head
    return divmod((layer * heads + head + delta) % (layers * heads), heads)


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
    return Selection(active_model(), s["text"], s["pair"] or None, s["layer"], s["head"], s["fit_range"])
