"""Helpers for AppTest-based tests: run the app in a new session, read plotly figures back."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
from replay import control
from streamlit.testing.v1 import AppTest

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


def figures(at) -> list[dict]:
    """Every plotly chart on the page, as plotly JSON."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


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
    """The plotly chart drawn with ``key=key``, as plotly JSON."""
    (found,) = [c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")]
    return json.loads(found.proto.spec)


def view(at, name: str):
    """Switch Compare's map to ``name`` (pretrained, scratch or difference) and rerun."""
    return control(at, "radio", "map_view").set_value(name).run()


def downloaded(media: dict, button) -> str:
    """What a download button hands over (``media`` is conftest's fixture), as text."""
    file_id = button.proto.deferred_file_id or urlsplit(button.proto.url).path.rsplit("/", 1)[-1].split(".")[0]
    data = media[file_id]
    return data.decode() if isinstance(data, bytes) else data
