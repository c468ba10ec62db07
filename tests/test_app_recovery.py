"""No error page: an unexpected error shows one message in the user's language, and the app stays usable."""

import logging

import pytest
from apptools import figures as figures_drawn
from apptools import no_errors, run_app, title
from replay import browser_steps

from attention_viz import figures
from attention_viz.ui.shared import presets_ui
from attention_viz.ui.text import i18n
from attention_viz.ui.view import state


def _broken(*args, **kwargs):
    raise RuntimeError("a bug in a figure")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_failing_page_shows_one_message_and_keeps_the_sidebar(monkeypatch, caplog, language):
    monkeypatch.setattr(figures, "line_view", _broken)
    with caplog.at_level(logging.ERROR, logger="attention_viz"):
        at = run_app(lang=language)
    no_errors(at)  # not Streamlit's error box
    assert [w.value for w in at.warning] == [i18n.table(language)["app.page_failed"]]
    assert "a bug in a figure" in caplog.text and "Traceback" in caplog.text  # the details go to the log only
    assert at.text_area(key="text").value == state.EXAMPLE_TEXT  # the sidebar was drawn and works
    at.text_area(key="text").input("The cat sat.").run()
    no_errors(at)
    monkeypatch.undo()
    at.run()
    no_errors(at)
    assert not at.warning and figures_drawn(at)


def test_a_failing_click_leaves_the_view_and_says_so(monkeypatch):
    at = run_app()
    monkeypatch.setattr(presets_ui, "_back", _broken)
    browser_steps(at, "head", 1)  # off the example's head: its "back" button is the one shown
    at.button(key="example_back").click().run()
    no_errors(at)
    assert title(at) == f"Layer {state.EXAMPLE_LAYER}, head {state.EXAMPLE_HEAD + 1}"
    assert at.warning[0].value == i18n.t("app.callback_failed")
    at.run()
    assert not at.warning  # said once
