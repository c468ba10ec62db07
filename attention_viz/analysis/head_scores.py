"""Named head scores: previous-token, duplicate-token, induction and attention-sink heads.

Each score is a mean over query tokens of attention read off one head's map, as the field defines it:

- **previous-token**: mean over queries ``i >= 1`` of ``A[i, i - 1]`` (the head detector of
  TransformerLens, ``transformer_lens.head_detector``, ``"previous_token_head"``; the same number as the
  ``previous`` statistic of :mod:`attention_viz.analysis.stats`).
- **duplicate-token**: mean over the queries that have an earlier copy of their own token of the
  attention they give to those copies, ``sum_{j < i, x_j = x_i} A[i, j]`` (TransformerLens'
  ``"duplicate_token_head"``).
- **induction**: on a sequence of ``n`` random tokens repeated twice, the mean over the ``n`` queries of
  the second copy of the attention to the token after that token's first copy, ``A[i, i - n + 1]``
  (Olsson et al. 2022, "In-context Learning and Induction Heads", arXiv:2209.11895; TransformerLens'
  and the ARENA exercises' ``pattern.diagonal(offset=1 - n)``, here over the second copy only).
  Always reported beside the same number on a **control**: ``2n`` random tokens with no repeat, where
  ``A[i, i - n + 1]`` is only a fixed offset (a head that scores high on both attends by position, not by
  content).
- **sink**: mean over queries ``i >= 1`` of the attention to the first position, ``A[i, 0]`` (Xiao et
  al. 2023, "Efficient Streaming Language Models with Attention Sinks", StreamingLLM, arXiv:2309.17453);
  for an encoder also the share on its [CLS]/[SEP] tokens (``cls_sep``), as Clark et al. 2019 measure it.

The pure functions take ``(layers, heads, query, key)`` attention (or a batch of them, ``(b, layers,
heads, query, key)``) and return ``(layers, heads)`` float64. :func:`model_head_scores` draws the seeded
random sequences from the tokenizer's ordinary vocabulary (no special tokens, no byte pieces, no
whitespace-only tokens), runs the model and scores every head on the repeated and the control sequences.
"""

from __future__ import annotations

import re
import time
import unicodedata
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attention_viz.analysis.corpus import CancelledError

# Score name -> what it is; the order of the table's columns (each beside its control, ``<name>_control``).
SCORES = {
    "induction": "attention from a second-copy token to the token after its first copy (Olsson et al. 2022)",
    "previous": "attention to the previous token, queries 1 … t−1",
    "duplicate": "attention to earlier copies of the query's own token",
    "sink": "attention to the first position, queries 1 … t−1 (Xiao et al. 2023)",
    "cls_sep": "share of attention on [CLS]/[SEP] (encoders only; Clark et al. 2019)",
}
TEXT_SCORES = ("previous", "duplicate", "sink")  # the scores any input has (see text_scores)
SOURCES = (
    'Olsson et al. 2022, "In-context Learning and Induction Heads" (arXiv:2209.11895); '
    "TransformerLens head_detector; "
    'Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks" (arXiv:2309.17453)'
)
DEFAULT_COUNT, DEFAULT_LENGTH = 10, 50  # TransformerLens' demo: 10 sequences of 50 random tokens
_BYTE_FALLBACK = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")
_BRACKETED = re.compile(r"^(\[[^\]]*\]|<[^>]*>)$")  # [unused12], <mask>: reserved names, not text


def _as_batch(weights: np.ndarray) -> np.ndarray:
    """``(b, L, h, t, t)`` float64 from one map ``(L, h, t, t)`` or a batch; ValueError otherwise."""
    weights = np.asarray(weights, dtype=np.float64)
    weights = weights[None] if weights.ndim == 4 else weights
    if weights.ndim != 5 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be (layers, heads, t, t) or (b, layers, heads, t, t), got {weights.shape}")
    return weights


def _diagonal_mean(weights: np.ndarray, offset: int, first_query: int, last_query: int) -> np.ndarray:
    """Mean over queries ``first_query .. last_query - 1`` (and the batch) of ``A[i, i + offset]``: ``(L, h)``."""
    weights = _as_batch(weights)
    queries = np.arange(first_query, last_query)
    if len(queries) == 0 or queries[0] + offset < 0 or queries[-1] + offset >= weights.shape[-1]:
        return np.full(weights.shape[1:3], np.nan)
    return weights[..., queries, queries + offset].mean((0, -1))  # (L, h)


