"""The one place that caches: the model per process, results per input.

The model is loaded once per process and model name (``st.cache_resource``) and shared read-only by
every session (case C15). Results are cached by everything that changes them, with the model's name
in the key (case C16), so changing only the layer or head never runs the model again.

Results are shared too, not copied: ``st.cache_data`` unpickles a fresh copy on every call, which at 512
tokens is 75 MB of weights per result on every rerun (about 145 ms of a 512-token head change, measured
with ``python -m benchmarks.profile_rerun``). ``st.cache_resource`` hands every session the same
:class:`AttentionResult`, its arrays made read-only so no caller can change what another one sees.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import fields

import numpy as np
import pandas as pd
import streamlit as st

from attention_viz import analysis, extraction, settings
from attention_viz.analysis import article_compare, steps
from attention_viz.extraction import AttentionResult
from attention_viz.models import loading
from attention_viz.models.loading import LoadedModel, ModelLoadError

SECRETS_SECTION = "attention_viz"  # [attention_viz] in .streamlit/secrets.toml: allowed_models, model_root, ...


def _secrets() -> dict:
    try:
        return dict(st.secrets[SECRETS_SECTION]) if st.secrets.load_if_toml_exists() else {}
    except KeyError:
        return {}


def app_settings() -> settings.Settings:
    """The operator's settings: ``ATTENTION_VIZ_*`` environment variables, then ``[attention_viz]`` in
    ``.streamlit/secrets.toml``; the defaults (with the reason in the log) if a value is invalid.

    The server's start loads the bundled model through here (:mod:`attention_viz.ui.warmup`), so an
    invalid value is in the log from the start; :func:`settings_problem` lets a page say so too."""
    try:
        return settings.load(overrides=_secrets())
    except settings.SettingsError as exc:
        logging.getLogger("attention_viz").error("invalid setting, using the defaults: %s", exc)
        return settings.Settings()


def settings_problem() -> str | None:
    """Why the operator's settings are not used (the defaults are), or ``None`` when they are."""
    try:
        settings.load(overrides=_secrets())
    except settings.SettingsError as exc:
        return str(exc)
    return None


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _load(name: str, policy: settings.ModelPolicy) -> LoadedModel | ModelLoadError:
    # A failure is cached too: a missing hub model can take a minute of retries to fail.
    try:
        loaded = loading.load_model(name, policy)
    except ModelLoadError as exc:
        return exc
    # What is alive after the first load (torch, transformers, the app's modules, the model) lives as long as
    # the server. Streamlit collects garbage after every run (runner.postScriptGC); walking these ~465k
    # objects took 300 ms of each rerun, holding the GIL. Frozen, the cyclic collector skips them (0.2 ms).
    # Once only: a frozen object is never collected, and later loads would also freeze other sessions'
    # figures that happen to be alive. A collection first would cost those 300 ms once more and finds
    # nothing to free after a load (measured: 0 objects).
    if not gc.get_freeze_count():
        gc.freeze()
    return loaded


def model(name: str) -> LoadedModel:
    """The loaded model for ``name``; raises :class:`ModelLoadError` (cached) if it cannot load."""
    loaded = _load(name, app_settings().models)
    if isinstance(loaded, ModelLoadError):
        raise loaded
    return loaded


def _read_only(value: object) -> None:
    """Make every numpy array in a (nested) frozen dataclass read-only, in place."""
    for field in fields(value):
        item = getattr(value, field.name)
        if isinstance(item, np.ndarray):
            item.flags.writeable = False
        elif hasattr(item, "__dataclass_fields__"):
            _read_only(item)


# 32 entries bound the memory: a 512-token result of the bundled model is 75 MB.
@st.cache_resource(max_entries=32, show_spinner="Running the model…")
def attention(
    _loaded: LoadedModel,
    model_name: str,
    text: str,
    pair: str | None,
    source: str,
    variant: str,
    seed: int,
    limits: settings.Limits | None = None,
) -> AttentionResult:
    """Cached :func:`attention_viz.extraction.extract`, shared read-only by every session.

    ``_loaded`` is not hashed, ``model_name`` is. The result's arrays are not writeable: copy one
    (``np.array(result.weights)``) before changing it.
    """
    result = extraction.extract(_loaded, text, pair, source, variant, seed, limits)
    _read_only(result)
    return result


def _limits(loaded: LoadedModel, text: str, pair: str | None) -> settings.Limits:
    """The operator's limits; text over the character limit is refused here, before it is hashed for
    the cache key, so a 1 MB paste costs only the message."""
    limits = app_settings().limits
    if max(len(text or ""), len(pair or "")) > limits.max_chars:
        extraction.encode(loaded.tokenizer, text, pair, loaded.info.max_positions, limits)  # raises InputError
    return limits


def pretrained(loaded: LoadedModel, text: str, pair: str | None) -> AttentionResult:
    limits = _limits(loaded, text, pair)
    return attention(loaded, loaded.info.name, text, pair, "pretrained", "exact", 0, limits)


def scratch(loaded: LoadedModel, text: str, pair: str | None, variant: str, seed: int) -> AttentionResult:
    seed = seed if variant == "random" else 0  # the seed only matters to the random variant
    limits = _limits(loaded, text, pair)
    return attention(loaded, loaded.info.name, text, pair, "scratch", variant, seed, limits)


@st.cache_data(max_entries=32, show_spinner=False)
def _parity(_loaded: LoadedModel, model_name: str, text: str, pair: str | None) -> float:
    exact = scratch(_loaded, text, pair, "exact", 0).weights
    return analysis.max_abs_difference(exact, pretrained(_loaded, text, pair).weights)


