"""Inside one head, step by step: query, keys, dot products, scaling, softmax, weighted sum of values.

Uses the model's real weights through our from-scratch layer (:class:`attention_viz.models.encoder.BertEncoder`):
the chosen layer's input is that layer's entry of the encoder's ``hidden_states``, and the query, key
and value vectors of the head come from its ``attention.query``/``key``/``value`` projections. With
BERT's scaling (``head_dim ** -0.5``), temperature 1 and no masked key, the weights are exactly BERT's
(Vaswani et al. 2017, eq. 1; transformers' ``eager_attention_forward``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from attention_viz.extraction import Encoding, InputError
from attention_viz.models.encoder import BertEncoder, Variant

# The from-scratch variants' names for the same ideas: head_dim ** -0.5 (BERT), hidden ** -0.5 (the seed
# article), 1 (no scaling).
SCALINGS = tuple(v.value for v in Variant if v is not Variant.RANDOM)  # ("exact", "article-scaling", "no-scaling")


@dataclass(frozen=True)
class HeadSteps:
    """Every intermediate value of one head for one query token (float32; ``t`` tokens, ``d`` head_dim).

    Attributes:
        query_index: the query token's position.
        query: ``(d,)`` the query vector of that token.
        keys: ``(t, d)`` every token's key vector.
        values: ``(t, d)`` every token's value vector.
        dots: ``(t,)`` query · key for each key.
        scores: ``(t,)`` ``dots * scaling / temperature``; ``-inf`` on masked keys.
        weights: ``(t,)`` softmax of ``scores``: sums to 1, exactly 0 on masked keys.
        context: ``(d,)`` ``weights @ values``, this head's output for the query token.
        all_weights: ``(t, t)`` the same computation for every query (rows sum to 1).
        scaling: the factor the dot products were multiplied by.
        temperature: the divisor after scaling (1 = the model's).
        masked: the masked key positions, sorted.
    """

    query_index: int
    query: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    dots: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    all_weights: np.ndarray
    scaling: float
    temperature: float
    masked: tuple[int, ...]


def scaling_factor(kind: str, head_dim: int, hidden_size: int) -> float:
    """The factor raw scores are multiplied by.

    Args:
        kind: one of :data:`SCALINGS`, named as the from-scratch :class:`Variant` that scales so:
            ``"exact"`` (``head_dim ** -0.5``, BERT and Vaswani et al.), ``"article-scaling"``
            (``1 / sqrt(embed_size)``, the seed article's layer) or ``"no-scaling"`` (1).
        head_dim, hidden_size: the model's sizes.

    Raises:
        InputError: for an unknown kind.
    """
    if kind not in SCALINGS:
        raise InputError(f"unknown scaling {kind!r}: choose one of {', '.join(SCALINGS)}")
    factor = Variant(kind).scaling(hidden_size)
    return head_dim**-0.5 if factor is None else factor


def layer_input(encoder: BertEncoder, encoding: Encoding, layer: int) -> np.ndarray:
    """The hidden states that enter ``layer`` (the embeddings for layer 0).

    Returns:
        float32 ``(t, hidden)``: ``hidden_states[layer]`` of the from-scratch encoder, which
        reproduces transformers' to about 1e-6.

    Raises:
        IndexError: if ``layer`` is out of range.
    """
    if not 0 <= layer < encoder.config.num_hidden_layers:
        raise IndexError(f"layer {layer} out of range: 0-{encoder.config.num_hidden_layers - 1}")
    ids = torch.tensor(encoding.input_ids)[None]  # (1, t); a copy: cached encodings are read-only
    types = torch.tensor(encoding.token_type_ids)[None]  # (1, t)
    with torch.inference_mode():
        output = encoder(ids, types)
    return output.hidden_states[layer][0].float().numpy()  # (t, hidden)


def head_vectors(encoder: BertEncoder, hidden: np.ndarray, layer: int, head: int) -> tuple[np.ndarray, ...]:
    """Query, key and value vectors of one head: the layer's projections, split into heads.

    Args:
        encoder: the from-scratch encoder with the model's weights.
        hidden: ``(t, hidden)`` the layer's input (:func:`layer_input`).
        layer, head: from 0.

    Returns:
        ``(queries, keys, values)``, each float32 ``(t, d)``.
    """
    attention = encoder.layers[layer].attention
    d = attention.head_dim
    if not 0 <= head < attention.num_heads:
        raise IndexError(f"head {head} out of range: 0-{attention.num_heads - 1}")
    x = torch.from_numpy(np.array(hidden, dtype=np.float32))[None]  # (1, t, hidden)
    with torch.inference_mode():
        projected = [p(x)[0, :, head * d : (head + 1) * d] for p in (attention.query, attention.key, attention.value)]
    return tuple(p.numpy() for p in projected)  # 3 × (t, d)


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; ``-inf`` scores get exactly 0."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)  # exp(-inf) == 0.0 exactly
    return exp / exp.sum(axis=-1, keepdims=True)


def head_steps(
    queries: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    query_index: int,
    scaling: float,
    temperature: float = 1.0,
    masked: Iterable[int] = (),
) -> HeadSteps:
    """The computation of one head, step by step.

    Args:
        queries, keys, values: ``(t, d)`` from :func:`head_vectors`.
        query_index: the token whose attention is followed.
        scaling: factor for the dot products (:func:`scaling_factor`).
        temperature: scores are divided by it (> 0); 1 is the model's own.
        masked: key positions to hide: their score is ``-inf``, their weight exactly 0.

    Returns:
        :class:`HeadSteps`.

    Raises:
        InputError: for a query index out of range, a temperature that is not > 0, a masked position
            out of range, or every key masked (a softmax over no keys has no value).
    """
    t = keys.shape[0]
    masked = tuple(sorted(set(int(k) for k in masked)))
    if not 0 <= query_index < t:
        raise InputError(f"query token {query_index} out of range: 0-{t - 1}")
    if not temperature > 0:
        raise InputError("the temperature must be greater than 0")
    if any(not 0 <= k < t for k in masked):
        raise InputError(f"masked keys must be tokens 0-{t - 1}")
    if len(masked) == t:
        raise InputError("every key is masked: leave at least one key unmasked", code="all_masked")
    mask = np.zeros(t, dtype=np.float32)  # additive, over keys
    mask[list(masked)] = -np.inf
    dots_all = queries @ keys.T  # (t, s)
    scores_all = (dots_all * np.float32(scaling) / np.float32(temperature) + mask).astype(np.float32)  # (t, s)
    weights_all = softmax(scores_all).astype(np.float32)  # (t, s)
    weights = weights_all[query_index]  # (s,)
    return HeadSteps(
        query_index=query_index,
        query=queries[query_index],
        keys=keys,
        values=values,
        dots=dots_all[query_index],
        scores=scores_all[query_index],
        weights=weights,
        context=(weights @ values).astype(np.float32),  # (d,)
        all_weights=weights_all,
        scaling=float(scaling),
        temperature=float(temperature),
        masked=masked,
    )
