"""Checks on the attention weights a model returns, shared by every way of getting them.

A layer's weights are accepted only if they exist (eager attention; SDPA and flash attention return none),
have the expected shape, are finite, and every row sums to 1 within :data:`ROW_SUM_TOLERANCE`. The
message of a refusal says what to do.
"""

from __future__ import annotations

import numpy as np
import torch

ROW_SUM_TOLERANCE = 1e-4

NO_WEIGHTS = (
    "this model returned no attention weights: load it with attn_implementation='eager' "
    "(SDPA and flash attention do not return them)"
)


class AttentionError(RuntimeError):
    """A model returned no, or invalid, attention weights; the message says what to do."""


def check_rows(weights: torch.Tensor, where: str = "") -> None:
    """Refuse weights that are not softmax rows.

    Args:
        weights: ``(..., t, s)`` attention weights, any float dtype.
        where: appended to the message (``" in text 3"``).

    Raises:
        AttentionError: a value is NaN or infinite, or a row does not sum to 1 within
            :data:`ROW_SUM_TOLERANCE`; the message names half precision, or dropout, as the cause.
    """
    worst = float((weights.float().sum(-1) - 1).abs().max())  # NaN when a value is NaN or infinite
    if worst <= ROW_SUM_TOLERANCE:
        return
    if not bool(torch.isfinite(weights).all()):
        raise AttentionError(f"attention weights contain NaN or infinity{where}")
    computed_in = str(weights.dtype).removeprefix("torch.")
    if computed_in not in {"float32", "float64"}:  # the real cause, not a guess about dropout
        raise AttentionError(
            f"attention rows do not sum to 1 (off by {worst:.2g}){where}: the model runs in {computed_in}; "
            "load it in float32 (attention_viz.load_model does)"
        )
    raise AttentionError(
        f"attention rows do not sum to 1 (off by {worst:.2g}){where}: is the model in eval mode, without dropout?"
    )


def check_layer(tensor: torch.Tensor | None, layer: int, expected: tuple[int, ...]) -> None:
    """Refuse one layer's weights unless they exist, have the ``expected`` shape and pass :func:`check_rows`.

    Raises:
        AttentionError: no weights (SDPA or flash attention), another shape, or rows that fail :func:`check_rows`.
    """
    if tensor is None:
        raise AttentionError(NO_WEIGHTS)
    if tuple(tensor.shape) != expected:
        raise AttentionError(f"layer {layer} attention has shape {tuple(tensor.shape)}, expected {expected}")
    check_rows(tensor)


def check_attentions(attentions, num_layers: int, num_heads: int, num_tokens: int, batch: int = 1) -> None:
    """Refuse a forward's attention unless every layer's weights pass :func:`check_layer`; nothing is copied.

    Args:
        attentions: one ``(batch, heads, t, t)`` tensor per layer, as a forward returns them.
        num_layers, num_heads, num_tokens, batch: what the model and input should give.

    Raises:
        AttentionError: none at all, another number of layers, or a layer that fails :func:`check_layer`.
    """
    check_count(attentions, num_layers)
    for layer, tensor in enumerate(attentions):
        check_layer(tensor, layer, (batch, num_heads, num_tokens, num_tokens))


def check_count(attentions, num_layers: int) -> None:
    """Refuse a forward's attention unless there is one tensor per layer.

    Raises:
        AttentionError: none at all (SDPA or flash attention), or another number of layers.
    """
    if not attentions:
        raise AttentionError(NO_WEIGHTS)
    if len(attentions) != num_layers:
        raise AttentionError(f"expected attention from {num_layers} layers, got {len(attentions)}")


def write_layer(into: np.ndarray, layer: int, tensor: torch.Tensor | None) -> None:
    """Check one layer's ``(1, h, t, t)`` weights and copy them into ``into[layer]``, float32
    ``(layers, h, t, t)``; weights that already lie there (an encoder that wrote into it) are not copied.

    Raises:
        AttentionError: one layer too many, or weights that fail :func:`check_layer`.
    """
    if layer >= len(into):
        raise AttentionError(f"expected attention from {len(into)} layers, got more")
    check_layer(tensor, layer, (1, *into.shape[1:]))
    rows = tensor[0]  # (h, t, t)
    place = torch.from_numpy(into[layer])
    if (rows.data_ptr(), rows.stride(), rows.dtype) != (place.data_ptr(), place.stride(), place.dtype):
        place.copy_(rows)


def validate_attentions(
    attentions, num_layers: int, num_heads: int, num_tokens: int, into: np.ndarray | None = None
) -> np.ndarray:
    """Check a model's attentions and stack them as float32 ``(layers, heads, query, key)``.

    Args:
        attentions: ``outputs.attentions``: one ``(1, heads, t, t)`` tensor per layer.
        num_layers, num_heads, num_tokens: what the model and input should give.
        into: the float32 ``(layers, heads, t, t)`` array to stack them in (a new one if ``None``); a layer
            that already lies in its place there is not copied.

    Raises:
        AttentionError: if there are none (SDPA or flash attention), the count or a shape is wrong,
            a value is not finite, or a row does not sum to 1 within ``ROW_SUM_TOLERANCE``.
        ValueError: ``into`` is not a float32 array of that shape.
    """
    check_count(attentions, num_layers)
    weights = empty_weights(num_layers, num_heads, num_tokens, into)
    for layer, tensor in enumerate(attentions):
        write_layer(weights, layer, tensor)
    return weights


def empty_weights(num_layers: int, num_heads: int, num_tokens: int, into: np.ndarray | None = None) -> np.ndarray:
    """A new float32 ``(layers, heads, t, t)`` array, or ``into`` once it is checked to be one.

    Raises:
        ValueError: ``into`` has another shape or dtype.
    """
    shape = (num_layers, num_heads, num_tokens, num_tokens)
    if into is None:
        return np.empty(shape, dtype=np.float32)
    if into.shape != shape or into.dtype != np.float32:
        raise ValueError(f"expected a float32 array of shape {shape} to write into")
    return into
