"""The one place that caches: the model per process, results per input.

The model is loaded once per process and model name (``st.cache_resource``) and shared read-only by
every session. Results are cached by everything that changes them, with the model's name
in the key, so changing only the layer or head never runs the model again.

Results are shared too, not copied: ``st.cache_data`` unpickles a fresh copy on every call, which at 512
tokens is 75 MB of weights per result on every rerun (most of a 512-token head change's time then:
``python -m benchmarks.profile_rerun`` measures it). ``st.cache_resource`` hands every session the same
:class:`AttentionResult`, its arrays made read-only so no caller can change what another one sees.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import fields, replace

import numpy as np
import pandas as pd
import streamlit as st

from attention_viz import analysis, extraction, settings
from attention_viz.analysis import article_compare, steps
from attention_viz.extraction import AttentionResult, Encoding, generation
from attention_viz.models import catalog, loading, sizes
from attention_viz.models.loading import LoadedModel, ModelLoadError
from attention_viz.ui import internals

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
def _load(name: str, policy: settings.ModelPolicy, revision: str) -> LoadedModel | ModelLoadError:
    # Keyed by what is on disk too (``revision``): a folder saved again in place loads again, for new sessions.
    # A failure is cached too: a missing hub model can take a minute of retries to fail.
    try:
        loaded = loading.load_model(name, policy)
    except ModelLoadError as exc:
        return exc
    # What is alive after the first load lives as long as the server: out of the collector's way after
    # every run (why and how: attention_viz/ui/internals.py).
    internals.freeze_survivors()
    return loaded


@st.cache_data(ttl=60, show_spinner=False)
def _found_models(allowed: tuple[str, ...], root: str | None) -> dict[str, str]:
    found = catalog.find_models(settings.ModelPolicy(allowed, root))
    return {model.name: model.family_name for model in found}


def found_models() -> dict[str, str]:
    """``{name: family name}`` of the models on this machine that would load (cache and model folder);
    looked up again at most once a minute."""
    policy = app_settings().models
    return _found_models(policy.allowed, policy.root)


@st.cache_resource(show_spinner=False)
def _revisions() -> tuple[dict[str, str], dict[str, str], threading.Lock]:
    """``(last, reloaded, lock)``: per model name the fingerprint last asked for, and the one that replaced
    an earlier fingerprint (the model was loaded again because its files changed)."""
    return {}, {}, threading.Lock()


def model(name: str) -> LoadedModel:
    """The loaded model for ``name``; raises :class:`ModelLoadError` (cached) if it cannot load.

    Keyed by the name and what is on disk (:func:`attention_viz.models.loading.disk_revision`): after a
    checkpoint is saved again into its folder, the next run of any session loads the new weights, and every
    result is keyed by that too (:func:`model_key`)."""
    policy = app_settings().models
    revision = loading.disk_revision(name, policy)
    last, reloaded, lock = _revisions()
    with lock:
        if last.get(name, revision) not in ("", revision):
            reloaded[name] = revision
        last[name] = revision
    loaded = _load(name, policy, revision)
    if isinstance(loaded, ModelLoadError):
        raise loaded
    return loaded


@st.cache_resource(max_entries=4, show_spinner=False)
def _forward_estimate(_loaded: LoadedModel, model_name: str, tokens: int) -> sizes.ForwardEstimate:
    return sizes.estimate_forward(_loaded.encoder, tokens)


def forward_estimate(loaded: LoadedModel) -> sizes.ForwardEstimate:
    """How long a forward of ``loaded`` takes at 512 tokens (or the most it takes, if fewer), estimated once per
    process and model from one short timed forward (:func:`attention_viz.models.sizes.estimate_forward`)."""
    tokens = min(sizes.FORWARD_TOKENS, app_settings().limits.tokens_for(loaded.info.max_positions))
    return _forward_estimate(loaded, model_key(loaded), tokens)


def model_key(loaded: LoadedModel) -> str:
    """The model in a result's cache key: its name and the fingerprint of its files."""
    return f"{loaded.info.name}@{loaded.info.revision}"


def was_reloaded(loaded: LoadedModel) -> bool:
    """Whether ``loaded`` was loaded again in place of an older copy because its files changed on disk."""
    _, reloaded, lock = _revisions()
    with lock:
        return bool(loaded.info.revision) and reloaded.get(loaded.info.name) == loaded.info.revision


