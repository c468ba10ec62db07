"""A browser's memory in AppTest: the labels a widget showed, sent back on a later run.

Streamlit 1.67 sends a radio's, selectbox's or multiselect's value between browser and server as the
shown label (``format_func(option)``), not as an index. A browser keeps the label it showed until the
server tells it otherwise, so after a change of language, or of the labels themselves (another text
in the focus box), the next run can carry a label of the earlier run. AppTest always serializes with
the newest labels; :func:`replay` makes a run carry the earlier ones, as a browser can.
"""

from __future__ import annotations

from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import InitialValue, Widget

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
    import json

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
    """The page widget bound to the view setting ``key`` (its widget key is ``_key``, perhaps with a suffix)."""
    found = [w for w in at.get(kind) if w.key == f"_{key}" or (w.key or "").startswith(f"_{key}~")]
    assert len(found) == 1, (key, [w.key for w in at.get(kind)])
    return found[0]
