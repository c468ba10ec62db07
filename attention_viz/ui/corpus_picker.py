"""Choosing the scope of a statistic: the current text, the bundled corpus or an uploaded ``.txt`` file."""

from __future__ import annotations

import streamlit as st

from attention_viz import analysis
from attention_viz.models.loading import LoadedModel
from attention_viz.ui import cache, feedback, state
from attention_viz.ui.i18n import t

SCOPES = state.SCOPES


def corpus_scope(key: str) -> tuple[str, str | None]:
    """Draw the scope choice (and the uploader); return ``(scope, corpus text or None)``.

    Stops the page with a message when an uploaded file is missing or not UTF-8.
    """
    scope = state.control(
        st.radio, t("views.scope"), f"{key}_scope", SCOPES, labels=lambda s: t(f"views.scope_{s}"), horizontal=True
    )
    if scope == "text":
        return scope, None
    if scope == "bundled":
        return scope, analysis.bundled_corpus()
    upload = st.file_uploader(t("views.upload"), type=["txt"], key=f"_{key}_upload", help=t("views.upload_help"))
    if upload is None:
        st.info(t("views.upload_waiting"))
        st.stop()
    try:
        return scope, upload.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        st.error(t("views.upload_not_utf8", name=upload.name))
        st.stop()


CORPUS_BATCH_SIZE = 16


def run_corpus(loaded: LoadedModel, corpus: str, importance: bool = False) -> analysis.CorpusResult:
    """The corpus statistics (cached), with a progress bar while they run; a refused corpus shows why
    (the shared, translated message) and stops the page."""
    bar = st.progress(0.0, text=t("stats.progress", done=0, total="…"))

    def progress(done: int, total: int) -> None:
        bar.progress(done / total, text=t("stats.progress", done=done, total=total))

    result = feedback.or_stop(cache.corpus_statistics, loaded, corpus, CORPUS_BATCH_SIZE, importance, progress)
    bar.empty()
    return result
