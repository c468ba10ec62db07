"""Inside a head: one query token's attention computed step by step with the model's real weights.

A head or layer step (the keys, the ‹ › buttons, the Layer and Head boxes the map's element draws) runs nothing
on the server while the element holds the layer: it draws the title, the steps, the score over distance and
the parity or entropy line of the head it shows (:mod:`attention_viz.analysis.step_bundles`), and the
next run learns the view (:mod:`attention_viz.ui.attention_map.page_view`). The query token, the scaling, the
temperature and the masked keys change the computation: a change of them runs the page."""

from dataclasses import dataclass

import streamlit as st

from attention_viz import figures
from attention_viz.analysis import presets, step_bundles, steps
from attention_viz.extraction import export
from attention_viz.models.decoder import Decoder
from attention_viz.ui.attention_map import element as attention_map
from attention_viz.ui.attention_map import inside_steps, page_view
from attention_viz.ui.frame import feedback, fragment
from attention_viz.ui.server import cache, cache_maps
from attention_viz.ui.shared import controls, downloads, presets_ui
from attention_viz.ui.text import i18n
from attention_viz.ui.text.i18n import plain, t
from attention_viz.ui.text.safe_text import Markdown
from attention_viz.ui.view import state

DISTANCES = 128  # the score-over-distance curve of a RoPE head: distances 0 to 127 (fewer if the model has fewer)


@dataclass(frozen=True)
class _Settings:
    """What the page's controls chose: the query token followed, the scaling (its kind and factor), the
    temperature and the masked key positions."""

    query: int
    scaling_kind: str
    scaling: float
    temperature: float
    masked: tuple[int, ...]

    @property
    def as_bert(self) -> bool:
        """Whether the steps are the model's own computation (so its weights must come out again)."""
        return self.scaling_kind == "exact" and self.temperature == 1.0 and not self.masked


def _show() -> None:
    selection, loaded = controls.shown_model()
    info = loaded.info
    layer, head = selection.layer, selection.head
    encoding, (queries, keys, values) = feedback.or_stop(
        cache.head_vectors, loaded, selection.text, selection.pair, layer, head
    )
    pretrained = feedback.or_stop(cache.pretrained, loaded, selection.text, selection.pair)
    labels = encoding.labels
    # The map's element draws the title and the Layer and Head boxes here, and answers the arrow keys.
    top = st.container(horizontal=True, vertical_alignment="center", gap="small")
    page_view.slot(top.container(key=page_view.CONTROLS_SLOT, width="content"))
    controls.explain(top, t("inside.intro", head_dim=info.head_dim, hidden=info.hidden_size))
    settings = _controls(info, encoding, steps.layer_rules(loaded.encoder, layer).scaling)
    presets_ui.look_for(loaded)
    feedback.truncation(encoding)
    result = feedback.or_stop(
        steps.head_steps,
        queries,
        keys,
        values,
        settings.query,
        settings.scaling,
        settings.temperature,
        settings.masked,
        info.causal,
        *_window_and_cap(loaded, layer),
    )
    config = downloads.chart_config(info.name, layer, head, "inside")
    hidden = cache.layer_inputs(loaded, selection.text, selection.pair)[layer] if _rotary(loaded) else None
    extra = _decoder_steps(loaded, hidden, result, labels, settings, layer, head)
    # The steps of the head the server knows are the page's; the element draws those of a head it stepped to
    # in the containers beside them and shows one of each pair (inside_steps.js).
    hide = ", ".join(f".st-key-{key}" for key in (inside_steps.BROWSER_STEPS, inside_steps.BROWSER_CHECK))
    st.html(f"<style>{hide} {{ display: none; }}</style>")
    with st.container(key=inside_steps.SERVER_STEPS):
        templates = _steps(result, labels, settings, layer, head, info.head_dim, config, extra)
        if hidden is not None:
            templates["rope_distance"] = _distance(
                loaded, hidden[settings.query], layer, head, labels[settings.query], config
            )
    page_view.slot(st.container(key=inside_steps.BROWSER_STEPS))

    st.subheader(t("inside.all_title"))
    with st.container(key=inside_steps.SERVER_CHECK):
        _check(result, pretrained.head(layer, head), settings, labels[settings.query])
    page_view.slot(st.container(key=inside_steps.BROWSER_CHECK))
    style = figures.map_style(selection.presentation, encoding.num_tokens)
    figure = figures.attention_heatmap(  # the HTML download's figure; the element draws the map
        result.all_weights,
        labels,
        t("inside.fig_all", layer=layer, head=head),
        None if selection.fit_range else (0, 1),
        style=style,
        query_title=t("figures.axis_query"),
        key_title=t("figures.axis_key"),
    )
    templates.update(_templates(loaded, result, labels, settings, templates))
    _map(loaded, selection, settings, style, labels, (pretrained, templates, config))
    page_view.server_files(
        lambda: downloads.buttons(pretrained, result.all_weights, figure, layer, head, "inside", labels),
        t("compare.downloads_follow"),
    )