def _read_only(value):
    """Make ``value`` (an array, or every array in a nested frozen dataclass) read-only, in place; return it."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif hasattr(value, "__dataclass_fields__"):
        for field in fields(value):
            _read_only(getattr(value, field.name))
    return value


# Results keyed by a text are dropped an hour after they were computed; max_entries bounds them before that.
RESULT_TTL = "1h"


def encoding(loaded: LoadedModel, text: str, pair: str | None) -> Encoding:
    """The input as the model sees it, tokenised once per model, text and limits, shared read-only.

    Raises:
        InputError: an empty text, or a sentence over the operator's character limit: refused before
            the text is hashed for the cache key, so a 1 MB paste costs only the message.
    """
    return _input(loaded, text, pair)[1]


def _input(loaded: LoadedModel, text: str, pair: str | None) -> tuple[object, Encoding]:
    """The input's key (part of every key of a result computed from the encoding) and the encoding.

    The key is the operator's limits, or, when a decoder's continuation of the sentence is shown
    (:func:`shown_continuation`), the limits and the generated ids shown: the encoding is then the sentence
    followed by those tokens, their labels marked (:data:`GENERATED_MARK`), and every result computed from it
    (maps, statistics, the grid) is keyed by them.
    """
    limits = app_settings().limits
    extraction.check_length(text, pair, limits)
    found = _encoding(loaded, model_key(loaded), text, pair, limits)
    new = shown_continuation(loaded, text, pair)
    if not new:
        return limits, found
    return (limits, new), _extended(loaded, model_key(loaded), text, limits, new, found)


def _key(loaded: LoadedModel, text: str, pair: str | None) -> object:
    """The input's key alone (:func:`_input`)."""
    return _input(loaded, text, pair)[0]


# Marks a generated token's label on every axis and in the downloads (the token's own text comes first).
GENERATED_MARK = "✎"


@st.cache_resource(max_entries=64, ttl=RESULT_TTL, show_spinner=False)
def _extended(_loaded: LoadedModel, model_name: str, text: str, limits, new: tuple[int, ...], _encoding: Encoding):
    full = generation.extend_encoding(_encoding, _loaded.tokenizer, list(new))
    prompt = _encoding.num_tokens
    labels = full.labels[:prompt] + tuple(label + GENERATED_MARK for label in full.labels[prompt:])
    return _read_only(replace(full, labels=labels))


@st.cache_resource(max_entries=2, show_spinner=False)
def _generator(_loaded: LoadedModel, model_name: str):
    try:
        return generation.load_generator(_loaded.info)
    except generation.GenerationError as exc:  # kept: the next run says so again without reading the files
        return exc


def generator(loaded: LoadedModel):
    """The decoder's causal-LM model (:func:`attention_viz.extraction.generation.load_generator`), loaded once
    per process and model; the :class:`GenerationError` instead (returned, not raised) when it cannot generate
    (an encoder, a checkpoint saved without its LM head)."""
    return _generator(loaded, model_key(loaded))


@st.cache_resource(max_entries=64, ttl=RESULT_TTL, show_spinner=False)
def _continuation(_loaded: LoadedModel, model_name: str, text: str, limits, count: int, _encoding, _generator):
    return tuple(generation.continuation(_loaded, _encoding, count, _generator))


def continuation(loaded: LoadedModel, text: str, count: int) -> tuple[int, ...]:
    """The ids a decoder writes greedily after ``text`` (at most ``count``; fewer at its end token or the
    positions' end), computed once per model, text, limits and count and shared by every session.

    Raises:
        InputError: the text is refused, or fills every position (code ``no_room``).
        GenerationError: the model cannot generate (:func:`generator`).
    """
    limits = app_settings().limits
    extraction.check_length(text, None, limits)
    found = _encoding(loaded, model_key(loaded), text, None, limits)
    model = generator(loaded)
    if isinstance(model, generation.GenerationError):
        raise model
    return _continuation(loaded, model_key(loaded), text, limits, int(count), found, model)


def shown_continuation(loaded: LoadedModel, text: str, pair: str | None) -> tuple[int, ...]:
    """The generated ids the maps of ``text`` show now: the first ``generation_step`` of the ``generated``
    tokens asked for (the view's settings), when ``text`` is the sentence, there is no second sentence and
    the model is a decoder that generates; else none. A continuation that cannot be made shows none (the
    generation controls say why)."""
    s = st.session_state
    count = s.get("generated", 0)
    if not count or pair or not loaded.info.causal or text != s.get("text"):
        return ()
    try:
        ids = continuation(loaded, text, count)
    except (extraction.InputError, generation.GenerationError):
        return ()
    return ids[: max(0, min(int(s.get("generation_step", count)), len(ids)))]


