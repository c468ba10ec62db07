"""Minimal pairs: two sentences that differ in a word or two, and which heads change their attention most.

The two tokenisations are aligned token by token with :class:`difflib.SequenceMatcher` (the standard
library's longest-matching-block alignment): equal runs pair up, and a replaced run pairs up one to one
when both sides have the same number of tokens ("big" → "small"). Tokens of a run that differs in
length (one word split into more pieces than the other) have no counterpart; the result says which.

For a query token with a counterpart, its row in A and its row in B are compared over the keys that
pair up; the attention each row gives to keys without a counterpart is pooled into one more bin, so
both stay distributions over the same outcomes. Heads are ranked by the Jensen-Shannon divergence
(bits, Lin 1991) or the total variation distance ``½ Σ |p − q|`` between those two rows.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attention_viz.analysis import measures
from attention_viz.extraction.tokens import InputError

MEASURES = ("js", "tv")  # Jensen-Shannon divergence (bits), total variation
RANKED_HEADS = 12  # heads a ranking shows, those whose attention changed most first
# The classic pairs: Winograd coreference (Levesque et al. 2012) and subject-verb agreement across an
# attractor (Linzen et al. 2016).
PRESETS = {
    "winograd": (
        "The trophy didn't fit in the suitcase because it was too big.",
        "The trophy didn't fit in the suitcase because it was too small.",
    ),
    "agreement": ("The keys to the cabinet are", "The keys to the cabinet is"),
}
PRESET_QUERIES = {"winograd": "it", "agreement": "keys"}  # the token whose attention each pair is about


class NothingAlignedError(InputError):
    """No token of one sentence has a counterpart in the other (``"Hi"`` / ``"Bye now"`` on GPT-2, which adds
    no special tokens to align on): there is no token whose attention could be compared. Code
    ``nothing_aligned``."""

    def __init__(self) -> None:
        super().__init__(
            "no token of the first sentence aligns with a token of the second: give two sentences that differ "
            "in a word or two",
            "nothing_aligned",
        )


def align(tokens_a, tokens_b) -> list[tuple[int | None, int | None]]:
    """Token-by-token alignment of two tokenisations: ``(i, j)`` pairs in order, ``(i, None)`` or
    ``(None, j)`` for a token with no counterpart (see the module docstring)."""
    pairs: list[tuple[int | None, int | None]] = []
    matcher = difflib.SequenceMatcher(a=list(tokens_a), b=list(tokens_b), autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and a1 - a0 == b1 - b0):
            pairs.extend(zip(range(a0, a1), range(b0, b1), strict=True))
        else:
            pairs.extend((i, None) for i in range(a0, a1))
            pairs.extend((None, j) for j in range(b0, b1))
    return pairs


def matched(pairs) -> tuple[np.ndarray, np.ndarray]:
    """The positions in A and in B of the tokens that pair up, ``(m,)`` each, in order."""
    both = [(i, j) for i, j in pairs if i is not None and j is not None]
    return np.array([i for i, _ in both], dtype=np.int64), np.array([j for _, j in both], dtype=np.int64)


def changed(tokens_a, tokens_b, pairs) -> tuple[list[int], list[int]]:
    """Positions in A and in B of tokens that differ: substituted, or without a counterpart."""
    in_a = [i for i, j in pairs if i is not None and (j is None or tokens_a[i] != tokens_b[j])]
    in_b = [j for i, j in pairs if j is not None and (i is None or tokens_a[i] != tokens_b[j])]
    return in_a, in_b


def comparable_rows(weights_a, weights_b, pairs, query_a: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of query ``query_a`` (in A) and of its counterpart in B, over the paired keys plus one bin
    for the keys without a counterpart: ``(L, h, m + 1)`` each, float64, each summing to 1.

    Args:
        weights_a: ``(L, h, t_a, t_a)``; weights_b: ``(L, h, t_b, t_b)``.
        pairs: from :func:`align`.
        query_a: a position in A that has a counterpart.

    Raises:
        ValueError: if ``query_a`` has no counterpart in B.
    """
    counterpart = dict((i, j) for i, j in pairs if i is not None)
    query_b = counterpart.get(query_a)
    if query_b is None:
        raise ValueError(f"token {query_a} of the first sentence has no counterpart in the second")
    keys_a, keys_b = matched(pairs)
    rows = []
    for weights, query, keys in ((weights_a, query_a, keys_a), (weights_b, query_b, keys_b)):
        row = np.asarray(weights, dtype=np.float64)[:, :, query, :]  # (L, h, t)
        paired = row[..., keys]  # (L, h, m)
        rest = np.clip(1.0 - paired.sum(-1, keepdims=True), 0.0, 1.0)  # (L, h, 1): keys with no counterpart
        rows.append(np.concatenate([paired, rest], axis=-1))
    return rows[0], rows[1]


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``½ Σ |p − q|`` over the last axis (0 to 1)."""
    return np.clip(0.5 * np.abs(np.asarray(p, np.float64) - q).sum(-1), 0.0, 1.0)


def head_ranking(weights_a, weights_b, pairs, query_a: int, by: str = "js") -> pd.DataFrame:
    """Every head, the one whose row for ``query_a`` changes most first.

    Returns:
        DataFrame with ``layer``, ``head``, ``js`` (bits) and ``tv``, sorted by ``by`` (descending, ties
        by layer and head).

    Raises:
        ValueError: an unknown measure, or a query without a counterpart.
    """
    if by not in MEASURES:
        raise ValueError(f"unknown measure {by!r}: choose one of {', '.join(MEASURES)}")
    p, q = comparable_rows(weights_a, weights_b, pairs, query_a)  # (L, h, m + 1)
    layers, heads = p.shape[:2]
    frame = pd.DataFrame(
        {
            "layer": np.repeat(np.arange(layers), heads),
            "head": np.tile(np.arange(heads), layers),
            "js": measures.js_divergence(p[..., None, :], q[..., None, :])[..., 0].reshape(-1),  # (L * h,)
            "tv": total_variation(p, q).reshape(-1),
        }
    )
    return frame.sort_values([by, "layer", "head"], ascending=[False, True, True], kind="stable").reset_index(drop=True)


def difference_map(weights_a, weights_b, pairs, layer: int, head: int) -> np.ndarray:
    """``B − A`` of one head over the queries and keys that pair up: ``(m, m)`` float64 (query, key)."""
    rows_a, rows_b = matched(pairs)
    a = np.asarray(weights_a[layer, head], dtype=np.float64)[np.ix_(rows_a, rows_a)]
    b = np.asarray(weights_b[layer, head], dtype=np.float64)[np.ix_(rows_b, rows_b)]
    return b - a


@dataclass(frozen=True)
class MinimalPair:
    """Both sentences' attention and their alignment.

    Attributes:
        a, b: :class:`~attention_viz.extraction.AttentionResult` of each sentence (pretrained model).
        pairs: from :func:`align` on their tokens.
        changed_a, changed_b: positions of the tokens that differ (see :func:`changed`).
        one_to_one: every token has a counterpart (the sentences tokenise to runs of the same lengths).
    """

    a: object
    b: object
    pairs: list
    changed_a: list
    changed_b: list
    one_to_one: bool


def minimal_pair(loaded, text_a: str, text_b: str, limits=None) -> MinimalPair:
    """Extract both sentences with the pretrained model and align their tokens.

    Args:
        loaded: the model (:func:`~attention_viz.models.loading.load_model`).
        text_a, text_b: the two sentences.
        limits: characters and tokens accepted (:class:`~attention_viz.settings.Limits`; default its defaults).

    Raises:
        InputError: an empty or too long sentence.
        NothingAlignedError: an :class:`InputError` too: no token has a counterpart.
    """
    from attention_viz.extraction import extract

    a, b = extract(loaded, text_a, limits=limits), extract(loaded, text_b, limits=limits)
    pairs = align(a.encoding.tokens, b.encoding.tokens)
    if not any(i is not None and j is not None for i, j in pairs):
        raise NothingAlignedError()
    in_a, in_b = changed(a.encoding.tokens, b.encoding.tokens, pairs)
    one_to_one = all(i is not None and j is not None for i, j in pairs)
    return MinimalPair(a, b, pairs, in_a, in_b, one_to_one)
