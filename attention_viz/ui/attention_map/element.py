"""The attention map as a browser element: one head drawn large, stepped with the keys in the browser.

Streamlit's plotly element gives a changed figure a new element id, so every head step was a server rerun,
a remount and a full plotly draw, and fast presses were dropped (benchmarks/README.md has the figures). This
element (Streamlit's custom components v2, :mod:`.components`) keeps its DOM node across reruns and holds the
maps it needs for the next steps: a key paints the new head into a canvas laid over plotly's plot at once, and
plotly (axes, labels, colour bar, exact hover values, the PNG and SVG export) catches up when the keys stop.
Python computes every number; the browser only draws them.

A page hands the element data: the maps of the layers it holds (:func:`held` names them), as a cache wrapper
gave them (:func:`attention_viz.ui.server.cache_maps.held_maps`), and the maps' recipe
(:class:`attention_viz.analysis.layer_maps.Recipe`: the map kind and its arguments), from which the other layers'
bundles are made when the browser asks for them (:mod:`attention_viz.figures.bundles`: what a bundle holds, its
format; :mod:`.bundle`: the neighbours).
What the element draws besides the maps is the page's :class:`~attention_viz.figures.map_drawing.MapSpec` (its words:
:func:`texts`), turned into the drawing data by :func:`~attention_viz.figures.map_drawing.drawing`;
:func:`~.apptest_view.as_figure` reads it back for AppTest.

What the element sends to the server on a step depends on the page.

Compare, the article's layer, Rollout & norms and Inside a head (:attr:`MapSpec.told`; data ``told``: the view's
settings the box carries, ``{session key: view field}``) send nothing: the element draws its own controls
(:mod:`.page_view`: title, Layer and Head boxes with ‹ ›; on Compare and Rollout & norms the map switch, on Compare
the token in focus) and what follows the view (numbers, notes; on Compare bars, lines, the example's note; on Inside
a head the steps, :mod:`.inside_steps`; the address), and leaves the view in the hidden box of
:mod:`attention_viz.ui.view.browser_view`, which the next run takes, whatever causes it; the maps beside the one with
the keys (the article's) follow it and pass their clicks and pans to it. Rollout & norms keeps its window and map
kind under its own keys (``rollout_query_start``, ``rollout_key_start``, ``rollout_map``: :attr:`MapSpec.window_keys`,
:attr:`MapSpec.kind_key`), and each kind is its own bundle (``kind_bundles``: the others made when the browser asks).
It asks for a run only for a head it cannot fetch itself (a long input's bundles that hold one head) and while the
"link to this view" box is open (its link is the server's); every other layer's bundle is named in the data
(``neighbours``) and fetched by the browser when it needs it.

The other pages' maps report each step as one state value, under the element's key (a page's run follows):

    "view": {"layer": int, "head": int, "focus": int (-1: none), "query_start": int, "key_start": int, "seq": int}

A protocol-level client (a load generator) finds the element's widget id as the ``id`` of its
``bidi_component`` delta (it ends in ``-attention_map``) and sends a rerun ``BackMsg`` whose widget states
hold, besides the other widgets', ``WidgetState(id=<that id>, json_value='{"view": {...}}')``, with the
page fragment's id (``fragment_id``) as the browser does.

Reports of fast presses are merged (at most one per 60 ms; a step that needs data, a click and a pan of the
overview at once); each carries the whole view, so a merged report loses no step. :func:`_on_view` checks it
like any widget value (integers in range, else ignored) and stores it under the view's permanent keys
(``layer``, ``head``, ``focus``, ``query_start``, ``key_start`` of :data:`attention_viz.ui.view.state.DEFAULTS`).
The other way, a view the server changed (the boxes, the ‹ › buttons, a link, an example, Back) goes out with
a new ``rev``, which the element adopts; with the same ``rev`` the element keeps its own, newer view
(:func:`_revision`: a view the element itself reported, by either way, raises none).
"""

from __future__ import annotations

import streamlit as st

from attention_viz.analysis.layer_maps import HeldMaps, Recipe
from attention_viz.figures import bundles
from attention_viz.figures.map_drawing import MapSpec, drawing
from attention_viz.figures.map_drawing import kind_look as kind_look  # the pages' words for the spec
from attention_viz.figures.map_drawing import scale as scale
from attention_viz.ui.attention_map import bundle
from attention_viz.ui.attention_map.components import COMPONENT, mount
from attention_viz.ui.attention_map.components import svg_buttons as svg_buttons  # app.py draws it once a run
from attention_viz.ui.attention_map.serving import PLOTLY_PATH, ROUTE, STORE
from attention_viz.ui.text.i18n import plain
from attention_viz.ui.view import browser_view, state

COMPARE_KEY = "attention_map"  # the Compare map's element key
INSIDE_KEY = "inside_map"  # Inside a head's map of every query
ROLLOUT_KEY = "rollout_chart"  # Rollout & norms: one map per layer (the page's radio is "rollout_map")
ARTICLE_KEYS = ("article_correct", "article_changed", "article_difference")  # the article's layer: keys on the first
VIEW_KEYS = ("layer", "head", "focus", "query_start", "key_start")


