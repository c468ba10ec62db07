"""The attention map element's maps: one recipe per map kind, and the maps of the layers it holds.

Thin wrappers of :mod:`attention_viz.analysis.layer_maps`: a page asks for a recipe (the map kind, what the maps
depend on, the cached inputs) and for the held layers' maps; the element keeps the recipe to make other layers
later (in a request thread, so a recipe carries its inputs rather than calling Streamlit's cache again).
"""

from __future__ import annotations

import streamlit as st

from attention_viz.analysis import layer_maps
from attention_viz.extraction.results import read_only
from attention_viz.models.loading import LoadedModel
from attention_viz.ui.server import cache


def compare_recipe(loaded: LoadedModel, text: str, pair: str | None, variant: str, seed: int, options, fit: bool):
    """Compare's maps: the pretrained model's and the from-scratch encoder's (``variant``, ``seed``) with the view
    toggles ``options``, colour ranges fitted per head when ``fit``
    (:func:`~attention_viz.analysis.layer_maps.compare`)."""
    first, second = cache.pretrained(loaded, text, pair), cache.scratch(loaded, text, pair, variant, seed)
    seed = seed if variant == "random" else 0
    key = (
        cache.model_key(loaded),
        text,
        pair,
        cache.input_key(loaded, text, pair),
        variant,
        int(seed),
        options,
        bool(fit),
    )
    arguments = dict(
        pretrained=first.weights, scratch=second.weights, encoding=first.encoding, options=options, fit=fit
    )
    return layer_maps.Recipe("compare", key, arguments)


def inside_recipe(
    loaded: LoadedModel, text: str, pair: str | None, query: int, scaling: float, temperature: float, masked, fit: bool
):
    """Inside a head's maps of every query: each head's weights with the page's scaling, temperature and masked
    keys (:func:`~attention_viz.analysis.layer_maps.inside`). Every query's row is computed alike, so the query
    followed is not part of the key."""
    limits, found = cache.keyed_input(loaded, text, pair)
    hidden = cache.layer_inputs(loaded, text, pair)  # (L, t, hidden), read-only
    masked = tuple(int(k) for k in masked)
    key = (cache.model_key(loaded), text, pair, limits, float(scaling), float(temperature), masked, bool(fit))
    arguments = dict(
        encoder=loaded.encoder,
        hidden=hidden,
        labels=tuple(found.labels),
        query=int(query),
        scaling=float(scaling),
        temperature=float(temperature),
        masked=masked,
        causal=loaded.info.causal,
        fit=fit,
    )
    return layer_maps.Recipe("inside", key, arguments)


def rollout_recipe(loaded: LoadedModel, text: str, pair: str | None, kind: str, options):
    """Rollout & norms' maps of ``kind`` (``raw``, ``rollout``, ``norm``), one per layer, with the view toggles
    (:func:`~attention_viz.analysis.layer_maps.rollout`)."""
    limits, found = cache.keyed_input(loaded, text, pair)
    key = (cache.model_key(loaded), text, pair, limits, kind, options)
    return layer_maps.Recipe("rollout", key, dict(encoder=loaded.encoder, encoding=found, kind=kind, options=options))


def article_recipes(loaded: LoadedModel, text: str, pair: str | None, seed: int, differences, fit: bool) -> dict:
    """The article's layer's three maps by panel (``correct``, ``changed``, ``difference``), made from one
    computation a layer (:func:`~attention_viz.analysis.layer_maps.article`)."""
    limits, found = cache.keyed_input(loaded, text, pair)
    hidden = cache.layer_inputs(loaded, text, pair)  # (L, t, hidden), read-only
    differences = tuple(sorted(differences))
    memo = layer_maps.article_memo(hidden, loaded.info.num_heads, int(seed), differences)
    key = (cache.model_key(loaded), text, pair, limits, int(seed), differences, bool(fit))
    return {
        panel: layer_maps.Recipe(
            "article", (panel, *key), dict(memo=memo, labels=tuple(found.labels), panel=panel, fit=fit)
        )
        for panel in layer_maps.ARTICLE_PANELS
    }


def seq2seq_recipe(key: tuple, pretrained_maps, scratch_maps, query_labels, key_labels, view: str, fit: bool):
    """An encoder–decoder's maps of one kind of attention as shown (:func:`~attention_viz.analysis.layer_maps.seq2seq`),
    from both models' cached ``(L, heads, query, key)`` maps; ``key`` names them (model, texts, kind)."""
    arguments = dict(
        pretrained=pretrained_maps,
        scratch=scratch_maps,
        query_labels=tuple(query_labels),
        key_labels=tuple(key_labels),
        view=view,
        fit=fit,
    )
    return layer_maps.Recipe("seq2seq", (*key, view, bool(fit)), arguments)


@st.cache_resource(max_entries=8, ttl=cache.RESULT_TTL, show_spinner=False)
def _held_maps(kind: str, key: tuple, layers: tuple, _recipe) -> layer_maps.HeldMaps:
    return read_only(_recipe.maps(layers))


def held_maps(recipe, layers) -> layer_maps.HeldMaps:
    """The maps of ``layers`` that ``recipe`` makes (:class:`~attention_viz.analysis.layer_maps.HeldMaps`),
    once per recipe key and layers, shared read-only."""
    return _held_maps(recipe.kind, recipe.key, tuple(int(layer) for layer in layers), recipe)
