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
from attention_viz.ui import state

STATS = "attention_viz/ui/pages/head_stats.py"
SMALL = dict(scores_count=2, scores_length=8, scores_seed=3)


def _colours(figure: dict) -> np.ndarray:
    return decode(figure["data"][0]["marker"]["color"])


def test_head_statistics_scores_run_on_request_and_match_the_core(bundled, media):
    at = run_app(**SMALL)
    at.switch_page(STATS).run()
    no_errors(at)
    run = at.button(key="_scores_run")
    assert "4 random sequences" in run.label and "on this machine" in run.label  # the time is said first
    run.click().run()
    no_errors(at)
    expected = head_scores.model_head_scores(bundled, 2, 8, seed=3)
    assert_allclose(_colours(chart(at, "scores_overview")), expected.repeated["induction"].reshape(-1), atol=1e-6)
    (table,) = [d.value for d in at.dataframe if "induction_control" in d.value.columns]
    assert list(table.columns[:4]) == ["layer", "head", "induction", "induction_control"]
    assert_allclose(table["sink_control"], expected.control["sink"].reshape(-1), atol=1e-6)
    csv = pd.read_csv(io.StringIO(downloaded(media, at.get("download_button")[-1])))
    assert_allclose(csv["previous"], expected.repeated["previous"].reshape(-1), atol=1e-6)
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
