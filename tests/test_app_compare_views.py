"""Compare with the view toggles (word level, hide [CLS]/[SEP], pair blocks), its downloads and the link's
choices for its settings."""

import io
import json

import numpy as np
import pandas as pd
import pytest
from apptools import _drawn, chart, configs, decode, downloaded, no_errors, numbers, run_app, z
from numpy.testing import assert_allclose
from replay import control

from attention_viz import analysis, links
from attention_viz.extraction import export, extract
from attention_viz.figures import label_text
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.server import cache
from attention_viz.ui.text import i18n
from attention_viz.ui.view import state

GPU = "I have a new GPU!"  # "gpu" is two WordPieces, gp and ##u
LAYER, HEAD = state.EXAMPLE_LAYER, state.EXAMPLE_HEAD


def _csv(at, media) -> pd.DataFrame:
    """The CSV download's content, read back with its labels."""
    (button,) = [b for b in at.get("download_button") if b.proto.id.endswith("download_csv_" + _what(at))]
    return pd.read_csv(io.StringIO(downloaded(media, button)), index_col=0)


def _what(at) -> str:
    config = configs(at)[0]
    return config["toImageButtonOptions"]["filename"].split(f"head{HEAD}_", 1)[1]


def _clark_merge(weights: np.ndarray, word_ids) -> np.ndarray:
    """Clark et al.'s merge by hand: to a word, sum over its pieces; from a word, mean over its pieces; each
    special token ([CLS], [SEP]: no word id) a group of its own."""
    groups, previous = [], object()
    for index, word in enumerate(word_ids):
        special = word is None or word < 0
        if special or word != previous:
            groups.append([index])
        else:
            groups[-1].append(index)
        previous = object() if special else word
    to_words = np.stack([weights[:, g].sum(1) for g in groups], axis=1)  # (t, w)
    return np.stack([to_words[g].mean(0) for g in groups])  # (w, w)


def test_word_level_keeps_cls_and_sep_and_rows_sum_to_1(bundled, media):
    """Words, not pieces, on "I have a new GPU!": the map, its CSV, bars and lines are over words, with
    [CLS] and [SEP] kept as rows and columns of their own, so every row still sums to 1."""
    at = run_app(text=GPU)
    no_errors(at)
    control(at, "toggle", "word_level").set_value(True).run()
    no_errors(at)
    shown = chart(at, "map")
    encoding = extract(bundled, GPU).encoding
    raw = extract(bundled, GPU).weights[LAYER, HEAD].astype(np.float64)
    assert encoding.tokens.count("gp") == 1  # the case's premise: "GPU" is split into pieces
    expected = _clark_merge(raw, encoding.word_ids)
    assert_allclose(z(shown), expected, atol=1e-6)
    assert_allclose(z(shown).sum(-1), 1, atol=1e-6)  # [CLS]/[SEP] kept: nothing leaks out of a row
    words = [label_text(label) for label in shown["data"][0]["y"]]
    assert words[0] == "[CLS]" and words[-1] == "[SEP]" and "GPU" in words and "gp" not in words
    assert any(i18n.t("views.note_words") in c.value for c in at.caption)
    # the CSV holds the shown (word-level) matrix with the words as labels
    frame = _csv(at, media)
    assert_allclose(frame.to_numpy(), expected, rtol=1e-6, atol=1e-8)
    assert frame.index[0] == "[CLS]" and "GPU" in list(frame.columns)
    # bars and lines follow the words too
    control(at, "selectbox", "focus").set_value(words.index("GPU")).run()
    bars = chart(at, "focus_bars")
    assert_allclose(decode(bars["data"][0]["y"]), expected[words.index("GPU")], atol=1e-6)


def test_hide_special_renormalises_and_says_so(bundled):
    at = run_app(text=GPU)
    control(at, "toggle", "hide_special").set_value(True).run()
    no_errors(at)
    shown = chart(at, "map")
    result = extract(bundled, GPU)
    keep = ~np.asarray(result.encoding.special)
    raw = result.weights[LAYER, HEAD].astype(np.float64)[keep][:, keep]
    assert_allclose(z(shown), raw / raw.sum(-1, keepdims=True), atol=1e-6)  # each row renormalised by hand
    assert "[CLS]" not in "".join(shown["data"][0]["x"]) and "[SEP]" not in "".join(shown["data"][0]["y"])
    assert any(i18n.t("views.note_renormalised") in c.value for c in at.caption)


