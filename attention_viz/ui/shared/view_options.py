"""The three view toggles every heatmap view shares: word level, hide [CLS]/[SEP], pair block.

One call draws them and returns :class:`attention_viz.analysis.ViewOptions`; the core function
:func:`attention_viz.analysis.apply_view` applies them to a ``(..., t, t)`` array. Their values live
under the ``word_level``, ``hide_special`` and ``block`` keys of :data:`state.DEFAULTS`, so they
survive page changes and go into the shareable URL.
"""

from __future__ import annotations

import streamlit as st

from attention_viz.analysis import BLOCKS, ViewMatrix, ViewOptions
from attention_viz.ui.text.i18n import t
from attention_viz.ui.text.safe_text import Markdown
from attention_viz.ui.view import state


def view_options(is_pair: bool, place=st) -> ViewOptions:
    """Draw the toggles in ``place``, one under the other, and return the chosen options.

    Args:
        is_pair: whether the input is a sentence pair; the block choice is drawn only for a pair
            (a single sentence has one block, "all", whatever was chosen for a pair before).
        place: the container (a column beside the map).
    """
    word_level = state.control(place.toggle, t("views.word_level"), "word_level", help=t("views.word_level_help"))
    hide_special = state.control(
        place.toggle, t("views.hide_special"), "hide_special", help=t("views.hide_special_help")
    )
    block = "all"
    if is_pair:
        block = state.control(
            place.selectbox,
            t("views.block"),
            "block",
            list(BLOCKS),
            labels=lambda b: t(f"views.block_{b}"),
            help=t("views.block_help"),
        )
    return ViewOptions(word_level, hide_special, block)


def view_caption(view: ViewMatrix, options: ViewOptions, place=st) -> None:
    """Say what the view shows when it is not the raw token-level map (renormalised rows)."""
    notes = []
    if options.word_level:
        notes.append(t("views.note_words"))
    if view.renormalised:
        notes.append(t("views.note_renormalised"))
    if options.block != "all":
        notes.append(t("views.note_block", block=t(f"views.block_{options.block}")))
    if notes:
        place.caption(Markdown(" ").join(notes))
