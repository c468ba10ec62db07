"""AppTest for the named head scores on Head statistics and All heads' "colour by"."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from apptools import ALL_HEADS, chart, decode, downloaded, no_errors, run_app
from numpy.testing import assert_allclose
from replay import control

from attention_viz.analysis import head_scores
from attention_viz.extraction import extract
from attention_viz.figures import MISSING_COLOUR
from attention_viz.ui.view import state

STATS = "attention_viz/ui/pages/head_stats.py"
SMALL = dict(scores_count=2, scores_length=8, scores_seed=3)


def _colours(figure: dict) -> np.ndarray:
    return decode(figure["data"][0]["marker"]["color"])


def test_head_statistics_scores_run_on_request_and_match_the_core(bundled, media):
    at = run_app(**SMALL)
    at.switch_page(STATS).run()
    no_errors(at)
    run = at.button(key="_scores_run")
    assert run.label.startswith("Score the heads: 2 random sequences and 2 controls, about ")  # the box's 2
    assert run.label.endswith(" on this machine")
    run.click().run()
    no_errors(at)
    expected = head_scores.model_head_scores(bundled, 2, 8, seed=3)
    assert_allclose(_colours(chart(at, "scores_overview")), expected.repeated["induction"].reshape(-1), atol=1e-6)
    (element,) = [d for d in at.dataframe if "induction_control" in d.value.columns]
    table = element.value
    assert list(table.columns[:4]) == ["layer", "head", "induction", "induction_control"]
    assert_allclose(table["sink_control"], expected.control["sink"].reshape(-1), atol=1e-6)
    assert element.proto.placeholder == "—"  # a missing score reads "—", not "None"
    csv = pd.read_csv(io.StringIO(downloaded(media, at.get("download_button")[-1])))
    assert_allclose(csv["previous"], expected.repeated["previous"].reshape(-1), atol=1e-6)
    assert csv["duplicate_control"].isna().all()  # no repeat in a control: left empty in the CSV, never 0
    control(at, "selectbox", "scores_shown").set_value("previous").run()
    no_errors(at)
    assert_allclose(_colours(chart(at, "scores_overview")), expected.repeated["previous"].reshape(-1), atol=1e-6)


def test_all_heads_colour_by_a_text_score_and_open_a_head(bundled):
    at = run_app()
    at.switch_page(ALL_HEADS).run()
    control(at, "selectbox", "all_heads_colour").set_value("sink").run()
    no_errors(at)
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    assert_allclose(_colours(chart(at, "all_heads_scores")), head_scores.sink_scores(weights).reshape(-1), atol=1e-6)
    assert len(at.get("plotly_chart")) == 2  # the thumbnails stay below


def test_all_heads_colour_by_induction_asks_before_it_runs():
    at = run_app(**(SMALL | {"scores_seed": 11}))  # settings no other test ran
    at.switch_page(ALL_HEADS).run()
    control(at, "selectbox", "all_heads_colour").set_value("induction").run()
    no_errors(at)
    assert at.button(key="_scores_run").label.startswith("Score the heads")


def test_published_heads_are_marked_beside_their_scores(bundled, monkeypatch):
    from attention_viz.analysis import published

    marked = (published.GPT2_SMALL_HEADS[0], published.GPT2_SMALL_HEADS[-1])  # 5.1 induction, 4.11 previous
    monkeypatch.setattr(published, "published_score_heads", lambda name, layers, heads: marked)
    at = run_app(**(SMALL | {"scores_seed": 5}))
    at.switch_page(STATS).run()
    at.button(key="_scores_run").click().run()
    no_errors(at)
    assert any("TransformerLens / ARENA" in c.value for c in at.caption)
    (table,) = [d.value for d in at.dataframe if "published as" in d.value.columns]
    expected = head_scores.model_head_scores(bundled, 2, 8, seed=5)
    assert list(table["published as"]) == ["induction", "previous-token"]
    assert_allclose(table["induction"], [expected.repeated["induction"][5, 1], expected.repeated["induction"][4, 11]])
    labels = chart(at, "scores_overview")["data"][0]["text"]
    assert labels[5 * 12 + 1] == "★" and labels[4 * 12 + 11] == "★" and labels[0] == ""


def test_the_run_button_says_the_sequences_the_box_asks_for_in_the_right_number():
    at = run_app(**(SMALL | {"scores_count": 1, "scores_seed": 12}))
    at.switch_page(STATS).run()
    no_errors(at)
    assert at.button(key="_scores_run").label.startswith("Score the heads: 1 random sequence and 1 control, about ")


NO_REPEAT = "A cat sat."  # no token occurs twice, not even [CLS] or [SEP]


def test_all_heads_colour_by_duplicate_without_a_repeated_token_is_grey_and_says_why(bundled):
    ids = list(extract(bundled, NO_REPEAT).encoding.input_ids)
    assert len(set(ids)) == len(ids)
    at = run_app(text=NO_REPEAT)
    at.switch_page(ALL_HEADS).run()
    control(at, "selectbox", "all_heads_colour").set_value("duplicate").run()
    no_errors(at)
    (trace,) = chart(at, "all_heads_scores")["data"]
    assert trace["marker"]["color"] == [MISSING_COLOUR] * 72  # grey, not the bottom of the scale
    reason = "no token occurs twice"
    assert {row[3] for row in trace["customdata"]} == {f"— ({reason})"}  # the hover's value
    assert "duplicate-token: %{customdata[3]}" in trace["hovertemplate"]
    assert not any("0.0000" in str(row) for row in trace["customdata"])
    assert any(c.value == f"A grey mark has no duplicate-token: {reason}." for c in at.caption)


def test_invalid_attention_in_the_scores_is_a_message_not_a_traceback(monkeypatch):
    """A model whose attention fails the checks while the scores are timed: the page says so in a sentence
    (the details go to the log) and shows no exception."""
    from attention_viz.extraction import AttentionError

    def invalid(loaded, ids):
        raise AttentionError("attention weights contain NaN or infinity")

    monkeypatch.setattr(head_scores, "_forward_attention", invalid)
    at = run_app(**(SMALL | {"scores_length": 9, "scores_seed": 17}))  # a length no other test timed
    at.switch_page(STATS).run()
    assert not at.exception
    shown = "The model returned attention that cannot be shown. Details are in the server log."
    assert shown in [e.value for e in at.error]
    assert "_scores_run" not in [b.key for b in at.button]  # nothing to run