def test_pair_block_a_to_b_is_the_cores_slice_and_the_difference_is_of_the_views(bundled, media):
    text, pair = "The cat sat.", "It slept."
    at = run_app(text=text, pair=pair)
    assert not control(at, "selectbox", "block").disabled
    control(at, "selectbox", "block").set_value("AB").run()
    no_errors(at)
    result = extract(bundled, text, pair)
    segments = np.asarray(result.encoding.segments)
    raw = result.weights[LAYER, HEAD]
    expected = analysis.apply_view(raw, result.encoding, analysis.ViewOptions(block="AB"))
    shown = z(chart(at, "map"))
    assert shown.shape == ((segments == 0).sum(), (segments == 1).sum()) == (6, 4)  # [CLS] the cat sat . [SEP]
    assert_allclose(shown, expected.matrix, atol=1e-6)
    assert_allclose(shown, raw[segments == 0][:, segments == 1], atol=1e-6)
    frame = _csv(at, media)
    assert_allclose(frame.to_numpy(), expected.matrix, rtol=1e-6, atol=1e-8)
    assert list(frame.columns) == list(expected.key_labels) and list(frame.index) == list(expected.query_labels)
    # the difference map is transformed(scratch) − transformed(pretrained): exact variant ⇒ near zero
    control(at, "radio", "map_view").set_value("difference").run()
    no_errors(at)
    assert z(chart(at, "map")).shape == (6, 4) and np.abs(z(chart(at, "map"))).max() < 1e-5


def test_a_cross_block_fits_its_colour_range_by_default_and_says_so(bundled):
    """A pair's A→B block holds parts of rows (small weights): its colour range is this head's own values,
    pretrained and from scratch together, and the colour bar says it is fitted; A→A keeps 0 to 1."""
    text, pair = "the cat sat.", "it slept."
    at = run_app(text=text, pair=pair)
    control(at, "selectbox", "block").set_value("AB").run()
    no_errors(at)
    result = extract(bundled, text, pair)
    segments = np.asarray(result.encoding.segments)
    block = result.weights[LAYER, HEAD][segments == 0][:, segments == 1]
    shown = chart(at, "map")["data"][0]
    assert_allclose([shown["zmin"], shown["zmax"]], [block.min(), block.max()], atol=1e-6)
    assert shown["zmax"] < 1 and shown["colorbar"]["title"]["text"] == i18n.table("en")["compare.fit_colorbar"]
    control(at, "selectbox", "block").set_value("AA").run()
    shown = chart(at, "map")["data"][0]
    assert (shown["zmin"], shown["zmax"]) == (0.0, 1.0) and "colorbar" not in shown


def test_the_reading_caption_counts_what_the_window_note_counts(bundled):
    """Words on a long input: the caption under the map and the window's note give the same count (words)."""
    text = " ".join(["unbelievably"] * 30)  # each word several pieces: words and tokens differ
    at = run_app(text=text, word_level=True)
    no_errors(at)
    words = len(analysis.word_groups(extract(bundled, text).encoding)[1])  # [CLS], 30 words, [SEP]
    assert words == 32 and extract(bundled, text).encoding.num_tokens > words
    captions = [c.value for c in at.caption]
    assert any(f"{words} tokens:" in c for c in captions), captions  # the window's note
    assert any(c.endswith(f"{words} tokens.") for c in captions), captions  # the reading caption


def test_default_view_csv_is_the_heads_attention(bundled, media):
    at = run_app()
    no_errors(at)
    frame = _csv(at, media)
    result = extract(bundled, state.EXAMPLE_TEXT)
    assert_allclose(frame.to_numpy(), result.weights[LAYER, HEAD], rtol=1e-6, atol=1e-8)
    assert list(frame.index) == list(result.encoding.labels)
    for config in configs(at):  # the map, its bars and lines
        assert config["toImageButtonOptions"] == {
            "format": "png",
            "filename": export.file_stem("all-MiniLM-L6-v2", f"layer{LAYER}", f"head{HEAD}", "pretrained"),
            "scale": 2,
        }


def test_a_malformed_block_or_map_view_in_a_link_falls_back_to_the_default():
    values, notes = links.from_query({"block": "XY", "map_view": "sideways", "head": "2"}, state.link_rules())
    assert values == {"head": 2}
    assert {(n.kind, n.key) for n in notes} == {("invalid", "block"), ("invalid", "map_view")}
    values, _ = links.from_query({"block": "BA", "map_view": "difference"}, state.link_rules())
    assert values == {"block": "BA", "map_view": "difference"}


