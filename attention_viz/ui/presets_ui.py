"""The examples (``assets/presets``): chosen in one compact box in the sidebar, with what to look for."""

from __future__ import annotations

import streamlit as st

from attention_viz.analysis import presets
from attention_viz.models.loading import LoadedModel
from attention_viz.ui import cache, state
from attention_viz.ui.i18n import language, t
from attention_viz.ui.safe_text import Markdown


def _apply(widget: str) -> None:
    """Set the chosen example's text, pair, layer and head (the Inside page starts on its query token)."""
    chosen = st.session_state.get(widget)
    preset = next((p for p in presets.load() if p.id == chosen), None)
    if preset is None:
        return
    st.session_state.update(
        text=preset.text, pair=preset.pair, layer=preset.layer, head=preset.head, inside_query=-1, masked=""
    )


def active() -> presets.Preset | None:
    """The example whose text and pair are the current input, if any."""
    s = st.session_state
    return next((p for p in presets.load() if p.text == s["text"] and p.pair == (s["pair"] or "")), None)


def _titles_and_widget() -> tuple[dict, str]:
    titles = {p.id: Markdown(p.title[language()]) for p in presets.load()}  # the project's own words
    return titles, state.widget_key("example", titles.values())


def _shown() -> str | None:
    """The example the box should show: the one whose text, layer and head the view is on."""
    current = active()
    on_it = current is not None and (st.session_state["layer"], st.session_state["head"]) == (
        current.layer,
        current.head,
    )
    return current.id if on_it else None


def picker_is_stale() -> bool:
    """Whether the box, drawn in the last whole run, shows another example than the view is on now (a page
    that reran alone moved the layer or head; see :mod:`attention_viz.ui.fragment`)."""
    _, widget = _titles_and_widget()
    return widget in st.session_state and st.session_state[widget] != _shown()


def picker() -> None:
    """One box of examples; it shows the example the view is on (its text, layer and head), else none.

    Once the text is edited or the view steps to another head the box is empty, so choosing the same
    example again goes back to its head.
    """
    titles, widget = _titles_and_widget()
    shown = _shown()
    if widget not in st.session_state or st.session_state[widget] != shown:
        st.session_state[widget] = shown
    st.selectbox(
        t("presets.label"),
        list(titles),
        key=widget,
        format_func=lambda preset_id: titles.get(preset_id, str(preset_id)),
        placeholder=t("presets.placeholder"),
        on_change=state.guarded(_apply),
        args=(widget,),
        help=t("presets.help"),
    )


def look_for(loaded: LoadedModel, place=st) -> None:
    """What to look for in the current example, while the view is on its layer and head.

    The weight comes from the model's result; once the layer or head moves away the note goes, as it
    would speak of a head that is not shown.
    """
    preset = active()
    s = st.session_state
    if preset is None or (s["layer"], s["head"]) != (preset.layer, preset.head):
        return
    if not (preset.layer < loaded.info.num_layers and preset.head < loaded.info.num_heads):
        return
    result = cache.pretrained(loaded, preset.text, preset.pair or None)
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
    place.info(t("presets.active", title=Markdown(preset.title[language()])) + " " + text, icon=":material/lightbulb:")
