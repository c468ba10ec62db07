"""Measures of attention maps: attention entropy, Jensen-Shannon divergence, largest difference.

Every function takes attention as numpy arrays whose last two axes are ``(query, key)`` with rows that
sum to 1, and leaves leading axes (layers, heads) alone unless it says otherwise. Entropies and
divergences are in bits (log base 2). Results are clamped to their documented range, where round-off
can cross a bound: ``0 <= entropy <= log2(keys)``, ``0 <= JS <= 1``, never ``-0.0``.
"""

from __future__ import annotations

import numpy as np


def _plogp(p: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
    """``p * log2(p / q)`` elementwise (``q`` = 1 if omitted), with ``0 * log 0 = 0``."""
    positive = p > 0
    # The same numbers as p * log2(p / q) where p > 0, without the temporaries of np.where (which took a third
    # of the corpus statistics' time).
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
    return np.clip(divergence, 0.0, 1.0) + 0.0  # round-off gives -8e-17 for equal-in-theory rows


_BLOCK = 1 << 20  # entries per block: 8 MB of float64 at a time


def max_abs_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Largest ``|a - b|`` over all entries (broadcast together), computed in float64; NaN if any entry is NaN.

    Works through blocks of about a million entries: two (layers, heads, query, key) results at 512 tokens
    are large, and converting them whole to float64 would hold several times their size at once.

    Raises:
        ValueError: if the arrays are empty or do not broadcast.
    """
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if a.size == 0:
        raise ValueError("max_abs_difference of empty arrays")
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    worst = [
        np.abs(flat_a[i : i + _BLOCK].astype(np.float64) - flat_b[i : i + _BLOCK].astype(np.float64)).max()
        for i in range(0, flat_a.size, _BLOCK)
    ]
    return float(np.max(worst))


def head_agreement(first: np.ndarray, second: np.ndarray) -> dict[str, np.ndarray]:
    """How far two maps of each head agree, one layer's heads at a time (float64 copies of every layer's at 512
    tokens would be gigabytes).

    Args:
        first, second: ``(heads, query, key)`` attention of the same tokens (e.g. pretrained and from scratch);
            rows sum to 1.

    Returns:
        float64 ``(heads,)`` each: ``largest`` (``max |second - first|``, computed in float64; NaN if any entry
        is), ``js`` (the rows' mean Jensen-Shannon divergence, bits), ``entropy_first`` and ``entropy_second``
        (the mean row entropy of each, bits).
    """
    return {
        "largest": np.abs(np.asarray(second, dtype=np.float64) - first).max(axis=(-2, -1)),
        "js": js_divergence(second, first).mean(-1),
        "entropy_first": row_entropy(first).mean(-1),
        "entropy_second": row_entropy(second).mean(-1),
    }
