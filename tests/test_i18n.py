"""The two language tables: the same ids, the same fields, no empty text."""

import pytest

from attention_viz.ui.text import i18n


def test_english_and_chinese_have_the_same_ids_and_fields():
    english, chinese = i18n.table("en"), i18n.table("zh")
    assert english.keys() == chinese.keys()
    for key in english:
        assert i18n.fields(english[key]) == i18n.fields(chinese[key]), key
        assert english[key].strip() and chinese[key].strip(), key


def test_unknown_language_is_refused():
    with pytest.raises(KeyError, match="unknown language"):
        i18n.table("xx")
