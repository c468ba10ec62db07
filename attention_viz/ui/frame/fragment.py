"""A page's body as an ``st.fragment``: a change of one of its own widgets (the layer or head, the view,
a token in focus) reruns the body alone, not the sidebar, the navigation and the other shared parts.

That is most of what a head change costs the server besides the page itself, and the browser then
replaces only the body's elements. What the full run does around a page, a fragment rerun does here:
the view goes into the address, a failed callback is told, an unexpected error is one message (see
:mod:`attention_viz.ui.frame.recovery`). One part of the sidebar follows the view: the "link to this view"
box, while it is open; a change then reruns the whole app instead. The Examples box follows the input
alone, which only a whole run changes, so a head change needs no whole rerun for it: a whole rerun asked
from the fragment's body runs with the widget values of the fragment's run, and loses a sentence typed
meanwhile whose own run was already asked for. Only the open link box asks for one.

Source: Streamlit's ``st.fragment`` (a fragment's widgets rerun only the fragment).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import streamlit as st

from attention_viz.ui.frame import recovery
from attention_viz.ui.view import browser_view, sharing, state


@contextlib.contextmanager
def page_body(page: str) -> Iterator[None]:
    """Run a page's body (inside the function that ``st.fragment`` wraps)."""
    if state.begin_fragment_run(page):
        browser_view.adopt()  # the steps the browser drew on its own since the last run
        if st.session_state.get(sharing.SHARE_OPEN):
            st.rerun(scope="app")  # the open link box must show the new view
        state.write_url(page)
        recovery.callback_note()
    try:
        with recovery.on_error(page):
            yield
    finally:
        state.settle_view(page)  # the view as the page left it: the next run tells Back from a change
