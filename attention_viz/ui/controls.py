"""The sidebar controls every page shares: language, examples, model, text, second sentence, layer, head."""

from __future__ import annotations

import streamlit as st

from attention_viz.loading import BUNDLED_MODEL, LoadedModel, ModelLoadError
from attention_viz.ui import cache, feedback, presets_ui, state
from attention_viz.ui.i18n import LANGUAGE_KEY, LANGUAGES, t


def sidebar() -> LoadedModel | None:
    """Draw the shared controls; return the loaded model, or ``None`` after showing why it failed.

    Every control is drawn even when the model fails, so none of them loses its value.
    """
    state.init()
    typed = st.session_state["model"]
    with st.sidebar:
        st.radio(t("sidebar.language"), list(LANGUAGES), key=LANGUAGE_KEY, format_func=LANGUAGES.get, horizontal=True)
        presets_ui.picker()
        st.selectbox(
            t("sidebar.model"),
            [BUNDLED_MODEL] + ([typed] if typed and typed != BUNDLED_MODEL else []),
            key="model",
            accept_new_options=True,
            help=t("sidebar.model_help"),
        )
        st.text_area(t("sidebar.text"), key="text", height=100)
        st.text_input(t("sidebar.pair"), key="pair", help=t("sidebar.pair_help"))
        try:
            loaded = cache.model(state.selection().model)
        except ModelLoadError as exc:
            st.error(feedback.escape_markdown(str(exc)))
            loaded = None
        layers, heads = state.model_shape(None if loaded is None else loaded.info)
        st.slider(t("sidebar.layer"), 0, layers - 1, key="layer", disabled=loaded is None)
        st.slider(t("sidebar.head"), 0, heads - 1, key="head", disabled=loaded is None)
        st.toggle(t("sidebar.fit_range"), key="fit_range", help=t("sidebar.fit_range_help"))
        if loaded is not None:
            info = loaded.info
            st.caption(
                t(
                    "sidebar.model_info",
                    name=feedback.escape_markdown(info.name),
                    layers=info.num_layers,
                    heads=info.num_heads,
                    hidden=info.hidden_size,
                    head_dim=info.head_dim,
                    vocab=f"{info.vocab_size:,}",
                    positions=info.max_positions,
                )
            )
        st.toggle(t("sidebar.presentation"), key="presentation", help=t("sidebar.presentation_help"))
    return loaded
