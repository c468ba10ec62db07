"""The head atlas's scatter: every head on any two per-head numbers, coloured by layer or a third number."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attention_viz.figures import plotting
from attention_viz.figures.heads import LABEL_FONT, MARKER_PX, SELECTED_FONT, _outline

ATLAS_HEIGHT = 520  # px


def head_scatter(
    x: np.ndarray,
    y: np.ndarray,
    colour: np.ndarray,
    num_heads: int,
    titles: tuple[str, str, str],
    names: tuple[str, str],
    selected: tuple[int, int] | None = None,
    colour_is_layer: bool = True,
) -> go.Figure:
    """Every head as a point at ``(x, y)``, coloured by ``colour``; the ``selected`` head outlined in red and
    labelled "layer·head".

    Args:
        x, y, colour: ``(layers * heads,)`` per-head numbers, layer-major; NaN (a number that does not apply)
            leaves the head out of the plot.
        num_heads: heads per layer.
        titles: the x axis's, the y axis's and the colour bar's titles.
        names: the words for "layer" and "head" in the hover label.
        selected: ``(layer, head)`` outlined; None for none.
        colour_is_layer: ``colour`` is the layer (whole steps on the colour bar).

    Returns:
        A figure with one scatter trace, ``customdata`` = ``[layer, head]`` per point, selectable by click.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    colour = np.asarray(colour, dtype=np.float64)
    index = np.arange(x.shape[0])
    layer_of, head_of = index // num_heads, index % num_heads
    chosen = [(lay, hd) == selected for lay, hd in zip(layer_of, head_of, strict=True)]
    finite = colour[np.isfinite(colour)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    colour_bar = {"title": {"text": titles[2], "side": "right"}, "thickness": 12}
    if colour_is_layer:
        colour_bar["dtick"] = 1
    layer_word, head_word = names
    trace = {
        "type": "scatter",
        "x": x,
        "y": y,
        "mode": "markers+text",
        "text": [f"{lay}·{hd}" if c else "" for lay, hd, c in zip(layer_of, head_of, chosen, strict=True)],
        "textposition": "top center",
        "textfont": {"size": [SELECTED_FONT if c else LABEL_FONT for c in chosen], "color": "red"},
        "customdata": np.stack([layer_of, head_of], axis=1),
        "hovertemplate": f"{layer_word} %{{customdata[0]}}, {head_word} %{{customdata[1]}}<br>"
        f"{titles[0]}: %{{x:.3f}}<br>{titles[1]}: %{{y:.3f}}<extra></extra>",
        "marker": {
            "size": MARKER_PX,
            "color": np.where(np.isfinite(colour), colour, low),
            "colorscale": plotting.colorscale("Turbo" if colour_is_layer else "Viridis"),
            "cmin": low,
            "cmax": high if high > low else low + 1,
            "colorbar": colour_bar,
            "line": _outline(layer_of, head_of, selected, ("white", 1)),
        },
    }
    layout = {
        "height": ATLAS_HEIGHT,
        "margin": {"l": 10, "r": 10, "t": 20, "b": 10},
        "xaxis": {"title": {"text": titles[0]}, "zeroline": False},
        "yaxis": {"title": {"text": titles[1]}, "zeroline": False},
        "clickmode": "event+select",
        "dragmode": False,
    }
    return plotting.figure([trace], layout)
