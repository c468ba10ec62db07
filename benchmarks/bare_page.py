"""A one-line Streamlit page: the floor for #13, what Streamlit itself takes to show anything in a new browser.

Run by ``benchmarks/felt.py`` with the repository's settings (``.streamlit/``), beside the app.
"""

import streamlit as st

st.title("Bare Streamlit page")
