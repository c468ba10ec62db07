"""Named head scores in the app: the settings of the random sequences, the time they take, the run, and the
overview of one score (Head statistics and All heads use it)."""

from __future__ import annotations

import logging

import numpy as np
import streamlit as st

from attention_viz import figures
from attention_viz.analysis import head_scores, published
from attention_viz.extraction import AttentionError
from attention_viz.models.loading import LoadedModel
from attention_viz.ui.server import cache_heads
from attention_viz.ui.shared import controls
from attention_viz.ui.shared.corpus_picker import duration
from attention_viz.ui.text.i18n import counted, plain, t
from attention_viz.ui.view import head_links, state

SCORES = tuple(head_scores.SCORES)  # induction, previous, duplicate, sink, cls_sep
CHART_KEY = "scores_overview"
log = logging.getLogger("attention_viz")
_RAN = "_scores_ran"  # the settings of the last run the user asked for: (model, count, length, seed)


def help_text():
    """The definitions and sources, for a "?" popover."""
    return (t("scores.help_definitions"), t("scores.help_control"), t("scores.help_sources"))


def settings(loaded: LoadedModel, place=st) -> tuple[int, int, int]:
    """The count, length and seed of the random sequences, in one row; returns them, always valid."""
    longest = max(2, head_scores.longest_length(loaded))
    row = place.container(horizontal=True, gap="small", vertical_alignment="bottom", key="scores_settings")
    count = state.control(row.number_input, t("scores.count"), "scores_count", min_value=1, max_value=50, width=130)
    length = state.control(
        row.number_input, t("scores.length"), "scores_length", min_value=2, max_value=longest, width=130
    )
    seed = state.control(row.number_input, t("scores.seed"), "scores_seed", min_value=0, max_value=9999, width=110)
    return int(count), int(length), int(seed)


def _refused(exc: Exception, place) -> None:
    """Say why the scores did not run: settings the model cannot take (the message says the most that fits),
    or attention the model returned that fails the checks (the details go to the log)."""
    if isinstance(exc, AttentionError):
        log.error("invalid attention in the head scores: %s", exc)
        place.error(t("messages.attention_invalid"))
    else:
        place.warning(t("scores.refused", reason=str(exc)))


def _run(loaded: LoadedModel, count: int, length: int, seed: int) -> None:
    st.session_state[_RAN] = (loaded.info.name, count, length, seed)


def results(loaded: LoadedModel, count: int, length: int, seed: int, place=st) -> head_scores.HeadScores | None:
    """The scores for these settings: already computed, or run now when the user asks (the button says how
    long it will take, measured on this machine); None until then."""
    found = cache_heads.stored_head_scores(loaded, count, length, seed)
    if found is not None:
        return found
    try:
        seconds = cache_heads.head_score_seconds(loaded, count, length)
    except (ValueError, AttentionError) as exc:
        _refused(exc, place)
        return None
    asked = st.session_state.get(_RAN) == (loaded.info.name, count, length, seed)
    if not asked:
        place.button(
            t("scores.run", time=duration(seconds), sequences=counted("scores.run_sequences", count)),
            on_click=_run,
            args=(loaded, count, length, seed),
            icon=":material/play_arrow:",
            key="_scores_run",
        )
        return None
    bar = place.progress(0.0, text=t("scores.progress_start", time=duration(seconds)))

    def progress(done: int, total: int) -> None:
        bar.progress(done / total, text=t("scores.progress", done=done, total=total))

    try:
        result = cache_heads.head_scores(loaded, count, length, seed, progress)
    except (ValueError, AttentionError) as exc:
        bar.empty()
        _refused(exc, place)
        return None
    bar.empty()
    return result


def published_heads(loaded: LoadedModel) -> tuple[published.PublishedHead, ...]:
    info = loaded.info
    return published.published_score_heads(info.name, info.num_layers, info.num_heads)


def hover_texts(scores: head_scores.HeadScores, name: str, found) -> list[str]:
    """Per head, layer-major: the score and its control, and a published finding (★). Without a control (a
    score of the current text) nothing but the ★: the overview's hover says the score (or why it is missing)."""
    layers, heads = scores.repeated[name].shape
    marks = {(h.layer, h.head): plain(f"scores.col_{h.task}") for h in found}
    texts = []
    for layer in range(layers):
        for head in range(heads):
            value, control = scores.repeated[name][layer, head], scores.control[name][layer, head]
            text = plain("scores.hover", score=_number(value), control=_number(control)) if np.isfinite(control) else ""
            texts.append(text + (f" ★ {marks[(layer, head)]}" if (layer, head) in marks else ""))
    return texts


def _number(value: float) -> str:
    return figures.MISSING_TEXT if not np.isfinite(value) else f"{value:.3f}"


