"""A decoder's continuation in the sidebar: generate N tokens after the sentence, then step through the
generation.

The number box (``generate_tokens``, 1-32) and the Generate button ask for the continuation; ``generated``
records how many tokens were asked for (0: none, the sentence alone) and ``generation_step`` which step is
shown. Step ``t`` shows every map over the sentence and the first ``t`` generated tokens: what the model
attended to when it predicted token ``t + 1``. In a causal decoder that is a forward of that prefix, which is
what the pages get (:func:`attention_viz.ui.server.cache.shown_continuation`). Each step is a run of the server:
the maps of each prefix are computed (once, cached), not cropped from the last step's.

An encoder (BERT family) does not generate: the controls are not drawn; a link that asks for a continuation
on one gets a short note.
"""

from __future__ import annotations

import streamlit as st

from attention_viz.extraction import InputError
from attention_viz.extraction.generation import GenerationError
from attention_viz.models.loading import LoadedModel
from attention_viz.ui.frame import feedback
from attention_viz.ui.server import cache
from attention_viz.ui.text.i18n import t
from attention_viz.ui.view import state

# Keys of the step buttons (Streamlit's button shortcuts; the arrows are the map's layer and head steps).
STEP_SHORTCUTS = {-1: "P", 1: "N"}


def _generate() -> None:
    """``on_click`` of Generate: ask for the number box's count of tokens and show the last step."""
    s = st.session_state
    s["generated"] = s["generation_step"] = s["generate_tokens"]


def _clear() -> None:
    """``on_click`` of the sentence-alone button: no continuation (the count in the box stays)."""
    st.session_state["generated"] = st.session_state["generation_step"] = 0


def _step(delta: int, total: int) -> None:
    """``on_click`` of ‹ and ›: one generated token less or more, between 0 and ``total``."""
    s = st.session_state
    s["generation_step"] = min(max(int(s["generation_step"]) + delta, 0), total)


def draw(loaded: LoadedModel | None) -> None:
    """The generation controls, in the sidebar under the sentence: for a decoder only."""
    s = st.session_state
    if loaded is None:
        return
    if not loaded.info.causal:
        if s["generated"]:  # a link made on a decoder: say why nothing was generated, and let it go
            st.caption(t("generation.encoder"))
            _clear_button(st)
        return
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="small")
    state.control(
        row.number_input,
        t("generation.tokens"),
        "generate_tokens",
        min_value=1,
        max_value=state.MAX_GENERATED,
        step=1,
        help=t("generation.tokens_help"),
        width=130,
    )
    row.button(t("generation.generate"), key="generation_generate", on_click=state.guarded(_generate))
    if not s["generated"]:
        return
    if s["pair"]:
        return  # a decoder reads one text: the page says so
    try:
        with st.spinner(t("generation.running")):
            ids = cache.continuation(loaded, s["text"], s["generated"])
    except InputError as exc:
        if exc.code == "no_room":  # an empty or too long text: the page says so already
            st.info(feedback.input_message(exc))
        _clear_button(st)
        return
    except GenerationError as exc:
        feedback.log.warning("no continuation of %s: %s", loaded.info.name, exc)
        st.info(t(f"generation.cannot_{exc.code}"))
        _clear_button(st)
        return
    _stepper(len(ids))


def _clear_button(place) -> None:
    place.button(
        "",
        icon=":material/close:",
        key="generation_clear",
        on_click=state.guarded(_clear),
        help=t("generation.clear"),
    )


def _stepper(total: int) -> None:
    """The step (a slider, 0 to ``total``), ‹ › and the button back to the sentence alone, and what the maps
    show now."""
    step = state.control(st.slider, t("generation.step"), "generation_step", min_value=0, max_value=total, note=False)
    row = st.container(horizontal=True, vertical_alignment="center", gap="small", key="generation_steps")
    for delta, icon, where in ((-1, "chevron_left", "previous"), (1, "chevron_right", "next")):
        row.button(
            "",
            icon=f":material/{icon}:",
            key=f"generation_{where}",
            on_click=state.guarded(_step),
            args=(delta, total),
            shortcut=STEP_SHORTCUTS[delta],
            help=t(f"generation.step_{where}"),
        )
    _clear_button(row)
    st.caption(t("generation.shown", step=step, total=total, mark=cache.GENERATED_MARK))
