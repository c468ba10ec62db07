"""Click sequences that used to replace the app with Streamlit's error page, replayed as a browser sends them.

A browser sends back the labels it showed (see tests/replay.py), so each sequence below runs the step
after a change of language, example or view with the labels of the run before it.
"""

import json

import numpy as np
import pytest
from apptools import chart, no_errors, run_app, title, z
from replay import (
    browser_report,
    browser_step,
    browser_steps,
    control,
    map_data,
    map_title,
    map_view,
    replay,
    shown_labels,
)
from streamlit.testing.v1 import AppTest

from attention_viz import links
from attention_viz.analysis import presets
from attention_viz.extraction import extract
from attention_viz.ui import internals
from attention_viz.ui.shared import presets_ui
from attention_viz.ui.text import i18n
from attention_viz.ui.view import state

INSIDE = "attention_viz/ui/pages/inside.py"
ZH = i18n.table("zh")


def _language(at: AppTest, language: str) -> AppTest:
    at.radio(key="lang").set_value(language).run()
    no_errors(at)
    return at


def _example(at: AppTest, preset_id: str) -> AppTest:
    """Choose an example in the sidebar's Examples control."""
    options = [w for w in at.sidebar.get("selectbox") if (w.key or "").startswith("_example")]
    (picker,) = options or [at.pills(key="_preset")]
    return picker.set_value(preset_id).run()


def _head(at: AppTest, head: int, shown) -> AppTest:
    """Choose ``head``: the browser sends the labels of ``shown`` with it."""
    at.session_state["head"] = head
    return replay(at, shown)


def _map_is_the_head(at: AppTest, bundled, text: str, pair: str | None, layer: int, head: int) -> None:
    expected = extract(bundled, text, pair).weights[layer, head]
    shown = z(chart(at, "map"))
    np.testing.assert_array_equal(shown, expected[: shown.shape[0], : shown.shape[1]])


def test_chinese_then_head_keeps_the_map_view_and_shows_chinese_labels(bundled):
    at = run_app()
    control(at, "radio", "map_view").set_value("difference").run()
    english = shown_labels(at)
    _language(at, "zh")
    _head(at, 2, english)
    no_errors(at)
    assert map_title(at).startswith(ZH["attention_map.head"].format(layer=3, head=2))
    assert control(at, "radio", "map_view").value == "difference"
    variant = control(at, "selectbox", "variant")
    assert variant.format_func(variant.value) == ZH["compare.variant_exact"]
    focus = control(at, "selectbox", "focus")
    assert focus.value == -1 and focus.format_func(-1) == ZH["compare.focus_none"]


def test_chinese_english_chinese_then_a_view_click(bundled):
    at = run_app()
    earlier = shown_labels(at)
    for language in ("zh", "en", "zh"):
        before = shown_labels(at)
        _language(at, language)
        replay(at, earlier)
        no_errors(at)
        earlier = before
    control(at, "radio", "map_view").set_value("scratch")
    replay(at, earlier)
    no_errors(at)
    assert control(at, "radio", "map_view").value == "scratch"


def test_focus_then_example_then_head(bundled):
    at = run_app()
    it = extract(bundled, state.EXAMPLE_TEXT).encoding.tokens.index("it")
    control(at, "selectbox", "focus").set_value(it).run()
    before = shown_labels(at)
    _example(at, "repeated")
    no_errors(at)
    _head(at, 2, before)
    no_errors(at)
    preset = next(p for p in presets.load() if p.id == "repeated")
    assert map_title(at).startswith(f"Layer {preset.layer}, head 2 · ")
    _map_is_the_head(at, bundled, preset.text, None, preset.layer, 2)
    focus = control(at, "selectbox", "focus").value
    assert focus == -1 or 0 <= focus < len(extract(bundled, preset.text).encoding.tokens)


