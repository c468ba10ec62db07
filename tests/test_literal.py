"""Outside text reaches Markdown only literally: the helper, the translated templates' fields, the app's notes."""

import re

import pytest
from apptools import APP, no_errors
from markup import MARKED_TAGS, MARKUP, one_line, shown
from replay import map_data
from streamlit.testing.v1 import AppTest

from attention_viz.ui.frame import feedback
from attention_viz.ui.text import i18n
from attention_viz.ui.text.safe_text import Markdown, inert, literal

STREAMLIT_READS = re.compile(r"\$|:[\w+-]+:|:[a-z][a-z0-9-]*\[|->|<-|--|>=|<=|~=")  # KaTeX, shortcodes, arrows


def assert_literal(source: str, expected: str) -> None:
    """``source`` shows ``expected`` exactly, makes no element but code, and leaves Streamlit nothing to read."""
    view = shown(source)
    assert view.text == expected
    assert view.tags <= {"p", "code"}, view.tags
    assert ":material/" not in source  # Streamlit rewrites it before parsing, inside code spans too
    assert not STREAMLIT_READS.search(view.outside_code.replace(r"\:", "")), view.outside_code


@pytest.mark.parametrize("text", MARKUP)
def test_literal_shows_markup_as_written(text):
    assert_literal(literal(text), one_line(text))


@pytest.mark.parametrize("text", ["animal", "it was too tired", "猫 没有", "שלום עולם", "0.68", "-1.5e-06", "30,522"])
def test_words_and_numbers_read_as_before(text):
    assert literal(text) == text and inert(text)


@pytest.mark.parametrize("text", ["`", "``x``", "` x `", "  two  ", ":material/a:material/b", "x:material/"])
def test_backticks_spaces_and_icons_at_the_edges(text):
    assert_literal(literal(text), text)


def test_literal_is_idempotent_and_markdown_escapes_what_it_is_given():
    once = literal("**b**")
    assert literal(once) is once
    joined = Markdown(", ").join(["**a**", "b"])
    assert isinstance(joined, Markdown) and shown(joined).text == "**a**, b" and "strong" not in shown(joined).tags
    added = Markdown("**Note.** ") + "[x](https://example.invalid)"
    assert "strong" in shown(added).tags and "a" not in shown(added).tags  # the project's bold stays
    assert isinstance("$x$ " + Markdown("y"), Markdown) and shown("$x$ " + Markdown("y")).text == "$x$ y"


@pytest.mark.parametrize("text", MARKUP)
def test_translated_templates_escape_their_fields_not_themselves(text):
    step = i18n.t("inside.step_query", token=text, layer=3, head=1, d=32)
    view = shown(step)
    assert "strong" in view.tags  # the template's own bold
    assert view.tags - {"p", "code", "strong"} == set()
    assert view.text.startswith("The query. The layer's input vector of \"" + one_line(text) + '"')
    upload = i18n.t("views.upload_not_utf8", name=text + ".txt")
    assert shown(upload).text == f"{one_line(text)}.txt is not UTF-8 text: save it as UTF-8, one text per line."
    assert not shown(upload).tags & MARKED_TAGS


def test_numbers_keep_their_format_and_markdown_fields_pass():
    assert i18n.t("compare.bits", value="0.123") == "0.123 bits"
    assert i18n.t("stats.overview_title", statistic=i18n.t("stats.col_cls")) == "Every head: share on [CLS]"


def test_a_model_that_did_not_load_is_named_literally():
    from attention_viz.models.loading import ModelLoadError

    name = "[spoof](https://example.invalid) $x$"
    error = ModelLoadError("no", "not_bert", name=name, model_type="**gpt**", families="bert, roberta")
    view = shown(feedback.model_message(error, "all-MiniLM-L6-v2"))
    assert name in view.text and "**gpt**" in view.text and "bert, roberta" in view.text
    assert not view.tags & MARKED_TAGS


def _link_warning(query: dict[str, str]) -> str:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    no_errors(at)
    (warning,) = [w.value for w in at.warning if "could not be read" in w.value]
    return warning


def test_link_parameter_names_and_values_are_named_literally():
    names = ["[Session expired: log in again](https://example.invalid/login)", "**IMPORTANT**", r"$\huge{BIG}$"]
    names.append("![x](http://127.0.0.1:9/p.png)")
    warning = _link_warning({**dict.fromkeys(names, "1"), "layer": "[x](https://example.invalid)"})
    view = shown(warning)
    assert not view.tags & MARKED_TAGS and "$" not in view.outside_code
    for name in [*names, "layer"]:
        assert name in view.text


def test_a_backslash_token_stays_in_the_heading_and_the_steps():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"page": "inside", "text": "a \\ b", "inside_query": "2"})
    at.run()
    no_errors(at)
    data = map_data(at)  # the map writes the title as text, from these parts, for the head it shows
    parts = data["steps"]["title"]["text"]
    written = "".join(part if isinstance(part, str) else str(data["view"][part[0]]) for part in parts)
    assert written == 'Inside layer 3, head 1: where "\\" looks'
    steps = [shown(m.value).text for m in at.markdown if m.value.startswith("**")]
    assert 'The layer\'s input vector of "\\" times' in steps[0]
    assert 'The query of "\\" times each key' in steps[2]
