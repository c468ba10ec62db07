"""AppTest: an encoder–decoder (a tiny T5 and a tiny BART, built offline) in the app: the source and target boxes,
the attention-kind switch, Compare's map for each kind against extract_seq2seq, the kind in the address, Head
statistics of the cross-attention, Inside a head's steps of each kind, and every page opening on both families."""

from __future__ import annotations

import numpy as np
import pytest
from apptools import APP, chart, decode, no_errors, run_app, z
from replay import control
from streamlit.testing.v1 import AppTest
from tiny_seq2seq import SEQ2SEQ, make_tiny_seq2seq

from attention_viz.analysis import stats
from attention_viz.analysis.seq2seq_steps import seq2seq_steps, sublayer_inputs
from attention_viz.extraction.seq2seq import KINDS, extract_seq2seq
from attention_viz.models.loading import BUNDLED_MODEL
from attention_viz.ui.server import cache, cache_seq2seq
from attention_viz.ui.shared import seq2seq_ui
from attention_viz.ui.text import i18n

SOURCE = "Where is it? It is in the box."  # 20 tokens in the tiny T5's vocabulary: the whole map fits the window
TARGET = "It was tired."
PAGES = (
    "compare",
    "all_heads",
    "head_stats",
    "head_similarity",
    "atlas",
    "rollout",
    "inside",
    "experiments",
    "article",
)


@pytest.fixture(scope="module")
def seq2seq_dir(tmp_path_factory):
    """``seq2seq_dir(family)``: the folder of a tiny random ``t5`` or ``bart`` checkpoint, built once."""
    built = {}

    def folder(family: str) -> str:
        if family not in built:
            built[family] = make_tiny_seq2seq(family, tmp_path_factory.mktemp(f"tiny-app-{family}"))
        return built[family]

    return folder


def _map(at) -> np.ndarray:
    return z(chart(at, seq2seq_ui.MAP_KEY))


def _expected(folder: str, source: str = SOURCE, target: str = TARGET):
    return extract_seq2seq(cache_seq2seq.seq2seq_model(folder), source, target, "pretrained")


def test_compare_draws_the_cross_attention_of_extract_seq2seq_target_rows_over_source_columns(seq2seq_dir):
    folder = seq2seq_dir("t5")
    at = run_app(model=folder, text=SOURCE, target=TARGET, attention_kind="cross", layer=1, head=2)
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    expected = _expected(folder)
    shown = _map(at)
    t, s = expected.target.num_tokens, expected.source.num_tokens
    assert shown.shape == (t, s) and t != s  # the whole map: a short source and target fit the window
    assert np.array_equal(shown, expected.cross[1, 2])
    assert np.allclose(shown.sum(axis=1), 1.0, atol=1e-5)  # each target row: a distribution over the source
    figure = chart(at, seq2seq_ui.MAP_KEY)
    assert figure["layout"]["yaxis"]["title"]["text"] == "target token (query, decoder)"
    assert figure["layout"]["xaxis"]["title"]["text"] == "source token (key, encoder output)"
    rows, columns = figure["data"][0]["y"], figure["data"][0]["x"]
    assert "&lt;pad&gt;" in rows[0] and (len(rows), len(columns)) == (t, s)  # T5's decoder starts from <pad>
    assert "Matches transformers" in at.success[0].value
    head = expected.cross[1, 2].astype(np.float64)
    entropy = -(head * np.log2(np.where(head > 0, head, 1))).sum(-1).mean()
    metrics = [m.value for m in at.metric]  # max |difference|, mean JS divergence, the two mean row entropies
    assert metrics[0] == "0.00e+00" and metrics[1] == "0.0000 bits" and metrics[2] == f"{entropy:.3f} bits"
    assert at.text_area(key="_target").value == TARGET
    # the difference map of the twin and transformers: 0 everywhere (the same bits)
    control(at, "radio", "map_view").set_value("difference").run()
    assert np.all(_map(at) == 0) and _map(at).shape == (t, s)


def test_switching_the_kind_changes_the_map_and_its_layers(seq2seq_dir):
    folder = seq2seq_dir("bart")  # 2 encoder layers × 4 heads, 3 decoder layers × 2 heads
    at = run_app(model=folder, text=SOURCE, target=TARGET, attention_kind="cross", layer=2, head=1)
    expected = _expected(folder)
    t, s = expected.target.num_tokens, expected.source.num_tokens
    assert np.array_equal(_map(at), expected.cross[2, 1]) and _map(at).shape == (t, s)
    control(at, "radio", "attention_kind").set_value("encoder").run()
    no_errors(at)
    assert at.session_state["layer"] == 1  # the encoder has 2 layers: layer 2 is clamped
    assert np.array_equal(_map(at), expected.encoder[1, 1]) and _map(at).shape == (s, s)
    assert chart(at, seq2seq_ui.MAP_KEY)["layout"]["yaxis"]["title"]["text"] == "source token (query)"
    at.session_state["head"] = 3
    control(at, "radio", "attention_kind").set_value("decoder").run()
    shown = _map(at)
    assert at.session_state["head"] == 1  # the decoder has 2 heads
    assert np.array_equal(shown, expected.decoder[1, 1]) and shown.shape == (t, t)
    assert np.all(shown[np.triu_indices(t, k=1)] == 0) and np.all(shown.diagonal() > 0)  # causal