def parity(loaded: LoadedModel, text: str, pair: str | None) -> float:
    """Max |exact from-scratch − pretrained| over every layer and head, computed once per input."""
    return _parity(loaded, loaded.info.name, text, pair)


def _encode(loaded: LoadedModel, text: str, pair: str | None) -> extraction.Encoding:
    """The input as the model sees it, within the operator's limits (what :func:`pretrained` is given)."""
    limits = app_settings().limits
    return extraction.encode(
        loaded.tokenizer, text, pair, loaded.info.max_positions, limits, loaded.encoder.config.type_vocab_size
    )


@st.cache_data(max_entries=32, show_spinner=False)
def _head_vectors(_loaded: LoadedModel, model_name: str, text: str, pair: str | None, layer: int, head: int):
    encoding = _encode(_loaded, text, pair)
    hidden = steps.layer_input(_loaded.encoder, encoding, layer)
    return encoding, steps.head_vectors(_loaded.encoder, hidden, layer, head)


def head_vectors(loaded: LoadedModel, text: str, pair: str | None, layer: int, head: int):
    """``(encoding, (queries, keys, values))`` of one head, each ``(t, head_dim)`` (see :mod:`steps`)."""
    return _head_vectors(loaded, loaded.info.name, text, pair, layer, head)


@st.cache_data(max_entries=16, show_spinner=False)
def _article_maps(
    _loaded: LoadedModel, model_name: str, text: str, pair: str | None, layer: int, seed: int, differences: tuple
):
    encoding = _encode(_loaded, text, pair)
    hidden = steps.layer_input(_loaded.encoder, encoding, layer)
    correct, article = article_compare.seeded_layers(_loaded.info.hidden_size, _loaded.info.num_heads, seed)
    base = article_compare.variant_weights(hidden, correct, article)
    return encoding, base, article_compare.variant_weights(hidden, correct, article, differences)


def article_maps(loaded: LoadedModel, text: str, pair: str | None, layer: int, seed: int, differences: tuple):
    """``(encoding, correct, with_differences)``: both ``(heads, query, key)`` on the layer's input."""
    return _article_maps(loaded, loaded.info.name, text, pair, layer, seed, tuple(sorted(differences)))


# --- Exploring heads (issue 8): statistics, importance, similarity, flow ------------------------------

CORPUS_RESULTS_KEPT = 8


@st.cache_data(max_entries=32, show_spinner=False)
def _text_statistics(_loaded: LoadedModel, model_name: str, text: str, pair: str | None) -> pd.DataFrame:
    result = pretrained(_loaded, text, pair)
    frame = analysis.head_statistics(result.weights, analysis.TokenKinds.from_encoding(result.encoding))
    frame["importance"] = analysis.head_importance(_loaded.encoder, result.encoding).reshape(-1)  # layer-major
    return frame


def text_statistics(loaded: LoadedModel, text: str, pair: str | None) -> pd.DataFrame:
    """Per-head statistics, tags and importance of the current text (one row per layer and head)."""
    return _text_statistics(loaded, loaded.info.name, text, pair).copy()


@st.cache_resource(show_spinner=False)
def _corpus_store() -> tuple[OrderedDict, threading.Lock]:
    # Corpus runs report progress to the page, which st.cache_data cannot replay: results are kept here.
    return OrderedDict(), threading.Lock()


def corpus_statistics(
    loaded: LoadedModel, corpus: str, batch_size: int, importance: bool, progress=None
) -> analysis.CorpusResult:
    """Statistics (and head divergence; importance if asked) over a corpus text, computed once per model,
    corpus and options; ``progress(done, total)`` is called while it runs. Streamlit stops the run when
    the user changes the input or presses Stop (the next progress update raises), and nothing is stored then.

    Raises:
        InputError: an empty corpus, or one over the operator's limits.
    """
    digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()
    key = (loaded.info.name, digest, batch_size, importance)
    store, lock = _corpus_store()
    with lock:
        if key in store:
            store.move_to_end(key)
            return store[key]
    texts = analysis.parse_corpus(corpus)
    limits = app_settings().limits
    result = analysis.corpus_statistics(
        loaded, texts, batch_size, progress, importance=importance, divergence=True, limits=limits
    )
    with lock:
        store[key] = result
        while len(store) > CORPUS_RESULTS_KEPT:
            store.popitem(last=False)
    return result


@st.cache_data(max_entries=32, show_spinner=False)
def _text_divergence(_loaded: LoadedModel, model_name: str, text: str, pair: str | None) -> np.ndarray:
    return analysis.head_divergence(pretrained(_loaded, text, pair).weights)


def text_divergence(loaded: LoadedModel, text: str, pair: str | None) -> np.ndarray:
    """``(n, n)`` JS divergence between every pair of heads on the current text (bits)."""
    return _text_divergence(loaded, loaded.info.name, text, pair)


@st.cache_data(max_entries=32, show_spinner=False)
def mds_layout(divergence: np.ndarray) -> np.ndarray:
    """Cached :func:`attention_viz.analysis.mds_layout` (keyed by the divergence matrix itself)."""
    return analysis.mds_layout(divergence)


@st.cache_data(max_entries=32, show_spinner=False)
def _rollout_and_norms(
    _loaded: LoadedModel, model_name: str, text: str, pair: str | None, layer: int
) -> analysis.RolloutAndNorms:
    encoding = pretrained(_loaded, text, pair).encoding
    return analysis.rollout_and_norms(_loaded.encoder, encoding, layer)


def rollout_and_norms(loaded: LoadedModel, text: str, pair: str | None, layer: int) -> analysis.RolloutAndNorms:
    """Raw head average, rollout up to ``layer`` and norm-based attention for the current text."""
    return _rollout_and_norms(loaded, loaded.info.name, text, pair, layer)
