"""Choosing the scope of a statistic (the current text, the bundled corpus or an uploaded ``.txt`` file), and
running it over a corpus: a progress bar that says how long the rest takes, and a Stop button."""

from __future__ import annotations

import hashlib
import time

import streamlit as st

from attention_viz import analysis
from attention_viz.models.loading import LoadedModel
from attention_viz.ui.frame import feedback
from attention_viz.ui.server import cache_heads
from attention_viz.ui.text.i18n import counted, t
from attention_viz.ui.text.safe_text import Markdown
from attention_viz.ui.view import state

SCOPES = state.SCOPES


def decode_upload(data: bytes) -> str:
    """An uploaded corpus file as text: UTF-8, a leading byte-order mark dropped (it is not part of the first
    text: RoBERTa's, XLM-R's and GPT-2's tokenizers would count it as tokens).

    Raises:
        UnicodeDecodeError: the file is not UTF-8.
    """
    return data.decode("utf-8-sig")


def corpus_scope(key: str) -> tuple[str, str | None]:
    """Draw the scope choice (and the uploader); return ``(scope, corpus text or None)``.

    Stops the page with a message when an uploaded file is missing or not UTF-8.
    """
    scope = state.choice_row(st, "views.scope", f"{key}_scope", SCOPES)
    if scope == "text":
        return scope, None
    if scope == "bundled":
        return scope, analysis.bundled_corpus()
    upload = st.file_uploader(t("views.upload"), type=["txt"], key=f"_{key}_upload", help=t("views.upload_help"))
    if upload is None:
        st.info(t("views.upload_waiting"))
        st.stop()
    try:
        return scope, decode_upload(upload.getvalue())
    except UnicodeDecodeError:
        st.error(t("views.upload_not_utf8", name=upload.name))
        st.stop()


CORPUS_BATCH_SIZE = 16
_STOPPED = "_corpus_stopped"  # the run the user stopped: (its key, texts done, texts in all)
_DONE = "_corpus_done"  # the running run's progress, kept for the note when it is stopped


def duration(seconds: float) -> Markdown:
    """``seconds`` in words: "about 40 s", "about 2 min 30 s" (to 10 s), "about 25 min" (from 10 minutes)."""
    seconds = max(1, round(seconds))
    if seconds < 60:
        return t("stats.about_seconds", s=seconds)
    if seconds >= 600:
        return t("stats.about_whole_minutes", m=round(seconds / 60))
    minutes, rest = divmod(round(seconds / 10) * 10, 60)
    return t("stats.about_minutes", m=minutes, s=rest)


def corpus_caption(result: analysis.CorpusResult) -> Markdown:
    """What a corpus run counted: its texts, tokens and skipped empty lines, each in the right number
    ("1 text", "1 empty line skipped")."""
    return t(
        "stats.corpus_caption",
        texts=counted("stats.corpus_texts", result.num_texts),
        tokens=counted("stats.corpus_tokens", result.num_tokens),
        skipped=counted("stats.corpus_skipped", result.num_skipped),
    )


def _stop(run: str) -> None:
    """Stop's ``on_click``: Streamlit ends the running run at its next progress update, then reruns."""
    st.session_state[_STOPPED] = (run, *st.session_state.get(_DONE, (0, 0)))


def _run_again() -> None:
    st.session_state.pop(_STOPPED, None)


def run_corpus(loaded: LoadedModel, corpus: str, importance: bool = False, buttons: str = "") -> analysis.CorpusResult:
    """The corpus statistics (cached), with a progress bar, the time left (estimated from the first batch)
    and a Stop button while they run (:func:`run_stoppable`; ``buttons`` as there)."""
    digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()
    run = f"{loaded.info.name}|{digest}|{importance}"
    return run_stoppable(
        run,
        lambda progress: cache_heads.corpus_statistics(loaded, corpus, CORPUS_BATCH_SIZE, importance, progress),
        buttons=buttons,
    )


def run_stoppable(run: str, compute, stopped_note: str = "stats.stopped", buttons: str = ""):
    """``compute(progress)`` with a progress bar, the time left (estimated from the first batch) and a Stop
    button while it runs; ``run`` names the run. A refused corpus shows why (the shared, translated message)
    and stops the page; so does a run the user stopped (``stopped_note`` says so), with a button to run it
    again. ``buttons`` ends the keys of the Stop and run-again buttons (a second run on the same page)."""
    stopped = st.session_state.get(_STOPPED)
    if stopped is not None and stopped[0] == run:
        st.info(t(stopped_note, done=int(stopped[1]), total=stopped[2]), icon=":material/stop_circle:")
        st.button(
            t("stats.run_again"), on_click=_run_again, icon=":material/play_arrow:", key=f"_corpus_again{buttons}"
        )
        st.stop()
    running = st.empty()
    with running.container():
        bar = st.progress(0.0, text=t("stats.progress_start"))
        st.button(t("stats.stop"), on_click=_stop, args=(run,), icon=":material/stop:", key=f"_corpus_stop{buttons}")
    first: list[tuple[float, float]] = []  # when this page first heard of the run, and how far it was then

    def progress(done: float, total: int) -> None:
        st.session_state[_DONE] = (done, total)
        if not first:  # a session waiting for another's run joins it part way: the rate counts from here
            first.append((time.monotonic(), done))
        started, done_before = first[0]
        text = t("stats.progress", done=int(done), total=total)
        if done - done_before < min(CORPUS_BATCH_SIZE, total - done_before):  # the estimate waits for a batch
            text += Markdown(" ") + t("stats.measuring")
        elif done < total:
            left = analysis.seconds_left(time.monotonic() - started, done - done_before, total - done_before)
            text += Markdown(" ") + t("stats.left", left=duration(left))
        bar.progress(min(done / max(total, 1), 1.0), text=text)

    result = feedback.or_stop(compute, progress)
    running.empty()
    return result
