"""The controls every page shares: the sidebar (language, sentence, examples, model, presentation) and the
layer and head stepper that a page draws beside its map."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from attention_viz import figures
from attention_viz.models import sizes
from attention_viz.models.loading import BUNDLED_MODEL, LoadedModel, ModelLoadError
from attention_viz.ui.frame import feedback
from attention_viz.ui.server import cache, cache_seq2seq
from attention_viz.ui.shared import generation_ui, presets_ui, seq2seq_ui
from attention_viz.ui.text.i18n import LANGUAGE_KEY, LANGUAGES, plain, t
from attention_viz.ui.text.safe_text import Markdown
from attention_viz.ui.view import state

# Keyboard shortcuts of the stepper (Streamlit's button shortcuts: they work wherever the focus is,
# except in a text box): left and right step through the heads, up and down through the layers.
SHORTCUTS = {("head", -1): "Left", ("head", 1): "Right", ("layer", -1): "Up", ("layer", 1): "Down"}


def model_choices(typed: str | None) -> tuple[list[str], Callable[[str], str]]:
    """The Model box's options (the bundled model, the models found on this machine, what was typed)
    and how each is shown: a found model with its family ("roberta-base · RoBERTa")."""
    found = cache.found_models()
    options = list(dict.fromkeys([BUNDLED_MODEL, *found, *([typed] if typed else [])]))
    # an option of a select box renders no Markdown: the name as it is
    return options, lambda name: plain("families.found", name=name, family=found[name]) if name in found else name


def _load(name: str):
    """The model ``name`` from the cache: an encoder or decoder, else a T5 or BART (an encoder–decoder).

    Raises:
        ModelLoadError: it loads as neither.
    """
    try:
        return cache.model(name)
    except ModelLoadError as exc:
        if exc.code != "encoder_decoder":
            raise
    return cache_seq2seq.seq2seq_model(name)


def _model() -> LoadedModel | None:
    """The typed model; if it fails, the previous one (the bundled one before any) and a message.

    Called before the Model box is drawn: after a failure the box shows the model that is shown (the
    message names the one that failed).
    """
    wanted = state.typed_model()
    try:
        loaded = _load(wanted)
    except ModelLoadError as exc:
        previous = state.active_model()
        if previous == wanted:
            previous = BUNDLED_MODEL
        try:
            loaded = _load(previous)
        except ModelLoadError:
            loaded = None
        feedback.model_failed(exc, previous)  # in the main area, above the page
        if loaded is None:
            return None
        wanted = st.session_state["model"] = previous
    state.set_active_model(wanted)
    return loaded


def shown_model() -> tuple[state.Selection, LoadedModel]:
    """The page's start: the view's :class:`~attention_viz.ui.view.state.Selection` and the model it shows
    (loaded once per process, :func:`attention_viz.ui.server.cache.model`)."""
    selection = state.selection()
    return selection, cache.model(selection.model)


def model_box() -> None:
    """The Model box: the bundled model, the models found on this machine, or a name or folder typed in."""
    options, shown = model_choices(st.session_state["model"])
    st.selectbox(
        t("sidebar.model"),
        options,
        format_func=shown,
        key="model",
        accept_new_options=True,
        help=t("sidebar.model_help"),
    )


def _model_info(loaded) -> None:
    """The sidebar's captions of the model's shape (an encoder–decoder's: both stacks), size and reload."""
    info = loaded.info
    named = dict(
        name=feedback.literal(info.name),
        hidden=info.hidden_size,
        vocab=f"{info.vocab_size:,}",
        dtype=info.checkpoint_dtype,
    )
    if seq2seq_ui.is_seq2seq(loaded):
        stacks = dict(
            encoder_layers=info.encoder_layers,
            encoder_heads=info.encoder_heads,
            decoder_layers=info.decoder_layers,
            decoder_heads=info.decoder_heads,
        )
        st.caption(t("seq2seq.model_info", family=info.family_name, **stacks, **named))
        return
    tokens = cache.app_settings().limits.tokens_for(info.max_positions)
    shape = dict(layers=info.num_layers, heads=info.num_heads, head_dim=info.head_dim, max_tokens=tokens)
    st.caption(t("sidebar.model_info", **shape, **named))
    if info.heads_per_group > 1:
        groups = info.num_heads // info.heads_per_group
        st.caption(t("sidebar.model_groups", heads=info.num_heads, groups=groups, size=info.heads_per_group))
    estimate = cache.forward_estimate(loaded)
    (size, size_unit), (time, time_unit) = sizes.size_parts(info.weight_bytes), sizes.duration_parts(estimate.seconds)
    st.caption(
        t(
            "sidebar.model_size",
            parameters=f"{info.parameters:,}",
            size=size,
            size_unit=size_unit,
            tokens=estimate.tokens,
            time=time,
            time_unit=time_unit,
        )
    )
    if cache.was_reloaded(loaded):
        st.caption(t("sidebar.model_reloaded", name=feedback.literal(info.name)), help=t("sidebar.model_reloaded_help"))


def sidebar(places: dict | None = None) -> LoadedModel | None:
    """Draw the shared controls; return the model to show, or ``None`` if not even the fallback loads.

    What a lecturer reaches for before anything else comes first, in view without scrolling on a
    projector's 1280 × 720 screen and at 800 × 600: the Presentation switch, then the Language choice with
    the link to this view beside it; the sentence comes next. A model that fails to load leaves the previous one in
    place with one message in the main area; every control keeps its value. A layer or head that the model
    does not have is clamped, with a note. ``places``, if given, gets ``"share"``: a slot beside the
    Language choice for the link to this view (drawn later).
    """
    state.init()
    feedback.settings_problem()
    loaded = _model()  # before the Model box: after a failure the box shows the model that is shown
    with st.sidebar:
        st.toggle(t("sidebar.presentation"), key="presentation", help=t("sidebar.presentation_help"))
        top = st.container(horizontal=True, vertical_alignment="center", gap="small")  # no row of its own for the link
        top.radio(  # its options name the languages: the row needs no label above it (it stays for screen readers)
            t("sidebar.language"),
            list(LANGUAGES),
            key=LANGUAGE_KEY,
            format_func=LANGUAGES.get,
            horizontal=True,
            width="content",
            label_visibility="collapsed",
        )
        if places is not None:
            places["share"] = top.container(width="content")
        seq2seq_ui.input_area(loaded, st.session_state["presentation"])  # T5, BART: source, target, kind
        if not seq2seq_ui.is_seq2seq(loaded):
            generation_ui.draw(loaded)  # a decoder's continuation of the sentence
        presets_ui.picker()
        model_box()
    with st.sidebar:
        if seq2seq_ui.is_seq2seq(loaded):  # the chosen attention kind's stack: the encoder's or the decoder's
            shape = seq2seq_ui.shape(loaded)
        else:
            shape = state.model_shape(None if loaded is None else loaded.info)
        for key, old, new in state.keep_in_model(shape):
            last = shape[0 if key == "layer" else 1] - 1
            st.caption(t("sidebar.model_clamped", control=t(f"sidebar.{key}"), old=old, last=last, new=new))
        if loaded is not None:
            _model_info(loaded)
        st.toggle(t("sidebar.fit_range"), key="fit_range", help=t("sidebar.fit_range_help"))
    return loaded


def _step_button(place, unit: str, delta: int, shortcut: bool = True) -> None:
    direction = "next" if delta > 0 else "previous"
    place.button(
        "",
        icon=":material/chevron_right:" if delta > 0 else ":material/chevron_left:",
        key=f"step_{unit}_{direction}",
        on_click=state.guarded(state.step),
        args=(unit, delta),
        shortcut=SHORTCUTS[unit, delta] if shortcut else None,
        help=t(f"controls.{unit}_{direction}"),
    )


def _stepper(place, unit: str, count: int, shortcuts: bool = True) -> int:
    """One unit's control: previous, the choice, next; the buttons answer their keyboard shortcuts too."""
    row = place.container(horizontal=True, vertical_alignment="bottom", gap="small", width="content")
    _step_button(row, unit, -1, shortcuts)
    value = state.control(
        row.selectbox, t(f"sidebar.{unit}"), unit, range(count), help=t(f"controls.{unit}_help"), width=92
    )
    _step_button(row, unit, 1, shortcuts)
    return value


def explain(place, *paragraphs: Markdown) -> None:
    """A "?" button that opens what the page shows, so that the explanation takes no room on the screen."""
    with place.popover("", icon=":material/help:", help=t("compare.explain")):
        st.markdown(Markdown("\n\n").join(paragraphs))


def title_row(key: str, heading: Markdown, *paragraphs: Markdown, subheader: bool = False) -> None:
    """A page's (or a section's) title with the "?" of its explanation beside it (:func:`explain`), in a
    row keyed ``key``."""
    row = st.container(horizontal=True, vertical_alignment="center", key=key)
    (row.subheader if subheader else row.header)(heading, width="content")
    explain(row, *paragraphs)


def head_picker(
    place=st,
    layer: bool = True,
    head: bool = True,
    explanation: tuple[Markdown, ...] = (),
    shortcuts: bool = True,
) -> tuple[int, int]:
    """The layer and head stepper, in ``place``: a choice for each, with previous and next buttons.

    Keyboard (:data:`SHORTCUTS`): left and right step the head (after a layer's last head comes the
    next layer's first), up and down the layer. Works for a model of one layer or one head (one
    choice; the buttons wrap onto it). The page's ``explanation`` goes in a "?" popover at the end of
    the row. ``shortcuts=False`` leaves the keys to a map element that steps in the browser (the keys
    would otherwise step twice). Returns the chosen ``(layer, head)``.
    """
    shape = state.model_shape(None)
    row = place.container(horizontal=True, gap="small", vertical_alignment="bottom", key="head_picker")
    chosen_layer = _stepper(row, "layer", shape[0], shortcuts) if layer else st.session_state["layer"]
    chosen_head = _stepper(row, "head", shape[1], shortcuts) if head else st.session_state["head"]
    if explanation:
        explain(row, *explanation)
    return chosen_layer, chosen_head


def head_table(frame, columns: dict, key: str) -> None:
    """A table of every head, one row per head (``layer`` and ``head`` first, numbered from 0), at most 420 px
    tall; ``columns``: the other columns' ``st.column_config`` entries. A number that does not apply shows as
    :data:`attention_viz.figures.MISSING_TEXT` ("—"), never "None" or 0."""
    st.dataframe(
        frame,
        hide_index=True,
        placeholder=figures.MISSING_TEXT,
        height=min(38 + 35 * len(frame), 420),
        column_config={
            "layer": st.column_config.NumberColumn(t("stats.col_layer")),
            "head": st.column_config.NumberColumn(t("stats.col_head")),
            **columns,
        },
        key=key,
    )


def token_choice(place, key: str, labels, default: int, label: Markdown, options=None) -> int:
    """A select box in ``place`` of one token of ``labels`` (shown ``"3: cat"``), bound to the setting ``key``;
    ``options``: the token positions offered (default all). A stored position that is not offered (a shorter
    text, or -1: none chosen yet) becomes ``default``, without a note. Returns the position chosen."""
    options = list(range(len(labels))) if options is None else options
    return state.control(
        place.selectbox,
        label,
        key,
        options,
        labels=lambda i: f"{i}: {figures.isolate(labels[i])}",
        decode=lambda stored: stored if stored in options else default,
        note=False,
    )
