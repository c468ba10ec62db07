"""Plotly figures of attention: one head's map (windowed and labelled for any length), a difference map,
a grid of every head, an overview, a token's bars and bertviz's line view; the head overview and the
head-similarity map; the step-by-step figures of one head.

Figure functions take numpy arrays and strings and return ``plotly.graph_objects.Figure``; they know
nothing of models or of Streamlit, so a notebook gets the same figures as the app. Sizes, windows and
label shortening are plain functions in :mod:`attention_viz.figures.layout`.
"""

from attention_viz.figures.focus import focus_bars, line_view, overview
from attention_viz.figures.grid import THUMBNAIL_SIZE, TITLE_FONT, grid_height, head_grid, pool_attention
from attention_viz.figures.heads import head_overview, similarity_map
from attention_viz.figures.heatmaps import (
    ATTENTION_COLORSCALE,
    DIFFERENCE_COLORSCALE,
    attention_heatmap,
    difference_heatmap,
    head_ranges,
    label_room,
    shared_range,
    unique_labels,
)
from attention_viz.figures.layout import (
    DENSE,
    NORMAL,
    PRESENTATION,
    MapStyle,
    isolate,
    label_text,
    map_style,
    shorten_label,
    window_around,
    window_slice,
    window_start,
)
from attention_viz.figures.plotting import MISSING_COLOUR, MISSING_TEXT
from attention_viz.figures.steps import distance_line, key_bars, step_heatmap

__all__ = [
    "ATTENTION_COLORSCALE",
    "DENSE",
    "DIFFERENCE_COLORSCALE",
    "MISSING_COLOUR",
    "MISSING_TEXT",
    "NORMAL",
    "PRESENTATION",
    "THUMBNAIL_SIZE",
    "TITLE_FONT",
    "MapStyle",
    "attention_heatmap",
    "difference_heatmap",
    "distance_line",
    "focus_bars",
    "grid_height",
    "head_grid",
    "head_overview",
    "head_ranges",
    "isolate",
    "key_bars",
    "label_room",
    "label_text",
    "line_view",
    "map_style",
    "overview",
    "pool_attention",
    "shared_range",
    "shorten_label",
    "similarity_map",
    "step_heatmap",
    "unique_labels",
    "window_around",
    "window_slice",
    "window_start",
]
