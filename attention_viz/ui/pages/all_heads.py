"""All heads: every layer × head of the pretrained model for the text; pick one to open in Compare."""

import streamlit as st

from attention_viz import figures
from attention_viz.ui import cache, feedback, state


def _open_in_compare() -> None:
    st.session_state["layer"] = st.session_state["grid_layer"]
    st.session_state["head"] = st.session_state["grid_head"]
    st.session_state["goto_compare"] = True


if st.session_state.pop("goto_compare", False):
    st.switch_page("attention_viz/ui/pages/compare.py")

selection = state.selection()
loaded = cache.model(selection.model)
info = loaded.info
result = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
encoding = result.encoding

st.header(f"All heads: {info.num_layers} layers × {info.num_heads} heads")
feedback.truncation(encoding)
pooled = encoding.num_tokens > figures.THUMBNAIL_SIZE
st.caption(
    f"Pretrained {info.name}; rows are layers, columns are heads. {encoding.num_tokens} tokens"
    + (f", pooled to {figures.THUMBNAIL_SIZE} per side (rows still sum to 1)." if pooled else ".")
)
st.plotly_chart(
    figures.head_grid(result.weights, fit_range=selection.fit_range, selected=(selection.layer, selection.head)),
    key="head_grid",
    theme=None,
)

left, middle, right = st.columns([1, 1, 2], vertical_alignment="bottom")
left.selectbox("Layer", range(info.num_layers), index=selection.layer, key="grid_layer")
middle.selectbox("Head", range(info.num_heads), index=selection.head, key="grid_head")
right.button("Open in Compare", on_click=_open_in_compare, type="primary")
