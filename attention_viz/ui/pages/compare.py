"""Compare: one head of the pretrained model, the same head from our from-scratch encoder, and the difference."""

import streamlit as st

from attention_viz import figures, metrics
from attention_viz.encoder import Variant
from attention_viz.ui import cache, feedback, state

VARIANT_LABELS = {
    "exact": "exact (the model's weights)",
    "article-scaling": "article scaling (÷ √hidden)",
    "no-scaling": "no scaling",
    "random": "random weights (untrained)",
}
PARITY_BOUND = 1e-5

selection = state.selection()
loaded = cache.model(selection.model)
info = loaded.info
layer, head = selection.layer, selection.head

st.header(f"Layer {layer}, head {head}")
left, middle, _ = st.columns([2, 1, 3])
variants = [v.value for v in Variant]
variant = left.selectbox(
    "From-scratch variant",
    variants,
    index=variants.index(st.session_state["variant"]),
    format_func=VARIANT_LABELS.get,
    key=state.page_widget_key("variant"),
    on_change=state.remember,
    args=("variant",),
)
seed = middle.number_input(
    "Seed",
    0,
    2**31 - 1,
    value=st.session_state["seed"],
    disabled=variant != "random",
    key=state.page_widget_key("seed"),
    on_change=state.remember,
    args=("seed",),
)

pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
scratch = feedback.or_stop(cache.scratch, loaded, selection.text, selection.pair, variant, int(seed))
feedback.truncation(pretrained.encoding)

labels = pretrained.encoding.labels
ours, theirs = scratch.head(layer, head), pretrained.head(layer, head)
zrange = figures.shared_range(theirs, ours) if selection.fit_range else (0.0, 1.0)  # same colours, same weights
columns = st.columns(3)
panels = [
    figures.attention_heatmap(theirs, labels, "Pretrained (transformers)", zrange),
    figures.attention_heatmap(ours, labels, f"From scratch: {variant}", zrange),
    figures.difference_heatmap(ours - theirs, labels, "Difference: from scratch − pretrained", selection.fit_range),
]
for column, figure, key in zip(columns, panels, ("pretrained", "scratch", "difference"), strict=True):
    column.plotly_chart(figure, key=f"heatmap_{key}", theme=None)

numbers = st.columns(4)
numbers[0].metric("max |difference|", f"{metrics.max_abs_difference(ours, theirs):.2e}")
numbers[1].metric("mean Jensen-Shannon divergence", f"{metrics.js_divergence(ours, theirs).mean():.4f} bits")
numbers[2].metric("mean row entropy, pretrained", f"{metrics.row_entropy(theirs).mean():.3f} bits")
numbers[3].metric("mean row entropy, from scratch", f"{metrics.row_entropy(ours).mean():.3f} bits")

if variant == "exact":
    worst = cache.parity(loaded, selection.text, selection.pair)
    where = f"over all {info.num_layers} layers × {info.num_heads} heads"
    if worst <= PARITY_BOUND:
        st.success(f"Matches transformers: max difference {worst:.1e} {where}.")
    else:
        st.error(f"Does not match transformers: max difference {worst:.1e} {where} (bound {PARITY_BOUND:g}).")
elif variant == "article-scaling":
    st.caption(
        f"Scores divided by √hidden = √{info.hidden_size} instead of √head_dim = √{info.head_dim}, as the "
        f"seed article's layer does: the softmax runs √heads = {info.num_heads**0.5:.2f}× too hot, so "
        "attention is flatter."
    )
elif variant == "no-scaling":
    st.caption(f"Raw query·key scores, not divided by √head_dim = √{info.head_dim}: attention is sharper.")
else:
    st.caption(f"An untrained encoder of the same shape, initialised as BERT is (seed {int(seed)}).")
st.caption(
    "Rows are queries (attending, top to bottom), columns are keys (attended to). "
    f"Hover reads query → key: weight. {pretrained.encoding.num_tokens} tokens."
)
