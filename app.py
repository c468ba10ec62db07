"""attention-viz: compare a pretrained BERT's attention heads with a from-scratch reproduction.

Run with ``streamlit run app.py``. This file is the frame: page config, shared controls, navigation.
"""

import streamlit as st

from attention_viz.ui import controls

st.set_page_config(page_title="attention-viz", page_icon="🔍", layout="wide")

pages = [
    st.Page("attention_viz/ui/pages/compare.py", title="Compare", icon=":material/compare:", default=True),
    st.Page("attention_viz/ui/pages/all_heads.py", title="All heads", icon=":material/grid_view:"),
    st.Page("attention_viz/ui/pages/head_stats.py", title="Head statistics", icon=":material/analytics:"),
    st.Page("attention_viz/ui/pages/head_similarity.py", title="Head similarity", icon=":material/scatter_plot:"),
    st.Page("attention_viz/ui/pages/flow.py", title="Rollout & norms", icon=":material/account_tree:"),
]
navigation = st.navigation(pages)
if controls.sidebar() is None:
    st.title("attention-viz")
    st.info("Choose a model that loads (the bundled all-MiniLM-L6-v2 always does). Your text is kept.")
    st.stop()
navigation.run()
