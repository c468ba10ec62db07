"""The app's caches: the model per process, results per input.

The model is loaded once per process and model name (``st.cache_resource``) and shared read-only by
every session. Results are cached by everything that changes them, with the model's name
in the key, so changing only the layer or head never runs the model again.

Results are shared too, not copied: ``st.cache_data`` unpickles a fresh copy on every call, which at 512
tokens is 75 MB of weights per result on every rerun (most of a 512-token head change's time then:
``python -m benchmarks.profile_rerun`` measures it). ``st.cache_resource`` hands every session the same
:class:`AttentionResult`, its arrays made read-only so no caller can change what another one sees.

Beside it, keyed the same way: :mod:`~attention_viz.ui.server.cache_heads` (head statistics and similarity, and
the long runs shared by every session: corpus statistics, the head atlas, head scores),
:mod:`~attention_viz.ui.server.cache_experiments` (the Experiments page) and
:mod:`~attention_viz.ui.server.cache_seq2seq` (encoder–decoders). What is computed is the core's; these modules only
key, keep and share it.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

import numpy as np
import streamlit as st

from attention_viz import analysis, extraction, runs, settings
from attention_viz.analysis import article_compare, steps
from attention_viz.extraction import AttentionResult, Encoding, generation
from attention_viz.extraction.results import read_only
from attention_viz.models import catalog, loading, sizes
from attention_viz.models.loading import LoadedModel, ModelLoadError
from attention_viz.ui import internals
from attention_viz.ui.server.app_settings import app_settings

T = TypeVar("T")


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
def _reloads() -> loading.Reloads:
    return loading.Reloads()


def model(name: str) -> LoadedModel:
    """The loaded model for ``name``; raises :class:`ModelLoadError` (cached) if it cannot load.

    Keyed by the name and what is on disk (:func:`attention_viz.models.loading.disk_revision`): after a
    checkpoint is saved again into its folder, the next run of any session loads the new weights, and every
    result is keyed by that too (:func:`model_key`)."""
    policy = app_settings().models
    revision = loading.disk_revision(name, policy)
    _reloads().seen(name, revision)
    loaded = _load(name, policy, revision)
    if isinstance(loaded, ModelLoadError):
        raise loaded
    return loaded


@st.cache_resource(max_entries=4, show_spinner=False)
def _forward_estimate(_loaded: LoadedModel, model_name: str, limits: settings.Limits) -> sizes.ForwardEstimate:
    return runs.forward_estimate(_loaded, sizes.FORWARD_TOKENS, limits)


def forward_estimate(loaded: LoadedModel) -> sizes.ForwardEstimate:
    """How long a forward of ``loaded`` takes at 512 tokens (or the most it takes, if fewer), estimated once per
    process and model from one short timed forward (:func:`attention_viz.runs.forward_estimate`)."""
    return _forward_estimate(loaded, model_key(loaded), app_settings().limits)


def model_key(loaded: LoadedModel) -> str:
    """The model in a result's cache key: its name and the fingerprint of its files."""
    return f"{loaded.info.name}@{loaded.info.revision}"


def was_reloaded(loaded: LoadedModel) -> bool:
    """Whether ``loaded`` was loaded again in place of an older copy because its files changed on disk."""
    return _reloads().was_reloaded(loaded.info.name, loaded.info.revision)


# Results keyed by a text are dropped an hour after they were computed; max_entries bounds them before that.
RESULT_TTL = "1h"


def encoding(loaded: LoadedModel, text: str, pair: str | None) -> Encoding:
    """The input as the model sees it, tokenised once per model, text and limits, shared read-only.

    Raises:
        InputError: an empty text, or a sentence over the operator's character limit: refused before
            the text is hashed for the cache key, so a 1 MB paste costs only the message.
    """
    return keyed_input(loaded, text, pair)[1]


def keyed_input(loaded: LoadedModel, text: str, pair: str | None) -> tuple[object, Encoding]:
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


