"""The article's layer: the seed article's SelfAttention next to a correct layer, differences one at a time.

A head or layer step (the keys, the ‹ › buttons, the Layer and Head boxes of the first map) and a click on a cell
run nothing on the server: the first map's element draws the title, the boxes, the numbers and the note that
names the layer for the head it shows, the two maps beside it follow it, and the next run learns the view
(:mod:`attention_viz.ui.attention_map.page_view`).
"""

import math

import pandas as pd
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import article_compare
from attention_viz.analysis.layer_maps import ARTICLE_PANELS
from attention_viz.extraction import export
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.attention_map import page_view
from attention_viz.ui.frame import feedback, screen
from attention_viz.ui.server import cache, cache_maps
from attention_viz.ui.shared import controls, downloads
from attention_viz.ui.text.i18n import plain, t
from attention_viz.ui.text.safe_text import Markdown
from attention_viz.ui.view import state

TABLE_ROWS = ("projections", "scaling", "mask", "output", "returned", "inputs")


def _show() -> None:
    selection, loaded = controls.shown_model()
    layer, head = selection.layer, selection.head
    # The first map's element draws the title and the Layer and Head boxes here, and answers the arrow keys.
    top = st.container(horizontal=True, vertical_alignment="center", gap="small")
    page_view.slot(top.container(key=page_view.CONTROLS_SLOT, width="content"))
    controls.explain(top, t("article.intro"))
    switched_on, seed = _switches(loaded.info)
    encoding, correct, changed = feedback.or_stop(
        cache.article_maps, loaded, selection.text, selection.pair, layer, seed, tuple(switched_on)
    )
    feedback.truncation(encoding)
    labels = encoding.labels
    changed_map, correct_map = changed[head], correct[head]
    style = figures.map_style(selection.presentation, len(labels))
    figure = _download_figure(correct_map, changed_map, labels, switched_on, selection.fit_range, style)
    _maps(loaded, selection, labels, style, seed, switched_on)
    page_view.slot(st.container(key=page_view.DETAILS_SLOT))  # the first map draws the head's numbers here
    st.caption(t("article.reading", uniform=f"{math.log2(len(labels)):.3f}"))
    _table()
    pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
    page_view.server_files(
        lambda: downloads.buttons(pretrained, changed_map, figure, layer, head, "article", labels),
        t("compare.downloads_follow"),
    )


def _switches(info) -> tuple[list[str], int]:
    """The article's differences switched on and the seed of its random weights, in one row."""
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
    return switched_on, int(seed)


def _changed_title(switched_on, text=t) -> str:
    """The article layer's map title, through ``text`` (:func:`t` for the page, :func:`plain` for the element)."""
    return text("article.fig_changed", count=len(switched_on)) if switched_on else text("article.fig_none")


def _download_figure(correct_map, changed_map, labels, switched_on, fit_range: bool, style):
    """The article's map of the head as the HTML download holds it (the elements draw the maps on screen), in the
    range it shares with the correct layer's when fitted."""
    zrange = figures.shared_range(correct_map, changed_map) if fit_range else (0.0, 1.0)
    axis_titles = {"query_title": t("figures.axis_query"), "key_title": t("figures.axis_key"), "style": style}
    return figures.attention_heatmap(changed_map, labels, _changed_title(switched_on), zrange, **axis_titles)


def _maps(loaded, selection, labels, style, seed: int, switched_on) -> None:
    """The three map elements in a row: the correct layer's head, the article's, and their difference; the
    first answers the arrow keys, the two beside it follow it in the browser."""
    info = loaded.info
    differences = tuple(sorted(switched_on))
    recipes = cache_maps.article_recipes(loaded, selection.text, selection.pair, seed, differences, selection.fit_range)
    # side by side while each map keeps readable cells, else two or one a row
    min_width = (
        len(labels) * (style.font_size + 4) + figures.label_room(labels, style.font_size) + 3 * style.font_size + 40
    )
    titles = (plain("article.fig_correct"), _changed_title(switched_on, plain), plain("article.fig_difference"))
    lead = {
        "controls": page_view.controls(plain("article.title", layer="{layer}", head="{head}")),
        "details": {
            "numbers": _numbers(loaded, selection, seed, differences),
            "notes": [
                plain(
                    "article.same_input",
                    layer="{layer}",
                    seed=seed,
                    gain=f"{article_compare.WEIGHT_GAIN:g}",
                    heads=info.num_heads,
                    hidden=info.hidden_size,
                )
            ],
        },
        "follow": page_view.follow(("layer", "head")),
    }
    places = screen.map_row(st, "article_maps", 3, min_width)
    for index, (place, key, panel) in enumerate(zip(places, attention_map.ARTICLE_KEYS, ARTICLE_PANELS, strict=True)):
        spec = attention_map.MapSpec(
            layers=info.num_layers,
            heads=info.num_heads,
            style=style,
            **attention_map.scale(panel == "difference"),
            texts=attention_map.texts(titles[index]),
            png_prefix=export.file_stem(info.name),
            png_what=key,
            keys=index == 0,  # one map answers the arrow keys; the two beside it follow it in the browser
            follow=index > 0,
            told=True,
        )
        maps = cache_maps.held_maps(recipes[panel], attention_map.held(spec, len(labels), len(labels)))
        extra = lead if index == 0 else None
        attention_map.draw(place.container(), key, spec, maps, recipes[panel], extra)


NUMBER_KEYS = ("entropy_correct", "entropy_changed", "max_difference")


def _numbers(loaded, selection, seed: int, differences: tuple) -> dict:
    """Every head's mean row entropy (bits) in both layers and their largest absolute difference, as shown
    (``values[layer][head]``: the three of :data:`NUMBER_KEYS`, three decimals), with their labels: the first map
    shows a head's as it steps. Made once per text, seed and differences (a session memo)."""
    content = (loaded.info.name, loaded.info.revision, selection.text, selection.pair, seed, differences)

    def make() -> list:
        values = []
        for layer in range(loaded.info.num_layers):
            _, correct, changed = cache.article_maps(loaded, selection.text, selection.pair, layer, seed, differences)
            agreement = analysis.head_agreement(correct, changed)  # (heads,) each
            numbers = ("entropy_first", "entropy_second", "largest")  # as NUMBER_KEYS
            values.append([[f"{agreement[name][head]:.3f}" for name in numbers] for head in range(len(correct))])
        return values

    values = cache.session_memo("_article_numbers", content, make)
    return {"labels": [plain(f"article.{name}") for name in NUMBER_KEYS], "values": values}


def _table() -> None:
    """What the article's layer does at each step, beside what a correct layer does."""
    st.table(
        pd.DataFrame(
            [
                [t(f"article.row_{row}"), t(f"article.row_{row}_article"), t(f"article.row_{row}_correct")]
                for row in TABLE_ROWS
            ],
            columns=[t("article.col_step"), t("article.col_article"), t("article.col_correct")],
        ).set_index(t("article.col_step"))
    )


_show()
