"""AppTest for the exploring-heads pages: Head statistics, Head similarity, Rollout & norms, view toggles."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
from apptools import decode, downloaded, figures, no_errors, run_app, title, z
from numpy.testing import assert_allclose
from replay import control
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from attention_viz import analysis
from attention_viz.extraction import extract
from attention_viz.figures import label_text
from attention_viz.ui.shared.corpus_picker import corpus_caption
from attention_viz.ui.text import i18n
from attention_viz.ui.view import head_links, state

STATS = "attention_viz/ui/pages/head_stats.py"
SIMILARITY = "attention_viz/ui/pages/head_similarity.py"
FLOW = "attention_viz/ui/pages/rollout.py"


def _page(page: str, **state_before):
    at = run_app(**state_before)
    at.switch_page(page).run()
    no_errors(at)
    return at


def _marker_colors(figure: dict) -> np.ndarray:
    return decode(figure["data"][0]["marker"]["color"])


def test_head_statistics_page_shows_the_core_numbers(bundled):
    at = _page(STATS)
    result = extract(bundled, state.EXAMPLE_TEXT)
    expected = analysis.head_statistics(result.weights, analysis.TokenKinds.from_encoding(result.encoding))
    (overview,) = figures(at)
    assert_allclose(_marker_colors(overview), expected["entropy"], atol=1e-6)
    assert list(overview["data"][0]["customdata"][14][:2]) == [1, 2]  # layer-major: point 14 is layer 1, head 2
    table = at.dataframe[0].value
    assert len(table) == 72 and list(table.columns[:5]) == ["layer", "head", "entropy", "importance", "tags"]
    assert list(table["tags"]) == list(expected["tags"])
    assert (table["importance"] > 0).all()
    sizes = decode(overview["data"][0]["marker"]["size"])
    assert np.argmax(sizes) == int(np.argmax(table["importance"]))  # the most important head has the largest mark
    control(at, "selectbox", "stats_statistic").set_value("previous").run()
    no_errors(at)
    assert_allclose(_marker_colors(figures(at)[0]), expected["previous"], atol=1e-6)
    assert any("more than 0.5 of its attention" in c.value for c in at.caption)  # tag rules, thresholds filled in


def test_head_statistics_leave_what_does_not_apply_missing_and_say_where_the_tags_are(bundled, media):
    at = _page(STATS)
    table = at.dataframe[0]
    assert table.value["a_to_b"].isna().all() and table.value["b_to_a"].isna().all()  # one sentence: no pair
    assert table.proto.placeholder == "—"  # shown as "—", not "None"
    csv = pd.read_csv(io.StringIO(downloaded(media, at.get("download_button")[0])))
    assert csv["a_to_b"].isna().all() and len(csv) == 72  # empty in the CSV, never 0
    (overview,) = figures(at)
    sides = overview["data"][0]["textposition"]
    assert sides[0] == sides[2] == "bottom center" and sides[1] == sides[3] == "top center"
    caption = next(c.value for c in at.caption if c.value.startswith("Rows are layers"))
    assert "below the mark in even-numbered columns and above it in odd-numbered ones" in caption
    assert "under a mark" not in caption


def test_the_head_statistics_csv_is_named_by_its_model_as_every_download(bundled, monkeypatch):
    names = []
    original = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        names.append(filename)
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    _page(STATS)
    assert "attention_all-MiniLM-L6-v2_head_statistics_text.csv" in names, names


def test_a_corpus_caption_counts_one_text_token_and_skipped_line_in_the_singular(monkeypatch):
    one = SimpleNamespace(num_texts=1, num_tokens=1, num_skipped=1)
    two = SimpleNamespace(num_texts=2, num_tokens=9, num_skipped=0)
    assert corpus_caption(one) == "Over 1 text (1 token; 1 empty line skipped), every query token counted once."
    assert corpus_caption(two) == "Over 2 texts (9 tokens; 0 empty lines skipped), every query token counted once."
    monkeypatch.setattr(i18n, "language", lambda: "zh")
    assert corpus_caption(one) == "基于 1 条文本（1 个词元；跳过 1 个空行），每个查询词元计一次。"
    assert corpus_caption(two) == "基于 2 条文本（9 个词元；跳过 0 个空行），每个查询词元计一次。"


def test_head_statistics_over_the_bundled_corpus(bundled):
    at = _page(STATS)
    control(at, "radio", "stats_scope").set_value("bundled").run()
    no_errors(at)
    texts = analysis.parse_corpus(analysis.bundled_corpus())
    assert any(f"Over {len(texts)} texts" in c.value for c in at.caption)
    assert len(at.dataframe[0].value) == 72


def test_a_clicked_head_opens_in_compare():
    assert head_links.head_of_point(14, 12) == (1, 2)
    at = _page(STATS, layer=2, head=5, _open_compare=True)  # what the chart's on_select callback leaves
    assert title(at) == "Layer 2, head 5"


def test_head_similarity_page(bundled):
    at = _page(SIMILARITY)
    (similarity,) = figures(at)
    points = similarity["data"][0]
    assert len(decode(points["x"])) == 72
    assert list(decode(points["marker"]["color"])[:13]) == [0] * 12 + [1]  # coloured by layer
    layer, head = at.session_state["layer"], at.session_state["head"]
    labelled = [(i, text) for i, text in enumerate(points["text"]) if text]
    assert (layer * 12 + head, f"{layer}·{head}") in labelled  # the head in focus always; the others with room
    assert all(text == f"{i // 12}·{i % 12}" for i, text in labelled) and len(labelled) < 72
    divergence = analysis.head_divergence(extract(bundled, state.EXAMPLE_TEXT).weights)
    mean = divergence[~np.eye(72, dtype=bool)].mean()
    assert any(f"{mean:.3f} bits" in c.value for c in at.caption)


def test_rollout_and_norms_page_and_view_toggles(bundled):
    at = _page(FLOW)
    (raw,) = figures(at)  # one map at a time, chosen with a radio
    # the map element, one map per layer: its title and PNG name give the layer, no head
    assert raw["layout"]["title"]["text"] == f"Raw: mean of the heads, layer {state.EXAMPLE_LAYER}"
    assert raw["config"]["toImageButtonOptions"]["filename"].endswith(f"_layer{state.EXAMPLE_LAYER}_raw")
    control(at, "radio", "rollout_map").set_value("rollout").run()
    (rollout,) = figures(at)
    control(at, "radio", "rollout_map").set_value("norm").run()
    (norm,) = figures(at)
    control(at, "radio", "rollout_map").set_value("raw").run()
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    layer = state.EXAMPLE_LAYER
    assert_allclose(z(raw), weights[layer].mean(0), atol=1e-5)
    assert_allclose(z(rollout), analysis.attention_rollout(weights, layer), atol=1e-5)
    assert (z(norm) >= 0).all()
    control(at, "toggle", "word_level").set_value(True).run()
    no_errors(at)
    raw = figures(at)[0]
    assert "didn't" in "".join(map(label_text, raw["data"][0]["y"]))  # words as typed
    assert_allclose(z(raw).sum(-1), 1, atol=1e-5)
    control(at, "toggle", "hide_special").set_value(True).run()
    no_errors(at)
    raw = figures(at)[0]
    assert "[CLS]" not in map(label_text, raw["data"][0]["x"]) and "[SEP]" not in map(label_text, raw["data"][0]["y"])
    assert any("renormalised" in c.value for c in at.caption)
    assert at.session_state["word_level"] and at.session_state["hide_special"]  # kept under the DEFAULTS keys
    at.switch_page(STATS).run()
    at.switch_page(FLOW).run()
    assert (
        control(at, "toggle", "word_level").value and control(at, "toggle", "hide_special").value
    )  # survived a page change


def test_pair_blocks_on_the_rollout_page(bundled):
    at = _page(FLOW, text="The cat sat.", pair="It slept.")
    assert not control(at, "selectbox", "block").disabled
    control(at, "selectbox", "block").set_value("AB").run()
    no_errors(at)
    raw = figures(at)[0]
    assert z(raw).shape == (6, 4)  # [CLS] the cat sat . [SEP] → it slept . [SEP]
    expected = extract(bundled, "The cat sat.", "It slept.").weights[state.EXAMPLE_LAYER].mean(0)[:6, 6:]
    assert_allclose(z(raw), expected, atol=1e-5)
    single = _page(FLOW)  # one sentence has one block: no block box
    assert not [w for w in single.get("selectbox") if (w.key or "").startswith("_block")]


def test_rollout_and_norms_page_in_chinese():
    at = _page(FLOW, lang="zh")
    assert title(at).startswith("注意力展开与范数")
    (raw,) = figures(at)
    assert raw["layout"]["xaxis"]["title"]["text"] == "键（被关注）"
    assert raw["layout"]["yaxis"]["title"]["text"] == "查询（发出关注）"


def test_head_statistics_table_and_tags_in_chinese(bundled):
    at = _page(STATS, lang="zh")
    result = extract(bundled, state.EXAMPLE_TEXT)
    expected = analysis.head_statistics(result.weights, analysis.TokenKinds.from_encoding(result.encoding))
    table = at.dataframe[0]
    english = ["layer", "head", "entropy", "importance", "tags"]
    assert list(table.value.columns[:5]) == english  # the data keeps its English names
    headers = {column: shown.get("label") for column, shown in json.loads(table.proto.columns).items()}
    assert [headers[c] for c in ("layer", "head", "tags", "entropy")] == ["层", "头", "标签", "熵（比特）"]
    broad = [i for i, tags in enumerate(expected["tags"]) if "broad" in tags]
    assert broad and all("广泛" in table.value["tags"][i] for i in broad)
    assert not any("broad" in tags or "previous" in tags for tags in table.value["tags"])
    (overview,) = figures(at)
    assert not any("prev" in text or ("CLS" in text and "[CLS]" not in text) for text in overview["data"][0]["text"])
