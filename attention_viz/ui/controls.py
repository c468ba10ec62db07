"""The sidebar controls every page shares: model, text, optional second sentence, layer, head."""

from __future__ import annotations

import streamlit as st

from attention_viz.loading import BUNDLED_MODEL, LoadedModel, ModelLoadError
from attention_viz.ui import cache, feedback, state
from attention_viz.ui.i18n import t


def sidebar() -> LoadedModel | None:
    """Draw the shared controls; return the loaded model, or ``None`` after showing why it failed.

    Every control is drawn even when the model fails, so none of them loses its value.
    """
    state.init()
    typed = st.session_state["model"]
    with st.sidebar:
        st.selectbox(
            "Model",
            [BUNDLED_MODEL] + ([typed] if typed and typed != BUNDLED_MODEL else []),
            key="model",
            accept_new_options=True,
            help="The bundled all-MiniLM-L6-v2 needs no network. Type a BERT hub name you have cached "
            "(e.g. bert-base-uncased) or a local folder to use another.",
        )
        st.text_area("Sentence", key="text", height=100)
        st.text_input(
            "Second sentence (optional)",
            key="pair",
            help="Makes a sentence pair: [CLS] A [SEP] B [SEP], with segment ids 0 and 1.",
        )
        try:
            loaded = cache.model(state.selection().model)
        except ModelLoadError as exc:
            st.error(feedback.escape_markdown(str(exc)))
            loaded = None
        layers, heads = state.model_shape(None if loaded is None else loaded.info)
        st.slider("Layer", 0, layers - 1, key="layer", disabled=loaded is None)
        st.slider("Head", 0, heads - 1, key="head", disabled=loaded is None)
        st.toggle("Fit colour range to values", key="fit_range", help="Off: a fixed 0-1 range.")
        if loaded is not None:
            info = loaded.info
            st.caption(
                f"{feedback.escape_markdown(info.name)}: {info.num_layers} layers × {info.num_heads} heads, "
                f"hidden {info.hidden_size}, head_dim {info.head_dim}, vocabulary {info.vocab_size:,}, "
                f"up to {info.max_positions} tokens. Layers and heads count from 0."
            )
        st.toggle(t("sidebar.presentation"), key="presentation", help=t("sidebar.presentation_help"))
    return loaded
