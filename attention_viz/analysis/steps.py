"""Inside one head, step by step: query, keys, dot products, scaling, softmax, weighted sum of values.

Uses the model's real weights through our from-scratch layer (:class:`attention_viz.models.encoder.BertEncoder`):
the chosen layer's input is that layer's entry of the encoder's ``hidden_states``, and the query, key
and value vectors of the head come from its ``attention.query``/``key``/``value`` projections. With
BERT's scaling (``head_dim ** -0.5``), temperature 1 and no masked key, the weights are exactly BERT's
(Vaswani et al. 2017, eq. 1; transformers' ``eager_attention_forward``).

A Llama-style decoder rotates queries and keys by their position (RoPE, Su et al. 2021) between the
projections and the dot products: :func:`rotation_step` shows one token's before and after, and
:func:`distance_scores` the score between two tokens of the same content as a function of their distance
alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from attention_viz.extraction import Encoding, InputError, scratch_forward
from attention_viz.models.decoder import Decoder, apply_rotary, rope_frequencies, rotary_angles
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
        all_weights: ``(t, t)`` the same computation for every query (rows sum to 1; a row whose keys
            are all masked is 0).
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


def scaling_factor(kind: str, head_dim: int, hidden_size: int, own: float | None = None) -> float:
    """The factor raw scores are multiplied by.

    Args:
        kind: one of :data:`SCALINGS`, named as the from-scratch :class:`Variant` that scales so:
            ``"exact"`` (the model's own: ``head_dim ** -0.5``, BERT and Vaswani et al.), ``"article-scaling"``
            (``1 / sqrt(embed_size)``, the seed article's layer) or ``"no-scaling"`` (1).
        head_dim, hidden_size: the model's sizes.
        own: the model's own factor where it is not ``head_dim ** -0.5`` (Gemma 2's
            ``query_pre_attn_scalar ** -0.5``; :attr:`LayerRules.scaling`).

    Raises:
        InputError: for an unknown kind.
    """
    if kind not in SCALINGS:
        raise InputError(f"unknown scaling {kind!r}: choose one of {', '.join(SCALINGS)}")
    factor = Variant(kind).scaling(hidden_size)
    if factor is None:
        return head_dim**-0.5 if own is None else own
    return factor


@dataclass(frozen=True)
class LayerRules:
    """What a layer's attention does to its scores besides ``q · k``, so that the steps give its weights.

    Attributes:
        scaling: the model's own factor (``head_dim ** -0.5``; Gemma 2: ``query_pre_attn_scalar ** -0.5``).
        window: a sliding window's size (Mistral, Gemma 2's local layers): query ``i`` sees keys
            ``i - window + 1 .. i``; ``None``: no window.
        softcap: Gemma 2's attention-logit cap ``c``: scaled scores become ``c * tanh(s / c)``; ``None``: none.
    """

    scaling: float
    window: int | None = None
    softcap: float | None = None


def layer_rules(encoder: BertEncoder, layer: int) -> LayerRules:
    """The :class:`LayerRules` of one layer of a from-scratch model (its attention module's).

    Raises:
        IndexError: if ``layer`` is out of range.
    """
    _check_layer(encoder, layer)
    attention = encoder.layers[layer].attention
    return LayerRules(attention.scaling, attention.window, attention.softcap)


def layer_inputs(encoder: BertEncoder, encoding: Encoding) -> np.ndarray:
    """The hidden states every layer's attention sees, from one run of the encoder: the layer's input (the
    embeddings for layer 0), after the block's first LayerNorm in a pre-LayerNorm model (GPT-2's ``ln_1``).

    Computed once per text, they make a change of layer or head a matter of indexing and of one layer's
    projections (:func:`layer_vectors`): no forward.

    Returns:
        float32 ``(L, t, hidden)``: ``[l]`` is what layer ``l``'s query, key and value projections see in the
        from-scratch encoder, which reproduces transformers' to about 1e-6.
    """
    output = scratch_forward(encoder, encoding)
    with torch.inference_mode():
        seen = [encoder.attention_input(output.hidden_states, layer) for layer in range(len(encoder.layers))]
    return torch.cat(seen).float().numpy()  # (L, t, hidden)


def _check_layer(encoder: BertEncoder, layer: int) -> None:
    if not 0 <= layer < encoder.config.num_hidden_layers:
        raise IndexError(f"layer {layer} out of range: 0-{encoder.config.num_hidden_layers - 1}")


def layer_vectors(encoder: BertEncoder, hidden: np.ndarray, layer: int) -> np.ndarray:
    """Query, key and value vectors of every head of one layer: its projections, split into heads.

    Args:
        encoder: the from-scratch encoder with the model's weights.
        hidden: ``(t, hidden)`` the layer's input (``layer_inputs(...)[layer]``).
        layer: from 0.

    Returns:
        float32 ``(3, h, t, d)``: queries, keys and values; ``[:, head]`` is one head's (:func:`head_vectors`).

    Raises:
        IndexError: if ``layer`` is out of range.
    """
    _check_layer(encoder, layer)
    attention = encoder.layers[layer].attention
    x = torch.from_numpy(np.array(hidden, dtype=np.float32))[None]  # (1, t, hidden)
    with torch.inference_mode():
        # a decoder's queries and keys come rotated by position, its key/value heads repeated per query head
        return torch.stack([v[0] for v in attention.head_vectors(x)]).numpy()  # (3, h, t, d)


def head_vectors(encoder: BertEncoder, hidden: np.ndarray, layer: int, head: int) -> tuple[np.ndarray, ...]:
    """Query, key and value vectors of one head: the layer's projections, split into heads.

    Args:
        encoder: the from-scratch encoder with the model's weights.
        hidden: ``(t, hidden)`` the layer's input (``layer_inputs(...)[layer]``).
        layer, head: from 0.

    Returns:
        ``(queries, keys, values)``, each float32 ``(t, d)``.

    Raises:
        IndexError: if ``layer`` or ``head`` is out of range.
    """
    heads = encoder.layers[layer].attention.num_heads if 0 <= layer < len(encoder.layers) else 0
    if heads and not 0 <= head < heads:
        raise IndexError(f"head {head} out of range: 0-{heads - 1}")
    return tuple(layer_vectors(encoder, hidden, layer)[:, head])  # 3 × (t, d)


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
    causal: bool = False,
    window: int | None = None,
    softcap: float | None = None,
) -> HeadSteps:
    """The computation of one head, step by step.

    Args:
        queries, keys, values: ``(t, d)`` from :func:`head_vectors`.
        query_index: the token whose attention is followed.
        scaling: factor for the dot products (:func:`scaling_factor`).
        temperature: scores are divided by it (> 0); 1 is the model's own.
        masked: key positions to hide: their score is ``-inf``, their weight exactly 0.
        causal: a decoder's mask as well: each query sees only itself and earlier keys (later keys
            score ``-inf``); ``masked`` hides keys on top of it.
        window: with ``causal``, a sliding window: keys ``window`` or more tokens before the query score
            ``-inf`` too (:attr:`LayerRules.window`).
        softcap: the scaled dot products become ``softcap * tanh(s / softcap)`` before the temperature
            (:attr:`LayerRules.softcap`).

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
    scaled = dots_all * np.float32(scaling)  # (t, s)
    if softcap is not None:
        scaled = np.tanh(scaled / np.float32(softcap)) * np.float32(softcap)  # each in (-softcap, softcap)
    scores_all = (scaled / np.float32(temperature) + mask).astype(np.float32)  # (t, s)
    if causal:
        scores_all[np.triu_indices(t, k=1)] = -np.inf  # (t, s): key j > query i is not seen
    if causal and window is not None:
        scores_all[np.tril_indices(t, k=-window)] = -np.inf  # (t, s): key j <= i - window is not seen either
    if not np.isfinite(scores_all[query_index]).any():
        raise InputError("every key this query can see is masked: leave at least one unmasked", code="all_masked")
    seen = np.isfinite(scores_all).any(-1)  # (t,): rows with a key left (causal and masked can hide all)
    weights_all = np.zeros_like(scores_all)  # (t, s): a row with no key left stays 0
    weights_all[seen] = softmax(scores_all[seen]).astype(np.float32)
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


