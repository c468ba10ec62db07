"""Beyond raw weights for one layer: attention rollout up to it and norm-based attention.

Rollout (Abnar & Zuidema 2020) is :func:`attention_viz.attention_rollout` with
``up_to_layer``. Norm-based attention (Kobayashi et al. 2020, "Attention is Not Only a Weight:
Analyzing Transformers with Vector Norms") weighs each attention weight by the size of what the key
actually sends: ``‖α_ij f(x_j)‖`` with ``f(x) = (x W_V + b_V) W_O`` per head, read from our
from-scratch encoder's value and output projections.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attention_viz.extraction.forward import scratch_forward
from attention_viz.models.encoder import BertEncoder


@dataclass(frozen=True)
class RolloutAndNorms:
    """Three views of one layer, each ``(t, t)`` with rows = queries, columns = keys.

    Attributes:
        layer: the layer (from 0).
        raw: the layer's attention averaged over heads; rows sum to 1.
        rollout: attention rollout through layers 0 to ``layer``; rows sum to 1.
        norm: norm-based attention of the whole layer, ``‖Σ_h α^h_ij f_h(x_j)‖`` (Kobayashi et al.
            2020, eq. 7), in the units of the hidden vectors; rows do not sum to 1.
        norm_per_head: ``(h, t, t)`` ``α^h_ij ‖f_h(x_j)‖`` for each head.
    """

    layer: int
    raw: np.ndarray
    rollout: np.ndarray
    norm: np.ndarray
    norm_per_head: np.ndarray


def transformed_values(encoder: BertEncoder, layer: int, layer_input: torch.Tensor) -> np.ndarray:
    """``f_h(x_j) = (x_j W_V + b_V)_h W_O,h`` for every head and token of one layer (Kobayashi et al. 2020).

    The output bias ``b_O`` is left out: it is added once, whatever the attention.

    Args:
        encoder: the from-scratch encoder (its weights).
        layer: the layer (from 0).
        layer_input: ``(t, hidden)`` what the layer's attention sees: its input
            (``EncoderOutput.hidden_states[layer]``), after ``ln_1`` in a pre-LayerNorm block (GPT-2); see
            :meth:`~attention_viz.models.encoder.BertEncoder.attention_input`.

    Returns:
        ``(h, t, hidden)`` float64.
    """
    attention = encoder.layers[layer].attention
    h, d = attention.num_heads, attention.head_dim
    with torch.inference_mode():
        values = attention.head_vectors(layer_input.to(torch.float32)[None])[2][0]  # (h, t, d): per query head
        w_out = attention.output.weight.view(-1, h, d).permute(1, 2, 0)  # (h, d, hidden)
        transformed = torch.matmul(values, w_out)  # (h, t, hidden)
    return transformed.double().numpy()


def norm_based_attention(weights: np.ndarray, transformed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Norm-based attention of one layer (Kobayashi et al. 2020).

    Args:
        weights: ``(h, t, t)`` the layer's attention.
        transformed: ``(h, t, hidden)`` from :func:`transformed_values`.

    Returns:
        ``(per_head, layer)``: ``per_head[h, i, j] = α^h_ij ‖f_h(x_j)‖``, ``(h, t, t)``;
        ``layer[i, j] = ‖Σ_h α^h_ij f_h(x_j)‖``, ``(t, t)``.
    """
    weights, transformed = np.asarray(weights, np.float64), np.asarray(transformed, np.float64)
    per_head = weights * np.linalg.norm(transformed, axis=-1)[:, None, :]  # (h, t, t)
    t = weights.shape[-1]
    layer = np.empty((t, t))
    for start in range(0, t, 64):  # (h, 64, t, hidden) at a time: t × t × hidden at once is too big at 512
        rows = slice(start, start + 64)
        summed = np.einsum("hij,hjd->ijd", weights[:, rows], transformed)  # (rows, t, hidden)
        layer[rows] = np.linalg.norm(summed, axis=-1)
    return per_head, layer


