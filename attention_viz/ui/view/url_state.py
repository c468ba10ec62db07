"""The view in the address: read once when a session opens a link, written back after every run.

A link carries every setting of :data:`~attention_viz.ui.view.view_schema.DEFAULTS` that differs from its
default, and the page (:func:`~attention_viz.ui.view.view_schema.link_rules`; the encoding and its checks are
pure functions in :mod:`attention_viz.links`). What was wrong with a link is kept for the note the
sidebar shows once (:func:`link_notes`). The browser's Back and Forward bring an earlier view back.

A link stays within :data:`~attention_viz.links.MAX_LINK` characters, its address included, and so does
the browser's address: a sentence too long for that goes into them cut (:func:`query_room`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import streamlit as st

from attention_viz import links
from attention_viz.ui import internals
from attention_viz.ui.view import browser_view
from attention_viz.ui.view.view_schema import DEFAULTS, PAGE_KEY, RENAMED_PAGES, link_rules

_URL_READ, _URL_NOTES, _URL_PAGE, _URL_VALUES = "_url_read", "_url_notes", "_url_page", "_url_values"
_URL_WRITTEN, _URL_WRITTEN_VIEW = "_url_written", "_url_written_view"
_HISTORY_PAGE = "_url_history_page"  # the page of the address Back or Forward went to, for this run only
FALLBACK_ORIGIN = "http://localhost:8501"  # when the browser's address is unknown (tests)
# Characters of "/<page>?" between the app's root and the query in the browser's address: the longest page
# name (head_similarity) and room to spare. The shared link has "/?" there.
PAGE_PATH_ROOM = 32


def app_root() -> str:
    """The app's address without page path or query, e.g. ``http://host:8501`` (plus any base path)."""
    parts = urlsplit(st.context.url or "")
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else FALLBACK_ORIGIN
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{origin}/{base}" if base else origin


def query_room(root: str) -> int:
    """The most characters of a view's query string, so that a link at ``root`` (:func:`app_root`), and the
    browser's address on any page, stay within :data:`~attention_viz.links.MAX_LINK` characters."""
    return links.MAX_LINK - len(root) - PAGE_PATH_ROOM


def init() -> None:
    """Fill in defaults once per session, after the settings the page's link carries (read once); after the
    browser's Back or Forward, the settings of the address it went to; else the view the browser moved to on
    its own (:mod:`attention_viz.ui.view.browser_view`)."""
    st.session_state.pop(_HISTORY_PAGE, None)  # an earlier run's, cut short before its page was switched to
    if _URL_READ not in st.session_state:
        st.session_state[_URL_READ] = True
        values, notes = links.from_query(st.query_params.to_dict(), link_rules())
        st.session_state[_URL_PAGE] = values.pop(PAGE_KEY, None)
        st.session_state[_URL_NOTES] = [(note.kind, note.key) for note in notes]
        st.session_state[_URL_VALUES] = dict(values)
        for key, value in values.items():
            st.session_state[key] = value
    elif (flagged := internals.history_navigation()) or _follow_history():
        _take_address(with_page=flagged)
        browser_view.skip()  # Back or Forward went to an address: its view, not the steps made before it
    else:
        browser_view.adopt()  # the steps the browser drew on its own since the last run
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)


def _take_address(with_page: bool) -> None:
    """The settings of the run's address become the view (over the widgets' values the browser sent); with
    ``with_page`` (Back or Forward) its page the page too (:func:`requested_page`): Back to an address whose
    path is the app's root but whose ``page`` names another (a link opened at ``/?page=rollout``, then switched
    to that page) would else run Compare under it, and Compare's run would write its own page over the entry
    the browser moves to next. Not for another run: a click on a page in the sidebar sends the page it leaves
    in its address."""
    current = st.query_params.to_dict()
    values, _ = links.from_query(current, link_rules())
    page = values.pop(PAGE_KEY, None)
    if with_page:
        st.session_state[_HISTORY_PAGE] = page
    for key, value in values.items():
        st.session_state[key] = value
    st.session_state[_URL_WRITTEN] = current


def _follow_history() -> bool:
    """Whether this run's address is an earlier view of this session that the run should go back to, when
    Streamlit does not say that Back or Forward asked for the run (:func:`internals.history_navigation`):
    an address other than the one :func:`write_url` last wrote, with no setting changed since that write.

    A setting changed since (a box, the map's keys: this run's widgets) means the browser sent this run
    before it had taken the last address (a sentence typed while a step's run was writing it), and following
    that stale address would undo what the user just did."""
    written = st.session_state.get(_URL_WRITTEN)
    current = st.query_params.to_dict()
    if written is None or not current or current == written:
        return False
    return _view_values() == st.session_state.get(_URL_WRITTEN_VIEW)


def requested_page(pages: tuple[str, ...]) -> str | None:
    """The page the session's link asked for, once (then ``None``), or in a run of Back or Forward the page of
    the address it went to; an unknown name gets a note."""
    requested = st.session_state.pop(_HISTORY_PAGE, None) or st.session_state.pop(_URL_PAGE, None)
    requested = RENAMED_PAGES.get(requested, requested)
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


def _view_values() -> dict:
    return {key: st.session_state.get(key, default) for key, default in DEFAULTS.items()}


def view_query(page: str, root: str | None = None) -> tuple[dict[str, str], list[links.Note]]:
    """The current view as query parameters, and a note for each text cut to fit a link at ``root`` (default
    :func:`app_root`; see :func:`query_room`)."""
    room = query_room(app_root() if root is None else root)
    return links.to_query({**_view_values(), PAGE_KEY: page}, link_rules(), room)


def settle_view(page: str) -> None:
    """Remember the view as the page left it (after its boxes fitted the settings to the text: Inside a head's
    query token of an address that names none), so that the next run tells the browser's Back from a change of
    the view (:func:`_follow_history`).

    A setting the address names that the page had to reset (a token in focus past the end of a shorter text, a
    window start past it) goes into the address again: else the address, and a link copied from it, would keep
    the old value, and the link would open with a note that it does not fit the text. A setting the address
    left at its default (Inside a head's query token, fitted to the text) is only remembered, as before: a new
    address, a new entry in the browser's history."""
    written = st.session_state.get(_URL_WRITTEN_VIEW)
    if written is None:
        return
    view = _view_values()
    if any(view[key] != value and value != DEFAULTS[key] for key, value in written.items()):
        write_url(page)
    else:
        st.session_state[_URL_WRITTEN_VIEW] = view


def write_url(page: str) -> None:
    """Put the current view in the browser's address (only when it changed: no needless messages)."""
    params, _ = view_query(page)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    st.session_state[_URL_WRITTEN] = params
    st.session_state[_URL_WRITTEN_VIEW] = _view_values()
