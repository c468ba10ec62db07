"""AppTest of the Head atlas page: every head on two chosen numbers, a head's events, an event opened in Compare."""

from __future__ import annotations

import numpy as np
import pytest
from apptools import COMPARE, decode, figures, no_errors, run_app, title
from numpy.testing import assert_allclose
from replay import control

from attention_viz.analysis import atlas, corpus, parse_corpus

ATLAS = "attention_viz/ui/pages/atlas.py"
CORPUS = (
    "The cat sat on the mat.\n"
    "The dog sat on the mat, and the cat sat on the dog.\n"
    "Is it going to rain tomorrow afternoon?\tIt rained all day yesterday.\n"
    "Two plus two equals four.\n"
    "The mayor, whose term ends in May, will not run again.\n"
)


@pytest.fixture
def small_corpus(tmp_path, monkeypatch):
    """The page's bundled corpus made five lines long (the page builds its atlas on demand)."""
    path = tmp_path / "sentences.txt"
    path.write_text(CORPUS, encoding="utf-8")
    monkeypatch.setattr(corpus, "BUNDLED_CORPUS", path)
    return parse_corpus(CORPUS)


def _page(**state_before):
    at = run_app(**state_before)
    at.switch_page(ATLAS).run()
    no_errors(at)
    return at


def test_the_atlas_page_places_every_head_on_two_numbers_and_shows_a_heads_events(bundled, small_corpus):
    expected = atlas.build_atlas(bundled, small_corpus, induction=True)
    at = _page(layer=1, head=4)
    (scatter,) = figures(at)
    points = scatter["data"][0]
    assert_allclose(decode(points["x"]), expected.heads["special"], atol=1e-9)  # the default axes
    assert_allclose(decode(points["y"]), expected.heads["top_weight"], atol=1e-9)
    assert list(decode(points["marker"]["color"])[:13]) == [0] * 12 + [1]  # coloured by layer
    assert [text for text in points["text"] if text] == ["1·4"]  # the head in focus, labelled
    assert scatter["layout"]["xaxis"]["title"]["text"] == "share on [CLS]/[SEP]"
    control(at, "selectbox", "atlas_x").set_value("entropy").run()
    control(at, "selectbox", "atlas_y").set_value("induction").run()
    control(at, "selectbox", "atlas_colour").set_value("previous").run()
    no_errors(at)
    points = figures(at)[0]["data"][0]
    assert_allclose(decode(points["x"]), expected.heads["entropy"], atol=1e-9)
    assert_allclose(decode(points["y"]), expected.heads["induction"], atol=1e-6)
    assert_allclose(decode(points["marker"]["color"]), expected.heads["previous"], atol=1e-9)
    assert np.isfinite(expected.heads["induction"]).all()
    table = at.dataframe[0].value
    events = expected.head_events(1, 4)
    assert list(table["query_token"]) == list(events["query_token"]) and len(table) == 20
    assert_allclose(table["weight"], events["weight"], atol=1e-9)
    assert list(table["sentence"]) == list(events["sentence"])
    assert at.subheader[0].value == "Layer 1, head 4"
    control(at, "radio", "atlas_kind").set_value("typical").run()
    no_errors(at)
    typical = expected.head_events(1, 4, "typical")
    assert list(at.dataframe[0].value["key_token"]) == list(typical["key_token"])


def test_importance_by_ablation_is_a_number_of_the_scatter_when_asked_and_at_once_once_it_ran(bundled, small_corpus):
    """Not run: not offered. Asked for: the same corpus's importance (Head statistics' run) is an axis. A new
    session, not asking, has it at once: the run is shared."""
    expected = corpus.corpus_statistics(bundled, small_corpus, importance=True).statistics["importance"]
    assert expected.notna().all() and expected.std() > 0
    at = _page()
    label = "importance (cosine distance)"
    assert label not in control(at, "selectbox", "atlas_x").options
    control(at, "checkbox", "atlas_importance").check().run()
    no_errors(at)
    assert label in control(at, "selectbox", "atlas_x").options
    control(at, "selectbox", "atlas_x").set_value("importance").run()
    control(at, "selectbox", "atlas_colour").set_value("importance").run()
    no_errors(at)
    points = figures(at)[0]["data"][0]
    assert_allclose(decode(points["x"]), expected, atol=1e-6)
    assert_allclose(decode(points["marker"]["color"]), expected, atol=1e-6)
    assert figures(at)[0]["layout"]["xaxis"]["title"]["text"] == label
    again = _page(atlas_x="importance")
    assert control(again, "checkbox", "atlas_importance").value is False
    assert_allclose(decode(figures(again)[0]["data"][0]["x"]), expected, atol=1e-6)


def test_an_event_opens_in_compare_at_its_head_sentence_and_query(bundled, small_corpus):
    expected = atlas.build_atlas(bundled, small_corpus)
    at = _page(layer=2, head=7, word_level=True)
    control(at, "selectbox", "atlas_event").set_value(3).run()
    event = expected.head_events(2, 7).iloc[3]
    a, b = small_corpus[int(event["text"])]
    context = next(m.value for m in at.markdown if m.value.startswith("Query "))
    assert event["sentence"] in context
    at.button(key="_atlas_open").click().run()
    no_errors(at)
    s = at.session_state
    assert (s["layer"], s["head"], s["focus"]) == (2, 7, int(event["query"]))
    assert (s["text"], s["pair"]) == (a, b or "") and s["word_level"] is False  # the token-level map
    assert title(at) == "Layer 2, head 7"  # Compare, at the event's head
    at.switch_page(COMPARE).run()
    no_errors(at)
    assert at.session_state["focus"] == int(event["query"])


def test_a_stopped_atlas_says_so_and_offers_to_run_again_in_chinese_too(bundled, small_corpus):
    import hashlib

    digest = hashlib.sha256(CORPUS.encode("utf-8")).hexdigest()
    stopped = (f"atlas|{bundled.info.name}|{digest}", 32, 264)  # what Stop's callback leaves
    at = _page(_corpus_stopped=stopped)
    assert any("Stopped after 32 of 264 texts: the atlas needs the whole corpus" in info.value for info in at.info)
    assert not figures(at) and at.button(key="_corpus_again")
    at.button(key="_corpus_again").click().run()
    no_errors(at)
    assert len(figures(at)) == 1  # built now
    at = _page(lang="zh", layer=0, head=2)
    assert at.subheader[0].value == "第 0 层，第 2 个头"
    assert control(at, "radio", "atlas_kind").options == ["最强", "典型（按注意力比例抽取）"]