def _window_and_cap(loaded, layer: int) -> tuple[int | None, float | None]:
    """The layer's sliding window and score cap (Mistral, Gemma 2), as the steps take them."""
    rules = steps.layer_rules(loaded.encoder, layer)
    return rules.window, rules.softcap


def _controls(info, encoding, own_scaling: float) -> _Settings:
    """The query token, the scaling, the temperature and the masked keys, in two columns."""
    labels, n = encoding.labels, encoding.num_tokens

    def default_query() -> int:
        """The example's query token when the text is an example, else the first token after [CLS]."""
        preset = presets_ui.active()
        found = None if preset is None else presets.token_index(encoding, preset.query, preset.query_nth)
        return found if found is not None else min(1, n - 1)

    def masked(stored: str) -> list[int]:
        """The masked keys stored as ``"0,3"``, as token positions."""
        return [int(k) for k in str(stored).split(",") if k.strip().isdigit() and int(k) < n]  # this text's keys

    def token(i: int) -> str:
        return f"{i}: {figures.isolate(labels[i])}"

    left, right = st.columns(2)
    query_index = controls.token_choice(left, "inside_query", labels, default_query(), t("inside.query"))
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
        labels=token,
        decode=masked,
        encode=lambda chosen: ",".join(str(k) for k in sorted(chosen)),
        help=t("inside.mask_help"),
        placeholder=t("inside.mask_placeholder"),
    )
    scaling = steps.scaling_factor(scaling_kind, info.head_dim, info.hidden_size, own_scaling)
    return _Settings(query_index, scaling_kind, scaling, temperature, tuple(masked_keys))


def _rotary(loaded) -> bool:
    """Whether the model rotates queries and keys by position (RoPE: the Llama-style decoders)."""
    return isinstance(loaded.encoder, Decoder)


def _decoder_steps(loaded, hidden, result, labels, settings: _Settings, layer: int, head: int) -> dict[str, list]:
    """The steps a Llama-style layer adds, by the step they follow: the rotation by position (after the keys),
    then the soft-capping and the sliding window where the layer has them (after the scores)."""
    extra: dict[str, list] = {"step_keys": [], "step_scores": []}
    query, token, d = settings.query, labels[settings.query], loaded.info.head_dim
    if hidden is not None:
        rotated = steps.rotation_step(loaded.encoder, hidden, layer, head, query)
        rows = [plain(f"inside.rope_{row}") for row in ("query_before", "query_after", "key_before", "key_after")]
        theta = loaded.encoder.config.rope_theta
        extra["step_keys"].append(
            (
                t("inside.step_rope", token=token, position=query, theta=f"{theta:g}", d=d),
                figures.step_heatmap(
                    rotated.vectors, rows, t("inside.fig_rope", position=query, d=d), t("inside.axis_head_dim")
                ),
                "step_rope",
            )
        )
    rules = steps.layer_rules(loaded.encoder, layer)
    if rules.softcap is not None:
        extra["step_scores"].append(
            (
                t("inside.step_softcap", cap=f"{rules.softcap:g}"),
                figures.key_bars(
                    steps.uncapped_scores(result, settings.scaling),
                    labels,
                    t("inside.fig_softcap", n=len(labels)),
                    settings.masked,
                    ".2f",
                    query,
                    t("inside.masked"),
                ),
                "step_softcap",
            )
        )
    if rules.window is not None:
        outside = list(range(0, max(0, query - rules.window + 1)))
        extra["step_scores"].append(
            (
                t("inside.step_window", window=rules.window, token=token, layer=layer, outside=len(outside)),
                figures.key_bars(
                    result.scores,
                    labels,
                    t("inside.fig_window", n=len(labels)),
                    outside,
                    ".2f",
                    query,
                    t("inside.outside_window"),
                ),
                "step_window",
            )
        )
    return extra


