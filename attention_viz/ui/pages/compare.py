"""Compare: one head drawn large (pretrained, from scratch or their difference) beside its controls, a token's
attention as bars and as bertviz's lines, and the numbers that say how far the two encoders agree."""

import functools

import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import layer_maps
from attention_viz.extraction import export
from attention_viz.figures.layout import plotly_text
from attention_viz.models.encoder import PARITY_BOUND, Variant
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.attention_map import page_view
from attention_viz.ui.frame import feedback, fragment
from attention_viz.ui.server import cache, cache_maps
from attention_viz.ui.shared import controls, downloads, model_notes, presets_ui
from attention_viz.ui.shared.view_options import view_caption, view_options
from attention_viz.ui.text.i18n import plain, t
from attention_viz.ui.view import state

VARIANTS = tuple(v.value for v in Variant)
# A pair's A→B and B→A blocks: their rows are parts of distributions (small weights), so their colour range
# is fitted to the head's values by default (the colour bar says so).
CROSS_BLOCKS = ("AB", "BA")
# The containers of the map's controls (beside it) and details (numbers, bars, lines: under it), of the server's
# files and of the button that brings the server to the head shown (:mod:`attention_viz.ui.attention_map.page_view`)
CONTROLS_SLOT, DETAILS_SLOT = page_view.CONTROLS_SLOT, page_view.DETAILS_SLOT
SERVER_VIEW, OTHER_VIEW = page_view.SERVER_VIEW, page_view.OTHER_VIEW


def _show() -> None:
    selection, loaded = controls.shown_model()
    if selection.presentation:  # the map takes the whole width (and height); its controls go under it
        map_column, side = st.container(), st.container()
    else:
        map_column, side = st.columns([3, 2], gap="medium")
    layer, head = selection.layer, selection.head
    view = st.session_state["map_view"]
    example, variant, seed = _side_controls(side, loaded)
    pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
    scratch = feedback.or_stop(cache.scratch, loaded, selection.text, selection.pair, variant, int(seed))
    encoding = pretrained.encoding
    # The view toggles (word level, hide [CLS]/[SEP], pair block) shape what the map, the bars and the lines
    # show; with them off the map is the head's token-level attention exactly as extracted.
    options = view_options(encoding.is_pair, side)
    maps = layer_maps.head_pair(pretrained.head(layer, head), scratch.head(layer, head), encoding, options)
    queries, keys = maps.pretrained.shape  # q != k for a pair's A→B and B→A blocks
    style = figures.map_style(selection.presentation, max(queries, keys))  # smaller labels fit more
    size = style.window
    focus = _focus(queries, size)
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
    shown = maps.shown(view)
    map_title = plain(f"compare.map_title_{view}", variant=plain(f"compare.variant_{variant.replace('-', '_')}"))
    with map_column:
        feedback.truncation(encoding)
    details = _details(pretrained, scratch, maps, options, (rows, columns, focus), style, config, variant, seed)
    follow = {"example": None if example is None else list(example)}
    _map(map_column, loaded, options, variant, int(seed), style, details, follow, (queries, keys))
    windowed = _under_the_map(map_column, loaded.info, maps, options, encoding.num_tokens, size)

    # Below the screen: the parity check and the downloads (the numbers, bars and lines are the map's).
    page_view.slot(st.container(key=DETAILS_SLOT))  # the map draws its numbers, bars and lines here
    _variant_note(loaded, selection, variant, int(seed))
    if maps.view is not None:
        st.caption(t("compare.numbers_tokens"))
    if windowed:
        st.caption(t("compare.download_full", queries=queries, keys=keys))
    shown_window = (shown[rows, columns], maps.row_labels[rows])
    chart = functools.partial(_download_figure, maps, view, *shown_window, map_title, fit, window)
    # The files are the server's: for the head it drew. After steps in the browser the map hides them and offers
    # a button that brings the server to the head shown (one run), the files then follow.
    page_view.server_files(
        lambda: downloads.buttons(
            pretrained, shown, chart, layer, head, what, tuple(maps.row_labels), tuple(maps.key_labels)
        ),
        t("compare.downloads_follow"),
    )


def _focus(queries: int, size: int) -> int:
    """The query in focus, kept inside the text (-1: none); the query window moved to it when outside."""
    s = st.session_state
    focus = s["focus"] if isinstance(s["focus"], int) and -1 <= s["focus"] < queries else -1
    if focus != s["focus"]:  # past the end of a shorter text: said, as a box says it of its setting
        st.caption(t("controls.reset", control=t("compare.focus"), old=s["focus"], new=t("compare.focus_none")))
    state.set_focus(focus, queries, size)
    return focus


