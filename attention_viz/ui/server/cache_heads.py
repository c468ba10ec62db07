"""Exploring heads: per-head statistics and similarity of the current text, and the long runs shared by every
session: statistics over a corpus, the head atlas and named head scores.

Each kind of run is one :class:`~attention_viz.analysis.shared_runs.SharedRuns` for the whole server
(``st.cache_resource``): a run is computed once by key however many sessions ask for it at once (the waiting
ones see its progress), a page's Stop ends its part without keeping anything, and the most recent results are
kept. What a run computes is the core's call the command line and the Python API make too
(:mod:`attention_viz.runs`); this module only keys and keeps it.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from attention_viz import analysis, runs
from attention_viz.analysis.shared_runs import SharedRuns
from attention_viz.models.loading import LoadedModel
from attention_viz.ui.server.cache import RESULT_TTL, app_settings, input_key, model_key, pretrained


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
    return _text_statistics(loaded, model_key(loaded), text, pair, input_key(loaded, text, pair), result)


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def _text_divergence(model_name: str, text: str, pair: str | None, limits, _weights: np.ndarray) -> np.ndarray:
    return analysis.head_divergence(_weights)


def text_divergence(loaded: LoadedModel, text: str, pair: str | None) -> np.ndarray:
    """``(n, n)`` JS divergence between every pair of heads on the current text (bits)."""
    weights = pretrained(loaded, text, pair).weights
    return _text_divergence(model_key(loaded), text, pair, input_key(loaded, text, pair), weights)


@st.cache_data(max_entries=32, ttl=RESULT_TTL, show_spinner=False)
def mds_layout(divergence: np.ndarray) -> np.ndarray:
    """Cached :func:`attention_viz.analysis.mds_layout` (keyed by the divergence matrix itself)."""
    return analysis.mds_layout(divergence)


# --- Statistics over a corpus and the atlas -------------------------------------------------------------------

CORPUS_RESULTS_KEPT = 8


@st.cache_resource(show_spinner=False)
def _corpus_runs() -> SharedRuns[analysis.CorpusResult]:
    # A run reports progress to the page, which st.cache_data cannot replay; one run for every session asking.
    return SharedRuns(CORPUS_RESULTS_KEPT)


def corpus_statistics(
    loaded: LoadedModel, corpus: str, batch_size: int, importance: bool, progress=None
) -> analysis.CorpusResult:
    """:func:`attention_viz.runs.statistics_of_corpus` with head divergence (importance if asked), computed once per
    model, corpus, options and limits for every session (:class:`~attention_viz.analysis.shared_runs.SharedRuns`:
    a session asking for a run in progress waits for it, its ``progress(done, total)`` getting the running one's).
    Streamlit stops a page's run when its user changes the input or presses Stop (the next progress update
    raises): nothing is kept then, and a session still waiting computes it.

    Raises:
        InputError: an empty corpus, or one over the operator's limits.
    """
    limits = app_settings().limits  # in the key: a corpus refused under new limits is not served from the store
    return _corpus_runs().run(
        _corpus_key(loaded, corpus, batch_size, importance),
        lambda report, cancel: runs.statistics_of_corpus(
            loaded, corpus, batch_size, importance, True, report, cancel, limits
        ),
        progress,
    )


def _corpus_key(loaded: LoadedModel, corpus: str, batch_size: int, importance: bool) -> tuple:
    digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()
    return model_key(loaded), digest, batch_size, importance, app_settings().limits


def stored_corpus_statistics(
    loaded: LoadedModel, corpus: str, batch_size: int, importance: bool
) -> analysis.CorpusResult | None:
    """What :func:`corpus_statistics` holds for these arguments (a session computed it already), or None;
    nothing is computed."""
    return _corpus_runs().get(_corpus_key(loaded, corpus, batch_size, importance))


ATLASES_KEPT = 4


@st.cache_resource(show_spinner=False)
def _atlas_runs() -> SharedRuns:
    return SharedRuns(ATLASES_KEPT)


def atlas(loaded: LoadedModel, corpus: str, batch_size: int, progress=None):
    """The head atlas of a corpus text with the induction score (:func:`attention_viz.runs.atlas_of_corpus`),
    computed once per model, corpus and limits for every session, as :func:`corpus_statistics` is.

    Raises:
        InputError: an empty corpus, or one over the operator's limits.
    """
    limits = app_settings().limits
    digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()
    return _atlas_runs().run(
        (model_key(loaded), digest, batch_size, limits),
        lambda report, cancel: runs.atlas_of_corpus(
            loaded, corpus, batch_size, induction=True, progress=report, cancel=cancel, limits=limits
        ),
        progress,
    )


# --- Named head scores on random sequences --------------------------------------------------------------

SCORE_RUNS_KEPT = 8


@st.cache_resource(show_spinner=False)
def _score_runs() -> SharedRuns:
    return SharedRuns(SCORE_RUNS_KEPT)


def stored_head_scores(loaded: LoadedModel, count: int, length: int, seed: int):
    """The :class:`~attention_viz.analysis.head_scores.HeadScores` of an earlier run with these settings, or None."""
    return _score_runs().get((model_key(loaded), count, length, seed))


def head_scores(loaded: LoadedModel, count: int, length: int, seed: int, progress=None):
    """Named head scores on ``count`` seeded random sequences of ``length`` tokens
    (:func:`attention_viz.analysis.head_scores.model_head_scores`), computed once per model and settings for
    every session, as :func:`corpus_statistics` is.

    Raises:
        ValueError: settings the model or its vocabulary cannot take (the message says the most that fits).
    """
    from attention_viz.analysis import head_scores as scores

    return _score_runs().run(
        (model_key(loaded), count, length, seed),
        lambda report, cancel: scores.model_head_scores(loaded, count, length, seed, report, cancel=cancel),
        progress,
    )


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
