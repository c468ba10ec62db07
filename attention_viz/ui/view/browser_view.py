"""The view the browser moved to on its own, told to the server with the next run that something else causes.

Compare's map element steps through heads and layers, focuses a query, pans its window and switches between
the pretrained map, the from-scratch one and their difference in the browser, from the maps it holds (Rollout &
norms' between the head average, rollout and norm-based attention): none of these moves runs the app's script on
the server. The element writes the view it shows into one hidden text
box (:data:`KEY`, ``on_change="ignore"``: setting it asks for no run) and into the browser's address. Streamlit
sends every widget's value with every run, so the next run, whatever caused it (a new sentence, a toggle, a
page switch, the browser's Back), brings the view along, and :func:`adopt` makes it the session's view before
anything is drawn: nothing the student did in the browser is lost.

The box's value, written by ``browser_view.js``, is JSON::

    {"seq": n, "view": {"layer": L, "head": H, "focus": F, "query_start": Q, "key_start": K, "map_view": "..."}}

(Rollout & norms' map carries ``rollout_query_start``, ``rollout_key_start`` and ``rollout_map`` instead of the
window's and the map's names: :data:`VIEW_KEYS`.)

``seq`` counts the element's reports in this page load; a value already adopted (the same or a lower ``seq``)
changes nothing, so a view the server moved itself afterwards (an example, a link, Back) stays. A value that
is not such JSON, or with numbers out of range, is ignored (the view stays), as any widget value would be.

The browser's Back and Forward go to the view the address they reached names, not to the steps reported
before: the run they cause skips the box's report (:func:`skip`, from ``url_state.init``, which knows such a run
by Streamlit's own flag: :func:`attention_viz.ui.internals.history_navigation`).

Source: Streamlit's ``on_change="ignore"`` (1.66) for a widget whose value waits for the next run; the
``.st-key-<key>`` class of a keyed element (documented) hides the box.
"""

from __future__ import annotations

import json

import streamlit as st

from attention_viz.ui.view.view_schema import CHOICES, RANGES

KEY = "browser_view"  # the hidden text box's widget key (its container's class: st-key-browser_view_box)
BOX = "browser_view_box"
# Compare's (and the other maps') view, and Rollout & norms' own window and map kind
VIEW_KEYS = ("layer", "head", "focus", "query_start", "key_start", "map_view")
VIEW_KEYS += ("rollout_query_start", "rollout_key_start", "rollout_map")
_ADOPTED = "_browser_view_seq"
_LAST = "_browser_view_last"
_SERVER_MOVES = "_browser_view_server_moves"


def draw() -> None:
    """The hidden box, on every run of every page (a widget that a run does not draw is forgotten)."""
    box = st.container(key=BOX)
    box.html(f"<style>.st-key-{BOX} {{ display: none; }}</style>")
    box.text_input("view", key=KEY, on_change="ignore", label_visibility="collapsed")


def reported(text: object) -> tuple[int, dict] | None:
    """``(seq, view)`` from the box's value, or ``None`` when it is not a valid report (see the module)."""
    if not isinstance(text, str) or not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("view"), dict):
        return None
    seq, given = value.get("seq"), value["view"]
    if not isinstance(seq, int) or isinstance(seq, bool):
        return None
    view = {}
    for name in VIEW_KEYS:
        if name not in given:
            continue
        number = given[name]
        if name in CHOICES:
            if number not in CHOICES[name]:
                return None
        else:
            low, high = RANGES.get(name, (0, 2**31 - 1))
            if not isinstance(number, int) or isinstance(number, bool) or not low <= number <= high:
                return None
        view[name] = number
    return seq, view


def adopt() -> bool:
    """Make the browser's last reported view the session's, once per report (see the module); whether it did.

    Call before anything is drawn: in the app's run (after the address was read) and in a page fragment's own
    run. A page clamps what does not fit its text (a focus past the end) as it does for any setting."""
    s = st.session_state
    found = reported(s.get(KEY))
    if found is None:
        return False
    seq, view = found
    if seq <= s.get(_ADOPTED, -1):
        return False
    s[_ADOPTED] = seq
    s.update(view)
    s[_LAST] = view
    return True


def last() -> dict | None:
    """The view adopted from the browser's last report (its settings as reported), or ``None``."""
    return st.session_state.get(_LAST)


def adopted_seq() -> int:
    """The ``seq`` of the last report adopted (or skipped), -1 before any."""
    return st.session_state.get(_ADOPTED, -1)


def server_moves() -> int:
    """How many times the server moved the view itself over the browser's reports (Back, Forward, a button that
    goes to a head: :func:`moved`): a map element whose count changed since its last run takes the view the
    server sends (every map of the page, the ones that follow another's steps too), even when that view is the
    one it was last sent (steps in the browser not yet told, then a button back to the head they left)."""
    return int(st.session_state.get(_SERVER_MOVES, 0))


def moved() -> None:
    """The server moved the view itself (see :func:`server_moves`)."""
    st.session_state[_SERVER_MOVES] = server_moves() + 1


def skip() -> None:
    """Leave the box's current report unadopted for good: the browser's Back or Forward went to an address,
    whose view wins over the steps made before it."""
    found = reported(st.session_state.get(KEY))
    if found is not None:
        st.session_state[_ADOPTED] = max(found[0], st.session_state.get(_ADOPTED, -1))
    st.session_state.pop(_LAST, None)  # the view is the address's now: the map takes it (a new revision)
    moved()
