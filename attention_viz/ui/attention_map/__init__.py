"""The app's browser elements (Streamlit custom components v2): the attention map, a plotly figure, and an
SVG button in the toolbar of every chart Streamlit draws (``svg_buttons.js``).

The JavaScript lives beside this file (``pyproject.toml`` declares the folder as their ``asset_dir``). :mod:`.element`
draws the map (its spec, view protocol and data; what it draws besides the maps is
:mod:`attention_viz.figures.map_drawing`'s), :mod:`.bundle` names the bundles of the maps it holds (packed by
:mod:`attention_viz.figures.bundles`), :mod:`.inside_steps` those of Inside a head's steps, :mod:`.apptest_view` reads
the drawing back without a browser, :mod:`.components` mounts the elements, :mod:`.page_view` places the map's controls
on a page, and :mod:`.serving` gives the app the routes they fetch from. This file imports nothing, so that the server
can import :mod:`.serving` as it starts.
"""
