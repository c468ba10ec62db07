"""The Streamlit layer: the only package that imports streamlit.

Its folders are layers; a module imports from its own folder and the ones before it, never from one after it
(``tests/test_layers.py`` checks):

1. :mod:`.internals`: every Streamlit internal the app leans on, each with why and what breaks it;
2. :mod:`.text`: the words (translation tables) and outside text shown literally;
3. :mod:`.view`: the view's settings, its state in the session, its widgets, its address and its link;
4. :mod:`.server`: what the server holds for every session: the cached model and results, the cold start;
5. :mod:`.frame`: around every page's body: the screen's spacing, messages, errors, the body as a fragment;
6. :mod:`.attention_map`: the browser elements (the map, a plotly figure) and what serves their files;
7. :mod:`.shared`: the parts several pages share: the sidebar, examples, scores, downloads;
8. ``pages/``: one module per page of the app, its layout (nothing imports them; ``app.py`` names their files).
"""
