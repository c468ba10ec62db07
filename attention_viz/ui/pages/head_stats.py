"""Head statistics: what each head attends to, on the current text or a corpus; click a head to open it."""

import numpy as np
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import published
from attention_viz.extraction import export
from attention_viz.ui.frame import feedback
from attention_viz.ui.frame.screen import header_width
from attention_viz.ui.server import cache, cache_heads
from attention_viz.ui.shared import controls, model_notes, scores_ui
from attention_viz.ui.shared.corpus_picker import corpus_caption, corpus_scope, run_corpus
from attention_viz.ui.text.i18n import plain, t
from attention_viz.ui.view import head_links, state

CHART_KEY = "stats_overview"


def _tag_id(tag: str) -> str:
    """The i18n id part of a core tag ("previous-token" → "previous_token", "[CLS]" → "cls")."""
    return tag.strip("[]").lower().replace("-", "_")


def _shown_tags(tags: str, prefix: str) -> str:
    """A head's tags (", "-joined English from the core) in the user's language; translated only for display."""
    return ", ".join(t(f"stats.{prefix}_{_tag_id(tag)}") for tag in tags.split(", ") if tag)


# Why a statistic has no value (NaN: it counted no query token), by column; the others count every query token.
_MISSING = {"cls": "cls", "sep": "sep", "previous": "previous", "next": "next", "a_to_b": "pair", "b_to_a": "pair"}


def _missing_reason(statistic: str, causal: bool) -> str:
    """The id part of ``stats.missing_*``: why ``statistic`` can be missing for this model."""
    if causal and statistic in analysis.stats.CAUSAL_NOT_APPLICABLE:
        return "causal"
    return _MISSING.get(statistic, "counted")


def _header_width(column: str) -> int:
    """A table column wide enough for its whole header (it was cut: "importance (c"), in px."""
    return header_width(t(f"stats.col_{column}"))


def _show() -> None:
    head_links.follow()
    selection, loaded = controls.shown_model()
    info = loaded.info
    controls.title_row("stats_title", t("stats.title", layers=info.num_layers, heads=info.num_heads), t("stats.intro"))
    scope, frame = _statistics(loaded, selection)
    columns = [c for c in analysis.STATISTICS if frame[c].notna().any()]
    columns += ["importance"] if "importance" in frame else []
    statistic = state.control(
        st.columns([2, 3])[0].selectbox,
        t("stats.statistic"),
        "stats_statistic",
        columns,
        labels=lambda c: t(f"stats.col_{c}"),
    )
    found = published.published_heads(info.name, info.num_layers, info.num_heads)  # Clark et al. 2019's heads
    _overview(frame, statistic, info, found, (selection.layer, selection.head))
    model_notes.layers(info)
    model_notes.not_applicable(info, [t(f"stats.col_{c}") for c in analysis.STATISTICS if frame[c].isna().all()])
    if found:
        _published(found)
    _table(frame, statistic, export.file_stem(info.name, "head_statistics", scope))
    st.divider()
    scores_ui.section(loaded, (selection.layer, selection.head))  # previous-token, induction, ... on random tokens


def _statistics(loaded, selection):
    """The scope chosen and the per-head statistics over it (one row per head, layer-major)."""
    scope, corpus = corpus_scope("stats")
    if corpus is None:
        frame = feedback.or_stop(cache_heads.text_statistics, loaded, selection.text, selection.pair)
        feedback.truncation(cache.encoding(loaded, selection.text, selection.pair))  # a text past the model's positions
        st.caption(t("stats.text_caption"))
        return scope, frame
    importance = state.control(st.checkbox, t("stats.corpus_importance"), "stats_importance")
    result = run_corpus(loaded, corpus, importance)
    st.caption(corpus_caption(result))
    return scope, result.statistics


def _overview(frame, statistic: str, info, found, selected: tuple[int, int]) -> None:
    """Every head's statistic as a grid (a click opens the head in Compare), tagged, the published heads starred."""
    importance_grid = analysis.statistic_grid(frame, "importance") if "importance" in frame else None
    notes = published.head_notes(found, info.num_layers, info.num_heads)  # layer-major, like the frame
    grid = analysis.statistic_grid(frame, statistic)
    reason = _missing_reason(statistic, info.causal)
    figure = figures.head_overview(
        grid,
        [
            _shown_tags(tags, "tag") + (f" ★ {note}" if note else "")
            for tags, note in zip(frame["tags"], notes, strict=True)
        ],
        t("stats.overview_title", statistic=t(f"stats.col_{statistic}")),
        t(f"stats.col_{statistic}"),
        (t("stats.axis_head"), t("stats.axis_layer")),
        importance=importance_grid,
        selected=selected,
        tag_labels=[
            _shown_tags(tags, "short").replace(", ", "+") + ("★" if note else "")
            for tags, note in zip(frame["tags"], notes, strict=True)
        ],
        missing=plain(f"stats.missing_{reason}"),
    )
    # The table sits below the overview: side by side, 12 heads per row crowd at laptop widths (checked at 800 × 600).
    head_links.chart(figure, CHART_KEY, info.num_heads)
    caption = t("stats.overview_caption") + (" " + t("stats.size_caption") if importance_grid is not None else "")
    if np.isnan(grid).any():
        name = t(f"stats.col_{statistic}")
        caption += " " + t("stats.missing_caption", statistic=name, reason=t(f"stats.missing_{reason}"))
    st.caption(caption)


def _published(found) -> None:
    """The heads the literature found in this model, with their relation and accuracy."""
    st.caption(t("families.published_caption", source=published.CLARK_2019))
    st.dataframe(
        {
            t("stats.col_layer"): [h.layer for h in found],
            t("stats.col_head"): [h.head for h in found],
            t("families.published_col_paper"): [h.paper_head for h in found],
            t("families.published_col_relation"): [h.relation for h in found],
            t("families.published_col_accuracy"): [h.accuracy for h in found],
        },
        hide_index=True,
        placeholder=figures.MISSING_TEXT,
        key="_stats_published",
    )


def _table(frame, statistic: str, stem: str) -> None:
    """Every head's statistics as a table (the chosen one next to the head) and as a CSV download ``stem``.csv."""
    first = ["layer", "head", statistic] + (["importance"] if "importance" in frame else []) + ["tags"]
    shown = frame[list(dict.fromkeys(first + list(frame.columns)))]  # the chosen statistic next to the head
    shown = shown.assign(tags=[_shown_tags(tags, "tag") for tags in shown["tags"]])  # a copy: the CSV stays English
    numbers = [c for c in shown.columns if c not in ("layer", "head", "tags")]
    columns = {
        c: st.column_config.NumberColumn(t(f"stats.col_{c}"), format="%.3f", width=_header_width(c)) for c in numbers
    }
    tags = st.column_config.TextColumn(t("stats.col_tags"), width="medium")
    controls.head_table(shown, {"tags": tags, **columns}, "_stats_table")
    st.caption(t("stats.table_caption"))
    st.download_button(
        t("stats.download"),
        frame.to_csv(index=False, float_format="%.8g"),
        file_name=f"{stem}.csv",
        mime="text/csv",
        icon=":material/download:",
    )
    st.caption(t("stats.tag_rules", share=analysis.stats.TAG_SHARE, broad=analysis.stats.BROAD_FRACTION))


_show()
