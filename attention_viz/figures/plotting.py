"""Figures built from plain dicts, without plotly's property-by-property validation.

Building a map through ``go.Heatmap(...)`` and ``update_layout(template="plotly_white", ...)`` spends most
of a head change validating properties; the same figure from dicts costs a small fraction of that
(``benchmarks/README.md``). What validation would have caught is checked by the tests instead: every
figure function's output is rebuilt with validation on and must come out unchanged
(``tests/test_figure_validity.py``). Colour scales are resolved here, in Python, because plotly.js knows
other scales under some of the same names ("Blues" is a different scale there).

Source: plotly.py's ``BaseFigure(data, layout, _validate=False)`` (:mod:`attention_viz.internals`) and
``plotly.colors.get_colorscale``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import get_colorscale

from attention_viz import internals
from attention_viz.figures.layout import FONT_FAMILY

TRACE_TYPES = ("heatmap", "scatter", "bar")  # the trace types our figures draw
# A value that is missing (not applicable, nothing to measure) is drawn in this grey, outside every colour scale
# the figures use, and written as this dash, never as 0.
MISSING_COLOUR = "#c8c8c8"
MISSING_TEXT = "—"


def _slim_template() -> dict:
    """``plotly_white`` with trace defaults for :data:`TRACE_TYPES` only (about half the template's JSON), in the
    font whose widths the margins are reserved for (:data:`~attention_viz.figures.layout.FONT_FAMILY`)."""
    white = pio.templates["plotly_white"].to_plotly_json()
    layout = {**white["layout"], "font": {**white["layout"].get("font", {}), "family": FONT_FAMILY}}
    return {"layout": layout, "data": {kind: white["data"][kind] for kind in TRACE_TYPES}}


TEMPLATE = _slim_template()


@functools.cache
def _scale(name: str) -> tuple[tuple[float, str], ...]:
    return tuple((float(position), color) for position, color in get_colorscale(name))


def colorscale(name: str) -> list[list]:
    """A named plotly.py colour scale (``"Blues"``, ``"RdBu_r"``) as ``[[position, colour], ...]``.

    Raises:
        plotly.exceptions.PlotlyError: an unknown name.
    """
    return [list(stop) for stop in _scale(name)]


def figure(data: Sequence[dict], layout: dict, shape_defaults: dict | None = None) -> go.Figure:
    """A figure of trace dicts (each with ``"type"``) and a layout dict, on :data:`TEMPLATE`.

    Nothing is validated: give property names and values as plotly.js reads them (the tests validate
    every figure function's output). Numpy arrays in the traces are sent as typed arrays (base64).

    Args:
        data: trace dicts.
        layout: the layout (without a template).
        shape_defaults: properties every shape in ``layout["shapes"]`` gets unless it sets them
            (plotly's ``layout.template.layout.shapedefaults``), so many similar shapes stay small.
    """
    template = TEMPLATE
    if shape_defaults is not None:
        template = {**TEMPLATE, "layout": {**TEMPLATE["layout"], "shapedefaults": shape_defaults}}
    return internals.unvalidated_figure(data, {"template": template, **layout})