def layer_weights(
    vectors: np.ndarray,
    query_index: int,
    scaling: float,
    temperature: float = 1.0,
    masked: Iterable[int] = (),
    causal: bool = False,
    window: int | None = None,
    softcap: float | None = None,
) -> np.ndarray:
    """Every head's weights of one layer computed as :func:`head_steps` computes one head's.

    Args:
        vectors: ``(3, h, t, d)`` the layer's queries, keys and values (:func:`layer_vectors`).
        query_index, scaling, temperature, masked, causal, window, softcap: as for :func:`head_steps`.

    Returns:
        float32 ``(h, t, t)``: each head's :attr:`HeadSteps.all_weights`.

    Raises:
        InputError: as :func:`head_steps`.
    """
    queries, keys, values = vectors  # each (h, t, d)
    return np.stack(
        [
            head_steps(q, k, v, query_index, scaling, temperature, masked, causal, window, softcap).all_weights
            for q, k, v in zip(queries, keys, values, strict=True)
        ]
    )  # (h, t, t)


@dataclass(frozen=True)
class RotationStep:
    """RoPE for one head and one token: its query and key before and after the rotation by its position.

    Attributes:
        position: the token's position ``p`` (from 0).
        query_before, query_after: ``(d,)`` the head's query of the token, as projected (after Qwen3's norm)
            and rotated: each pair ``(x[i], x[i + d/2])`` turned by the angle ``p · θ_i``.
        key_before, key_after: ``(d,)`` the same for the key (of the key/value head this query head reads).
        angles: ``(d/2,)`` the angles ``p · θ_i`` in radians.
    """

    position: int
    query_before: np.ndarray
    query_after: np.ndarray
    key_before: np.ndarray
    key_after: np.ndarray
    angles: np.ndarray

    @property
    def vectors(self) -> np.ndarray:
        """``(4, d)``: the query before and after the rotation, then the key before and after, as rows."""
        return np.stack([self.query_before, self.query_after, self.key_before, self.key_after])


