"""Compare: one head drawn large (pretrained, from scratch or their difference) beside its controls, a token's
attention as bars and as bertviz's lines, and the numbers that say how far the two encoders agree."""

import numpy as np
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.extraction import export
from attention_viz.models.encoder import Variant
from attention_viz.ui import cache, controls, downloads, feedback, fragment, model_notes, presets_ui, state
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.i18n import plain, t
from attention_viz.ui.view_options import view_caption, view_options

PARITY_BOUND = 1e-5
VARIANTS = tuple(v.value for v in Variant)
# A pair's A→B and B→A blocks: their rows are parts of distributions (small weights), so their colour range
# is fitted to the head's values by default (the colour bar says so).
CROSS_BLOCKS = ("AB", "BA")


def _show() -> None:
    selection = state.selection()
    loaded = cache.model(selection.model)
    info = loaded.info
    presentation = st.session_state["presentation"]

    if presentation:  # the map takes the whole width (and height); its controls go under it
        map_column, side = st.container(), st.container()
    else:
        map_column, side = st.columns([3, 2], gap="medium")
    title = side.empty()
    # The map answers the arrow keys itself (in the browser): the step buttons take no shortcuts here.
    layer, head = controls.head_picker(
        side, explanation=(t("compare.intro"), t("compare.reading_help")), shortcuts=False
    )
    title.header(t("compare.title", layer=layer, head=head))
    presets_ui.look_for(loaded, side)

    view = state.control(
        side.radio,
        t("compare.view"),
        "map_view",
        state.MAP_VIEWS,
        labels=lambda v: t(f"compare.view_{v}"),
        horizontal=True,
    )
    variant = state.control(
        side.selectbox,
        t("compare.variant"),
        "variant",
        VARIANTS,
        labels=lambda v: t(f"compare.variant_{v.replace('-', '_')}"),
        help=t("compare.variant_help"),
    )
    seed = st.session_state["seed"]
    if variant == Variant.RANDOM:
        seed = state.control(side.number_input, t("compare.seed"), "seed", min_value=0, max_value=2**31 - 1)

    pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
    scratch = feedback.or_stop(cache.scratch, loaded, selection.text, selection.pair, variant, int(seed))
    encoding = pretrained.encoding
    labels, total = encoding.labels, encoding.num_tokens

    # The view toggles (word level, hide [CLS]/[SEP], pair block) shape what the map, the bars and the lines
    # show; with them off the map is the head's token-level attention exactly as extracted.
    options = view_options(encoding.is_pair, side)
    raw_scratch, raw_pretrained = scratch.head(layer, head), pretrained.head(layer, head)
    if options == analysis.ViewOptions():
        scratch_map, pretrained_map, row_labels, key_labels, view_matrix = (
            raw_scratch,
            raw_pretrained,
            labels,
            labels,
            None,
        )
    else:
        view_matrix = analysis.apply_view(raw_pretrained, encoding, options)
        scratch_map = analysis.apply_view(raw_scratch, encoding, options).matrix  # (q, k), same labels
        pretrained_map, row_labels, key_labels = view_matrix.matrix, view_matrix.query_labels, view_matrix.key_labels
    queries, keys = pretrained_map.shape  # q != k for a pair's A→B and B→A blocks
    style = figures.map_style(presentation, max(queries, keys))  # smaller labels fit more
    size = style.window

    no_focus = t("compare.focus_none")
    focus = state.control(
        side.selectbox,
        t("compare.focus"),
        "focus",
        [-1, *range(queries)],
        labels=lambda i: no_focus if i < 0 else f"{i}: {figures.isolate(figures.shorten_label(row_labels[i]))}",
        then=lambda query: state.set_focus(query, queries, size),
    )
    query_start, key_start = state.set_window("compare", queries, keys, size)
    rows = figures.window_slice(query_start, queries, size)
    columns = figures.window_slice(key_start, keys, size)
    what = "_".join(
        [view]
        + (["words"] if options.word_level else [])
        + (["no_special"] if options.hide_special else [])
        + ([options.block] if options.block != "all" else [])
    )  # names the files: e.g. attention_all-MiniLM-L6-v2_layer3_head1_pretrained_words.csv
    config = downloads.chart_config(info.name, layer, head, what)

    fit = selection.fit_range or options.block in CROSS_BLOCKS
    zrange = figures.shared_range(pretrained_map, scratch_map) if fit else (0.0, 1.0)
    window = {
        "key_labels": key_labels[columns],
        "style": style,
        "query_start": rows.start,
        "key_start": columns.start,
        "focus": focus - rows.start if rows.start <= focus < rows.stop else None,
        "query_title": t("figures.axis_query"),
        "key_title": t("figures.axis_key"),
    }
    shown = {"pretrained": pretrained_map, "scratch": scratch_map, "difference": scratch_map - pretrained_map}[view]
    map_title = plain(f"compare.map_title_{view}", variant=plain(f"compare.variant_{variant.replace('-', '_')}"))
    if view == "difference":  # the figure of the HTML download; the element draws the map on screen
        chart = figures.difference_heatmap(shown[rows, columns], row_labels[rows], map_title, fit, **window)
    else:
        chart = figures.attention_heatmap(shown[rows, columns], row_labels[rows], map_title, zrange, **window)
    with map_column:
        feedback.truncation(encoding)
    _map(map_column, loaded, pretrained, scratch, options, view, variant, int(seed), map_title, style, what)
    # under the map: what the map reads, whatever the window; as many tokens as the window's note counts
    map_column.caption(t("compare.reading", tokens=queries if queries == keys else total))
    if view_matrix is not None:
        view_caption(view_matrix, options, map_column)
    with map_column:
        model_notes.layers(info)
    windowed = queries > size or keys > size
    if windowed:
        if queries == keys:
            map_column.caption(t("compare.window_note", size=size, total=queries))
        else:
            map_column.caption(t("compare.window_note_block", size=size, queries=queries, keys=keys))
        sliders = map_column.columns([3, 2])[0]
        if queries > size:
            state.control(
                sliders.slider, t("compare.query_start"), "query_start", min_value=0, max_value=queries - size
            )
        if keys > size:
            state.control(sliders.slider, t("compare.key_start"), "key_start", min_value=0, max_value=keys - size)

    # Below the screen: the numbers, the token in focus as bars and lines, the downloads.
    # The numbers are over the head's whole token-level attention, whatever the view: a block's rows are not
    # distributions, so their entropy or divergence would mean nothing.
    numbers = st.container(horizontal=True, gap="large")  # wraps on a narrow screen: no number is cut
    js = analysis.js_divergence(raw_scratch, raw_pretrained).mean()
    numbers.metric(
        t("compare.max_difference"), f"{analysis.max_abs_difference(raw_scratch, raw_pretrained):.2e}", width="content"
    )
    numbers.metric(t("compare.js"), t("compare.bits", value=f"{js:.4f}"), width="content")
    numbers.metric(
        t("compare.entropy_pretrained"),
        t("compare.bits", value=f"{analysis.row_entropy(raw_pretrained).mean():.3f}"),
        width="content",
    )
    numbers.metric(
        t("compare.entropy_scratch"),
        t("compare.bits", value=f"{analysis.row_entropy(raw_scratch).mean():.3f}"),
        width="content",
    )
    if view_matrix is not None:
        st.caption(t("compare.numbers_tokens"))
    if variant == Variant.EXACT:
        worst = cache.parity(loaded, selection.text, selection.pair)
        where = dict(worst=f"{worst:.1e}", layers=info.num_layers, heads=info.num_heads)
        if worst <= PARITY_BOUND:
            st.success(t("compare.parity_ok", **where))
        else:
            st.error(t("compare.parity_bad", bound=f"{PARITY_BOUND:g}", **where))
    elif variant == Variant.ARTICLE_SCALING:
        st.caption(
            t(
                "compare.note_article",
                hidden=info.hidden_size,
                head_dim=info.head_dim,
                factor=f"{info.num_heads**0.5:.2f}",
            )
        )
    elif variant == Variant.NO_SCALING:
        st.caption(t("compare.note_no_scaling", head_dim=info.head_dim))
    else:
        st.caption(t("compare.note_random", seed=int(seed)))

    if focus >= 0:
        bars = {
            t("compare.view_pretrained"): pretrained_map[focus, columns],
            t("compare.view_scratch"): scratch_map[focus, columns],
        }
        attention_map.figure(
            st.container(),
            "focus_bars",
            figures.focus_bars(
                bars,
                key_labels[columns],
                plain(
                    "compare.bars_title", token=figures.isolate(row_labels[focus]), index=focus
                ),  # a chart: no Markdown
                style,
                columns.start,
            ),
            config,
        )
    lines_of = scratch_map if view == "scratch" else pretrained_map
    lines_source = t("compare.view_scratch") if view == "scratch" else t("compare.view_pretrained")
    attention_map.figure(
        st.container(),
        "lines",
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
        config,
    )
    if windowed:
        st.caption(t("compare.download_full", queries=queries, keys=keys))
    downloads.buttons(pretrained, shown, chart, layer, head, what, tuple(row_labels), tuple(key_labels))


