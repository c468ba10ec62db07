"""Head similarity: heads placed by how alike they attend (JS divergence, MDS); click a head to open it."""

import numpy as np
import streamlit as st

from attention_viz import figures
from attention_viz.extraction import export
from attention_viz.ui.frame import feedback
from attention_viz.ui.server import cache, cache_heads
from attention_viz.ui.shared import controls, downloads
from attention_viz.ui.shared.corpus_picker import corpus_scope, run_corpus
from attention_viz.ui.text.i18n import t
from attention_viz.ui.view import head_links

CHART_KEY = "similarity_map"


def _show() -> None:
    head_links.follow()
    selection, loaded = controls.shown_model()
    info = loaded.info

    controls.title_row("similarity_title", t("similarity.title"), t("similarity.intro"))
    scope, corpus = corpus_scope("similarity")
    if corpus is None:
        divergence = feedback.or_stop(cache_heads.text_divergence, loaded, selection.text, selection.pair)
        feedback.truncation(cache.encoding(loaded, selection.text, selection.pair))  # a text past the model's positions
    else:
        result = run_corpus(loaded, corpus)
        divergence = result.divergence
    with st.spinner(t("similarity.computing")):
        positions = cache_heads.mds_layout(divergence)
    figure = figures.similarity_map(
        positions,
        info.num_heads,
        t("similarity.map_title"),
        t("stats.axis_layer"),
        t("stats.axis_head"),
        selected=(selection.layer, selection.head),
        heads_per_group=info.heads_per_group,
    )
    head_links.chart(figure, CHART_KEY, info.num_heads)
    if len(divergence) < 2:  # no pair of heads: no mean divergence
        st.caption(t("similarity.caption_one"))
    else:
        mean = float(divergence[~np.eye(len(divergence), dtype=bool)].mean())
        st.caption(t("similarity.caption", heads=len(divergence), mean=f"{mean:.3f}"))
    downloads.data_buttons(
        export.file_stem(info.name, "head_similarity", scope),
        "similarity",
        lambda: export.similarity_frame(positions, info.num_heads).to_csv(index=False, float_format="%.8g"),
        lambda: export.similarity_json(positions, divergence, info.num_heads, model=info.name, scope=scope),
    )


_show()
