"""The three view toggles every heatmap view shares: word level, hide [CLS]/[SEP], pair block.

One call draws them and returns :class:`attention_viz.analysis.ViewOptions`; the core function
:func:`attention_viz.analysis.apply_view` applies them to a ``(..., t, t)`` array. Their values live
under the ``word_level``, ``hide_special`` and ``block`` keys of :data:`state.DEFAULTS`, so they
survive page changes and go into the shareable URL.
"""

from __future__ import annotations

import streamlit as st

from attention_viz.analysis import BLOCKS, ViewMatrix, ViewOptions
from attention_viz.ui import state
from attention_viz.ui.i18n import option_labels, t
from attention_viz.ui.safe_text import Markdown


def view_options(is_pair: bool) -> ViewOptions:
    """Draw the toggles in one row and return the chosen options.

    Args:
        is_pair: whether the input is a sentence pair; the block choice is disabled (and "all") otherwise.
    """
    state.init()
    word, hide, block = st.columns([1, 1, 1.4])
    word_level = word.toggle(
        t("views.word_level"),
        value=bool(st.session_state["word_level"]),
        help=t("views.word_level_help"),
        key=state.page_widget_key("word_level"),
        on_change=state.remember,
        args=("word_level",),
    )
    hide_special = hide.toggle(
        t("views.hide_special"),
        value=bool(st.session_state["hide_special"]),
        help=t("views.hide_special_help"),
        key=state.page_widget_key("hide_special"),
        on_change=state.remember,
        args=("hide_special",),
    )
    blocks = list(BLOCKS)
    chosen = st.session_state["block"] if st.session_state["block"] in BLOCKS else "all"
    choice = block.selectbox(
        t("views.block"),
        blocks,
        index=blocks.index(chosen),
        format_func=option_labels(blocks, lambda b: f"views.block_{b}"),  # fixed in the language of the run
        disabled=not is_pair,
        help=t("views.block_help"),
        key=state.page_widget_key("block"),
        on_change=state.remember,
        args=("block",),
    )
    return ViewOptions(word_level, hide_special, choice if is_pair else "all")


def view_caption(view: ViewMatrix, options: ViewOptions) -> None:
    """Say what the view shows when it is not the raw token-level map (case C11: renormalised rows)."""
    notes = []
    if options.word_level:
        notes.append(t("views.note_words"))
    if view.renormalised:
        notes.append(t("views.note_renormalised"))
    if options.block != "all":
        notes.append(t("views.note_block", block=t(f"views.block_{options.block}")))
    if notes:
        st.caption(Markdown(" ").join(notes))