def previous_token_scores(weights: np.ndarray) -> np.ndarray:
    """Previous-token score of every head: mean over queries ``i >= 1`` of ``A[i, i - 1]``.

    Args:
        weights: ``(layers, heads, t, t)`` or ``(b, layers, heads, t, t)``; rows sum to 1.

    Returns:
        ``(layers, heads)`` float64 in [0, 1]: 1 for a head that puts all of every query's attention on
        the token before it, ``1/t``-ish for uniform attention; NaN for ``t < 2``.
    """
    t = _as_batch(weights).shape[-1]
    return _diagonal_mean(weights, -1, 1, t)


def sink_scores(weights: np.ndarray) -> np.ndarray:
    """Attention-sink score: mean over queries ``i >= 1`` of the attention to position 0, ``A[i, 0]``
    (Xiao et al. 2023, StreamingLLM). Query 0 is left out: in a decoder it can attend nowhere else.

    Args:
        weights: ``(layers, heads, t, t)`` or ``(b, layers, heads, t, t)``.

    Returns:
        ``(layers, heads)`` float64 in [0, 1]; NaN for ``t < 2``.
    """
    weights = _as_batch(weights)
    if weights.shape[-1] < 2:
        return np.full(weights.shape[1:3], np.nan)
    return weights[..., 1:, 0].mean((0, -1))  # (L, h)


def duplicate_token_scores(weights: np.ndarray, token_ids: np.ndarray) -> np.ndarray:
    """Duplicate-token score: the attention a query gives to earlier copies of its own token, summed over
    those copies, and averaged over the queries that have one (TransformerLens' duplicate-token head).

    Args:
        weights: ``(layers, heads, t, t)`` with ``token_ids`` ``(t,)``, or ``(b, layers, heads, t, t)`` with
            ``token_ids`` ``(b, t)``.
        token_ids: the input's token ids.

    Returns:
        ``(layers, heads)`` float64 in [0, 1]; NaN when no token repeats.

    Raises:
        ValueError: if the shapes do not match.
    """
    weights = _as_batch(weights)
    ids = np.asarray(token_ids).reshape(-1, weights.shape[-1]) if np.ndim(token_ids) else None
    if ids is None or ids.shape[0] != weights.shape[0]:
        raise ValueError(
            f"token_ids must be (t,) or (b, t) matching weights {weights.shape}, got {np.shape(token_ids)}"
        )
    t = weights.shape[-1]
    earlier_copy = (ids[:, :, None] == ids[:, None, :]) & np.tri(t, k=-1, dtype=bool)  # (b, t, t): j < i, same id
    queries = earlier_copy.any(-1)  # (b, t): queries that have an earlier copy
    if not queries.any():
        return np.full(weights.shape[1:3], np.nan)
    on_copies = (weights * earlier_copy[:, None, None]).sum(-1)  # (b, L, h, t)
    return (on_copies * queries[:, None, None]).sum((0, -1)) / queries.sum()  # (L, h)


def induction_scores(weights: np.ndarray, start: int, period: int) -> np.ndarray:
    """Induction score on a repeated sequence: mean over the second copy's queries of ``A[i, i - n + 1]``.

    The input is ``start`` tokens (a [CLS] or beginning-of-sequence token), ``n = period`` tokens, the
    same ``n`` again, and anything after (a [SEP]). Query ``i = start + n + k`` is the second copy of token
    ``start + k``; an induction head attends from it to the token that followed the first copy,
    ``start + k + 1 = i - n + 1`` (Olsson et al. 2022; TransformerLens' ``diagonal(offset=1 - n)``). On a
    control of the same length that does not repeat, the same entries measure a fixed positional offset.

    Args:
        weights: ``(layers, heads, t, t)`` or ``(b, layers, heads, t, t)`` with ``t >= start + 2n``.
        start: index of the first copy's first token.
        period: ``n``, the length of one copy (at least 2).

    Returns:
        ``(layers, heads)`` float64 in [0, 1].

    Raises:
        ValueError: if the sequence is shorter than ``start + 2 * period`` or ``period < 2``.
    """
    t = _as_batch(weights).shape[-1]
    if period < 2 or start < 0 or start + 2 * period > t:
        raise ValueError(f"an induction score needs 2 copies of at least 2 tokens after {start}: t={t}, n={period}")
    return _diagonal_mean(weights, 1 - period, start + period, start + 2 * period)


