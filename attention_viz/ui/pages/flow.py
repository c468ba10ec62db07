"""Rollout & norms: for the chosen layer, the raw head average, attention rollout up to it and norm-based attention."""

import streamlit as st

from attention_viz import analysis, analysis_figures
from attention_viz.ui import cache, feedback, state
from attention_viz.ui.i18n import t
from attention_viz.ui.view_options import view_caption, view_options

selection = state.selection()
loaded = cache.model(selection.model)
layer = selection.layer

st.header(t("flow.title", layer=layer))
st.markdown(t("flow.intro"))
result = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
feedback.truncation(result.encoding)
options = view_options(result.encoding.is_pair)
flow = feedback.or_stop(cache.layer_flow, loaded, selection.text, selection.pair, layer)
axes = (t("flow.axis_key"), t("flow.axis_query"))
raw = analysis.apply_view(flow.raw, result.encoding, options)
rollout = analysis.apply_view(flow.rollout, result.encoding, options)
norm_options = analysis.ViewOptions(False, options.hide_special, options.block)  # norms are not distributions
norm = analysis.apply_view(flow.norm, result.encoding, norm_options, renormalise=False)
panels = [
    analysis_figures.matrix_heatmap(raw.matrix, raw.query_labels, raw.key_labels, t("flow.raw", layer=layer), axes),
    analysis_figures.matrix_heatmap(
        rollout.matrix, rollout.query_labels, rollout.key_labels, t("flow.rollout", layer=layer), axes
    ),
    analysis_figures.matrix_heatmap(
        norm.matrix, norm.query_labels, norm.key_labels, t("flow.norm", layer=layer), axes, zrange=None
    ),
]
for column, figure, key in zip(st.columns(3), panels, ("raw", "rollout", "norm"), strict=True):
    column.plotly_chart(figure, key=f"flow_{key}", theme=None)
view_caption(raw, options)
st.caption(t("flow.caption"))
