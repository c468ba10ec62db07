"""AppTest for the Experiments page: knock out a key, minimal pairs, predictions."""

from __future__ import annotations

import pytest
import torch
from apptools import chart, decode, no_errors, run_app, z
from numpy.testing import assert_allclose
from replay import control
from tiny_families import FAMILIES

from attention_viz.analysis import knockout, minimal_pairs
from attention_viz.extraction import encode
from attention_viz.ui.view import state

EXPERIMENTS = "attention_viz/ui/pages/experiments.py"


def _page(**state_before):
    at = run_app(**state_before)
    at.switch_page(EXPERIMENTS).run()
    no_errors(at)
    return at


def test_knockout_on_the_bundled_model_shows_the_core_numbers(bundled):
    at = _page(layer=2, head=5, knockout_key=3, knockout_scope="layer")
    encoding = encode(bundled.tokenizer, state.EXAMPLE_TEXT, state.OPENING.pair, bundled.info.max_positions)
    result = knockout.knock_out_key(bundled.encoder, encoding, 3, "layer", 2, 5)
    change = chart(at, "knockout_change")
    assert_allclose(decode(change["data"][0]["marker"]["color"]), result.change.reshape(-1), atol=1e-6)
    difference = z(chart(at, "knockout_difference"))
    assert_allclose(difference, result.after[2, 5] - result.before[2, 5], atol=1e-6)
    assert any(f"{result.embedding_distance:.2e}" in m.value for m in at.metric)
    control(at, "radio", "knockout_scope").set_value("all").run()
    no_errors(at)
    everything = knockout.knock_out_key(bundled.encoder, encoding, 3, "all")
    assert_allclose(z(chart(at, "knockout_difference")), everything.after[2, 5] - everything.before[2, 5], atol=1e-6)


def test_minimal_pair_presets_rank_heads_and_draw_the_difference(bundled):
    at = _page(experiment="pairs")
    text_a, text_b = minimal_pairs.PRESETS["winograd"]
    pair = minimal_pairs.minimal_pair(bundled, text_a, text_b)
    query = list(pair.a.encoding.tokens).index("it")  # the preset's token is the default query
    ranking = minimal_pairs.head_ranking(pair.a.weights, pair.b.weights, pair.pairs, query, "js")
    shown = at.dataframe[0].value
    assert_allclose(shown["js"], ranking["js"].head(minimal_pairs.RANKED_HEADS), atol=1e-9)
    layer, head = int(ranking["layer"][0]), int(ranking["head"][0])
    expected = minimal_pairs.difference_map(pair.a.weights, pair.b.weights, pair.pairs, layer, head)
    assert_allclose(z(chart(at, "pairs_difference")), expected, atol=1e-6)
    assert any("align one to one" in c.value for c in at.caption)
    control(at, "radio", "pairs_preset").set_value("agreement").run()
    no_errors(at)
    assert control(at, "text_input", "pairs_a").value == minimal_pairs.PRESETS["agreement"][0]
    control(at, "text_input", "pairs_b").set_value("The keys to the cabinets are").run()
    no_errors(at)


def test_minimal_pair_with_an_empty_sentence_says_so():
    at = _page(experiment="pairs", pairs_b="   ")
    assert any("The text is empty" in i.value for i in at.info)  # the shared message; the page stops


def test_predictions_say_the_bundled_model_has_no_head():
    at = _page(experiment="predictions")
    assert any("has no language-model head" in i.value for i in at.info)


def test_predictions_of_a_tiny_masked_lm_as_is_with_a_head_off_and_a_key_out(tmp_path):
    from test_lm_head import _save_lm

    from attention_viz.models.lm_head import load_lm_head, predict
    from attention_viz.models.loading import load_model

    folder = _save_lm("bert", tmp_path / "lm")
    text = "The cat sat on the [MASK]."
    at = _page(model=folder, text=text, pair="", experiment="predictions", layer=1, head=2, knockout_key=2)
    loaded = load_model(folder)
    head = load_lm_head(loaded.info)
    encoding = encode(loaded.tokenizer, text, None, loaded.info.max_positions)
    position = list(encoding.tokens).index("[MASK]")  # the default position
    plain = predict(loaded.encoder, head, loaded.tokenizer, encoding, position, 8)
    off = torch.ones(2, 4)
    off[1, 2] = 0
    switched = predict(loaded.encoder, head, loaded.tokenizer, encoding, position, 8, head_mask=off)
    mask = torch.from_numpy(knockout.key_mask(2, 4, encoding.num_tokens, 2, "head", 1, 2))
    knocked = predict(loaded.encoder, head, loaded.tokenizer, encoding, position, 8, key_mask=mask)
    tables = [d.value for d in at.dataframe]
    assert len(tables) == 3
    for table, expected in zip(tables, (plain, switched, knocked), strict=True):
        assert list(table.columns) == ["prediction", "piece", "probability"]
        assert list(table["prediction"]) == list(expected.labels)  # WordPiece: "␣the", "##s" as "s"
        assert list(table["piece"]) == list(expected.tokens)
        assert_allclose(table["probability"], expected.probabilities, atol=1e-9)
    assert any("mask token, `[MASK]`," in c.value for c in at.caption)  # the model's own, shown literally


