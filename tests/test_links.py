"""The view in a link: state → query string → state, validation of what a link carries, a link's length
within what proxies take (the project's nginx included)."""

import dataclasses
import http.client
import http.server
import re
from pathlib import Path
from urllib.parse import quote_plus, urlsplit

import pytest
from nginx_front import nginx_before

from attention_viz import links
from attention_viz.ui.view import state, url_state
from deploy import replicas

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


# One character as a person sees it, in each script: its code points stay together in a cut link.
SCRIPTS = {
    "latin": "a",
    "latin accented": "é",  # one code point, 6 characters encoded
    "cjk": "中",  # 9 characters encoded
    "emoji": "😀",  # 12
    "emoji sequence": "👩🏽‍💻",  # woman, skin tone, zero-width joiner, laptop: 42
    "arabic": "ب",
    "combining marks": "e\u0301\u0323",  # e, acute, dot below: 21
    "space": " ",  # "+"
}
ROOTS = ("http://localhost:8501", "https://teaching.dept.example.edu/attviz")
ROOMY = dataclasses.replace(state.link_rules(), max_text=10**6)  # the link's length alone cuts


def _room_for_text(rules: links.Rules, view: dict, root: str) -> int:
    """Characters of an encoded ``text`` that fit a link of ``view`` at ``root`` (the other texts as they are)."""
    params, _ = links.to_query(dict(view, text=""), rules)
    return url_state.query_room(root) - len(links.query_string(params))


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_link_of_any_script_near_the_cap_stays_within_it_and_round_trips(script, root):
    unit = SCRIPTS[script]
    cost = len(quote_plus(unit))
    view = dict(state.DEFAULTS, page="head_similarity")
    fit = _room_for_text(ROOMY, view, root) // cost  # the most whole units that fit
    for count in (fit - 1, fit, fit + 1, fit + 7):
        text = unit * count
        params, notes = links.to_query(dict(view, text=text), ROOMY, url_state.query_room(root))
        query = links.query_string(params)
        link = f"{root}/?{query}"
        address = f"{root}/head_similarity?{query}"  # the browser's address on the page with the longest name
        assert len(link) <= links.MAX_LINK and len(address) <= links.MAX_LINK, (count, len(link), len(address))
        values, back = links.from_query(links.parse_query(urlsplit(link).query), ROOMY)
        assert back == [] and values["text"] == params["text"]  # what the link holds comes back exactly
        kept = values["text"]
        assert kept == unit * (len(kept) // len(unit))  # whole characters: no mark or joiner left behind
        if count <= fit:
            assert kept == text and notes == []
        else:
            assert kept == unit * fit and notes == [links.Note("cut", "text")]  # the most that fits


def test_the_texts_share_the_room_and_a_short_one_is_kept_whole():
    view = dict(state.DEFAULTS, text="中" * 900, pair="它" * 900, pairs_a="short", page="compare")
    room = url_state.query_room(ROOTS[0])
    params, notes = links.to_query(view, ROOMY, room)
    assert len(links.query_string(params)) <= room
    assert params["pairs_a"] == "short" and params["pairs_b"] == state.DEFAULTS["pairs_b"]
    assert params["text"] == "中" * len(params["text"]) and params["pair"] == "它" * len(params["pair"])
    assert abs(len(params["text"]) - len(params["pair"])) <= 1 and len(params["text"]) > 300  # half each
    assert notes == [links.Note("cut", "text"), links.Note("cut", "pair")]
    assert params["model"] == state.DEFAULTS["model"] and params["lang"] == "en"  # not free text: whole


def test_a_thousand_chinese_characters_make_a_link_within_the_cap_with_a_note():
    """1000 × 中 is within the app's text limit but made a 9,866-character link, which nginx refused (414)."""
    view = dict(state.DEFAULTS, text="中" * 1000, page="compare")
    params, notes = links.to_query(view, state.link_rules(), url_state.query_room(ROOTS[1]))
    link = f"{ROOTS[1]}/?{links.query_string(params)}"
    assert len(link) <= links.MAX_LINK and notes == [links.Note("cut", "text")]
    assert params["text"] == "中" * (_room_for_text(state.link_rules(), view, ROOTS[1]) // 9)  # the most that fits
    assert len(params["text"]) > 750  # the other settings take under 1000 characters of the 8000
    assert links.to_query(dict(view, text="中" * 700), state.link_rules(), url_state.query_room(ROOTS[1]))[1] == []


def test_every_page_name_fits_the_room_left_for_it():
    names = [path.stem for path in (Path(state.__file__).parents[1] / "pages").glob("*.py")]
    assert names and max(len(f"/{name}?") for name in names) <= url_state.PAGE_PATH_ROOM


def _nginx_buffer(config: str) -> int:
    """The size of one of the server's large header buffers in ``config``, in bytes (nginx's default 8k if
    it sets none)."""
    found = re.findall(r"^\s*large_client_header_buffers\s+(\d+)\s+(\d+)([kKmM]?)\s*;", config, re.M)
    assert len(found) <= 1, found
    if not found:
        return 8 * 1024
    _, size, unit = found[0]
    return int(size) * {"": 1, "k": 1024, "m": 1024**2}[unit.lower()]


def test_the_projects_nginx_takes_the_longest_link_the_app_makes(tmp_path):
    config = replicas.nginx_config(tmp_path, "127.0.0.1:8600", ["127.0.0.1:8601"])
    request_line = len("GET ") + links.MAX_LINK + len(" HTTP/1.1\r\n")  # the path and query: under the cap
    referer = len("Referer: ") + links.MAX_LINK + len("\r\n")  # the browser repeats the page's address
    assert _nginx_buffer(config) >= max(request_line, referer) + 4096  # with room for a long base path


def _longest_link(root: str) -> str:
    """The longest address the app makes for a view: every free text as long as it may be, 4 bytes to a
    character (UTF-8's most, 12 characters encoded), on the page with the longest name."""
    view = dict(state.DEFAULTS, text="😀" * 1000, pair="中" * 1000, pairs_a="😀" * 1000, pairs_b="中" * 1000)
    params, _ = links.to_query(dict(view, page="head_similarity"), state.link_rules(), url_state.query_room(root))
    return f"{root}/head_similarity?{links.query_string(params)}"


def test_a_real_nginx_passes_the_longest_link_on(tmp_path):
    """nginx with the project's configuration in front of a stand-in replica: the longest address the app
    makes, and a Referer header that repeats it, reach the replica (no 414 or 400)."""
    seen = []

    class Replica(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    with nginx_before(Replica) as port:
        root = f"http://127.0.0.1:{port}"
        link = _longest_link(root)
        assert len(link) <= links.MAX_LINK and len(link) > links.MAX_LINK - 60
        target = link.removeprefix(root)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", target, headers={"Referer": link})
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b"ok")
        assert seen == [target]
        connection.close()
