"""The app's browser elements (Streamlit custom components v2): the attention map, a plotly figure, and an
SVG button in the toolbar of every chart Streamlit draws (``svg_buttons.js``).

The JavaScript lives beside this file (``pyproject.toml`` declares the folder as their ``asset_dir``);
:mod:`.element` draws them, :mod:`.serving` gives the app the routes they fetch from. This file imports
nothing, so that the server can import :mod:`.serving` as it starts.
"""
