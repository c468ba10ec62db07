"""Head atlas: every head on any two per-head numbers over a corpus; a head's strongest and typical attention
events in context, each one a button away from Compare."""

import hashlib

import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import atlas as atlas_module
from attention_viz.figures.atlas import head_scatter
from attention_viz.ui.server import cache_heads
from attention_viz.ui.shared import controls
from attention_viz.ui.shared.corpus_picker import CORPUS_BATCH_SIZE, run_corpus, run_stoppable
from attention_viz.ui.text.i18n import counted, t
from attention_viz.ui.text.safe_text import literal
from attention_viz.ui.view import head_links, state

CHART_KEY = "atlas_scatter"


def _number_label(name: str) -> str:
    """A per-head number's name in the user's language (the statistics keep Head statistics' names)."""
    if name in analysis.STATISTICS:
        return t(f"stats.col_{name}")
    return t(f"atlas.col_{name}")


def _show() -> None:
    head_links.follow()
    selection, loaded = controls.shown_model()
    info = loaded.info
    controls.title_row("atlas_title", t("atlas.title"), t("atlas.intro"))
    built, corpus = _atlas(loaded)
    built = _with_importance(loaded, built, corpus)
    same_model = built.model == info.name
    if not same_model:
        st.warning(t("atlas.other_model", atlas=built.model, model=info.name))
    layers = int(built.heads["layer"].max()) + 1
    heads = int(built.heads["head"].max()) + 1
    st.caption(
        t(
            "atlas.caption",
            texts=counted("stats.corpus_texts", built.num_texts),
            tokens=counted("stats.corpus_tokens", built.num_tokens),
            top=built.options["top"],
            sample=built.options["sample"],
            seconds=f"{built.seconds:.1f}",
        )
    )
    layer, head = (selection.layer, selection.head) if same_model else (0, 0)
    layer, head = min(layer, layers - 1), min(head, heads - 1)
    _scatter(built, heads, (layer, head))
    st.divider()
    _events(built, layer, head, same_model)
    st.download_button(
        t("atlas.download"),
        built.to_parquet(),
        file_name=atlas_module.atlas_file_name(built),
        mime="application/vnd.apache.parquet",
        icon=":material/download:",
    )
    st.caption(t("atlas.download_caption"))


def _atlas(loaded) -> tuple[atlas_module.Atlas, str | None]:
    """The atlas shown and its corpus: the bundled corpus's, built on demand with progress and Stop, or an
    uploaded file's (its corpus None: the file holds only the texts of its events)."""
    source = state.choice_row(st, "atlas.source", "atlas_source", state.ATLAS_SOURCES)
    if source == "bundled":
        corpus = analysis.bundled_corpus()
        digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()
        built = run_stoppable(
            f"atlas|{loaded.info.name}|{digest}",
            lambda progress: cache_heads.atlas(loaded, corpus, CORPUS_BATCH_SIZE, progress),
            "atlas.stopped",
        )
        return built, corpus
    upload = st.file_uploader(t("atlas.upload"), type=["parquet"], key="_atlas_upload", help=t("atlas.upload_help"))
    if upload is None:
        st.info(t("atlas.upload_waiting"))
        st.stop()
    try:
        return atlas_module.read_atlas(upload.getvalue()), None
    except atlas_module.AtlasFileError:
        st.error(t("atlas.upload_not_atlas", name=upload.name))
        st.stop()


def _with_importance(loaded, built: atlas_module.Atlas, corpus: str | None) -> atlas_module.Atlas:
    """The atlas with importance by ablation among its numbers, over the same corpus: run when asked (with
    progress and Stop; Head statistics' run, shared with it), or at once when a session has already run it."""
    if corpus is None or built.model != loaded.info.name:
        return built
    asked = state.control(st.checkbox, t("atlas.importance"), "atlas_importance", help=t("atlas.importance_help"))
    if asked:
        result = run_corpus(loaded, corpus, importance=True, buttons="_importance")
    else:
        result = cache_heads.stored_corpus_statistics(loaded, corpus, CORPUS_BATCH_SIZE, importance=True)
    return built if result is None else atlas_module.with_importance(built, result.statistics)