@st.cache_resource(max_entries=64, ttl=RESULT_TTL, show_spinner=False)
def _encoding(_loaded: LoadedModel, model_name: str, text: str, pair: str | None, limits: settings.Limits):
    types = _loaded.encoder.config.type_vocab_size  # one token type: a pair is read as one segment
    return _read_only(extraction.encode(_loaded.tokenizer, text, pair, _loaded.info.max_positions, limits, types))


def _attention(_loaded: LoadedModel, _encoding: Encoding, source: str, variant: str, seed: int) -> AttentionResult:
    return _read_only(extraction.extract_encoded(_loaded, _encoding, source, variant, seed))


# Three caches by input length, so that a class of short sentences is never pushed out by a few long texts:
# a result is layers x heads x tokens^2 float32 (the bundled model: 0.66 MB at 48 tokens, 7.4 MB at 160 and
# 75 MB at 512), and the entries bound each cache's memory: at most about 130 MB, 240 MB and 600 MB for the
# bundled model. Forty students with a sentence each hold 80 short results (pretrained and from scratch), which
# the short cache keeps, so a head change of theirs runs no model.
# Three functions, not one cached three ways: Streamlit keys a cache by the function's name and code.
SHORT_TOKENS, MEDIUM_TOKENS = 48, 160


@st.cache_resource(max_entries=192, ttl=RESULT_TTL, show_spinner="Running the model…")
def _short(_loaded, model_name, text, pair, source, variant, seed, limits, _encoding) -> AttentionResult:
    return _attention(_loaded, _encoding, source, variant, seed)


@st.cache_resource(max_entries=32, ttl=RESULT_TTL, show_spinner="Running the model…")
def _medium(_loaded, model_name, text, pair, source, variant, seed, limits, _encoding) -> AttentionResult:
    return _attention(_loaded, _encoding, source, variant, seed)


@st.cache_resource(max_entries=8, ttl=RESULT_TTL, show_spinner="Running the model…")
def _long(_loaded, model_name, text, pair, source, variant, seed, limits, _encoding) -> AttentionResult:
    return _attention(_loaded, _encoding, source, variant, seed)


def attention(
    _loaded: LoadedModel,
    model_name: str,
    text: str,
    pair: str | None,
    source: str,
    variant: str,
    seed: int,
    limits: settings.Limits,
    _encoding: Encoding,
) -> AttentionResult:
    """Cached :func:`attention_viz.extraction.extract_encoded`, shared read-only by every session.

    ``_loaded`` and ``_encoding`` (the encoding of ``text`` and ``pair`` under ``limits``) are not
    hashed; the rest is the key. The result's arrays are not writeable: copy one
    (``np.array(result.weights)``) before changing it. ``attention.clear()`` empties every length's cache.
    """
    tokens = _encoding.num_tokens
    tier = _short if tokens <= SHORT_TOKENS else _medium if tokens <= MEDIUM_TOKENS else _long
    return tier(_loaded, model_name, text, pair, source, variant, seed, limits, _encoding)


def _clear_attention() -> None:
    for tier in (_short, _medium, _long):
        tier.clear()


attention.clear = _clear_attention


def pretrained(loaded: LoadedModel, text: str, pair: str | None) -> AttentionResult:
    """The pretrained model's attention (:func:`attention`)."""
    limits, found = _input(loaded, text, pair)
    return attention(loaded, model_key(loaded), text, pair, "pretrained", "exact", 0, limits, found)


def scratch(loaded: LoadedModel, text: str, pair: str | None, variant: str, seed: int) -> AttentionResult:
    """The from-scratch encoder's attention (:func:`attention`); the seed only matters to ``random``."""
    limits, found = _input(loaded, text, pair)
    seed = seed if variant == "random" else 0
    return attention(loaded, model_key(loaded), text, pair, "scratch", variant, seed, limits, found)


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _parity(model_name: str, text: str, pair: str | None, limits, _exact: np.ndarray, _theirs: np.ndarray) -> float:
    return analysis.max_abs_difference(_exact, _theirs)


def parity(loaded: LoadedModel, text: str, pair: str | None) -> float:
    """Max |exact from-scratch − pretrained| over every layer and head, computed once per input."""
    exact, theirs = scratch(loaded, text, pair, "exact", 0).weights, pretrained(loaded, text, pair).weights
    return _parity(model_key(loaded), text, pair, _key(loaded, text, pair), exact, theirs)


