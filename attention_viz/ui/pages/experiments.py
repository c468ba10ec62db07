"""Experiments: knock out a key, compare a minimal pair, read the language-model head's predictions."""

import numpy as np
import streamlit as st

from attention_viz import figures
from attention_viz.analysis import knockout, minimal_pairs
from attention_viz.ui.frame import feedback
from attention_viz.ui.server import cache, cache_experiments
from attention_viz.ui.shared import controls
from attention_viz.ui.text.i18n import plain, t
from attention_viz.ui.view import state


def _show() -> None:
    selection, loaded = controls.shown_model()
    controls.title_row(
        "experiments_title",
        t("experiments.title"),
        t("experiments.intro"),
        t("experiments.help_knockout"),
        t("experiments.help_pairs"),
    )
    experiment = state.control(
        st.segmented_control,
        t("experiments.choose"),
        "experiment",
        state.EXPERIMENTS,
        labels=lambda e: t(f"experiments.{e}"),
        label_visibility="collapsed",
    )
    views = {"knockout": _knockout_view, "pairs": _pairs_view, "predictions": _predictions_view}
    views[experiment or "knockout"](loaded, selection)


def _knockout_choice(encoding, place, layer: int, head: int) -> tuple[int, str]:
    labels, n = encoding.labels, encoding.num_tokens
    first = 1 if n > 1 else 0
    row = place.columns(2)
    key = controls.token_choice(row[0], "knockout_key", labels, min(first + 1, n - 1), t("experiments.key"))
    scope = state.control(
        row[1].radio,
        t("experiments.scope"),
        "knockout_scope",
        knockout.SCOPES,
        labels=lambda s: t(f"experiments.scope_{s}", layer=layer, head=head),
        horizontal=True,
    )
    return key, scope


def _knockout_view(loaded, selection) -> None:
    info, layer, head = loaded.info, selection.layer, selection.head
    encoding = feedback.or_stop(cache.encoding, loaded, selection.text, selection.pair)
    feedback.truncation(encoding)
    key, scope = _knockout_choice(encoding, st, layer, head)
    try:
        result = cache_experiments.knockout(loaded, selection.text, selection.pair, key, scope, layer, head)
    except ValueError as exc:
        st.warning(t("experiments.refused", reason=str(exc)))
        return
    labels = list(encoding.labels)
    shown_layer = min(info.num_layers - 1, max(layer, result.first_changed_layer()))
    st.metric(t("experiments.embedding_distance"), f"{result.embedding_distance:.2e}")
    st.caption(t("experiments.embedding_caption", token=labels[key]))
    left, right = st.columns(2)
    overview = figures.head_overview(
        result.change,
        [plain("experiments.change_hover", value=v) for v in result.change.reshape(-1)],
        plain("experiments.change_title", token=labels[key]),
        plain("experiments.change_unit"),
        (plain("stats.axis_head"), plain("stats.axis_layer")),
        selected=(layer, head),
        zrange=(0.0, max(float(result.change.max()), 1e-12)),
        tag_labels=[""] * result.change.size,
    )
    left.plotly_chart(overview, key="knockout_change", theme=None)
    left.caption(t("experiments.change_caption", first=result.first_changed_layer()))
    difference = result.after[shown_layer, head].astype(np.float64) - result.before[shown_layer, head]
    title = plain("experiments.difference_title", layer=shown_layer, head=head)
    _difference(right, difference, labels, title, "knockout_difference")
    right.caption(t("experiments.difference_caption"))


