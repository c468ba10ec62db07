"""Compare: one head drawn large (pretrained, from scratch or their difference) beside its controls, a token's
attention as bars and as bertviz's lines, and the numbers that say how far the two encoders agree."""

import functools
from dataclasses import dataclass

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


@dataclass(frozen=True)
class _Head:
    """The head's two maps as the view toggles shape them (``(query, key)``), with their labels; ``raw_*``
    are the head's token-level attention as extracted, ``view`` the toggles' result (None when all are off)."""

    raw_pretrained: np.ndarray
    raw_scratch: np.ndarray
    pretrained: np.ndarray
    scratch: np.ndarray
    row_labels: np.ndarray
    key_labels: np.ndarray
    view: analysis.ViewMatrix | None


def _show() -> None:
    selection = state.selection()
    loaded = cache.model(selection.model)
    if selection.presentation:  # the map takes the whole width (and height); its controls go under it
        map_column, side = st.container(), st.container()
    else:
        map_column, side = st.columns([3, 2], gap="medium")
    layer, head, view, variant, seed = _head_controls(side, loaded)
    pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
    scratch = feedback.or_stop(cache.scratch, loaded, selection.text, selection.pair, variant, int(seed))
    encoding = pretrained.encoding
    # The view toggles (word level, hide [CLS]/[SEP], pair block) shape what the map, the bars and the lines
    # show; with them off the map is the head's token-level attention exactly as extracted.
    options = view_options(encoding.is_pair, side)
    maps = _head_maps(pretrained, scratch, layer, head, options)
    queries, keys = maps.pretrained.shape  # q != k for a pair's A→B and B→A blocks
    style = figures.map_style(selection.presentation, max(queries, keys))  # smaller labels fit more
    size = style.window
    focus = _focus_control(side, maps.row_labels, queries, size)
    query_start, key_start = state.set_window("compare", queries, keys, size)
    rows, columns = figures.window_slice(query_start, queries, size), figures.window_slice(key_start, keys, size)
    what = _file_part(view, options)  # names the files: e.g. attention_..._layer3_head1_pretrained_words.csv
    config = downloads.chart_config(loaded.info.name, layer, head, what)
    fit = selection.fit_range or options.block in CROSS_BLOCKS
    window = {
        "key_labels": maps.key_labels[columns],
        "style": style,
        "query_start": rows.start,
        "key_start": columns.start,
        "focus": focus - rows.start if rows.start <= focus < rows.stop else None,
        "query_title": t("figures.axis_query"),
        "key_title": t("figures.axis_key"),
    }
    shown = {"pretrained": maps.pretrained, "scratch": maps.scratch, "difference": maps.scratch - maps.pretrained}
    shown = shown[view]
    map_title = plain(f"compare.map_title_{view}", variant=plain(f"compare.variant_{variant.replace('-', '_')}"))
    with map_column:
        feedback.truncation(encoding)
    _map(map_column, loaded, pretrained, scratch, options, view, variant, int(seed), map_title, style, what)
    windowed = _under_the_map(map_column, loaded.info, maps, options, encoding.num_tokens, size)

    # Below the screen: the numbers, the token in focus as bars and lines, the downloads.
    _numbers(maps)
    _variant_note(loaded, selection, variant, int(seed))
    if focus >= 0:
        _focus_bars(maps, focus, columns, style, config)
    _lines(maps, view, rows, columns, style, window["focus"], config)
    if windowed:
        st.caption(t("compare.download_full", queries=queries, keys=keys))
    shown_window = (shown[rows, columns], maps.row_labels[rows])
    chart = functools.partial(_download_figure, maps, view, *shown_window, map_title, fit, window)
    downloads.buttons(pretrained, shown, chart, layer, head, what, tuple(maps.row_labels), tuple(maps.key_labels))


def _download_figure(maps: _Head, view: str, matrix, row_labels, title: str, fit: bool, window: dict):
    """The map as a plotly figure, for the HTML download (made when it is clicked; the element draws the
    map on screen)."""
    if view == "difference":
        return figures.difference_heatmap(matrix, row_labels, title, fit, **window)
    zrange = figures.shared_range(maps.pretrained, maps.scratch) if fit else (0.0, 1.0)
    return figures.attention_heatmap(matrix, row_labels, title, zrange, **window)


def _head_controls(side, loaded) -> tuple[int, int, str, str, int]:
    """The title, the head picker, the examples, the map shown and the encoder variant: ``(layer, head,
    view, variant, seed)``."""
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
    return layer, head, view, variant, seed


def _head_maps(pretrained, scratch, layer: int, head: int, options: analysis.ViewOptions) -> _Head:
    raw_scratch, raw_pretrained = scratch.head(layer, head), pretrained.head(layer, head)
    encoding = pretrained.encoding
    if options == analysis.ViewOptions():
        labels = encoding.labels
        return _Head(raw_pretrained, raw_scratch, raw_pretrained, raw_scratch, labels, labels, None)
    view = analysis.apply_view(raw_pretrained, encoding, options)
    scratch_map = analysis.apply_view(raw_scratch, encoding, options).matrix  # (q, k), same labels
    return _Head(raw_pretrained, raw_scratch, view.matrix, scratch_map, view.query_labels, view.key_labels, view)


def _focus_control(side, row_labels, queries: int, size: int) -> int:
    no_focus = t("compare.focus_none")
    return state.control(
        side.selectbox,
        t("compare.focus"),
        "focus",
        [-1, *range(queries)],
        labels=lambda i: no_focus if i < 0 else f"{i}: {figures.isolate(figures.shorten_label(row_labels[i]))}",
        then=lambda query: state.set_focus(query, queries, size),
    )