def test_the_kind_and_the_target_go_into_the_address_and_come_back_from_it(seq2seq_dir):
    folder = seq2seq_dir("t5")
    at = run_app(model=folder, text=SOURCE, target=TARGET)
    assert at.query_params["attention_kind"] == "cross"  # the default
    control(at, "radio", "attention_kind").set_value("decoder").run()
    assert at.query_params["attention_kind"] == "decoder" and at.query_params["target"] == TARGET
    opened = AppTest.from_file(APP, default_timeout=120)
    opened.query_params.update({key: at.query_params[key] for key in ("model", "text", "target", "attention_kind")})
    opened.run()
    no_errors(opened)
    assert opened.session_state["attention_kind"] == "decoder"
    expected = _expected(folder)
    layer, head = opened.session_state["layer"], opened.session_state["head"]
    assert np.array_equal(_map(opened), expected.decoder[layer, head])  # target × target
    broken = AppTest.from_file(APP, default_timeout=120)
    broken.query_params.update({"model": folder, "attention_kind": "sideways"})
    broken.run()
    no_errors(broken)
    assert broken.session_state["attention_kind"] == "cross"  # an unknown kind: the default, and a note


def test_nothing_typed_is_lost_switching_between_a_bert_and_a_t5(seq2seq_dir, monkeypatch):
    folder = seq2seq_dir("t5")
    monkeypatch.setattr(cache, "found_models", lambda: {folder: "T5"})  # the Model box offers it, as a cached one
    at = run_app(text=SOURCE, pair="A second sentence.")
    assert at.text_input(key="pair").value == "A second sentence."
    at.selectbox(key="model").set_value(folder).run()
    no_errors(at)
    assert at.text_area(key="text").value == SOURCE  # the sentence is the source
    assert not [w for w in at.text_input if w.key == "pair"]  # no second sentence for an encoder–decoder
    at.text_area(key="_target").set_value("Typed target.").run()
    assert (
        _map(at).shape[0]
        == extract_seq2seq(cache_seq2seq.seq2seq_model(folder), SOURCE, "Typed target.").target.num_tokens
    )
    at.selectbox(key="model").set_value(BUNDLED_MODEL).run()
    no_errors(at)
    assert at.text_input(key="pair").value == "A second sentence." and at.text_area(key="text").value == SOURCE
    at.selectbox(key="model").set_value(folder).run()
    assert at.text_area(key="_target").value == "Typed target."
    at.text_area(key="_target").set_value("  ").run()  # an empty target: a clear message naming it, no traceback
    no_errors(at)
    assert i18n.t("messages.input_empty_target") in at.info[0].value
    assert at.text_area(key="text").value == SOURCE


def test_head_statistics_of_the_cross_attention_are_read_off_the_source(seq2seq_dir):
    folder = seq2seq_dir("bart")
    at = run_app(model=folder, text=SOURCE, target=TARGET, attention_kind="cross")
    at.switch_page("attention_viz/ui/pages/head_stats.py").run()
    no_errors(at)
    table = at.dataframe[0].value
    expected = _expected(folder)
    assert len(table) == 3 * 2  # the decoder's layers × heads
    cross = expected.cross.astype(np.float64)
    end = np.array([token == "</s>" for token in expected.source.tokens])
    assert end.sum() == 1
    np.testing.assert_allclose(table[i18n.plain("stats.col_sep")], cross[..., end].sum(-1).mean(-1).reshape(-1))
    entropy = -(cross * np.log2(np.where(cross > 0, cross, 1))).sum(-1).mean(-1)
    np.testing.assert_allclose(table[i18n.plain("stats.col_entropy")], entropy.reshape(-1), rtol=1e-9)
    control(at, "radio", "attention_kind").set_value("decoder").run()  # causal: next-token left empty
    table = at.dataframe[0].value
    assert table[i18n.plain("stats.col_next")].isna().all() and table[i18n.plain("stats.col_previous")].notna().all()


def test_cross_statistics_by_hand():
    weights = np.array([[[[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]]]])  # 1 layer, 1 head, 2 targets, 3 sources
    kinds = stats.TokenKinds.from_tokens(["<s>", ".", "</s>"], [True, False, True], [0, 0, 0], "<s>", "</s>")
    frame = stats.cross_statistics(weights, kinds)
    row = frame.iloc[0]
    assert row["entropy"] == pytest.approx((1.5 + 0.0) / 2) and row["uniform_entropy"] == pytest.approx(np.log2(3))
    assert row["cls"] == pytest.approx(0.25) and row["sep"] == pytest.approx(0.625)
    assert row["punctuation"] == pytest.approx(0.125)
    no_start = stats.TokenKinds.from_tokens(["a", "b", "</s>"], [False, False, True], [0, 0, 0], "<s>", "</s>")
    assert np.isnan(stats.cross_statistics(weights, no_start).iloc[0]["cls"])  # no start token: empty, not 0
    with pytest.raises(ValueError, match="weights must be"):
        stats.cross_statistics(weights[..., :2], kinds)


