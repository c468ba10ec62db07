"""The sidebar controls every page shares: model, text, optional second sentence, layer, head."""

from __future__ import annotations

import streamlit as st

from attention_viz.loading import BUNDLED_MODEL, LoadedModel, ModelLoadError
from attention_viz.ui import cache, feedback, state
from attention_viz.ui.i18n import t


def kept_slider(label: str, key: str, count: int, **options) -> int:
    """A slider over ``0 .. count - 1`` whose choice survives a change of ``count`` (case C24).

    A choice still in range is kept; one out of range is clamped, with a note under the slider. Any
    page can use it for a control whose range follows the model.
    """
    moved = state.keep_choice(key, range(count))
    value = st.slider(label, 0, count - 1, key=key, **options)
    if moved is not None:
        st.caption(t("sidebar.model_clamped", control=label, old=moved[0], last=count - 1, new=moved[1]))
    return value


def _model() -> LoadedModel | None:
    """The typed model; if it fails, the previous one (the bundled one before any) and a message."""
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
        wanted = previous
    state.set_active_model(wanted)
    return loaded


def sidebar() -> LoadedModel | None:
    """Draw the shared controls; return the model to show, or ``None`` if not even the fallback loads.

    A model that fails to load leaves the previous one in place with one message in the main area;
    every control keeps its value.
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
    loaded = _model()
    with st.sidebar:
        layers, heads = state.model_shape(None if loaded is None else loaded.info)
        kept_slider("Layer", "layer", layers, disabled=loaded is None)
        kept_slider("Head", "head", heads, disabled=loaded is None)
        st.toggle("Fit colour range to values", key="fit_range", help="Off: a fixed 0-1 range.")
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
    return loaded
