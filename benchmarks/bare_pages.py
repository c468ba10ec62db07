"""Two Streamlit pages in ``st.navigation``: the floors under #20's page switch.

- as it is: two one-line pages, what Streamlit itself takes from a click in the sidebar to the other page's
  title painted;
- with ``BARE_PAGES_FIGURE`` set to a plotly figure's JSON file, page two also draws that figure with
  ``st.plotly_chart`` (no computing: the figure is read once): what Streamlit and plotly.js take to switch to a
  page that draws All heads' grid, the app's own figure for the opening example.

Run by ``benchmarks/pages.py`` with the repository's settings (``.streamlit/``), beside the app.
"""

import os

import plotly.io
import streamlit as st

FIGURE = os.environ.get("BARE_PAGES_FIGURE")


@st.cache_resource
def _figure(path: str):
    with open(path, encoding="utf-8") as file:
        return plotly.io.from_json(file.read(), skip_invalid=True)


def one() -> None:
    st.title("Page one")


def two() -> None:
    st.title("Page two")
    if FIGURE:
        st.plotly_chart(_figure(FIGURE), key="head_grid", theme=None)


st.navigation(
    [st.Page(one, title="One", url_path="one", default=True), st.Page(two, title="Two", url_path="two")]
).run()
