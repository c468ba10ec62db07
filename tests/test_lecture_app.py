"""Lecture mode through AppTest: languages, the view in the link, examples, Inside a head, the article's
layer and downloads."""

import io
import json
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pytest
from apptools import APP, downloaded, numbers, title
from apptools import decode as _decode
from apptools import figures as _figures
from apptools import no_errors as _no_errors
from apptools import run_app as _app
from apptools import z as _z
from markup import shown
from replay import control, map_data
from streamlit.testing.v1 import AppTest

from attention_viz import links
from attention_viz.analysis import article_compare, presets, steps
from attention_viz.extraction import encode, export, extract
from attention_viz.ui.frame import screen
from attention_viz.ui.text import i18n
from attention_viz.ui.view import sharing, state

INSIDE = "attention_viz/ui/pages/inside.py"
ARTICLE = "attention_viz/ui/pages/article.py"


def _open_link(query: str) -> AppTest:
    """Open the app as a browser opens a shared link: the query string reaches st.query_params."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in links.parse_query(query).items():
        at.query_params[key] = value
    return at.run()


def _link(at) -> str:
    """The URL shown in the sidebar's "link to this view" box (opened: it is drawn only while open)."""
    assert not [code for code in at.code if code.value.startswith("http")]  # closed: no st.code was sent
    at.session_state[sharing.SHARE_BOX] = True
    at.run()
    return next(code.value for code in at.code if code.value.startswith("http"))


def test_language_switch_turns_every_sidebar_label_and_page_title_chinese():
    at = _app()
    assert at.text_area(key="text").label == "Sentence"
    at.radio(key="lang").set_value("zh").run()
    _no_errors(at)
    zh = i18n.table("zh")
    assert at.text_area(key="text").label == zh["sidebar.text"]
    assert (
        control(at, "selectbox", "layer").label == zh["sidebar.layer"]
        and control(at, "selectbox", "head").label == zh["sidebar.head"]
    )
    assert at.selectbox(key="model").label == zh["sidebar.model"]
    assert zh["presets.finding"].split("{")[0].strip() in at.info[0].value  # the example's finding, in Chinese
    at.switch_page(INSIDE).run()
    _no_errors(at)
    assert title(at).startswith("第 3 层第 1 个头的内部")
    assert at.query_params["lang"] == "zh" and at.query_params["page"] == "inside"


def test_a_link_opens_the_same_view_page_head_and_language(bundled):
    view = {"page": "inside", "lang": "zh", "text": "猫在哪里？", "pair": "The cat is on the mat.", "layer": "4"}
    view |= {"head": "7", "scaling": "article", "temperature": "0.5", "masked": "0,3"}  # "article": an older link
    at = _open_link(links.query_string(view))
    _no_errors(at)
    assert title(at).startswith("第 4 层第 7 个头的内部")
    assert at.text_area(key="text").value == view["text"] and at.text_input(key="pair").value == view["pair"]
    assert (control(at, "selectbox", "layer").value, control(at, "selectbox", "head").value) == (4, 7)
    assert (
        control(at, "radio", "scaling").value == "article-scaling" and control(at, "slider", "temperature").value == 0.5
    )
    assert control(at, "multiselect", "masked").value == [0, 3]
    assert not at.warning  # a valid link opens without a note


def test_state_to_link_to_state_round_trip_with_chinese_and_a_pair():
    at = _app(text="动物没有过马路，因为它太累了。", pair="它睡了。", layer=2, head=5, lang="zh", fit_range=True)
    at.switch_page(ARTICLE).run()
    _no_errors(at)
    link = _link(at)
    assert urlsplit(link).path == "/"
    opened = _open_link(urlsplit(link).query)
    _no_errors(opened)
    for key in state.DEFAULTS:
        assert opened.session_state[key] == at.session_state[key], key
    assert title(opened) == title(at)  # same page, same head, same language


