"""Rollout & norms: for the chosen layer, the raw head average, attention rollout up to it and norm-based attention.

Every move within the maps runs nothing on the server: a layer step (↑/↓, the ‹ › buttons, the Layer box), the
map switch (Head average / Rollout / Norm-based) and a pan of the window (Shift + the arrow keys, a drag on the
overview). The map's element holds every kind's maps of the layers it holds, each kind its own bundle (the kinds
may differ in shape: the norms stay at token level when the others are words), the shown kind's packed in the
run and the others made when the browser asks for them, right after the first paint. It draws the title, the
Layer box with ‹ ›, the switch, the kind's notes and the window's; the next run learns the view, the map kind and
the window under the page's own keys (``rollout_map``, ``rollout_query_start``, ``rollout_key_start``:
:mod:`attention_viz.ui.attention_map.page_view`). The files are the server's, for the layer and kind it drew.
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
    # The map's element draws the title, the Layer box with ‹ › and the map switch here, and answers ↑/↓.
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
    shown = st.session_state["rollout_map"]  # the map element's switch (in the browser)
    view = views[shown]
    # one look for the three kinds, so that a switch keeps the map's size: fitted to the most tokens any shows
    tokens = max(max(len(v.query_labels), len(v.key_labels)) for v in views.values())
    style = figures.map_style(selection.presentation, tokens)
    state.set_window("rollout", len(view.query_labels), len(view.key_labels), style.window)
    with map_column:
        feedback.truncation(encoding)
    _map(map_column.container(), loaded, selection, options, style, views)
    view_caption(views["raw"], options, map_column)
    page_view.slot(map_column.container(key=page_view.DETAILS_SLOT))  # the map writes its kind's notes here
    with map_column:  # the whole shown map (every token, not only the window), with the view toggles applied
        page_view.server_files(
            lambda: _downloads(loaded.info.name, layer, shown, view, options), t("rollout.downloads_follow")
        )


def _notes(views: dict, size: int) -> dict:
    """The notes under the map for each kind (the browser shows the shown kind's): what it is, and how to move
    its window when its tokens do not fit."""
    notes = {}
    for kind, view in views.items():
        queries, keys = len(view.query_labels), len(view.key_labels)
        notes[kind] = [plain(f"rollout.note_{kind}")]
        if max(queries, keys) > size:
            notes[kind].append(plain("rollout.window_note", size=size, queries=queries, keys=keys))
    return notes


def _map(place, loaded, selection, options, style, views: dict) -> None:
    """The map element: every kind of map of the layers the browser holds, one map per layer; the shown kind's
    packed now, the others' made when the browser asks for them."""
    shown = st.session_state["rollout_map"]
    recipes = {
        kind: cache_maps.rollout_recipe(loaded, selection.text, selection.pair, kind, options)
        for kind in state.ROLLOUT_MAPS
    }
    kinds = {
        kind: attention_map.kind_look(
            False,
            plain(f"rollout.{kind}", layer="{layer}"),
            kind,
            plain("rollout.norm_unit") if kind == "norm" else "",
        )
        for kind in state.ROLLOUT_MAPS
    }
    spec = attention_map.MapSpec(
        layers=loaded.info.num_layers,
        heads=1,
        style=style,
        **attention_map.scale(),
        texts=attention_map.texts(kinds[shown]["title"], kinds[shown]["colorbar"], False),
        png_prefix=export.file_stem(loaded.info.name),
        png_what=shown,
        presentation=selection.presentation,
        head_axis=False,  # one map per layer: the session's head stays as the other pages left it
        focus=False,
        window_keys=state.WINDOW_KEYS["rollout"],
        told=True,
        kind_key="rollout_map",
    )
    controls_words = {
        **page_view.controls(plain("rollout.title", layer="{layer}"), head=False),
        "map": plain("rollout.view"),
        "kinds": {kind: plain(f"rollout.view_{kind}") for kind in state.ROLLOUT_MAPS},
    }
    extra = {
        "controls": controls_words,
        "details": {"kind_notes": _notes(views, style.window)},
        "follow": page_view.follow({"layer": "layer", "map_view": "rollout_map"}),
    }
    shape = {kind: (len(v.query_labels), len(v.key_labels)) for kind, v in views.items()}
    maps = cache_maps.held_maps(recipes[shown], attention_map.held(spec, *shape[shown]))
    others = {kind: (recipes[kind], *shape[kind]) for kind in state.ROLLOUT_MAPS if kind != shown}
    attention_map.draw(place, attention_map.ROLLOUT_KEY, spec, maps, recipes[shown], extra, kinds, others)


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
