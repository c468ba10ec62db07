"""Per-head statistics of attention maps, after Clark et al. 2019, "What Does BERT Look At?".

Every statistic is a mean over query tokens of something read off one row of a head's attention:
the row's entropy, the share of its attention on a kind of key, or the expected distance to the key.
Over a corpus the sums and the numbers of queries are added text by text, so each query token counts
once (Clark et al. average over all tokens of their corpus the same way). All values are computed in
float64; entropies are in bits, distances in tokens.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attention_viz.analysis import measures

# Column name -> what it measures; the order of the table's columns.
STATISTICS = {
    "entropy": "mean attention entropy of a query's row (bits)",
    "uniform_entropy": "entropy of uniform attention over the keys a query sees, log2(keys) (bits)",
    "cls": "share of attention on [CLS]",
    "sep": "share of attention on [SEP]",
    "punctuation": "share of attention on punctuation pieces",
    "self": "share of attention on the query token itself",
    "previous": "share of attention on the previous token (queries that have one)",
    "next": "share of attention on the next token (queries that have one)",
    "distance": "mean attention distance |query − key| (tokens)",
    "a_to_b": "share of sentence A's attention on sentence B (pairs only)",
    "b_to_a": "share of sentence B's attention on sentence A (pairs only)",
}
# A head gets a tag when its share is above this (Clark et al. call such heads "attending broadly" or
# to a position when most of the attention goes there); "broad" when its entropy is at least
# BROAD_FRACTION of uniform attention's.
TAG_SHARE = 0.5
BROAD_FRACTION = 0.8
TAG_RULES = {
    "previous-token": "previous",
    "next-token": "next",
    "self": "self",
    "[CLS]": "cls",
    "[SEP]": "sep",
    "punctuation": "punctuation",
}
# No A→B / B→A tag: [CLS] and the first [SEP] belong to sentence A, so most heads send more than half
# of B's attention "to A" (65 of 72 heads over the bundled corpus) through those two tokens alone.


def is_punctuation(token: str) -> bool:
    """Whether a token is punctuation: every character in a Unicode ``P*`` category, after the
    tokenizer's marker (WordPiece ``##``, byte-level BPE ``Ġ``, SentencePiece ``▁``)."""
    token = token.removeprefix("##").removeprefix("Ġ").removeprefix("▁")
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


@dataclass(frozen=True)
class TokenKinds:
    """What each of ``t`` tokens is, for the statistics.

    Attributes:
        cls: ``(t,)`` bool, the [CLS] token.
        sep: ``(t,)`` bool, [SEP] tokens.
        punctuation: ``(t,)`` bool, punctuation pieces (see :func:`is_punctuation`).
        segments: ``(t,)`` int, 0 for sentence A and 1 for B (specials as in ``Encoding.segments``).
    """

    cls: np.ndarray
    sep: np.ndarray
    punctuation: np.ndarray
    segments: np.ndarray

    @classmethod
    def from_tokens(cls, tokens, special, segments, cls_token: str = "[CLS]", sep_token: str = "[SEP]") -> TokenKinds:
        """Kinds from WordPiece tokens, the special-token flags and the segment ids."""
        tokens = list(tokens)
        special = np.asarray(special, dtype=bool)
        return cls(
            cls=special & np.array([tok == cls_token for tok in tokens], dtype=bool),
            sep=special & np.array([tok == sep_token for tok in tokens], dtype=bool),
            punctuation=~special & np.array([is_punctuation(tok) for tok in tokens], dtype=bool),
            segments=np.asarray(segments, dtype=np.int64),
        )

    @classmethod
    def from_encoding(cls, encoding, cls_token: str = "[CLS]", sep_token: str = "[SEP]") -> TokenKinds:
        """Kinds of an :class:`attention_viz.extraction.Encoding`."""
        return cls.from_tokens(encoding.tokens, encoding.special, encoding.segments, cls_token, sep_token)


