"""The Experiments page's results, cached per model and input: a knocked-out key, minimal pairs, predictions.

Keyed as every result of the current text is (:func:`attention_viz.ui.server.cache.keyed_input`).
"""

from __future__ import annotations

import streamlit as st

from attention_viz import extraction
from attention_viz.models.loading import LoadedModel
from attention_viz.ui.server.cache import RESULT_TTL, app_settings, keyed_input, model_key


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _knockout(_loaded: LoadedModel, model_name: str, text, pair, limits, key, scope, layer, head, _encoding):
    from attention_viz.analysis import knockout as knock

    return knock.knock_out_key(_loaded.encoder, _encoding, key, scope, layer, head)


def knockout(loaded: LoadedModel, text: str, pair: str | None, key: int, scope: str, layer: int, head: int):
    """:func:`attention_viz.analysis.knockout.knock_out_key` on the current input (from-scratch encoder).

    Raises:
        ValueError: a key the model cannot lose (a decoder's first token).
    """
    limits, found = keyed_input(loaded, text, pair)
    return _knockout(loaded, model_key(loaded), text, pair, limits, key, scope, layer, head, found)


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _minimal_pair(_loaded: LoadedModel, model_name: str, text_a: str, text_b: str, limits):
    from attention_viz.analysis import minimal_pairs

    return minimal_pairs.minimal_pair(_loaded, text_a, text_b, limits)


def minimal_pair(loaded: LoadedModel, text_a: str, text_b: str):
    """Both sentences' pretrained attention and their token alignment.

    Raises:
        InputError: an empty or too long sentence.
    """
    limits = app_settings().limits
    for text in (text_a, text_b):
        extraction.encode(loaded.tokenizer, text, None, loaded.info.max_positions, limits)  # refuse early
    return _minimal_pair(loaded, model_key(loaded), text_a, text_b, limits)


@st.cache_resource(max_entries=2, show_spinner="Loading the language-model head…")
def _lm_head(_loaded: LoadedModel, model_name: str):
    from attention_viz.models import lm_head as heads

    return heads.load_lm_head(_loaded.info)


def lm_head(loaded: LoadedModel):
    """The checkpoint's language-model head, or None (the bundled model has none)."""
    return _lm_head(loaded, model_key(loaded))


@st.cache_data(max_entries=64, ttl=RESULT_TTL, show_spinner=False)
def _predictions(_loaded, model_name, text, pair, limits, position, k, off, knocked, _encoding):
    from attention_viz.analysis import knockout as knock

    head = lm_head(_loaded)
    return knock.changed_predictions(_loaded.encoder, head, _loaded.tokenizer, _encoding, position, k, off, knocked)


def predictions(loaded: LoadedModel, text: str, pair: str | None, position: int, k: int, off=None, knocked=None):
    """Top-``k`` predictions at ``position``; ``off`` a ``(layer, head)`` switched off, ``knocked`` a
    ``(key, scope, layer, head)`` removed (see :mod:`attention_viz.analysis.knockout`)."""
    limits, found = keyed_input(loaded, text, pair)
    return _predictions(loaded, model_key(loaded), text, pair, limits, position, k, off, knocked, found)
