"""Right-to-left tokens read right: every label a figure or an option list shows is a bidi isolate (FSI ...
PDI), its visible text unchanged; the exports keep the labels without isolates."""

from __future__ import annotations

import numpy as np
import pytest
from apptools import chart, downloaded, no_errors, run_app
from replay import control

from attention_viz import figures
from attention_viz.extraction import export, extract

FSI, PDI = "\u2068", "\u2069"
HEBREW = ["[CLS]", "שלום", "עולם", "שלום", "[SEP]"]  # a repeat too: its invisible suffix comes after the isolate
LONG_ARABIC = "مرحبا" * 6  # shortened on the axis


def _isolated(shown: str) -> bool:
    body = shown.rstrip("\u200b\u200c")
    return body.startswith(FSI) and body.endswith(PDI) and FSI not in body[1:-1] and PDI not in body[1:-1]


def _every_label(figure) -> list[str]:
    """Every text a figure shows for a token: categories, tick texts, trace texts and hover data."""
    shown = []
    for trace in figure.data:
        for name in ("x", "y", "text") if "text" in (getattr(trace, "mode", None) or "") else ("x", "y"):
            values = getattr(trace, name, None)
            if values is not None and len(values) and isinstance(values[0], str):
                shown += list(values)
        customdata = getattr(trace, "customdata", None)
        if customdata is not None and np.asarray(customdata).dtype == object:
            shown += [value for value in np.asarray(customdata)[:, 1]]
    for axis in (figure.layout.xaxis, figure.layout.yaxis):
        shown += list(axis.ticktext or ()) + [v for v in (axis.tickvals or ()) if isinstance(v, str)]
    return shown


@pytest.mark.parametrize(
    "build",
    [
        lambda labels, w: figures.attention_heatmap(w, labels, selectable=True),
        lambda labels, w: figures.difference_heatmap(w - 0.2, labels),
        lambda labels, w: figures.focus_bars({"pretrained": w[1]}, labels),
        lambda labels, w: figures.line_view(w, labels),
        lambda labels, w: figures.step_heatmap(w, labels, "keys"),
        lambda labels, w: figures.key_bars(w[1], labels, "weights"),
    ],
)
def test_every_token_label_in_a_figure_is_an_isolate(build):
    labels = [*HEBREW, LONG_ARABIC]
    weights = np.full((len(labels), len(labels)), 1 / len(labels), dtype=np.float32)
    shown = _every_label(build(labels, weights))
    assert shown and all(_isolated(label) for label in shown), [s for s in shown if not _isolated(s)]
    visible = {figures.label_text(label) for label in shown}
    assert set(labels) <= visible | {figures.shorten_label(LONG_ARABIC)}  # the text itself is unchanged


def test_options_are_isolated_and_exports_are_not(bundled, media):
    text = "שלום עולם"
    at = run_app(text=text, focus=1)
    no_errors(at)
    options = control(at, "selectbox", "focus").options
    assert options[2] == "1: " + FSI + extract(bundled, text).encoding.labels[1] + PDI
    (button,) = [b for b in at.get("download_button") if "download_csv" in b.proto.id]
    csv = downloaded(media, button)
    assert "##ל" in csv and FSI not in csv and PDI not in csv  # the bundled vocabulary splits Hebrew in letters
    exported = export.attention_json(extract(bundled, text))  # the JSON button's content
    assert "##ל" in exported and FSI not in exported and PDI not in exported
    title = chart(at, "focus_bars")["layout"]["title"]["text"]
    assert FSI + extract(bundled, text).encoding.labels[1] + PDI in title  # the bars' title names the token