def _file_part(view: str, options: analysis.ViewOptions) -> str:
    """The view in the downloads' file names: ``pretrained``, ``scratch_words_no_special``, ..."""
    return "_".join(
        [view]
        + (["words"] if options.word_level else [])
        + (["no_special"] if options.hide_special else [])
        + ([options.block] if options.block != "all" else [])
    )


def _under_the_map(place, info, maps: _Head, options, total: int, size: int) -> bool:
    """What the map reads, the view's caption, the model's notes and the window's sliders; whether the map
    is a window of the tokens."""
    queries, keys = maps.pretrained.shape
    # what the map reads, whatever the window; as many tokens as the window's note counts
    place.caption(t("compare.reading", tokens=queries if queries == keys else total))
    if maps.view is not None:
        view_caption(maps.view, options, place)
    with place:
        model_notes.layers(info)
    if queries <= size and keys <= size:
        return False
    if queries == keys:
        place.caption(t("compare.window_note", size=size, total=queries))
    else:
        place.caption(t("compare.window_note_block", size=size, queries=queries, keys=keys))
    sliders = place.columns([3, 2])[0]
    if queries > size:
        state.control(sliders.slider, t("compare.query_start"), "query_start", min_value=0, max_value=queries - size)
    if keys > size:
        state.control(sliders.slider, t("compare.key_start"), "key_start", min_value=0, max_value=keys - size)
    return True


def _numbers(maps: _Head) -> None:
    """How far the two encoders agree, over the head's whole token-level attention, whatever the view: a
    block's rows are not distributions, so their entropy or divergence would mean nothing."""
    raw_scratch, raw_pretrained = maps.raw_scratch, maps.raw_pretrained
    numbers = st.container(horizontal=True, gap="large")  # wraps on a narrow screen: no number is cut
    js = analysis.js_divergence(raw_scratch, raw_pretrained).mean()
    numbers.metric(
        t("compare.max_difference"), f"{analysis.max_abs_difference(raw_scratch, raw_pretrained):.2e}", width="content"
    )
    numbers.metric(t("compare.js"), t("compare.bits", value=f"{js:.4f}"), width="content")
    for name, raw in (("pretrained", raw_pretrained), ("scratch", raw_scratch)):
        entropy = t("compare.bits", value=f"{analysis.row_entropy(raw).mean():.3f}")
        numbers.metric(t(f"compare.entropy_{name}"), entropy, width="content")
    if maps.view is not None:
        st.caption(t("compare.numbers_tokens"))


def _variant_note(loaded, selection, variant: str, seed: int) -> None:
    """The exact variant's parity check against transformers, or what the chosen variant changes."""
    info = loaded.info
    if variant == Variant.EXACT:
        worst = cache.parity(loaded, selection.text, selection.pair)
        where = dict(worst=f"{worst:.1e}", layers=info.num_layers, heads=info.num_heads)
        if worst <= PARITY_BOUND:
            st.success(t("compare.parity_ok", **where))
        else:
            st.error(t("compare.parity_bad", bound=f"{PARITY_BOUND:g}", **where))
    elif variant == Variant.ARTICLE_SCALING:
        factor = f"{info.num_heads**0.5:.2f}"
        st.caption(t("compare.note_article", hidden=info.hidden_size, head_dim=info.head_dim, factor=factor))
    elif variant == Variant.NO_SCALING:
        st.caption(t("compare.note_no_scaling", head_dim=info.head_dim))
    else:
        st.caption(t("compare.note_random", seed=seed))


def _focus_bars(maps: _Head, focus: int, columns: slice, style, config: dict) -> None:
    bars = {
        t("compare.view_pretrained"): maps.pretrained[focus, columns],
        t("compare.view_scratch"): maps.scratch[focus, columns],
    }
    title = plain("compare.bars_title", token=figures.isolate(maps.row_labels[focus]), index=focus)  # no Markdown
    chart = figures.focus_bars(bars, maps.key_labels[columns], title, style, columns.start)
    attention_map.figure(st.container(), "focus_bars", chart, config)


def _lines(maps: _Head, view: str, rows: slice, columns: slice, style, focus: int | None, config: dict) -> None:
    lines_of = maps.scratch if view == "scratch" else maps.pretrained
    source = t("compare.view_scratch") if view == "scratch" else t("compare.view_pretrained")
    chart = figures.line_view(
        lines_of[rows, columns],
        maps.row_labels[rows],
        maps.key_labels[columns],
        t("compare.lines_title", source=source),
        style,
        rows.start,
        columns.start,
        focus,
    )
    attention_map.figure(st.container(), "lines", chart, config)


def _map(place, loaded, pretrained, scratch, options, view, variant, seed, title, style, what) -> None:
    """The map element: the shown map of every head the browser holds (see :mod:`attention_viz.ui.attention_map`)."""
    info, selection = loaded.info, state.selection()
    encoding = pretrained.encoding
    plain_view = options == analysis.ViewOptions()
    fit = selection.fit_range or options.block in CROSS_BLOCKS

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
    spec = attention_map.MapSpec(
        layers=info.num_layers,
        heads=info.num_heads,
        style=style,
        **attention_map.scale(view == "difference"),
        texts=attention_map.texts(title, t("compare.fit_colorbar") if fit else ""),
        png_prefix=export.file_stem(info.name),
        png_what=what,
        presentation=selection.presentation,
    )
    content = (info.name, info.revision, encoding.labels, view, variant, seed, options, fit)
    attention_map.draw(place, attention_map.COMPARE_KEY, spec, content, maps_of, tuple(row_labels), tuple(key_labels))


@st.fragment
def _page() -> None:
    """The page, rerun alone when one of its widgets changes (:mod:`attention_viz.ui.fragment`)."""
    with fragment.page_body("compare"):
        _show()


_page()
