"""Compare: one head drawn large (pretrained, from scratch or their difference), a token's attention as
bars and as bertviz's lines, and the numbers that say how far the two encoders agree."""

import functools

import streamlit as st

from attention_viz import analysis, figures
from attention_viz.models.encoder import Variant
from attention_viz.ui import cache, downloads, feedback, model_notes, state
from attention_viz.ui.i18n import option_labels, plain, t
from attention_viz.ui.view_options import view_caption, view_options

VIEWS = state.MAP_VIEWS
PARITY_BOUND = 1e-5
FINDING = ("it", "animal", "street")  # the opening example's query, its referent and a distractor


def _set(key: str, value: int) -> None:
    """Set a permanent view key and, if drawn before, its page widget (written only when it changes)."""
    st.session_state[key] = value
    widget = state.page_widget_key(key)
    if widget in st.session_state and st.session_state[widget] != value:
        st.session_state[widget] = value


def _focus_on(query: int, total: int, size: int) -> None:
    """Put ``query`` in focus, moving the query window to it when it is outside."""
    _set("focus", query)
    start = st.session_state["query_start"]
    if query >= 0 and not start <= query < start + size:
        _set("query_start", figures.window_around(query, total, size))


def _on_cell(first_query: int, keys: int, total: int, size: int) -> None:
    """A click on a cell of the map: its marker's index is ``row * keys + column`` in the window."""
    points = st.session_state["map"].selection.points
    if points:
        _focus_on(first_query + int(points[0]["point_index"]) // keys, total, size)


def _on_focus_box(total: int, size: int) -> None:
    _focus_on(st.session_state[state.page_widget_key("focus")], total, size)


def _page_widget(key: str) -> str:
    """The page widget's key, its state synced from the permanent key (only when they differ)."""
    widget = state.page_widget_key(key)
    if st.session_state.get(widget) != st.session_state[key]:
        st.session_state[widget] = st.session_state[key]
    return widget


selection = state.selection()
loaded = cache.model(selection.model)
info = loaded.info
layer, head = selection.layer, selection.head

st.header(t("compare.title", layer=layer, head=head))
intro_slot = st.empty()  # filled once the result is known: the intro points at the example's finding

top_left, top_right = st.columns([3, 2], vertical_alignment="bottom")
variants = [v.value for v in Variant]
variant = top_right.selectbox(
    t("compare.variant"),
    variants,
    index=variants.index(st.session_state["variant"]),
    format_func=option_labels(variants, lambda v: f"compare.variant_{v.replace('-', '_')}"),
    key=state.page_widget_key("variant"),
    on_change=state.remember,
    args=("variant",),
    help=t("compare.variant_help"),
)
seed = st.session_state["seed"]
if variant == "random":
    seed = top_right.number_input(
        t("compare.seed"),
        0,
        2**31 - 1,
        value=st.session_state["seed"],
        key=state.page_widget_key("seed"),
        on_change=state.remember,
        args=("seed",),
    )

pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
scratch = feedback.or_stop(cache.scratch, loaded, selection.text, selection.pair, variant, int(seed))
encoding = pretrained.encoding
feedback.truncation(encoding)
labels, total = encoding.labels, encoding.num_tokens

intro = t("compare.intro")
example_fits = info.num_layers > state.EXAMPLE_LAYER and info.num_heads > state.EXAMPLE_HEAD
if selection.text == state.EXAMPLE_TEXT and example_fits and all(token in encoding.tokens for token in FINDING):
    query, referent, other = (encoding.tokens.index(token) for token in FINDING)
    example = pretrained.head(state.EXAMPLE_LAYER, state.EXAMPLE_HEAD)
    intro += " " + t(
        "compare.finding",
        layer=state.EXAMPLE_LAYER,
        head=state.EXAMPLE_HEAD,
        query=labels[query],
        referent=labels[referent],
        other=labels[other],
        to_referent=float(example[query, referent]),
        to_other=float(example[query, other]),
    )
intro_slot.markdown(intro)

view = top_left.radio(
    t("compare.view"),
    VIEWS,
    format_func=option_labels(VIEWS, lambda v: f"compare.view_{v}"),
    horizontal=True,
    key=_page_widget("map_view"),
    on_change=state.remember,
    args=("map_view",),
)

# The view toggles (word level, hide [CLS]/[SEP], pair block) shape what the map, the bars and the lines
# show; with them off the map is the head's token-level attention exactly as extracted.
options = view_options(encoding.is_pair)
raw_ours, raw_theirs = scratch.head(layer, head), pretrained.head(layer, head)
if options == analysis.ViewOptions():
    ours, theirs, row_labels, key_labels, their_view = raw_ours, raw_theirs, labels, labels, None
else:
    their_view = analysis.apply_view(raw_theirs, encoding, options)
    ours = analysis.apply_view(raw_ours, encoding, options).matrix  # (q, k), same labels as theirs
    theirs, row_labels, key_labels = their_view.matrix, their_view.query_labels, their_view.key_labels
queries, keys = theirs.shape  # q != k for a pair's A→B and B→A blocks
style = figures.map_style(st.session_state["presentation"], max(queries, keys))  # smaller labels fit more
size = style.window

if st.session_state["focus"] >= queries:  # a shorter text (or view) than the one the focus was chosen on
    _set("focus", -1)
_set("query_start", figures.window_start(st.session_state["query_start"], queries, size))
_set("key_start", figures.window_start(st.session_state["key_start"], keys, size))
focus = st.session_state["focus"]

rows = figures.window_slice(st.session_state["query_start"], queries, size)
columns = figures.window_slice(st.session_state["key_start"], keys, size)
what = "_".join(
    [view]
    + (["words"] if options.word_level else [])
    + (["no_special"] if options.hide_special else [])
    + ([options.block] if options.block != "all" else [])
)  # names the files: e.g. attention_all-MiniLM-L6-v2_layer3_head1_pretrained_words.csv
config = downloads.chart_config(info.name, layer, head, what)

zrange = figures.shared_range(theirs, ours) if selection.fit_range else (0.0, 1.0)  # same colours, same weights
window = {
    "key_labels": key_labels[columns],
    "style": style,
    "query_start": rows.start,
    "key_start": columns.start,
    "focus": focus - rows.start if rows.start <= focus < rows.stop else None,
    "selectable": True,
    "query_title": t("figures.axis_query"),
    "key_title": t("figures.axis_key"),
}
shown = {"pretrained": theirs, "scratch": ours, "difference": ours - theirs}[view]
title = t(f"compare.map_title_{view}", variant=t(f"compare.variant_{variant.replace('-', '_')}"))
if view == "difference":
    chart = figures.difference_heatmap(shown[rows, columns], row_labels[rows], title, selection.fit_range, **window)
else:
    chart = figures.attention_heatmap(shown[rows, columns], row_labels[rows], title, zrange, **window)
st.plotly_chart(
    chart,
    key="map",
    theme=None,
    on_select=functools.partial(_on_cell, rows.start, columns.stop - columns.start, queries, size),  # no args
    selection_mode="points",
    config=config,
)
if their_view is not None:
    view_caption(their_view, options)
model_notes.layers(info)
windowed = queries > size or keys > size
if windowed:  # below the map: the map stays at the top of the page
    if queries == keys:
        st.caption(t("compare.window_note", size=size, total=queries))
    else:
        st.caption(t("compare.window_note_block", size=size, queries=queries, keys=keys))
    sliders, small = st.columns([3, 2])
    if queries > size:
        sliders.slider(
            t("compare.query_start"),
            0,
            queries - size,
            key=_page_widget("query_start"),
            on_change=state.remember,
            args=("query_start",),
        )
    if keys > size:
        sliders.slider(
            t("compare.key_start"),
            0,
            keys - size,
            key=_page_widget("key_start"),
            on_change=state.remember,
            args=("key_start",),
        )
    if queries == keys:  # the thumbnail pools square maps only
        small.plotly_chart(
            figures.overview(shown if view != "difference" else theirs, rows, columns, style, zrange),
            key="overview",
            theme=None,
            width="content",
            config=config,
        )
st.caption(t("compare.reading", tokens=total))
if windowed:
    st.caption(t("compare.download_full", queries=queries, keys=keys))
downloads.buttons(pretrained, shown, chart, layer, head, what, tuple(row_labels), tuple(key_labels))

st.subheader(t("compare.focus_title"))
no_focus = t("compare.focus_none")  # fixed at draw time: format_func may run outside the page
st.selectbox(
    t("compare.focus"),
    [-1, *range(queries)],
    format_func=lambda i: no_focus if i < 0 else f"{i}: {figures.isolate(figures.shorten_label(row_labels[i]))}",
    key=_page_widget("focus"),
    on_change=_on_focus_box,
    args=(queries, size),
)
if focus >= 0:
    bars = {t("compare.view_pretrained"): theirs[focus, columns], t("compare.view_scratch"): ours[focus, columns]}
    st.plotly_chart(
        figures.focus_bars(
            bars,
            key_labels[columns],
            plain("compare.bars_title", token=figures.isolate(row_labels[focus]), index=focus),  # a chart: no Markdown
            style,
            columns.start,
        ),
        key="focus_bars",
        theme=None,
        config=config,
    )
lines_of = ours if view == "scratch" else theirs
lines_source = t("compare.view_scratch") if view == "scratch" else t("compare.view_pretrained")
st.plotly_chart(
    figures.line_view(
        lines_of[rows, columns],
        row_labels[rows],
        key_labels[columns],
        t("compare.lines_title", source=lines_source),
        style,
        rows.start,
        columns.start,
        window["focus"],
    ),
    key="lines",
    theme=None,
    config=config,
)

# The numbers are over the head's whole token-level attention, whatever the view: a block's rows are not
# distributions, so their entropy or divergence would mean nothing.
ours, theirs = raw_ours, raw_theirs
numbers = st.columns(2)
numbers[0].metric(t("compare.max_difference"), f"{analysis.max_abs_difference(ours, theirs):.2e}")
numbers[1].metric(t("compare.js"), t("compare.bits", value=f"{analysis.js_divergence(ours, theirs).mean():.4f}"))
numbers = st.columns(2)
numbers[0].metric(
    t("compare.entropy_pretrained"), t("compare.bits", value=f"{analysis.row_entropy(theirs).mean():.3f}")
)
numbers[1].metric(t("compare.entropy_scratch"), t("compare.bits", value=f"{analysis.row_entropy(ours).mean():.3f}"))
if their_view is not None:
    st.caption(t("compare.numbers_tokens"))

if variant == "exact":
    worst = cache.parity(loaded, selection.text, selection.pair)
    where = dict(worst=f"{worst:.1e}", layers=info.num_layers, heads=info.num_heads)
    if worst <= PARITY_BOUND:
        st.success(t("compare.parity_ok", **where))
    else:
        st.error(t("compare.parity_bad", bound=f"{PARITY_BOUND:g}", **where))
elif variant == "article-scaling":
    st.caption(
        t(
            "compare.note_article",
            hidden=info.hidden_size,
            head_dim=info.head_dim,
            factor=f"{info.num_heads**0.5:.2f}",
        )
    )
elif variant == "no-scaling":
    st.caption(t("compare.note_no_scaling", head_dim=info.head_dim))
else:
    st.caption(t("compare.note_random", seed=int(seed)))
