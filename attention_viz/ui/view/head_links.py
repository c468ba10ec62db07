"""Clicking a head in a figure opens it in Compare (used by the Head statistics and Head similarity pages).

The layer and head belong to the sidebar's boxes, which are drawn before the page runs, so they are set
in the chart's ``on_select`` callback (before the rerun, :func:`attention_viz.ui.view.state.open_head`), and
the page then switches to Compare.
"""

from __future__ import annotations

import streamlit as st

from attention_viz.ui.view import state

COMPARE_PAGE = "attention_viz/ui/pages/compare.py"


def head_of_point(point_index: int, num_heads: int) -> tuple[int, int]:
    """``(layer, head)`` of a point in a layer-major list of heads."""
    return point_index // num_heads, point_index % num_heads


def on_select(chart_key: str, num_heads: int) -> None:
    """``on_select`` callback: remember the clicked head as the chosen layer and head."""
    event = st.session_state.get(chart_key)
    points = (event or {}).get("selection", {}).get("points", []) if event is not None else []
    if not points:
        return
    index = points[0].get("point_index", points[0].get("point_number"))
    if index is None:
        return
    state.open_head(*head_of_point(int(index), num_heads))


def chart(figure, chart_key: str, num_heads: int) -> None:
    """Draw a figure of every head (one point per head, layer-major) whose click opens that head in Compare."""
    st.plotly_chart(
        figure,
        key=chart_key,
        theme=None,
        on_select=state.guarded(lambda: on_select(chart_key, num_heads)),
        selection_mode="points",
    )


def follow() -> None:
    """Switch to Compare if a head was just clicked (call at the top of the page)."""
    if state.head_to_open():
        st.switch_page(COMPARE_PAGE)
