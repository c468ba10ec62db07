"""A browser's memory in AppTest: the labels a widget showed, sent back on a later run.

Streamlit 1.67 sends a radio's, selectbox's or multiselect's value between browser and server as the
shown label (``format_func(option)``), not as an index. A browser keeps the label it showed until the
server tells it otherwise, so after a change of language, or of the labels themselves (another text
in the focus box), the next run can carry a label of the earlier run. AppTest always serializes with
the newest labels; :func:`replay` makes a run carry the earlier ones, as a browser can.
"""

from __future__ import annotations

import json

from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import InitialValue, Widget

from attention_viz.ui.attention_map import element
from attention_viz.ui.view import browser_view
from attention_viz.ui.view.view_schema import stepped

LABEL_FIELDS = {"string_value", "string_array_value"}


def _widget_states(at: AppTest) -> WidgetStates:
    """What the widgets send, as ``ElementTree.get_widget_states`` (this app has no forms) does, except a
    widget whose value was set through session state to something not among its options yet (a model
    name typed into the Model box, which AppTest cannot type): its session state gives the value."""
    states = WidgetStates()
    for node in at._tree:
        if isinstance(node, Widget):
            try:
                states.widgets.append(node._widget_state)
            except ValueError:
                continue
    return states


def _options(at: AppTest) -> dict[str, tuple[str, ...]]:
    return {node.id: tuple(getattr(node.proto, "options", ())) for node in at._tree if isinstance(node, Widget)}


def shown_labels(at: AppTest) -> dict[str, tuple[WidgetState, tuple[str, ...]]]:
    """What every option widget of the last run shows: its label (or labels) and its options, by widget id."""
    options = _options(at)
    return {
        state.id: (state, options.get(state.id, ()))
        for state in _widget_states(at).widgets
        if state.WhichOneof("value") in LABEL_FIELDS
    }


def replay(at: AppTest, shown: dict[str, tuple[WidgetState, tuple[str, ...]]], extra: tuple = ()) -> AppTest:
    """Run again, each widget whose labels changed since ``shown`` sending the label it showed then.

    That is what a browser does with a widget whose options were relabelled under it (a new language,
    another text in the focus box). Widgets the test has just set (``set_value``) send their new
    value, as a click does; ``extra`` are more widget states to send (:func:`element_state`).
    """
    states = _widget_states(at)
    options = _options(at)
    just_set = {node.id for node in at._tree if isinstance(node, Widget) and not isinstance(node._value, InitialValue)}
    for state in states.widgets:
        if state.id in shown and state.id not in just_set and shown[state.id][1] != options.get(state.id):
            state.CopyFrom(shown[state.id][0])
    states.widgets.extend(extra)  # values AppTest has no widget for (a browser element's state)
    return at._run(states)


def element_state(at: AppTest, key: str, value: dict) -> WidgetState:
    """The state a browser element (custom components v2) with ``key`` sends: ``value`` as its JSON value,
    as its ``setStateValue`` calls leave it (AppTest keeps such an element as an unknown element)."""
    (element,) = [
        node
        for node in at._tree
        if getattr(node, "type", None) == "bidi_component" and node.proto.id.endswith(f"-{key}")
    ]
    state = WidgetState()
    state.id = element.proto.id
    state.json_value = json.dumps(value)
    return state


def control(at: AppTest, kind: str, key: str):
    """The page widget bound to the view setting ``key`` (its widget key is ``_key``, perhaps with a suffix);
    on a page whose map has its own controls in the browser (Compare, the article's layer, Rollout & norms), a
    :class:`MapControl` for the map's settings."""
    found = [w for w in at.get(kind) if w.key == f"_{key}" or (w.key or "").startswith(f"_{key}~")]
    if not found and _map_controls(at, key):
        return MapControl(at, key)
    assert len(found) == 1, (key, [w.key for w in at.get(kind)])
    return found[0]


# --- A map with its own controls (Compare, the article's layer, Rollout & norms): they are the browser's ------

# the map's data that holds each control (a view setting): the Layer box is every such map's
CONTROL_DATA = {"layer": "layer", "head": "head", "focus": "focus_labels", "map_view": "kinds", "rollout_map": "kinds"}


def map_data(at: AppTest) -> dict | None:
    """The data of the page's map element that draws its own controls, or ``None`` on a page without one."""
    for node in at._tree:
        if getattr(node, "type", None) == "bidi_component" and node.proto.component_name == element.COMPONENT:
            data = json.loads(node.proto.json)
            if "controls" in data:
                return data
    return None


