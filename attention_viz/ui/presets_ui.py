"""The examples (``assets/presets``): chosen in one click in the sidebar, with what to look for."""

from __future__ import annotations

import streamlit as st

from attention_viz.analysis import presets
from attention_viz.models.loading import LoadedModel
from attention_viz.ui import cache
from attention_viz.ui.i18n import language, t
from attention_viz.ui.safe_text import Markdown

_PICKER = "_preset"  # a one-shot widget: reset after each choice, so the same example can be chosen again


def _apply() -> None:
    chosen = st.session_state[_PICKER]
    if chosen is None:
        return
    preset = next(p for p in presets.load() if p.id == chosen)
    st.session_state.update(
        text=preset.text, pair=preset.pair, layer=preset.layer, head=preset.head, inside_query=-1, masked=""
    )
    st.session_state[_PICKER] = None


def picker() -> None:
    """One pill per example; a click sets the text, the pair, the layer and the head."""
    st.pills(
        t("presets.label"),
        [p.id for p in presets.load()],
        key=_PICKER,
        format_func={p.id: Markdown(p.title[language()]) for p in presets.load()}.__getitem__,  # fixed at draw time
        on_change=_apply,
        help=t("presets.help"),
    )


def active() -> presets.Preset | None:
    """The example whose text and pair are the current input, if any."""
    s = st.session_state
    return next((p for p in presets.load() if p.text == s["text"] and p.pair == (s["pair"] or "")), None)


def look_for(loaded: LoadedModel) -> None:
    """What to look for in the current example, with its weight read from the model's result."""
    preset = active()
    if preset is None:
        return
    result = cache.pretrained(loaded, preset.text, preset.pair or None)
    if not (preset.layer < loaded.info.num_layers and preset.head < loaded.info.num_heads):
        return
    found = presets.finding(preset, result.encoding, result.weights[preset.layer, preset.head])
    text = Markdown(preset.look_for[language()])  # the project's own words (assets/presets), in Markdown
    if found is not None:
        query, key, weight = found
        labels = result.encoding.labels
        text += " " + t(
            "presets.finding",
            layer=preset.layer,
            head=preset.head,
            query=labels[query],
            key=labels[key],
            weight=f"{weight:.2f}",
        )
    st.info(t("presets.active", title=Markdown(preset.title[language()])) + " " + text, icon=":material/lightbulb:")
