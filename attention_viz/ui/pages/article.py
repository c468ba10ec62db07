"""The article's layer: the seed article's SelfAttention next to a correct layer, differences one at a time."""

import math

import numpy as np
import pandas as pd
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import article_compare
from attention_viz.extraction import export
from attention_viz.ui import cache, controls, downloads, feedback, screen, state
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.i18n import plain, t
from attention_viz.ui.safe_text import Markdown

TABLE_ROWS = ("projections", "scaling", "mask", "output", "returned", "inputs")

selection = state.selection()
loaded = cache.model(selection.model)
info = loaded.info
layer, head = selection.layer, selection.head
presentation = st.session_state["presentation"]

st.header(t("article.title", layer=layer, head=head))
# The first map answers the arrow keys itself (in the browser): the step buttons take no shortcuts here.
controls.head_picker(explanation=(t("article.intro"),), shortcuts=False)

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
plain_changed = plain("article.fig_changed", count=len(switched_on)) if switched_on else plain("article.fig_none")
zrange = figures.shared_range(correct_map, changed_map) if selection.fit_range else (0.0, 1.0)
style = figures.map_style(presentation, len(labels))
axis_titles = {"query_title": t("figures.axis_query"), "key_title": t("figures.axis_key"), "style": style}
panels = [  # the figures the HTML download holds; the elements draw the maps
    figures.attention_heatmap(correct_map, labels, t("article.fig_correct"), zrange, **axis_titles),
    figures.attention_heatmap(changed_map, labels, changed_title, zrange, **axis_titles),
    figures.difference_heatmap(
        changed_map - correct_map, labels, t("article.fig_difference"), selection.fit_range, **axis_titles
    ),
]
# side by side while each map keeps readable cells, else two or one a row
min_width = len(labels) * (style.font_size + 4) + figures.label_room(labels, style.font_size) + 3 * style.font_size + 40
hidden = cache.layer_inputs(loaded, selection.text, selection.pair)  # (L, t, hidden), read-only
differences = tuple(sorted(switched_on))
made: dict = {}  # layer -> (correct, changed), each (heads, t, t): the three maps share one computation


def _layer_maps(layers) -> tuple:
    for held in layers:
        if held not in made:
            made[held] = article_compare.article_maps(hidden[held], info.num_heads, int(seed), differences)
    return tuple(np.stack([made[held][i] for held in layers]) for i in (0, 1))  # 2 × (n, heads, t, t)


def _fitted(low: np.ndarray, high: np.ndarray):
    return np.stack([low, np.maximum(high, low + 1e-12)], axis=-1) if selection.fit_range else None


def _correct(layers):
    c, x = _layer_maps(layers)
    return c, _fitted(
        np.minimum(c.min(axis=(-2, -1)), x.min(axis=(-2, -1))), np.maximum(c.max(axis=(-2, -1)), x.max(axis=(-2, -1)))
    )


def _changed(layers):
    return _layer_maps(layers)[1], _correct(layers)[1]


def _difference(layers):
    c, x = _layer_maps(layers)
    bound = np.maximum(np.abs(x - c).max(axis=(-2, -1)), 1e-12)
    return x - c, _fitted(-bound, bound)


titles = (plain("article.fig_correct"), plain_changed, plain("article.fig_difference"))
content = (info.name, selection.text, selection.pair, int(seed), differences, selection.fit_range)
for index, (place, key, maps_of) in enumerate(
    zip(
        screen.map_row(st, "article_maps", 3, min_width),
        attention_map.ARTICLE_KEYS,
        (_correct, _changed, _difference),
        strict=True,
    )
):
    spec = attention_map.MapSpec(
        layers=info.num_layers,
        heads=info.num_heads,
        style=style,
        **attention_map.scale(maps_of is _difference),
        texts=attention_map.texts(titles[index]),
        png_prefix=export.file_stem(info.name),
        png_what=key,
        keys=index == 0,  # one map answers the arrow keys; the two beside it follow it in the browser
        follow=index > 0,
    )
    attention_map.draw(place.container(), key, spec, content, maps_of, tuple(labels), tuple(labels))

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
