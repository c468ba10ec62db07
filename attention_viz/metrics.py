"""Measures of attention maps and the standard ways to reduce them.

Every function takes attention as numpy arrays whose last two axes are ``(query, key)`` with rows that
sum to 1, and leaves leading axes (layers, heads) alone unless it says otherwise. Entropies and
divergences are in bits (log base 2). Results are clamped to their documented range, where round-off
can cross a bound (case C23): ``0 <= entropy <= log2(keys)``, ``0 <= JS <= 1``, never ``-0.0``.
"""

from __future__ import annotations

import numpy as np


def _plogp(p: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
    """``p * log2(p / q)`` elementwise (``q`` = 1 if omitted), with ``0 * log 0 = 0``."""
    positive = p > 0
    # The same numbers as p * log2(p / q) where p > 0, without the temporaries of np.where (a third of the
    # corpus statistics' time went here, issue 10, figure #6).
    ratio = p if q is None else np.divide(p, q, out=np.ones_like(p), where=positive)
    logs = np.log2(ratio, out=np.zeros_like(p), where=positive)
    return np.multiply(p, logs, out=logs)


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Attention entropy of each query's row, in bits.

    Args:
        weights: ``(..., query, key)``.

    Returns:
        ``(..., query)``: 0 when a query attends to one key; ``log2(keys)`` when it attends uniformly.
    """
    weights = np.asarray(weights, dtype=np.float64)
    entropy = -_plogp(weights).sum(-1)
    return np.clip(entropy, 0.0, np.log2(max(weights.shape[-1], 1))) + 0.0  # + 0.0 turns -0.0 into 0.0


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence between matching rows of two attention maps, in bits (0 to 1).

    Args:
        p, q: ``(..., query, key)`` of the same shape.

    Returns:
        ``(..., query)``: ``(KL(p || m) + KL(q || m)) / 2`` with ``m = (p + q) / 2`` (Lin 1991).

    Raises:
        ValueError: if the shapes differ.
    """
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"shapes differ: {p.shape} and {q.shape}")
    m = (p + q) / 2
    divergence = (_plogp(p, m).sum(-1) + _plogp(q, m).sum(-1)) / 2
    return np.clip(divergence, 0.0, 1.0) + 0.0  # round-off gives -8e-17 for equal-in-theory rows (C23)


def max_abs_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Largest ``|a - b|`` over all entries, computed in float64."""
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())


def merge_word_pieces(weights: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Attention between words instead of WordPiece pieces (Clark et al. 2019, "What does BERT look at?").

    Attention *to* a word is the sum over its pieces; attention *from* a word is the mean over its
    pieces, so rows still sum to 1 (case C10). Every token must belong to a group: [CLS] and [SEP]
    get groups of their own (see :func:`attention_viz.analysis.views.word_groups`), never dropped
    (case C22).

    Args:
        weights: ``(..., t, t)``.
        groups: ``(t,)`` int, the group (0 to ``w - 1``) each token belongs to; every group from 0 to
            ``w - 1`` has at least one token.

    Returns:
        ``(..., w, w)``.

    Raises:
        ValueError: if ``groups`` does not cover every token with a group from 0 to ``w - 1`` (for
            example ``-1`` for special tokens, as ``Encoding.word_ids`` has), leaves a group empty,
            or does not match the number of tokens.
    """
    groups = np.asarray(groups)
    weights = np.asarray(weights, dtype=np.float64)
    if groups.ndim != 1 or groups.shape[0] != weights.shape[-1]:
        raise ValueError(f"groups must be one group per token ({weights.shape[-1]}), got shape {groups.shape}")
    if groups.size == 0 or groups.min() < 0:
        raise ValueError("every token needs a group: give special tokens ([CLS], [SEP]) a group of their own")
    counts = np.bincount(groups)
    if (counts == 0).any():
        raise ValueError(f"groups must be numbered 0 to w - 1 without gaps; group {int(np.argmin(counts))} is empty")
    onehot = (groups[:, None] == np.arange(counts.size)[None, :]).astype(np.float64)  # (t, w)
    to_words = weights @ onehot  # (..., t, w)
    summed = np.swapaxes(onehot, 0, 1) @ to_words  # (..., w, w)
    return summed / counts[:, None]


def drop_tokens(weights: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Keep only some tokens (for example, hide [CLS]/[SEP]) and renormalise each row to sum to 1.

    The result is a conditional distribution ("attention among the kept tokens"), not the model's raw
    attention: say so wherever it is shown (case C11).

    Args:
        weights: ``(..., t, t)``.
        keep: ``(t,)`` bool.

    Returns:
        ``(..., k, k)`` with ``k = keep.sum()``; a row whose kept weights are all 0 stays 0.
    """
    keep = np.asarray(keep, dtype=bool)
    kept = np.asarray(weights, dtype=np.float64)[..., keep, :][..., keep]  # (..., k, k)
    totals = kept.sum(-1, keepdims=True)
    return np.divide(kept, totals, out=np.zeros_like(kept), where=totals > 0)


def attention_rollout(weights: np.ndarray, up_to_layer: int | None = None) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

    Heads are averaged; each layer's map gets the residual connection, ``(A + I) / 2``, rows are
    renormalised, and layers are multiplied with later layers on the left:
    ``R = Â_l ··· Â_1 Â_0`` (case C12).

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
