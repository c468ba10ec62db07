"""The app's browser elements' mount functions (Streamlit's custom components v2), and the two small elements
beside the attention map: a plotly figure drawn with the page's one plotly.js, and the SVG button of every chart
Streamlit draws.

The components are declared in ``pyproject.toml`` with this folder as their ``asset_dir``; the JavaScript lives
beside this file. Offers: :func:`mount`, :func:`figure`, :func:`svg_buttons` and the components' names.
"""

from __future__ import annotations

import functools

import streamlit as st

from attention_viz.ui.attention_map.serving import PLOTLY_PATH

COMPONENT = "attention-viz.attention_map"  # "<project name>.<component name>" of pyproject.toml
FIGURE_COMPONENT = "attention-viz.plotly_figure"
SVG_BUTTONS_COMPONENT = "attention-viz.svg_buttons"
SVG_BUTTONS_KEY = "svg_buttons"  # the page-wide element's key (its container, ``st-key-svg_buttons``, is hidden)


@functools.cache
def mount(name: str, js: str):
    """The mount function of a component (made on first use, in a script run: Streamlit finds the asset
    folder in the manifest it read as the server, or AppTest's runtime, started). Plotly needs the page's
    own styles: no shadow root."""
    return st.components.v2.component(name, js=js, isolate_styles=False)


def figure(place, key: str, fig, config: dict | None = None) -> None:
    """Draw a plotly figure with the page's one plotly.js, updated in place on a rerun (``Plotly.react``).

    For the charts beside an attention map (bars, lines), so that the page does not load Streamlit's
    plotly.js as well. Its toolbar saves a PNG (``config``'s ``toImageButtonOptions``) and an SVG of the same
    name. Sends nothing back.
    """
    from attention_viz.ui.text.i18n import plain

    data = {"figure": fig.to_json(), "config": config or {}, "plotly": PLOTLY_PATH}
    with place:
        mount(FIGURE_COMPONENT, "figure.js")(key=key, data={**data, "svg": plain("attention_map.svg_button")})


def svg_buttons() -> None:
    """An SVG button beside the camera of every ``st.plotly_chart`` on the page, saving the chart as an SVG of
    the PNG's name (``svg_buttons.js``; the DOM names it uses: :data:`attention_viz.ui.internals.SVG_BUTTON_DOM`).

    Call once per run, before the page draws (a page may stop its run early). The element, at the top of the
    sidebar, draws nothing: its container is hidden, so it takes no room. Sends nothing back. Being on every
    page, it also makes one action of the person one entry in the browser's history (``history_entries.js``).
    """
    from attention_viz.ui.internals import SVG_BUTTON_DOM
    from attention_viz.ui.text.i18n import plain

    data = {"plotly": PLOTLY_PATH, "title": plain("attention_map.svg_button"), "dom": SVG_BUTTON_DOM}
    with st.sidebar:  # not among the page's own elements (the main area's first element stays the page's)
        st.html(f"<style>.st-key-{SVG_BUTTONS_KEY} {{ display: none; }}</style>")
        mount(SVG_BUTTONS_COMPONENT, "svg_buttons.js")(key=SVG_BUTTONS_KEY, data=data)
