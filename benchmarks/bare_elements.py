"""A bare Streamlit page with Compare's elements: the floor of what Streamlit itself takes to show them.

Compare's first run sends about 45 elements (the sidebar's boxes, toggles and captions; the page's containers,
columns, buttons, downloads, notes). This page draws the same kinds in the same numbers, with no model and no
computing, and a title after them all; ``benchmarks/pages.py`` times a new browser from the request to that title
painted, beside the one-line page (``bare_page.py``): what the elements themselves cost Streamlit's
front end, apart from the app's work. Run with the repository's settings (``.streamlit/``), beside the app.
"""

import streamlit as st

with st.sidebar:
    st.text_area("Sentence", "The animal didn't cross the street because it was too tired.")
    st.text_input("Second sentence")
    st.text_input("view", label_visibility="collapsed")
    st.selectbox("Model", ["all-MiniLM-L6-v2"])
    st.selectbox("Examples", ["The animal didn't cross the street"])
    st.radio("Language", ["English", "中文"], horizontal=True)
    st.toggle("Presentation")
    st.toggle("Fit the colour range")
    st.caption("all-MiniLM-L6-v2: 6 layers, 12 heads")
    st.caption("The opening example")
    with st.popover("Link to this view"):
        st.write("link")

with st.container(horizontal=True):
    st.subheader("Layer 3, head 1")
    st.html("<div style='height:1px'></div>")
left, right = st.columns([3, 2])
with left:
    with st.container():
        st.html("<div style='width:480px;height:480px;background:#eee'></div>")
    st.caption("Rows are queries, columns are keys.")
with right:
    for name in ("the map (PNG)", "the weights (CSV)", "the view (JSON)"):
        st.download_button(f"Download {name}", b"0", file_name="x.txt")
    st.button("Back to the example")
    st.button("Open this head")
    st.toggle("Hide [CLS] and [SEP]")
    st.toggle("Word level")
    st.selectbox("Token in focus", ["none", "the", "animal"])
    with st.popover("More"):
        st.write("more")
for _ in range(6):
    with st.container():
        st.empty()
st.markdown("**Matches transformers** to 1e-5.")
st.info("The example: the head that resolves *it*.")
st.success("Matches transformers: largest difference 0.0")
st.caption("Each row sums to 1.")
st.title("Bare Streamlit page")  # last: painted once the elements before it are