def _pairs_view(loaded, selection) -> None:
    pair = _pair_sentences(loaded)
    labels_a, labels_b = list(pair.a.encoding.labels), list(pair.b.encoding.labels)
    queries = [i for i, j in pair.pairs if i is not None and j is not None]
    about = minimal_pairs.PRESET_QUERIES.get(st.session_state.get("pairs_preset"))
    default = next((i for i in queries if labels_a[i].lower() == about), None)  # the preset's token, if any
    default = next((i for i in queries if i in pair.changed_a), queries[0]) if default is None else default
    row = st.columns(2)
    query = controls.token_choice(row[0], "pairs_query", labels_a, default, t("experiments.query"), queries)
    by = state.choice_row(row[1], "experiments.measure", "pairs_measure", minimal_pairs.MEASURES)
    ranking = minimal_pairs.head_ranking(pair.a.weights, pair.b.weights, pair.pairs, query, by)
    left, right = st.columns([2, 3])
    _pair_ranking(left, ranking, labels_a[query])
    top = (int(ranking["layer"][0]), int(ranking["head"][0]))
    heads = [(int(r["layer"]), int(r["head"])) for _, r in ranking.head(minimal_pairs.RANKED_HEADS).iterrows()]
    chosen = state.control(
        right.selectbox,
        t("experiments.pair_head"),
        "pairs_head",
        list(range(len(heads))),
        labels=lambda i: plain("experiments.head_label", layer=heads[i][0], head=heads[i][1]),
        decode=lambda stored: stored if 0 <= stored < len(heads) else 0,
        note=False,
    )
    _pair_difference(right, pair, labels_a, labels_b, *(heads[chosen] if heads else top))


def _pair_sentences(loaded):
    """The preset, the two sentences and how they align; the pair (:class:`minimal_pairs.MinimalPair`)."""
    preset = state.choice_row(
        st, "experiments.preset", "pairs_preset", ("custom", *minimal_pairs.PRESETS), then=_load_preset
    )
    del preset  # the choice fills both sentences (its callback); what is drawn below is the sentences
    row = st.columns(2)
    texts = []
    for column, name in zip(row, ("pairs_a", "pairs_b"), strict=True):
        texts.append(state.text_box(column.text_input, t(f"experiments.sentence_{name[-1]}"), name))
    text_a, text_b = texts
    pair = feedback.or_stop(cache_experiments.minimal_pair, loaded, text_a, text_b)
    labels_a, labels_b = list(pair.a.encoding.labels), list(pair.b.encoding.labels)
    if pair.one_to_one:
        st.caption(
            t(
                "experiments.aligned",
                changed=", ".join(labels_a[i] for i in pair.changed_a) or "—",
                into=", ".join(labels_b[j] for j in pair.changed_b) or "—",
            )
        )
    else:
        lone_a = [labels_a[i] for i, j in pair.pairs if j is None]
        lone_b = [labels_b[j] for i, j in pair.pairs if i is None]
        st.info(t("experiments.not_aligned", a=", ".join(lone_a) or "—", b=", ".join(lone_b) or "—"))
    return pair


def _pair_ranking(place, ranking, token: str) -> None:
    """The :data:`~attention_viz.analysis.minimal_pairs.RANKED_HEADS` heads whose attention from the query token
    changed most."""
    place.dataframe(
        ranking.head(minimal_pairs.RANKED_HEADS),
        hide_index=True,
        key="_pairs_ranking",
        column_config={
            "layer": st.column_config.NumberColumn(t("stats.col_layer")),
            "head": st.column_config.NumberColumn(t("stats.col_head")),
            "js": st.column_config.NumberColumn(t("experiments.measure_js"), format="%.4f"),
            "tv": st.column_config.NumberColumn(t("experiments.measure_tv"), format="%.4f"),
        },
    )
    place.caption(t("experiments.ranking_caption", token=token))


def _pair_difference(place, pair, labels_a: list, labels_b: list, shown_layer: int, shown_head: int) -> None:
    """The chosen head's map of sentence B minus sentence A over the aligned tokens."""
    rows_a, rows_b = minimal_pairs.matched(pair.pairs)
    pair_labels = [
        labels_a[i] if labels_a[i] == labels_b[j] else f"{labels_a[i]}→{labels_b[j]}"
        for i, j in zip(rows_a, rows_b, strict=True)
    ]
    difference = minimal_pairs.difference_map(pair.a.weights, pair.b.weights, pair.pairs, shown_layer, shown_head)
    title = plain("experiments.pair_difference_title", layer=shown_layer, head=shown_head)
    _difference(place, difference, pair_labels, title, "pairs_difference")
    place.caption(t("experiments.pair_difference_caption"))