def input_key(loaded: LoadedModel, text: str, pair: str | None) -> object:
    """The input's key alone (:func:`keyed_input`)."""
    return keyed_input(loaded, text, pair)[0]


# Marks a generated token's label on every axis and in the downloads (the token's own text comes first).
GENERATED_MARK = "✎"


@st.cache_resource(max_entries=64, ttl=RESULT_TTL, show_spinner=False)
def _extended(_loaded: LoadedModel, model_name: str, text: str, limits, new: tuple[int, ...], _encoding: Encoding):
    return read_only(generation.extend_encoding(_encoding, _loaded.tokenizer, list(new), GENERATED_MARK))


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
    return read_only(extraction.encode(_loaded.tokenizer, text, pair, _loaded.info.max_positions, limits, types))


def _attention(_loaded: LoadedModel, _encoding: Encoding, source: str, variant: str, seed: int) -> AttentionResult:
    return read_only(extraction.extract_encoded(_loaded, _encoding, source, variant, seed))


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


def session_memo(name: str, key, make: Callable[[], T]) -> T:
    """``make()``, kept in the session's state under ``name`` with ``key``: made again only when ``key`` differs
    from the last one (one entry a name). For what a page makes from cached results on every run although its
    inputs rarely change (every head's numbers, a head's charts as JSON)."""
    memo = st.session_state.get(name)
    if memo is None or memo[0] != key:
        memo = (key, make())
        st.session_state[name] = memo
    return memo[1]


SHARED_MEMO_SIZE = 64  # keys kept a name by :func:`shared_memo` (the latest used)
_SHARED: dict[str, OrderedDict] = {}
_SHARED_LOCK = threading.Lock()


def shared_memo(name: str, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, kept for every session under ``name`` with ``key``, the :data:`SHARED_MEMO_SIZE` latest keys
    a name. Only for what is made from ``key``'s content alone: ``key`` holds every input (arrays as their
    bytes), so what one session made is right for all (a class on the opening example makes it once).
    ``shared_memo.clear()`` forgets everything."""
    with _SHARED_LOCK:
        memo = _SHARED.setdefault(name, OrderedDict())
        if key in memo:
            memo.move_to_end(key)
            return memo[key]
    value = make()  # outside the lock: two sessions may both make it, and keep the same
    with _SHARED_LOCK:
        memo[key] = value
        while len(memo) > SHARED_MEMO_SIZE:
            memo.popitem(last=False)
    return value


def _clear_shared() -> None:
    with _SHARED_LOCK:
        _SHARED.clear()


shared_memo.clear = _clear_shared


_JSON_SIZES: dict[int, tuple[weakref.ref, int]] = {}  # id(result) -> (the result, the size of its JSON)


def json_size(result: AttentionResult) -> int:
    """:func:`attention_viz.extraction.export.attention_json_size` of ``result``, measured once per result: the
    results are the caches' shared objects, and every run of a page with downloads names the size."""
    entry = _JSON_SIZES.get(id(result))
    if entry is not None and entry[0]() is result:
        return entry[1]
    size = extraction.export.attention_json_size(result)
    key = id(result)
    _JSON_SIZES[key] = (weakref.ref(result, lambda _: _JSON_SIZES.pop(key, None)), size)
    return size


def pretrained(loaded: LoadedModel, text: str, pair: str | None) -> AttentionResult:
    """The pretrained model's attention (:func:`attention`)."""
    limits, found = keyed_input(loaded, text, pair)
    return attention(loaded, model_key(loaded), text, pair, "pretrained", "exact", 0, limits, found)


def scratch(loaded: LoadedModel, text: str, pair: str | None, variant: str, seed: int) -> AttentionResult:
    """The from-scratch encoder's attention (:func:`attention`); the seed only matters to ``random``."""
    limits, found = keyed_input(loaded, text, pair)
    seed = seed if variant == "random" else 0
    return attention(loaded, model_key(loaded), text, pair, "scratch", variant, seed, limits, found)


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _parity(model_name: str, text: str, pair: str | None, limits, _exact: np.ndarray, _theirs: np.ndarray) -> float:
    return analysis.max_abs_difference(_exact, _theirs)


