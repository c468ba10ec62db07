"""The article's layer: the seed article's SelfAttention next to a correct layer, differences one at a time."""

import math

import pandas as pd
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import article_compare
from attention_viz.ui import cache, controls, downloads, feedback, screen, state
from attention_viz.ui.i18n import t
from attention_viz.ui.safe_text import Markdown

TABLE_ROWS = ("projections", "scaling", "mask", "output", "returned", "inputs")

selection = state.selection()
loaded = cache.model(selection.model)
info = loaded.info
layer, head = selection.layer, selection.head
presentation = st.session_state["presentation"]

st.header(t("article.title", layer=layer, head=head))
controls.head_picker(explanation=(t("article.intro"),))

switches, seed_column = st.columns([3, 1], vertical_alignment="bottom")
switched_on = state.control(
    switches.pills,
    t("article.switches"),
    "article_diffs",
    article_compare.DIFFERENCES,
    labels=lambda d: t(f"article.diff_{d}"),
    decode=lambda stored: [d for d in str(stored).split(",") if d],
    encode=lambda chosen: ",".join(d for d in article_compare.DIFFERENCES if d in chosen),
    selection_mode="multi",
    help=Markdown(" ").join(
        t(f"article.diff_{d}") + ": " + t(f"article.diff_{d}_help", hidden=info.hidden_size, head_dim=info.head_dim)
        for d in article_compare.DIFFERENCES
    ),
)
seed = state.control(seed_column.number_input, t("article.seed"), "article_seed", min_value=0, max_value=2**31 - 1)

encoding, correct, changed = feedback.or_stop(
    cache.article_maps, loaded, selection.text, selection.pair, layer, int(seed), tuple(switched_on)
)
feedback.truncation(encoding)

labels = encoding.labels
changed_map, correct_map = changed[head], correct[head]
changed_title = t("article.fig_changed", count=len(switched_on)) if switched_on else t("article.fig_none")
zrange = figures.shared_range(correct_map, changed_map) if selection.fit_range else (0.0, 1.0)
style = figures.map_style(presentation, len(labels))
axis_titles = {"query_title": t("figures.axis_query"), "key_title": t("figures.axis_key"), "style": style}
panels = [
    figures.attention_heatmap(correct_map, labels, t("article.fig_correct"), zrange, **axis_titles),
    figures.attention_heatmap(changed_map, labels, changed_title, zrange, **axis_titles),
    figures.difference_heatmap(
        changed_map - correct_map, labels, t("article.fig_difference"), selection.fit_range, **axis_titles
    ),
]
config = downloads.chart_config(info.name, layer, head, "article")
# side by side while each map keeps readable cells, else two or one a row
min_width = len(labels) * (style.font_size + 4) + figures.label_room(labels, style.font_size) + 3 * style.font_size + 40
extra = figures.chart_height_over_width(labels, labels, style)
for place, figure, key in zip(
    screen.map_row(st, "article_maps", 3, min_width), panels, ("correct", "changed", "difference"), strict=True
):
    screen.map_box(place, f"article_box_{key}", extra).plotly_chart(
        figure, key=f"article_{key}", theme=None, config=config, height="stretch"
    )

numbers = st.container(horizontal=True, gap="large")  # wraps on a narrow screen: no number is cut
numbers.metric(t("article.entropy_correct"), f"{analysis.row_entropy(correct_map).mean():.3f}", width="content")
numbers.metric(t("article.entropy_changed"), f"{analysis.row_entropy(changed_map).mean():.3f}", width="content")
numbers.metric(
    t("article.max_difference"), f"{analysis.max_abs_difference(changed_map, correct_map):.3f}", width="content"
)
st.caption(t("article.reading", uniform=f"{math.log2(len(labels)):.3f}"))
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
st.table(
    pd.DataFrame(
        [
            [t(f"article.row_{row}"), t(f"article.row_{row}_article"), t(f"article.row_{row}_correct")]
            for row in TABLE_ROWS
        ],
        columns=[t("article.col_step"), t("article.col_article"), t("article.col_correct")],
    ).set_index(t("article.col_step"))
)

pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
downloads.buttons(pretrained, changed_map, panels[1], layer, head, "article", labels)
