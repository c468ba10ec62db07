"""A random walk through the app: long random sequences of what a lecturer and a class click, on every page.

A hypothesis state machine drives the app through AppTest: language switches, examples, text and pair
edits (empty, Chinese, emoji, very long), a switch to a tiny BERT and back, a token in focus, every view
toggle, layer and head steps (the buttons, the boxes and the map's arrow keys), page switches and a shared
link opened in a new session. Every run sends back the labels a browser would still show (tests/replay.py).
After each step:

- no exception, and neither of the app's own "went wrong" messages;
- the page's title names the chosen layer and head;
- the map drawn equals the core's weights for that head (Compare: the view and window shown; All heads:
  the head's thumbnail; Inside a head: every query at once, with the model's own settings).

The short form runs with the tests (a few dozen steps). The long form runs on demand::

    ATTENTION_VIZ_WALK_STEPS=2000 .venv/bin/python -m pytest tests/test_random_walk.py --hypothesis-seed=N

and writes its step count and seed to ``test-artifacts/random_walk.json``.
"""

from __future__ import annotations

import functools
import json
import os
import time

import numpy as np
import pytest
from apptools import APP, chart, figures, title, z
from browser import ARTIFACTS
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from replay import browser_report, control, element_state, replay, shown_labels
from streamlit.testing.v1 import AppTest

from attention_viz import analysis, links
from attention_viz import figures as core_figures
from attention_viz.analysis import presets
from attention_viz.extraction import extract
from attention_viz.models.loading import BUNDLED_MODEL
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.server.cache import model as loaded_model
from attention_viz.ui.text import i18n
from attention_viz.ui.view import state

MAP_KEYS = {"compare": attention_map.COMPARE_KEY, "inside": attention_map.INSIDE_KEY}  # pages with a map element
PAGES = ("compare", "all_heads", "head_stats", "head_similarity", "rollout", "inside", "article")
PAGE_FILE = "attention_viz/ui/pages/{}.py"
LONG = "The lighthouse keeper retired after forty years, and the village gathered to thank him. " * 30
# (text, whether the app can show it)
TEXTS = (
    (state.EXAMPLE_TEXT, True),
    ("The cat sat on the mat.", True),
    ("小猫没有吃鱼，因为它不饿。", True),
    ("I ❤️ my 🐱, she is 😺!", True),
    ("**bold** [a link](http://x.y) $x^2$ `code`", True),
    (LONG, True),  # past the model's 512 positions: cut, with a message
    ("", False),
    ("\u200b \ufeff", False),  # only invisible characters
    ("word " * 1500, False),  # past the character limit
)
PAIRS = ("", "It slept.", "它睡了。", "🐱")
STEPS = int(os.environ.get("ATTENTION_VIZ_WALK_STEPS", "0"))  # 0: the short form
STEPS_PER_WALK = 50 if STEPS else 20
FAILED = {
    message
    for language in i18n.LANGUAGES
    for message in (i18n.table(language)["app.page_failed"], i18n.table(language)["app.callback_failed"])
}


@functools.lru_cache(maxsize=64)
def _result(model: str, text: str, pair: str, source: str = "pretrained", variant: str = "exact", seed: int = 0):
    return extract(loaded_model(model), text, pair or None, source, variant, seed)