def parity(loaded: LoadedModel, text: str, pair: str | None) -> float:
    """Max |exact from-scratch − pretrained| over every layer and head, computed once per input."""
    exact, theirs = scratch(loaded, text, pair, "exact", 0).weights, pretrained(loaded, text, pair).weights
    return _parity(model_key(loaded), text, pair, input_key(loaded, text, pair), exact, theirs)


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
    limits, group = input_key(loaded, text, pair), loaded.info.heads_per_group  # query heads per key/value head (GQA)
    key = (model_key(loaded), text, pair, limits, fit_range, tuple(selected), int(title_font), group)
    return _head_grid(*key, weights)


# 8 texts: every layer's input is L × t × hidden float32 (4.7 MB at 512 tokens for the bundled model).
@st.cache_resource(max_entries=8, ttl=RESULT_TTL, show_spinner=False)
def _layer_inputs(_loaded: LoadedModel, model_name: str, text: str, pair: str | None, limits, _encoding: Encoding):
    return read_only(steps.layer_inputs(_loaded.encoder, _encoding))


def layer_inputs(loaded: LoadedModel, text: str, pair: str | None) -> np.ndarray:
    """``(L, t, hidden)`` the hidden states entering every layer, one encoder run per text, read-only."""
    limits, found = keyed_input(loaded, text, pair)
    return _layer_inputs(loaded, model_key(loaded), text, pair, limits, found)


@st.cache_resource(max_entries=16, ttl=RESULT_TTL, show_spinner=False)
def _layer_vectors(_loaded: LoadedModel, model_name: str, text: str, pair: str | None, limits, layer: int, _hidden):
    return read_only(steps.layer_vectors(_loaded.encoder, _hidden, layer))


def head_vectors(loaded: LoadedModel, text: str, pair: str | None, layer: int, head: int):
    """``(encoding, (queries, keys, values))`` of one head, each ``(t, head_dim)`` (see :mod:`steps`).

    No forward on a change of head: every layer's input is computed once per text and each layer's
    projections once per text and layer; a head is an index into them.

    Raises:
        IndexError: a layer or head out of range.
    """
    limits, found = keyed_input(loaded, text, pair)
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
    return tuple(read_only(weights) for weights in article_compare.article_maps(_hidden, heads, seed, differences))


def article_maps(loaded: LoadedModel, text: str, pair: str | None, layer: int, seed: int, differences: tuple):
    """``(encoding, correct, with_differences)``: both ``(heads, query, key)`` on the layer's input, read-only.

    Raises:
        IndexError: a layer out of range.
    """
    limits, found = keyed_input(loaded, text, pair)
    hidden = _layer_inputs(loaded, model_key(loaded), text, pair, limits, found)  # (L, t, hidden)
    if not 0 <= layer < len(hidden):
        raise IndexError(f"layer {layer} out of range: 0-{len(hidden) - 1}")
    differences = tuple(sorted(differences))
    heads = loaded.info.num_heads
    return found, *_article_maps(model_key(loaded), text, pair, limits, layer, seed, differences, hidden[layer], heads)


# --- Rollout and norms -------------------------------------------------------------------------------------


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _rollout_and_norms(
    _loaded: LoadedModel, model_name: str, text: str, pair: str | None, limits, layer: int, _encoding: Encoding
) -> analysis.RolloutAndNorms:
    return analysis.rollout_and_norms(_loaded.encoder, _encoding, layer)


def rollout_and_norms(loaded: LoadedModel, text: str, pair: str | None, layer: int) -> analysis.RolloutAndNorms:
    """Raw head average, rollout up to ``layer`` and norm-based attention for the current text."""
    limits, found = keyed_input(loaded, text, pair)
    return _rollout_and_norms(loaded, model_key(loaded), text, pair, limits, layer, found)