@st.cache_resource(max_entries=64, ttl=RESULT_TTL, show_spinner=False)
def _head_grid(model_name: str, text: str, pair: str | None, limits, fit_range: bool, selected, title_font, group, _w):
    from attention_viz import figures

    return figures.head_grid(_w, fit_range=fit_range, selected=selected, title_font=title_font, heads_per_group=group)


def head_grid(loaded: LoadedModel, text: str, pair: str | None, fit_range: bool, selected: tuple[int, int], title_font):
    """All heads' grid of the pretrained attention (:func:`attention_viz.figures.head_grid`), built once per model,
    input, colour range, outlined ``(layer, head)`` and title size, and shared by every session: a class on the
    same sentence builds it once (about 0.2 s of server Python each time otherwise, a third of a visit to All
    heads). At most 64 grids are kept (about 0.4 MB each at 16 tokens; a thumbnail is pooled to at most 48 tokens a
    side whatever the text).
    The figure is shared: pass it to ``st.plotly_chart`` as is (which reads it) and never change it."""
    weights = pretrained(loaded, text, pair).weights  # raises InputError first, as the page's own call does
    limits, group = _key(loaded, text, pair), loaded.info.heads_per_group  # query heads per key/value head (GQA)
    key = (model_key(loaded), text, pair, limits, fit_range, tuple(selected), int(title_font), group)
    return _head_grid(*key, weights)


# 8 texts: every layer's input is L × t × hidden float32 (4.7 MB at 512 tokens for the bundled model).
@st.cache_resource(max_entries=8, ttl=RESULT_TTL, show_spinner=False)
def _layer_inputs(_loaded: LoadedModel, model_name: str, text: str, pair: str | None, limits, _encoding: Encoding):
    return _read_only(steps.layer_inputs(_loaded.encoder, _encoding))


def layer_inputs(loaded: LoadedModel, text: str, pair: str | None) -> np.ndarray:
    """``(L, t, hidden)`` the hidden states entering every layer, one encoder run per text, read-only."""
    limits, found = _input(loaded, text, pair)
    return _layer_inputs(loaded, model_key(loaded), text, pair, limits, found)


@st.cache_resource(max_entries=16, ttl=RESULT_TTL, show_spinner=False)
def _layer_vectors(_loaded: LoadedModel, model_name: str, text: str, pair: str | None, limits, layer: int, _hidden):
    return _read_only(steps.layer_vectors(_loaded.encoder, _hidden, layer))


def head_vectors(loaded: LoadedModel, text: str, pair: str | None, layer: int, head: int):
    """``(encoding, (queries, keys, values))`` of one head, each ``(t, head_dim)`` (see :mod:`steps`).

    No forward on a change of head: every layer's input is computed once per text and each layer's
    projections once per text and layer; a head is an index into them.

    Raises:
        IndexError: a layer or head out of range.
    """
    limits, found = _input(loaded, text, pair)
    hidden = _layer_inputs(loaded, model_key(loaded), text, pair, limits, found)  # (L, t, hidden)
    if not 0 <= layer < len(hidden):
        raise IndexError(f"layer {layer} out of range: 0-{len(hidden) - 1}")
    vectors = _layer_vectors(loaded, model_key(loaded), text, pair, limits, layer, hidden[layer])  # (3, h, t, d)
    if not 0 <= head < vectors.shape[1]:
        raise IndexError(f"head {head} out of range: 0-{vectors.shape[1] - 1}")
    return found, tuple(vectors[:, head])


@st.cache_resource(max_entries=16, ttl=RESULT_TTL, show_spinner=False)
def _article_maps(
    model_name: str, text: str, pair: str | None, limits, layer: int, seed: int, differences: tuple, _hidden, heads
):
    return tuple(_read_only(weights) for weights in article_compare.article_maps(_hidden, heads, seed, differences))


def article_maps(loaded: LoadedModel, text: str, pair: str | None, layer: int, seed: int, differences: tuple):
    """``(encoding, correct, with_differences)``: both ``(heads, query, key)`` on the layer's input, read-only.

    Raises:
        IndexError: a layer out of range.
    """
    limits, found = _input(loaded, text, pair)
    hidden = _layer_inputs(loaded, model_key(loaded), text, pair, limits, found)  # (L, t, hidden)
    if not 0 <= layer < len(hidden):
        raise IndexError(f"layer {layer} out of range: 0-{len(hidden) - 1}")
    differences = tuple(sorted(differences))
    heads = loaded.info.num_heads
    return found, *_article_maps(model_key(loaded), text, pair, limits, layer, seed, differences, hidden[layer], heads)