@dataclass
class StatisticSums:
    """Sums over query tokens of each statistic, and how many queries each sum has, per head.

    Attributes:
        sums: ``{statistic: (layers, heads) float64}``.
        counts: ``{statistic: int}``: queries that went into each sum (the same for every head).
    """

    sums: dict[str, np.ndarray]
    counts: dict[str, int]

    def __add__(self, other: StatisticSums) -> StatisticSums:
        return StatisticSums(
            {k: self.sums[k] + other.sums[k] for k in self.sums},
            {k: self.counts[k] + other.counts[k] for k in self.counts},
        )

    def means(self) -> dict[str, np.ndarray]:
        """``{statistic: (layers, heads)}``, NaN where no query counted (e.g. ``a_to_b`` without a pair)."""
        return {
            k: self.sums[k] / self.counts[k] if self.counts[k] else np.full_like(v, np.nan)
            for k, v in self.sums.items()
        }


# Statistics that need attention to later tokens: not applicable to a causal model (statistic_sums counts none).
CAUSAL_NOT_APPLICABLE = ("next", "a_to_b")


def keys_seen(t: int, layers: int, causal: bool = False, windows: tuple[int | None, ...] = ()) -> np.ndarray:
    """How many keys each query may attend to, ``(layers, t)``: every token of the text; for a causal model
    the query and the ``i`` tokens before it (``i + 1`` for query ``i``, from 0); on a layer with a sliding
    window ``w`` (Mistral, Gemma 2's local layers) at most ``w`` of them, itself included.

    Args:
        t: the text's tokens; layers: the model's layers.
        causal: the model is a decoder.
        windows: each layer's sliding window, ``None`` where it sees every earlier key; empty for none
            (:attr:`attention_viz.models.loading.ModelInfo.windows`). Used only when ``causal``.

    Raises:
        ValueError: ``windows`` neither empty nor one per layer.
    """
    if windows and len(windows) != layers:
        raise ValueError(f"windows must be one per layer ({layers}), got {len(windows)}")
    if not causal:
        return np.full((layers, t), t)
    seen = np.tile(np.arange(1, t + 1), (layers, 1))
    for layer, window in enumerate(windows):
        if window is not None:
            seen[layer] = np.minimum(seen[layer], window)
    return seen