def special_share(weights: np.ndarray, special: np.ndarray) -> np.ndarray:
    """Mean over all queries of the attention on the positions in ``special`` (``(t,)`` bool): ``(L, h)``;
    NaN when there is none. With an encoder's [CLS] and [SEP] it is Clark et al.'s ``cls`` + ``sep``."""
    weights, special = _as_batch(weights), np.asarray(special, dtype=bool)
    if not special.any():
        return np.full(weights.shape[1:3], np.nan)
    return weights[..., special].sum(-1).mean((0, -1))  # (L, h)


# --- the random sequences ----------------------------------------------------------------------------


_VOCABULARIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer -> its ordinary ids


def ordinary_vocabulary(tokenizer) -> np.ndarray:
    """Token ids of the tokenizer's ordinary vocabulary, ascending.

    Computed once per tokenizer (read-only). Left out: special tokens (``all_special_ids`` and added
    tokens), byte pieces (a byte-level BPE piece that is not a whole UTF-8 character decodes to U+FFFD;
    SentencePiece's ``<0x0A>``), reserved bracketed names (``[unused12]``), and tokens that decode to
    whitespace, control characters or nothing.
    """
    found = _VOCABULARIES.get(tokenizer)
    if found is not None:
        return found
    vocab = tokenizer.get_vocab()
    excluded = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    ordinary = []
    for token, index in vocab.items():
        if index in excluded or _BYTE_FALLBACK.match(token) or _BRACKETED.match(token):
            continue
        text = tokenizer.convert_tokens_to_string([token])
        if text.strip() and "\ufffd" not in text and not any(unicodedata.category(c) == "Cc" for c in text):
            ordinary.append(index)
    found = np.asarray(sorted(ordinary), dtype=np.int64)
    found.flags.writeable = False  # shared by every caller
    _VOCABULARIES[tokenizer] = found
    return found


@dataclass(frozen=True)
class RandomSequences:
    """Seeded random token sequences for the induction score, and their non-repeating controls.

    Attributes:
        repeated: ``(b, t)`` int64: ``prefix``, ``n`` distinct random tokens, the same ``n`` again, ``suffix``.
        control: ``(b, t)`` int64: ``prefix``, ``2n`` distinct random tokens, ``suffix``.
        start: ``len(prefix)``, the index of the first random token.
        period: ``n``.
        special: ``(t,)`` bool, the prefix and suffix positions ([CLS]/[SEP], <s>/</s>, a BOS token).
        seed: the seed they were drawn with.
    """

    repeated: np.ndarray
    control: np.ndarray
    start: int
    period: int
    special: np.ndarray
    seed: int

    @property
    def num_tokens(self) -> int:
        return self.repeated.shape[1]


