"""Two Streamlit pages in ``st.navigation``: the floors under #20's page switch.

- as it is: two one-line pages, what Streamlit itself takes from a click in the sidebar to the other page's
  title painted;
- with ``BARE_PAGES_FIGURE`` set to a plotly figure's JSON file, page two also draws that figure with
  ``st.plotly_chart`` (no computing: the figure is read once): what Streamlit and plotly.js take to switch to a
  page that draws All heads' grid, the app's own figure for the opening example;
- with ``BARE_PAGES_ELEMENTS`` set as well, both pages draw the app's elements (``bare_elements.py``): the
  sidebar's on both, Compare's on page one and All heads' with the grid on page two, each page's title last:
  what Streamlit takes to switch between pages that draw what the app's pages draw;
- with ``BARE_PAGES_ONE_ELEMENT`` instead, the sidebar's elements on both pages, and page two one custom
  element (components v2) that draws as many controls as Compare's page has elements, with plain DOM, and its
  title: the prototype of a page whose controls are the app's own element's, not Streamlit's;
- with ``BARE_PAGES_ONE_SIDEBAR`` as well, the sidebar too is one such element, drawing as many controls as the
  app's sidebar has elements: the prototype of an app whose every control is its own elements'.

Run by ``benchmarks/pages.py`` with the repository's settings (``.streamlit/``), beside the app.
"""

import os

import bare_elements  # beside this file (Streamlit puts the script's folder on the path)
import plotly.io
import streamlit as st

FIGURE = os.environ.get("BARE_PAGES_FIGURE")
ELEMENTS = bool(os.environ.get("BARE_PAGES_ELEMENTS"))
ONE_ELEMENT = bool(os.environ.get("BARE_PAGES_ONE_ELEMENT"))
ONE_SIDEBAR = bool(os.environ.get("BARE_PAGES_ONE_SIDEBAR"))
# Compare's main-area elements as plain DOM: captions, buttons, check boxes, select boxes and notes in turn
_ONE_ELEMENT_JS = """
export default function (component) {
  const { data, parentElement } = component;
  const kinds = [
    (i) => `<p style="font-size:14px;color:#555">Caption ${i}: rows are queries, columns are keys.</p>`,
    (i) => `<button style="padding:4px 12px;border:1px solid #ccc;border-radius:8px">Button ${i}</button>`,
    (i) => `<label style="display:flex;gap:8px"><input type="checkbox"> Toggle ${i}</label>`,
    (i) => `<label>Select ${i} <select><option>a</option><option>b</option></select></label>`,
    (i) => `<div style="padding:12px;background:#e8f0fe;border-radius:8px">Note ${i}</div>`,
  ];
  const parts = Array.from({ length: data.count }, (_, i) => kinds[i % kinds.length](i));
  parentElement.innerHTML = (data.title ? `<h1>${data.title}</h1>` : "") + parts.join("");
  return () => {};
}
"""


@st.cache_resource
def _figure(path: str):
    with open(path, encoding="utf-8") as file:
        return plotly.io.from_json(file.read(), skip_invalid=True)


def one() -> None:
    if ELEMENTS:
        bare_elements.compare_page()
    st.title("Page one")


def two() -> None:
    if ONE_ELEMENT:
        page = st.components.v2.component("bare_pages_one_element", js=_ONE_ELEMENT_JS, isolate_styles=False)
        page(key="page", data={"count": bare_elements.COMPARE_ELEMENTS, "title": "Page two"})
        return
    if ELEMENTS:
        bare_elements.all_heads_page(_figure(FIGURE) if FIGURE else None)
    st.title("Page two")
    if FIGURE and not ELEMENTS:
        st.plotly_chart(_figure(FIGURE), key="head_grid", theme=None)


if ONE_SIDEBAR:
    with st.sidebar:
        side = st.components.v2.component("bare_pages_one_sidebar", js=_ONE_ELEMENT_JS, isolate_styles=False)
        side(key="side", data={"count": bare_elements.SIDEBAR_ELEMENTS})
elif ELEMENTS or ONE_ELEMENT:
    bare_elements.sidebar()
st.navigation(
    [st.Page(one, title="One", url_path="one", default=True), st.Page(two, title="Two", url_path="two")]
).run()