def test_focus_then_hide_special_then_head(bundled):
    at = run_app()
    it = extract(bundled, state.EXAMPLE_TEXT).encoding.tokens.index("it")
    control(at, "selectbox", "focus").set_value(it).run()
    before = shown_labels(at)
    control(at, "toggle", "hide_special").set_value(True).run()
    no_errors(at)
    _head(at, 2, before)
    no_errors(at)
    assert map_title(at).startswith("Layer 3, head 2 · ")
    focus = control(at, "selectbox", "focus")
    assert focus.value == -1 or focus.value < len(extract(bundled, state.EXAMPLE_TEXT).encoding.tokens) - 2


def test_pair_example_focus_hide_then_block(bundled):
    at = run_app()
    _example(at, "pair")
    no_errors(at)
    control(at, "selectbox", "focus").set_value(3).run()
    before = shown_labels(at)
    control(at, "toggle", "hide_special").set_value(True).run()
    no_errors(at)
    control(at, "selectbox", "block").set_value("BA")
    replay(at, {k: v for k, v in before.items() if k != control(at, "selectbox", "block").id})
    no_errors(at)
    assert control(at, "selectbox", "block").value == "BA"


def test_inside_chinese_then_temperature(bundled):
    at = run_app()
    at.switch_page(INSIDE).run()
    english = shown_labels(at)
    _language(at, "zh")
    control(at, "slider", "temperature").set_value(2.0)
    replay(at, english)
    no_errors(at)
    assert at.session_state["temperature"] == 2.0
    assert title(at).startswith("第 3 层第 1 个头的内部")  # the map's title (it follows the map's steps)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_option_widget_shows_labels_of_the_current_language(language):
    at = run_app(lang=language, text="The cat sat.", pair="It slept.")  # a pair: the block box is drawn
    table = i18n.table(language)
    for kind, key in (("radio", "map_view"), ("selectbox", "variant"), ("selectbox", "block")):
        widget = control(at, kind, key)
        assert all(label in table.values() for label in widget.options), (key, widget.options)
        assert widget.format_func(widget.value) in table.values()


def test_head_steps_wrap_to_the_next_layer_and_around():
    shape = (6, 12)
    assert state.stepped(3, 1, "head", 1, shape) == (3, 2)
    assert state.stepped(3, 11, "head", 1, shape) == (4, 0)  # after a layer's last head: the next layer
    assert state.stepped(4, 0, "head", -1, shape) == (3, 11)
    assert state.stepped(5, 11, "head", 1, shape) == (0, 0) and state.stepped(0, 0, "head", -1, shape) == (5, 11)
    assert state.stepped(5, 7, "layer", 1, shape) == (0, 7) and state.stepped(0, 7, "layer", -1, shape) == (5, 7)
    assert state.stepped(0, 0, "head", 1, (1, 1)) == (0, 0)  # a one-head model steps onto itself


def test_map_steps_reach_the_server_with_the_next_run_and_the_address_follows(bundled):
    """Compare's map steps in the browser; the view it ends on comes with the next run (here: each step's)."""
    at = run_app(head=11)
    browser_steps(at, "head", 1)
    no_errors(at)
    assert (at.session_state["layer"], at.session_state["head"]) == (4, 0)
    _map_is_the_head(at, bundled, state.EXAMPLE_TEXT, None, 4, 0)
    browser_steps(at, "layer", -1)
    browser_steps(at, "head", -1)
    assert (control(at, "selectbox", "layer").value, control(at, "selectbox", "head").value) == (2, 11)
    assert at.query_params["layer"] == "2" and at.query_params["head"] == "11"
    stale = {"seq": 1, "view": {"layer": 0, "head": 0}}  # a report already taken changes nothing
    at.text_input(key="browser_view").set_value(json.dumps(stale)).run()
    assert (at.session_state["layer"], at.session_state["head"]) == (2, 11)
    for broken in ("{", '{"seq": 99, "view": {"layer": 5000}}', '{"seq": 99, "view": {"map_view": "x"}}', "[]"):
        at.text_input(key="browser_view").set_value(broken).run()  # not a report: ignored, no error
        no_errors(at)
        shown = (at.session_state["layer"], at.session_state["head"], at.session_state["map_view"])
        assert shown == (2, 11, "pretrained")


