"""The attention map as a browser element: one head drawn large, stepped with the keys in the browser.

Streamlit's plotly element gives a changed figure a new element id, so every head step was a server rerun,
a remount and a full plotly draw, and fast presses were dropped (benchmarks/README.md has the figures). This
element (Streamlit's custom components v2, declared in ``pyproject.toml`` with this folder as its
``asset_dir``) keeps its DOM node across reruns and holds the maps it needs for the next steps: a key
paints the new head into a canvas laid over plotly's plot at once, and plotly (axes, labels, colour bar,
exact hover values, the PNG and SVG export) catches up when the keys stop. Python computes every number; the
browser only draws them.

What the browser holds (:data:`BUDGET`, 16 MiB of float32 per bundle): every layer's heads when they fit
(a 16-token sentence: 74 KB), else the current layer's (512 tokens: 12.6 MB for 12 heads), else the current
head only. The maps travel once per bundle as binary over HTTP (:mod:`.serving`, format in
``attention_map.js``), so a step within the held layers re-sends none of them; a small bundle (at most
:data:`INLINE_MAX`) also travels once as base64 in the data of the run that made it (a new sentence, a first
visit), so the browser paints it without a request that would wait for the rest of the page's run.
When one layer is held, the data also names the bundles of every other layer (``neighbours``); the server
makes one only when the browser asks (:meth:`~.serving._Store.put_later`), and the browser asks for the
layers above and below as soon as it has drawn the current layer, so a ↑/↓ step usually paints from maps
already there. The browser keeps at most those three bundles a map; Compare's hold both its maps (pretrained
and from scratch: twice the bytes; 512 tokens, 12 heads: 25 MB a layer), the server as many within
:data:`~.serving.STORE_BUDGET`. A step to a layer the browser still lacks says "Loading layer …" and fetches
it (on the other pages, the page's run follows the step and registers it).

What the element sends to the server on a step depends on the page.

Compare, the article's layer and Rollout & norms (:attr:`MapSpec.told`; data ``told``: the view's names the box
carries) send nothing: the element draws its own controls (:mod:`.page_view`: title, Layer and Head boxes with
‹ ›; on Compare the map switch and the token in focus) and what follows the view (numbers, notes; on Compare
bars, lines, the example's note; the address), and leaves the view in the hidden box of
:mod:`attention_viz.ui.browser_view`, which the next run takes, whatever causes it; the maps beside the one with
the keys (the article's) follow it and pass their clicks and pans to it. A pan of a window the page keeps under
its own names (Rollout's) still asks for a run. It asks for a run only for a head it cannot fetch itself (a long
input's bundles that hold one head) and while the "link to this view" box is open (its link is the server's);
every other layer's bundle is named in the data (``neighbours``) and fetched by the browser when it needs it.

The other pages' maps report each step as one state value, under the element's key (a page's run follows):

    "view": {"layer": int, "head": int, "focus": int (-1: none), "query_start": int, "key_start": int, "seq": int}

A protocol-level client (a load generator) finds the element's widget id as the ``id`` of its
``bidi_component`` delta (it ends in ``-attention_map``) and sends a rerun ``BackMsg`` whose widget states
hold, besides the other widgets', ``WidgetState(id=<that id>, json_value='{"view": {...}}')``, with the
page fragment's id (``fragment_id``) as the browser does.

Reports of fast presses are merged (at most one per 60 ms; a step that needs data, a click and a pan of the
overview at once); each carries the whole view, so a merged report loses no step. :func:`_on_view` checks it
like any widget value (integers in range, else ignored) and stores it under the view's permanent keys
(``layer``, ``head``, ``focus``, ``query_start``, ``key_start`` of :data:`attention_viz.ui.state.DEFAULTS`).
The other way, a view the server changed (the boxes, the ‹ › buttons, a link, an example, Back) goes out with
a new ``rev``, which the element adopts; with the same ``rev`` the element keeps its own, newer view
(:func:`_revision`: a view the element itself reported, by either way, raises none).

Under AppTest there is no browser: the element is recorded as an unknown element and draws nothing; the
page around it runs as in a browser (the view comes from the session's settings), and :func:`as_figure`
reads back what the element would draw (the tests' ``chart(at, "map")``).
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import streamlit as st

from attention_viz.figures import heatmaps, plotting
from attention_viz.figures.grid import pool_attention
from attention_viz.figures.layout import FONT_FAMILY, NORMAL, MapStyle, isolate, shorten_label, window_slice
from attention_viz.ui import browser_view, state
from attention_viz.ui.attention_map.serving import PLOTLY_PATH, ROUTE, STORE, pack
from attention_viz.ui.screen import PRESENTATION_SCALE

COMPONENT = "attention-viz.attention_map"  # "<project name>.<component name>" of pyproject.toml
FIGURE_COMPONENT = "attention-viz.plotly_figure"
SVG_BUTTONS_COMPONENT = "attention-viz.svg_buttons"
SVG_BUTTONS_KEY = "svg_buttons"  # the page-wide element's key (its container, ``st-key-svg_buttons``, is hidden)
COMPARE_KEY = "attention_map"  # the Compare map's element key
INSIDE_KEY = "inside_map"  # Inside a head's map of every query
ROLLOUT_KEY = "rollout_chart"  # Rollout & norms: one map per layer (the page's radio is "rollout_map")
ARTICLE_KEYS = ("article_correct", "article_changed", "article_difference")  # the article's layer: keys on the first
BUDGET = 16 * 2**20  # bytes of float32 maps one bundle may hold (see the module docstring)
OVERVIEW_BINS = 48  # the overview's pooled bins a side (attention_viz.figures.overview's)
INLINE_MAX = 2**20  # bytes of a bundle sent inside the element's data, once (about 60 tokens, every layer)
MEMO_BUNDLES = 6  # bundle ids a session remembers per element (the held layer, its neighbours, the last steps)
VIEW_KEYS = ("layer", "head", "focus", "query_start", "key_start")


@functools.cache
def _element(name: str, js: str):
    """The mount function of a component (made on first use, in a script run: Streamlit finds the asset
    folder in the manifest it read as the server, or AppTest's runtime, started). Plotly needs the page's
    own styles: no shadow root."""
    return st.components.v2.component(name, js=js, isolate_styles=False)


def held_layers(layers: int, heads: int, queries: int, keys: int, layer: int, budget: int = BUDGET) -> tuple:
    """The layers a bundle holds: all of them when ``layers × heads × queries × keys`` float32 fit ``budget``
    bytes, else ``layer`` alone (its heads, or the one head shown when even they do not fit: see
    :func:`holds_heads`)."""
    if layers * heads * queries * keys * 4 <= budget:
        return tuple(range(layers))
    return (layer,)


def holds_heads(heads: int, queries: int, keys: int, budget: int = BUDGET) -> bool:
    """Whether one layer's heads fit ``budget`` bytes of float32."""
    return heads * queries * keys * 4 <= budget


def bundle(
    maps: np.ndarray,
    layers: Sequence[int],
    row_labels: Sequence[str],
    key_labels: Sequence[str],
    overview: bool,
    only_head: int | None = None,
    ranges: np.ndarray | dict | None = None,
    scratch: np.ndarray | None = None,
) -> bytes:
    """Pack the maps of the held ``layers``: ``maps`` is ``(len(layers), heads, queries, keys)`` float32,
    or ``(len(layers), 1, queries, keys)`` with ``only_head`` the one head held (header ``only_head``).

    The header gives ``layers``, ``heads``, ``queries``, ``keys``; ``maps`` and ``overview`` (or null) as
    ``{offset, shape}``; ``y``/``x``: the query and key categories as plotly shows them (distinct,
    isolated: :func:`attention_viz.figures.unique_labels`); ``y_text``/``x_text``: their ticks (shortened).
    The overview is the square map pooled to :data:`OVERVIEW_BINS` bins a side (rows still sum to 1).
    ``ranges``, ``(len(layers), heads, 2)``, is each head's own colour range (``ranges`` in the header: a
    fitted range); without it the element's one range applies to every head. With ``scratch`` (Compare: the
    from-scratch maps of the same heads, same shape) the header's ``scratch`` (and ``overview_scratch``) give
    them, ``maps`` being the pretrained ones: the browser switches between the two and their difference
    (``scratch − pretrained`` in float32, as numpy computes it) without asking the server; ``ranges`` is then
    ``{"attention": ..., "difference": ...}`` (each ``(len(layers), heads, 2)``) or ``None``.
    """
    maps = np.asarray(maps, dtype=np.float32)
    held, heads, queries, keys = maps.shape
    if held != len(layers) or (queries, keys) != (len(row_labels), len(key_labels)):
        raise ValueError(f"maps {maps.shape} do not match {len(layers)} layers and the labels")
    header: dict = {
        "layers": [int(layer) for layer in layers],
        "heads": heads,
        "only_head": only_head,
        "queries": queries,
        "keys": keys,
        "maps": {"offset": 0, "shape": list(maps.shape)},
        "overview": None,
        "ranges": _ranges(ranges),
        "scratch": None,
        "overview_scratch": None,
        "y": heatmaps.unique_labels(row_labels),
        "x": heatmaps.unique_labels(key_labels),
        "y_text": [isolate(shorten_label(label)) for label in row_labels],
        "x_text": [isolate(shorten_label(label)) for label in key_labels],
    }
    arrays = [maps]
    offset = maps.nbytes
    if scratch is not None:
        scratch = np.asarray(scratch, dtype=np.float32)
        if scratch.shape != maps.shape:
            raise ValueError(f"scratch maps {scratch.shape} do not match the pretrained maps {maps.shape}")
        header["scratch"] = {"offset": offset, "shape": list(scratch.shape)}
        arrays.append(scratch)
        offset += scratch.nbytes
    if overview and queries == keys:
        for name, values in (("overview", maps), ("overview_scratch", scratch)):
            if values is None:
                continue
            pooled, starts = pool_attention(values, OVERVIEW_BINS)
            header[name] = {"offset": offset, "shape": list(pooled.shape), "starts": starts.tolist()}
            arrays.append(pooled)
            offset += pooled.nbytes
    return pack(header, arrays)


def _ranges(ranges: np.ndarray | dict | None):
    """Fitted colour ranges as the header gives them (lists), by map kind when given by kind."""
    if ranges is None:
        return None
    if isinstance(ranges, dict):
        return {kind: np.asarray(value, dtype=float).tolist() for kind, value in ranges.items()}
    return np.asarray(ranges, dtype=float).tolist()


# --- The element --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MapSpec:
    """What one map element draws, besides the maps.

    Attributes:
        layers, heads: the model's shape (keys step through it).
        style: font and window (:func:`attention_viz.figures.map_style`).
        colorscale: a plotly.py colour scale name; zrange its ``(low, high)``; zmid 0.0 for a diverging map.
        value_format: the hover's number format (``".4f"``).
        texts: the element's words: ``title`` (``{layer}`` in it: the layer shown), ``query_axis``,
            ``key_axis``, ``loading`` (with ``{layer}``), ``head`` (``{layer}``, ``{head}``), ``window``
            (``{q0}`` ... ``{k1}``), ``hover_index``, ``colorbar``, ``png`` and ``svg`` (the toolbar's
            download buttons).
        png_prefix, png_what: the name of the PNG and of the SVG: ``<prefix>_layer<L>_head<H>[_<what>]``.
        keys: whether the map answers the arrow keys.
        follow: a map beside the one with the keys (``keys`` false): it shows that map's layer and head in
            the browser as soon as that map steps, before the page's rerun.
        head_axis: false for one map per layer (``heads`` 1): ↑/↓ step layers, ←/→ do nothing, and the
            element never reports a head, so the session's head stays as it is.
        focus: whether a click focuses a query (the session's ``focus``); false: no focus, none stored.
        window_keys: the session keys of the window's first query and key (a page may keep its own).
        presentation: a projector's map: as tall as the window (the page's header made transparent), the
            title in the colour bar's margin, axis titles smaller than its ticks (scaled as the page's text),
            and at under 1000 px the sidebar collapsed once (it opens again with its button).
        told: the element steps without a run of the page and the next run learns the view from the hidden
            box (:mod:`attention_viz.ui.browser_view`); always so for an element with ``controls`` (Compare's).
    """

    layers: int
    heads: int
    style: MapStyle
    colorscale: str
    zrange: tuple[float, float]
    zmid: float | None
    value_format: str
    texts: dict
    png_prefix: str
    png_what: str
    keys: bool = True
    follow: bool = False
    head_axis: bool = True
    focus: bool = True
    window_keys: tuple[str, str] = ("query_start", "key_start")
    presentation: bool = False
    told: bool = False


def scale(difference: bool = False) -> dict:
    """:class:`MapSpec`'s colour fields (``colorscale``, ``zrange``, ``zmid``, ``value_format``): attention
    weights from 0 to 1, or a difference of two on a diverging scale centred at 0."""
    if difference:
        return {
            "colorscale": heatmaps.DIFFERENCE_COLORSCALE,
            "zrange": (-1.0, 1.0),
            "zmid": 0.0,
            "value_format": "+.3g",
        }
    return {"colorscale": heatmaps.ATTENTION_COLORSCALE, "zrange": (0.0, 1.0), "zmid": None, "value_format": ".4f"}


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


def _revision(key: str, view: dict) -> int:
    """The view's revision for the element ``key``: raised when the server moved the view itself, that is when
    the view is not the one the element shows: the one it last told (its report, or the hidden box's view the
    run took, when that came after the last send), else the one last sent or reported. Back and Forward (the
    address's view) always raise it."""
    s = st.session_state
    rev = s.get(f"_{key}_rev", 0)
    told, told_seq = browser_view.last(), browser_view.adopted_seq()
    if browser_view.took_address():
        rev += 1
    elif told is not None and told_seq > s.get(f"_{key}_sent_seq", -1):  # the browser moved since the last send
        if any(told.get(name, value) != value for name, value in view.items()):
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
    s[f"_{key}_reported"] = {**_view(spec), **({"map_view": s["map_view"]} if kinds else {})}


def _memo(key: str, content_key: tuple, only_head: int | None) -> dict:
    """The ids of the element ``key``'s bundles by held layers, for this content (a new content: none)."""
    s = st.session_state
    memo = s.get(f"_{key}_bundles")
    if memo is None or memo["content"] != (content_key, only_head):
        for bundle_id in () if memo is None else memo["ids"].values():
            STORE.forget(bundle_id)
        memo = {"content": (content_key, only_head), "ids": {}}
        s[f"_{key}_bundles"] = memo
    return memo


def _bundle_id(memo: dict, layers: tuple, register: Callable[[], str], keep: int = MEMO_BUNDLES) -> str:
    """The id of the bundle of ``layers`` (registered now if it is not in the store); the memo keeps the
    last ``keep`` (at least :data:`MEMO_BUNDLES`)."""
    ids = memo["ids"]
    bundle_id = ids.pop(layers, None)
    if bundle_id is None or bundle_id not in STORE:
        bundle_id = register()
    ids[layers] = bundle_id  # the newest last
    while len(ids) > max(keep, MEMO_BUNDLES):
        STORE.forget(ids.pop(next(iter(ids))))
    return bundle_id


def draw(
    place,
    key: str,
    spec: MapSpec,
    content_key: tuple,
    maps_of: Callable[[Sequence[int]], np.ndarray],
    row_labels: Sequence[str],
    key_labels: Sequence[str],
    extra: dict | None = None,
) -> None:
    """Draw the map element ``key`` in ``place`` for the session's view (layer, head, focus, window).

    Args:
        place: a container.
        key: the element's key (one per page: :data:`COMPARE_KEY` on Compare).
        spec: what it draws besides the maps (:class:`MapSpec`).
        content_key: what the maps depend on (model, text, variant, view toggles, ...): the bundle is
            rebuilt only when it or the held layers change.
        maps_of: the maps of some layers, ``(len(layers), heads, queries, keys)`` float32, and each head's
            colour range ``(len(layers), heads, 2)`` when the range is fitted per head (else ``None``); or
            ``{"pretrained": ..., "scratch": ...}`` and ranges ``{"attention": ..., "difference": ...}``
            for a map the browser switches between the two and their difference (:func:`bundle`). It
            may be called later, from a request handler's thread (a neighbouring layer made when the browser
            asks for it): it must use no Streamlit call and only data that does not change.
        row_labels, key_labels: one label per query and per key.
        extra: more of the element's data (Compare's controls and details: :mod:`attention_viz.ui.pages.compare`).
    """
    view = _view(spec)
    if extra and "kinds" in extra:  # the map switch is the element's too
        view["map_view"] = st.session_state["map_view"]
    queries, keys = len(row_labels), len(key_labels)
    layers = held_layers(spec.layers, spec.heads, queries, keys, view["layer"])
    only_head = None if holds_heads(spec.heads, queries, keys) else view["head"]  # a head step asks the server
    windowed = max(queries, keys) > spec.style.window

    def make(held: tuple) -> bytes:
        maps, ranges = maps_of(held)
        scratch = None
        if isinstance(maps, dict):  # Compare: both maps, the browser shows either or their difference
            maps, scratch = maps["pretrained"], maps["scratch"]
        if only_head is not None:
            one = slice(only_head, only_head + 1)
            maps, scratch = np.asarray(maps)[:, one], None if scratch is None else np.asarray(scratch)[:, one]
            if isinstance(ranges, dict):
                ranges = {kind: np.asarray(value)[:, one] for kind, value in ranges.items()}
            elif ranges is not None:
                ranges = np.asarray(ranges)[:, one]
        return bundle(maps, held, row_labels, key_labels, windowed, only_head, ranges, scratch)

    memo = _memo(key, content_key, only_head)
    made: list[bytes] = []  # the bundle, when this run makes it

    def register() -> str:
        made.append(make(layers))
        if len(made[0]) <= INLINE_MAX:  # it travels in the element's data (_inline): the server keeps how to make it
            return STORE.put_recipe(made[0], lambda: make(layers))
        return STORE.put(made[0])

    path = f"{ROUTE}/maps/{_bundle_id(memo, layers, register)}"
    data = {
        "bundle": path,
        "inline": _inline(made),
        "neighbours": _neighbours(memo, spec.layers, view["layer"], layers, make),
        "plotly": PLOTLY_PATH,
        "rev": _revision(key, view),
        "view": view,
        **_drawing(spec, row_labels, key_labels),
        **(extra or {}),
    }
    if spec.told or "controls" in data:  # the view's names the hidden box carries (the page's own, not a window's)
        data["told"] = [name for name, stored in _stored(spec).items() if stored == name] + (
            ["map_view"] if "map_view" in view else []
        )
    with place:
        _element(COMPONENT, "attention_map.js")(
            key=key,
            data=data,
            on_view_change=state.guarded(
                lambda: _on_view(key, (spec.layers, spec.heads, queries, keys), spec, "map_view" in view)
            ),
        )


def _inline(made: list[bytes]) -> str | None:
    """A bundle this run made, as base64, when it is at most :data:`INLINE_MAX` bytes: it travels with the
    element's data, so a new sentence's map is painted without a request that would wait for the rest of
    the page's run (the server's one interpreter). Later runs name the bundle only (the browser holds it);
    a browser that missed this run fetches it by its path."""
    if not made or len(made[0]) > INLINE_MAX:
        return None
    return base64.b64encode(made[0]).decode("ascii")


def _neighbours(memo: dict, count: int, layer: int, layers: tuple, make: Callable[[tuple], bytes]) -> dict:
    """The bundles of the other layers (of ``count``) when one layer is held, by layer, made only when the
    browser asks (it fetches the layers above and below the one it shows, and any layer a step reaches): a
    layer step never needs a run of the page. None when every layer is held."""
    neighbours = {}
    if len(layers) < count:
        order = sorted(
            set(range(count)) - set(layers), key=lambda other: min((other - layer) % count, (layer - other) % count)
        )
        for other in reversed(order):  # the nearest registered last: the memo keeps the newest
            ahead = (other,)
            bundle_id = _bundle_id(memo, ahead, lambda a=ahead: STORE.put_later(lambda: make(a)), count + 2)
            neighbours[str(other)] = f"{ROUTE}/maps/{bundle_id}"
    return neighbours


def _drawing(spec: MapSpec, row_labels: Sequence[str], key_labels: Sequence[str]) -> dict:
    """What the element's data says of the drawing itself (sizes, fonts, colours, words, the keys it takes),
    whatever the view."""
    style = spec.style
    margins, axis_font = _margins(row_labels, key_labels, spec)
    return {
        "shape": [spec.layers, spec.heads],
        "window": style.window,
        "margins": margins,
        "font": style.font_size,
        "axis_font": axis_font,
        "presentation": spec.presentation,
        "font_family": FONT_FAMILY,
        "max_side": style.side,
        "overview_side": style.overview_side,
        "colorscale": plotting.colorscale(spec.colorscale),
        "zrange": [float(spec.zrange[0]), float(spec.zrange[1])],
        "zmid": spec.zmid,
        "value_format": spec.value_format,
        "texts": spec.texts,
        "png": {"prefix": spec.png_prefix, "what": spec.png_what},
        "keys": spec.keys,
        "follow": spec.follow,
        "head_axis": spec.head_axis,
        "focus": spec.focus,
    }


def _margins(row_labels: Sequence[str], key_labels: Sequence[str], spec: MapSpec) -> tuple[dict, int]:
    """The plot's margins (px) around labels of this length, and the axis titles' font size."""
    style = spec.style
    margins = heatmaps.margins(row_labels, key_labels, style)
    axis_font = style.font_size
    if spec.presentation:  # the title goes beside the colour bar; the axis titles are smaller than the ticks,
        # and as much larger than a screen's (12 px) as the page's other text (14 px)
        axis_font = round(NORMAL.font_size * PRESENTATION_SCALE)
        margins["t"] = style.font_size + 30
        margins["l"] -= 2 * (style.font_size - axis_font)
        margins["b"] -= 2 * (style.font_size - axis_font)
    else:
        margins["t"] = 2 * style.font_size + 24  # the colour bar and its ticks; the element writes the title above
    return margins, axis_font


def texts(title: str, colorbar: str = "", head_axis: bool = True) -> dict:
    """The element's words in the user's language (:class:`MapSpec`), for a map titled ``title``
    (``head_axis`` false: one map per layer, its title names the layer alone)."""
    from attention_viz.ui.i18n import plain

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


def figure(place, key: str, fig, config: dict | None = None) -> None:
    """Draw a plotly figure with the page's one plotly.js, updated in place on a rerun (``Plotly.react``).

    For the charts beside an attention map (bars, lines), so that the page does not load Streamlit's
    plotly.js as well. Its toolbar saves a PNG (``config``'s ``toImageButtonOptions``) and an SVG of the same
    name. Sends nothing back.
    """
    from attention_viz.ui.i18n import plain

    data = {"figure": fig.to_json(), "config": config or {}, "plotly": PLOTLY_PATH}
    with place:
        _element(FIGURE_COMPONENT, "figure.js")(key=key, data={**data, "svg": plain("attention_map.svg_button")})


def svg_buttons() -> None:
    """An SVG button beside the camera of every ``st.plotly_chart`` on the page, saving the chart as an SVG of
    the PNG's name (``svg_buttons.js``; the DOM names it uses: :data:`attention_viz.ui.internals.SVG_BUTTON_DOM`).

    Call once per run, before the page draws (a page may stop its run early). The element, at the top of the
    sidebar, draws nothing: its container is hidden, so it takes no room. Sends nothing back.
    """
    from attention_viz.ui.i18n import plain
    from attention_viz.ui.internals import SVG_BUTTON_DOM

    data = {"plotly": PLOTLY_PATH, "title": plain("attention_map.svg_button"), "dom": SVG_BUTTON_DOM}
    with st.sidebar:  # not among the page's own elements (the main area's first element stays the page's)
        st.html(f"<style>.st-key-{SVG_BUTTONS_KEY} {{ display: none; }}</style>")
        _element(SVG_BUTTONS_COMPONENT, "svg_buttons.js")(key=SVG_BUTTONS_KEY, data=data)


def as_figure(data: dict) -> dict:
    """What the map element with ``data`` draws at its view, as plotly JSON (``data``, ``layout``, ``config``).

    The element draws in the browser; this reads the same bundle and view back the way
    ``attention_map.js`` does (the window's heatmap with its categories, colour range, hover indices, the
    focus outline, the PNG's name), for AppTest, which has no browser, and for protocol-level clients.

    Raises:
        KeyError: the bundle is no longer in :data:`~attention_viz.ui.attention_map.serving.STORE`.
    """
    from attention_viz.ui.attention_map.serving import unpack

    payload = STORE.get(data["bundle"].rsplit("/", 1)[-1])
    if payload is None:
        raise KeyError(data["bundle"])
    header, values = unpack(payload)
    view, size = data["view"], data["window"]
    kind = view.get("map_view", "pretrained")
    shape = header["maps"]["shape"]
    maps = _array(values, header["maps"])
    if header.get("scratch") and kind != "pretrained":
        scratch = _array(values, header["scratch"])
        maps = scratch if kind == "scratch" else scratch - maps  # float32 - float32, as the browser subtracts
    drawing = {**data, **data["kinds"][kind]} if "kinds" in data else data
    rows = window_slice(view["query_start"], header["queries"], size)
    columns = window_slice(view["key_start"], header["keys"], size)
    q0, k0 = rows.start, columns.start
    nq, nk = rows.stop - rows.start, columns.stop - columns.start
    held = header["layers"].index(view["layer"])
    head = 0 if shape[1] == 1 else view["head"]
    ranges = header["ranges"]
    if isinstance(ranges, dict):
        ranges = ranges["difference" if kind == "difference" else "attention"]
    low, high = ranges[held][head] if ranges else drawing["zrange"]
    indices = np.stack(np.meshgrid(np.arange(nq) + q0, np.arange(nk) + k0, indexing="ij"), axis=-1)
    font = data["font"]
    trace = {
        "type": "heatmap",
        "z": maps[held, head, q0 : q0 + nq, k0 : k0 + nk].tolist(),
        "x": header["x"][k0 : k0 + nk],
        "y": header["y"][q0 : q0 + nq],
        "customdata": indices.tolist(),
        "colorscale": drawing["colorscale"],
        "zmin": low,
        "zmax": high,
    }
    if drawing["zmid"] is not None:
        trace["zmid"] = drawing["zmid"]
    if data["texts"]["colorbar"]:
        trace["colorbar"] = {"title": {"text": data["texts"]["colorbar"]}}
    shapes = []
    focus = view["focus"] - q0
    if view["focus"] >= 0 and 0 <= focus < nq:
        shapes.append({"type": "rect", "x0": -0.5, "x1": nk - 0.5, "y0": focus - 0.5, "y1": focus + 0.5})
    axis = {"tickfont": {"size": font}, "type": "category"}
    layout = {
        "title": {"text": drawing.get("title", data["texts"]["title"]).replace("{layer}", str(view["layer"]))},
        "xaxis": {**axis, "ticktext": header["x_text"][k0 : k0 + nk], "title": {"text": data["texts"]["key_axis"]}},
        "yaxis": {**axis, "ticktext": header["y_text"][q0 : q0 + nq], "title": {"text": data["texts"]["query_axis"]}},
        "shapes": shapes,
    }
    return {
        "data": [trace],
        "layout": layout,
        "config": {"toImageButtonOptions": {"format": "png", "filename": _png_name(data), "scale": 2}},
        "overview": _overview(header, values, held, head, rows, columns, kind),
    }


def _array(values: np.ndarray, entry: dict) -> np.ndarray:
    """One float32 array of a bundle's values, by its header entry (``offset`` in bytes, ``shape``)."""
    start = entry["offset"] // 4
    return values[start : start + int(np.prod(entry["shape"]))].reshape(entry["shape"])


def _png_name(data: dict) -> str:
    """The PNG export's file name at the element's view, as ``attention_map.js`` names it."""
    png, view = data["png"], data["view"]
    if "kinds" in data:
        png = {**png, "what": data["kinds"][view.get("map_view", "pretrained")]["what"]}
    head_part = f"_head{view['head']}" if data.get("head_axis", True) else ""
    return f"{png['prefix']}_layer{view['layer']}{head_part}" + (f"_{png['what']}" if png["what"] else "")


def _overview(
    header: dict, values: np.ndarray, held: int, head: int, rows: slice, columns: slice, kind: str = "pretrained"
) -> dict | None:
    """The pooled overview of the head's map of ``kind`` (when the bundle has one) with the window's outline."""
    entry = header["overview"]
    if entry is None:
        return None
    pooled = _array(values, entry)
    if header.get("overview_scratch") and kind != "pretrained":
        scratch = _array(values, header["overview_scratch"])
        pooled = scratch if kind == "scratch" else scratch - pooled
    return {
        "z": pooled[held, head].tolist(),
        "window": {"y0": rows.start - 0.5, "y1": rows.stop - 0.5, "x0": columns.start - 0.5, "x1": columns.stop - 0.5},
    }
