"""All heads: every layer × head of the pretrained model for the text; clicking one opens it in Compare."""

import functools

import streamlit as st

from attention_viz import figures
from attention_viz.ui.frame import feedback, screen
from attention_viz.ui.server import cache
from attention_viz.ui.shared import controls, downloads, model_notes, scores_ui
from attention_viz.ui.text.i18n import t
from attention_viz.ui.view import state

COMPARE = "attention_viz/ui/pages/compare.py"


def _on_thumbnail(heads: int) -> None:
    """A click on a thumbnail chooses its head (the sidebar's sliders follow); the page then opens Compare.

    The click targets are in row-major order: target ``layer * heads + head``.
    """
    points = st.session_state["head_grid"].selection.points
    if points:
        state.open_head(*divmod(int(points[0]["point_index"]), heads))


def _show() -> None:
    selection, loaded = controls.shown_model()
    info = loaded.info
    if state.head_to_open():
        st.switch_page(COMPARE)
    result = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
    encoding = result.encoding

    controls.title_row(
        "all_heads_title", t("all_heads.title", layers=info.num_layers, heads=info.num_heads), t("all_heads.intro")
    )
    feedback.truncation(encoding)
    pooled = encoding.num_tokens > figures.THUMBNAIL_SIZE
    st.caption(
        t("all_heads.caption", model=feedback.literal(info.name), tokens=encoding.num_tokens)
        + " "
        + (t("all_heads.pooled", size=figures.THUMBNAIL_SIZE) if pooled else "")
    )
    st.page_link(
        COMPARE,
        label=t("all_heads.open", layer=selection.layer, head=selection.head),
        icon=":material/compare:",
    )
    model_notes.layers(info)
    scores_ui.colour_by(loaded, encoding, result.weights, (selection.layer, selection.head))
    scale = screen.PRESENTATION_SCALE if selection.presentation else 1  # its titles grow with the page's text
    selected, title_font = (selection.layer, selection.head), round(figures.TITLE_FONT * scale)
    grid = cache.head_grid(loaded, selection.text, selection.pair, selection.fit_range, selected, title_font)
    height = figures.grid_height(info.num_layers, info.num_heads, encoding.num_tokens)
    box = screen.ratio_box(st, "head_grid_box", *height)
    box.plotly_chart(
        grid,
        key="head_grid",
        theme=None,
        on_select=state.guarded(
            functools.partial(_on_thumbnail, info.num_heads)
        ),  # plotly_chart's callback takes no args
        selection_mode="points",
        height="stretch",  # the box's height: square thumbnails, as far apart across as down
        config=downloads.chart_config(
            info.name, selection.layer, selection.head, "all_heads"
        ),  # PNG: the head outlined
    )


_show()