def special_frame(tokenizer, causal: bool) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text (``[CLS]`` / ``[SEP]``, ``<s>`` / ``</s>``), read
    from how it encodes one word; a decoder whose tokenizer adds nothing gets its beginning-of-sequence
    token in front (``<|endoftext|>`` for GPT-2, as TransformerLens prepends it)."""
    encoded = tokenizer("a", verbose=False)
    ids, sequence_ids = list(encoded["input_ids"]), encoded.sequence_ids()
    text = [i for i, s in enumerate(sequence_ids) if s is not None]
    prefix, suffix = ids[: text[0]], ids[text[-1] + 1 :]
    if causal and not prefix and tokenizer.bos_token_id is not None:
        prefix = [int(tokenizer.bos_token_id)]
    return [int(i) for i in prefix], [int(i) for i in suffix]


def random_sequences(
    tokenizer, count: int = DEFAULT_COUNT, length: int = DEFAULT_LENGTH, seed: int = 0, causal: bool = False
) -> RandomSequences:
    """``count`` seeded sequences of ``length`` random tokens repeated twice, and as many controls.

    Each copy has ``length`` distinct tokens and each control ``2 * length`` distinct tokens, drawn
    uniformly without replacement from :func:`ordinary_vocabulary` (numpy's ``default_rng(seed)``), so a
    token repeats only where the sequence repeats.

    Raises:
        ValueError: ``count < 1``, ``length < 2``, or an ordinary vocabulary smaller than ``2 * length``
            (the message gives the largest length that fits).
    """
    vocabulary = ordinary_vocabulary(tokenizer)
    if count < 1 or length < 2:
        raise ValueError(f"need at least 1 sequence of at least 2 tokens, got {count} of {length}")
    if len(vocabulary) < 2 * length:
        raise ValueError(
            f"this tokenizer has {len(vocabulary)} ordinary tokens: random sequences can be at most "
            f"{len(vocabulary) // 2} tokens long (a control needs twice as many distinct tokens)"
        )
    prefix, suffix = special_frame(tokenizer, causal)
    rng = np.random.default_rng(seed)
    draws = np.stack([rng.choice(vocabulary, 2 * length, replace=False) for _ in range(2 * count)])  # (2c, 2n)
    first = draws[:count, :length]  # (c, n)
    before, after = np.tile(prefix, (count, 1)), np.tile(suffix, (count, 1))  # (c, len(prefix)), (c, len(suffix))
    repeated = np.concatenate([before, first, first, after], axis=1).astype(np.int64)  # (c, t)
    control = np.concatenate([before, draws[count:], after], axis=1).astype(np.int64)  # (c, t)
    special = np.zeros(repeated.shape[1], dtype=bool)
    special[: len(prefix)] = True
    special[repeated.shape[1] - len(suffix) :] = True
    return RandomSequences(repeated, control, len(prefix), length, special, seed)


# --- scores of a model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadScores:
    """Every head's named scores on the repeated random sequences and on their controls.

    Attributes:
        repeated: ``{score: (layers, heads) float64}`` for every name in :data:`SCORES`, on the repeated
            sequences (NaN where a score does not apply: ``cls_sep`` for a decoder).
        control: the same on the non-repeating controls (``duplicate`` is NaN there: nothing repeats).
        count, length, seed: the sequences (``count`` of ``length`` tokens repeated twice).
        num_tokens: tokens per sequence with the special ones.
        seconds: how long the model took for them (wall clock).
    """

    repeated: dict[str, np.ndarray]
    control: dict[str, np.ndarray]
    count: int
    length: int
    seed: int
    num_tokens: int
    seconds: float


def score_maps(weights: np.ndarray, ids: np.ndarray, sequences: RandomSequences, causal: bool) -> dict[str, np.ndarray]:
    """Every score of :data:`SCORES` for a batch ``(b, L, h, t, t)`` of one kind of sequence (``ids`` ``(b, t)``)."""
    maps = {
        "induction": induction_scores(weights, sequences.start, sequences.period),
        "previous": previous_token_scores(weights),
        "duplicate": duplicate_token_scores(weights, ids),
        "sink": sink_scores(weights),
    }
    shape = maps["previous"].shape
    maps["cls_sep"] = np.full(shape, np.nan) if causal else special_share(weights, sequences.special)
    return maps


def _forward_attention(loaded, ids: np.ndarray) -> np.ndarray:
    """The transformers model's attention for a batch of unpadded ids ``(b, t)``: ``(b, L, h, t, t)`` float32,
    every sequence's rows checked (:func:`~attention_viz.extraction.batch.batch_attention`).

    Raises:
        AttentionError: no weights, or a sequence whose rows are not finite or do not sum to 1.
    """
    from attention_viz.extraction.batch import batch_attention
    from attention_viz.extraction.forward import token_inputs

    b, t = ids.shape
    return np.stack(batch_attention(loaded.model, token_inputs(ids), [t] * b))


def longest_length(loaded) -> int:
    """The longest random sequence (tokens per copy) the model takes: half of what its positions leave
    after the special tokens, and half of the ordinary vocabulary (a control has ``2n`` distinct tokens)."""
    prefix, suffix = special_frame(loaded.tokenizer, loaded.info.causal)
    room = (loaded.info.max_positions - len(prefix) - len(suffix)) // 2
    return min(room, len(ordinary_vocabulary(loaded.tokenizer)) // 2)


def _sequences_for(loaded, count: int, length: int, seed: int) -> RandomSequences:
    """:func:`random_sequences` for a loaded model, refused when they would not fit its positions."""
    sequences = random_sequences(loaded.tokenizer, count, length, seed, loaded.info.causal)
    if sequences.num_tokens > loaded.info.max_positions:
        raise ValueError(
            f"{sequences.num_tokens} tokens do not fit this model's {loaded.info.max_positions} positions: "
            f"random sequences can be at most {longest_length(loaded)} tokens long"
        )
    return sequences


def model_head_scores(
    loaded,
    count: int = DEFAULT_COUNT,
    length: int = DEFAULT_LENGTH,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = 2,
    cancel: Callable[[], bool] | None = None,
) -> HeadScores:
    """Score every head of a loaded model on seeded random sequences (:func:`random_sequences`).

    Runs the transformers model (eager attention) on ``count`` repeated sequences and ``count`` controls,
    ``batch_size`` at a time (all of one length: no padding).

    Args:
        loaded: a :class:`~attention_viz.models.loading.LoadedModel` of any supported family.
        count, length, seed: the sequences; ``2 * length`` plus the special tokens must fit the model.
        progress: called with ``(sequences done, 2 * count)`` after each batch.
        batch_size: sequences per forward.
        cancel: asked before each batch; True stops the run with
            :class:`~attention_viz.analysis.corpus.CancelledError`.

    Returns:
        :class:`HeadScores`.

    Raises:
        ValueError: bad ``count``/``length``, a vocabulary too small, or sequences longer than the model takes.
        CancelledError: when ``cancel()`` returned True.
    """
    causal = loaded.info.causal
    sequences = _sequences_for(loaded, count, length, seed)
    began, done, sums = time.perf_counter(), 0, {}
    for kind, ids in (("repeated", sequences.repeated), ("control", sequences.control)):
        totals = {}
        for i in range(0, count, batch_size):
            if cancel is not None and cancel():
                raise CancelledError(f"cancelled after {done} of {2 * count} sequences")
            chunk = ids[i : i + batch_size]  # (b, t)
            maps = score_maps(_forward_attention(loaded, chunk), chunk, sequences, causal)
            for name, value in maps.items():  # each batch's mean, weighted by its sequences
                totals[name] = totals.get(name, 0.0) + value * len(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, 2 * count)
        sums[kind] = {name: value / count for name, value in totals.items()}
    seconds = time.perf_counter() - began
    return HeadScores(sums["repeated"], sums["control"], count, length, seed, sequences.num_tokens, seconds)


def estimate_seconds(
    loaded, count: int = DEFAULT_COUNT, length: int = DEFAULT_LENGTH, seed: int = 0, batch_size: int = 2
) -> float:
    """Seconds :func:`model_head_scores` will take on this machine now: one batch of ``batch_size`` repeated
    sequences is timed (the faster of two runs: a model's first forward pays for one-off work) and the time
    multiplied by the batches the run has, ``2 * ceil(count / batch_size)`` (a busy machine takes longer).

    Raises:
        ValueError: as :func:`model_head_scores` does.
    """
    sequences = _sequences_for(loaded, min(count, batch_size), length, seed)
    times = []
    for _ in range(2):
        began = time.perf_counter()
        _forward_attention(loaded, sequences.repeated)
        times.append(time.perf_counter() - began)
    return min(times) * 2 * -(-count // batch_size)


def scores_frame(scores: HeadScores) -> pd.DataFrame:
    """One row per head, layer-major: ``layer``, ``head`` and each score beside its control
    (``induction``, ``induction_control``, ``previous``, ``previous_control``, …)."""
    layers, heads = scores.repeated["previous"].shape
    columns = {"layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers)}
    for name in SCORES:
        columns[name] = scores.repeated[name].reshape(-1)  # (L * h,), layer-major
        columns[f"{name}_control"] = scores.control[name].reshape(-1)
    return pd.DataFrame(columns)


def score_columns(scores: HeadScores, names) -> pd.DataFrame:
    """One row per head, layer-major: ``layer``, ``head``, then for each name of ``names`` (of :data:`SCORES`)
    ``score_NAME`` and ``score_NAME_control`` (the command line's ``stats --scores`` columns)."""
    kept = [column for name in names for column in (name, f"{name}_control")]
    frame = scores_frame(scores)[["layer", "head", *kept]]
    return frame.rename(columns={column: f"score_{column}" for column in kept})


def text_scores(weights: np.ndarray, token_ids: np.ndarray) -> dict[str, np.ndarray]:
    """The scores that any input has, on one input's attention ``(L, h, t, t)``: ``previous``, ``duplicate``
    (NaN when no token repeats) and ``sink``; ``(layers, heads)`` each."""
    scores = {
        "previous": previous_token_scores(weights),
        "duplicate": duplicate_token_scores(weights, token_ids),
        "sink": sink_scores(weights),
    }
    return {name: scores[name] for name in TEXT_SCORES}