def texts(title: str, colorbar: str = "", head_axis: bool = True) -> dict:
    """The element's words in the user's language (:attr:`MapSpec.texts`), for a map titled ``title``
    (``head_axis`` false: one map per layer, its title names the layer alone)."""
    return {
        "title": title,
        "query_axis": plain("figures.axis_query"),
        "key_axis": plain("figures.axis_key"),
        "loading": plain("attention_map.loading", layer="{layer}"),
        "head": plain("attention_map.head", layer="{layer}", head="{head}")
        if head_axis
        else plain("attention_map.layer", layer="{layer}"),
        "window": plain("attention_map.window", q0="{q0}", q1="{q1}", k0="{k0}", k1="{k1}"),
        "hover_index": plain("attention_map.hover_index"),
        "colorbar": colorbar,
        "png": plain("attention_map.png_button"),
        "svg": plain("attention_map.svg_button"),
    }


def _stored(spec: MapSpec) -> dict:
    """The session key of each view value this element shows and reports (none for a value it fixes)."""
    names = {"layer": "layer", "query_start": spec.window_keys[0], "key_start": spec.window_keys[1]}
    if spec.head_axis:
        names["head"] = "head"
    if spec.focus:
        names["focus"] = "focus"
    return names


def _view(spec: MapSpec) -> dict:
    s = st.session_state
    view = {"head": 0, "focus": -1}
    for name, stored in _stored(spec).items():
        view[name] = int(s.get(stored, state.DEFAULTS.get(stored, 0)))
    return {name: view[name] for name in VIEW_KEYS}


def _told(spec: MapSpec, kinds: bool) -> dict[str, str]:
    """The view's settings the hidden box carries for this element: ``{session key: view field}`` (Rollout &
    norms keeps its window and map kind under its own keys: ``rollout_query_start``, ``rollout_map``)."""
    names = {stored: name for name, stored in _stored(spec).items()}
    if kinds:
        names[spec.kind_key] = "map_view"
    return names


def _revision(key: str, view: dict, told_names: dict[str, str]) -> int:
    """The view's revision for the element ``key``: raised when the server moved the view itself, that is when
    the view is not the one the element shows: the one it last told (its report, or the hidden box's view the
    run took, when that came after the last send; ``told_names`` maps its session keys to the view's fields),
    else the one last sent or reported. Back and Forward (the address's view), and a button that moves the view
    (:func:`browser_view.moved`), always raise it."""
    s = st.session_state
    rev = s.get(f"_{key}_rev", 0)
    told, told_seq = browser_view.last(), browser_view.adopted_seq()
    moves, seen = browser_view.server_moves(), s.get(f"_{key}_server_moves", 0)
    s[f"_{key}_server_moves"] = moves
    if moves != seen:
        rev += 1
    elif told is not None and told_seq > s.get(f"_{key}_sent_seq", -1):  # the browser moved since the last send
        if any(told.get(name, view[field]) != view[field] for name, field in told_names.items()):
            rev += 1
    elif view not in (s.get(f"_{key}_sent"), s.get(f"_{key}_reported")):
        rev += 1
    s[f"_{key}_rev"], s[f"_{key}_sent"], s[f"_{key}_sent_seq"] = rev, view, told_seq
    return rev


def valid_view(value: object, layers: int, heads: int, queries: int, keys: int) -> dict | None:
    """The element's reported view if it is one (integers in the model's and the map's range), else ``None``."""
    if not isinstance(value, dict):
        return None
    view = {}
    limits = {
        "layer": (0, layers - 1),
        "head": (0, heads - 1),
        "focus": (-1, queries - 1),
        "query_start": (0, max(0, queries - 1)),
        "key_start": (0, max(0, keys - 1)),
    }
    for name, (low, high) in limits.items():
        number = value.get(name)
        if not isinstance(number, int) or isinstance(number, bool) or not low <= number <= high:
            return None
        view[name] = number
    return view


def _on_view(key: str, shape: tuple[int, int, int, int], spec: MapSpec, kinds: bool = False) -> None:
    """``on_view_change``: a checked view goes under the view's permanent keys (those of :func:`_stored`);
    anything else is ignored. ``kinds``: the element switches maps itself (its view has ``map_view``)."""
    s = st.session_state
    result = s.get(key)
    value = result.get("view") if hasattr(result, "get") else None
    view = valid_view(value, *shape)
    if view is None:
        return
    s.update({stored: view[name] for name, stored in _stored(spec).items()})
    s[f"_{key}_reported"] = {**_view(spec), **({"map_view": s[spec.kind_key]} if kinds else {})}


def held(spec: MapSpec, queries: int, keys: int) -> tuple[int, ...]:
    """The layers the element holds at the session's view, for maps of ``queries × keys``: the ``layers`` a page
    asks :func:`attention_viz.ui.server.cache_maps.held_maps` for
    (:func:`attention_viz.figures.bundles.held_layers`)."""
    return bundles.held_layers(spec.layers, spec.heads, queries, keys, _view(spec)["layer"])


