"""Inside a head: one query token's attention computed step by step with the model's real weights."""

import numpy as np
import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import presets, steps
from attention_viz.extraction import export
from attention_viz.ui import cache, controls, downloads, feedback, fragment, presets_ui, state
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.i18n import plain, t
from attention_viz.ui.safe_text import Markdown

PARITY_BOUND = 1e-5


def _show() -> None:
    selection = state.selection()
    loaded = cache.model(selection.model)
    info = loaded.info
    layer, head = selection.layer, selection.head

    encoding, (queries, keys, values) = feedback.or_stop(
        cache.head_vectors, loaded, selection.text, selection.pair, layer, head
    )
    pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
    labels, n = encoding.labels, encoding.num_tokens

    def _default_query() -> int:
        """The example's query token when the text is an example, else the first token after [CLS]."""
        preset = presets_ui.active()
        found = None if preset is None else presets.token_index(encoding, preset.query, preset.query_nth)
        return found if found is not None else min(1, n - 1)

    def _masked(stored: str) -> list[int]:
        """The masked keys stored as ``"0,3"``, as token positions."""
        return [int(k) for k in str(stored).split(",") if k.strip().isdigit() and int(k) < n]  # this text's keys

    def _token(i: int) -> str:
        return f"{i}: {figures.isolate(labels[i])}"

    header = st.empty()
    # The map answers the arrow keys itself (in the browser): the step buttons take no shortcuts here.
    controls.head_picker(
        explanation=(t("inside.intro", head_dim=info.head_dim, hidden=info.hidden_size),), shortcuts=False
    )
    left, right = st.columns(2)
    query_index = state.control(
        left.selectbox,
        t("inside.query"),
        "inside_query",
        range(n),
        labels=_token,
        decode=lambda stored: stored if 0 <= stored < n else _default_query(),
        note=False,
    )
    scaling_kind = state.control(
        left.radio,
        t("inside.scaling"),
        "scaling",
        steps.SCALINGS,
        labels=lambda kind: t(
            f"inside.scaling_{kind.replace('-', '_')}", head_dim=info.head_dim, hidden=info.hidden_size
        ),
    )
    temperature = state.control(
        right.slider,
        t("inside.temperature"),
        "temperature",
        min_value=0.1,
        max_value=5.0,
        step=0.1,
        help=t("inside.temperature_help"),
    )
    masked_keys = state.control(
        right.multiselect,
        t("inside.mask"),
        "masked",
        range(n),
        labels=_token,
        decode=_masked,
        encode=lambda chosen: ",".join(str(k) for k in sorted(chosen)),
        help=t("inside.mask_help"),
        placeholder=t("inside.mask_placeholder"),
    )
    header.header(t("inside.title", layer=layer, head=head, query=labels[query_index]))
    presets_ui.look_for(loaded)
    feedback.truncation(encoding)

    scaling = steps.scaling_factor(scaling_kind, info.head_dim, info.hidden_size)
    result = feedback.or_stop(
        steps.head_steps, queries, keys, values, query_index, scaling, temperature, masked_keys, info.causal
    )
    query_label = labels[query_index]
    d = info.head_dim
    config = downloads.chart_config(info.name, layer, head, "inside")

    def step(number: int, text: Markdown, figure, key: str) -> None:
        """One step: its explanation on the left, its chart on the right."""
        words, chart = st.columns([1, 2])
        words.markdown(f"**{number}.** {text}")
        chart.plotly_chart(figure, key=key, theme=None, config=config)

    step(
        1,
        t("inside.step_query", token=query_label, layer=layer, head=head, d=d),
        figures.step_heatmap(result.query[None], [query_label], t("inside.fig_query", d=d), t("inside.axis_head_dim")),
        "step_query",
    )
    step(
        2,
        t("inside.step_keys"),
        figures.step_heatmap(result.keys, labels, t("inside.fig_keys", n=n, d=d), t("inside.axis_head_dim")),
        "step_keys",
    )
    step(
        3,
        t("inside.step_dots", token=query_label),
        figures.key_bars(result.dots, labels, t("inside.fig_dots", n=n), highlight=query_index, value_format=".1f"),
        "step_dots",
    )
    step(
        4,
        t("inside.step_scores", scaling=f"{scaling:.4g}", temperature=f"{temperature:g}"),
        figures.key_bars(
            result.scores,
            labels,
            t("inside.fig_scores", n=n),
            masked_keys,
            ".2f",
            query_index,
            t("inside.masked"),
        ),
        "step_scores",
    )
    step(
        5,
        t("inside.step_weights", total=f"{result.weights.sum():.6f}"),
        figures.key_bars(
            result.weights, labels, t("inside.fig_weights", n=n), masked_keys, ".3f", query_index, t("inside.masked")
        ),
        "step_weights",
    )
    step(
        6,
        t("inside.step_values"),
        figures.step_heatmap(result.values, labels, t("inside.fig_values", n=n, d=d), t("inside.axis_head_dim")),
        "step_values",
    )
    step(
        7,
        t("inside.step_context", token=query_label),
        figures.step_heatmap(
            result.context[None], [query_label], t("inside.fig_context", d=d), t("inside.axis_head_dim")
        ),
        "step_context",
    )

    st.subheader(t("inside.all_title"))
    model_weights = pretrained.head(layer, head)
    as_bert = scaling_kind == "exact" and temperature == 1.0 and not masked_keys
    if as_bert:
        worst = analysis.max_abs_difference(result.all_weights, model_weights)
        message = t("inside.parity", worst=f"{worst:.1e}", bound=f"{PARITY_BOUND:g}")
        (st.success if worst <= PARITY_BOUND else st.error)(message)
    else:
        model_bits, our_bits = (
            float(analysis.row_entropy(m[query_index])) for m in (model_weights, result.all_weights)
        )
        st.info(t("inside.changed", token=query_label, model_bits=f"{model_bits:.3f}", our_bits=f"{our_bits:.3f}"))
    style = figures.map_style(st.session_state["presentation"], n)
    figure = figures.attention_heatmap(  # the HTML download's figure; the element draws the map
        result.all_weights,
        labels,
        t("inside.fig_all", layer=layer, head=head),
        None if selection.fit_range else (0, 1),
        style=style,
        query_title=t("figures.axis_query"),
        key_title=t("figures.axis_key"),
    )
    _map(loaded, selection, (scaling_kind, scaling, temperature, tuple(masked_keys)), query_index, style, labels)
    downloads.buttons(pretrained, result.all_weights, figure, layer, head, "inside", labels)