def _on_select(num_heads: int) -> None:
    """The scatter's ``on_select``: the clicked head becomes the chosen layer and head (the sidebar's boxes)."""
    event = st.session_state.get(CHART_KEY)
    points = (event or {}).get("selection", {}).get("points", []) if event is not None else []
    index = points[0].get("point_index", points[0].get("point_number")) if points else None
    if index is not None:
        state.choose_head(*head_links.head_of_point(int(index), num_heads))  # one point per head, layer-major


def _scatter(built: atlas_module.Atlas, num_heads: int, selected: tuple[int, int]) -> None:
    """Every head on two chosen numbers, coloured by layer or a third; a click chooses the head."""
    frame = built.heads
    numbers = [name for name in atlas_module.NUMBERS if name in frame and frame[name].notna().any()]
    columns = st.columns(3)
    x = state.control(columns[0].selectbox, t("atlas.x"), "atlas_x", numbers, labels=_number_label)
    y = state.control(columns[1].selectbox, t("atlas.y"), "atlas_y", numbers, labels=_number_label)
    colour = state.control(
        columns[2].selectbox,
        t("atlas.colour"),
        "atlas_colour",
        ["layer", *numbers],
        labels=lambda c: t("stats.col_layer") if c == "layer" else _number_label(c),
    )
    figure = head_scatter(
        frame[x].to_numpy(),
        frame[y].to_numpy(),
        frame[colour].to_numpy(),
        num_heads,
        (
            _number_label(x),
            _number_label(y),
            t("stats.col_layer") if colour == "layer" else _number_label(colour),
        ),
        (t("stats.axis_layer"), t("stats.axis_head")),
        selected,
        colour == "layer",
    )
    st.plotly_chart(
        figure,
        key=CHART_KEY,
        theme=None,
        on_select=state.guarded(lambda: _on_select(num_heads)),
        selection_mode="points",
    )
    st.caption(t("atlas.scatter_caption"))


def _events(built: atlas_module.Atlas, layer: int, head: int, same_model: bool) -> None:
    """The chosen head's top or typical events as a table, and one of them opened in Compare."""
    st.subheader(t("atlas.head_title", layer=layer, head=head))
    row = built.heads[(built.heads["layer"] == layer) & (built.heads["head"] == head)].iloc[0]
    st.caption(
        t(
            "atlas.head_caption",
            special=f"{row['special']:.3f}",
            own=f"{row['self']:.3f}",
            top_weight=f"{row['top_weight']:.3f}",
        )
    )
    kind = state.choice_row(st, "atlas.kind", "atlas_kind", atlas_module.KINDS)
    events = built.head_events(layer, head, kind)
    if events.empty:
        st.info(t("atlas.no_events"))
        return
    shown = events[["rank", "weight", "query_token", "key_token", "sentence", "distance", "folded", "text"]]
    st.dataframe(
        shown,
        hide_index=True,
        height=min(38 + 35 * len(shown), 420),
        column_config={
            "rank": st.column_config.NumberColumn(t("atlas.col_rank")),
            "weight": st.column_config.NumberColumn(t("atlas.col_weight"), format="%.3f"),
            "query_token": st.column_config.TextColumn(t("atlas.col_query_token")),
            "key_token": st.column_config.TextColumn(t("atlas.col_key_token")),
            "distance": st.column_config.NumberColumn(t("atlas.col_distance")),
            "folded": st.column_config.NumberColumn(t("atlas.col_folded")),
            "text": st.column_config.NumberColumn(t("atlas.col_text")),
            "sentence": st.column_config.TextColumn(t("atlas.col_sentence"), width="large"),
        },
        key="_atlas_events",
    )
    st.caption(t(f"atlas.events_caption_{kind}"))
    choice = state.control(
        st.selectbox,
        t("atlas.event"),
        "atlas_event",
        list(range(len(events))),
        labels=lambda i: (
            f"{i}: {figures.isolate(events['query_token'][i])} → {figures.isolate(events['key_token'][i])}"
            f" ({events['weight'][i]:.3f})"
        ),
    )
    event = events.iloc[choice]
    a, b, total = built.texts[int(event["text"])]
    st.markdown(
        t("atlas.context", query=event["query_token"], key=event["key_token"], position=int(event["query"]))
        + literal(" ")
        + literal(event["sentence"])
    )
    st.button(
        t("atlas.open"),
        on_click=state.guarded(
            lambda: state.open_event(layer, head, a, b, int(event["query"]), int(event["key"]), total)
        ),
        icon=":material/compare:",
        disabled=not same_model,
        key="_atlas_open",
    )


_show()
