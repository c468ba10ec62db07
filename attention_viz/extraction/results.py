"""Attention of every layer and head for one input, from the pretrained model or our from-scratch encoder."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from attention_viz import settings
from attention_viz.extraction.capture import pretrained_attention
from attention_viz.extraction.checks import empty_weights
from attention_viz.extraction.forward import scratch_forward
from attention_viz.extraction.tokens import Encoding, InputError, encode
from attention_viz.models.encoder import BertEncoder, Variant
from attention_viz.models.loading import LoadedModel

SOURCES = ("pretrained", "scratch")


@dataclass(frozen=True)
class AttentionResult:
    """Attention weights of every layer and head for one input.

    Attributes:
        weights: float32 ``(layers, heads, query, key)``; ``weights[l, h, i]`` is the distribution of
            query token ``i``'s attention over the keys and sums to 1.
        encoding: the tokens, labels and segments the axes refer to.
        model_name: the model's name (:attr:`ModelInfo.name`).
        source: ``"pretrained"`` (transformers) or ``"scratch"`` (our encoder).
        variant: the from-scratch :class:`Variant` value; ``None`` for pretrained.
        seed: the seed of the ``random`` variant; ``None`` otherwise.
    """

    weights: np.ndarray
    encoding: Encoding
    model_name: str
    source: str
    variant: str | None = None
    seed: int | None = None

    def head(self, layer: int, head: int) -> np.ndarray:
        """One head's ``(query, key)`` matrix; raises IndexError naming the valid range."""
        layers, heads = self.weights.shape[:2]
        if not (0 <= layer < layers and 0 <= head < heads):
            raise IndexError(f"layer {layer}, head {head} out of range: layers 0-{layers - 1}, heads 0-{heads - 1}")
        return self.weights[layer, head]


def scratch_attention(encoder: BertEncoder, encoding: Encoding, scaling: float | None = None) -> np.ndarray:
    """Attention of our from-scratch encoder for one encoded input (:func:`scratch_forward`).

    Returns:
        float32 ``(layers, heads, query, key)``.

    Raises:
        AttentionError: see :func:`~attention_viz.extraction.checks.check_attentions`.
    """
    config = encoder.config
    weights = empty_weights(config.num_hidden_layers, config.num_attention_heads, encoding.num_tokens)
    # each layer goes here as it finishes: no second copy
    scratch_forward(encoder, encoding, scaling, attentions_out=torch.from_numpy(weights)[:, None])
    return weights


def extract(
    loaded: LoadedModel,
    text: str,
    pair: str | None = None,
    source: str = "pretrained",
    variant: str | Variant = Variant.EXACT,
    seed: int = 0,
    limits: settings.Limits | None = None,
) -> AttentionResult:
    """Attention of every layer and head for a text or a sentence pair.

    Args:
        loaded: from :func:`attention_viz.models.loading.load_model`.
        text: sentence A.
        pair: sentence B, or ``None``.
        source: ``"pretrained"`` (transformers' model) or ``"scratch"`` (our encoder).
        variant: for ``"scratch"``: a :class:`Variant` or its value.
        seed: for the ``random`` variant.
        limits: characters and tokens accepted (default: :class:`~attention_viz.settings.Limits`' defaults).

    Returns:
        :class:`AttentionResult`.

    Raises:
        InputError: empty text, an unknown source or variant.
        AttentionError: the model gave no or invalid attention weights.
    """
    _check_source(source)
    types = loaded.encoder.config.type_vocab_size
    encoding = encode(loaded.tokenizer, text, pair, loaded.info.max_positions, limits, types)
    return extract_encoded(loaded, encoding, source, variant, seed)


def _check_source(source: str) -> None:
    if source not in SOURCES:
        raise InputError(f"unknown source {source!r}: choose one of {', '.join(SOURCES)}", "unknown_source")


def extract_encoded(
    loaded: LoadedModel,
    encoding: Encoding,
    source: str = "pretrained",
    variant: str | Variant = Variant.EXACT,
    seed: int = 0,
) -> AttentionResult:
    """:func:`extract` for an input already encoded (:func:`~attention_viz.extraction.encode`), so a caller
    that needs the tokens for several results encodes the text once.

    Args:
        loaded: the model the encoding was made for.
        encoding: the input, ``t`` tokens.
        source, variant, seed: as for :func:`extract`.

    Returns:
        :class:`AttentionResult` whose ``encoding`` is ``encoding`` itself; weights float32
        ``(layers, heads, t, t)``.

    Raises:
        InputError: an unknown source or variant.
        AttentionError: the model gave no or invalid attention weights.
    """
    _check_source(source)
    if source == "pretrained":
        weights = pretrained_attention(loaded.model, encoding)
        return AttentionResult(weights, encoding, loaded.info.name, source)
    try:
        variant = Variant(variant)
    except ValueError:
        choices = ", ".join(v.value for v in Variant)
        raise InputError(f"unknown variant {variant!r}: choose one of {choices}", "unknown_variant") from None
    model = loaded.encoder  # a BertEncoder, or a Decoder for a Llama-style model: its own random init
    encoder = type(model).random(model.config, seed) if variant is Variant.RANDOM else model
    weights = scratch_attention(encoder, encoding, variant.scaling(loaded.info.hidden_size))
    return AttentionResult(
        weights, encoding, loaded.info.name, source, variant.value, seed if variant is Variant.RANDOM else None
    )


def read_only(value):
    """Make ``value`` (an array, or every array in a nested dataclass) read-only, in place, and return it: a
    result shared by many readers (the app's caches hand one object to every session) that none can change."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif hasattr(value, "__dataclass_fields__"):
        for field in fields(value):
            read_only(getattr(value, field.name))
    return value