def test_every_change_is_written_back_to_the_url():
    at = _app()
    control(at, "selectbox", "head").set_value(9).run()
    at.text_input(key="pair").input("第二句").run()
    assert at.query_params["head"] == "9" and at.query_params["pair"] == "第二句"
    assert links.parse_query(urlsplit(_link(at)).query)["head"] == "9"


def test_a_malformed_link_opens_the_default_view_with_a_note():
    at = _open_link("layer=abc&head=-3&lang=fr&fit_range=maybe&page=nowhere&temperature=99&zzz=1")
    _no_errors(at)
    assert (control(at, "selectbox", "layer").value, control(at, "selectbox", "head").value) == (
        state.EXAMPLE_LAYER,
        state.EXAMPLE_HEAD,
    )
    assert at.session_state["lang"] == "en" and at.session_state["temperature"] == 1.0
    note = at.warning[0].value
    for name in ("layer", "head", "lang", "fit_range", "page", "temperature", "zzz"):
        assert name in note
    assert title(at) == f"Layer {state.EXAMPLE_LAYER}, head {state.EXAMPLE_HEAD}"  # Compare, the default


def test_text_too_long_for_a_link_is_cut_with_a_note():
    long = "长" * (links.MAX_TEXT + 50)
    at = _open_link(links.query_string({"text": long}))
    _no_errors(at)
    assert at.text_area(key="text").value == "长" * links.MAX_TEXT
    assert str(links.MAX_TEXT) in at.warning[0].value
    at = _app(text="a" * (links.MAX_TEXT + 50))  # Latin: the characters limit cuts it
    link = _link(at)
    assert len(links.parse_query(urlsplit(link).query)["text"]) == links.MAX_TEXT
    assert any(f"{links.MAX_TEXT} of {links.MAX_TEXT + 50}" in w.value for w in at.warning)  # the box says so


@pytest.mark.parametrize(
    ("lang", "says"), [("en", "first {kept} of 1000 characters"), ("zh", "前 {kept} 个字符（共 1000 个；")]
)
def test_a_chinese_text_too_long_for_a_link_is_cut_to_fit_and_the_box_says_so(lang, says):
    """1000 × 中 is within the app's limit on a text, but percent-encoded (9 characters each) it made a link
    of 9,866 characters, which the project's nginx refused (414). The link holds what fits, and says so."""
    at = _app(text="中" * 1000, lang=lang)
    link = _link(at)
    held = links.parse_query(urlsplit(link).query)["text"]
    kept = len(held)
    assert len(link) <= links.MAX_LINK and 700 < kept < 1000
    assert at.text_area(key="text").value == "中" * 1000  # the text itself is kept whole
    notes = [w.value for w in at.warning if says.format(kept=kept) in w.value]
    assert len(notes) == 1 and str(links.MAX_LINK) in notes[0] and i18n.table(lang)["links.field_text"] in notes[0]
    assert links.parse_query(links.query_string(dict(at.query_params)))["text"] == held  # and the address too


@pytest.mark.parametrize("preset", presets.load(), ids=lambda p: p.id)
def test_each_example_is_one_click_and_shows_its_finding(preset, bundled):
    at = _app(text="something else", layer=0, head=0)
    control(at, "selectbox", "example").set_value(preset.id).run()
    _no_errors(at)
    assert at.text_area(key="text").value == preset.text and at.text_input(key="pair").value == preset.pair
    assert (control(at, "selectbox", "layer").value, control(at, "selectbox", "head").value) == (
        preset.layer,
        preset.head,
    )
    assert control(at, "selectbox", "example").value == preset.id  # the box shows the example chosen
    result = extract(bundled, preset.text, preset.pair or None)
    query, key, weight = presets.finding(preset, result.encoding, result.weights[preset.layer, preset.head])
    labels = result.encoding.labels
    assert f'"{labels[query]}" → "{labels[key]}": {weight:.2f}' in shown(at.info[0].value).text  # tokens literal
    assert preset.look_for["en"] in at.info[0].value


