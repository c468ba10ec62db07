"""AppTest: a decoder's continuation in the app. Generate N tokens after the sentence; Compare shows the maps over
sentence and continuation (the generated tokens marked), steps through the generation one token at a time
(step t: a forward of the sentence and the first t generated tokens), and the link carries the count and the
step. An encoder draws no such control; a checkpoint without its LM head says it cannot generate."""

from __future__ import annotations

import numpy as np
import pytest
from apptools import ALL_HEADS, APP, chart, no_errors, run_app, z
from replay import browser_step
from streamlit.testing.v1 import AppTest
from test_lm_head import _save_lm

from attention_viz.extraction import encode, extract_encoded
from attention_viz.extraction.generation import extend_encoding, generate_decoder, load_generator
from attention_viz.figures.grid import thumbnail
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.server import cache
from attention_viz.ui.text import i18n

TEXT = "The cat sat on the mat."
NEW = 4
LAYER, HEAD = 1, 2
MARK = "✎"  # cache.GENERATED_MARK, as a person reads it


@pytest.fixture(scope="module")
def lm_folder(tmp_path_factory):
    """Tiny checkpoints saved with their LM head (…ForCausalLM), which generate."""
    folders = {}

    def get(family: str) -> str:
        if family not in folders:
            folders[family] = _save_lm(family, tmp_path_factory.mktemp(f"generate-{family}"))
        return folders[family]

    return get


def _generated(folder: str):
    loaded = cache.model(folder)
    return loaded, generate_decoder(loaded, TEXT, NEW, source="pretrained", generator=load_generator(loaded.info))


def _map(at) -> tuple[np.ndarray, list[str], list[str]]:
    figure = chart(at, "map")
    trace = figure["data"][0]
    return z(figure), list(trace["y"]), list(trace["x"])


def _labels(labels) -> list[str]:
    """Axis categories as drawn, without the bidirectional isolates the element wraps each label in and the
    zero-width non-joiners that tell repeated labels apart."""
    return [str(label).strip("\u2068\u2069\u200c") for label in labels]


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_generate_shows_sentence_and_continuation_and_steps_through_the_prefixes(lm_folder, family):
    folder = lm_folder(family)
    at = run_app(model=folder, text=TEXT, pair="", layer=LAYER, head=HEAD)
    no_errors(at)
    at.number_input(key="_generate_tokens").set_value(NEW).run()
    at.button(key="generation_generate").click().run()
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    loaded, out = _generated(folder)
    prompt = out.num_prompt_tokens
    assert out.result.encoding.num_tokens == prompt + NEW  # the tiny models write no end token in 4 steps

    # the last step: generate_decoder's map of this head, real attention (rows sum to 1, causal)
    shown, rows, columns = _map(at)
    expected = out.result.weights[LAYER, HEAD]
    assert shown.shape == (prompt + NEW, prompt + NEW)
    assert np.array_equal(shown, expected)
    assert np.allclose(shown.sum(axis=1), 1.0, atol=1e-5)
    assert np.all(shown[np.triu_indices(len(shown), k=1)] == 0) and np.all(shown.diagonal() > 0)
    # the generated tokens are marked on both axes, the sentence's are not
    marked = [MARK in label for label in _labels(rows)]
    assert marked == [False] * prompt + [True] * NEW and _labels(columns) == _labels(rows)
    for label, own in zip(_labels(rows)[prompt:], out.result.encoding.labels[prompt:], strict=True):
        assert label.startswith(own) and label.endswith(MARK)
    assert at.session_state["generated"] == NEW and at.session_state["generation_step"] == NEW
    assert at.query_params["generated"] == str(NEW) and at.query_params["generation_step"] == str(NEW)
    assert at.query_params["generate_tokens"] == str(NEW)

    # keys P and N step too (Streamlit's button shortcuts; the arrows are the map's)
    shortcuts = {key: at.button(key=f"generation_{key}").proto.shortcut for key in ("previous", "next")}
    assert {key: value.lower() for key, value in shortcuts.items()} == {"previous": "p", "next": "n"}
    # step back two tokens, one at a time: the map of the sentence and the first 2 generated tokens
    at.button(key="generation_previous").click().run()
    at.button(key="generation_previous").click().run()
    no_errors(at)
    assert at.session_state["generation_step"] == 2 and at.query_params["generation_step"] == "2"
    shown, rows, _ = _map(at)
    ids = out.result.encoding.input_ids[prompt:].tolist()
    prefix = extend_encoding(encode(loaded.tokenizer, TEXT), loaded.tokenizer, ids[:2])
    forward = extract_encoded(loaded, prefix, "pretrained").weights[LAYER, HEAD]  # a forward of the prefix alone
    assert shown.shape == (prompt + 2, prompt + 2) and np.array_equal(shown, forward)
    assert np.allclose(shown, expected[: prompt + 2, : prompt + 2], atol=1e-6)  # causal: the crop of the last step
    assert [MARK in label for label in _labels(rows)] == [False] * prompt + [True] * 2
    assert at.text_area(key="text").value == TEXT  # nothing typed is lost

    # step 0: the sentence alone, as without generation; the next step comes back
    for _ in range(3):
        at.button(key="generation_previous").click().run()
    assert at.session_state["generation_step"] == 0  # stops at 0
    shown, rows, _ = _map(at)
    assert shown.shape == (prompt, prompt) and not any(MARK in label for label in _labels(rows))
    at.button(key="generation_next").click().run()
    assert _map(at)[0].shape == (prompt + 1, prompt + 1)

    # other pages read the same maps: All heads' thumbnail of the head is the map at this step
    step_map = _map(at)[0]
    at.switch_page(ALL_HEADS).run()
    no_errors(at)
    grid = chart(at, "head_grid")
    meta = grid["data"][0]["meta"]
    assert (meta["layers"], meta["heads"]) == (loaded.info.num_layers, loaded.info.num_heads)
    grid["data"][0]["z"] = z(grid)
    shown = thumbnail(grid, LAYER, HEAD)
    assert shown.shape == (prompt + 1, prompt + 1) and np.array_equal(shown, step_map)
    at.switch_page("attention_viz/ui/pages/head_stats.py").run()
    no_errors(at)
    assert not at.error, [e.value for e in at.error]


