"""Rollout & norms: for the chosen layer, the raw head average, attention rollout up to it and norm-based attention."""

import numpy as np
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.extraction import export
from attention_viz.ui import cache, controls, downloads, feedback, state
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.i18n import plain, t
from attention_viz.ui.view_options import view_caption, view_options

selection = state.selection()
loaded = cache.model(selection.model)
presentation = st.session_state["presentation"]

map_column, side = st.columns([3, 2], gap="medium")
title = side.empty()
# The map answers ↑/↓ itself (in the browser): the layer buttons take no shortcuts here.
layer, _ = controls.head_picker(
    side, head=False, explanation=(t("rollout.intro"), t("rollout.caption")), shortcuts=False
)
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
kinds = {"raw": (options, True), "rollout": (options, True), "norm": (norm_options, False)}  # (view, renormalise)
encoder, encoding = loaded.encoder, result.encoding


def _maps_of(layers):
    """The shown kind of map for each layer, ``(n, 1, query, key)``, from one forward (any thread)."""
    shown_options, renormalise = kinds[shown]
    matrices = np.stack(
        [
            analysis.apply_view(m, encoding, shown_options, renormalise=renormalise).matrix
            for m in analysis.rollout.layer_maps(encoder, encoding, list(layers), shown)
        ]
    )[:, None]  # (n, 1, query, key)
    if shown != "norm":
        return matrices, None
    high = np.maximum(matrices.max(axis=(-2, -1)), 1e-12)  # norms: from 0, in hidden units
    return matrices, np.stack([np.zeros_like(high), high], axis=-1)


spec = attention_map.MapSpec(
    layers=loaded.info.num_layers,
    heads=1,
    style=style,
    colorscale=figures.ATTENTION_COLORSCALE,
    zrange=(0.0, 1.0),
    zmid=None,
    value_format=".4f",
    texts=attention_map.texts(
        plain(f"rollout.{shown}", layer="{layer}"), plain("rollout.norm_unit") if shown == "norm" else "", False
    ),
    png_prefix=export.file_stem(loaded.info.name),
    png_what=shown,
    presentation=presentation,
    head_axis=False,  # one map per layer: the session's head stays as the other pages left it
    focus=False,
    window_keys=("rollout_query_start", "rollout_key_start"),
)
content = (loaded.info.name, selection.text, selection.pair, shown, options)
with map_column:
    feedback.truncation(result.encoding)
labels = (tuple(view.query_labels), tuple(view.key_labels))
attention_map.draw(map_column.container(), attention_map.ROLLOUT_KEY, spec, content, _maps_of, *labels)
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
