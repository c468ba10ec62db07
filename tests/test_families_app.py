"""AppTest: every family on every page, Compare's parity, the decoder's and ALBERT's notes, the Model box."""

from __future__ import annotations

import numpy as np
import pytest
from apptools import chart, decode, no_errors, run_app, view, z
from replay import control
from tiny_families import DECODERS, FAMILIES

from attention_viz.analysis import steps
from attention_viz.extraction import encode, extract
from attention_viz.ui.server import cache, cache_experiments
from attention_viz.ui.text import i18n

TEXT = "The animal didn't cross the street because it was too tired."
PAGES = [
    f"attention_viz/ui/pages/{page}.py"
    for page in ("all_heads", "head_stats", "head_similarity", "rollout", "inside", "article")
]


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


@pytest.mark.parametrize("family", FAMILIES)
def test_compare_matches_transformers_exactly_and_every_page_opens(family_dir, family):
    folder = family_dir(family)
    at = run_app(model=folder, text=TEXT, pair="", layer=1, head=2)
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    expected = extract(cache.model(folder), TEXT).weights[1, 2]
    shown = z(chart(at, "map"))  # the first window of a long map
    assert shown.shape[0] >= 10 and np.array_equal(shown, expected[: shown.shape[0], : shown.shape[1]])
    assert "Matches transformers" in at.success[0].value
    assert np.all(z(chart(view(at, "difference"), "map")) == 0)  # bit for bit: the difference map is 0
    captions = _captions(at)
    assert ("shares its layer weights" in captions) == (family == "albert")
    assert ("is a decoder" in captions) == (family == "gpt2")
    for page in PAGES:
        at.switch_page(page).run()
        no_errors(at)
        assert not at.error, (page, [e.value for e in at.error])


@pytest.mark.parametrize("family", DECODERS)
def test_every_page_opens_on_a_llama_style_decoder(family_dir, family):
    """Llama, Qwen2, Qwen3, Mistral and Gemma 2: the map is transformers' (per query head), Compare finds the
    from-scratch decoder equal, and every page opens, the experiments and scores included."""
    folder = family_dir(family)
    at = run_app(model=folder, text=TEXT, pair="", layer=1, head=2)
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    expected = extract(cache.model(folder), TEXT).weights[1, 2]
    shown = z(chart(at, "map"))
    assert shown.shape[0] >= 10 and np.array_equal(shown, expected[: shown.shape[0], : shown.shape[1]])
    assert np.all(shown[np.triu_indices(len(shown), k=1)] == 0) and np.all(shown.diagonal() > 0)
    assert "Matches transformers" in at.success[0].value
    assert np.all(z(chart(view(at, "difference"), "map")) == 0)
    assert "is a decoder" in _captions(at)
    for page in [*PAGES, "attention_viz/ui/pages/experiments.py"]:
        at.switch_page(page).run()
        no_errors(at)
        assert not at.error, (page, [e.value for e in at.error])


def test_gpt2_map_is_lower_triangular_and_a_pair_gets_a_clear_message(family_dir):
    folder = family_dir("gpt2")
    at = run_app(model=folder, text=TEXT, layer=0, head=0)
    no_errors(at)
    shown = z(chart(at, "map"))
    assert np.all(shown[np.triu_indices(len(shown), k=1)] == 0) and shown[-1, 0] > 0 and len(shown) >= 10
    at = run_app(model=folder, text="Where is it?", pair="It is in the box.")
    no_errors(at)
    assert i18n.t("messages.input_pair_unsupported") in at.info[0].value
    assert at.text_input(key="pair").value == "It is in the box."  # what was typed is kept


def test_head_statistics_say_what_a_decoder_leaves_empty(family_dir):
    at = run_app(model=family_dir("gpt2"), text=TEXT)
    at.switch_page("attention_viz/ui/pages/head_stats.py").run()
    no_errors(at)
    table = at.dataframe[0].value
    assert table["next"].isna().all() and table["previous"].notna().all()  # empty, not 0
    assert "not applicable and left empty rather than 0" in _captions(at)
    assert i18n.t("stats.col_next") in _captions(at)


