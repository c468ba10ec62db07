"""The Streamlit app through streamlit.testing.v1.AppTest: pages, data in the figures, caching, messages."""

import json

import numpy as np
import pytest
from apptools import ALL_HEADS, hidden, numbers, title
from apptools import chart as _chart
from apptools import figures as _figures
from apptools import no_errors as _no_errors
from apptools import run_app as _app
from apptools import view as _view
from apptools import z as _z
from replay import control

from attention_viz import extraction, figures
from attention_viz.extraction import extract
from attention_viz.figures import label_text
from attention_viz.figures.grid import thumbnail
from attention_viz.models import loading
from attention_viz.ui.server import cache, cache_seq2seq
from attention_viz.ui.shared import presets_ui
from attention_viz.ui.view import state


def _captions(block) -> str:
    return "\n".join(caption.value for caption in block.caption)


def test_compare_opens_on_a_real_example(bundled):
    at = _app()
    _no_errors(at)
    assert title(at) == f"Layer {state.EXAMPLE_LAYER}, head {state.EXAMPLE_HEAD}"
    pretrained = _chart(at, "map")
    expected = extract(bundled, state.EXAMPLE_TEXT).weights[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD]
    assert np.array_equal(_z(pretrained), expected)
    assert "Matches transformers" in at.success[0].value
    # the example was chosen for this head: "it" attends to its referent "animal", not to "street"
    tokens = list(extract(bundled, state.EXAMPLE_TEXT).encoding.tokens)
    it, animal, street = tokens.index("it"), tokens.index("animal"), tokens.index("street")
    assert expected[it, animal] > 0.5 > 0.1 > expected[it, street]
    # the page says so beside the map, with the weight read from the result
    finding = at.info[0].value
    assert f'"it" → "animal": {expected[it, animal]:.2f}' in finding and '"street"' in finding
    # and says no more once the view leaves the example's head: it would speak of a head not shown
    at.session_state["head"] = state.EXAMPLE_HEAD + 1
    assert hidden(at.run(), presets_ui.NOTE_KEY) and not hidden(at, presets_ui.BACK_KEY)


def test_changing_layer_and_head_shows_that_head(bundled):
    at = _app()
    control(at, "selectbox", "layer").set_value(2).run()
    control(at, "selectbox", "head").set_value(5).run()
    _no_errors(at)
    assert title(at) == "Layer 2, head 5"
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    pretrained = _chart(at, "map")
    scratch, difference = _chart(_view(at, "scratch"), "map"), _chart(_view(at, "difference"), "map")
    assert np.array_equal(_z(pretrained), weights[2, 5])
    assert np.abs(_z(scratch) - weights[2, 5]).max() <= 1e-5
    assert np.abs(_z(difference)).max() <= 1e-5
    labels = [label_text(y) for y in pretrained["data"][0]["y"]]
    assert labels == list(extract(bundled, state.EXAMPLE_TEXT).encoding.labels)
    assert float(numbers(at)[0]) <= 1e-5


def test_new_sentence_and_pair(bundled):
    at = _app()
    at.text_area(key="text").input("The cat sat on the mat").run()
    at.text_input(key="pair").input("The cat lay on the rug").run()
    _no_errors(at)
    pretrained = _chart(at, "map")
    assert _z(pretrained).shape == (15, 15)
    expected = extract(bundled, "The cat sat on the mat", "The cat lay on the rug").weights
    assert np.array_equal(_z(pretrained), expected[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD])


def test_variants(bundled):
    at = _app()
    control(at, "selectbox", "variant").set_value("article-scaling").run()
    _no_errors(at)
    assert not at.success and any("√hidden" in caption.value for caption in at.caption)
    js = numbers(at)[1]
    assert float(js.split()[0]) > 0.001
    control(at, "selectbox", "variant").set_value("random").run()
    control(at, "number_input", "seed").set_value(3).run()
    _no_errors(at)
    scratch = _chart(_view(at, "scratch"), "map")
    assert scratch["layout"]["title"]["text"] == "From scratch: random weights"
    expected = extract(bundled, state.EXAMPLE_TEXT, source="scratch", variant="random", seed=3).weights
    assert np.array_equal(_z(scratch), expected[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD])