def test_step_buttons_leave_the_keys_to_the_map_elements():
    """Compare, Inside a head, the article's layer and Rollout & norms: a map element answers the arrow
    keys (in the browser) and draws its own ‹ › buttons (in the browser), the page none."""
    keys = ("step_head_next", "step_layer_previous")
    at = run_app()
    for page in ("article", "rollout", "inside", "compare"):
        assert not [b for b in at.button if b.key in keys]
        assert map_data(at)["controls"]["layer_previous"] == "Previous layer (↑)"
        at.switch_page(f"attention_viz/ui/pages/{page}.py").run()


def test_a_one_head_model_steps_through_its_layers(tmp_path_factory):
    from conftest import TINY_CONFIGS, make_tiny_bert

    folder = make_tiny_bert(tmp_path_factory.mktemp("one-head"), **TINY_CONFIGS["h24-l3-heads1"])
    at = run_app(model=folder, layer=0, head=0)
    no_errors(at)
    assert control(at, "selectbox", "head").options == ["0"]
    browser_steps(at, "head", 1)
    no_errors(at)
    assert (at.session_state["layer"], at.session_state["head"]) == (1, 0)


def test_a_setting_that_no_longer_fits_is_reset_with_a_note(bundled):
    at = run_app(focus=14)
    assert control(at, "selectbox", "focus").value == 14
    at.text_area(key="text").input("The cat sat.").run()
    no_errors(at)
    assert control(at, "selectbox", "focus").value == -1 and at.session_state["focus"] == -1
    assert any("14" in caption.value and "none" in caption.value for caption in at.caption)


def test_a_setting_reset_to_fit_a_shorter_text_leaves_the_address_too(bundled):
    """The page resets the focus and the window after the address was written: the address (what a lecturer
    copies for the class) says what the page shows, not the settings that no longer fit."""
    at = run_app(text="hello " * 40, focus=26, query_start=7, key_start=5)
    assert (at.query_params["focus"], at.query_params["query_start"], at.query_params["key_start"]) == ("26", "7", "5")
    at.text_area(key="text").input("The cat sat.").run()
    no_errors(at)
    assert (at.session_state["focus"], at.session_state["query_start"], at.session_state["key_start"]) == (-1, 0, 0)
    assert (at.query_params["focus"], at.query_params["query_start"], at.query_params["key_start"]) == ("-1", "0", "0")


def test_an_older_links_scaling_names_still_open():
    values, notes = links.from_query({"scaling": "bert"}, state.link_rules())
    assert values == {"scaling": "exact"} and not notes
    values, _ = links.from_query({"scaling": "none"}, state.link_rules())
    assert values == {"scaling": "no-scaling"}


def test_rollout_window_goes_into_the_link():
    at = run_app(text="hello " * 40, rollout_query_start=7)
    at.switch_page("attention_viz/ui/pages/rollout.py").run()
    no_errors(at)
    assert control(at, "slider", "rollout_query_start").value == 7
    control(at, "slider", "rollout_key_start").set_value(5).run()
    assert at.query_params["rollout_query_start"] == "7" and at.query_params["rollout_key_start"] == "5"


def test_the_window_stays_on_the_token_in_focus_when_a_pair_changes_its_range(bundled):
    preset = next(p for p in presets.load() if p.id == "long_zh")
    at = run_app(text=preset.text, pair="")
    control(at, "selectbox", "focus").set_value(30).run()
    start = at.session_state["query_start"]
    assert start > 0  # the window moved to the token
    at.text_input(key="pair").input("🐱").run()  # more tokens: the window slider gets another range
    no_errors(at)
    assert at.session_state["query_start"] == start == control(at, "slider", "query_start").value
    weights = extract(bundled, preset.text, "🐱").weights[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD]
    shown = z(chart(at, "map"))
    np.testing.assert_array_equal(shown, weights[start : start + shown.shape[0], : shown.shape[1]])