def statistic_sums(
    weights: np.ndarray, kinds: TokenKinds, causal: bool = False, windows: tuple[int | None, ...] = ()
) -> StatisticSums:
    """Per-head sums over query tokens of every statistic in :data:`STATISTICS` for one text.

    A statistic that does not apply counts no query, so its mean is NaN ("not applicable"), never 0:
    ``cls``/``sep`` when the text has no such token (GPT-2 adds none); ``a_to_b``/``b_to_a`` without a
    pair; and for a causal model (``causal``) ``next`` and ``a_to_b``, which would need attention to
    later tokens. ``uniform_entropy`` is that of uniform attention over the keys each query may see
    (:func:`keys_seen`): for a causal model the earlier tokens, within a layer's sliding window.

    Args:
        weights: ``(layers, heads, t, t)`` attention of one text (no padding); rows sum to 1.
        kinds: what each of the ``t`` tokens is.
        causal: the model is a decoder: each token attends only to itself and earlier tokens.
        windows: each layer's sliding window for a causal model (see :func:`keys_seen`); empty for none.

    Returns:
        :class:`StatisticSums`; add those of several texts with ``+`` for a corpus.

    Raises:
        ValueError: if ``weights`` is not ``(layers, heads, t, t)`` with ``t`` matching ``kinds``, or
            ``windows`` is not one per layer.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] != kinds.cls.shape[0]:
        raise ValueError(f"weights must be (layers, heads, t, t) with t = {kinds.cls.shape[0]}, got {weights.shape}")
    t = weights.shape[-1]
    positions = np.arange(t)
    diagonal = np.diagonal(weights, axis1=-2, axis2=-1)  # (L, h, t)
    in_a, in_b = kinds.segments == 0, kinds.segments == 1
    sums = {
        "entropy": measures.row_entropy(weights).sum(-1),  # (L, h)
        "uniform_entropy": np.broadcast_to(
            np.log2(keys_seen(t, weights.shape[0], causal, windows)).sum(-1)[:, None], weights.shape[:2]
        ).copy(),
        "cls": weights[..., kinds.cls].sum((-1, -2)),
        "sep": weights[..., kinds.sep].sum((-1, -2)),
        "punctuation": weights[..., kinds.punctuation].sum((-1, -2)),
        "self": diagonal.sum(-1),
        "previous": np.diagonal(weights, offset=-1, axis1=-2, axis2=-1).sum(-1),  # entries (i, i - 1)
        "next": np.diagonal(weights, offset=1, axis1=-2, axis2=-1).sum(-1),  # entries (i, i + 1)
        "distance": (weights * np.abs(positions[:, None] - positions[None, :])).sum((-1, -2)),
        "a_to_b": weights[..., in_a, :][..., in_b].sum((-1, -2)) if in_b.any() else np.zeros(weights.shape[:2]),
        "b_to_a": weights[..., in_b, :][..., in_a].sum((-1, -2)) if in_b.any() else np.zeros(weights.shape[:2]),
    }
    pair = bool(in_b.any())
    counts = dict.fromkeys(sums, t)
    counts.update(previous=t - 1, next=t - 1, a_to_b=int(in_a.sum()) if pair else 0, b_to_a=int(in_b.sum()))
    counts.update(cls=t if kinds.cls.any() else 0, sep=t if kinds.sep.any() else 0)
    if causal:
        counts.update(dict.fromkeys(CAUSAL_NOT_APPLICABLE, 0))
    return StatisticSums(sums, counts)


def statistics_frame(sums: StatisticSums) -> pd.DataFrame:
    """One row per head: ``layer``, ``head``, every statistic's mean and the ``tags``.

    Args:
        sums: from :func:`statistic_sums` (summed over a corpus with ``+``).

    Returns:
        DataFrame with ``layers × heads`` rows, ordered by layer then head (both from 0).
    """
    means = sums.means()
    layers, heads = next(iter(means.values())).shape
    frame = pd.DataFrame(
        {"layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers)}
        | {name: means[name].reshape(-1) for name in STATISTICS}  # (L * h,), layer-major
    )
    frame["tags"] = tag_heads(frame)
    return frame


def head_statistics(
    weights: np.ndarray, kinds: TokenKinds, causal: bool = False, windows: tuple[int | None, ...] = ()
) -> pd.DataFrame:
    """Per-head statistics of one text: :func:`statistic_sums` then :func:`statistics_frame`."""
    return statistics_frame(statistic_sums(weights, kinds, causal, windows))


def tag_heads(frame: pd.DataFrame) -> pd.Series:
    """Tags for each head of a statistics table, by simple rules (after Clark et al. 2019, section 3).

    A head is tagged "previous-token", "next-token", "self", "[CLS]", "[SEP]" or "punctuation" when
    more than :data:`TAG_SHARE` of its attention goes there, and "broad" when its mean
    entropy is at least :data:`BROAD_FRACTION` of uniform attention's. A head may get several tags or
    none.

    Args:
        frame: a table with the columns of :data:`STATISTICS`.

    Returns:
        A string Series, tags joined by ", " ("" for none).
    """
    tags = [[] for _ in range(len(frame))]
    for tag, column in TAG_RULES.items():
        for i in np.flatnonzero(frame[column].fillna(0).to_numpy() > TAG_SHARE):
            tags[i].append(tag)
    broad = frame["entropy"].to_numpy() >= BROAD_FRACTION * frame["uniform_entropy"].to_numpy()
    for i in np.flatnonzero(broad):
        tags[i].append("broad")
    return pd.Series([", ".join(t) for t in tags], index=frame.index, dtype=str)


def statistic_grid(frame: pd.DataFrame, column: str) -> np.ndarray:
    """One column of a statistics table as a ``(layers, heads)`` array (for a heatmap)."""
    layers, heads = int(frame["layer"].max()) + 1, int(frame["head"].max()) + 1
    grid = np.full((layers, heads), np.nan)
    grid[frame["layer"].to_numpy(), frame["head"].to_numpy()] = frame[column].to_numpy(dtype=np.float64)
    return grid


# The statistics of a map whose queries and keys are different sequences (an encoder–decoder's cross-attention):
# only those read off the keys; the ones that compare a query's and a key's position (self, previous, next,
# distance) or need a pair do not apply.
CROSS_STATISTICS = ("entropy", "uniform_entropy", "cls", "sep", "punctuation")


def cross_statistics(weights: np.ndarray, key_kinds: TokenKinds) -> pd.DataFrame:
    """Per-head statistics of cross-attention, the target's tokens (queries) attending to the source's (keys).

    Args:
        weights: ``(layers, heads, t, s)``: ``t`` target tokens, ``s`` source tokens; rows sum to 1.
        key_kinds: what each of the ``s`` source tokens is (``cls``: a start token such as BART's ``<s>``;
            ``sep``: the end token ``</s>``).

    Returns:
        DataFrame with ``layers × heads`` rows (layer-major): ``layer``, ``head`` and the means over the ``t``
        queries of :data:`CROSS_STATISTICS` (entropy in bits; ``uniform_entropy`` is ``log2(s)``; a share on a
        kind of source token the source lacks is NaN, not 0).

    Raises:
        ValueError: if ``weights`` is not 4-D with ``s`` matching ``key_kinds``.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 4 or weights.shape[-1] != key_kinds.cls.shape[0]:
        raise ValueError(
            f"weights must be (layers, heads, t, s) with s = {key_kinds.cls.shape[0]}, got {weights.shape}"
        )
    layers, heads, _, keys = weights.shape

    def share(mask: np.ndarray) -> np.ndarray:
        if not mask.any():
            return np.full((layers, heads), np.nan)
        return weights[..., mask].sum(-1).mean(-1)

    means = {
        "entropy": measures.row_entropy(weights).mean(-1),
        "uniform_entropy": np.full((layers, heads), np.log2(keys)),
        "cls": share(key_kinds.cls),
        "sep": share(key_kinds.sep),
        "punctuation": share(key_kinds.punctuation),
    }
    return pd.DataFrame(
        {"layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers)}
        | {name: means[name].reshape(-1) for name in CROSS_STATISTICS}
    )


def kind_statistics(result, kind: str, start: str = "", end: str = "") -> pd.DataFrame:
    """Per-head statistics of one kind of an encoder–decoder's attention (one row per head, layer-major).

    The encoder's and the decoder's are :func:`head_statistics`' (the decoder causal; no pair, so no tags and no
    ``a_to_b``/``b_to_a``), the cross-attention's those read off the source's tokens (:func:`cross_statistics`).

    Args:
        result: a :class:`~attention_viz.extraction.seq2seq.Seq2SeqResult`.
        kind: ``"encoder"``, ``"decoder"`` or ``"cross"``.
        start, end: the tokenizer's start and end tokens: a start token (BART's ``<s>``) counts as ``cls``, the
            end token ``</s>`` as ``sep`` ("" for none).

    Raises:
        ValueError: an unknown kind.
    """
    weights = result.maps(kind)
    if kind == "cross":
        return cross_statistics(weights, TokenKinds.from_encoding(result.source, start, end))
    kinds = TokenKinds.from_encoding(result.source if kind == "encoder" else result.target, start, end)
    frame = head_statistics(weights, kinds, causal=kind == "decoder")
    return frame.drop(columns=["tags", "a_to_b", "b_to_a"])
