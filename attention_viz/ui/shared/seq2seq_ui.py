"""Encoder–decoders (T5, BART) in the app: the source and target boxes, the attention-kind switch and the pages.

An encoder–decoder reads two texts: the encoder reads the source (the sidebar's sentence, ``text``), the
decoder the target (``target``, teacher forcing: its start token, then the target's tokens). It has three kinds
of attention (``attention_kind``, an id of :data:`~attention_viz.extraction.seq2seq.KINDS`):

- ``encoder``: the encoder's self-attention, source × source, ``(L_enc, h_enc, s, s)``;
- ``decoder``: the decoder's causal self-attention, target × target, ``(L_dec, h_dec, t, t)``;
- ``cross``: the decoder's attention to the encoder's output, target tokens (queries, rows) × source tokens
  (keys, columns), ``(L_dec, h_dec, t, s)``.

The Layer and Head controls range over the chosen kind's stack. With ``generate`` above 0 the model writes the
target itself (greedy, :func:`~attention_viz.extraction.seq2seq.generate_seq2seq`) and the written tokens' labels
start with :data:`WRITTEN`. Compare, All heads, Head statistics and Inside a head show the
chosen kind; the other pages say what they show and for which models. Source:
:func:`attention_viz.extraction.seq2seq.extract_seq2seq` (transformers' ``encoder_attentions``,
``decoder_attentions``, ``cross_attentions``, and the from-scratch twin's); Inside a head's steps:
:func:`attention_viz.analysis.seq2seq_steps.seq2seq_steps`.
"""

from __future__ import annotations

import functools

import numpy as np
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import stats
from attention_viz.extraction import export
from attention_viz.extraction.seq2seq import KINDS, WRITTEN
from attention_viz.models.encoder import PARITY_BOUND
from attention_viz.models.loading import LoadedSeq2Seq
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.frame import feedback, screen
from attention_viz.ui.server import cache_maps, cache_seq2seq
from attention_viz.ui.text.i18n import plain, t
from attention_viz.ui.text.safe_text import Markdown
from attention_viz.ui.view import state

KIND_KEY = "attention_kind"
TARGET_KEY = "target"
GENERATE_KEY = "generate"  # target tokens the model writes itself in place of the target text (0: the text)
MAP_KEY = "seq2seq_map"  # the map element's key on Compare for an encoder–decoder
PAGES = ("compare", "all_heads", "head_stats", "inside")  # the pages that show an encoder–decoder's maps
_SHOWN = "_seq2seq_inputs"  # whether the last run drew the encoder–decoder's input area


def is_seq2seq(loaded) -> bool:
    """Whether ``loaded`` is an encoder–decoder (T5, BART)."""
    return isinstance(loaded, LoadedSeq2Seq)


def kind() -> str:
    """The attention kind chosen (an id of :data:`KINDS`)."""
    chosen = st.session_state.get(KIND_KEY)
    return chosen if chosen in KINDS else state.DEFAULTS[KIND_KEY]


def shape(loaded: LoadedSeq2Seq, chosen: str | None = None) -> tuple[int, int]:
    """``(layers, heads)`` of the chosen kind's stack (the encoder's, or the decoder's for its two kinds), also
    the shape the Layer and Head controls range over from now on."""
    info = loaded.info
    chosen = chosen or kind()
    found = (
        (info.encoder_layers, info.encoder_heads) if chosen == "encoder" else (info.decoder_layers, info.decoder_heads)
    )
    st.session_state["_shape"] = found
    return found


