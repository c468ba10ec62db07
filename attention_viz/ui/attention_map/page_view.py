"""The page around a map element that steps in the browser: the places its controls and details go, and the
server's files, which follow the view the server knows.

A map element whose data has ``controls`` (Compare, the article's layer, Rollout & norms, Inside a head) steps
through heads and layers without a run of the page: it draws its own title, Layer and Head boxes with ‹ › (in the
page's :data:`CONTROLS_SLOT`; Compare's and Rollout & norms' map switch too), and what follows the view under the
map (numbers, notes: in :data:`DETAILS_SLOT`),
and tells the server the view with the next run (:mod:`attention_viz.ui.view.browser_view`). What the server makes
for a view (the downloads) stays the server's: after steps in the browser the element hides it and shows a button
that brings the server to the view shown (one run); the files then follow (``attention_map.js``, ``follow``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import streamlit as st

from attention_viz.ui.text.i18n import plain
from attention_viz.ui.text.safe_text import Markdown

# Containers the map element puts its own controls and its details in: as the page's layout places them (the
# element's DOM, moved there; its keys answer wherever it is).
CONTROLS_SLOT, DETAILS_SLOT = "map_controls", "map_details"
# Containers of what the server made for the view it knows (the downloads), and of the button that brings the
# server to the view the map shows: the map shows one or the other as it steps.
SERVER_VIEW, OTHER_VIEW = "at_server_view", "off_server_view"
FOLLOW_BUTTON = "downloads_follow"


def slot(container) -> None:
    """Make ``container`` a place the map element can fill: Streamlit draws no container that holds nothing."""
    container.html('<div class="av-slot"></div>')


def server_view(names: Iterable[str] | Mapping[str, str]) -> dict:
    """The session's view settings ``names`` (``layer``, ``head``, ...; or ``{view field: session key}`` for a
    setting the page keeps under its own key, Rollout & norms' ``{"map_view": "rollout_map"}``): the view this run
    draws the page's server-made parts for, by the map's view fields."""
    pairs = names.items() if isinstance(names, Mapping) else ((name, name) for name in names)
    return {field: st.session_state[stored] for field, stored in pairs}


def follow(names: Iterable[str] | Mapping[str, str], **more) -> dict:
    """The element's ``follow`` data: the server's view (:func:`server_view` of ``names``) and the keys of the
    page's containers it fills, shows or hides (``more``: Compare's example and its keys)."""
    keys = {"server": SERVER_VIEW, "other": OTHER_VIEW, "controls": CONTROLS_SLOT, "details": DETAILS_SLOT}
    keys.update(more.pop("keys", {}))
    return {"server_view": server_view(names), "keys": keys, **more}


def server_files(draw: Callable[[], None], label: Markdown) -> None:
    """The files ``draw`` makes for the server's view, and the button (``label``) that the element shows in their
    place while it shows another view."""
    st.html(f"<style>.st-key-{OTHER_VIEW} {{ display: none; }}</style>")
    with st.container(key=SERVER_VIEW):
        draw()
    st.container(key=OTHER_VIEW).button(label, key=FOLLOW_BUTTON, icon=":material/download:")


def controls(title: str, head: bool = True) -> dict:
    """The words of the element's own controls: ``title`` (``{layer}``, ``{head}`` in it: the view shown), the
    Layer box and its ‹ ›, and the Head box and its ‹ › unless ``head`` is false (one map per layer)."""
    words = {
        "title": title,
        "layer": plain("sidebar.layer"),
        "layer_previous": plain("controls.layer_previous"),
        "layer_next": plain("controls.layer_next"),
    }
    if head:
        words.update(
            head=plain("sidebar.head"),
            head_previous=plain("controls.head_previous"),
            head_next=plain("controls.head_next"),
        )
    return words
