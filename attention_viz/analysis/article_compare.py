"""The seed article's layer next to a correct one, with the article's differences switched on one at a time.

Both layers get the same input (BERT's hidden states entering a layer) and weights drawn from the same
seed: the article's layer has no pretrained weights, so neither uses the model's. Starting from the
correct :class:`~attention_viz.models.attention.MultiHeadSelfAttention`, each of the article's choices (see
:class:`~attention_viz.models.article.ArticleSelfAttention`) can be applied alone:
with none the result is the correct layer's; with ``shared`` and ``embed_scaling`` it is the article's
layer as designed; adding ``unprojected`` gives the article's code as printed.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from torch import nn

from attention_viz.models.article import ArticleSelfAttention
from attention_viz.models.attention import MultiHeadSelfAttention, scaled_dot_product_attention

# The article's choices that change the attention weights, in the order the page lists them.
DIFFERENCES = ("shared", "embed_scaling", "unprojected")
# Query/key/value weights are normal with std WEIGHT_GAIN / sqrt(fan_in). torch's default init gives
# nearly uniform attention on BERT's hidden states (mean row entropy 3.95 of 4 bits on the 16-token
# example at layer 3), which hides every difference; gain 3 gives heads with structure (about 2 bits).
WEIGHT_GAIN = 3.0


def seeded_layers(
    hidden_size: int, num_heads: int, seed: int, gain: float = WEIGHT_GAIN
) -> tuple[MultiHeadSelfAttention, ArticleSelfAttention]:
    """A correct layer and the article's layer with query/key/value weights drawn from ``seed``.

    Both are built under the same seed; then the correct layer's ``query``, ``key``, ``value`` and the
    article's ``queries``, ``keys``, ``values`` are drawn in that order from one generator seeded with
    ``seed``: normal, std ``gain / sqrt(fan_in)``, biases 0. torch's global random state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        correct = MultiHeadSelfAttention(hidden_size, num_heads).eval()
        torch.manual_seed(seed)
        article = ArticleSelfAttention(hidden_size, num_heads).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for linear in (correct.query, correct.key, correct.value, article.queries, article.keys, article.values):
            nn.init.normal_(linear.weight, 0.0, gain / linear.in_features**0.5, generator=generator)
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)
    return correct, article


def variant_weights(
    hidden: np.ndarray,
    correct: MultiHeadSelfAttention,
    article: ArticleSelfAttention,
    differences: Iterable[str] = (),
) -> np.ndarray:
    """Attention of the correct layer with some of the article's differences applied.

    Args:
        hidden: ``(t, hidden)`` the input of every position (query, key and value all come from it).
        correct, article: from :func:`seeded_layers`.
        differences: any of :data:`DIFFERENCES`: ``shared`` (one ``Linear(head_dim, head_dim)`` without
            bias per Q/K/V, applied to each head's slice after the split, shared by all heads),
            ``embed_scaling`` (scores times ``embed_size ** -0.5`` instead of ``head_dim ** -0.5``),
            ``unprojected`` (no projection at all: the printed code never calls its ``Linear`` layers).

    Returns:
        float32 ``(heads, query, key)``; rows sum to 1.

    Raises:
        ValueError: for an unknown difference.
    """
    differences = set(differences)
    unknown = differences - set(DIFFERENCES)
    if unknown:
        raise ValueError(f"unknown differences {sorted(unknown)}: choose from {', '.join(DIFFERENCES)}")
    h, d = correct.num_heads, correct.head_dim
    x = torch.from_numpy(np.array(hidden, dtype=np.float32))[None]  # (1, t, hidden)
    t = x.shape[1]

    def split(y: torch.Tensor) -> torch.Tensor:
        return y.view(1, t, h, d).transpose(1, 2)  # (1, h, t, d)

    with torch.inference_mode():
        if "unprojected" in differences:
            q = k = v = split(x)
        elif "shared" in differences:
            q, k, v = article.queries(split(x)), article.keys(split(x)), article.values(split(x))  # (1, h, t, d)
        else:
            q, k, v = split(correct.query(x)), split(correct.key(x)), split(correct.value(x))  # (1, h, t, d)
        scaling = (h * d) ** -0.5 if "embed_scaling" in differences else d**-0.5
        _, weights = scaled_dot_product_attention(q, k, v, None, scaling)  # (1, h, t, t)
    return weights[0].numpy()


def article_maps(
    hidden: np.ndarray, num_heads: int, seed: int, differences: Iterable[str] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """The correct layer's attention and the same layer with some of the article's differences, on one input.

    Args:
        hidden: ``(t, hidden)`` the input of a layer (e.g. BERT's hidden states entering it).
        num_heads: heads of both layers.
        seed: draws both layers' weights (:func:`seeded_layers`).
        differences: any of :data:`DIFFERENCES` (see :func:`variant_weights`).

    Returns:
        ``(correct, with_differences)``: float32 ``(heads, query, key)`` each; rows sum to 1.

    Raises:
        ValueError: for an unknown difference, or a hidden size that ``num_heads`` does not divide.
    """
    correct, article = seeded_layers(np.shape(hidden)[-1], num_heads, seed)
    return variant_weights(hidden, correct, article), variant_weights(hidden, correct, article, differences)
