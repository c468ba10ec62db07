"""attention-viz: compare a pretrained BERT's attention heads with a from-scratch reproduction.

Run with ``streamlit run app.py``. This file is the frame: page config, shared controls, navigation,
and the view in the URL (read once by ``state.init``, written back by ``state.write_url``).
"""

import streamlit as st

from attention_viz.ui import warmup

st.set_page_config(page_title="attention-viz", page_icon=":material/search:", layout="wide")
warming = warmup.start_plotly()  # a cold start: the browser loads plotly.js during the imports below

with warmup.importing():  # another session's warm-up chart must not be built while torch is half-imported
    from attention_viz.ui import controls, presets_ui, sharing, state  # torch, transformers: seconds when cold
    from attention_viz.ui.i18n import t

state.init()  # before any word is drawn: the link may set the language

PAGES = {
    "compare": st.Page(
        "attention_viz/ui/pages/compare.py", title=t("app.page_compare"), icon=":material/compare:", default=True
    ),
    "all_heads": st.Page(
        "attention_viz/ui/pages/all_heads.py", title=t("app.page_all_heads"), icon=":material/grid_view:"
    ),
    "head_stats": st.Page(
        "attention_viz/ui/pages/head_stats.py", title=t("app.page_head_stats"), icon=":material/analytics:"
    ),
    "head_similarity": st.Page(
        "attention_viz/ui/pages/head_similarity.py", title=t("app.page_head_similarity"), icon=":material/scatter_plot:"
    ),
    "flow": st.Page("attention_viz/ui/pages/flow.py", title=t("app.page_flow"), icon=":material/account_tree:"),
    "inside": st.Page("attention_viz/ui/pages/inside.py", title=t("app.page_inside"), icon=":material/calculate:"),
    "article": st.Page("attention_viz/ui/pages/article.py", title=t("app.page_article"), icon=":material/menu_book:"),
}
navigation = st.navigation(list(PAGES.values()))
page = next(name for name, candidate in PAGES.items() if candidate.url_path == navigation.url_path)
requested = state.requested_page(tuple(PAGES))
if requested and requested != page:
    st.switch_page(PAGES[requested])
loaded = controls.sidebar()
state.write_url(page)
sharing.link_box(page)
if loaded is None:
    warmup.clear(warming)
    st.title(t("app.title"))
    st.info(t("app.model_failed"))
    st.stop()
presets_ui.look_for(loaded)
try:
    navigation.run()
finally:  # also when the page stops early (st.stop) to show a message
    warmup.clear(warming)
