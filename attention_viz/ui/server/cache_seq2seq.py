"""Encoder–decoders (T5, BART) cached: the model per process, and per source and target text the three kinds of
attention (encoder, decoder, cross), a written target, and what each attention module of the twin read.

As for the encoders (:mod:`attention_viz.ui.server.cache`): loaded once per name and files on disk, results shared
read-only by every session, keyed by the model's name and fingerprint, the texts and the operator's limits.
"""

from __future__ import annotations

import streamlit as st

from attention_viz import extraction, settings
from attention_viz.extraction.results import read_only
from attention_viz.models import loading
from attention_viz.models.loading import ModelLoadError
from attention_viz.ui import internals
from attention_viz.ui.server.cache import RESULT_TTL, app_settings, model_key


@st.cache_resource(max_entries=2, show_spinner="Loading the model…")
def _load_seq2seq(name: str, policy: settings.ModelPolicy, revision: str):
    # As attention_viz.ui.server.cache's loading: keyed by what is on disk, a failure cached too.
    from attention_viz.models.loading import load_seq2seq

    try:
        loaded = load_seq2seq(name, policy)
    except ModelLoadError as exc:
        return exc
    internals.freeze_survivors()
    return loaded


def seq2seq_model(name: str):
    """The loaded T5 or BART model for ``name`` (:class:`~attention_viz.models.loading.LoadedSeq2Seq`), once per
    process and files on disk, shared read-only.

    Raises:
        ModelLoadError: it cannot load (cached as :func:`model`'s failures are).
    """
    policy = app_settings().models
    loaded = _load_seq2seq(name, policy, loading.disk_revision(name, policy))
    if isinstance(loaded, ModelLoadError):
        raise loaded
    return loaded


@st.cache_resource(max_entries=32, ttl=RESULT_TTL, show_spinner="Running the model…")
def _seq2seq_result(_loaded, model_name: str, source: str, target: str, computed_by: str, limits: settings.Limits):
    from attention_viz.extraction.seq2seq import extract_seq2seq

    return read_only(extract_seq2seq(_loaded, source, target, computed_by, limits))


def seq2seq_result(loaded, source: str, target: str, computed_by: str):
    """:func:`~attention_viz.extraction.seq2seq.extract_seq2seq` of ``source`` and ``target`` (``computed_by``
    ``"pretrained"``: transformers, ``"scratch"``: the twin), once per model, texts and limits, read-only: encoder
    ``(L_enc, h_enc, s, s)``, decoder ``(L_dec, h_dec, t, t)`` and cross-attention ``(L_dec, h_dec, t, s)``.

    Raises:
        InputError: an empty or too long source or target (refused before the texts are hashed).
    """
    limits = app_settings().limits
    extraction.check_length(source, target, limits, names=("source", "target"))
    key = model_key(loaded)
    return _seq2seq_result(loaded, key, source, target, computed_by, limits)


@st.cache_resource(max_entries=16, ttl=RESULT_TTL, show_spinner="Writing the target…")
def _seq2seq_generated(_loaded, model_name: str, source: str, tokens: int, computed_by: str, limits: settings.Limits):
    from attention_viz.extraction.seq2seq import generate_seq2seq

    return read_only(generate_seq2seq(_loaded, source, tokens, computed_by, limits))


def seq2seq_generated(loaded, source: str, tokens: int, computed_by: str):
    """:func:`~attention_viz.extraction.seq2seq.generate_seq2seq`: the model writes up to ``tokens`` target tokens
    for ``source`` (greedy) and the three kinds of maps of the written target, once per model, source, count and
    limits, read-only; ``generated`` marks the written tokens.

    Raises:
        InputError: an empty or too long source.
        GenerationError: the checkpoint was saved without its language-model head.
    """
    limits = app_settings().limits
    extraction.check_length(source, None, limits, names=("source", "target"))
    key = model_key(loaded)
    return _seq2seq_generated(loaded, key, source, tokens, computed_by, limits)


@st.cache_resource(max_entries=16, ttl=RESULT_TTL, show_spinner="Running the model…")
def _seq2seq_inputs(_loaded, model_name: str, source_ids: tuple, target_ids: tuple, _result):
    from attention_viz.analysis.seq2seq_steps import sublayer_inputs

    return read_only(sublayer_inputs(_loaded.twin, _result.source, _result.target))


def seq2seq_inputs(loaded, result):
    """:func:`~attention_viz.analysis.seq2seq_steps.sublayer_inputs`: what each attention module of the twin read
    for ``result``'s source and target (a :func:`seq2seq_result` or :func:`seq2seq_generated`), once per model and
    token ids, read-only: the inputs of Inside a head's steps for an encoder–decoder."""
    key = model_key(loaded)
    ids = tuple(int(i) for i in result.source.input_ids), tuple(int(i) for i in result.target.input_ids)
    return _seq2seq_inputs(loaded, key, *ids, result)