def test_variant_survives_a_page_change():
    at = _app()
    control(at, "selectbox", "variant").set_value("no-scaling").run()
    at.switch_page(ALL_HEADS).run()
    at.switch_page("attention_viz/ui/pages/compare.py").run()
    assert control(at, "selectbox", "variant").value == "no-scaling"


def test_all_heads_page_and_open_in_compare(bundled):
    at = _app()
    at.session_state["layer"], at.session_state["head"] = 4, 9  # as a click on a thumbnail or an opened link
    at.switch_page(ALL_HEADS).run()
    _no_errors(at)
    grid = _figures(at)[0]
    assert len(grid["data"]) == 2  # the thumbnails as one heatmap, then their click targets
    weights = extract(bundled, state.EXAMPLE_TEXT).weights
    grid["data"][0]["z"] = _z(grid, 0)
    assert np.array_equal(thumbnail(grid, 4, 9), weights[4, 9])  # layer 4, head 9 at row 4, column 9
    meta = grid["data"][0]["meta"]
    side = meta["queries"]
    assert meta["keys"] == side == weights.shape[-1]
    step = side + meta["gap"]
    (outline,) = grid["layout"]["shapes"]  # on that thumbnail: around its cells
    assert (outline["x0"], outline["y0"]) == (9 * step - 0.5, 4 * step - 0.5)
    assert (outline["x1"], outline["y1"]) == (9 * step + side - 0.5, 4 * step + side - 0.5)
    link = at.get("page_link")[0]
    assert link.proto.label == "Open layer 4, head 9 in Compare"
    at.switch_page("attention_viz/ui/pages/compare.py").run()  # what the link does
    _no_errors(at)
    assert title(at) == "Layer 4, head 9"


def test_all_heads_at_512_tokens_stays_small():
    at = _app()
    at.text_area(key="text").input("hello " * 600).run()
    at.switch_page(ALL_HEADS).run()
    _no_errors(at)
    assert "602 tokens, cut to 512" in at.warning[0].value
    spec = at.get("plotly_chart")[0].proto.spec
    assert len(spec) < 3_000_000
    grid = json.loads(spec)
    grid["data"][0]["z"] = _z(grid)
    assert all(thumbnail(grid, layer, head).shape == (48, 48) for layer in range(6) for head in range(12))


def test_long_input_is_cut_with_a_message():
    at = _app()
    at.text_area(key="text").input("hello " * 600).run()
    _no_errors(at)
    assert "602 tokens, cut to 512" in at.warning[0].value
    shown = _chart(at, "map")  # a window of the 512 tokens, every row and column labelled
    window = figures.map_style(False, 512).window
    assert _z(shown).shape == (window, window)
    assert [label_text(y) for y in shown["data"][0]["y"]] == ["[CLS]"] + ["hello"] * (window - 1)


def test_empty_text_gets_a_message_not_a_traceback():
    at = _app()
    at.text_area(key="text").input("   ").run()
    _no_errors(at)
    assert "empty" in at.info[0].value and "kept" in at.info[0].value
    at.switch_page(ALL_HEADS).run()
    _no_errors(at)
    assert "empty" in at.info[0].value


def test_unknown_model_gets_a_message_and_keeps_every_control(bundled):
    at = _app(model="no-such-model-xyz", text="Keep this sentence.", layer=4, head=9, fit_range=True)
    _no_errors(at)
    assert len(at.error) == 1 and not at.sidebar.error  # one message, in the main area
    message = at.error[0].value
    assert "`no-such-model-xyz`" in message and "`all-MiniLM-L6-v2`" in message and "\\" not in message
    assert at.text_area(key="text").value == "Keep this sentence."
    assert (control(at, "selectbox", "layer").value, control(at, "selectbox", "head").value) == (4, 9)
    assert not control(at, "selectbox", "layer").disabled and at.toggle(key="fit_range").value
    assert at.selectbox(key="model").value == "all-MiniLM-L6-v2"  # the model shown; the message names the typed one
    expected = extract(bundled, "Keep this sentence.").weights[4, 9]
    assert np.array_equal(_z(_figures(at)[0]), expected)  # the app still works, on the previous model
    at.run()
    assert (control(at, "selectbox", "layer").value, at.toggle(key="fit_range").value) == (4, True)