def _difference(place, difference: np.ndarray, labels: list, title: str, key: str) -> None:
    """A ``(query, key)`` change of attention on the diverging scale, its range fitted: a knock-out or a
    word's change moves attention by a few hundredths."""
    chart = figures.difference_heatmap(
        difference, labels, title, True, query_title=t("figures.axis_query"), key_title=t("figures.axis_key")
    )
    place.plotly_chart(chart, key=key, theme=None)


def _load_preset(chosen: str) -> None:
    if chosen in minimal_pairs.PRESETS:
        for name, text in zip(("pairs_a", "pairs_b"), minimal_pairs.PRESETS[chosen], strict=True):
            state.set_text(name, text)


def _prediction_position(kind: str, encoding, tokenizer, text_key: tuple) -> tuple[int, bool]:
    """``(default position, whether the text has the mask token)``: a masked LM's first mask token, else its first
    token that is no special token; a causal LM's last token (what comes after the text). A new text starts the
    position from its default again, so the mask token typed after the note below is the one read."""
    s = st.session_state
    if s.get("_predict_text", text_key) != text_key:
        s["predict_position"] = -1  # the stored index is a position of the old text
    s["_predict_text"] = text_key
    if kind == "causal":
        return encoding.num_tokens - 1, False
    masks = np.flatnonzero(encoding.input_ids == tokenizer.mask_token_id) if tokenizer.mask_token_id is not None else []
    if len(masks):
        return int(masks[0]), True
    plain_tokens = np.flatnonzero(~encoding.special)
    return (int(plain_tokens[0]) if len(plain_tokens) else 0), False


def _predictions_view(loaded, selection) -> None:
    info, layer, head = loaded.info, selection.layer, selection.head
    head_module = cache_experiments.lm_head(loaded)
    if head_module is None:
        st.info(t("experiments.no_lm_head", model=info.name, family=info.family_name))
        return
    encoding = feedback.or_stop(cache.encoding, loaded, selection.text, selection.pair)
    feedback.truncation(encoding)
    labels, tokenizer = encoding.labels, loaded.tokenizer
    mask = str(tokenizer.mask_token or "")
    st.caption(t(f"experiments.lm_{head_module.kind}", mask=mask))
    default, masked = _prediction_position(head_module.kind, encoding, tokenizer, (selection.text, selection.pair))
    row = st.columns(2)
    position = controls.token_choice(row[0], "predict_position", labels, default, t("experiments.position"))
    if head_module.kind == "masked" and not masked:
        st.info(t("experiments.no_mask", mask=mask, position=position, token=labels[position]))
    key, scope = _knockout_choice(encoding, st, layer, head)
    if info.causal and key == 0:
        st.warning(t("experiments.first_key_causal"))
        return
    k = 8
    runs = {
        "plain": cache_experiments.predictions(loaded, selection.text, selection.pair, position, k),
        "off": cache_experiments.predictions(loaded, selection.text, selection.pair, position, k, off=(layer, head)),
        "knocked": cache_experiments.predictions(
            loaded, selection.text, selection.pair, position, k, knocked=(key, scope, layer, head)
        ),
    }
    columns = st.columns(3)
    for column, (name, found) in zip(columns, runs.items(), strict=True):
        column.markdown(t(f"experiments.predict_{name}", layer=layer, head=head, token=labels[key]))
        column.dataframe(
            {
                plain("experiments.col_prediction"): [piece.label(_bytes_label) for piece in found.pieces],
                plain("experiments.col_piece"): list(found.tokens),
                plain("experiments.col_probability"): found.probabilities,
            },
            hide_index=True,
            key=f"_predict_{name}",
            column_config={plain("experiments.col_probability"): st.column_config.NumberColumn(format="%.4f")},
        )
    st.caption(t("experiments.predict_caption", position=position, token=labels[position]))


def _bytes_label(run: bytes) -> str:
    """A run of bytes that is no whole character, in the user's language (``byte 0xC4``)."""
    hexes = " ".join(f"0x{b:02X}" for b in run)
    return plain("experiments.piece_bytes" if len(run) > 1 else "experiments.piece_byte", hex=hexes)


_show()