def input_area(loaded, presentation: bool) -> None:
    """The sidebar's input: for an encoder–decoder the source and target boxes (each page that shows its maps
    draws the attention-kind switch: :func:`kind_switch`), else the sentence and the second sentence. Nothing typed
    is lost when the model changes: the boxes keep their texts while the other kind of model is shown (a box that
    is not drawn keeps its text here)."""
    seq2seq = is_seq2seq(loaded)
    s = st.session_state
    if s.get(_SHOWN, False) != seq2seq:  # the sentence box is drawn with another label: a new widget
        s["text"] = s.get("text", state.DEFAULTS["text"])
    s[_SHOWN] = seq2seq
    height = 120 if presentation else 96
    if not seq2seq:
        st.text_area(t("sidebar.text"), key="text", height=height)
        st.text_input(t("sidebar.pair"), key="pair", help=t("sidebar.pair_help"))
        return
    s["pair"] = s.get("pair", state.DEFAULTS["pair"])  # not drawn: kept for the next encoder or decoder
    st.text_area(t("seq2seq.source"), key="text", height=height, help=t("seq2seq.source_help"))
    widget = state.widget_key(TARGET_KEY)
    s.setdefault(widget, s.get(TARGET_KEY, state.DEFAULTS[TARGET_KEY]))
    s[TARGET_KEY] = st.text_area(
        t("seq2seq.target"), key=widget, height=68, help=t("seq2seq.target_help"), on_change=_typed_target
    )
    state.control(
        st.number_input, t("seq2seq.generate"), GENERATE_KEY, min_value=0, max_value=64, help=t("seq2seq.generate_help")
    )


def _typed_target() -> None:
    """``on_change`` of the target box: the typed target is read again in place of a written one."""
    st.session_state[GENERATE_KEY] = 0


def kind_switch(place) -> str:
    """The attention-kind switch (a radio group: Tab reaches it, the arrow keys choose), in ``place``; returns the
    kind chosen. Each page that shows an encoder–decoder's maps draws it under its title, in view at 1280 × 720."""
    return state.choice_row(place, "seq2seq.kind", KIND_KEY, KINDS, help=t("seq2seq.kind_help"))


def _results(loaded: LoadedSeq2Seq):
    """Both results (transformers' and the twin's) for the sidebar's texts; a clear message and the page stops on
    bad input."""
    selection = state.selection()
    tokens = int(st.session_state.get(GENERATE_KEY, 0))
    if tokens and not loaded.info.can_generate:
        st.info(t("seq2seq.cannot_generate", family=loaded.info.family_name))
        tokens = 0
    if tokens:
        pretrained = feedback.or_stop(cache_seq2seq.seq2seq_generated, loaded, selection.text, tokens, "pretrained")
        scratch = feedback.or_stop(cache_seq2seq.seq2seq_generated, loaded, selection.text, tokens, "scratch")
        st.caption(t("seq2seq.written", count=int(pretrained.generated.sum()), mark=WRITTEN.strip()))
        return pretrained, scratch
    target = st.session_state.get(TARGET_KEY, "")
    pretrained = feedback.or_stop(cache_seq2seq.seq2seq_result, loaded, selection.text, target, "pretrained")
    scratch = feedback.or_stop(cache_seq2seq.seq2seq_result, loaded, selection.text, target, "scratch")
    return pretrained, scratch


def axes(chosen: str) -> tuple[str, str]:
    """The map's axis titles for a kind: ``(query axis, key axis)``, which text each side's tokens are from."""
    return plain(f"seq2seq.axis_query_{chosen}"), plain(f"seq2seq.axis_key_{chosen}")


def page(name: str, loaded: LoadedSeq2Seq) -> None:
    """Draw page ``name`` for an encoder–decoder: Compare, All heads, Head statistics or Inside a head of the chosen
    kind, or a message naming what the page shows and where the encoder–decoder's maps are."""
    shape(loaded)
    for chosen, count in zip(("layer", "head"), st.session_state["_shape"], strict=True):
        st.session_state[chosen] = min(max(int(st.session_state[chosen]), 0), count - 1)
    if name == "compare":
        _compare(loaded)
    elif name == "all_heads":
        _all_heads(loaded)
    elif name == "head_stats":
        _head_stats(loaded)
    elif name == "inside":
        _inside(loaded)
    else:
        st.header(t(f"app.page_{name}") if name != "experiments" else t("experiments.page"))
        st.info(t("seq2seq.page_unsupported", family=loaded.info.family_name))


def _title(loaded: LoadedSeq2Seq, key: str, heading: str, *paragraphs, switch: bool = True) -> None:
    """The page's title with its explanation, the attention-kind switch under it (``switch``) and what the maps
    are."""
    from attention_viz.ui.shared import controls  # it draws this module's input area: imported once both are loaded

    chosen = kind()
    controls.title_row(key, heading, t(f"seq2seq.kind_intro_{chosen}"), *paragraphs)
    if switch:
        kind_switch(st)
        st.caption(t("seq2seq.reading", family=loaded.info.family_name))