def test_all_heads_chart_saves_a_named_png_at_twice_the_scale(bundled):
    at = run_app()
    at.switch_page("attention_viz/ui/pages/all_heads.py").run()
    no_errors(at)
    config = configs(at)[0]
    name = export.file_stem("all-MiniLM-L6-v2", f"layer{LAYER}", f"head{HEAD}", "all_heads")
    assert config["toImageButtonOptions"] == {"format": "png", "filename": name, "scale": 2}


def test_the_numbers_stay_over_the_whole_token_level_head_in_any_view(bundled):
    from attention_viz import analysis

    text, pair = "The cat sat.", "It slept."
    at = run_app(text=text, pair=pair)
    before = numbers(at)
    control(at, "selectbox", "block").set_value("AB").run()
    control(at, "toggle", "word_level").set_value(True).run()
    no_errors(at)
    assert numbers(at) == before
    raw = extract(bundled, text, pair).weights[LAYER, HEAD]
    assert f"{analysis.row_entropy(raw).mean():.3f}" in numbers(at)[2]
    scratch = extract(bundled, text, pair, source="scratch").weights[LAYER, HEAD]
    assert numbers(at)[0] == f"{analysis.max_abs_difference(scratch, raw):.2e}"  # the head's, as the core says
    assert any(i18n.t("compare.numbers_tokens") in c.value for c in at.caption)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_window_is_explained_once_under_the_map(bundled, language):
    """The window's note under the map and the map's own line both said how to move the window."""
    text = " ".join(["unbelievably"] * 30)
    at = run_app(text=text, lang=language)
    no_errors(at)
    (element,) = [n for n in _drawn(at) if n.proto.id.endswith(f"-{attention_map.COMPARE_KEY}")]
    shown = [c.value for c in at.caption] + [json.loads(element.proto.json)["texts"]["window"]]
    assert any(f"{extract(bundled, text).encoding.num_tokens}" in c for c in shown)  # the note is there
    assert sum("Shift" in line for line in shown) == 1, shown  # how to move it: once


def test_the_bars_and_lines_follow_each_change_and_equal_those_made_anew(bundled):
    """Compare keeps the head's bars and lines for the session and for every session (a page switch draws the same
    head again); after each change they are those of the view shown, exactly as if made anew."""
    from apptools import _details

    at = run_app()
    changes = [
        lambda: control(at, "selectbox", "focus").set_value(3),
        lambda: control(at, "selectbox", "head").set_value(5),
        lambda: control(at, "selectbox", "focus").set_value(6),
        lambda: at.session_state.__setitem__("map_view", "scratch"),
        lambda: control(at, "selectbox", "layer").set_value(1),
        lambda: at.toggle(key="_word_level").set_value(True),
        lambda: at.session_state.__setitem__(i18n.LANGUAGE_KEY, "zh"),
        lambda: (
            at.switch_page("attention_viz/ui/pages/all_heads.py").run().switch_page("attention_viz/ui/pages/compare.py")
        ),
    ]
    seen = []
    for change in changes:
        change()
        at.run()
        no_errors(at)
        kept = _details(at)
        del at.session_state["_compare_figures"]  # made anew from the same view: not the session's,
        cache.shared_memo.clear()  # nor every session's
        at.run()
        assert _details(at) == kept
        seen.append(json.dumps(kept, sort_keys=True))
    assert len(set(seen)) == len(changes) - 1  # every change but the page switch changed them
    assert seen[-1] == seen[-2]


def test_a_second_student_on_the_same_view_gets_the_bars_and_lines_the_first_one_made(monkeypatch):
    """The bars and lines are made from their inputs alone, so a class on the opening example makes them once;
    a session on another view makes its own."""
    from apptools import _details

    from attention_viz import figures

    made = []
    line_view = figures.line_view
    monkeypatch.setattr(figures, "line_view", lambda *a, **k: made.append(a[1:3]) or line_view(*a, **k))
    cache.shared_memo.clear()
    first = run_app()
    no_errors(first)
    second = run_app()
    no_errors(second)
    assert len(made) == 1 and _details(second) == _details(first)
    other = run_app(head=5)
    no_errors(other)
    assert len(made) == 2 and _details(other) != _details(first)