@pytest.fixture
def bert_base_in_the_cache(tmp_path, monkeypatch):
    """A hub cache holding a tiny 12 × 12 BERT as ``bert-base-uncased`` (the model Clark et al. analysed)."""
    from huggingface_hub import constants
    from transformers import AutoTokenizer, BertConfig, BertModel

    from attention_viz.models.loading import bundled_model_path

    snapshot = tmp_path / "models--bert-base-uncased" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    (tmp_path / "models--bert-base-uncased" / "refs").mkdir()
    (tmp_path / "models--bert-base-uncased" / "refs" / "main").write_text("0123abc")
    config = BertConfig(hidden_size=24, num_hidden_layers=12, num_attention_heads=12, intermediate_size=24)
    BertModel(config).save_pretrained(snapshot)
    AutoTokenizer.from_pretrained(bundled_model_path()).save_pretrained(snapshot)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    cache._found_models.clear()
    yield
    cache._found_models.clear()


def test_model_box_offers_cached_models_and_head_statistics_mark_clarks_heads(bert_base_in_the_cache):
    at = run_app()
    no_errors(at)
    box = at.selectbox(key="model")
    assert "bert-base-uncased · BERT" in box.options  # found in the cache, shown with its family
    at = run_app(model="bert-base-uncased", text=TEXT)
    at.switch_page("attention_viz/ui/pages/head_stats.py").run()
    no_errors(at)
    assert not at.error
    published, statistics = at.dataframe[0].value, at.dataframe[1].value  # the published heads come first
    assert len(published) == 7 and len(statistics) == 144
    row = published[published.iloc[:, 2] == "8-10"].iloc[0]  # the paper's 1-based 8-10 is our layer 7, head 9
    assert (row.iloc[0], row.iloc[1], row.iloc[4]) == (7, 9, 86.8) and row.iloc[3].startswith("dobj")
    texts = chart(at, "stats_overview")["data"][0]["text"]
    assert texts[7 * 12 + 9].endswith("★") and texts[4 * 12 + 3].endswith("★") and not texts[0].endswith("★")
    assert "Clark et al. 2019" in _captions(at)


INSIDE = "attention_viz/ui/pages/inside.py"


def _inside(folder: str, layer: int, head: int, query: int):
    at = run_app(model=folder, text=TEXT, pair="", layer=layer, head=head)
    at.switch_page(INSIDE).run()
    control(at, "selectbox", "inside_query").set_value(query).run()
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    return at


def _keys(at) -> set[str]:
    return {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}


def test_inside_a_rope_head_shows_the_rotation_and_the_score_over_distance(family_dir):
    folder = family_dir("llama")
    at = _inside(folder, 1, 3, 4)
    loaded = cache.model(folder)
    hidden = steps.layer_inputs(loaded.encoder, encode(loaded.tokenizer, TEXT, None))[1]
    rotated = steps.rotation_step(loaded.encoder, hidden, 1, 3, 4)
    expected = np.stack([rotated.query_before, rotated.query_after, rotated.key_before, rotated.key_after])
    assert np.array_equal(z(chart(at, "step_rope")), expected)
    curve = chart(at, "rope_distance")["data"][0]
    assert np.array_equal(decode(curve["y"]), steps.distance_scores(loaded.encoder, hidden[4], 1, 3, 64))
    assert decode(curve["x"]).tolist() == list(range(64))  # the tiny model's 64 positions
    assert not {"step_window", "step_softcap"} & _keys(at)  # Llama has neither
    markdown = " ".join(m.value for m in at.markdown)
    assert "**3.** **Rotation by position (RoPE).**" in markdown and "**4.** **Dot products.**" in markdown


