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
    ratio = np.where(positive, p, 1.0) / (1.0 if q is None else np.where(positive, q, 1.0))
    return np.where(positive, p * np.log2(ratio), 0.0)


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
    pieces, so rows still sum to 1 (case C10).

    Args:
        weights: ``(..., t, t)``.
        groups: ``(t,)`` int, the word (0 to ``w - 1``, in order) each piece belongs to.

    Returns:
        ``(..., w, w)``.
    """
    groups = np.asarray(groups)
    onehot = (groups[:, None] == np.arange(groups.max() + 1)[None, :]).astype(np.float64)  # (t, w)
    to_words = np.asarray(weights, dtype=np.float64) @ onehot  # (..., t, w)
    summed = np.swapaxes(onehot, 0, 1) @ to_words  # (..., w, w)
    return summed / onehot.sum(0)[:, None]


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


def attention_rollout(weights: np.ndarray) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

    Heads are averaged; each layer's map gets the residual connection, ``(A + I) / 2``, rows are
    renormalised, and layers are multiplied with later layers on the left:
    ``R = Â_L ··· Â_2 Â_1`` (case C12).

    Args:
        weights: ``(layers, heads, t, t)`` or head-averaged ``(layers, t, t)``.

    Returns:
        ``(t, t)``: row ``i`` is how much of the last layer's token ``i`` flows from each input token;
        rows sum to 1.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 4:
        weights = weights.mean(1)  # (L, t, t)
    identity = np.eye(weights.shape[-1])
    rollout = identity
    for layer in weights:
        residual = (layer + identity) / 2
        residual = residual / residual.sum(-1, keepdims=True)
        rollout = residual @ rollout
    return rollout
