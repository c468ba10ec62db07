"""The sidebar controls every page shares: model, text, optional second sentence, layer, head."""

from __future__ import annotations

import streamlit as st

from attention_viz.loading import BUNDLED_MODEL, LoadedModel, ModelLoadError
from attention_viz.ui import cache, state


def sidebar() -> LoadedModel | None:
    """Draw the shared controls; return the loaded model, or ``None`` after showing why it failed."""
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
        st.text_area("Sentence", key="text", max_chars=state.MAX_CHARS, height=100)
        st.text_input(
            "Second sentence (optional)",
            key="pair",
            max_chars=state.MAX_CHARS,
            help="Makes a sentence pair: [CLS] A [SEP] B [SEP], with segment ids 0 and 1.",
        )
        try:
            loaded = cache.model(st.session_state["model"] or BUNDLED_MODEL)
        except ModelLoadError as exc:
            st.error(str(exc))
            return None
        info = loaded.info
        state.clamp("layer", info.num_layers - 1)
        state.clamp("head", info.num_heads - 1)
        st.slider("Layer", 0, info.num_layers - 1, key="layer")
        st.slider("Head", 0, info.num_heads - 1, key="head")
        st.toggle("Fit colour range to values", key="fit_range", help="Off: a fixed 0-1 range.")
        st.caption(
            f"{info.name}: {info.num_layers} layers × {info.num_heads} heads, hidden {info.hidden_size}, "
            f"head_dim {info.head_dim}, vocabulary {info.vocab_size:,}, up to {info.max_positions} tokens. "
            "Layers and heads count from 0."
        )
    return loaded
