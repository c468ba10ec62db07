"""The examples (``assets/presets``): chosen in one compact box in the sidebar, with what to look for."""

from __future__ import annotations

import streamlit as st

from attention_viz.analysis import presets
from attention_viz.models.loading import LoadedModel
from attention_viz.ui.server import cache
from attention_viz.ui.text.i18n import language, t
from attention_viz.ui.text.safe_text import Markdown
from attention_viz.ui.view import browser_view, state


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
    """The example the box shows: the one whose sentence (and pair) is the input, whatever the head.

    It changes only with the input, which only a run of the whole app changes, so the box is never out of
    date after a page reran alone (a head step). The way back to the example's own head is on the page
    (:func:`look_for`)."""
    current = active()
    return None if current is None else current.id


def picker() -> None:
    """One box of examples; it shows the example whose sentence is the input, else none (once the text is
    edited, the box is empty)."""
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


def _back(layer: int, head: int) -> None:
    st.session_state.update(layer=layer, head=head)
    browser_view.moved()  # the map goes there, though the server's view may not have left it (steps not yet told)


NOTE_KEY, BACK_KEY = "example_note", "example_back_box"  # containers Compare's map shows or hides in the browser


def look_for(loaded: LoadedModel, place=st, in_browser: bool = False) -> tuple[int, int] | None:
    """What to look for in the current example, while the view is on its layer and head; elsewhere, a button
    back to that head. Returns the example's ``(layer, head)``, or ``None`` when the input is no example.

    The weight comes from the model's result; once the layer or head moves away the note goes, as it
    would speak of a head that is not shown. ``in_browser`` (Compare, whose map steps in the browser): both
    are drawn, in containers keyed :data:`NOTE_KEY` and :data:`BACK_KEY`, the one that does not fit the
    session's head hidden; the map shows the one that fits the head it shows, as it steps.
    """
    preset = active()
    s = st.session_state
    if preset is None or not (preset.layer < loaded.info.num_layers and preset.head < loaded.info.num_heads):
        return None
    at_example = (s["layer"], s["head"]) == (preset.layer, preset.head)
    if in_browser:
        hidden = BACK_KEY if at_example else NOTE_KEY
        place.html(f"<style>.st-key-{hidden} {{ display: none; }}</style>")
    if not at_example or in_browser:
        (place.container(key=BACK_KEY) if in_browser else place).button(
            t("presets.back", layer=preset.layer, head=preset.head),
            key="example_back",
            icon=":material/undo:",
            on_click=state.guarded(_back),
            args=(preset.layer, preset.head),
        )
        if not in_browser:
            return preset.layer, preset.head
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
    note = place.container(key=NOTE_KEY) if in_browser else place
    note.info(t("presets.active", title=Markdown(preset.title[language()])) + " " + text, icon=":material/lightbulb:")
    return preset.layer, preset.head