def _map(loaded, selection, settings: tuple, query_index: int, style, labels) -> None:
    """The map of every query as a browser element: every head of the layers it holds computed with the
    page's settings, so that ←/→ (and ↑/↓) paint the next head at once and the steps above follow."""
    info = loaded.info
    scaling_kind, scaling, temperature, masked = settings
    hidden = cache.layer_inputs(loaded, selection.text, selection.pair)  # (L, t, hidden), read-only
    encoder = loaded.encoder

    def maps_of(layers):
        weights = np.stack(
            [
                steps.layer_weights(
                    steps.layer_vectors(encoder, hidden[layer], layer),  # (3, h, t, d)
                    query_index,
                    scaling,
                    temperature,
                    masked,
                    info.causal,
                )
                for layer in layers
            ]
        )  # (n, h, t, t)
        if not selection.fit_range:
            return weights, None
        low = weights.min(axis=(-2, -1))
        return weights, np.stack([low, np.maximum(weights.max(axis=(-2, -1)), low + 1e-12)], axis=-1)

    spec = attention_map.MapSpec(
        layers=info.num_layers,
        heads=info.num_heads,
        style=style,
        colorscale=figures.ATTENTION_COLORSCALE,
        zrange=(0.0, 1.0),
        zmid=None,
        value_format=".4f",
        texts=attention_map.texts(plain("inside.map_title")),
        png_prefix=export.file_stem(info.name),
        png_what="inside",
        presentation=st.session_state["presentation"],
    )
    # the maps hold every query's weights: the chosen query matters only where its row is checked
    content = (info.name, selection.text, selection.pair, scaling_kind, temperature, masked, selection.fit_range)
    attention_map.draw(st.container(), attention_map.INSIDE_KEY, spec, content, maps_of, tuple(labels), tuple(labels))


@st.fragment
def _page() -> None:
    """The page, rerun alone when one of its widgets changes (:mod:`attention_viz.ui.fragment`)."""
    with fragment.page_body("inside"):
        _show()


_page()
