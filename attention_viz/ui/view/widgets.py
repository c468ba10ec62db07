"""The widget protocol: the one way a widget is bound to a setting of the view (:func:`control`).

A widget's value is always an id, an index or a number, never a shown label: :func:`control` draws any
widget bound to a setting of :data:`~attention_viz.ui.view.view_schema.DEFAULTS`, keeps the setting valid and
makes the widget show it in the current language. :func:`begin_run` and :func:`begin_fragment_run` tell
it which widgets the previous run drew; :func:`guarded` keeps a callback's error from becoming
Streamlit's error page.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence

import streamlit as st

from attention_viz.ui import internals
from attention_viz.ui.text.i18n import t
from attention_viz.ui.view import browser_view
from attention_viz.ui.view.view_schema import DEFAULTS

_log = logging.getLogger("attention_viz")


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
    s["_seeded_before"], s["_seeded_now"] = s.get("_seeded_now", set()), set()
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
            # Callbacks run before the app's script: the steps the browser drew on its own come first, so that
            # a move made now (a head opened, an example's head) is not undone by them in the run.
            browser_view.adopt()
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


def _say_reset(place, label: str, old: object, new: object, format_func: Callable | None) -> None:
    """The note under a widget whose setting had to change: from ``old`` to ``new`` (shown as the widget shows it)."""
    shown_new = new
    if format_func is not None:
        shown_items = [format_func(item) for item in (new if isinstance(new, list) else [new])]
        shown_new = ", ".join(shown_items) if shown_items else "—"
    place.caption(t("controls.reset", control=label, old=old, new=shown_new))


def _bind(key: str, options: list | None, labels: Callable | None, widget_options: dict) -> str:
    """The widget key of the setting ``key``; an option widget's shown labels are fixed now, into
    ``widget_options["format_func"]`` and into the widget key (new labels: a new widget, :func:`widget_key`)."""
    if options is None:
        return widget_key(key)
    shown = {option: str(labels(option) if labels else option) for option in options}
    widget_options["format_func"] = lambda option: shown.get(option, str(option))
    return widget_key(key, shown.values() if labels else ())


def _seed(widget: str, value: object, widget_options: dict) -> None:
    """Start the widget from the setting when it is drawn anew or shows another value, and once more in the
    run after the one that wrote it: a run the browser asked for before the written value reached it
    carries the value the box showed before (and may set the setting back to it), while the box shows the
    written one; writing it again makes the box show the setting."""
    s = st.session_state
    # what else makes Streamlit a new widget
    identity = tuple(widget_options.get(name) for name in internals.WIDGET_IDENTITY)
    changed = s.get("_drawn_before", {}).get(widget) != identity or widget not in s or s[widget] != value
    if changed:
        s.setdefault("_seeded_now", set()).add(widget)
    if changed or widget in s.get("_seeded_before", ()):
        s[widget] = value
    s.setdefault("_drawn_now", {})[widget] = identity


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
    options = None if options is None else list(options)
    widget = _bind(key, options, labels, widget_options)
    positional = (label,) if options is None else (label, options)
    valid = _validity(options, decode is not None and isinstance(value, list), low, high)
    if not valid(value):
        fixed = _fallback(key, value, options, low, high, decode)
        if note and value not in (None, -1, [], ""):
            _say_reset(getattr(draw, "__self__", st), label, value, fixed, widget_options.get("format_func"))
        value = fixed
    _seed(widget, value, widget_options)
    result = draw(
        *positional, key=widget, on_change=guarded(_keep), args=(key, widget, valid, encode, then), **widget_options
    )
    if not valid(result):  # only Streamlit's own fallback for a label it could not read
        result = value
    s[key] = encode(result) if encode else result
    return result


def choice_row(place, words: str, key: str, options: Sequence, **widget_options):
    """A horizontal radio group in ``place`` bound to the setting ``key`` (:func:`control`): its label is the
    text ``words`` (``"atlas.kind"``), each option's the text ``words`` + ``"_"`` + the option
    (``"atlas.kind_attention"``); returns the option chosen. ``widget_options`` as :func:`control`'s."""
    return control(
        place.radio,
        t(words),
        key,
        options,
        labels=lambda option: t(f"{words}_{option}"),
        horizontal=True,
        **widget_options,
    )


def text_box(draw: Callable, label: str, key: str) -> str:
    """A free-text box (``st.text_input``, ``column.text_area``) bound to the setting ``key``; returns its text.

    Free text is no option or number, so nothing is checked: the box starts from the stored text and what
    is typed is stored back. :func:`set_text` changes both from a callback.
    """
    widget = widget_key(key)
    st.session_state.setdefault(widget, st.session_state.get(key, DEFAULTS.get(key, "")))
    text = draw(label, key=widget)
    st.session_state[key] = text
    return text


def set_text(key: str, text: str) -> None:
    """Set the text setting ``key`` and the box bound to it (:func:`text_box`), in a callback before it is drawn."""
    st.session_state[key] = st.session_state[widget_key(key)] = text
