"""Helpers for AppTest-based tests: run the app in a new session, read plotly figures back."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
from replay import control, map_data
from streamlit.testing.v1 import AppTest

from attention_viz.ui.attention_map import apptest_view, components
from attention_viz.ui.attention_map import element as attention_map

APP = str(Path(__file__).resolve().parent.parent / "app.py")
COMPARE = "attention_viz/ui/pages/compare.py"
ALL_HEADS = "attention_viz/ui/pages/all_heads.py"


def run_app(**state_before) -> AppTest:
    """Run the app in a new session, with session state set beforehand (AppTest cannot type a new
    option into a selectbox, so a typed model name is given this way)."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in state_before.items():
        at.session_state[key] = value
    return at.run()


_CHARTS = (components.COMPONENT, components.FIGURE_COMPONENT)  # not the page-wide SVG buttons, which draw none


def _details(at) -> dict:
    """Compare's bars and lines as the server made them for the view it knows, which is the view the map shows
    after any AppTest run (the browser fills them for the heads it steps to): ``{key: figure}``."""
    data = map_data(at)
    if data is None or "lines" not in data.get("details", {}):  # the article's and Rollout's: numbers at most
        return {}
    details, config = data["details"], None
    found = {"lines": {**json.loads(details["lines"]["figure"]), "config": details["lines"]["config"]}}
    if data["view"]["focus"] >= 0:
        config = details["bars"]["config"]
        found["focus_bars"] = {**json.loads(details["bars"]["figure"]), "config": config}
    return found


def hidden(at, key: str) -> bool:
    """Whether the page hides its container keyed ``key`` until the map shows it (a style the page draws)."""
    return any(f".st-key-{key} {{ display: none; }}" in node.proto.body for node in at.get("html"))


def title(at) -> str:
    """The page's title: Compare's (which its map writes, following its steps) or another page's header."""
    data = map_data(at)
    if data is None:
        return at.header[0].value
    return data["controls"]["title"].format(**data["view"])


def numbers(at) -> list[str]:
    """Compare's agreement numbers for the head its map shows (max |difference|, mean JS divergence, the two
    mean row entropies), as shown."""
    data = map_data(at)
    return data["details"]["numbers"]["values"][data["view"]["layer"]][data["view"]["head"]]


def _drawn(at) -> list:
    """The page's charts in order: Streamlit's plotly charts and the app's own elements (the attention map,
    its plotly figures), which AppTest keeps as unknown elements."""
    found = []

    def walk(node) -> None:
        kind = getattr(node, "type", None)
        if kind == "plotly_chart" or (kind == "bidi_component" and node.proto.component_name in _CHARTS):
            found.append(node)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return found


def _as_figure(node) -> dict:
    """A chart as plotly JSON with its ``config``: the map element as :func:`apptest_view.as_figure` reads it."""
    if node.type == "plotly_chart":
        return {**json.loads(node.proto.spec), "config": json.loads(node.proto.config or "{}")}
    data = json.loads(node.proto.json)
    if node.proto.component_name == components.COMPONENT:
        return apptest_view.as_figure(data)
    return {**json.loads(data["figure"]), "config": data["config"]}


def figures(at) -> list[dict]:
    """Every chart on the page (plotly charts, the map element, its figures; Compare's bars and lines), as plotly
    JSON with ``config``."""
    return [_as_figure(node) for node in _drawn(at)] + list(_details(at).values())


def configs(at) -> list[dict]:
    """Every chart's plotly config, in order."""
    return [figure["config"] for figure in figures(at)]


def decode(array) -> np.ndarray:
    """A plotly data array, decoded from base64 ``bdata`` (plotly 6+) or a plain list."""
    if isinstance(array, dict):
        dtype = np.dtype(array["dtype"])
        shape = [int(n) for n in str(array.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=dtype).reshape(shape)
    return np.asarray(array, dtype=np.float64)


def z(figure: dict, trace: int = 0) -> np.ndarray:
    """A heatmap trace's z."""
    return decode(figure["data"][trace]["z"])


def no_errors(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def chart(at, key: str) -> dict:
    """The chart drawn with ``key=key``, as plotly JSON (see :func:`figures`); ``"map"`` is Compare's map
    element (its key is ``attention_map``)."""
    key = attention_map.COMPARE_KEY if key == "map" else key
    details = _details(at)
    if key in details:
        return details[key]
    (found,) = [c for c in _drawn(at) if c.proto.id.endswith(f"-{key}")]
    return _as_figure(found)


def view(at, name: str):
    """Switch Compare's map to ``name`` (pretrained, scratch or difference) and rerun."""
    return control(at, "radio", "map_view").set_value(name).run()


def downloaded(media: dict, button) -> str:
    """What a download button hands over (``media`` is conftest's fixture), as text."""
    file_id = button.proto.deferred_file_id or urlsplit(button.proto.url).path.rsplit("/", 1)[-1].split(".")[0]
    data = media[file_id]
    return data.decode() if isinstance(data, bytes) else data