def test_back_brings_the_earlier_address_back_but_a_stale_one_never_undoes_a_change(bundled, monkeypatch):
    """The address the browser sends with a run is an earlier one after Back (the view follows it), or one
    it had not yet replaced when the user typed (a sentence sent while a step's run was writing the address):
    then the typed sentence and the step stand."""
    at = run_app()
    before = dict(at.query_params)
    browser_steps(at, "head", 1)
    assert at.query_params["head"] == str(state.EXAMPLE_HEAD + 1)
    for key in list(at.query_params):  # the browser's address as it was before the step
        del at.query_params[key]
    at.query_params.update(before)
    at.text_area(key="text").input("The cat sat on the mat.").run()
    no_errors(at)
    assert at.session_state["text"] == "The cat sat on the mat." and at.session_state["head"] == state.EXAMPLE_HEAD + 1
    _map_is_the_head(at, bundled, "The cat sat on the mat.", None, state.EXAMPLE_LAYER, state.EXAMPLE_HEAD + 1)
    assert (at.query_params["head"], at.query_params["text"]) == (
        str(state.EXAMPLE_HEAD + 1),
        "The cat sat on the mat.",
    )
    back = dict(at.query_params, head=str(state.EXAMPLE_HEAD + 3))  # Back to an address of a later head
    browser_steps(at, "head", 1)
    for key in list(at.query_params):
        del at.query_params[key]
    at.query_params.update(back)
    at.run()  # what the browser's Back sends: no widget changed
    assert at.session_state["head"] == state.EXAMPLE_HEAD + 3 and at.session_state["text"] == "The cat sat on the mat."
    assert map_view(at)["head"] == state.EXAMPLE_HEAD + 3  # the map takes the address's view
    # steps in the browser, then Back: the address wins over the steps not yet told (they were after it)
    view = {**map_view(at), "head": 0}
    at.text_input(key="browser_view").set_value(json.dumps({"seq": 50, "view": view}))
    for key in list(at.query_params):
        del at.query_params[key]
    at.query_params.update(back)
    at.query_params["head"] = "5"
    at.run()
    assert at.session_state["head"] == 5 and map_view(at)["head"] == 5
    # steps in the browser, then Back to the very address the server last wrote: Streamlit sends that address
    # with any run, so only Streamlit's flag on the run that Back asks for tells Back from another run
    written = dict(at.query_params)
    browser_steps(at, "head", 1)  # a run that took the step: the address now names head 6
    browser_report(at, head=0, focus=2)  # more steps, not yet told
    assert dict(at.query_params) != written
    moved = dict(at.query_params)
    rev = map_data(at)["rev"]
    with monkeypatch.context() as patch:
        patch.setattr(internals, "history_navigation", lambda: True)
        at.run()  # Back to the address of head 6, which the server wrote last
    assert dict(at.query_params) == moved and at.session_state["head"] == 6 and map_view(at)["head"] == 6
    assert map_view(at)["focus"] != 2
    assert map_data(at)["rev"] > rev  # the map, which shows head 0, is told to go to the server's view
    browser_step(at, head=1)  # a later report is adopted as before
    assert at.session_state["head"] == 1 and map_view(at)["head"] == 1