def test_an_encoder_decoder_folder_opens_with_the_sentence_as_its_source(tmp_path, bundled):
    from tiny_seq2seq import make_tiny_seq2seq

    from attention_viz.extraction.seq2seq import extract_seq2seq

    folder = make_tiny_seq2seq("t5", tmp_path)
    at = _app(model=folder, text="Keep this sentence.", layer=4, head=9)
    _no_errors(at)
    assert not at.error, [e.value for e in at.error]
    assert at.text_area(key="text").value == "Keep this sentence."  # the source now
    assert at.text_area(key="_target").value == state.DEFAULTS["target"]
    result = extract_seq2seq(
        cache_seq2seq.seq2seq_model(folder), "Keep this sentence.", state.DEFAULTS["target"], "pretrained"
    )
    layer, head = at.session_state["layer"], at.session_state["head"]
    assert (layer, head) == (2, 3)  # clamped to the decoder's 3 layers × 4 heads
    shown = _z(_figures(at)[0])  # the first window of a long target
    assert np.array_equal(shown, result.cross[layer, head][: shown.shape[0], : shown.shape[1]])


def test_a_failed_model_leaves_the_previous_one_not_the_bundled_one(tiny_model_dir):
    # the session had shown the tiny model (AppTest cannot type a new option, so it is set beforehand)
    at = _app(model="/no/such/folder", _active_model=tiny_model_dir)
    _no_errors(at)
    assert title(at) == "Layer 1, head 1"  # example head 3, 1 clamped to 2 layers
    assert f"`{tiny_model_dir}`" in at.error[0].value
    assert _z(_figures(at)[0]).shape[0] == len(extract(cache.model(tiny_model_dir), state.EXAMPLE_TEXT).encoding.tokens)
    assert "2 layers × 4 heads" in _captions(at.sidebar)


def test_model_name_is_not_rendered_as_markdown():
    at = _app(model="**x** [link](http://a.b) $x^2$ `tick`")
    _no_errors(at)
    message = at.error[0].value
    assert "`` **x** [link](http://a.b) $x^2$ `tick` ``" in message  # a code span: literal, no backslashes


def test_half_precision_folder_shows_its_dtype(tmp_path, bundled):
    import torch
    from transformers import AutoModel

    AutoModel.from_pretrained(loading.bundled_model_path()).to(torch.float16).save_pretrained(tmp_path)
    bundled.tokenizer.save_pretrained(tmp_path)
    at = _app(model=str(tmp_path))
    _no_errors(at)
    assert not at.error and "saved as float16, shown in float32" in _captions(at.sidebar)
    assert "Matches transformers" in at.success[0].value
    np.testing.assert_allclose(_z(_figures(at)[0]).sum(-1), 1, atol=1e-6)


@pytest.mark.parametrize("text", ["\u200b", "\ufeff \u00ad"])
def test_invisible_text_gets_the_empty_hint(text):
    """Zero-width spaces, byte-order marks and soft hyphens normalise to nothing: an empty input, kept."""
    at = _app(text=text)
    _no_errors(at)
    assert not _figures(at) and "empty" in at.info[0].value and "kept" in at.info[0].value


def test_invisible_pair_is_a_single_sentence(bundled):
    at = _app(text="The cat sat.", pair="\u200b")
    _no_errors(at)
    assert np.array_equal(
        _z(_figures(at)[0]), extract(bundled, "The cat sat.").weights[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD]
    )


def test_a_megabyte_paste_gets_a_message_and_is_kept():
    big = "word " * 200_000
    at = _app(text=big)
    _no_errors(at)
    assert "1,000,000 characters; the limit is 5,000" in at.info[0].value and not _figures(at)
    assert at.text_area(key="text").value == big