def test_the_link_carries_count_and_step_and_opens_the_same_map(lm_folder):
    folder = lm_folder("gpt2")
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(
        {"model": folder, "text": TEXT, "layer": str(LAYER), "head": str(HEAD), "generated": str(NEW)}
    )
    at.query_params.update({"generate_tokens": str(NEW), "generation_step": "3"})
    at.run()
    no_errors(at)
    assert at.session_state["generated"] == NEW and at.session_state["generation_step"] == 3
    _, out = _generated(folder)
    prompt = out.num_prompt_tokens
    shown, rows, _ = _map(at)
    assert np.allclose(shown, out.result.weights[LAYER, HEAD][: prompt + 3, : prompt + 3], atol=1e-6)
    assert [MARK in label for label in _labels(rows)] == [False] * prompt + [True] * 3
    assert at.query_params["generated"] == str(NEW) and at.query_params["generation_step"] == "3"
    assert at.number_input(key="_generate_tokens").value == NEW
    assert at.slider(key="_generation_step").value == 3
    at.button(key="generation_clear").click().run()  # back to the sentence alone
    assert at.query_params["generated"] == "0" and _map(at)[0].shape == (prompt, prompt)
    assert at.text_area(key="text").value == TEXT


def test_an_encoder_has_no_generation_control_and_a_link_asking_for_one_gets_a_note(bundled):
    at = run_app()
    no_errors(at)
    assert not [b for b in at.button if b.key == "generation_generate"]
    assert not [n for n in at.number_input if n.key == "_generate_tokens"]
    at = run_app(generated=4, generation_step=4)
    no_errors(at)
    assert i18n.t("generation.encoder") in [c.value for c in at.caption]
    assert not any(MARK in str(label) for label in _map(at)[1])
    at.button(key="generation_clear").click().run()  # the note goes with the request
    assert at.session_state["generated"] == 0 and i18n.t("generation.encoder") not in [c.value for c in at.caption]


def test_a_text_that_fills_every_position_says_there_is_no_room_and_keeps_its_map(lm_folder):
    folder = lm_folder("gpt2")
    long_text = "the cat sat on the mat " * 30  # past the tiny model's 64 positions: cut to 64 tokens
    at = run_app(model=folder, text=long_text, pair="", generated=NEW, generation_step=NEW)
    no_errors(at)
    assert i18n.t("messages.input_no_room", positions=64) in [i.value for i in at.info]
    assert len(cache.model(folder).tokenizer(long_text)["input_ids"]) > 64
    at = browser_step(at, query_start=64, key_start=64)  # the window at the end of the text: no token after it
    assert (at.session_state["query_start"], at.session_state["key_start"]) == (64 - len(_map(at)[1]),) * 2
    assert not any(MARK in label for label in _labels(_map(at)[1]))
    assert at.text_area(key="text").value == long_text


def test_a_decoder_saved_without_its_lm_head_says_it_cannot_generate(family_dir):
    folder = family_dir("llama")  # LlamaModel saved: its untied lm_head is missing
    at = run_app(model=folder, text=TEXT, pair="", generate_tokens=3)
    at.button(key="generation_generate").click().run()
    no_errors(at)
    assert i18n.t("generation.cannot_no_lm_head") in [i.value for i in at.info]
    shown, rows, _ = _map(at)  # the sentence alone
    assert len(shown) == encode(cache.model(folder).tokenizer, TEXT).num_tokens
    assert not any(MARK in str(label) for label in rows)


def test_a_step_of_the_generation_gives_every_maps_element_the_steps_tokens(lm_folder):
    """A step changes the tokens the maps read, not the sentence: Inside a head's and Rollout & norms' map
    elements hold the maps of the step's tokens (their bundles are named by everything the maps depend on,
    the continuation shown with them), not the bundle of the step before."""
    folder = lm_folder("llama")
    at = run_app(model=folder, text=TEXT, pair="", generated=NEW, generation_step=NEW)
    prompt = _generated(folder)[1].num_prompt_tokens
    for page, key in (("inside.py", attention_map.INSIDE_KEY), ("rollout.py", attention_map.ROLLOUT_KEY)):
        at.switch_page(f"attention_viz/ui/pages/{page}").run()
        no_errors(at)
        assert at.session_state["generation_step"] == NEW
        assert z(chart(at, key)).shape == (prompt + NEW, prompt + NEW), page
        at.button(key="generation_previous").click().run()
        at.button(key="generation_previous").click().run()
        no_errors(at)
        shown = chart(at, key)
        assert z(shown).shape == (prompt + 2, prompt + 2), page
        assert [MARK in label for label in _labels(shown["data"][0]["y"])] == [False] * prompt + [True] * 2
        at.session_state["generation_step"] = NEW
