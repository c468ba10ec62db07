"""All heads: every layer × head of the pretrained model for the text; the chosen one opens in Compare."""

import streamlit as st

from attention_viz import figures
from attention_viz.ui import cache, feedback, state

selection = state.selection()
loaded = cache.model(selection.model)
info = loaded.info
result = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
encoding = result.encoding

st.header(f"All heads: {info.num_layers} layers × {info.num_heads} heads")
feedback.truncation(encoding)
pooled = encoding.num_tokens > figures.THUMBNAIL_SIZE
st.caption(
    f"Pretrained {feedback.escape_markdown(info.name)}; rows are layers, columns are heads. "
    f"{encoding.num_tokens} tokens"
    + (f", pooled to {figures.THUMBNAIL_SIZE} per side (rows still sum to 1)." if pooled else ".")
    + " The red outline is the head chosen with the Layer and Head sliders in the sidebar."
)
st.page_link(
    "attention_viz/ui/pages/compare.py",
    label=f"Open layer {selection.layer}, head {selection.head} in Compare",
    icon=":material/compare:",
)
grid = figures.head_grid(result.weights, fit_range=selection.fit_range, selected=(selection.layer, selection.head))
st.plotly_chart(grid, key="head_grid", theme=None)
