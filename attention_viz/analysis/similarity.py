"""How alike the heads attend: Jensen-Shannon divergence between every pair of heads, laid out in 2-D.

Clark et al. 2019 ("What Does BERT Look At?", section 6) compute, for each pair of heads, the mean
over tokens of the Jensen-Shannon divergence between the two heads' attention distributions, and
draw the heads with multidimensional scaling of that distance.
"""

from __future__ import annotations

import numpy as np

from attention_viz.analysis import measures


def head_divergence_sums(weights: np.ndarray) -> tuple[np.ndarray, int]:
    """Sum over query tokens of the JS divergence between every pair of heads, for one text.

    Args:
        weights: ``(layers, heads, t, t)`` attention of one text (no padding).

    Returns:
        ``(sums, queries)``: ``sums`` ``(n, n)`` with ``n = layers * heads`` (head ``(l, h)`` at
        index ``l * heads + h``), in bits; ``queries`` = ``t``. Add over texts for a corpus.
    """
    weights = np.asarray(weights, dtype=np.float64)
    flat = weights.reshape(-1, *weights.shape[-2:])  # (n, t, t)
    n = flat.shape[0]
    sums = np.zeros((n, n))
    for a in range(n):
        divergence = measures.js_divergence(np.broadcast_to(flat[a], flat[a:].shape), flat[a:])  # (n - a, t)
        sums[a, a:] = np.clip(divergence, 0.0, 1.0).sum(-1)  # clamped: round-off can go below 0
        sums[a:, a] = sums[a, a:]
    np.fill_diagonal(sums, 0.0)
    return sums, flat.shape[-1]


def head_divergence(weights: np.ndarray) -> np.ndarray:
    """Mean over query tokens of the JS divergence between every pair of heads, ``(n, n)`` in bits (0 to 1)."""
    sums, queries = head_divergence_sums(weights)
    return sums / queries


def mds_layout(divergence: np.ndarray, seed: int = 0) -> np.ndarray:
    """2-D positions whose distances approximate a divergence matrix (metric MDS, scikit-learn).

    Args:
        divergence: ``(n, n)`` symmetric, zero diagonal.
        seed: the layout's random start (the result is reproducible for a seed).

    Returns:
        ``(n, 2)`` coordinates; one head (``n = 1``) sits at the origin.
    """
    divergence = np.asarray(divergence, dtype=np.float64)
    if len(divergence) < 2:
        return np.zeros((len(divergence), 2))
    from sklearn.manifold import MDS  # imported here: only this view needs scikit-learn

    divergence = np.clip((divergence + divergence.T) / 2, 0.0, None)
    np.fill_diagonal(divergence, 0.0)
    # scikit-learn 1.8+ names the precomputed dissimilarity `metric` (`dissimilarity` is deprecated).
    mds = MDS(n_components=2, metric="precomputed", init="random", n_init=4, random_state=seed)
    return mds.fit_transform(divergence)
