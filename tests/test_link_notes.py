"""A link whose settings the app had to change says so, by name; a model that failed leaves the Model box on
the model shown."""

from __future__ import annotations

from apptools import APP, no_errors, run_app
from markup import shown
from replay import control
from streamlit.testing.v1 import AppTest

from attention_viz import links
from attention_viz.models.loading import BUNDLED_MODEL


def _open(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(query)
    return at.run()


def _note(at: AppTest) -> set[str]:
    """The settings the note about the link names (each in its own code span), or an empty set."""
    notes = [w.value for w in at.warning if "could not be read" in w.value]
    if not notes:
        return set()
    named = shown(notes[0]).text.split(" (", 1)[1].rsplit("): ", 1)[0]
    return set(named.split(", "))


def test_a_layer_the_model_lacks_is_named_in_the_note():
    at = _open({"layer": "99", "head": "11"})
    no_errors(at)
    assert control(at, "selectbox", "layer").value == 5 and control(at, "selectbox", "head").value == 11
    assert _note(at) == {"layer"}  # only what was changed
    at.run()
    assert not _note(at)  # once


def test_tokens_past_the_text_s_end_are_named_in_the_note():
    at = _open({"page": "inside", "text": "The cat sat.", "inside_query": "40", "masked": "1,40", "layer": "2"})
    no_errors(at)
    assert control(at, "selectbox", "inside_query").value == 1 and control(at, "multiselect", "masked").value == [1]
    assert _note(at) == {"inside_query", "masked"}


def test_a_link_that_fits_opens_without_a_note():
    at = _open({"page": "inside", "text": "The cat sat.", "inside_query": "2", "masked": "1", "layer": "5"})
    no_errors(at)
    assert not at.warning


def test_the_model_box_shows_the_model_shown_after_a_failure():
    at = run_app(model="/no/such/folder")
    no_errors(at)
    assert at.selectbox(key="model").value == BUNDLED_MODEL
    assert "/no/such/folder" in shown(at.error[0].value).text
    at.run()
    no_errors(at)
    assert not at.error and at.selectbox(key="model").value == BUNDLED_MODEL


def test_a_linked_model_that_fails_is_named_in_the_message_and_the_note():
    at = _open({"model": "no-such-model"})
    no_errors(at)
    assert "no-such-model" in shown(at.error[0].value).text and _note(at) == {"model"}
    assert links.parse_query(links.query_string({"model": at.session_state["model"]}))["model"] == BUNDLED_MODEL
