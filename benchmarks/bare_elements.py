"""Bare Streamlit pages with the app's elements: the floor of what Streamlit itself takes to show them.

The app's Compare page sends 45 elements at the opening example (the sidebar's 15: boxes, toggles, captions,
the hidden view box and the page-wide SVG element; the page's 30: containers, columns, the map, buttons,
downloads, notes), All heads 28 (the same sidebar and 13 of its own). These functions draw the same kinds in
the same numbers and nesting, with no model and no computing: plain stand-ins (a grey box for the map, a
plain container for an element's slot), and a title after them all, painted once the elements before it are.

- run as a script (``streamlit run benchmarks/bare_elements.py``): the sidebar and Compare's elements; ``benchmarks/
  pages.py`` times a new browser from the request to that title painted, beside the one-line page
  (``bare_page.py``);
- imported by ``bare_pages.py`` (``BARE_PAGES_ELEMENTS``): a two-page app, Compare's elements on one page and
  All heads' on the other, the sidebar on both: the floor of a page switch with the app's elements.

Run with the repository's settings (``.streamlit/``), beside the app. ``tests/test_benchmark_floors.py`` checks
that the numbers stay the app's.
"""

import streamlit as st

SIDEBAR_ELEMENTS, COMPARE_ELEMENTS, ALL_HEADS_ELEMENTS = 15, 30, 13  # what the app sends at the opening example


def sidebar() -> None:
    """The sidebar's 15 elements."""
    with st.sidebar:
        st.html("<div></div>")  # the page-wide element (hidden)
        with st.container(key="browser_view_box"):
            st.text_input("view", key="browser_view", label_visibility="collapsed")
        st.toggle("Presentation", key="presentation")
        top = st.container(horizontal=True)
        top.radio("Language", ["English", "中文"], key="lang", horizontal=True, label_visibility="collapsed")
        with top.container(width="content"), st.popover("Link to this view"):
            pass
        st.text_area("Sentence", "The animal didn't cross the street because it was too tired.", key="text")
        st.text_input("Second sentence (optional)", key="pair")
        st.selectbox("Examples", ["The animal didn't cross the street"], key="example")
        st.selectbox("Model", ["all-MiniLM-L6-v2"], key="model")
        st.caption("all-MiniLM-L6-v2: 6 layers × 12 heads, hidden 384")
        st.caption("22,713,216 parameters: 90.9 MB in float32.")
        st.toggle("Fit colour range to values", key="fit_range")


def compare_page() -> None:
    """Compare's 30 elements in the main area (the map a grey box)."""
    st.empty()
    with st.container():
        left, right = st.columns([3, 2])
        with left:
            st.html("<div style='width:480px;height:480px;background:#eee'></div>")  # the map
            st.caption("Rows are queries (attending, top to bottom), columns are keys.")
        with right:
            with st.container(horizontal=True):
                with st.container(key="map_controls", width="content"):
                    st.html("<div class='av-slot'></div>")
                with st.popover("Help"):
                    st.markdown("Each row of the map is a query (the token attending).")
            with st.container(key="example_back_box"):
                st.button("Back to the example's layer 3, head 1", key="example_back")
            with st.container(key="example_note"):
                st.info("**Pronoun.** Follow the row of *it*: this head sends it to *animal*.")
            st.selectbox("From-scratch variant", ["exact"], key="variant")
            st.toggle("Words, not pieces", key="word_level")
            st.toggle("Hide [CLS]/[SEP]", key="hide_special")
    with st.container(key="map_details"):
        st.html("<div class='av-slot'></div>")
    st.success("Matches transformers: max difference 0.0e+00 over 6 layers × 12 heads.")
    with st.container(key="at_server_view"):
        with st.container(horizontal=True):
            for name in ("Matrix (CSV)", "All pretrained attention (JSON, ≈ 403 kB)", "Figure (HTML)"):
                st.download_button(name, b"0", file_name="x.txt", on_click="ignore", width="content")
        st.caption("PNG and SVG: the camera icon in a chart's toolbar.")
    with st.container(key="off_server_view"):
        st.button("Files of the head shown", key="downloads_follow")


def all_heads_page(figure=None) -> None:
    """All heads' 13 elements in the main area; ``figure``, the grid's plotly figure, drawn as the app draws it
    (else a grey box)."""
    st.empty()
    with st.container(horizontal=True, key="all_heads_title"):
        st.header("All heads: 6 layers × 12 heads")
        with st.popover("Help"):
            st.markdown("Each thumbnail is one head of the pretrained model.")
    st.caption("Pretrained all-MiniLM-L6-v2; 16 tokens.")
    st.page_link("https://example.invalid/compare", label="Open layer 3, head 1 in Compare")
    left, _ = st.columns(2)
    left.selectbox("Colour by", ["nothing"], key="colour_by")
    with st.container(key="head_grid_box"):
        if figure is None:
            st.html("<div style='width:960px;height:480px;background:#eee'></div>")
        else:
            st.plotly_chart(figure, key="head_grid", theme=None)


if __name__ == "__main__":  # `streamlit run benchmarks/bare_elements.py`: the first map's floor
    sidebar()
    compare_page()
    st.title("Bare Streamlit page")  # last: painted once the elements before it are
