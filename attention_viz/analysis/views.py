"""View options every heatmap shares: words instead of pieces, [CLS]/[SEP] hidden, one block of a pair.

:func:`apply_view` turns a ``(..., t, t)`` attention array and its
:class:`~attention_viz.extraction.Encoding` into the matrix a view draws, with its query (row) and key
(column) labels. The order is fixed: merge pieces into words (Clark et al. 2019), hide
[CLS]/[SEP] and renormalise the rows, then cut out the block. A block of a pair is a slice
of the attention, not renormalised: its rows sum to the share that goes to that sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Block id -> (query segment, key segment); None means both sentences.
BLOCKS = {"all": (None, None), "AA": (0, 0), "AB": (0, 1), "BA": (1, 0), "BB": (1, 1)}


@dataclass(frozen=True)
class ViewOptions:
    """The three view toggles.

    Attributes:
        word_level: merge WordPiece pieces into words.
        hide_special: drop [CLS]/[SEP] and renormalise each row.
        block: one of :data:`BLOCKS` ("all", "AA", "AB", "BA", "BB"); only pairs have blocks other than "all".
    """

    word_level: bool = False
    hide_special: bool = False
    block: str = "all"


@dataclass(frozen=True)
class ViewMatrix:
    """What a view draws.

    Attributes:
        matrix: ``(..., q, k)`` float64; ``q != k`` for the A→B and B→A blocks.
        query_labels: ``q`` row labels (words as typed at word level).
        key_labels: ``k`` column labels.
        renormalised: whether rows were renormalised after hiding tokens (the view must say so).
    """

    matrix: np.ndarray
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    renormalised: bool


def word_groups(encoding) -> tuple[np.ndarray, tuple[str, ...], np.ndarray, np.ndarray]:
    """Group the tokens of an encoding into words; each special token is a group of its own.

    Args:
        encoding: an :class:`~attention_viz.extraction.Encoding`.

    Returns:
        ``(groups, labels, special, segments)``: ``groups`` ``(t,)`` the group (0 to ``w - 1``, in
        token order) of each token; ``labels`` the ``w`` words as typed (``Encoding.words``; for an
        encoding without them, the pieces' labels joined with ``##`` dropped); ``special`` and
        ``segments`` ``(w,)`` of each group.
    """
    groups, labels, special, segments = [], [], [], []
    previous, words = None, getattr(encoding, "words", ())
    for i, (word, label) in enumerate(zip(encoding.word_ids, encoding.labels, strict=True)):
        key = ("special", i) if word < 0 else ("word", int(word))
        if key != previous:
            typed = words[word] if 0 <= word < len(words) else ""
            labels.append(typed or label)  # the word as typed: each character once (byte pieces share one)
            special.append(bool(encoding.special[i]))
            segments.append(int(encoding.segments[i]))
        elif not words:
            labels[-1] += label.removeprefix("##")
        groups.append(len(labels) - 1)
        previous = key
    return np.asarray(groups), tuple(labels), np.asarray(special), np.asarray(segments)


def apply_view(weights: np.ndarray, encoding, options: ViewOptions, renormalise: bool = True) -> ViewMatrix:
    """Apply the view toggles to attention over an encoding's tokens.

    Args:
        weights: ``(..., t, t)`` attention (one head, or leading layer/head axes); rows sum to 1.
        encoding: the encoding the ``t`` tokens come from.
        options: the toggles; a block other than "all" on a single text is treated as "all".
        renormalise: with ``hide_special``, renormalise the kept rows to sum to 1 (for attention
            weights); False only drops the hidden tokens (for values that are not distributions, such
            as norm-based attention).

    Returns:
        :class:`ViewMatrix`.

    Raises:
        ValueError: for an unknown block, or ``weights`` whose last axes do not match the encoding.
    """
    if options.block not in BLOCKS:
        raise ValueError(f"unknown block {options.block!r}: choose one of {', '.join(BLOCKS)}")
    matrix = np.asarray(weights, dtype=np.float64)
    if matrix.shape[-2:] != (encoding.num_tokens, encoding.num_tokens):
        raise ValueError(f"weights end in {matrix.shape[-2:]}, the encoding has {encoding.num_tokens} tokens")
    labels, special, segments = tuple(encoding.labels), np.asarray(encoding.special), np.asarray(encoding.segments)
    if options.word_level:
        groups, labels, special, segments = word_groups(encoding)
        matrix = merge_word_pieces(matrix, groups)  # (..., w, w)
    if options.hide_special:
        keep = ~special
        # (..., k, k); attention rows are renormalised to sum to 1, other values only cut
        matrix = drop_tokens(matrix, keep) if renormalise else matrix[..., keep, :][..., keep]
        labels = tuple(label for label, s in zip(labels, special, strict=True) if not s)
        segments = segments[~special]
    query_segment, key_segment = BLOCKS[options.block] if encoding.is_pair else (None, None)
    rows = np.ones(len(labels), bool) if query_segment is None else segments == query_segment
    columns = np.ones(len(labels), bool) if key_segment is None else segments == key_segment
    matrix = matrix[..., rows, :][..., columns]  # (..., q, k)
    return ViewMatrix(
        matrix,
        tuple(label for label, r in zip(labels, rows, strict=True) if r),
        tuple(label for label, c in zip(labels, columns, strict=True) if c),
        options.hide_special and renormalise,
    )


def merge_word_pieces(weights: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Attention between words instead of WordPiece pieces (Clark et al. 2019, "What does BERT look at?").

     Attention *to* a word is the sum over its pieces; attention *from* a word is the mean over its
     pieces, so rows still sum to 1. Every token must belong to a group: [CLS] and [SEP]
     get groups of their own (see :func:`attention_viz.analysis.views.word_groups`), never dropped
    .

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
    attention: say so wherever it is shown.

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
