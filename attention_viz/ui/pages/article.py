"""The article's layer: the seed article's SelfAttention next to a correct layer, differences one at a time."""

import math

import pandas as pd
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import article_compare
from attention_viz.ui import cache, downloads, feedback, state
from attention_viz.ui.i18n import t

TABLE_ROWS = ("projections", "scaling", "mask", "output", "returned", "inputs")

selection = state.selection()
loaded = cache.model(selection.model)
info = loaded.info
layer, head = selection.layer, selection.head
switched_on = {d for d in st.session_state["article_diffs"].split(",") if d in article_compare.DIFFERENCES}


def _remember_differences() -> None:
    on = [d for d in article_compare.DIFFERENCES if st.session_state[state.page_widget_key(f"article_{d}")]]
    st.session_state["article_diffs"] = ",".join(on)


st.header(t("article.title", layer=layer, head=head))
st.markdown(t("article.intro"))
st.table(
    pd.DataFrame(
        [
            [t(f"article.row_{row}"), t(f"article.row_{row}_article"), t(f"article.row_{row}_correct")]
            for row in TABLE_ROWS
        ],
        columns=[t("article.col_step"), t("article.col_article"), t("article.col_correct")],
    ).set_index(t("article.col_step"))
)

st.subheader(t("article.switches"))
switches, seed_column = st.columns([3, 1])
for difference in article_compare.DIFFERENCES:
    switches.toggle(
        t(f"article.diff_{difference}"),
        value=difference in switched_on,
        help=t(f"article.diff_{difference}_help", hidden=info.hidden_size, head_dim=info.head_dim),
        key=state.page_widget_key(f"article_{difference}"),
        on_change=_remember_differences,
    )
seed = seed_column.number_input(
    t("article.seed"),
    0,
    2**31 - 1,
    value=st.session_state["article_seed"],
    key=state.page_widget_key("article_seed"),
    on_change=state.remember,
    args=("article_seed",),
)
switched_on = {d for d in article_compare.DIFFERENCES if st.session_state[state.page_widget_key(f"article_{d}")]}

encoding, correct, changed = feedback.or_stop(
    cache.article_maps, loaded, selection.text, selection.pair, layer, int(seed), tuple(switched_on)
)
feedback.truncation(encoding)
st.caption(
    t(
        "article.same_input",
        layer=layer,
        seed=int(seed),
        gain=f"{article_compare.WEIGHT_GAIN:g}",
        heads=info.num_heads,
        hidden=info.hidden_size,
    )
)

labels = encoding.labels
ours, theirs = changed[head], correct[head]
changed_title = t("article.fig_changed", count=len(switched_on)) if switched_on else t("article.fig_none")
zrange = figures.shared_range(theirs, ours) if selection.fit_range else (0.0, 1.0)
axis_titles = {"query_title": t("figures.axis_query"), "key_title": t("figures.axis_key")}
panels = [
    figures.attention_heatmap(theirs, labels, t("article.fig_correct"), zrange, **axis_titles),
    figures.attention_heatmap(ours, labels, changed_title, zrange, **axis_titles),
    figures.difference_heatmap(ours - theirs, labels, t("article.fig_difference"), selection.fit_range, **axis_titles),
]
config = downloads.chart_config(info.name, layer, head, "article")
# two maps a row, so that a lecture hall can read the token labels
places = [*st.columns(2), *st.columns(2)]
for place, figure, key in zip(places, panels, ("correct", "changed", "difference"), strict=False):
    place.plotly_chart(figure, key=f"article_{key}", theme=None, config=config)

numbers = places[3]
numbers.metric(t("article.entropy_correct"), f"{analysis.row_entropy(theirs).mean():.3f}")
numbers.metric(t("article.entropy_changed"), f"{analysis.row_entropy(ours).mean():.3f}")
numbers.metric(t("article.max_difference"), f"{analysis.max_abs_difference(ours, theirs):.3f}")
numbers.caption(t("article.reading", uniform=f"{math.log2(len(labels)):.3f}"))

pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
downloads.buttons(pretrained, ours, panels[1], layer, head, "article", labels)
