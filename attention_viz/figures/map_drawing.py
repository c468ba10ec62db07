"""What the map element draws besides its maps: the page's :class:`MapSpec`, and the drawing dict built from it.

:func:`drawing` is the one function that turns a spec into the element's drawing data (sizes, fonts, colours,
words, the keys it takes); ``attention_map.js`` draws from that dict, and
:func:`attention_viz.ui.attention_map.apptest_view.as_figure` reads the same dict back (through :func:`look` and
:func:`png_name`, which pick from it exactly as the browser does), so the two cannot drift. The layout numbers
(margins) come from :func:`attention_viz.figures.heatmaps.margins`, the static figures' own. The words come from
the page (:func:`attention_viz.ui.attention_map.element.texts`: the user's language); no Streamlit here.

Offers: :class:`MapSpec`, :func:`scale`, :func:`kind_look`, :func:`drawing`, :func:`look`, :func:`kind`,
:func:`png_name`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attention_viz.figures import heatmaps, plotting
from attention_viz.figures.layout import FONT_FAMILY, NORMAL, PRESENTATION_SCALE, MapStyle


@dataclass(frozen=True)
class MapSpec:
    """What one map element draws, besides the maps.

    Attributes:
        layers, heads: the model's shape (keys step through it).
        style: font and window (:func:`attention_viz.figures.map_style`).
        colorscale: a plotly.py colour scale name; zrange its ``(low, high)``; zmid 0.0 for a diverging map.
        value_format: the hover's number format (``".4f"``).
        texts: the element's words (:func:`attention_viz.ui.attention_map.element.texts`): ``title``
            (``{layer}`` in it: the layer shown), ``query_axis``, ``key_axis``, ``loading`` (with ``{layer}``),
            ``head`` (``{layer}``, ``{head}``), ``window`` (``{q0}`` ... ``{k1}``), ``hover_index``,
            ``colorbar``, ``png`` and ``svg`` (the toolbar's download buttons).
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
            box (:mod:`attention_viz.ui.view.browser_view`); always so for an element with ``controls`` (Compare's).
        kind_key: the session key of the map kind shown, when the element switches kinds itself (``kinds``):
            Compare's ``map_view``, Rollout & norms' ``rollout_map``.
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
    kind_key: str = "map_view"


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


def kind_look(difference: bool, title: str, what: str, colorbar: str | None = None) -> dict:
    """One entry of the drawing's ``kinds`` (a map the element switches to itself: Compare's pretrained, from
    scratch, difference; Rollout & norms' raw, rollout, norm): its colours as the browser takes them
    (:func:`scale`), its ``title``, the files' ``what`` and, when given, its colour bar's title (else the
    element's ``texts.colorbar``)."""
    colours = _colours(scale(difference))
    look = {**colours, "value_format": scale(difference)["value_format"], "title": title, "what": what}
    return look if colorbar is None else {**look, "colorbar": colorbar}


def _colours(fields: dict) -> dict:
    """A scale's colour fields as the browser takes them: the colour scale as stops, the range as a list."""
    low, high = fields["zrange"]
    return {
        "colorscale": plotting.colorscale(fields["colorscale"]),
        "zrange": [float(low), float(high)],
        "zmid": fields["zmid"],
    }


def drawing(spec: MapSpec, row_labels: Sequence[str], key_labels: Sequence[str], kinds: dict | None = None) -> dict:
    """The element's drawing data, whatever the view: sizes, fonts, colours, words, the keys it takes; with
    ``kinds`` (entries of :func:`kind_look` by map kind) the maps the element switches between itself."""
    style = spec.style
    margins, axis_font = _margins(row_labels, key_labels, spec)
    data = {
        "shape": [spec.layers, spec.heads],
        "window": style.window,
        "margins": margins,
        "font": style.font_size,
        "axis_font": axis_font,
        "presentation": spec.presentation,
        "font_family": FONT_FAMILY,
        "max_side": style.side,
        "overview_side": style.overview_side,
        **_colours({"colorscale": spec.colorscale, "zrange": spec.zrange, "zmid": spec.zmid}),
        "value_format": spec.value_format,
        "texts": spec.texts,
        "png": {"prefix": spec.png_prefix, "what": spec.png_what},
        "keys": spec.keys,
        "follow": spec.follow,
        "head_axis": spec.head_axis,
        "focus": spec.focus,
    }
    if kinds is not None:
        data["kinds"] = kinds
    return data


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


def kind(data: dict) -> str | None:
    """The map kind the element shows (``view.map_view``) when it switches maps itself (``kinds``), else None
    (``attention_map.js``: ``get kind``)."""
    return data["view"].get("map_view", "pretrained") if "kinds" in data else None


def look(data: dict) -> dict:
    """The drawing fields for the kind shown: the kind's entry over the element's own
    (``attention_map.js``: ``get look``)."""
    shown = kind(data)
    return {**data, **data["kinds"][shown]} if shown else data


def png_name(data: dict) -> str:
    """The PNG export's file name at the element's view (``attention_map.js``: ``fileName``)."""
    png, view = data["png"], data["view"]
    what = look(data)["what"] if "kinds" in data else png["what"]
    head_part = f"_head{view['head']}" if data.get("head_axis", True) else ""
    return f"{png['prefix']}_layer{view['layer']}{head_part}" + (f"_{what}" if what else "")