def _distance(loaded, vector, layer: int, head: int, token: str, config: dict):
    """How the head's score between two tokens of the same content depends on their distance alone (RoPE)."""
    count = min(loaded.info.max_positions, DISTANCES)
    curve = steps.distance_scores(loaded.encoder, vector, layer, head, count)
    st.subheader(t("inside.rope_title"))
    words, chart = st.columns([1, 2])
    words.markdown(t("inside.rope_distance", token=token, head=head, layer=layer))
    figure = figures.distance_line(
        curve, t("inside.fig_distance", n=count), t("inside.axis_distance"), t("inside.axis_score")
    )
    chart.plotly_chart(figure, key="rope_distance", theme=None, config=config)
    return figure


def _steps(
    result, labels, settings: _Settings, layer: int, head: int, d: int, config: dict, extra: dict | None = None
) -> dict:
    """The seven steps of the computation (``d``: the head_dim), each explanation beside its chart; ``extra``
    adds steps after the one of each key (``"step_keys"``: a decoder's rotation by position). Returns the
    charts by key."""
    n, query = len(labels), settings.query
    token = labels[query]
    axis = t("inside.axis_head_dim")

    def bars(values, title, value_format: str, masked=()):
        """One number per key, the query token outlined (masked keys greyed)."""
        return figures.key_bars(values, labels, title, masked, value_format, query, t("inside.masked"))

    shown = [
        (
            t("inside.step_query", token=token, layer=layer, head=head, d=d),
            figures.step_heatmap(result.query[None], [token], t("inside.fig_query", d=d), axis),
            "step_query",
        ),
        (
            t("inside.step_keys"),
            figures.step_heatmap(result.keys, labels, t("inside.fig_keys", n=n, d=d), axis),
            "step_keys",
        ),
        (t("inside.step_dots", token=token), bars(result.dots, t("inside.fig_dots", n=n), ".1f"), "step_dots"),
        (
            t("inside.step_scores", scaling=f"{settings.scaling:.4g}", temperature=f"{settings.temperature:g}"),
            bars(result.scores, t("inside.fig_scores", n=n), ".2f", settings.masked),
            "step_scores",
        ),
        (
            t("inside.step_weights", total=f"{result.weights.sum():.6f}"),
            bars(result.weights, t("inside.fig_weights", n=n), ".3f", settings.masked),
            "step_weights",
        ),
        (
            t("inside.step_values"),
            figures.step_heatmap(result.values, labels, t("inside.fig_values", n=n, d=d), axis),
            "step_values",
        ),
        (
            t("inside.step_context", token=token),
            figures.step_heatmap(result.context[None], [token], t("inside.fig_context", d=d), axis),
            "step_context",
        ),
    ]
    extra = extra or {}
    shown = [step for own in shown for step in (own, *extra.get(own[2], ()))]
    for number, (text, figure, key) in enumerate(shown, start=1):
        _step(number, text, figure, key, config)
    return {key: figure for _, figure, key in shown}


