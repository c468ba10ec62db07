"""Rollout & norms: for the chosen layer, the raw head average, attention rollout up to it and norm-based attention."""

import streamlit as st

from attention_viz import analysis, figures
from attention_viz.ui import cache, feedback, state
from attention_viz.ui.i18n import option_labels, t
from attention_viz.ui.view_options import view_caption, view_options

MAPS = ("raw", "rollout", "norm")

selection = state.selection()
loaded = cache.model(selection.model)
layer = selection.layer
style = figures.map_style(st.session_state["presentation"])

st.header(t("rollout.title", layer=layer))
st.markdown(t("rollout.intro"))
result = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
feedback.truncation(result.encoding)
options = view_options(result.encoding.is_pair)
maps = feedback.or_stop(cache.rollout_and_norms, loaded, selection.text, selection.pair, layer)
raw = analysis.apply_view(maps.raw, result.encoding, options)
rollout = analysis.apply_view(maps.rollout, result.encoding, options)
norm_options = analysis.ViewOptions(False, options.hide_special, options.block)  # norms are not distributions
norm = analysis.apply_view(maps.norm, result.encoding, norm_options, renormalise=False)

# one map at a time, drawn as large and labelled as Compare's: three side by side squash the cells
shown = st.radio(
    t("rollout.view"),
    MAPS,
    format_func=option_labels(MAPS, lambda m: f"rollout.view_{m}"),
    horizontal=True,
    key=state.page_widget_key("rollout_map"),
)
view = {"raw": raw, "rollout": rollout, "norm": norm}[shown]
queries, keys = len(view.query_labels), len(view.key_labels)
starts = {}
for axis, count in (("query", queries), ("key", keys)):
    starts[axis] = 0
    if count > style.window:  # a window of the tokens, as on Compare, instead of thinning the labels
        starts[axis] = st.slider(
            t(f"rollout.{axis}_window", size=style.window, total=count),
            0,
            count - style.window,
            key=state.page_widget_key(f"rollout_{axis}_start"),
        )
rows = figures.window_slice(starts["query"], queries, style.window)
columns = figures.window_slice(starts["key"], keys, style.window)
chart = figures.attention_heatmap(
    view.matrix[rows, columns],
    list(view.query_labels[rows]),
    t(f"rollout.{shown}", layer=layer),
    None if shown == "norm" else (0.0, 1.0),
    key_labels=list(view.key_labels[columns]),
    style=style,
    query_start=rows.start,
    key_start=columns.start,
    query_title=t("figures.axis_query"),
    key_title=t("figures.axis_key"),
)
st.plotly_chart(chart, key="rollout_map", theme=None, config={"displayModeBar": False})
view_caption(raw, options)
st.caption(t("rollout.caption"))