def _bars(figure) -> np.ndarray:
    return _decode(figure["data"][0]["y"])


def test_inside_a_head_numbers_equal_the_models_attention(bundled):
    at = _app()
    at.switch_page(INSIDE).run()
    _no_errors(at)
    expected = extract(bundled, state.EXAMPLE_TEXT).weights[state.EXAMPLE_LAYER, state.EXAMPLE_HEAD]
    it = list(extract(bundled, state.EXAMPLE_TEXT).encoding.tokens).index("it")
    assert control(at, "selectbox", "inside_query").value == it  # the example's query token
    query, keys, dots, scores, weights, values, context, every = _figures(at)
    np.testing.assert_allclose(_bars(weights), expected[it], atol=1e-5)
    np.testing.assert_allclose(_z(every), expected, atol=1e-5)
    assert _z(keys).shape == (16, bundled.info.head_dim) and _z(query).shape == (1, bundled.info.head_dim)
    assert "(16, 32)" in keys["layout"]["title"]["text"]
    np.testing.assert_allclose(_bars(scores), _bars(dots) * bundled.info.head_dim**-0.5, rtol=1e-5)
    np.testing.assert_allclose(_z(context)[0], _bars(weights) @ _z(values), atol=1e-5)
    assert "1e-05" in at.success[0].value
    assert every["data"][0]["zmax"] == 1


def test_inside_a_head_controls_change_the_computation(bundled):
    at = _app()
    at.switch_page(INSIDE).run()
    control(at, "selectbox", "inside_query").set_value(2).run()
    control(at, "radio", "scaling").set_value("article-scaling").run()
    control(at, "slider", "temperature").set_value(2.0).run()
    control(at, "multiselect", "masked").set_value([0, 15]).run()
    _no_errors(at)
    assert not at.success and "not the model's weights" in at.info[-1].value
    encoding = encode(bundled.tokenizer, state.EXAMPLE_TEXT)
    hidden = steps.layer_inputs(bundled.encoder, encoding)[state.EXAMPLE_LAYER]
    vectors = steps.head_vectors(bundled.encoder, hidden, state.EXAMPLE_LAYER, state.EXAMPLE_HEAD)
    expected = steps.head_steps(*vectors, 2, bundled.info.hidden_size**-0.5, 2.0, [0, 15])
    weights = _bars(_figures(at)[4])
    np.testing.assert_allclose(weights, expected.weights, atol=1e-6)
    assert weights[0] == 0 and weights[15] == 0 and weights.sum() == pytest.approx(1, abs=1e-6)
    assert at.query_params["masked"] == "0,15" and at.query_params["scaling"] == "article-scaling"


def test_inside_a_head_with_every_key_masked_says_why():
    at = _app(masked=",".join(str(i) for i in range(16)))
    at.switch_page(INSIDE).run()
    _no_errors(at)
    assert "every key is masked" in at.info[-1].value.lower()