def overview(loaded: LoadedModel, scores: head_scores.HeadScores, name: str, selected, chart_key: str) -> None:
    """One score of every head as the Head statistics overview draws statistics: click a head to open it."""
    found = published_heads(loaded)
    info = loaded.info
    marks = {(h.layer, h.head) for h in found}
    labels = [
        "★" if (layer, head) in marks else "" for layer in range(info.num_layers) for head in range(info.num_heads)
    ]
    figure = figures.head_overview(
        scores.repeated[name],
        hover_texts(scores, name, found),
        t("scores.overview_title", score=t(f"scores.col_{name}")),
        t(f"scores.col_{name}"),
        (t("stats.axis_head"), t("stats.axis_layer")),
        selected=selected,
        zrange=(0.0, 1.0),
        tag_labels=labels,
        missing=plain(f"scores.missing_{name}"),
    )
    head_links.chart(figure, chart_key, info.num_heads)
    if np.isnan(scores.repeated[name]).any():
        reason = t(f"scores.missing_{name}")
        st.caption(t("stats.missing_caption", statistic=t(f"scores.col_{name}"), reason=reason))


def section(loaded: LoadedModel, selected: tuple[int, int]) -> None:
    """Head statistics' part on named heads: settings, run, overview, table with controls, download, and
    what published work found for GPT-2 small."""
    controls.title_row("scores_title", t("scores.title"), *help_text(), subheader=True)
    count, length, seed = settings(loaded)
    scores = results(loaded, count, length, seed)
    if scores is None:
        return
    numbers = {"count": scores.count, "length": scores.length, "tokens": scores.num_tokens, "seconds": scores.seconds}
    st.caption(counted("scores.caption", scores.count, **numbers))
    shown = [name for name in SCORES if np.isfinite(scores.repeated[name]).any()]
    name = state.control(
        st.columns([2, 3])[0].selectbox,
        t("scores.shown"),
        "scores_shown",
        shown,
        labels=lambda c: t(f"scores.col_{c}"),
    )
    overview(loaded, scores, name, selected, CHART_KEY)
    _published(loaded, scores)
    _table(scores, count, length, seed)


def _published(loaded: LoadedModel, scores: head_scores.HeadScores) -> None:
    """The heads that published work names in this model, with their scores here (none: nothing drawn)."""
    found = published_heads(loaded)
    if found:
        st.caption(t("scores.published_caption", source=published.TRANSFORMER_LENS_GPT2))
        st.dataframe(
            {
                t("stats.col_layer"): [h.layer for h in found],
                t("stats.col_head"): [h.head for h in found],
                t("scores.published_col_kind"): [plain(f"scores.col_{h.task}") for h in found],
                t("scores.col_induction"): [scores.repeated["induction"][h.layer, h.head] for h in found],
                t("scores.col_previous"): [scores.repeated["previous"][h.layer, h.head] for h in found],
            },
            hide_index=True,
            placeholder=figures.MISSING_TEXT,
            key="_scores_published",
        )


def _table(scores: head_scores.HeadScores, count: int, length: int, seed: int) -> None:
    """Every head's scores (and their controls) as a table, and as a CSV named after the run's settings."""
    frame = head_scores.scores_frame(scores)
    frame = frame[[c for c in frame.columns if frame[c].notna().any()]]
    columns = {
        c: st.column_config.NumberColumn(
            t(f"scores.col_{c.removesuffix('_control')}")
            + (t("scores.control_suffix") if c.endswith("_control") else ""),
            format="%.3f",
        )
        for c in frame.columns
        if c not in ("layer", "head")
    }
    controls.head_table(frame, columns, "_scores_table")
    st.download_button(
        t("scores.download"),
        head_scores.scores_frame(scores).to_csv(index=False, float_format="%.8g"),
        file_name=f"head-scores-{count}x{length}-seed{seed}.csv",
        mime="text/csv",
        icon=":material/download:",
        key="_scores_download",
    )


def colour_by(loaded: LoadedModel, encoding, weights: np.ndarray, selected: tuple[int, int]) -> None:
    """All heads' "colour by": every head's mark coloured by a named score, clickable, above the thumbnails.

    Previous-token, duplicate-token and sink are read off the current text's ``weights`` ``(L, h, t, t)``;
    induction and the [CLS]/[SEP] share come from the random sequences (run here or on Head statistics).
    """
    options = ["attention", *SCORES] if not loaded.info.causal else ["attention", *SCORES[:-1]]
    choice = state.control(
        st.columns([2, 3])[0].selectbox,
        t("scores.colour_by"),
        "all_heads_colour",
        options,
        labels=lambda c: t("scores.colour_attention") if c == "attention" else t(f"scores.col_{c}"),
    )
    if choice == "attention":
        return
    if choice in head_scores.TEXT_SCORES:
        measured = head_scores.text_scores(weights, encoding.input_ids)
        control = {name: np.full_like(value, np.nan) for name, value in measured.items()}
        scores = head_scores.HeadScores(measured, control, 1, encoding.num_tokens, 0, encoding.num_tokens, 0.0)
        st.caption(t("scores.text_caption"))
    else:
        count, length, seed = settings(loaded)
        scores = results(loaded, count, length, seed)
        if scores is None:
            return
    overview(loaded, scores, choice, selected, "all_heads_scores")
    st.caption(t("scores.overview_caption"))