def _source(memo_key: str, spec: MapSpec, view: dict, recipe: Recipe, shape: tuple, maps: HeldMaps | None) -> dict:
    """The element's bundle of ``recipe``'s maps (``shape``: their queries and keys) for the layers it holds at
    ``view``: ``{bundle, inline, neighbours}``. With ``maps`` (this run's, of those layers) the bundle is packed now
    (inline when small); without, it is made when the browser asks for it (another kind than the one shown)."""
    queries, keys = shape
    layers = bundles.held_layers(spec.layers, spec.heads, queries, keys, view["layer"])
    if maps is not None and tuple(maps.layers) != layers:
        raise ValueError(f"maps of layers {maps.layers}, the element holds {layers}")
    only_head = None if bundles.holds_heads(spec.heads, queries, keys) else view["head"]  # a head step asks the server
    windowed = max(queries, keys) > spec.style.window

    def make(other: tuple) -> bytes:  # another layer's bundle, made from the recipe (any thread)
        return bundles.from_maps(recipe.maps(other), windowed, only_head)

    memo = bundle.memo(memo_key, (recipe.kind, recipe.key), only_head)
    made: list[bytes] = []  # the bundle, when this run makes it

    def register() -> str:
        if maps is None:
            return STORE.put_later(lambda: make(layers))
        made.append(bundles.from_maps(maps, windowed, only_head))
        if len(made[0]) <= bundle.INLINE_MAX:  # it travels in the element's data: the server keeps how to make it
            return STORE.put_recipe(made[0], lambda: bundles.from_maps(maps, windowed, only_head))
        return STORE.put(made[0])

    return {
        "bundle": f"{ROUTE}/maps/{bundle.bundle_id(memo, layers, register)}",
        "inline": bundle.inline(made),
        "neighbours": bundle.neighbours(memo, spec.layers, view["layer"], layers, make),
    }


def draw(
    place,
    key: str,
    spec: MapSpec,
    maps: HeldMaps,
    recipe: Recipe,
    extra: dict | None = None,
    kinds: dict | None = None,
    others: dict | None = None,
) -> None:
    """Draw the map element ``key`` in ``place`` for the session's view (layer, head, focus, window).

    Args:
        place: a container.
        key: the element's key (one per page: :data:`COMPARE_KEY` on Compare).
        spec: what it draws besides the maps (:class:`MapSpec`).
        maps: the maps of the layers it holds (:func:`held`), with their labels and colour ranges.
        recipe: how ``maps`` were made: the element makes the other layers' bundles from it when the browser
            asks (in a request handler's thread); its kind and key name the content (a new one: new bundles).
        extra: more of the element's data (Compare's controls and details: :mod:`attention_viz.ui.pages.compare`).
        kinds: the maps the element switches between itself (:func:`~attention_viz.figures.map_drawing.kind_look` by
            kind; the one shown is the session's ``spec.kind_key``): Compare's pretrained, from scratch and
            difference, all in one bundle (``maps`` then has ``scratch``); or, with ``others``, Rollout & norms'
            raw, rollout and norm, each its own bundle.
        others: the kinds not shown, each its own bundle made when the browser asks for it: ``{kind: (recipe,
            queries, keys)}`` (the data's ``kind_bundles``, the shown kind's included); ``maps`` and ``recipe``
            are then the shown kind's.

    Raises:
        ValueError: ``maps`` are not of the layers the element holds.
    """
    view = _view(spec)
    if kinds is not None:  # the map switch is the element's too
        view["map_view"] = st.session_state[spec.kind_key]
    row_labels, key_labels = maps.query_labels, maps.key_labels
    shape = (len(row_labels), len(key_labels))
    if others is None:
        sources = {}
        shown = _source(key, spec, view, recipe, shape, maps)
    else:  # each kind its own memo of bundle ids: a switch back finds the bundle the browser holds
        sources = {
            kind: _source(f"{key}.{kind}", spec, view, other, (queries, keys), None)
            for kind, (other, queries, keys) in others.items()
        }
        shown = sources[view["map_view"]] = _source(f"{key}.{view['map_view']}", spec, view, recipe, shape, maps)
    told_names = _told(spec, "map_view" in view)
    data = {
        **shown,
        "plotly": PLOTLY_PATH,
        "rev": _revision(key, view, told_names),
        "view": view,
        **drawing(spec, row_labels, key_labels, kinds),
        **(extra or {}),
    }
    if sources:
        data["kind_bundles"] = sources
    if spec.told or "controls" in data:  # the view's settings the hidden box carries, by session key
        data["told"] = told_names
    with place:
        mount(COMPONENT, "attention_map.js")(
            key=key,
            data=data,
            on_view_change=state.guarded(
                lambda: _on_view(key, (spec.layers, spec.heads, *shape), spec, "map_view" in view)
            ),
        )
