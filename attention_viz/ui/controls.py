"""The sidebar controls every page shares: language, examples, model, text, second sentence, layer, head."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from attention_viz.models.loading import BUNDLED_MODEL, LoadedModel, ModelLoadError
from attention_viz.ui import cache, feedback, presets_ui, state
from attention_viz.ui.i18n import LANGUAGE_KEY, LANGUAGES, t
from attention_viz.ui.safe_text import Markdown


def kept_slider(label: Markdown, key: str, count: int, **options) -> int:
    """A slider over ``0 .. count - 1`` whose choice survives a change of ``count`` (case C24).

    A choice still in range is kept; one out of range is clamped, with a note under the slider. Any
    page can use it for a control whose range follows the model. With one choice (a model of one layer
    or one head) there is nothing to slide, and ``st.slider`` refuses equal ends: a caption says 0.
    """
    moved = state.keep_choice(key, range(count))
    if count == 1:
        if st.session_state.get(key) != 0:  # the unrendered slider's last value can come back: set it each run
            st.session_state[key] = 0
        st.caption(t("sidebar.only_choice", control=label))
        return 0
    value = st.slider(label, 0, count - 1, key=key, **options)
    if moved is not None:
        st.caption(t("sidebar.model_clamped", control=label, old=moved[0], last=count - 1, new=moved[1]))
    return value


def model_choices(typed: str | None) -> tuple[list[str], Callable[[str], str]]:
    """The Model box's options (the bundled model, the models found on this machine, what was typed)
    and how each is shown: a found model with its family ("roberta-base · RoBERTa")."""
    found = cache.found_models()
    options = list(dict.fromkeys([BUNDLED_MODEL, *found, *([typed] if typed else [])]))
    return options, lambda name: t("families.found", name=name, family=found[name]) if name in found else name


def _model() -> LoadedModel | None:
    """The typed model; if it fails, the previous one (the bundled one before any) and a message.

    Called before the Model box is drawn: after a failure the box shows the model that is shown (the
    message names the one that failed).
    """
    wanted = state.typed_model()
    try:
        loaded = cache.model(wanted)
    except ModelLoadError as exc:
        previous = state.active_model()
        if previous == wanted:
            previous = BUNDLED_MODEL
        try:
            loaded = cache.model(previous)
        except ModelLoadError:
            loaded = None
        feedback.model_failed(exc, previous)  # in the main area, above the page
        if loaded is None:
            return None
        wanted = st.session_state["model"] = previous
    state.set_active_model(wanted)
    return loaded


def sidebar() -> LoadedModel | None:
    """Draw the shared controls; return the model to show, or ``None`` if not even the fallback loads.

    A model that fails to load leaves the previous one in place with one message in the main area;
    every control keeps its value.
    """
    state.init()
    feedback.settings_problem()
    loaded = _model()
    typed = st.session_state["model"]
    with st.sidebar:
        st.radio(t("sidebar.language"), list(LANGUAGES), key=LANGUAGE_KEY, format_func=LANGUAGES.get, horizontal=True)
        presets_ui.picker()
        options, shown = model_choices(typed)
        st.selectbox(
            t("sidebar.model"),
            options,
            format_func=shown,
            key="model",
            accept_new_options=True,
            help=t("sidebar.model_help"),
        )
        st.text_area(t("sidebar.text"), key="text", height=100)
        st.text_input(t("sidebar.pair"), key="pair", help=t("sidebar.pair_help"))
    with st.sidebar:
        layers, heads = state.model_shape(None if loaded is None else loaded.info)
        kept_slider(t("sidebar.layer"), "layer", layers, disabled=loaded is None)
        kept_slider(t("sidebar.head"), "head", heads, disabled=loaded is None)
        st.toggle(t("sidebar.fit_range"), key="fit_range", help=t("sidebar.fit_range_help"))
        if loaded is not None:
            info = loaded.info
            st.caption(
                t(
                    "sidebar.model_info",
                    name=feedback.literal(info.name),
                    layers=info.num_layers,
                    heads=info.num_heads,
                    hidden=info.hidden_size,
                    head_dim=info.head_dim,
                    vocab=f"{info.vocab_size:,}",
                    max_tokens=cache.app_settings().limits.tokens_for(info.max_positions),
                    dtype=info.checkpoint_dtype,
                )
            )
        st.toggle(t("sidebar.presentation"), key="presentation", help=t("sidebar.presentation_help"))
    return loaded