@pytest.mark.parametrize("family", SEQ2SEQ)
def test_every_page_opens_on_an_encoder_decoder(seq2seq_dir, family):
    folder = seq2seq_dir(family)
    for chosen in ("encoder", "cross"):
        at = run_app(model=folder, text=SOURCE, target=TARGET, attention_kind=chosen)
        for page in PAGES:
            at.switch_page(f"attention_viz/ui/pages/{page}.py").run()
            no_errors(at)
            assert not at.error, (page, [e.value for e in at.error])
            if page not in seq2seq_ui.PAGES:
                assert "Compare, All heads, Head statistics and Inside a head show" in at.info[0].value, page
    all_heads = [c for c in at.get("plotly_chart") if c.proto.id.endswith("-seq2seq_grid")]
    at.switch_page("attention_viz/ui/pages/all_heads.py").run()
    all_heads = [c for c in at.get("plotly_chart") if c.proto.id.endswith("-seq2seq_grid")]
    assert len(all_heads) == 1


def _bars(at, key: str) -> np.ndarray:
    return decode(chart(at, key)["data"][0]["y"])


@pytest.mark.parametrize("family", SEQ2SEQ)
def test_inside_a_head_shows_the_steps_of_each_kind_with_the_cores_weights(seq2seq_dir, family):
    folder = seq2seq_dir(family)
    loaded, expected = cache_seq2seq.seq2seq_model(folder), _expected(folder)
    inputs = sublayer_inputs(loaded.twin, expected.source, expected.target)
    s, t = expected.source.num_tokens, expected.target.num_tokens
    for chosen in KINDS:
        at = run_app(model=folder, text=SOURCE, target=TARGET, attention_kind=chosen, layer=1, head=1, inside_query=2)
        at.switch_page("attention_viz/ui/pages/inside.py").run()
        no_errors(at)
        assert not at.error and not at.info, (chosen, [e.value for e in at.error], [i.value for i in at.info])
        steps = seq2seq_steps(loaded.twin, inputs, chosen, 1, 1, 2)
        shown = _bars(at, "step_weights")
        np.testing.assert_array_equal(shown, steps.weights)  # the bars hold the core's numbers
        np.testing.assert_allclose(shown, expected.maps(chosen)[1, 1, 2], rtol=0, atol=1e-6)  # transformers' row
        keys = s if chosen != "decoder" else t
        assert z(chart(at, "step_keys")).shape == (keys, steps.query.shape[0])  # cross: source × head_dim
        np.testing.assert_array_equal(_bars(at, "step_dots"), steps.dots)
        biased = [c for c in at.get("plotly_chart") if c.proto.id.endswith("-step_bias")]
        assert len(biased) == (family == "t5" and chosen != "cross")  # T5's bias in its self-attention only
        if biased:
            np.testing.assert_array_equal(_bars(at, "step_bias"), steps.bias)
        if chosen == "decoder":
            assert np.all(shown[3:] == 0) and np.all(shown[:3] > 0)  # causal: nothing above the query
        assert "give transformers' map of this head" in at.success[0].value, chosen
        assert i18n.t("inside.title", layer=1, head=1, query=expected.labels(chosen)[0][2]) in [
            h.value for h in at.header
        ]


def test_the_model_writes_the_target_and_its_tokens_are_marked(seq2seq_dir):
    from attention_viz.extraction.seq2seq import generate_seq2seq

    folder = seq2seq_dir("bart")
    at = run_app(model=folder, text=SOURCE, target=TARGET, attention_kind="cross", layer=1, head=1)
    control(at, "number_input", "generate").set_value(4).run()
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    written = generate_seq2seq(cache_seq2seq.seq2seq_model(folder), SOURCE, 4, "pretrained")
    assert written.generated.sum() >= 1 and not written.generated[0]  # the start token is not written
    shown = chart(at, seq2seq_ui.MAP_KEY)
    assert np.array_equal(z(shown), written.cross[1, 1]) and z(shown).shape[0] == written.target.num_tokens
    marked = ["▸" in label for label in shown["layout"]["yaxis"]["ticktext"]]
    assert marked == written.generated.tolist()  # the written tokens, and only they, are marked
    assert at.query_params["generate"] == "4"
    assert "The model wrote" in " ".join(c.value for c in at.caption)
    at.text_area(key="_target").set_value("A typed target.").run()  # typing goes back to the target text
    assert at.session_state["generate"] == 0
    assert np.array_equal(_map(at), _expected(folder, target="A typed target.").cross[1, 1])
