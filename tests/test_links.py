"""The view in a link: state → query string → state, validation of what a link carries."""

from attention_viz.ui import links, state

RULES = links.Rules(
    defaults={"text": "a", "pair": "", "layer": 3, "fit_range": False, "lang": "en", "temperature": 1.0},
    choices={"lang": ("en", "zh")},
    ranges={"layer": (0, 1023), "temperature": (0.05, 20.0)},
    max_text=50,
)


def test_round_trip_with_chinese_text_and_a_pair():
    view = {"text": "动物没有过马路，因为它太累了。", "pair": "它睡了 & ok=1?#", "layer": 4, "fit_range": True}
    view |= {"lang": "zh", "temperature": 0.25}
    params, notes = links.to_query(view, RULES)
    query = links.query_string(params)
    assert "%E5%8A%A8" in query and "#" not in query and "&ok" not in query  # percent-encoded
    values, notes_back = links.from_query(links.parse_query("?" + query), RULES)
    assert values == view and notes == notes_back == []


def test_every_setting_is_written_and_missing_ones_take_their_default():
    params, _ = links.to_query({"layer": 0}, RULES)
    assert list(params) == list(RULES.defaults)
    assert params == {"text": "a", "pair": "", "layer": "0", "fit_range": "0", "lang": "en", "temperature": "1.0"}


def test_malformed_values_are_dropped_with_notes():
    query = "layer=abc&fit_range=maybe&lang=fr&temperature=nan&bogus=1&text=fine"
    values, notes = links.from_query(links.parse_query(query), RULES)
    assert values == {"text": "fine"}
    assert {(n.kind, n.key) for n in notes} == {
        ("invalid", "layer"),
        ("invalid", "fit_range"),
        ("invalid", "lang"),
        ("invalid", "temperature"),
        ("unknown", "bogus"),
    }


def test_out_of_range_integers_are_dropped():
    values, notes = links.from_query({"layer": "-1"}, RULES)
    assert values == {} and notes == [links.Note("invalid", "layer")]
    values, notes = links.from_query({"layer": "99999"}, RULES)
    assert values == {} and notes == [links.Note("invalid", "layer")]
    assert links.from_query({"layer": " 7 "}, RULES) == ({"layer": 7}, [])


def test_long_text_is_cut_both_ways_with_a_note():
    long = "长" * 80
    params, notes = links.to_query({"text": long}, RULES)
    assert params["text"] == "长" * 50 and notes == [links.Note("cut", "text")]
    values, notes = links.from_query({"text": long}, RULES)
    assert values["text"] == "长" * 50 and notes == [links.Note("cut", "text")]


def test_the_apps_rules_carry_every_default_key():
    rules = state.link_rules()
    assert set(rules.defaults) == set(state.DEFAULTS) | {state.PAGE_KEY}
    view = dict(state.DEFAULTS, text="它", pair="B句", layer=5, head=11, lang="zh")
    params, _ = links.to_query(view, rules)
    values, notes = links.from_query(links.parse_query(links.query_string(params)), rules)
    assert notes == [] and all(values[k] == v for k, v in view.items())


def test_float_range_and_integer_text_for_a_float():
    assert links.from_query({"temperature": "2"}, RULES) == ({"temperature": 2.0}, [])
    assert links.from_query({"temperature": "0"}, RULES) == ({}, [links.Note("invalid", "temperature")])
    assert links.from_query({"fit_range": "TRUE"}, RULES) == ({"fit_range": True}, [])


def test_settings_without_a_typed_default_round_trip_or_stay_out():
    rules = links.Rules(defaults={"focus": None, "shape": (6, 12), "layer": 0})
    params, _ = links.to_query({"focus": 7, "shape": (1, 2)}, rules)
    assert params == {"focus": "7", "layer": "0"}  # a tuple is not carried
    assert links.from_query(params, rules) == ({"focus": 7, "layer": 0}, [])
    assert links.from_query({"focus": ""}, rules) == ({"focus": None}, [])
    assert links.from_query({"shape": "(1, 2)"}, rules) == ({}, [links.Note("unknown", "shape")])
