"""Two one-line Streamlit pages in ``st.navigation``: the floor under #20's page switch, what Streamlit itself
takes from a click in the sidebar to the other page's title painted.

Run by ``benchmarks/pages.py`` with the repository's settings (``.streamlit/``), beside the app.
"""

import streamlit as st


def one() -> None:
    st.title("Page one")


def two() -> None:
    st.title("Page two")


st.navigation(
    [st.Page(one, title="One", url_path="one", default=True), st.Page(two, title="Two", url_path="two")]
).run()