def _download_figure(maps: layer_maps.HeadPair, view: str, matrix, row_labels, title: str, fit: bool, window: dict):
    """The map as a plotly figure, for the HTML download (made when it is clicked; the element draws the
    map on screen)."""
    if view == "difference":
        return figures.difference_heatmap(matrix, row_labels, title, fit, **window)
    zrange = figures.shared_range(maps.pretrained, maps.scratch) if fit else (0.0, 1.0)
    return figures.attention_heatmap(matrix, row_labels, title, zrange, **window)


def _side_controls(side, loaded) -> tuple[tuple[int, int] | None, str, int]:
    """The page's explanation, the example's note, the encoder variant and its seed: ``(example, variant,
    seed)``, ``example`` the current example's ``(layer, head)`` or ``None``. The layer, head, map and token
    in focus are the map element's own controls (in the browser)."""
    top = side.container(horizontal=True, vertical_alignment="center", gap="small")
    page_view.slot(top.container(key=CONTROLS_SLOT, width="content"))  # the map's own controls (attention_map.js)
    controls.explain(top, t("compare.intro"), t("compare.reading_help"))
    with side:
        example = presets_ui.look_for(loaded, st, in_browser=True)
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
    return example, variant, seed


def _file_part(view: str, options: analysis.ViewOptions) -> str:
    """The view in the downloads' file names: ``pretrained``, ``scratch_words_no_special``, ..."""
    return "_".join(
        [view]
        + (["words"] if options.word_level else [])
        + (["no_special"] if options.hide_special else [])
        + ([options.block] if options.block != "all" else [])
    )


def _under_the_map(place, info, maps: layer_maps.HeadPair, options, total: int, size: int) -> bool:
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
    return True


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


NUMBER_KEYS = ("max_difference", "js", "entropy_pretrained", "entropy_scratch")
SOURCES = ("pretrained", "scratch")  # the maps the line view draws (the difference draws the pretrained one)


def _numbers(pretrained, scratch) -> list[list[list[str]]]:
    """How far the two encoders agree, for every head, over the head's whole token-level attention whatever the
    view (a block's rows are not distributions, so their entropy or divergence would mean nothing): ``[layer]
    [head]`` the four numbers of :data:`NUMBER_KEYS` as shown (max |difference|, mean Jensen-Shannon divergence
    in bits, the two mean row entropies in bits). A few strings a head: the map shows a head's as it steps."""
    first, second = pretrained.weights, scratch.weights  # (layers, heads, query, key)
    agreement = [analysis.head_agreement(a, b) for a, b in zip(first, second, strict=True)]  # a layer at a time
    template = plain("compare.bits", value="{value}")
    bits = lambda value, digits: template.replace("{value}", f"{value:.{digits}f}")  # noqa: E731
    return [
        [
            [
                f"{layer['largest'][head]:.2e}",
                bits(layer["js"][head], 4),
                bits(layer["entropy_first"][head], 3),
                bits(layer["entropy_second"][head], 3),
            ]
            for head in range(first.shape[1])
        ]
        for layer in agreement
    ]


def _details(
    pretrained, scratch, maps: layer_maps.HeadPair, options, window: tuple, style, config: dict, variant, seed
) -> dict:
    """What the map draws under itself for each head it steps to: the agreement numbers (every head's, made
    once per text), and the focus token's bars and the line view as plotly figures made here for the head
    the server knows (exactly as drawn there: the bars of the token in focus, the lines of the map shown), whose
    values, labels and titles the browser puts in for the head it shows (only what varies by head or token; the
    figures' look stays Python's, :mod:`attention_viz.figures`)."""
    rows, columns, focus = window
    content = (pretrained.model_name, pretrained.encoding.labels, pretrained.encoding.is_pair, variant, int(seed))
    numbers = cache.session_memo("_compare_numbers", content, lambda: _numbers(pretrained, scratch))
    row = max(focus, 0)
    names = (t("compare.view_pretrained"), t("compare.view_scratch"))
    token_titles = [figures.isolate(label) for label in maps.row_labels]  # the bars' title names the token whole
    bars_title = plain("compare.bars_title", token="{token}", index="{index}")
    view = st.session_state["map_view"]
    source = "scratch" if view == "scratch" else "pretrained"
    line_titles = {name: plain("compare.lines_title", source=plain(f"compare.view_{name}")) for name in SOURCES}
    figure_inputs = (
        {names[0]: maps.pretrained[row, columns], names[1]: maps.scratch[row, columns]},
        maps.key_labels[columns],
        bars_title.replace("{token}", token_titles[row]).replace("{index}", str(row)),
        (maps.scratch if source == "scratch" else maps.pretrained)[rows, columns],
        maps.row_labels[rows],
        line_titles[source],
        style,
        (rows.start, columns.start, focus - rows.start if rows.start <= focus < rows.stop else None),
    )
    bars, lines = _detail_figures(*figure_inputs)
    return {
        "numbers": {"labels": [plain(f"compare.{name}") for name in NUMBER_KEYS], "values": numbers},
        "bars": {"figure": bars, "title": bars_title, "tokens": token_titles, "config": config},
        "lines": {
            "figure": lines,
            "titles": line_titles,
            # the text traces' words and hovers, as figures.line_view writes them
            "row_text": [figures.isolate(figures.shorten_label(label)) for label in maps.row_labels],
            "row_hover": [figures.isolate(plotly_text(label)) for label in maps.row_labels],
            "key_text": [figures.isolate(figures.shorten_label(label)) for label in maps.key_labels],
            "key_hover": [figures.isolate(plotly_text(label)) for label in maps.key_labels],
            "spacing": 1.6 * style.font_size,  # px between rows (figures.line_view)
            "config": config,
        },
    }