def _compare(loaded: LoadedSeq2Seq) -> None:
    """Compare for an encoder–decoder: the chosen kind's head drawn large (pretrained, from scratch or their
    difference), the agreement numbers of that head and the parity of all three kinds."""
    selection, chosen = state.selection(), kind()
    pretrained, scratch = _results(loaded)
    _title(loaded, "seq2seq_title", t("compare.title", layer=selection.layer, head=selection.head), switch=False)
    layers, heads = shape(loaded)
    row = st.container(horizontal=True, gap="large", vertical_alignment="bottom")
    kind_switch(row)  # the kind and the map side by side: the map stays in view at 1280 × 720
    view = state.choice_row(row, "compare.view", "map_view", state.MAP_VIEWS)
    from attention_viz.ui.shared import controls

    layer, head = controls.head_picker(shortcuts=False)  # the map answers the arrow keys itself
    first, second = pretrained.maps(chosen), scratch.maps(chosen)  # (L, h, q, k)
    rows, columns = pretrained.labels(chosen)
    queries, keys = len(rows), len(columns)
    style = figures.map_style(selection.presentation, max(queries, keys))
    state.set_window("compare", queries, keys, style.window)
    fit = selection.fit_range

    title = plain(
        "seq2seq.map_title", kind=plain(f"seq2seq.kind_{chosen}"), map=plain(f"compare.map_title_{view}", variant="")
    )
    query_axis, key_axis = axes(chosen)
    texts = {
        **attention_map.texts(title, t("compare.fit_colorbar") if fit else ""),
        "query_axis": query_axis,
        "key_axis": key_axis,
    }
    spec = attention_map.MapSpec(
        layers=layers,
        heads=heads,
        style=style,
        **attention_map.scale(view == "difference"),
        texts=texts,
        png_prefix=export.file_stem(loaded.info.name),
        png_what=f"{chosen}_{view}",
        focus=False,
        presentation=selection.presentation,
    )
    info = loaded.info
    written = int(st.session_state.get(GENERATE_KEY, 0))
    content = (info.name, info.revision, selection.text, st.session_state[TARGET_KEY], written, chosen)
    recipe = cache_maps.seq2seq_recipe(content, first, second, rows, columns, view, fit)
    maps = cache_maps.held_maps(recipe, attention_map.held(spec, queries, keys))
    attention_map.draw(st.container(), MAP_KEY, spec, maps, recipe)
    _map_reading(chosen, queries, keys)
    st.caption(t("seq2seq.reading", family=info.family_name))
    if chosen == "decoder":
        st.caption(t("seq2seq.causal", family=info.family_name))
    _numbers(first[layer, head], second[layer, head])
    _parity(loaded, pretrained, scratch)


def _map_reading(chosen: str, queries: int, keys: int) -> None:
    """How many rows and columns the kind's maps have, and which text each side's tokens are from."""
    query_axis, key_axis = t(f"seq2seq.axis_query_{chosen}"), t(f"seq2seq.axis_key_{chosen}")
    st.caption(t("seq2seq.map_reading", queries=queries, keys=keys, query_axis=query_axis, key_axis=key_axis))


def _numbers(pretrained: np.ndarray, scratch: np.ndarray) -> None:
    """The head's agreement numbers (as Compare's): max |difference|, mean Jensen-Shannon divergence and the two
    mean row entropies in bits, over the head's ``(queries, keys)`` map."""
    first, second, third, fourth = st.columns(4)
    difference = analysis.max_abs_difference(scratch, pretrained)
    first.metric(t("compare.max_difference"), feedback.literal(f"{difference:.2e}"))  # a number: shown as is
    js = float(analysis.js_divergence(scratch, pretrained).mean())
    second.metric(t("compare.js"), t("compare.bits", value=f"{js:.4f}"))
    entropy = float(analysis.row_entropy(pretrained).mean())
    third.metric(t("compare.entropy_pretrained"), t("compare.bits", value=f"{entropy:.3f}"))
    entropy = float(analysis.row_entropy(scratch).mean())
    fourth.metric(t("compare.entropy_scratch"), t("compare.bits", value=f"{entropy:.3f}"))