def rollout_and_norms(encoder: BertEncoder, encoding, layer: int) -> RolloutAndNorms:
    """Raw head average, rollout up to ``layer`` and norm-based attention for one encoded input.

    Args:
        encoder: the from-scratch encoder with the model's weights (exact variant).
        encoding: an :class:`~attention_viz.extraction.Encoding`.
        layer: the layer (from 0).

    Returns:
        :class:`RolloutAndNorms`.

    Raises:
        ValueError: if ``layer`` is out of range.
    """
    layers = encoder.config.num_hidden_layers
    if not 0 <= layer < layers:
        raise ValueError(f"layer {layer} is out of range: layers 0-{layers - 1}")
    output = scratch_forward(encoder, encoding)
    with torch.inference_mode():
        seen = encoder.attention_input(output.hidden_states, layer)[0]  # (t, hidden)
    weights = torch.cat(output.attentions).double().numpy()  # (L, h, t, t)
    transformed = transformed_values(encoder, layer, seen)
    per_head, norm = norm_based_attention(weights[layer], transformed)
    return RolloutAndNorms(layer, weights[layer].mean(0), attention_rollout(weights, layer), norm, per_head)


def attention_rollout(weights: np.ndarray, up_to_layer: int | None = None) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

    Heads are averaged; each layer's map gets the residual connection, ``(A + I) / 2``, rows are
    renormalised, and layers are multiplied with later layers on the left:
    ``R = Â_l ··· Â_1 Â_0``.

    Args:
        weights: ``(layers, heads, t, t)`` or head-averaged ``(layers, t, t)``.
        up_to_layer: the last layer (from 0) to include; ``None`` for all layers.

    Returns:
        ``(t, t)``: row ``i`` is how much of token ``i`` at the output of layer ``up_to_layer``
        flows from each input token; rows sum to 1.

    Raises:
        ValueError: if ``up_to_layer`` is out of range.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 4:
        weights = weights.mean(1)  # (L, t, t)
    if up_to_layer is not None:
        if not 0 <= up_to_layer < weights.shape[0]:
            raise ValueError(f"up_to_layer {up_to_layer} is out of range: layers 0-{weights.shape[0] - 1}")
        weights = weights[: up_to_layer + 1]  # (l + 1, t, t)
    identity = np.eye(weights.shape[-1])
    rollout = identity
    for layer in weights:
        residual = (layer + identity) / 2
        residual = residual / residual.sum(-1, keepdims=True)
        rollout = residual @ rollout
    return rollout


def layer_maps(encoder: BertEncoder, encoding, layers, kind: str) -> np.ndarray:
    """One kind of :class:`RolloutAndNorms` map for several layers, from one forward.

    Args:
        encoder: the from-scratch encoder with the model's weights (exact variant).
        encoding: an :class:`~attention_viz.extraction.Encoding`.
        layers: layer indices (from 0).
        kind: ``"raw"`` (the head average), ``"rollout"`` (up to each layer) or ``"norm"`` (norm-based).

    Returns:
        float64 ``(len(layers), t, t)``: the map :func:`rollout_and_norms` gives for each layer.

    Raises:
        ValueError: a layer out of range or an unknown ``kind``.
    """
    count = encoder.config.num_hidden_layers
    if kind not in ("raw", "rollout", "norm") or any(not 0 <= layer < count for layer in layers):
        raise ValueError(f"no {kind!r} map for layers {list(layers)}: layers 0-{count - 1}")
    output = scratch_forward(encoder, encoding)
    with torch.inference_mode():
        seen = [encoder.attention_input(output.hidden_states, layer)[0] for layer in layers] if kind == "norm" else []
    weights = torch.cat(output.attentions).double().numpy()  # (L, h, t, t)
    if kind == "raw":
        return np.stack([weights[layer].mean(0) for layer in layers])
    if kind == "rollout":
        return np.stack([attention_rollout(weights, layer) for layer in layers])
    return np.stack(
        [
            norm_based_attention(weights[layer], transformed_values(encoder, layer, x))[1]  # (t, t)
            for layer, x in zip(layers, seen, strict=True)
        ]
    )