def _map_controls(at: AppTest, key: str) -> bool:
    """Whether the page's map draws the control of the view setting ``key``."""
    data = map_data(at)
    if data is None:
        return False
    if key in CONTROL_DATA:
        return CONTROL_DATA[key] in data["controls"]
    return key in data["told"]  # the window (Compare's: the map pans it)


def map_view(at: AppTest) -> dict:
    """The view Compare's map shows after the last run (its data's view)."""
    return dict(map_data(at)["view"])


def map_title(at: AppTest) -> str:
    """The line above Compare's map, as ``attention_map.js`` writes it (``headline``): the head, then the map's
    title."""
    data, view = map_data(at), map_view(at)
    head = data["texts"]["head"].replace("{layer}", str(view["layer"])).replace("{head}", str(view["head"]))
    return head + " · " + data["kinds"][view["map_view"]]["title"].replace("{layer}", str(view["layer"]))


def browser_report(at: AppTest, **changes) -> None:
    """What a person's moves on Compare's map leave for the server (``layer``, ``head``, ``focus``,
    ``query_start``, ``key_start``, ``map_view``): nothing at once; the view they end on goes into the hidden
    ``browser_view`` box, which the next run carries, whatever causes it."""
    box = at.text_input(key=browser_view.KEY)
    adopted = at.session_state["_browser_view_seq"] if "_browser_view_seq" in at.session_state else 0  # noqa: SIM401
    pending = browser_view.reported(box.value)  # moves made since the last run, not yet told
    told = map_data(at)["told"]  # what the box carries: {session key: the map's view field}
    shown = {name: map_view(at)[field] for name, field in told.items()}
    seq, base = (pending[0], pending[1]) if pending and pending[0] > adopted else (adopted, shown)
    base = {name: value for name, value in base.items() if name in told}
    box.set_value(json.dumps({"seq": seq + 1, "view": {**base, **changes}}))


def browser_step(at: AppTest, **changes) -> AppTest:
    """:func:`browser_report`, then a run (as a new sentence or a page switch would run)."""
    browser_report(at, **changes)
    return at.run()


def browser_steps(at: AppTest, unit: str, delta: int) -> AppTest:
    """A step of the map's ‹ › buttons (or the arrow keys) by ``delta`` of ``unit``, as the browser wraps it."""
    view = map_view(at)
    layers, heads = map_data(at)["shape"]
    layer, head = stepped(view["layer"], view["head"], unit, delta, (layers, heads))
    if "head" not in map_data(at)["told"]:  # one map per layer (Rollout & norms): the session's head stays
        return browser_step(at, layer=layer)
    return browser_step(at, layer=layer, head=head)


class MapControl:
    """One of Compare's map controls as a test drives it: ``value``, ``set_value(...).run()``, ``format_func``
    and ``options`` (the focus box's), like an AppTest widget."""

    disabled = False  # the map's controls work whenever the map is drawn

    def __init__(self, at: AppTest, key: str) -> None:
        self.at, self.key, self._value = at, key, None

    @property
    def label(self) -> str:
        controls = map_data(self.at)["controls"]
        return controls["map" if self.key in ("map_view", "rollout_map") else self.key]

    @property
    def value(self):
        return map_view(self.at)[map_data(self.at)["told"].get(self.key, self.key)]

    def set_value(self, value) -> MapControl:
        browser_report(self.at, **{self.key: value})
        return self

    def run(self) -> AppTest:
        return self.at.run()

    @property
    def options(self) -> list[str]:
        """The shown options, as an AppTest option widget gives them."""
        data = map_data(self.at)
        if self.key == "focus":
            values = [-1, *range(len(data["controls"]["focus_labels"]))]
        elif self.key in ("map_view", "rollout_map"):
            values = list(data["controls"]["kinds"])
        else:
            values = list(range(data["shape"][0 if self.key == "layer" else 1]))
        return [self.format_func(value) for value in values]

    def format_func(self, value) -> str:
        controls = map_data(self.at)["controls"]
        if self.key == "focus":
            return controls["focus_none"] if value < 0 else controls["focus_labels"][value]
        if self.key in ("map_view", "rollout_map"):
            return controls["kinds"][value]
        return str(value)
