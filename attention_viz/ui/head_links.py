"""Clicking a head in a figure opens it in Compare (used by the Head statistics and Head similarity pages).

``st.session_state["layer"]``/``["head"]`` belong to the sidebar sliders, which are drawn before the
page runs, so they are set in the chart's ``on_select`` callback (before the rerun), and the page then
switches to Compare.
"""

from __future__ import annotations

import streamlit as st

COMPARE_PAGE = "attention_viz/ui/pages/compare.py"
_OPEN = "_open_compare"


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
    st.session_state["layer"], st.session_state["head"] = head_of_point(int(index), num_heads)
    st.session_state[_OPEN] = True


def follow() -> None:
    """Switch to Compare if a head was just clicked (call at the top of the page)."""
    if st.session_state.pop(_OPEN, False):
        st.switch_page(COMPARE_PAGE)