def uncapped_scores(result: HeadSteps, scaling: float) -> np.ndarray:
    """``(t,)`` one query's scores before a soft cap (Gemma 2): ``dots × scaling`` in float32, ``-inf`` where the
    steps left a key out (its score in ``result.scores`` is not finite: masked, causal, outside a window)."""
    uncapped = result.dots * np.float32(scaling)
    return np.where(np.isfinite(result.scores), uncapped, -np.inf)


def _rope_layer(encoder, layer: int, head: int):
    if not isinstance(encoder, Decoder):
        raise ValueError("rotary positions belong to a Llama-style decoder; this model has absolute positions")
    _check_layer(encoder, layer)
    attention = encoder.layers[layer].attention
    if not 0 <= head < attention.num_heads:
        raise IndexError(f"head {head} out of range: 0-{attention.num_heads - 1}")
    return attention


def _unrotated(attention, vector: np.ndarray, head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One token's query and key of ``head`` before the rotation, each ``(1, 1, 1, d)``."""
    x = torch.from_numpy(np.array(vector, dtype=np.float32)).reshape(1, 1, -1)  # (1, 1, hidden)
    q, k, _ = attention.unrotated(x)  # (1, h, 1, d), (1, h_kv, 1, d)
    group = head // attention.config.groups  # the key/value head this query head reads
    return q[:, head : head + 1], k[:, group : group + 1]


def rotation_step(encoder: Decoder, hidden: np.ndarray, layer: int, head: int, position: int) -> RotationStep:
    """One token's query and key of one head before and after RoPE.

    Args:
        encoder: a from-scratch :class:`~attention_viz.models.decoder.Decoder`.
        hidden: ``(t, hidden)`` the layer's input (``layer_inputs(...)[layer]``).
        layer, head: from 0.
        position: the token (0 to ``t - 1``).

    Returns:
        :class:`RotationStep`; its ``query_after`` and ``key_after`` are :func:`head_vectors`' rows, bit for bit.

    Raises:
        ValueError: a model without rotary positions. IndexError: a layer, head or position out of range.
    """
    attention = _rope_layer(encoder, layer, head)
    if not 0 <= position < len(hidden):
        raise IndexError(f"position {position} out of range: 0-{len(hidden) - 1}")
    x = torch.from_numpy(np.array(hidden, dtype=np.float32))[None]  # (1, t, hidden)
    with torch.inference_mode():
        q, k, _ = attention.unrotated(x)  # (1, h, t, d), (1, h_kv, t, d)
        cos, sin = rotary_angles(encoder.config, x.shape[1])  # (1, t, d) each
        q_after, k_after = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
    group = head // encoder.config.groups
    angles = position * rope_frequencies(encoder.config)  # (d/2,)
    return RotationStep(
        position,
        q[0, head, position].numpy(),
        q_after[0, head, position].numpy(),
        k[0, group, position].numpy(),
        k_after[0, group, position].numpy(),
        angles.numpy(),
    )


def distance_scores(
    encoder: Decoder, vector: np.ndarray, layer: int, head: int, distances: int, start: int = 0
) -> np.ndarray:
    """The pre-softmax score of ``head`` between two tokens of the same content ``vector`` (the same layer
    input), the key at position ``start`` and the query ``Δ`` tokens later, for ``Δ = 0 .. distances - 1``.

    RoPE turns the query by ``(start + Δ) · θ_i`` and the key by ``start · θ_i``; their dot product sees only
    the difference ``Δ · θ_i`` (Su et al. 2021, eq. 14), so the curve is the same from any ``start`` (to
    float32 rounding). Scaled by the layer's own factor and, in Gemma 2, soft-capped, as the model's scores
    are before the mask and the softmax.

    Args:
        encoder: a from-scratch :class:`~attention_viz.models.decoder.Decoder`.
        vector: ``(hidden,)`` the layer input both tokens have (a row of ``layer_inputs(...)[layer]``).
        layer, head: from 0.
        distances: how many distances, from 0.
        start: the key's position.

    Returns:
        float32 ``(distances,)``.

    Raises:
        ValueError: a model without rotary positions. IndexError: a layer or head out of range.
    """
    attention = _rope_layer(encoder, layer, head)
    with torch.inference_mode():
        q, k = _unrotated(attention, vector, head)  # (1, 1, 1, d) each
        cos, sin = rotary_angles(encoder.config, start + distances)  # (1, start + distances, d)
        queries = apply_rotary(q.expand(1, 1, start + distances, -1), cos, sin)[0, 0, start:]  # (distances, d)
        key = apply_rotary(k.expand(1, 1, start + distances, -1), cos, sin)[0, 0, start]  # (d,)
        scores = (queries @ key) * attention.scaling  # (distances,)
        if attention.softcap is not None:
            scores = torch.tanh(scores / attention.softcap) * attention.softcap
    return scores.float().numpy()


@dataclass(frozen=True)
class LayerSteps:
    """Every head's steps of one layer for one query token (:func:`layer_steps`; ``h`` heads, ``t`` tokens,
    ``d`` head_dim, float32).

    Attributes:
        layer: the layer (from 0).
        rules: the layer's :class:`LayerRules` (its window and soft cap).
        heads: ``h`` :class:`HeadSteps`, ``heads[i]`` is :func:`head_steps` of head ``i`` (its
            :func:`head_vectors`).
        uncapped: ``(h, t)`` each head's :func:`uncapped_scores` where the layer caps its scores, else ``None``.
        rotations: ``(h, 4, d)`` each head's :attr:`RotationStep.vectors` of the query token in a RoPE model,
            else ``None``.
        distances: ``(h, n)`` each head's :func:`distance_scores` of the query token's layer input in a RoPE
            model (``n`` distances from 0), else ``None``.
    """

    layer: int
    rules: LayerRules
    heads: tuple[HeadSteps, ...]
    uncapped: np.ndarray | None
    rotations: np.ndarray | None
    distances: np.ndarray | None


def layer_steps(
    encoder: BertEncoder,
    hidden: np.ndarray,
    layer: int,
    query_index: int,
    scaling: float,
    temperature: float = 1.0,
    masked: Iterable[int] = (),
    causal: bool = False,
    distances: int = 0,
) -> LayerSteps:
    """One query token's steps in every head of one layer, each exactly as :func:`head_steps` gives them from
    that head's :func:`head_vectors`, with the layer's own window and soft cap (:func:`layer_rules`); in a
    Llama-style decoder also each head's rotation of the token (:func:`rotation_step`) and its score over
    ``distances`` distances (:func:`distance_scores`).

    Args:
        encoder: the from-scratch encoder with the model's weights.
        hidden: ``(t, hidden)`` the layer's input (``layer_inputs(...)[layer]``).
        layer: from 0.
        query_index, scaling, temperature, masked, causal: as for :func:`head_steps`.
        distances: how many distances the score-over-distance curves have (a RoPE model; 0: none).

    Returns:
        :class:`LayerSteps`.

    Raises:
        IndexError: a layer out of range. InputError: as :func:`head_steps` (every key the query can see in
        this layer masked, ...).
    """
    rules = layer_rules(encoder, layer)
    vectors = layer_vectors(encoder, hidden, layer)  # (3, h, t, d)
    heads = tuple(
        head_steps(q, k, v, query_index, scaling, temperature, masked, causal, rules.window, rules.softcap)
        for q, k, v in zip(*vectors, strict=True)
    )
    uncapped = np.stack([uncapped_scores(one, scaling) for one in heads]) if rules.softcap is not None else None
    rotations = curves = None
    if isinstance(encoder, Decoder):
        rotations = np.stack(
            [rotation_step(encoder, hidden, layer, head, query_index).vectors for head in range(len(heads))]
        )  # (h, 4, d)
        if distances:
            curves = np.stack(
                [distance_scores(encoder, hidden[query_index], layer, head, distances) for head in range(len(heads))]
            )  # (h, n)
    return LayerSteps(layer, rules, heads, uncapped, rotations, curves)