def _templates(loaded, result, labels, settings: _Settings, drawn: dict) -> dict:
    """The charts of a kind another layer has and the server's does not (a local layer's window, when the
    server's layer is global), made from the server's head: the template the element fills for that layer."""
    rules = [steps.layer_rules(loaded.encoder, layer) for layer in range(loaded.info.num_layers)]
    if "step_window" in drawn or all(rule.window is None for rule in rules):
        return {}
    bars = figures.key_bars(
        result.scores,
        labels,
        t("inside.fig_window", n=len(labels)),
        (),
        ".2f",
        settings.query,
        t("inside.outside_window"),
    )
    return {"step_window": bars}


def _step(number: int, text: Markdown, figure, key: str, config: dict) -> None:
    """One step of the head's computation: its number and words beside its chart."""
    words, chart = st.columns([1, 2])
    words.markdown(f"**{number}.** {text}")
    chart.plotly_chart(figure, key=key, theme=None, config=config)


def _check(result, model_weights, settings: _Settings, token: str) -> None:
    """As the model computes it: the steps' weights against the model's own (parity); else how the
    settings changed the query token's attention entropy."""
    kind, key, values = step_bundles.check_line(result.all_weights, model_weights, settings.query, settings.as_bert)
    getattr(st, kind)(t(key, token=token, **values))


def _map(loaded, selection, settings: _Settings, style, labels, server: tuple) -> None:
    """The map of every query as a browser element: every head of the layers it holds computed with the
    page's settings, so that ←/→ (and ↑/↓) paint the next head at once; the element draws its title, the
    Layer and Head boxes, and the steps above of the head it steps to (``server``: the model's weights, the
    server's charts by step key, their config)."""
    info = loaded.info
    pretrained, templates, config = server
    recipe = cache_maps.inside_recipe(
        loaded,
        selection.text,
        selection.pair,
        settings.query,
        settings.scaling,
        settings.temperature,
        settings.masked,
        selection.fit_range,
    )
    spec = attention_map.MapSpec(
        layers=info.num_layers,
        heads=info.num_heads,
        style=style,
        **attention_map.scale(),
        texts=attention_map.texts(plain("inside.map_title")),
        png_prefix=export.file_stem(info.name),
        png_what="inside",
        presentation=selection.presentation,
        told=True,
    )
    layers = attention_map.held(spec, len(labels), len(labels))
    maps = cache_maps.held_maps(recipe, layers)
    token = labels[settings.query]
    words = i18n.table(i18n.language())
    hidden = cache.layer_inputs(loaded, selection.text, selection.pair)  # (L, t, hidden), read-only
    count = min(info.max_positions, DISTANCES) if _rotary(loaded) else 0
    found = {
        "query": settings.query,
        "masked": settings.masked,
        "scaling": settings.scaling,
        "temperature": settings.temperature,
        "as_model": settings.as_bert,
        "theta": getattr(loaded.encoder.config, "rope_theta", 0.0),
    }

    def layer_steps(layer: int):
        return steps.layer_steps(
            loaded.encoder,
            hidden[layer],
            layer,
            settings.query,
            settings.scaling,
            settings.temperature,
            settings.masked,
            info.causal,
            count,
        )

    def make() -> bytes:  # in any thread: no session read here
        return step_bundles.payload(layer_steps, layers, words, labels, found, pretrained.weights)

    content = (recipe.kind, recipe.key, settings.query, i18n.language())
    title = step_bundles.segments(words, "inside.title", ("layer", "head"), query=token)
    extra = {
        "controls": page_view.controls(plain("inside.title", layer="{layer}", head="{head}", query=token)),
        "follow": page_view.follow(("layer", "head")),
        "steps": inside_steps.data(
            content, layers, make, page_view.server_view(("layer", "head")), templates, config, title
        ),
    }
    attention_map.draw(st.container(), attention_map.INSIDE_KEY, spec, maps, recipe, extra)


@st.fragment
def _page() -> None:
    """The page, rerun alone when one of its widgets changes (:mod:`attention_viz.ui.frame.fragment`)."""
    with fragment.page_body("inside"):
        _show()


_page()