def test_inside_a_local_layer_shows_its_window_and_a_capped_one_its_cap(family_dir):
    at = _inside(family_dir("mistral"), 0, 1, 9)  # window 6: keys 0 to 3 are out of the query's sight
    window = chart(at, "step_window")["data"][0]
    assert window["text"][:4] == ["outside"] * 4 and "outside" not in window["text"][4:10]
    assert "step_softcap" not in _keys(at)
    folder = family_dir("gemma2")
    at = _inside(folder, 0, 2, 6)  # layer 0: local (window 4) and capped
    loaded = cache.model(folder)
    assert {"step_window", "step_softcap"} <= _keys(at)
    hidden = steps.layer_inputs(loaded.encoder, encode(loaded.tokenizer, TEXT, None))[0]
    q, k, _ = steps.head_vectors(loaded.encoder, hidden, 0, 2)
    uncapped = decode(chart(at, "step_softcap")["data"][0]["y"])
    rules = steps.layer_rules(loaded.encoder, 0)
    np.testing.assert_allclose(uncapped[3:7], (k[3:7] @ q[6]) * rules.scaling, rtol=1e-6)  # the window's keys
    assert not np.any(uncapped[:3])  # outside the window: no bar
    at = _inside(folder, 1, 2, 6)  # layer 1: global and capped
    assert "step_softcap" in _keys(at) and "step_window" not in _keys(at)


def test_inside_the_element_holds_every_layers_decoder_steps_for_its_own_steps(family_dir):
    """What the map's element draws for a head it steps to, on a global layer of Gemma 2 (its local layers have a
    window): a template of each chart kind any held layer has, and each layer's own steps, bit for bit."""
    from replay import map_data

    from attention_viz.figures.bundles import unpack
    from attention_viz.ui.attention_map.serving import STORE

    folder = family_dir("gemma2")
    at = _inside(folder, 1, 2, 6)  # layer 1: global and capped
    steps_data = map_data(at)["steps"]
    assert {"step_window", "step_rope", "step_softcap", "rope_distance"} <= set(steps_data["templates"])
    header, values = unpack(STORE.get(steps_data["bundle"].rsplit("/", 1)[-1]))
    kinds = {entry["layer"]: [step["key"] for step in entry["steps"]] for entry in header["layers"]}
    assert "step_window" in kinds[0] and "step_window" not in kinds[1] and "step_rope" in kinds[1]
    loaded = cache.model(folder)
    hidden = steps.layer_inputs(loaded.encoder, encode(loaded.tokenizer, TEXT, None))[0]
    rotated = steps.rotation_step(loaded.encoder, hidden, 0, 3, 6).vectors
    (rope,) = [step for step in header["layers"][0]["steps"] if step["key"] == "step_rope"]
    count = int(np.prod(rope["array"]["shape"][1:]))
    start = rope["array"]["offset"] // 4 + 3 * count
    assert np.array_equal(values[start : start + count].reshape(rotated.shape), rotated)  # layer 0, head 3


def test_a_text_past_the_models_positions_is_said_to_be_cut_on_every_page_that_reads_it(family_dir):
    """A tiny Llama has 64 positions: a longer text is cut, and each page that reads the text says so, with
    the numbers the encoding gives (Head statistics and Head similarity on the text, both experiments)."""
    folder = family_dir("llama")
    long = " ".join(["word"] * 80)
    encoding = cache.encoding(cache.model(folder), long, None)
    assert encoding.truncated and encoding.num_tokens == 64
    said = f"{encoding.num_input_tokens} tokens, cut to 64"
    at = run_app(model=folder, text=long, pair="")
    for page, settings in (
        ("head_stats", {}),
        ("head_similarity", {}),
        ("experiments", {"experiment": "knockout"}),
        ("experiments", {"experiment": "predictions"}),
    ):
        for key, value in settings.items():
            at.session_state[key] = value
        at.switch_page(f"attention_viz/ui/pages/{page}.py").run()
        no_errors(at)
        if settings.get("experiment") == "predictions" and not cache_experiments.lm_head(cache.model(folder)):
            assert "no language-model head" in at.info[0].value  # reads no text: nothing to say
            continue
        assert any(said in w.value for w in at.warning), (page, settings, [w.value for w in at.warning])