# --- Exploring heads: statistics, importance, similarity, rollout and norms ----------------------------

CORPUS_RESULTS_KEPT = 8


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _text_statistics(_loaded: LoadedModel, model_name: str, text: str, pair: str | None, limits, _result):
    tokenizer = _loaded.tokenizer
    return analysis.text_statistics(
        _loaded.encoder,
        _result.weights,
        _result.encoding,
        tokenizer.cls_token,
        tokenizer.sep_token,
        _loaded.info.causal,
    )


def text_statistics(loaded: LoadedModel, text: str, pair: str | None) -> pd.DataFrame:
    """Per-head statistics, tags and importance of the current text (one row per layer and head); a copy."""
    result = pretrained(loaded, text, pair)
    return _text_statistics(loaded, model_key(loaded), text, pair, _key(loaded, text, pair), result)


@st.cache_resource(show_spinner=False)
def _corpus_store() -> tuple[OrderedDict, threading.Lock]:
    # Corpus runs report progress to the page, which st.cache_data cannot replay: results are kept here.
    return OrderedDict(), threading.Lock()


class _Run:
    """One corpus run in progress: whoever holds ``lock`` computes; ``progress`` is its last ``(done, total)``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.progress: tuple[float, int] | None = None


@st.cache_resource(show_spinner=False)
def _corpus_runs() -> dict:
    """Runs in progress by key (single flight: a second session with the same key waits for the first)."""
    return {}


WAIT_POLL_S = 0.25  # how often a waiting session passes the running one's progress on to its own page


def corpus_statistics(
    loaded: LoadedModel, corpus: str, batch_size: int, importance: bool, progress=None
) -> analysis.CorpusResult:
    """Statistics (and head divergence; importance if asked) over a corpus text, computed once per model,
    corpus and options; ``progress(done, total)`` is called while it runs. Streamlit stops the run when
    the user changes the input or presses Stop (the next progress update raises), and nothing is stored then.

    Single flight: a session asking for a run that another session is computing waits for that result
    (its ``progress`` gets the running one's progress meanwhile) instead of computing it again; if the
    running one is stopped, the waiting one computes it.

    Raises:
        InputError: an empty corpus, or one over the operator's limits.
    """
    digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()
    limits = app_settings().limits  # in the key: a corpus refused under new limits is not served from the store
    key = (model_key(loaded), digest, batch_size, importance, limits)
    store, lock = _corpus_store()
    runs = _corpus_runs()
    with lock:
        if key in store:
            store.move_to_end(key)
            return store[key]
        run = runs.setdefault(key, _Run())
    while not run.lock.acquire(timeout=WAIT_POLL_S):  # another session computes it: show its progress
        if progress is not None and run.progress is not None:
            progress(*run.progress)
    try:
        with lock:
            if key in store:  # the run waited for finished
                store.move_to_end(key)
                return store[key]

        def report(done: float, total: int) -> None:
            run.progress = (done, total)
            if progress is not None:
                progress(done, total)

        texts = analysis.parse_corpus(corpus)
        result = analysis.corpus_statistics(
            loaded, texts, batch_size, report, importance=importance, divergence=True, limits=limits
        )
        result = replace(result, num_skipped=result.num_skipped + analysis.corpus.blank_lines(corpus))  # blanks too
        with lock:
            store[key] = result
            while len(store) > CORPUS_RESULTS_KEPT:
                store.popitem(last=False)
            runs.pop(key, None)
        return result
    finally:
        run.lock.release()


def stored_corpus_statistics(
    loaded: LoadedModel, corpus: str, batch_size: int, importance: bool
) -> analysis.CorpusResult | None:
    """What :func:`corpus_statistics` holds for these arguments (a session computed it already), or None;
    nothing is computed."""
    digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()
    store, lock = _corpus_store()
    with lock:
        return store.get((model_key(loaded), digest, batch_size, importance, app_settings().limits))


ATLASES_KEPT = 4


@st.cache_resource(show_spinner=False)
def _atlas_store() -> tuple[OrderedDict, threading.Lock]:
    # An atlas run reports progress to the page, which st.cache_data cannot replay: results are kept here.
    return OrderedDict(), threading.Lock()


def atlas(loaded: LoadedModel, corpus: str, batch_size: int, progress=None):
    """The head atlas of a corpus text (:func:`attention_viz.analysis.atlas.build_atlas`, with the induction
    score), computed once per model, corpus and limits and shared by every session; ``progress(done, total)``
    is called while it runs, and Streamlit stops the run when the user presses Stop (nothing is stored then).

    Raises:
        InputError: an empty corpus, or one over the operator's limits.
    """
    from attention_viz.analysis import atlas as atlas_module

    digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()
    limits = app_settings().limits
    key = (model_key(loaded), digest, batch_size, limits)
    store, lock = _atlas_store()
    with lock:
        if key in store:
            store.move_to_end(key)
            return store[key]
    texts = analysis.parse_corpus(corpus)
    result = atlas_module.build_atlas(
        loaded, texts, batch_size=batch_size, induction=True, progress=progress, limits=limits
    )
    with lock:
        store[key] = result
        while len(store) > ATLASES_KEPT:
            store.popitem(last=False)
    return result


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _text_divergence(model_name: str, text: str, pair: str | None, limits, _weights: np.ndarray) -> np.ndarray:
    return analysis.head_divergence(_weights)


def text_divergence(loaded: LoadedModel, text: str, pair: str | None) -> np.ndarray:
    """``(n, n)`` JS divergence between every pair of heads on the current text (bits)."""
    weights = pretrained(loaded, text, pair).weights
    return _text_divergence(model_key(loaded), text, pair, _key(loaded, text, pair), weights)


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def mds_layout(divergence: np.ndarray) -> np.ndarray:
    """Cached :func:`attention_viz.analysis.mds_layout` (keyed by the divergence matrix itself)."""
    return analysis.mds_layout(divergence)


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _rollout_and_norms(
    _loaded: LoadedModel, model_name: str, text: str, pair: str | None, limits, layer: int, _encoding: Encoding
) -> analysis.RolloutAndNorms:
    return analysis.rollout_and_norms(_loaded.encoder, _encoding, layer)


def rollout_and_norms(loaded: LoadedModel, text: str, pair: str | None, layer: int) -> analysis.RolloutAndNorms:
    """Raw head average, rollout up to ``layer`` and norm-based attention for the current text."""
    limits, found = _input(loaded, text, pair)
    return _rollout_and_norms(loaded, model_key(loaded), text, pair, limits, layer, found)


# --- Named head scores on random sequences --------------------------------------------------------------

SCORE_RUNS_KEPT = 8


@st.cache_resource(show_spinner=False)
def _score_store() -> tuple[OrderedDict, threading.Lock]:
    # A score run reports progress to the page, which st.cache_data cannot replay: results are kept here.
    return OrderedDict(), threading.Lock()


def stored_head_scores(loaded: LoadedModel, count: int, length: int, seed: int):
    """The :class:`~attention_viz.analysis.head_scores.HeadScores` of an earlier run with these settings, or None."""
    store, lock = _score_store()
    with lock:
        return store.get((model_key(loaded), count, length, seed))


def head_scores(loaded: LoadedModel, count: int, length: int, seed: int, progress=None):
    """Named head scores on ``count`` seeded random sequences of ``length`` tokens, computed once per model and
    settings; ``progress(done, total)`` is called while they run.

    Raises:
        ValueError: settings the model or its vocabulary cannot take (the message says the most that fits).
    """
    from attention_viz.analysis import head_scores as scores

    key = (model_key(loaded), count, length, seed)
    found = stored_head_scores(loaded, count, length, seed)
    if found is not None:
        return found
    result = scores.model_head_scores(loaded, count, length, seed, progress)
    store, lock = _score_store()
    with lock:
        store[key] = result
        while len(store) > SCORE_RUNS_KEPT:
            store.popitem(last=False)
    return result


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _batch_seconds(_loaded: LoadedModel, model_name: str, length: int) -> float:
    from attention_viz.analysis import head_scores as scores

    return scores.estimate_seconds(_loaded, 2, length) / 2  # two batches of two: one repeated, one control


def head_score_seconds(loaded: LoadedModel, count: int, length: int) -> float:
    """How long :func:`head_scores` will take: one batch of two sequences timed once per model and length,
    times the ``2 * ceil(count / 2)`` batches of the run.

    Raises:
        ValueError: as :func:`head_scores` does.
    """
    return _batch_seconds(loaded, model_key(loaded), length) * 2 * -(-count // 2)


# --- Experiments: knock out a key, minimal pairs, predictions ---------------------------------------------


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _knockout(_loaded: LoadedModel, model_name: str, text, pair, limits, key, scope, layer, head, _encoding):
    from attention_viz.analysis import knockout as knock

    return knock.knock_out_key(_loaded.encoder, _encoding, key, scope, layer, head)


def knockout(loaded: LoadedModel, text: str, pair: str | None, key: int, scope: str, layer: int, head: int):
    """:func:`attention_viz.analysis.knockout.knock_out_key` on the current input (from-scratch encoder).

    Raises:
        ValueError: a key the model cannot lose (a decoder's first token).
    """
    limits, found = _input(loaded, text, pair)
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
    limits, found = _input(loaded, text, pair)
    return _predictions(loaded, model_key(loaded), text, pair, limits, position, k, off, knocked, found)


# --- Encoder–decoders (T5, BART): source and target text, three kinds of attention ------------------------


@st.cache_resource(max_entries=2, show_spinner="Loading the model…")
def _load_seq2seq(name: str, policy: settings.ModelPolicy, revision: str):
    # As _load: keyed by what is on disk, a failure cached too.
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

    return _read_only(extract_seq2seq(_loaded, source, target, computed_by, limits))


def seq2seq_result(loaded, source: str, target: str, computed_by: str):
    """:func:`~attention_viz.extraction.seq2seq.extract_seq2seq` of ``source`` and ``target`` (``computed_by``
    ``"pretrained"``: transformers, ``"scratch"``: the twin), once per model, texts and limits, read-only: encoder
    ``(L_enc, h_enc, s, s)``, decoder ``(L_dec, h_dec, t, t)`` and cross-attention ``(L_dec, h_dec, t, s)``.

    Raises:
        InputError: an empty or too long source or target (refused before the texts are hashed).
    """
    limits = app_settings().limits
    extraction.check_length(source, None, limits)
    extraction.check_length(target, None, limits)
    key = f"{loaded.info.name}@{loaded.info.revision}"
    return _seq2seq_result(loaded, key, source, target, computed_by, limits)


@st.cache_resource(max_entries=16, ttl=RESULT_TTL, show_spinner="Writing the target…")
def _seq2seq_generated(_loaded, model_name: str, source: str, tokens: int, computed_by: str, limits: settings.Limits):
    from attention_viz.extraction.seq2seq import generate_seq2seq

    return _read_only(generate_seq2seq(_loaded, source, tokens, computed_by, limits))


def seq2seq_generated(loaded, source: str, tokens: int, computed_by: str):
    """:func:`~attention_viz.extraction.seq2seq.generate_seq2seq`: the model writes up to ``tokens`` target tokens
    for ``source`` (greedy) and the three kinds of maps of the written target, once per model, source, count and
    limits, read-only; ``generated`` marks the written tokens.

    Raises:
        InputError: an empty or too long source.
        GenerationError: the checkpoint was saved without its language-model head.
    """
    limits = app_settings().limits
    extraction.check_length(source, None, limits)
    key = f"{loaded.info.name}@{loaded.info.revision}"
    return _seq2seq_generated(loaded, key, source, tokens, computed_by, limits)


@st.cache_resource(max_entries=16, ttl=RESULT_TTL, show_spinner="Running the model…")
def _seq2seq_inputs(_loaded, model_name: str, source_ids: tuple, target_ids: tuple, _result):
    from attention_viz.analysis.seq2seq_steps import sublayer_inputs

    return _read_only(sublayer_inputs(_loaded.twin, _result.source, _result.target))


def seq2seq_inputs(loaded, result):
    """:func:`~attention_viz.analysis.seq2seq_steps.sublayer_inputs`: what each attention module of the twin read
    for ``result``'s source and target (a :func:`seq2seq_result` or :func:`seq2seq_generated`), once per model and
    token ids, read-only: the inputs of Inside a head's steps for an encoder–decoder."""
    key = f"{loaded.info.name}@{loaded.info.revision}"
    ids = tuple(int(i) for i in result.source.input_ids), tuple(int(i) for i in result.target.input_ids)
    return _seq2seq_inputs(loaded, key, *ids, result)


# --- The attention map element's maps: one recipe per map kind, and the maps of the layers it holds -------
# Thin wrappers of attention_viz.analysis.layer_maps: a page asks for a recipe (the map kind, what the maps depend
# on, the cached inputs) and for the held layers' maps; the element keeps the recipe to make other layers later.

from attention_viz.analysis import layer_maps  # noqa: E402 (this block keeps its own import)


def compare_recipe(loaded: LoadedModel, text: str, pair: str | None, variant: str, seed: int, options, fit: bool):
    """Compare's maps: the pretrained model's and the from-scratch encoder's (``variant``, ``seed``) with the view
    toggles ``options``, colour ranges fitted per head when ``fit``
    (:func:`~attention_viz.analysis.layer_maps.compare`)."""
    first, second = pretrained(loaded, text, pair), scratch(loaded, text, pair, variant, seed)
    seed = seed if variant == "random" else 0
    key = (model_key(loaded), text, pair, _key(loaded, text, pair), variant, int(seed), options, bool(fit))
    arguments = dict(
        pretrained=first.weights, scratch=second.weights, encoding=first.encoding, options=options, fit=fit
    )
    return layer_maps.Recipe("compare", key, arguments)


def inside_recipe(
    loaded: LoadedModel, text: str, pair: str | None, query: int, scaling: float, temperature: float, masked, fit: bool
):
    """Inside a head's maps of every query: each head's weights with the page's scaling, temperature and masked
    keys (:func:`~attention_viz.analysis.layer_maps.inside`). Every query's row is computed alike, so the query
    followed is not part of the key."""
    limits, found = _input(loaded, text, pair)
    hidden = _layer_inputs(loaded, model_key(loaded), text, pair, limits, found)  # (L, t, hidden), read-only
    masked = tuple(int(k) for k in masked)
    key = (model_key(loaded), text, pair, limits, float(scaling), float(temperature), masked, bool(fit))
    arguments = dict(
        encoder=loaded.encoder,
        hidden=hidden,
        labels=tuple(found.labels),
        query=int(query),
        scaling=float(scaling),
        temperature=float(temperature),
        masked=masked,
        causal=loaded.info.causal,
        fit=fit,
    )
    return layer_maps.Recipe("inside", key, arguments)


def rollout_recipe(loaded: LoadedModel, text: str, pair: str | None, kind: str, options):
    """Rollout & norms' maps of ``kind`` (``raw``, ``rollout``, ``norm``), one per layer, with the view toggles
    (:func:`~attention_viz.analysis.layer_maps.rollout`)."""
    limits, found = _input(loaded, text, pair)
    key = (model_key(loaded), text, pair, limits, kind, options)
    return layer_maps.Recipe("rollout", key, dict(encoder=loaded.encoder, encoding=found, kind=kind, options=options))


def article_recipes(loaded: LoadedModel, text: str, pair: str | None, seed: int, differences, fit: bool) -> dict:
    """The article's layer's three maps by panel (``correct``, ``changed``, ``difference``), made from one
    computation a layer (:func:`~attention_viz.analysis.layer_maps.article`)."""
    limits, found = _input(loaded, text, pair)
    hidden = _layer_inputs(loaded, model_key(loaded), text, pair, limits, found)  # (L, t, hidden), read-only
    differences = tuple(sorted(differences))
    memo = layer_maps.article_memo(hidden, loaded.info.num_heads, int(seed), differences)
    key = (model_key(loaded), text, pair, limits, int(seed), differences, bool(fit))
    return {
        panel: layer_maps.Recipe(
            "article", (panel, *key), dict(memo=memo, labels=tuple(found.labels), panel=panel, fit=fit)
        )
        for panel in layer_maps.ARTICLE_PANELS
    }


def seq2seq_recipe(key: tuple, pretrained_maps, scratch_maps, query_labels, key_labels, view: str, fit: bool):
    """An encoder–decoder's maps of one kind of attention as shown (:func:`~attention_viz.analysis.layer_maps.seq2seq`),
    from both models' cached ``(L, heads, query, key)`` maps; ``key`` names them (model, texts, kind)."""
    arguments = dict(
        pretrained=pretrained_maps,
        scratch=scratch_maps,
        query_labels=tuple(query_labels),
        key_labels=tuple(key_labels),
        view=view,
        fit=fit,
    )
    return layer_maps.Recipe("seq2seq", (*key, view, bool(fit)), arguments)


@st.cache_resource(max_entries=8, ttl=RESULT_TTL, show_spinner=False)
def _held_maps(kind: str, key: tuple, layers: tuple, _recipe) -> layer_maps.HeldMaps:
    return _read_only(_recipe.maps(layers))


def held_maps(recipe, layers) -> layer_maps.HeldMaps:
    """The maps of ``layers`` that ``recipe`` makes (:class:`~attention_viz.analysis.layer_maps.HeldMaps`),
    once per recipe key and layers, shared read-only."""
    return _held_maps(recipe.kind, recipe.key, tuple(int(layer) for layer in layers), recipe)