def test_pair_cut_names_both_sentences():
    at = _app(text="hello " * 400, pair="world " * 300)
    _no_errors(at)
    warning = at.warning[0].value
    assert "703 tokens, cut to 512" in warning and "second sentence lost" in warning


def test_allow_list_from_the_environment(monkeypatch, tiny_model_dir):
    monkeypatch.setenv("ATTENTION_VIZ_ALLOWED_MODELS", "some/listed-model")
    at = _app(model=tiny_model_dir)
    _no_errors(at)
    assert "only loads the models its operator listed" in at.error[0].value
    assert "all-MiniLM-L6-v2" in _captions(at.sidebar)


def test_fit_range_is_shared_by_the_two_attention_maps():
    at = _app(fit_range=True, variant="random")
    _no_errors(at)
    pretrained, scratch = _chart(at, "map"), _chart(_view(at, "scratch"), "map")
    ranges = [(f["data"][0]["zmin"], f["data"][0]["zmax"]) for f in (pretrained, scratch)]
    assert ranges[0] == ranges[1]
    low = min(_z(pretrained).min(), _z(scratch).min())
    assert ranges[0][0] == pytest.approx(low) and ranges[0][1] < 1


@pytest.fixture
def counted(monkeypatch):
    """Count model loads and model runs from a cold cache."""
    cache._load.clear()
    cache.attention.clear()
    calls = {"load": 0, "extract": 0}

    def load(name, policy=None):
        calls["load"] += 1
        return real_load(name, policy)

    def run(*args, **kwargs):
        calls["extract"] += 1
        return real_extract(*args, **kwargs)

    real_load, real_extract = loading.load_model, extraction.extract_encoded
    monkeypatch.setattr(loading, "load_model", load)
    monkeypatch.setattr(extraction, "extract_encoded", run)
    yield calls
    cache._load.clear()
    cache.attention.clear()


def test_model_loads_once_and_head_changes_do_not_rerun_it(counted):
    """Two sessions and 20 head changes each: one model load, and the attention (pretrained and from scratch)
    computed once for both sessions."""
    first, second = _app(), _app()  # two sessions
    assert counted == {"load": 1, "extract": 2}  # pretrained + from scratch, once for both sessions
    for i in range(20):
        control(first, "selectbox", "layer").set_value(i % 6).run()
        control(second, "selectbox", "head").set_value(i % 12).run()
    _no_errors(first)
    assert counted == {"load": 1, "extract": 2}
    first.switch_page(ALL_HEADS).run()
    assert counted == {"load": 1, "extract": 2}


def test_switching_models_switches_the_attention(counted, tiny_model_dir, bundled):
    """The cached attention is keyed by the model's name too: another model in the same process shows its own
    attention, not the previous model's."""
    bundled_map = _z(_chart(_app(), "map"))
    at = _app(model=tiny_model_dir, layer=5, head=11)  # same process, same caches, another model
    _no_errors(at)
    assert counted["load"] == 2
    assert (control(at, "selectbox", "layer").value, control(at, "selectbox", "head").value) == (
        1,
        3,
    )  # clamped to 2 layers × 4 heads
    expected = extract(cache.model(tiny_model_dir), state.EXAMPLE_TEXT).weights[1, 3]
    shown = _z(_chart(at, "map"))
    assert np.array_equal(shown, expected)
    assert not np.array_equal(shown, bundled_map)
    assert "Matches transformers" in at.success[0].value


def test_allow_list_from_secrets(tiny_model_dir):
    from apptools import APP
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.secrets["attention_viz"] = {"allowed_models": ["some/listed-model"], "max_chars": 50}
    at.session_state["model"] = tiny_model_dir
    at.session_state["text"] = "x" * 60
    at.run()
    _no_errors(at)
    assert "only loads the models its operator listed" in at.error[0].value
    assert "60 characters; the limit is 50" in at.info[0].value