class LectureWalk(RuleBasedStateMachine):
    """One session: the app, and what the walk has chosen (layer, head, text, page, ...)."""

    tiny_model: str = ""  # set by the test: a tiny BERT's folder
    steps = 0

    @initialize()
    def open_app(self):
        self.at = AppTest.from_file(APP, default_timeout=300).run()
        self.previous = {}
        self.page = "compare"
        self.model = BUNDLED_MODEL
        self.layer, self.head = state.EXAMPLE_LAYER, state.EXAMPLE_HEAD
        self.text, self.pair = state.EXAMPLE_TEXT, ""
        self.text_valid = True
        self._check()

    # --- the walk's moves ------------------------------------------------------------------------------

    def _run(self) -> None:
        """Run as a browser does: widgets relabelled under it still send the labels it showed before."""
        shown = shown_labels(self.at)
        replay(self.at, self.previous)
        self.previous = shown
        LectureWalk.steps += 1
        self._check()

    def _shape(self) -> tuple[int, int]:
        info = loaded_model(self.model).info
        return info.num_layers, info.num_heads

    def _clamp(self) -> None:
        layers, heads = self._shape()
        self.layer, self.head = min(self.layer, layers - 1), min(self.head, heads - 1)

    def _has(self, kind: str, key: str) -> bool:
        return any(w.key == f"_{key}" or (w.key or "").startswith(f"_{key}~") for w in self.at.get(kind))

    @rule(language=st.sampled_from(sorted(i18n.LANGUAGES)))
    def switch_language(self, language):
        self.at.radio(key="lang").set_value(language)
        self._run()

    @rule(preset=st.sampled_from(presets.load()))
    def choose_example(self, preset):
        control(self.at, "selectbox", "example").set_value(preset.id)
        self.text, self.pair, self.text_valid = preset.text, preset.pair, True
        self.layer, self.head = preset.layer, preset.head
        self._clamp()
        self._run()

    @rule(entry=st.sampled_from(TEXTS))
    def type_text(self, entry):
        self.text, self.text_valid = entry
        self.at.text_area(key="text").input(self.text)
        self._run()

    @rule(pair=st.sampled_from(PAIRS))
    def type_pair(self, pair):
        self.pair = pair
        self.at.text_input(key="pair").input(pair)
        self._run()

    @rule(tiny=st.booleans())
    def switch_model(self, tiny):
        self.model = self.tiny_model if tiny else BUNDLED_MODEL
        self.at.session_state["model"] = self.model  # AppTest cannot type a new option into the box
        self._clamp()
        self._run()

    @rule(unit=st.sampled_from(["layer", "head"]), delta=st.sampled_from([-1, 1]))
    def step(self, unit, delta):
        key = f"step_{unit}_{'next' if delta > 0 else 'previous'}"
        if not any(button.key == key for button in self.at.get("button")):
            return  # this page has no such stepper
        self.at.button(key=key).click()
        self.layer, self.head = state.stepped(self.layer, self.head, unit, delta, self._shape())
        self._run()

    @precondition(lambda self: self.page in MAP_KEYS and self.text_valid)
    @rule(keys=st.lists(st.sampled_from(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown"]), min_size=1, max_size=12))
    def press_map_keys(self, keys):
        """Arrow keys on the map of Compare or Inside a head: the element steps in the browser and reports
        the whole view once (fast presses merged), as ``attention_viz.ui.attention_map.element`` documents."""
        moves = {
            "ArrowLeft": ("head", -1),
            "ArrowRight": ("head", 1),
            "ArrowUp": ("layer", -1),
            "ArrowDown": ("layer", 1),
        }
        for key in keys:
            self.layer, self.head = state.stepped(self.layer, self.head, *moves[key], self._shape())
        if self.page == "compare":  # Compare's map tells the server nothing now: the next run takes the view
            browser_report(self.at, layer=self.layer, head=self.head)
            return
        s = self.at.session_state
        view = {"layer": self.layer, "head": self.head, "focus": s["focus"]}
        view |= {"query_start": s["query_start"], "key_start": s["key_start"], "seq": len(keys)}
        shown = shown_labels(self.at)
        replay(self.at, self.previous, (element_state(self.at, MAP_KEYS[self.page], {"view": view}),))
        self.previous = shown
        LectureWalk.steps += 1
        self._check()

    @precondition(lambda self: self.page == "compare" and self.text_valid)
    @rule(data=st.data())
    def use_the_maps_controls(self, data):
        """Compare's map: its Layer and Head boxes, the map switch, the token in focus (all in the browser:
        nothing runs; the next run takes the view)."""
        layers, heads = self._shape()
        self.layer = data.draw(st.integers(0, layers - 1), label="layer")
        self.head = data.draw(st.integers(0, heads - 1), label="head")
        focus = data.draw(st.integers(-1, len(control(self.at, "selectbox", "focus").options) - 2), label="focus")
        kind = data.draw(st.sampled_from(state.MAP_VIEWS), label="map")
        browser_report(self.at, layer=self.layer, head=self.head, focus=focus, map_view=kind)

    @precondition(lambda self: self._has("selectbox", "head"))
    @rule(data=st.data())
    def choose_head(self, data):
        layers, heads = self._shape()
        self.layer = data.draw(st.integers(0, layers - 1), label="layer")
        self.head = data.draw(st.integers(0, heads - 1), label="head")
        if self._has("selectbox", "layer"):
            control(self.at, "selectbox", "layer").set_value(self.layer)
        else:
            self.at.session_state["layer"] = self.layer
        control(self.at, "selectbox", "head").set_value(self.head)
        self._run()

    @rule(page=st.sampled_from(PAGES))
    def switch_page(self, page):
        self.page = page
        self.at.switch_page(PAGE_FILE.format(page))
        self._run()

    @precondition(lambda self: self._has("selectbox", "focus"))
    @rule(data=st.data())
    def focus_a_token(self, data):
        box = control(self.at, "selectbox", "focus")
        control(self.at, "selectbox", "focus").set_value(data.draw(st.integers(-1, len(box.options) - 2)))
        self._run()

    @rule(name=st.sampled_from(["word_level", "hide_special"]), on=st.booleans())
    def view_toggle(self, name, on):
        if self._has("toggle", name):
            control(self.at, "toggle", name).set_value(on)
            self._run()

    @rule(name=st.sampled_from(["presentation", "fit_range"]), on=st.booleans())
    def sidebar_toggle(self, name, on):
        self.at.toggle(key=name).set_value(on)
        self._run()

    @rule(
        choice=st.sampled_from(
            [("radio", "map_view", v) for v in state.MAP_VIEWS]
            + [("selectbox", "variant", v) for v in state.CHOICES["variant"]]
            + [("selectbox", "block", v) for v in state.CHOICES["block"]]
            + [("radio", "rollout_map", v) for v in state.ROLLOUT_MAPS]
            + [("radio", "scaling", v) for v in state.CHOICES["scaling"]]
        )
    )
    def choose_view(self, choice):
        kind, key, value = choice
        if self._has(kind, key):
            control(self.at, kind, key).set_value(value)
            self._run()

    @precondition(lambda self: self._has("slider", "temperature"))
    @rule(temperature=st.sampled_from([0.1, 0.5, 1.0, 2.0, 5.0]), masked=st.lists(st.integers(0, 5), max_size=3))
    def inside_settings(self, temperature, masked):
        control(self.at, "slider", "temperature").set_value(temperature)
        options = len(control(self.at, "multiselect", "masked").options)
        control(self.at, "multiselect", "masked").set_value(sorted({m for m in masked if m < options}))
        self._run()

    @precondition(lambda self: self._has("pills", "article_diffs"))
    @rule(diffs=st.lists(st.sampled_from(["shared", "embed_scaling", "unprojected"]), unique=True))
    def article_switches(self, diffs):
        control(self.at, "pills", "article_diffs").set_value(diffs)
        self._run()

    @rule()
    def open_the_shared_link(self):
        """A student opens the link of this view: the same page, head, text and settings."""
        link = links.query_string(dict(self.at.query_params))
        opened = AppTest.from_file(APP, default_timeout=300)
        for key, value in links.parse_query(link).items():
            opened.query_params[key] = value
        opened.run()
        if len(self.text) > links.MAX_TEXT:  # a link holds the beginning of a long text
            self.text, self.text_valid = self.text[: links.MAX_TEXT], bool(self.text.strip())
        for key in state.DEFAULTS:
            expected = self.text if key == "text" else self.at.session_state[key]
            assert opened.session_state[key] == expected, key
        self.at, self.previous = opened, {}
        LectureWalk.steps += 1
        self._check()

    # --- after every step --------------------------------------------------------------------------------

    def _check(self) -> None:
        at = self.at
        assert not at.exception, [e.value for e in at.exception]
        assert not FAILED & {w.value for w in at.warning}, [w.value for w in at.warning]
        assert (at.session_state["layer"], at.session_state["head"]) == (self.layer, self.head)
        table = i18n.table(at.session_state["lang"])
        if self.page == "compare":
            assert title(at) == table["compare.title"].format(layer=self.layer, head=self.head), title(at)
        elif self.page == "article" and self.text_valid:  # the first map's title, which follows its steps
            assert title(at) == table["article.title"].format(layer=self.layer, head=self.head), title(at)
        elif self.page == "rollout" and self.text_valid:
            assert title(at) == table["rollout.title"].format(layer=self.layer), title(at)
        elif self.page == "inside" and self.text_valid:
            assert title(at).startswith(  # the map's title, which follows its steps
                table["inside.title"].split("{query}")[0].format(layer=self.layer, head=self.head)
            )
        if not self.text_valid:
            assert at.info, "an input the app cannot show gets a message"
            return
        getattr(self, f"_map_on_{self.page}", lambda: None)()

    def _view(self, source: str = "pretrained"):
        s = self.at.session_state
        variant, seed = (
            (s["variant"], int(s["seed"]) if s["variant"] == "random" else 0) if source == "scratch" else ("exact", 0)
        )
        result = _result(self.model, self.text, self.pair, source, variant, seed)
        raw = result.weights[self.layer, self.head]
        options = analysis.ViewOptions(
            s["word_level"], s["hide_special"], s["block"] if result.encoding.is_pair else "all"
        )
        if options == analysis.ViewOptions():
            return raw
        return analysis.apply_view(raw, result.encoding, options).matrix

    def _map_on_compare(self) -> None:
        s = self.at.session_state
        pretrained, scratch = self._view(), self._view("scratch")
        shown = {"pretrained": pretrained, "scratch": scratch, "difference": scratch - pretrained}[s["map_view"]]
        size = core_figures.map_style(s["presentation"], max(pretrained.shape)).window
        rows = core_figures.window_slice(s["query_start"], pretrained.shape[0], size)
        columns = core_figures.window_slice(s["key_start"], pretrained.shape[1], size)
        np.testing.assert_allclose(z(chart(self.at, "map")), shown[rows, columns], atol=1e-6)

    def _map_on_all_heads(self) -> None:
        weights = _result(self.model, self.text, self.pair).weights
        if weights.shape[-1] <= core_figures.THUMBNAIL_SIZE:
            (grid,) = figures(self.at)
            heads = weights.shape[1]
            np.testing.assert_allclose(
                z(grid, self.layer * heads + self.head), weights[self.layer, self.head], atol=1e-6
            )

    def _map_on_inside(self) -> None:
        s = self.at.session_state
        if s["scaling"] == "exact" and s["temperature"] == 1.0 and not s["masked"]:
            every = figures(self.at)[-1]
            expected = _result(self.model, self.text, self.pair).weights[self.layer, self.head]
            np.testing.assert_allclose(z(every), expected, atol=1e-5)


@pytest.fixture
def walk(tiny_model_dir):
    LectureWalk.tiny_model = tiny_model_dir
    LectureWalk.steps = 0
    started = time.monotonic()
    yield LectureWalk
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "random_walk.json").write_text(
        json.dumps(
            {"steps": LectureWalk.steps, "seconds": round(time.monotonic() - started, 1), "long_form": bool(STEPS)}
        )
    )


def test_random_walk_through_every_page(walk, request):
    from hypothesis.stateful import run_state_machine_as_test

    # a walk takes fewer steps than it may (hypothesis ends some early): half as many walks again as needed
    walks = max(1, 3 * STEPS // (2 * STEPS_PER_WALK)) if STEPS else 2
    run_state_machine_as_test(
        walk,
        settings=settings(
            max_examples=walks,
            stateful_step_count=STEPS_PER_WALK,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            print_blob=True,
        ),
    )
    assert walk.steps >= (STEPS if STEPS else 2)
