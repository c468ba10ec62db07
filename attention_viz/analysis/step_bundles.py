"""Inside a head's steps as the map element draws them in the browser: every held head's steps of one query,
packed once, so that a head or layer step redraws them without a run of the page.

The numbers are :func:`attention_viz.analysis.steps.layer_steps`' (Python computes every number and every text;
``inside_steps.js`` only draws): for each held layer and head the arrays the charts show (query, keys, dot
products, scores, weights, values, context; a RoPE model's rotation and score over distance; a capped layer's
scores before the cap; a local layer's scores in its window) as float32, and what of each chart follows its
values (colour range and ticks, bar texts, axis range, margin: :func:`attention_viz.figures.steps.heatmap_range`,
:func:`~attention_viz.figures.steps.bar_values`, :func:`~attention_viz.figures.steps.line_room`), the weights'
total and the parity or entropy line as text. The charts' other fields come from one template a chart kind:
the figure the page draws for the server's view (:func:`attention_viz.ui.attention_map.inside_steps.data`).

Format: :func:`attention_viz.figures.bundles.pack`'s (``"AVM1"``, a JSON header, float32 arrays); the
header's ``layers`` is a list of one entry per held layer::

    {"layer": L, "error": null or the page's message (every key this query can see masked),
     "steps": [{"key", "bold", "text", "field" ("z" or "y"), "array": {offset, shape: [heads, ...]},
                "layer_patch": {"trace", "layout"}, "patches": [{"trace", "layout"} per head]}],
     "values": {"total": [text per head]}, "check": [{"kind": "success"|"error"|"info", "text"} per head],
     "distance": null or {"text", "array", "patches"}}

``text`` is a list of literal strings and one-name lists (``["head"]``, ``["total"]``): the fields the browser
fills for the head shown, so that no token's text is ever read as a field. The words come from a translation
table passed in (:func:`attention_viz.ui.text.i18n.table`'s): no Streamlit and no session here, so the bundle
may be made in a request handler's thread. Offers: :func:`payload`, :func:`segments`, :func:`check`,
:func:`check_line`.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence

import numpy as np

from attention_viz.analysis import steps
from attention_viz.analysis.measures import max_abs_difference, row_entropy
from attention_viz.extraction import InputError
from attention_viz.figures import steps as step_figures
from attention_viz.figures.bundles import pack
from attention_viz.models.encoder import PARITY_BOUND


def segments(words: dict, key: str, varying: Sequence[str] = (), **fixed: object) -> dict:
    """The text ``key`` of the translation table ``words`` (:func:`attention_viz.ui.text.i18n.table`) for the
    browser: its leading bold words (``**...**``, else None) and the rest as literal strings with ``[name]``
    where a field of ``varying`` goes (filled for the view shown); the other fields are filled with ``fixed``
    as :func:`~attention_viz.ui.text.i18n.plain` fills them."""
    template = words[key]
    bold = None
    if template.startswith("**"):
        end = template.index("**", 2)
        bold, template = template[2:end], template[end + 2 :].lstrip()
    parts: list = []
    for literal, field, spec, conversion in string.Formatter().parse(template):
        if literal:
            parts.append(literal)
        if field is None:
            continue
        if field in varying:
            parts.append([field])
        else:
            value = fixed[field]
            parts.append(format(repr(value) if conversion == "r" else value, spec or ""))
    return {"bold": bold, "text": parts}


def check_line(
    all_weights: np.ndarray, model_weights: np.ndarray, query: int, as_model: bool
) -> tuple[str, str, dict[str, str]]:
    """``(kind, text key, values)`` of the line under the steps for one head: with the model's own computation,
    the largest difference of the steps' ``(t, t)`` weights from the model's (parity: ``success`` within
    :data:`~attention_viz.models.encoder.PARITY_BOUND`, else ``error``; ``inside.parity`` with ``worst`` and
    ``bound``); else how the settings changed the query token's attention entropy in bits (``info``;
    ``inside.changed`` with ``model_bits`` and ``our_bits``, the text's ``token`` being the caller's)."""
    if as_model:
        worst = max_abs_difference(all_weights, model_weights)
        kind = "success" if worst <= PARITY_BOUND else "error"
        return kind, "inside.parity", {"worst": f"{worst:.1e}", "bound": f"{PARITY_BOUND:g}"}
    model_bits, our_bits = (float(row_entropy(m[query])) for m in (model_weights, all_weights))
    return "info", "inside.changed", {"model_bits": f"{model_bits:.3f}", "our_bits": f"{our_bits:.3f}"}


def check(
    words: dict, all_weights: np.ndarray, model_weights: np.ndarray, query: int, as_model: bool, token: str
) -> dict:
    """The line under the steps for one head as plain text (:func:`check_line`): ``{"kind", "text"}``."""
    kind, key, values = check_line(all_weights, model_weights, query, as_model)
    return {"kind": kind, "text": words[key].format(token=token, **values)}


def _heatmap_patch(matrix) -> dict:
    return {"trace": step_figures.heatmap_range(matrix), "layout": {}}


def _bars_patch(values, masked, value_format: str, masked_label: str) -> tuple[np.ndarray, dict]:
    shown, text, bounds, left = step_figures.bar_values(values, masked, value_format, masked_label)
    return shown, {"trace": {"text": text}, "layout": {"yaxis": {"range": bounds}, "margin": {"l": left}}}


def _layer_entry(found: steps.LayerSteps, words: dict, labels, settings, model, arrays: list, offset: list) -> dict:
    """One held layer's header entry; its arrays appended to ``arrays`` (``offset``: the next byte offset)."""
    query, masked = settings["query"], settings["masked"]
    token = labels[query]
    masked_word = words["inside.masked"]

    def add(values: np.ndarray) -> dict:
        values = np.ascontiguousarray(values, dtype=np.float32)
        entry = {"offset": offset[0], "shape": list(values.shape)}
        arrays.append(values)
        offset[0] += values.nbytes
        return entry

    heads = found.heads

    def heatmap(key: str, stack: np.ndarray, text: dict) -> dict:
        patches = [_heatmap_patch(matrix) for matrix in stack]
        return {**text, "key": key, "field": "z", "array": add(stack), "layer_patch": {}, "patches": patches}

    def bars(key: str, rows, text: dict, value_format: str, grey=(), label=masked_word) -> dict:
        made = [_bars_patch(row, grey, value_format, label) for row in rows]
        colours = [step_figures.MASKED_COLOR if i in set(grey) else "#1f77b4" for i in range(len(labels))]
        layer_patch = {"trace": {"marker": {"color": colours}}}
        stack = np.stack([shown for shown, _ in made])
        return {**text, "key": key, "field": "y", "array": add(stack), "layer_patch": layer_patch,
                "patches": [patch for _, patch in made]}  # fmt: skip

    d = heads[0].query.shape[0]
    rules = found.rules
    shown = [
        heatmap(
            "step_query",
            np.stack([h.query[None] for h in heads]),
            segments(words, "inside.step_query", ("head",), token=token, layer=found.layer, d=d),
        ),
        heatmap("step_keys", np.stack([h.keys for h in heads]), segments(words, "inside.step_keys")),
    ]
    if found.rotations is not None:
        theta = f"{settings['theta']:g}"
        text = segments(words, "inside.step_rope", token=token, position=query, theta=theta, d=d)
        shown.append(heatmap("step_rope", found.rotations, text))
    shown.append(bars("step_dots", [h.dots for h in heads], segments(words, "inside.step_dots", token=token), ".1f"))
    scaling, temperature = f"{settings['scaling']:.4g}", f"{settings['temperature']:g}"
    text = segments(words, "inside.step_scores", scaling=scaling, temperature=temperature)
    shown.append(bars("step_scores", [h.scores for h in heads], text, ".2f", masked))
    if found.uncapped is not None:
        text = segments(words, "inside.step_softcap", cap=f"{rules.softcap:g}")
        shown.append(bars("step_softcap", found.uncapped, text, ".2f", masked))
    if rules.window is not None:
        outside = list(range(0, max(0, query - rules.window + 1)))
        text = segments(
            words, "inside.step_window", window=rules.window, token=token, layer=found.layer, outside=len(outside)
        )
        shown.append(
            bars("step_window", [h.scores for h in heads], text, ".2f", outside, words["inside.outside_window"])
        )
    shown.append(
        bars(
            "step_weights",
            [h.weights for h in heads],
            segments(words, "inside.step_weights", ("total",)),
            ".3f",
            masked,
        )
    )
    shown.append(heatmap("step_values", np.stack([h.values for h in heads]), segments(words, "inside.step_values")))
    shown.append(
        heatmap(
            "step_context",
            np.stack([h.context[None] for h in heads]),
            segments(words, "inside.step_context", token=token),
        )
    )
    distance = None
    if found.distances is not None:
        distance = {
            **segments(words, "inside.rope_distance", ("head",), token=token, layer=found.layer),
            "key": "rope_distance",
            "field": "y",
            "array": add(found.distances),
            "layer_patch": {},
            "patches": [{"trace": {}, "layout": {"margin": {"l": step_figures.line_room(c)}}} for c in found.distances],
        }
    return {
        "layer": found.layer,
        "error": None,
        "steps": shown,
        "values": {"total": [f"{h.weights.sum():.6f}" for h in heads]},
        "check": [
            check(words, h.all_weights, model[i], query, settings["as_model"], token) for i, h in enumerate(heads)
        ],
        "distance": distance,
    }


def payload(
    made: Callable[[int], steps.LayerSteps], layers: Sequence[int], words: dict, labels, settings: dict, model
) -> bytes:
    """The steps' bundle of the held ``layers`` (the module's format).

    Args:
        made: a layer's :class:`~attention_viz.analysis.steps.LayerSteps` (raises
            :class:`~attention_viz.extraction.InputError` for a layer where the query sees no key).
        layers: the held layers.
        words: the translation table of the user's language (:func:`attention_viz.ui.text.i18n.table`: this
            may run in a request handler's thread, which has no session).
        labels: the token labels.
        settings: ``query``, ``masked``, ``scaling``, ``temperature``, ``as_model`` (the model's own
            computation: the parity line), ``theta`` (a RoPE model's base, else ignored).
        model: ``(L, h, t, t)`` the model's own weights (the parity and entropy lines compare with them).
    """
    arrays: list = []
    offset = [0]
    entries = []
    for layer in layers:
        try:
            found = made(layer)
        except InputError as error:
            entries.append({"layer": layer, "error": str(error), "steps": [], "check": [], "distance": None})
            continue
        entries.append(_layer_entry(found, words, labels, settings, model[layer], arrays, offset))
    return pack({"layers": entries}, arrays)
