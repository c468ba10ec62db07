"""The view's state by job: the schema, the URL, the widget protocol and the run's named moves.

The moves run in Streamlit's bare mode (no script run: ``st.session_state`` is a plain session), with known
values in and known values out.
"""

import ast
import inspect
import logging

import pytest
import streamlit as st

from attention_viz.ui import internals
from attention_viz.ui.view import state, url_state, view_schema, widgets

logging.getLogger(internals.SCRIPT_RUN_CONTEXT_LOGGER).setLevel(logging.ERROR)  # bare mode on purpose


@pytest.fixture(autouse=True)
def session():
    for key in list(st.session_state):
        del st.session_state[key]
    st.session_state.update(view_schema.DEFAULTS)
    yield st.session_state
    for key in list(st.session_state):
        del st.session_state[key]


def _defined(module) -> set[str]:
    """The public names a module defines itself (functions, classes, constants), from its source."""
    names = set()
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("module", [view_schema, url_state, widgets])
def test_every_name_of_each_job_is_still_there_as_state_x(module):
    names = _defined(module)
    assert names, module.__name__
    assert {name for name in names if getattr(state, name, None) is not getattr(module, name)} == set()


def test_open_head_chooses_the_head_and_asks_for_compare_once(session):
    state.open_head(3, 7)
    assert (session["layer"], session["head"]) == (3, 7)
    assert state.head_to_open() is True
    assert state.head_to_open() is False


def test_set_focus_moves_the_query_window_to_a_token_outside_it(session):
    session["query_start"] = 0
    state.set_focus(50, 100, 20)
    assert session["focus"] == 50
    assert session["query_start"] == 40  # the token near the window's middle
    state.set_focus(45, 100, 20)  # inside the window: it stays
    assert session["query_start"] == 40
    state.set_focus(-1, 100, 20)  # no token in focus: the window stays
    assert (session["focus"], session["query_start"]) == (-1, 40)


def test_set_window_keeps_each_start_inside_its_tokens(session):
    session["query_start"], session["key_start"] = 90, 5
    assert state.set_window("compare", 100, 12, 20) == (80, 0)
    assert (session["query_start"], session["key_start"]) == (80, 0)
    session["rollout_query_start"], session["rollout_key_start"] = -3, 30
    assert state.set_window("rollout", 40, 40, 16) == (0, 24)
    assert (session["rollout_query_start"], session["rollout_key_start"]) == (0, 24)


def test_text_box_starts_from_the_setting_and_set_text_changes_both(session):
    session["pairs_a"] = "The cat sat."
    drawn = []

    def box(label, key):
        drawn.append((label, key))
        return st.session_state[key]

    assert widgets.text_box(box, "A", "pairs_a") == "The cat sat."
    assert drawn == [("A", widgets.widget_key("pairs_a"))]
    state.set_text("pairs_a", "The dog sat.")
    assert session["pairs_a"] == session[widgets.widget_key("pairs_a")] == "The dog sat."
    assert widgets.text_box(box, "A", "pairs_a") == "The dog sat."


def test_stepped_wraps_through_the_model_in_reading_order():
    assert view_schema.stepped(0, 11, "head", 1, (6, 12)) == (1, 0)
    assert view_schema.stepped(5, 11, "head", 1, (6, 12)) == (0, 0)
    assert view_schema.stepped(0, 4, "layer", -1, (6, 12)) == (5, 4)


def test_a_renamed_page_still_opens(session):
    session["_url_page"] = "flow"
    assert url_state.requested_page(("compare", "rollout")) == "rollout"