def test_back_over_a_toggle_turns_it_off_though_the_browser_still_sends_it_on(bundled, monkeypatch):
    """Back from the address a toggle's run wrote to the one before: the run Back asks for carries the toggle's
    value as the browser holds it (on), and the address's (off) wins; steps in the browser since are dropped."""
    at = run_app()
    before = dict(at.query_params)
    at.toggle(key="fit_range").set_value(True).run()
    assert at.query_params["fit_range"] == "1"
    browser_report(at, head=4)  # a step in the browser after the toggle, not yet told
    for key in list(at.query_params):
        del at.query_params[key]
    at.query_params.update(before)
    with monkeypatch.context() as patch:
        patch.setattr(internals, "history_navigation", lambda: True)
        at.run()  # the toggle's widget still on in the browser
    no_errors(at)
    assert at.session_state["fit_range"] is False and at.toggle(key="fit_range").value is False
    assert at.session_state["head"] == state.EXAMPLE_HEAD and map_view(at)["head"] == state.EXAMPLE_HEAD
    assert dict(at.query_params) == before


def test_back_to_an_address_that_names_another_page_goes_to_that_page_once(bundled, monkeypatch):
    """Back to the address a link opened at the app's root named (``/?page=rollout``, before the app switched to
    that page): the run goes to the page the address names, not the root's Compare; the next run, a click on a
    page, is not sent back there."""
    at = run_app()
    address = dict(at.query_params, page="rollout")
    for key in list(at.query_params):
        del at.query_params[key]
    at.query_params.update(address)
    with monkeypatch.context() as patch:
        patch.setattr(internals, "history_navigation", lambda: True)
        at.run()
    no_errors(at)
    assert at.query_params["page"] == "rollout"  # Rollout & norms ran and wrote its own address
    at.switch_page("attention_viz/ui/pages/all_heads.py").run()
    no_errors(at)
    assert at.query_params["page"] == "all_heads"


def test_off_the_examples_head_the_page_leads_back_and_the_box_keeps_its_name(bundled):
    """The Examples box names the example whose sentence is the input, whatever the head (a head step reruns
    the page alone, never the box); off its head the page has a button back to it, and there the note."""
    at = run_app()
    widget = next(w for w in at.sidebar.get("selectbox") if (w.key or "").startswith("_example"))
    # Compare draws both, the one off the head shown hidden; the map shows the other as it steps in the browser
    hidden = lambda key: any(f".st-key-{key} {{ display: none; }}" in h.proto.body for h in at.get("html"))  # noqa: E731
    assert widget.value == "pronoun" and at.info and hidden(presets_ui.BACK_KEY) and not hidden(presets_ui.NOTE_KEY)
    assert map_data(at)["follow"]["example"] == [state.EXAMPLE_LAYER, state.EXAMPLE_HEAD]
    browser_steps(at, "head", 1)
    assert (at.session_state["layer"], at.session_state["head"]) == (state.EXAMPLE_LAYER, state.EXAMPLE_HEAD + 1)
    assert next(w for w in at.sidebar.get("selectbox") if (w.key or "").startswith("_example")).value == "pronoun"
    assert hidden(presets_ui.NOTE_KEY) and not hidden(presets_ui.BACK_KEY)
    at.button(key="example_back").click().run()
    no_errors(at)
    assert map_view(at)["layer"] == state.EXAMPLE_LAYER and map_view(at)["head"] == state.EXAMPLE_HEAD
    assert at.info and "Pronoun" in at.info[0].value and hidden(presets_ui.BACK_KEY)
    _map_is_the_head(at, bundled, state.EXAMPLE_TEXT, None, state.EXAMPLE_LAYER, state.EXAMPLE_HEAD)


def test_the_examples_back_button_moves_the_map_even_before_its_steps_were_told(bundled):
    """Steps in the browser whose report has not reached the server yet (the button's run came first), then the
    example's back button: the server's view never left the example's head, and the map, which shows another
    head, is still told to go there (a new revision)."""
    at = run_app()
    rev = map_data(at)["rev"]
    at.button(key="example_back").click().run()  # the map stepped to another head; nothing told yet
    no_errors(at)
    assert map_data(at)["rev"] > rev
    assert (map_view(at)["layer"], map_view(at)["head"]) == (state.EXAMPLE_LAYER, state.EXAMPLE_HEAD)