@pytest.fixture(scope="module")
def lm_folder(tmp_path_factory):
    from test_lm_head import _save_lm

    saved = {}

    def folder(family: str) -> str:
        if family not in saved:
            saved[family] = _save_lm(family, tmp_path_factory.mktemp(f"lm-{family}"))
        return saved[family]

    return folder


def _expected_predictions(folder: str, text: str, position: int):
    from attention_viz.models.lm_head import load_lm_head, predict
    from attention_viz.models.loading import load_model

    loaded = load_model(folder)
    encoding = encode(loaded.tokenizer, text, None, loaded.info.max_positions)
    return encoding, predict(loaded.encoder, load_lm_head(loaded.info), loaded.tokenizer, encoding, position, 8)


def test_roberta_predictions_read_as_text_at_its_own_mask_token(lm_folder):
    folder, text = lm_folder("roberta"), "The cat sat on the <mask>."
    at = _page(model=folder, text=text, pair="", experiment="predictions")
    encoding, expected = _expected_predictions(folder, text, 7)
    assert encoding.tokens[7] == "<mask>" and control(at, "selectbox", "predict_position").value == 7
    assert any("mask token, `<mask>`," in c.value for c in at.caption)
    assert not at.info  # no note: the text has the mask token
    table = at.dataframe[0].value
    assert list(table["piece"]) == list(expected.tokens)
    assert list(table["prediction"]) == list(expected.labels)
    assert not any("Ġ" in label for label in table["prediction"])
    assert any(label.startswith("byte 0x") for label in table["prediction"])  # a lone byte, named
    at.session_state["lang"] = "zh"
    at.run()
    no_errors(at)
    shown = list(at.dataframe[0].value.iloc[:, 0])
    assert shown == [label.replace("byte 0x", "字节 0x").replace("bytes 0x", "字节 0x") for label in expected.labels]


def test_a_masked_lm_text_without_its_mask_token_gets_a_note_until_it_has_one(lm_folder):
    folder = lm_folder("roberta")
    at = _page(model=folder, text="The cat sat on the [MASK].", pair="", experiment="predictions")
    assert control(at, "selectbox", "predict_position").value == 1  # the first token after <s>
    notes = [i.value for i in at.info]
    assert len(notes) == 1 and "The text has no `<mask>`" in notes[0] and "position 1 (“The”)" in notes[0]
    at.text_area(key="text").input("The cat sat on the <mask>.").run()  # the note's advice, followed
    no_errors(at)
    assert control(at, "selectbox", "predict_position").value == 7 and not at.info
    _, expected = _expected_predictions(folder, "The cat sat on the <mask>.", 7)
    assert list(at.dataframe[0].value["piece"]) == list(expected.tokens)


def test_a_causal_lm_predicts_after_the_last_token_by_default(lm_folder):
    folder, text = lm_folder("gpt2"), "The cat sat on the"
    at = _page(model=folder, text=text, pair="", experiment="predictions")
    encoding, expected = _expected_predictions(folder, text, 4)
    assert encoding.num_tokens == 5 and control(at, "selectbox", "predict_position").value == 4
    assert not at.info
    table = at.dataframe[0].value
    assert list(table["prediction"]) == list(expected.labels) and list(table["piece"]) == list(expected.tokens)


def test_a_minimal_pair_where_no_token_aligns_says_so(family_dir):
    at = run_app(model=family_dir("gpt2"), text="Hi", pair="", experiment="pairs", pairs_a="Hi", pairs_b="Bye now")
    at.switch_page(EXPERIMENTS).run()
    no_errors(at)
    assert any("No token of sentence A aligns with a token of sentence B" in i.value for i in at.info)
    assert control(at, "text_input", "pairs_b").value == "Bye now"  # kept


@pytest.mark.parametrize("family", FAMILIES)
def test_every_experiment_opens_for_every_family(family, family_dir):
    at = _page(model=family_dir(family), text="The animal didn't cross the street because it was tired.", pair="")
    for experiment in ("knockout", "pairs", "predictions"):
        control(at, "segmented_control", "experiment").set_value(experiment).run()
        no_errors(at)
        assert not at.error, (experiment, [e.value for e in at.error])
    assert any("has no language-model head" in i.value for i in at.info) != (family == "gpt2")  # GPT-2 ties one