def _detail_figures(bar_rows: dict, keys, bars_title: str, weights, queries, lines_title: str, style, place) -> tuple:
    """The focus token's bars and the line view of the head the server knows, as plotly JSON: ``(bars, lines)``.

    Kept with their inputs (``place``: the window's first query and key, and the focus inside it), for the
    session (its latest) and for every session (the latest few), so that a run that draws the same head again (a
    page switch, a toggle elsewhere, another student on the same example) reuses them.
    """
    arrays = [*bar_rows.values(), weights]
    key = (
        tuple(bar_rows),
        tuple((a.shape, a.dtype.str, a.tobytes()) for a in arrays),
        tuple(keys),
        tuple(queries),
        bars_title,
        lines_title,
        style,
        place,
    )

    def make() -> tuple[str, str]:
        query_start, key_start, focus = place
        bars = figures.focus_bars(bar_rows, keys, bars_title, style, key_start)
        lines = figures.line_view(weights, queries, keys, lines_title, style, query_start, key_start, focus)
        return bars.to_json(), lines.to_json()

    return cache.session_memo("_compare_figures", key, lambda: cache.shared_memo("compare_figures", key, make))


def _controls(row_labels) -> dict:
    """The words of the map's own controls (the layer and head steppers, the map switch, the token in focus:
    ``focus_labels``, one per query, shown literally by the browser)."""
    return {
        **page_view.controls(plain("compare.title", layer="{layer}", head="{head}")),
        "focus_labels": [f"{i}: {figures.isolate(_short(label))}" for i, label in enumerate(row_labels)],
        "map": plain("compare.view"),
        "kinds": {kind: plain(f"compare.view_{kind}") for kind in state.MAP_VIEWS},
        "focus": plain("compare.focus"),
        "focus_none": plain("compare.focus_none"),
    }


def _short(label: str) -> str:
    """A token's label cut as the map's ticks cut it (:func:`attention_viz.figures.shorten_label`), as text."""
    limit = figures.layout.LABEL_LIMIT
    return label if len(label) <= limit else label[: limit - 1] + figures.layout.ELLIPSIS


def _map(place, loaded, options, variant, seed, style, details: dict, follow: dict, shape: tuple[int, int]) -> None:
    """The map element: both maps of every head the browser holds (``shape``: their queries and keys), its
    controls and what it draws under itself (see :mod:`attention_viz.ui.attention_map`)."""
    info, selection = loaded.info, state.selection()
    fit = selection.fit_range or options.block in CROSS_BLOCKS
    recipe = cache_maps.compare_recipe(loaded, selection.text, selection.pair, variant, seed, options, fit)
    variant_name = plain(f"compare.variant_{variant.replace('-', '_')}")
    colorbar = t("compare.fit_colorbar") if fit else ""
    kinds = {
        kind: attention_map.kind_look(
            kind == "difference", plain(f"compare.map_title_{kind}", variant=variant_name), _file_part(kind, options)
        )
        for kind in state.MAP_VIEWS
    }
    spec = attention_map.MapSpec(
        layers=info.num_layers,
        heads=info.num_heads,
        style=style,
        **attention_map.scale(False),
        texts=attention_map.texts(kinds["pretrained"]["title"], colorbar),
        png_prefix=export.file_stem(info.name),
        png_what=kinds["pretrained"]["what"],
        presentation=selection.presentation,
    )
    maps = cache_maps.held_maps(recipe, attention_map.held(spec, *shape))
    keys = {"note": presets_ui.NOTE_KEY, "back": presets_ui.BACK_KEY}
    server = ("layer", "head", "focus", "query_start", "key_start", "map_view")
    follow = page_view.follow(server, keys=keys, **follow)
    extra = {"controls": _controls(maps.query_labels), "details": details, "follow": follow}
    attention_map.draw(place, attention_map.COMPARE_KEY, spec, maps, recipe, extra, kinds)


@st.fragment
def _page() -> None:
    """The page, rerun alone when one of its widgets changes (:mod:`attention_viz.ui.frame.fragment`)."""
    with fragment.page_body("compare"):
        _show()


_page()
