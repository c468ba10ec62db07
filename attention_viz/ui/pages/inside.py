"""Inside a head: one query token's attention computed step by step with the model's real weights."""

import streamlit as st

from attention_viz import analysis, figures
from attention_viz.analysis import presets, steps
from attention_viz.ui import cache, downloads, feedback, presets_ui, state
from attention_viz.ui.i18n import option_labels, t
from attention_viz.ui.safe_text import Markdown

PARITY_BOUND = 1e-5

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


def _remember_mask() -> None:
    st.session_state["masked"] = ",".join(str(k) for k in sorted(st.session_state[state.page_widget_key("masked")]))


stored_query = st.session_state["inside_query"]
if stored_query >= n:  # a token past this text's end (an old choice, a link): the default query instead
    st.session_state["inside_query"] = stored_query = -1
query_index = stored_query if 0 <= stored_query < n else _default_query()
masked_keys = [int(k) for k in st.session_state["masked"].split(",") if k.strip().isdigit() and int(k) < n]
if st.session_state["masked"] != ",".join(map(str, masked_keys)):  # keys past the end dropped: say so in the state
    st.session_state["masked"] = ",".join(map(str, sorted(set(masked_keys))))

st.header(t("inside.title", layer=layer, head=head, query=labels[query_index]))
st.markdown(t("inside.intro", head_dim=info.head_dim, hidden=info.hidden_size))
feedback.truncation(encoding)

left, right = st.columns(2)
query_index = left.selectbox(
    t("inside.query"),
    range(n),
    index=query_index,
    format_func=lambda i: f"{i}: {figures.isolate(labels[i])}",
    key=state.page_widget_key("inside_query"),
    on_change=state.remember,
    args=("inside_query",),
)
scaling_kind = left.radio(
    t("inside.scaling"),
    steps.SCALINGS,
    index=steps.SCALINGS.index(st.session_state["scaling"]),
    format_func=option_labels(
        steps.SCALINGS, lambda kind: f"inside.scaling_{kind}", head_dim=info.head_dim, hidden=info.hidden_size
    ),
    key=state.page_widget_key("scaling"),
    on_change=state.remember,
    args=("scaling",),
)
temperature = right.slider(
    t("inside.temperature"),
    0.1,
    5.0,
    value=float(st.session_state["temperature"]),
    step=0.1,
    help=t("inside.temperature_help"),
    key=state.page_widget_key("temperature"),
    on_change=state.remember,
    args=("temperature",),
)
masked_keys = right.multiselect(
    t("inside.mask"),
    range(n),
    default=masked_keys,
    format_func=lambda i: f"{i}: {figures.isolate(labels[i])}",
    help=t("inside.mask_help"),
    placeholder=t("inside.mask_placeholder"),
    key=state.page_widget_key("masked"),
    on_change=_remember_mask,
)

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
    figures.step_heatmap(result.context[None], [query_label], t("inside.fig_context", d=d), t("inside.axis_head_dim")),
    "step_context",
)

st.subheader(t("inside.all_title"))
theirs = pretrained.head(layer, head)
as_bert = scaling_kind == "bert" and temperature == 1.0 and not masked_keys
if as_bert:
    worst = analysis.max_abs_difference(result.all_weights, theirs)
    message = t("inside.parity", worst=f"{worst:.1e}", bound=f"{PARITY_BOUND:g}")
    (st.success if worst <= PARITY_BOUND else st.error)(message)
else:
    model_bits, our_bits = (float(analysis.row_entropy(m[query_index])) for m in (theirs, result.all_weights))
    st.info(t("inside.changed", token=query_label, model_bits=f"{model_bits:.3f}", our_bits=f"{our_bits:.3f}"))
figure = figures.attention_heatmap(
    result.all_weights,
    labels,
    t("inside.fig_all", layer=layer, head=head),
    None if selection.fit_range else (0, 1),
    query_title=t("figures.axis_query"),
    key_title=t("figures.axis_key"),
)
st.plotly_chart(figure, key="inside_all", theme=None, config=config)
downloads.buttons(pretrained, result.all_weights, figure, layer, head, "inside", labels)
