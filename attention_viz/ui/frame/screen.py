"""The lecture screen: the frame's margins, Presentation's larger text, and a map as tall as the window allows.

Streamlit sizes a chart in pixels on the server, which does not know the window. A map is therefore
drawn into a box whose height the browser sets by CSS: the window's height below the header, and no
more than a square plot needs at the box's width (container query units), so a narrow window leaves
no blank band under the map. Streamlit's own layout is kept; only spacing and font size change:

- the main area starts just under Streamlit's header and uses the window's width, so that at
  1280 × 720 with the sidebar open the map of an 18-token sentence fits beside its controls; in a
  main area narrower than :data:`NARROW` (800 px wide with the sidebar open) columns stack, as
  Streamlit stacks them on a phone, so a map keeps the whole width;
- a row of pills or a segmented control wraps in a main area too narrow for it (Streamlit scrolls it
  sideways, which cuts the last options at the edge: the article's third difference at 800 × 600);
- Presentation scales every rem-based size (headings, text, sidebar, controls) by :data:`PRESENTATION_SCALE`.
"""

from __future__ import annotations

import streamlit as st

from attention_viz.figures.layout import PRESENTATION_SCALE
from attention_viz.ui.internals import (
    BUTTON_GROUP,
    COLUMN,
    EXPAND_SIDEBAR_BUTTON,
    HEADER,
    HORIZONTAL_BLOCK,
    MAIN,
    MAIN_BLOCK,
    SIDEBAR_CONTENT,
    SIDEBAR_HEADER,
    SIDEBAR_NAV,
)

NAV_ZOOM = 0.9  # the list of pages at 14.4 px: with nine pages, the Sentence, Examples and link stay in a 720 px window
NOMINAL_MAP_HEIGHT = 640  # the map box's height where CSS does not apply (AppTest, a print)
NARROW = 620  # px of main area below which a map and its controls stack (800 px wide with the sidebar open)
# Streamlit's own elements by their test ids and class names (attention_viz/ui/internals.py).
_FRAME = f"""
{MAIN_BLOCK} {{ padding: 3.5rem 1.5rem 2.5rem 1.5rem; container: main / inline-size; }}
{SIDEBAR_CONTENT} {{ padding-top: 0.5rem; padding-bottom: 2rem; }}
{SIDEBAR_NAV} {{ padding-top: 0; zoom: {NAV_ZOOM}; }}
{SIDEBAR_HEADER} {{ height: 2.5rem; margin-bottom: 0; }}
{MAIN}:focus, {MAIN}:focus-visible {{ outline: none; }}
{BUTTON_GROUP} > div {{ flex-wrap: wrap; }}
{MAIN}:focus::before, {MAIN}:focus-visible::before {{ box-shadow: none; }}
@container main (max-width: {NARROW}px) {{
  {HORIZONTAL_BLOCK} {{ flex-wrap: wrap; }}
  {HORIZONTAL_BLOCK} > {COLUMN} {{
    flex: 1 1 100% !important; width: 100% !important; min-width: 100%;
  }}
}}
"""


# Presentation: the page starts at the top of the window under a see-through header (its menu stays), so a
# map can take the window's height; while the sidebar is closed, the content starts right of the header's »
# (which opens it again) instead of under it. The list of pages keeps its size: it is the lecturer's, and at
# 1.2× its nine rows would push the Sentence box and the link below a 720 px window. A heading keeps clear of the
# header's menu (⋮, top right) that it now starts beside: a page's long title (the article's, in Chinese, at
# 800 × 600) wraps before it instead of running under it (!important: the map element's title sets its padding).
_PRESENTATION = f"""
{MAIN_BLOCK} {{ padding-top: 0.25rem; }}
{MAIN_BLOCK} h2 {{ padding-right: 2.5rem !important; }}
body:has({EXPAND_SIDEBAR_BUTTON}) {MAIN_BLOCK} {{ padding-left: 3.5rem; }}
{HEADER} {{ background: transparent; pointer-events: none; }}
{HEADER} * {{ pointer-events: auto; }}
{SIDEBAR_NAV} {{ zoom: {NAV_ZOOM / PRESENTATION_SCALE:.4f}; }}
"""


def frame(presentation: bool) -> None:
    """The page's spacing, and in Presentation larger text everywhere (charts size their own fonts)."""
    css = _FRAME + (f"html {{ font-size: {16 * PRESENTATION_SCALE:.0f}px; }}" + _PRESENTATION if presentation else "")
    st.html(f"<style>{css}</style>")


TABLE_FONT_PX = 14  # st.dataframe's header font
TABLE_HEADER_PAD_PX = 24  # the header's padding and its menu icon


def header_width(label: str) -> int:
    """Width in px of an ``st.dataframe`` column that shows ``label`` whole in its header (wide characters,
    such as Chinese, counted as such), at least 80."""
    from attention_viz.figures.layout import text_width

    return max(80, round(text_width(label, TABLE_FONT_PX)) + TABLE_HEADER_PAD_PX)


def map_row(place, key: str, count: int, min_width: int) -> list:
    """``count`` columns for maps side by side; a row wraps when a column would be narrower than ``min_width``.

    ``min_width`` is what a map needs for readable cells (a label size plus some air per token).
    """
    st.html(
        f"<style>.st-key-{key} {HORIZONTAL_BLOCK} {{ flex-wrap: wrap; }}"
        f".st-key-{key} {COLUMN} {{ min-width: min(100%, {int(min_width)}px); }}</style>"
    )
    return place.container(key=key).columns(count, gap="medium")


def ratio_box(place, key: str, ratio: float, fixed: float):
    """A container for one chart (drawn with ``height="stretch"``) whose height follows its width:
    ``ratio`` × the main area's width + ``fixed`` px (:func:`attention_viz.figures.grid_height`), so a
    figure of square cells keeps them square at any window width. :data:`NOMINAL_MAP_HEIGHT` where CSS
    does not apply."""
    st.html(
        f"<style>.st-key-{key} {{ flex: 0 0 auto !important; "
        f"height: calc({ratio:.5f} * 100cqw + {fixed:.1f}px) !important; }}</style>"
    )
    return place.container(height=NOMINAL_MAP_HEIGHT, border=False, key=key)
