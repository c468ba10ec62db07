"""The app's browser elements (Streamlit custom components v2): the attention map, a plotly figure, and an
SVG button in the toolbar of every chart Streamlit draws (``svg_buttons.js``).

The JavaScript lives beside this file (``pyproject.toml`` declares the folder as their ``asset_dir``).
:mod:`.element` draws the map (its spec, view protocol and data), :mod:`.bundle` packs the maps it holds,
:mod:`.drawing` builds what it draws besides the maps, :mod:`.apptest_view` reads the drawing back without a
browser, :mod:`.components` mounts the elements, :mod:`.page_view` places the map's controls on a page, and
:mod:`.serving` gives the app the routes they fetch from. This file imports nothing, so that the server can
import :mod:`.serving` as it starts.
"""