def test_article_page_shows_each_difference_on_the_same_input(bundled):
    at = _app()
    at.switch_page(ARTICLE).run()
    _no_errors(at)
    encoding = encode(bundled.tokenizer, state.EXAMPLE_TEXT)
    hidden = steps.layer_inputs(bundled.encoder, encoding)[state.EXAMPLE_LAYER]
    layers = article_compare.seeded_layers(bundled.info.hidden_size, bundled.info.num_heads, 0)
    correct, changed, difference = _figures(at)
    h = state.EXAMPLE_HEAD
    np.testing.assert_allclose(_z(correct), article_compare.variant_weights(hidden, *layers)[h], atol=1e-6)
    article = article_compare.variant_weights(hidden, *layers, ["shared", "embed_scaling"])[h]
    np.testing.assert_allclose(_z(changed), article, atol=1e-6)
    np.testing.assert_allclose(_z(difference), _z(changed) - _z(correct), atol=1e-6)
    entropy_correct, entropy_changed, _ = numbers(at)  # the head's, as its map shows them
    assert float(entropy_changed) > float(entropy_correct)  # the article's layer is flatter
    assert control(at, "pills", "article_diffs").value == ["shared", "embed_scaling"]
    control(at, "pills", "article_diffs").set_value([]).run()
    _no_errors(at)
    assert np.abs(_z(_figures(at)[2])).max() == 0  # no difference switched on: the correct layer
    control(at, "pills", "article_diffs").set_value(["unprojected"]).run()
    control(at, "number_input", "article_seed").set_value(4).run()
    layers = article_compare.seeded_layers(bundled.info.hidden_size, bundled.info.num_heads, 4)
    expected = article_compare.variant_weights(hidden, *layers, ["unprojected"])[h]
    np.testing.assert_allclose(_z(_figures(at)[1]), expected, atol=1e-6)
    assert at.query_params["article_diffs"] == "unprojected" and at.query_params["article_seed"] == "4"
    assert len(at.table) == 1 and "seed 4" in map_data(at)["details"]["notes"][0]  # the map's note (in the browser)


@pytest.mark.parametrize("page", [INSIDE, ARTICLE])
def test_downloads_hold_the_shown_matrix_and_charts_save_named_pngs(page, media, bundled):
    at = _app()
    at.switch_page(page).run()
    _no_errors(at)
    buttons = at.get("download_button")
    assert len(buttons) == 3
    csv = downloaded(media, buttons[0])
    shown = _z(_figures(at)[-1] if page == INSIDE else _figures(at)[1])
    frame = pd.read_csv(io.StringIO(csv), index_col=0)
    np.testing.assert_allclose(frame.to_numpy(), shown, rtol=1e-6, atol=1e-8)
    assert list(frame.index) == list(extract(bundled, state.EXAMPLE_TEXT).encoding.labels)
    for chart in at.get("plotly_chart"):
        config = json.loads(chart.proto.config)
        what = "inside" if page == INSIDE else "article"
        assert (
            config["toImageButtonOptions"]
            == export.image_config("all-MiniLM-L6-v2", 3, 1, what)["toImageButtonOptions"]
        )


def test_inside_a_head_runs_no_forward_when_the_head_or_layer_changes(bundled):
    import torch
    from transformers import PreTrainedModel

    from attention_viz.models.encoder import BertEncoder

    at = _app()
    at.switch_page(INSIDE).run()
    _no_errors(at)
    forwards = []

    def count(module, _inputs):
        if isinstance(module, PreTrainedModel | BertEncoder):
            forwards.append(type(module).__name__)

    handle = torch.nn.modules.module.register_module_forward_pre_hook(count)
    try:
        for layer, head in ((2, 7), (2, 8), (5, 0), (0, 11)):
            control(at, "selectbox", "layer").set_value(layer).run()
            control(at, "selectbox", "head").set_value(head).run()
            _no_errors(at)
            assert title(at).startswith(f"Inside layer {layer}, head {head}:")
    finally:
        handle.remove()
    assert forwards == []
    expected = extract(bundled, state.EXAMPLE_TEXT).weights[0, 11]
    np.testing.assert_allclose(_z(_figures(at)[-1]), expected, atol=1e-5)  # the map of the head now chosen


def test_all_heads_titles_grow_with_presentation(bundled):
    """The grid's head and layer titles (H0, L0, ...) stayed 11 px in Presentation."""
    sizes = {}
    for presentation in (False, True):
        at = _open_link(f"?page=all_heads&presentation={int(presentation)}")
        _no_errors(at)
        (grid,) = [f for f in _figures(at) if any(a.get("text") == "H0" for a in f["layout"].get("annotations", []))]
        sizes[presentation] = {a["font"]["size"] for a in grid["layout"]["annotations"]}
    assert sizes == {False: {11}, True: {round(11 * screen.PRESENTATION_SCALE)}}