def _map(place, loaded, pretrained, scratch, options, view, variant, seed, title, style, what) -> None:
    """The map element: the shown map of every head the browser holds (see :mod:`attention_viz.ui.attention_map`)."""
    info = loaded.info
    encoding = pretrained.encoding
    plain_view = options == analysis.ViewOptions()
    fit = st.session_state["fit_range"] or options.block in CROSS_BLOCKS

    def maps_of(layers):
        index = list(layers)
        first, second = pretrained.weights[index], scratch.weights[index]  # (n, heads, query, key)
        if not plain_view:
            first = analysis.apply_view(first, encoding, options).matrix
            second = analysis.apply_view(second, encoding, options).matrix
        maps = {"pretrained": first, "scratch": second, "difference": second - first}[view]
        if not fit:
            return maps, None
        if view == "difference":
            bound = np.maximum(np.abs(maps).max(axis=(-2, -1)), 1e-12)
            return maps, np.stack([-bound, bound], axis=-1)
        low = np.minimum(first.min(axis=(-2, -1)), second.min(axis=(-2, -1)))
        high = np.maximum(np.maximum(first.max(axis=(-2, -1)), second.max(axis=(-2, -1))), low + 1e-12)
        return maps, np.stack([low, high], axis=-1)

    if plain_view:
        row_labels = key_labels = encoding.labels
    else:
        probe = analysis.apply_view(pretrained.weights[0, 0], encoding, options)
        row_labels, key_labels = probe.query_labels, probe.key_labels
    difference = view == "difference"
    spec = attention_map.MapSpec(
        layers=info.num_layers,
        heads=info.num_heads,
        style=style,
        colorscale=figures.DIFFERENCE_COLORSCALE if difference else figures.ATTENTION_COLORSCALE,
        zrange=(-1.0, 1.0) if difference else (0.0, 1.0),
        zmid=0.0 if difference else None,
        value_format="+.3g" if difference else ".4f",
        texts=attention_map.texts(title, t("compare.fit_colorbar") if fit else ""),
        png_prefix=export.file_stem(info.name),
        png_what=what,
        presentation=st.session_state["presentation"],
    )
    content = (info.name, encoding.labels, view, variant, seed, options, fit)
    attention_map.draw(place, attention_map.COMPARE_KEY, spec, content, maps_of, tuple(row_labels), tuple(key_labels))


@st.fragment
def _page() -> None:
    """The page, rerun alone when one of its widgets changes (:mod:`attention_viz.ui.fragment`)."""
    with fragment.page_body("compare"):
        _show()


_page()