def _parity(loaded: LoadedSeq2Seq, pretrained, scratch) -> None:
    """The twin against transformers over all three kinds, every layer and head."""
    worst = max(analysis.max_abs_difference(scratch.maps(k), pretrained.maps(k)) for k in KINDS)
    info = loaded.info
    where = dict(
        worst=f"{worst:.1e}",
        encoder_layers=info.encoder_layers,
        encoder_heads=info.encoder_heads,
        decoder_layers=info.decoder_layers,
        decoder_heads=info.decoder_heads,
    )
    if worst <= PARITY_BOUND:
        st.success(t("seq2seq.parity_ok", **where))
    else:
        st.error(t("seq2seq.parity_bad", bound=f"{PARITY_BOUND:g}", **where))


def _on_thumbnail(heads: int) -> None:
    """A click on a thumbnail chooses its head (row-major click targets) and asks for Compare."""
    points = st.session_state["seq2seq_grid"].selection.points
    if points:
        state.open_head(*divmod(int(points[0]["point_index"]), heads))


def _all_heads(loaded: LoadedSeq2Seq) -> None:
    """All heads of the chosen kind (pretrained), as All heads draws an encoder's; a click opens Compare."""
    if state.head_to_open():
        st.switch_page("attention_viz/ui/pages/compare.py")
    selection, chosen = state.selection(), kind()
    pretrained, _ = _results(loaded)
    layers, heads = shape(loaded)
    _title(loaded, "seq2seq_all_heads_title", t("all_heads.title", layers=layers, heads=heads))
    weights = pretrained.maps(chosen)
    scale = screen.PRESENTATION_SCALE if selection.presentation else 1
    grid = figures.head_grid(
        weights,
        fit_range=selection.fit_range,
        selected=(selection.layer, selection.head),
        title_font=round(figures.TITLE_FONT * scale),
    )
    _map_reading(chosen, weights.shape[2], weights.shape[3])
    box = screen.ratio_box(st, "seq2seq_grid_box", *figures.grid_height(layers, heads, *weights.shape[2:]))
    box.plotly_chart(
        grid,
        key="seq2seq_grid",
        theme=None,
        on_select=state.guarded(functools.partial(_on_thumbnail, heads)),
        selection_mode="points",
        height="stretch",
    )


def _head_stats(loaded: LoadedSeq2Seq) -> None:
    """Head statistics of the chosen kind on the sidebar's texts: a table, one row per head."""
    chosen = kind()
    pretrained, _ = _results(loaded)
    layers, heads = shape(loaded)
    _title(loaded, "seq2seq_stats_title", t("stats.title", layers=layers, heads=heads))
    tokenizer = loaded.tokenizer
    frame = stats.kind_statistics(pretrained, chosen, tokenizer.bos_token or "", tokenizer.eos_token or "")
    empty = [t(f"stats.col_{c}") for c in frame.columns[2:] if frame[c].isna().all()]
    shown = frame.rename(columns={c: plain(f"stats.col_{c}") for c in frame.columns})
    st.dataframe(shown, hide_index=True)
    if empty:
        st.caption(t("seq2seq.not_applicable", columns=", ".join(empty)))


def _inside(loaded: LoadedSeq2Seq) -> None:
    """Inside a head for an encoder–decoder: one head of the chosen kind computed step by step for one query token
    (:func:`~attention_viz.analysis.seq2seq_steps.seq2seq_steps`): the query, the keys (the encoder's output for
    the cross-attention), the dot products, T5's position bias, the scores (scaled in BART, causal in the decoder),
    the weights, the values and the head's output; then the head's map from these steps against transformers'."""
    from attention_viz.analysis.seq2seq_steps import seq2seq_steps
    from attention_viz.ui.shared import controls, downloads

    chosen, info = kind(), loaded.info
    pretrained, scratch = _results(loaded)
    rows, columns = pretrained.labels(chosen)
    header = st.empty()
    kind_switch(st)
    layer, head = controls.head_picker(
        explanation=(t(f"seq2seq.kind_intro_{chosen}"), t("seq2seq.inside_intro", family=info.family_name))
    )
    query = controls.token_choice(st.columns(2)[0], "inside_query", rows, min(1, len(rows) - 1), t("inside.query"))
    header.header(t("inside.title", layer=layer, head=head, query=rows[query]))
    inputs = cache_seq2seq.seq2seq_inputs(loaded, scratch)
    result = feedback.or_stop(seq2seq_steps, loaded.twin, inputs, chosen, layer, head, query)
    config = downloads.chart_config(info.name, layer, head, "inside")
    for number, (text, figure, key) in enumerate(_inside_steps(loaded, result, rows, columns), start=1):
        _inside_step(number, text, figure, key, config)
    worst = analysis.max_abs_difference(result.all_weights, pretrained.maps(chosen)[layer, head])
    message = "seq2seq.inside_parity_ok" if worst <= PARITY_BOUND else "seq2seq.inside_parity_bad"
    (st.success if worst <= PARITY_BOUND else st.error)(t(message, worst=f"{worst:.1e}", bound=f"{PARITY_BOUND:g}"))


