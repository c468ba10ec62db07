"""Rollout & norms: for the chosen layer, the raw head average, attention rollout up to it and norm-based attention."""

import streamlit as st

from attention_viz import analysis, figures
from attention_viz.extraction import export
from attention_viz.ui import cache, controls, downloads, feedback, screen, state
from attention_viz.ui.i18n import t
from attention_viz.ui.view_options import view_caption, view_options

selection = state.selection()
loaded = cache.model(selection.model)
presentation = st.session_state["presentation"]

map_column, side = st.columns([3, 2], gap="medium")
title = side.empty()
layer, _ = controls.head_picker(side, head=False, explanation=(t("rollout.intro"), t("rollout.caption")))
title.header(t("rollout.title", layer=layer))
result = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
options = view_options(result.encoding.is_pair, side)
maps = feedback.or_stop(cache.rollout_and_norms, loaded, selection.text, selection.pair, layer)
raw = analysis.apply_view(maps.raw, result.encoding, options)
rollout = analysis.apply_view(maps.rollout, result.encoding, options)
norm_options = analysis.ViewOptions(False, options.hide_special, options.block)  # norms are not distributions
norm = analysis.apply_view(maps.norm, result.encoding, norm_options, renormalise=False)

# one map at a time, drawn as large and labelled as Compare's: three side by side squash the cells
shown = state.control(
    side.radio,
    t("rollout.view"),
    "rollout_map",
    state.ROLLOUT_MAPS,
    labels=lambda m: t(f"rollout.view_{m}"),
    horizontal=True,
)
view = {"raw": raw, "rollout": rollout, "norm": norm}[shown]
queries, keys = len(view.query_labels), len(view.key_labels)
style = figures.map_style(presentation, max(queries, keys))
starts = {}
for axis, count in (("query", queries), ("key", keys)):
    key = f"rollout_{axis}_start"
    st.session_state[key] = figures.window_start(st.session_state[key], count, style.window)
    starts[axis] = st.session_state[key]
    if count > style.window:  # a window of the tokens, as on Compare, instead of thinning the labels
        starts[axis] = state.control(
            side.slider,
            t(f"rollout.{axis}_window", size=style.window, total=count),
            key,
            min_value=0,
            max_value=count - style.window,
        )
rows = figures.window_slice(starts["query"], queries, style.window)
columns = figures.window_slice(starts["key"], keys, style.window)
row_labels, key_labels = list(view.query_labels[rows]), list(view.key_labels[columns])
chart = figures.attention_heatmap(
    view.matrix[rows, columns],
    row_labels,
    t(f"rollout.{shown}", layer=layer),
    (0.0, max(float(view.matrix.max()), 1e-12)) if shown == "norm" else (0.0, 1.0),  # norms: from 0, in hidden units
    key_labels=key_labels,
    style=style,
    query_start=rows.start,
    key_start=columns.start,
    query_title=t("figures.axis_query"),
    key_title=t("figures.axis_key"),
    value_title=t("rollout.norm_unit") if shown == "norm" else "",
)
with map_column:
    feedback.truncation(result.encoding)
    box = screen.map_box(map_column, "map_box", figures.chart_height_over_width(row_labels, key_labels, style))
box.plotly_chart(chart, key="rollout_map", theme=None, height="stretch", config={"displayModeBar": False})
view_caption(raw, options, map_column)
map_column.caption(t(f"rollout.note_{shown}"))
with map_column:  # the whole shown map (every token, not only the window), with the view toggles applied
    downloads.data_buttons(
        export.file_stem(loaded.info.name, f"layer{layer}", f"rollout_{shown}"),
        "rollout",
        lambda: export.matrix_csv(view.matrix, view.query_labels, view.key_labels),
        lambda: export.view_json(
            view.matrix,
            view.query_labels,
            view.key_labels,
            {"raw": "head average", "rollout": "attention rollout", "norm": "norm-based attention"}[shown],
            model=loaded.info.name,
            layer=layer,
            word_level=options.word_level and shown != "norm",
            hide_special=options.hide_special,
            block=options.block,
        ),
    )
