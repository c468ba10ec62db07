"""Rollout & norms: for the chosen layer, the raw head average, attention rollout up to it and norm-based attention.

A layer step (↑/↓, the ‹ › buttons, the Layer box) runs nothing on the server: the map's element draws the title
and the Layer box for the layer it shows and the next run learns it
(:mod:`attention_viz.ui.attention_map.page_view`). The map switch (Head average / Rollout / Norm-based) and a pan
of the window run the page: the browser holds the shown kind's maps only, and the window is the page's own.
"""

import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import layer_maps
from attention_viz.extraction import export
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.attention_map import page_view
from attention_viz.ui.frame import feedback
from attention_viz.ui.server import cache, cache_maps
from attention_viz.ui.shared import controls, downloads
from attention_viz.ui.shared.view_options import view_caption, view_options
from attention_viz.ui.text.i18n import plain, t
from attention_viz.ui.view import state

# what each kind of map is called in its JSON download
KIND_NAMES = {"raw": "head average", "rollout": "attention rollout", "norm": "norm-based attention"}


def _show() -> None:
    selection, loaded = controls.shown_model()
    map_column, side = st.columns([3, 2], gap="medium")
    layer = selection.layer
    # The map's element draws the title and the Layer box with ‹ › here, and answers ↑/↓.
    top = side.container(horizontal=True, vertical_alignment="center", gap="small")
    page_view.slot(top.container(key=page_view.CONTROLS_SLOT, width="content"))
    controls.explain(top, t("rollout.intro"), t("rollout.caption"))
    encoding = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair).encoding
    options = view_options(encoding.is_pair, side)
    maps = feedback.or_stop(cache.rollout_and_norms, loaded, selection.text, selection.pair, layer)
    views = {
        kind: analysis.apply_view(getattr(maps, kind), encoding, *layer_maps.rollout_view(options, kind))
        for kind in state.ROLLOUT_MAPS
    }
    # one map at a time, drawn as large and labelled as Compare's: three side by side squash the cells
    shown = state.choice_row(side, "rollout.view", "rollout_map", state.ROLLOUT_MAPS)
    view = views[shown]
    style = figures.map_style(selection.presentation, max(len(view.query_labels), len(view.key_labels)))
    _window_sliders(side, len(view.query_labels), len(view.key_labels), style.window)
    with map_column:
        feedback.truncation(encoding)
    _map(map_column.container(), loaded, selection, options, shown, style, view)
    view_caption(views["raw"], options, map_column)
    map_column.caption(t(f"rollout.note_{shown}"))
    with map_column:  # the whole shown map (every token, not only the window), with the view toggles applied
        page_view.server_files(
            lambda: _downloads(loaded.info.name, layer, shown, view, options), t("rollout.downloads_follow")
        )


def _window_sliders(side, queries: int, keys: int, size: int) -> None:
    """The window kept inside the map's tokens, and a slider for each axis over ``size`` tokens: a window
    of the tokens, as on Compare, instead of thinning the labels."""
    state.set_window("rollout", queries, keys, size)
    for axis, key, count in zip(("query", "key"), state.WINDOW_KEYS["rollout"], (queries, keys), strict=True):
        if count > size:
            label = t(f"rollout.{axis}_window", size=size, total=count)
            state.control(side.slider, label, key, min_value=0, max_value=count - size)


def _map(place, loaded, selection, options, shown: str, style, view) -> None:
    """The map element: the shown kind of map of every layer the browser holds, one map per layer."""
    recipe = cache_maps.rollout_recipe(loaded, selection.text, selection.pair, shown, options)
    spec = attention_map.MapSpec(
        layers=loaded.info.num_layers,
        heads=1,
        style=style,
        **attention_map.scale(),
        texts=attention_map.texts(
            plain(f"rollout.{shown}", layer="{layer}"), plain("rollout.norm_unit") if shown == "norm" else "", False
        ),
        png_prefix=export.file_stem(loaded.info.name),
        png_what=shown,
        presentation=selection.presentation,
        head_axis=False,  # one map per layer: the session's head stays as the other pages left it
        focus=False,
        window_keys=state.WINDOW_KEYS["rollout"],
        told=True,
    )
    extra = {
        "controls": page_view.controls(plain("rollout.title", layer="{layer}"), head=False),
        "follow": page_view.follow(("layer",)),
    }
    maps = cache_maps.held_maps(recipe, attention_map.held(spec, len(view.query_labels), len(view.key_labels)))
    attention_map.draw(place, attention_map.ROLLOUT_KEY, spec, maps, recipe, extra)


def _downloads(model_name: str, layer: int, shown: str, view, options: analysis.ViewOptions) -> None:
    downloads.data_buttons(
        export.file_stem(model_name, f"layer{layer}", f"rollout_{shown}"),
        "rollout",
        lambda: export.matrix_csv(view.matrix, view.query_labels, view.key_labels),
        lambda: export.view_json(
            view.matrix,
            view.query_labels,
            view.key_labels,
            KIND_NAMES[shown],
            model=model_name,
            layer=layer,
            word_level=options.word_level and shown != "norm",
            hide_special=options.hide_special,
            block=options.block,
        ),
    )


_show()