def _inside_step(number: int, text: Markdown, figure, key: str, config: dict) -> None:
    """One step: its number and words beside its chart (as Inside a head draws an encoder's)."""
    words, chart = st.columns([1, 2])
    words.markdown(f"**{number}.** {text}")
    chart.plotly_chart(figure, key=key, theme=None, config=config)


def _inside_steps(loaded: LoadedSeq2Seq, result, rows, columns) -> list[tuple]:
    """``(words, figure, key)`` of each step of :func:`_inside`, in order; T5's position bias only where it adds
    one (its encoder's and decoder's self-attention)."""
    chosen, query, d = result.kind, result.query_index, result.query.shape[0]
    token, n, axis = rows[query], len(columns), t("inside.axis_head_dim")
    outlined = None if chosen == "cross" else query  # the query token is among the keys in a self-attention

    def bars(values, title, value_format: str, masked=()):
        """One number per key (a source or target token), the query token outlined where it is a key, the keys the
        causal mask hides greyed and marked as later tokens."""
        return figures.key_bars(values, columns, title, masked, value_format, outlined, t("seq2seq.inside_later"))

    family = "t5" if loaded.info.family == "t5" else "bart"
    scores = [t(f"seq2seq.inside_scores_{family}", scaling=f"{result.scaling:.4g}", d=d)]
    if result.has_bias:
        scores.append(t("seq2seq.inside_scores_bias"))
    else:
        scores.append(t("seq2seq.inside_scores_no_bias_t5" if family == "t5" else "seq2seq.inside_scores_no_bias_bart"))
    if chosen == "decoder":
        scores.append(t("seq2seq.inside_scores_causal"))
    values = t("seq2seq.inside_values_cross") if chosen == "cross" else t("inside.step_values")
    shown = [
        (
            t(f"seq2seq.inside_step_query_{chosen}", token=token, layer=result.layer, head=result.head, d=d),
            figures.step_heatmap(result.query[None], [token], t("inside.fig_query", d=d), axis),
            "step_query",
        ),
        (
            t(f"seq2seq.inside_step_keys_{chosen}"),
            figures.step_heatmap(result.keys, columns, t("inside.fig_keys", n=n, d=d), axis),
            "step_keys",
        ),
        (t("inside.step_dots", token=token), bars(result.dots, t("inside.fig_dots", n=n), ".1f"), "step_dots"),
    ]
    if result.has_bias:
        shown.append(
            (
                t(f"seq2seq.inside_step_bias_{chosen}", head=result.head, token=token),
                bars(result.bias, t("seq2seq.fig_bias", n=n), ".2f"),
                "step_bias",
            )
        )
    shown += [
        (
            Markdown(" ").join(scores),
            bars(result.scores, t("inside.fig_scores", n=n), ".2f", result.masked),
            "step_scores",
        ),
        (
            t("inside.step_weights", total=f"{result.weights.sum():.6f}"),
            bars(result.weights, t("inside.fig_weights", n=n), ".3f", result.masked),
            "step_weights",
        ),
        (values, figures.step_heatmap(result.values, columns, t("inside.fig_values", n=n, d=d), axis), "step_values"),
        (
            t("seq2seq.inside_context", token=token),
            figures.step_heatmap(result.context[None], [token], t("inside.fig_context", d=d), axis),
            "step_context",
        ),
    ]
    return shown
