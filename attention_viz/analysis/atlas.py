"""A head atlas of a corpus: every head's strongest query → key attention events, in context, and a sample of
its typical ones, with the per-head numbers to place every head on any two of them.

An **event** is one entry ``A[query, key]`` of one head's attention on one text: the weight the query token
gives the key token. For every head the atlas keeps

- its **top events**: the ``top`` strongest events over the corpus (ordered by weight, then text, query and
  key, so ties are broken the same way on every run). By default events onto the model's special tokens
  ([CLS]/[SEP], <s>/</s>; for a decoder also the first token, its attention sink) and onto the query itself
  are left out (their share of the attention is in the head's ``special`` and ``self`` numbers), and
  events of the same (query token, key token) pair are **folded**: the top events are ``top`` different
  pairs, each shown by its strongest event, and ``folded`` counts the pair's events at or above the last
  row (walking the events from the strongest, the pair's events met up to and including the ``top``-th
  pair's first one). Both can be switched off (``exclude=False``, ``fold=False``; unfolded, ``folded`` is 1).
- its **typical events**: ``sample`` events drawn with probability proportional to their weight, without
  replacement, by weighted reservoir sampling (Efraimidis & Spirakis 2006, "Weighted random sampling with
  a reservoir", algorithm A-Res: each event gets the key ``u ** (1 / weight)`` with ``u`` uniform in (0, 1),
  and the ``sample`` largest keys are kept; here ``log(u) / weight``, the same order). ``u`` is drawn from
  ``numpy.random.default_rng([seed, text index])``, so the sample depends on the seed and the corpus, never
  on the batch size. The same events are left out as for the top events.

Memory does not grow with the corpus's maps: each batch's maps are read once and dropped; per head the
atlas holds ``sample`` reservoir entries, its ``top`` pairs and, for the counts of folded events, the
events of those pairs at or above the current last row (which only rises; at most twice as many between
two prunings). The atlas stores only the texts
its events refer to.

The forwards are the corpus path's (:mod:`attention_viz.extraction.batch`: padded batches, each text's
weights cut to its own tokens and checked). The per-head numbers are corpus means over query tokens:
the statistics of :mod:`attention_viz.analysis.stats` (Clark et al. 2019), the ``duplicate`` and ``sink``
scores of :mod:`attention_viz.analysis.head_scores` (TransformerLens; Xiao et al. 2023) over the corpus, the
shares left out (``special``, ``self``), the top events' mean weight (``top_weight``) and the number of
different texts they come from (``top_texts``), and optionally the ``induction`` score on seeded random
sequences (Olsson et al. 2022).

An atlas is saved as one Parquet file (:meth:`Atlas.to_parquet`, read back by :func:`read_atlas`): the
events as rows, the heads, texts and options as JSON in the file's metadata.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from attention_viz import settings
from attention_viz.analysis import head_scores, stats
from attention_viz.analysis.corpus import EMPTY, CancelledError, Progress, Texts, check_corpus
from attention_viz.extraction import InputError
from attention_viz.extraction import batch as padded

DEFAULT_TOP = 20
DEFAULT_SAMPLE = 20
FORMAT = 1  # the file's layout; a file of another layout is refused
METADATA_KEY = "attention_viz_atlas"
KINDS = ("top", "typical")
EVENT_COLUMNS = (
    "layer",
    "head",
    "kind",
    "rank",
    "text",
    "query",
    "key",
    "query_token",
    "key_token",
    "weight",
    "distance",
    "folded",
)
# Per-head numbers of the atlas itself -> what they are (the statistics and scores keep their own names).
HEAD_NUMBERS = {
    "top_weight": "mean weight of the head's top events",
    "top_texts": "different texts the head's top events come from",
    "special": "share of attention on the special tokens ([CLS]/[SEP]; a decoder's first token)",
    "duplicate": "attention to earlier copies of the query's token, queries that have one (TransformerLens)",
    "sink": "attention to the first position, queries 1 … t−1 (Xiao et al. 2023)",
    "induction": "induction score on seeded random repeated sequences (Olsson et al. 2022)",
}

NUMBERS = (*HEAD_NUMBERS, *stats.STATISTICS)  # every per-head number of an atlas's heads table


class AtlasFileError(ValueError):
    """A file that is not an atlas this version can read (another format, damaged, another layout)."""


@dataclass(frozen=True)
class Atlas:
    """Every head's top and typical events over a corpus, and per-head numbers.

    Attributes:
        events: one row per event kept, columns :data:`EVENT_COLUMNS`: ``layer``, ``head`` (from 0),
            ``kind`` (``top`` or ``typical``), ``rank`` (from 0, strongest first; for typical events the
            order of their reservoir keys), ``text`` (index of the text in the corpus, from 0), ``query`` and
            ``key`` (token positions in the text as the model saw it, from 0), ``query_token`` and
            ``key_token`` (the tokenizer's tokens), ``weight`` (attention, in [0, 1]), ``distance``
            (``key − query`` in tokens: negative when the key is before the query) and ``folded`` (events of
            the same (query token, key token) pair this row stands for; 1 for typical events).
        heads: one row per head, layer-major: ``layer``, ``head``, the numbers of :data:`HEAD_NUMBERS`, the
            statistics of :data:`attention_viz.analysis.stats.STATISTICS` and ``tags``.
        texts: ``{text index: (sentence A, sentence B or None, tokens)}`` for the texts events refer to.
        model: the model's name; options: how it was built (``top``, ``sample``, ``seed``, ``fold``,
            ``exclude``, ``batch_size``, ``max_length``).
        num_texts, num_skipped, num_tokens: texts used, lines with no token left, tokens in all.
        seconds: the whole build (wall clock); forward_seconds: the model's forwards within it.
    """

    events: pd.DataFrame
    heads: pd.DataFrame
    texts: dict[int, tuple[str, str | None, int]]
    model: str
    options: dict = field(default_factory=dict)
    num_texts: int = 0
    num_skipped: int = 0
    num_tokens: int = 0
    seconds: float = 0.0
    forward_seconds: float = 0.0

    def head_events(self, layer: int, head: int, kind: str = "top") -> pd.DataFrame:
        """One head's events of ``kind`` (``top`` or ``typical``), by rank, with ``sentence`` (the text, a pair
        joined by " / ") beside them."""
        rows = self.events[(self.events["layer"] == layer) & (self.events["head"] == head)]
        rows = rows[rows["kind"] == kind].sort_values("rank").reset_index(drop=True)
        return rows.assign(sentence=[_sentence(*self.texts[int(i)][:2]) for i in rows["text"]])

    def to_parquet(self, path=None) -> bytes | None:
        """Write the atlas as one Parquet file at ``path`` (a path or a binary file); with no path, return
        the file's bytes. The events are the rows; heads, texts and options go into the file's metadata."""
        frame = self.events.copy()
        frame.attrs = {METADATA_KEY: json.dumps(self._metadata(), ensure_ascii=False)}
        if path is not None:
            frame.to_parquet(path, index=False)
            return None
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()

    def _metadata(self) -> dict:
        return {
            "format": FORMAT,
            "model": self.model,
            "options": self.options,
            "heads": json.loads(self.heads.to_json(orient="split", index=False, double_precision=15)),
            "texts": [[i, a, b, n] for i, (a, b, n) in sorted(self.texts.items())],
            "num_texts": self.num_texts,
            "num_skipped": self.num_skipped,
            "num_tokens": self.num_tokens,
            "seconds": self.seconds,
            "forward_seconds": self.forward_seconds,
        }


def _sentence(a: str, b: str | None) -> str:
    return a if b is None else f"{a} / {b}"


def read_atlas(source) -> Atlas:
    """An atlas from a Parquet file written by :meth:`Atlas.to_parquet`: a path, a binary file or bytes.

    Raises:
        AtlasFileError: not a Parquet file, or not an atlas of this layout (:data:`FORMAT`).
    """
    if isinstance(source, bytes | bytearray):
        source = io.BytesIO(source)
    try:
        frame = pd.read_parquet(source)
    except Exception as exc:  # pyarrow raises several kinds for a file that is not Parquet
        raise AtlasFileError(f"not a Parquet file: {exc}") from None
    try:
        meta = json.loads(frame.attrs[METADATA_KEY])
        if meta["format"] != FORMAT or list(frame.columns) != list(EVENT_COLUMNS):
            raise AtlasFileError(f"an atlas file of another layout (format {meta['format']})")
        heads = pd.DataFrame(meta["heads"]["data"], columns=meta["heads"]["columns"])
        texts = {int(i): (a, b, int(n)) for i, a, b, n in meta["texts"]}
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, AtlasFileError):
            raise
        raise AtlasFileError("a Parquet file, but not a head atlas") from None
    heads = heads.astype({"layer": "int64", "head": "int64", "tags": str})
    number_columns = [c for c in heads.columns if c not in ("layer", "head", "tags")]
    heads[number_columns] = heads[number_columns].astype("float64")  # JSON null back to NaN
    frame.attrs = {}
    return Atlas(
        frame,
        heads,
        texts,
        meta["model"],
        meta["options"],
        meta["num_texts"],
        meta["num_skipped"],
        meta["num_tokens"],
        meta["seconds"],
        meta["forward_seconds"],
    )


# --- the running top events of one head ---------------------------------------------------------------


class RunningTop:
    """The ``top`` strongest events of one head, folded by ``pair``, over a stream of events.

    An event's order key is ``(-weight, text, query, key)``: smaller is stronger. :meth:`offer` takes events
    in any order and keeps exactly what sorting all of them would give (see the module docstring), holding
    only the kept pairs and, per pair, its events at or above the last row: those that fell below it as the
    last row rose are dropped whenever the kept events have doubled since the last time (so the work stays
    linear in the events offered).
    """

    def __init__(self, top: int):
        self.top = top
        self.best: dict = {}  # pair -> (order key, query token, key token) of its strongest event
        self.kept: dict = {}  # pair -> order keys of its events, all those at or above the last row
        self.worst: tuple | None = None  # the last row's order key, once there are ``top`` pairs
        self.worst_pair = None  # the last row's pair
        self.size = 0  # order keys in ``kept``
        self.prune_at = 4 * top

    def threshold(self) -> float:
        """The weight an event needs to be considered (the last row's; -1 while fewer than ``top`` pairs)."""
        return -1.0 if self.worst is None else -self.worst[0]

    def offer(self, order: tuple, pair, query_token: str, key_token: str) -> bool:
        """Consider one event; False when it is weaker than the last row (so is every weaker one)."""
        if self.worst is not None and order > self.worst:
            return False
        self.size += 1
        if pair in self.best:
            self.kept[pair].append(order)
            if order < self.best[pair][0]:
                self.best[pair] = (order, query_token, key_token)
                if pair == self.worst_pair:
                    self._new_last_row()
        else:
            self.best[pair], self.kept[pair] = (order, query_token, key_token), [order]
            if len(self.best) > self.top:  # full before: the last row's pair goes
                self.size -= len(self.kept[self.worst_pair])
                del self.best[self.worst_pair], self.kept[self.worst_pair]
            if len(self.best) == self.top:
                self._new_last_row()
        if self.size > self.prune_at:
            self._prune()
        return True

    def _new_last_row(self) -> None:
        self.worst_pair, (self.worst, _, _) = max(self.best.items(), key=lambda item: item[1][0])

    def _prune(self) -> None:
        """Drop the kept events below the last row."""
        if self.worst is not None:
            for pair, orders in self.kept.items():
                self.kept[pair] = [order for order in orders if order <= self.worst]
            self.size = sum(len(orders) for orders in self.kept.values())
        self.prune_at = max(4 * self.top, 2 * self.size)

    def merge(self, other: RunningTop) -> RunningTop:
        """The running top of both streams of events: what offering ``other``'s events after these would keep
        (an event either part left out is weaker than the merged last row)."""
        merged = RunningTop(self.top)
        for source in (self, other):
            for pair, best in source.best.items():
                if pair not in merged.best or best[0] < merged.best[pair][0]:
                    merged.best[pair] = best
                merged.kept.setdefault(pair, []).extend(source.kept[pair])
        for pair in sorted(merged.best, key=lambda p: merged.best[p][0])[self.top :]:
            del merged.best[pair], merged.kept[pair]
        if len(merged.best) == self.top:
            merged._new_last_row()
        merged._prune()
        return merged

    def rows(self) -> list[tuple[tuple, str, str, int]]:
        """``(order key, query token, key token, folded)`` of each kept pair, strongest first."""
        self._prune()
        ranked = sorted(self.best.items(), key=lambda item: item[1][0])
        return [(order, q, k, len(self.kept[pair])) for pair, (order, q, k) in ranked]


def allowed_keys(n: int, special: np.ndarray, exclude: bool, causal: bool = False) -> np.ndarray:
    """``(n, n)`` bool: the (query, key) events an atlas considers: for a decoder (``causal``) only keys at or
    before the query (the others have weight 0); with ``exclude`` none onto a special key (``special``,
    ``(n,)`` bool) or onto the query itself."""
    allowed = np.tri(n, dtype=bool) if causal else np.ones((n, n), dtype=bool)
    if exclude:
        allowed[:, np.asarray(special, dtype=bool)] = False
        np.fill_diagonal(allowed, False)
    return allowed


def sample_keys(weights: np.ndarray, allowed: np.ndarray, seed: int, text: int) -> np.ndarray:
    """A-Res reservoir keys ``log(u) / weight`` of one text's events, ``(layers, heads, n, n)`` float64:
    ``u`` from ``default_rng([seed, text])``; ``-inf`` for an event left out or of weight 0 (never drawn)."""
    u = np.random.default_rng([seed, text]).random(weights.shape)  # (L, h, n, n) in [0, 1)
    w = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        keys = np.log(u) / w
    keys[~np.broadcast_to(allowed, w.shape) | (w <= 0) | np.isnan(keys)] = -np.inf
    return keys


class Reservoir:
    """Each head's ``size`` events with the largest reservoir keys so far: ``(layers, heads, size)`` arrays."""

    def __init__(self, layers: int, heads: int, size: int):
        shape = (layers, heads, size)
        self.key = np.full(shape, -np.inf)
        self.text, self.query, self.key_pos = (np.full(shape, -1, dtype=np.int64) for _ in range(3))
        self.weight = np.zeros(shape, dtype=np.float64)
        self.size = size

    def merge(self, other: Reservoir) -> Reservoir:
        """The reservoir of both streams: the ``size`` largest keys of the two."""
        merged = Reservoir(*self.key.shape)
        names = ("key", "text", "query", "key_pos", "weight")
        joined = {name: np.concatenate([getattr(self, name), getattr(other, name)], axis=-1) for name in names}
        order = np.argsort(-joined["key"], axis=-1, kind="stable")[..., : self.size]
        for name, values in joined.items():
            setattr(merged, name, np.take_along_axis(values, order, axis=-1))
        return merged

    def add(self, keys: np.ndarray, weights: np.ndarray, text: int) -> None:
        layers, heads, n, _ = keys.shape
        positions = np.arange(n * n)
        new = {
            "key": keys.reshape(layers, heads, -1),
            "text": np.full((layers, heads, n * n), text, dtype=np.int64),
            "query": np.broadcast_to(positions // n, (layers, heads, n * n)),
            "key_pos": np.broadcast_to(positions % n, (layers, heads, n * n)),
            "weight": np.asarray(weights, dtype=np.float64).reshape(layers, heads, -1),
        }
        merged = {name: np.concatenate([getattr(self, name), new[name]], axis=-1) for name in new}
        order = np.argsort(-merged["key"], axis=-1, kind="stable")[..., : self.size]
        for name, values in merged.items():
            setattr(self, name, np.take_along_axis(values, order, axis=-1))


# --- building an atlas --------------------------------------------------------------------------------


def special_keys(special, causal: bool) -> np.ndarray:
    """``(n,)`` bool: the keys an atlas leaves out as special: the tokenizer's own (``special``) and, for a
    decoder (``causal``), the first position (its attention sink, whatever token it is)."""
    special = np.array(special, dtype=bool)
    if causal and len(special):
        special[0] = True
    return special


@dataclass
class _HeadSums:
    """Per-head sums over the corpus's query tokens for the atlas's own shares and scores."""

    special: np.ndarray
    queries: int = 0
    sink: np.ndarray | None = None
    sink_queries: int = 0
    duplicate: np.ndarray | None = None
    duplicate_queries: int = 0

    def add(self, weights: np.ndarray, special: np.ndarray, ids: np.ndarray) -> None:
        w = np.asarray(weights, dtype=np.float64)  # (L, h, n, n)
        n = w.shape[-1]
        self.special = self.special + w[..., special].sum((-1, -2))
        self.queries += n
        self.sink = w[..., 1:, 0].sum(-1) + (0 if self.sink is None else self.sink)
        self.sink_queries += n - 1
        copies = (ids[:, None] == ids[None, :]) & np.tri(n, k=-1, dtype=bool)  # (n, n): j < i, same id
        self.duplicate = (w * copies).sum((-1, -2)) + (0 if self.duplicate is None else self.duplicate)
        self.duplicate_queries += int(copies.any(-1).sum())

    def merge(self, other: _HeadSums) -> _HeadSums:
        def add(a, b):
            return b if a is None else a if b is None else a + b

        return _HeadSums(
            self.special + other.special,
            self.queries + other.queries,
            add(self.sink, other.sink),
            self.sink_queries + other.sink_queries,
            add(self.duplicate, other.duplicate),
            self.duplicate_queries + other.duplicate_queries,
        )

    def means(self) -> dict[str, np.ndarray]:
        def mean(total, count):
            return total / count if count else np.full(self.special.shape, np.nan)

        return {
            "special": mean(self.special, self.queries),
            "sink": mean(self.sink, self.sink_queries),
            "duplicate": mean(self.duplicate, self.duplicate_queries),
        }


def build_atlas(
    loaded,
    texts: Texts,
    top: int = DEFAULT_TOP,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
    fold: bool = True,
    exclude: bool = True,
    batch_size: int = 16,
    induction: bool = False,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    limits: settings.Limits | None = None,
) -> Atlas:
    """The head atlas of a corpus (see the module docstring).

    Args:
        loaded: a :class:`~attention_viz.models.loading.LoadedModel` of any supported family.
        texts: ``(sentence A, sentence B or None)`` pairs, e.g. from
            :func:`~attention_viz.analysis.corpus.parse_corpus`.
        top: top events per head (at least 1).
        sample: typical events per head (0 for none).
        seed: the seed of the typical sample.
        fold: fold the events of a (query token, key token) pair into one row.
        exclude: leave events onto special tokens and onto the query itself out of the events.
        batch_size: texts per forward pass (the result does not depend on it).
        induction: also score every head on seeded random repeated sequences (20 forwards of about 100
            tokens: on the bundled corpus about as long as the corpus's own forwards).
        progress: called with ``(0, texts in all)``, then ``(texts done, texts in all)`` after each batch.
        cancel: asked before each batch; True stops the run with :class:`CancelledError`.
        limits: the operator's limits (default :func:`attention_viz.settings.load`).

    Returns:
        :class:`Atlas`.

    Raises:
        InputError: no text or none with a token (``corpus_empty``), a corpus over the limits
            (``corpus_too_large``), ``top`` below 1, ``sample`` below 0 or ``batch_size`` below 1.
        AttentionError: the model returns no or invalid attention.
        CancelledError: when ``cancel()`` returned True.
    """
    began = time.perf_counter()
    limits = check_atlas_input(loaded, texts, top, sample, batch_size, limits)
    max_length = limits.tokens_for(loaded.info.max_positions)
    options = AtlasOptions(top, sample, seed, fold, exclude, batch_size, max_length)
    stop = cancel or (lambda: False)
    if progress is not None:
        progress(0, len(texts))
    total = None
    for first, last in part_spans(len(texts), batch_size):  # the parts of a Ray run, added up in the same order
        part = atlas_sums(loaded, texts[first:last], first, options, progress, stop, len(texts))
        total = part if total is None else total.merge(part)
    return finish_atlas(total, loaded, texts, options, induction, time.perf_counter() - began)


PART_BATCHES = 4  # batches per part: a local run adds its sums part by part, as a Ray run does


def part_spans(num_texts: int, batch_size: int) -> list[tuple[int, int]]:
    """``(first, last)`` text of each part of a corpus: :data:`PART_BATCHES` whole batches (the last may be
    short). The local run and the Ray run add the parts' sums in this order, so their floats are the same."""
    size = batch_size * PART_BATCHES
    return [(first, min(first + size, num_texts)) for first in range(0, num_texts, size)]


def check_atlas_input(loaded, texts: Texts, top: int, sample: int, batch_size: int, limits) -> settings.Limits:
    """Refuse what :func:`build_atlas` cannot run, before anything runs; return the limits that apply.

    Raises:
        InputError: as :func:`build_atlas` says.
    """
    if not texts:
        raise InputError(EMPTY, "corpus_empty")
    if top < 1 or sample < 0 or batch_size < 1:
        raise InputError(f"top must be at least 1, sample at least 0 and the batch size at least 1: {top}, {sample}")
    limits = settings.load().limits if limits is None else limits
    check_corpus(loaded.tokenizer, texts, limits, limits.tokens_for(loaded.info.max_positions))
    return limits


@dataclass(frozen=True)
class AtlasOptions:
    """How an atlas is built: see :func:`build_atlas`; ``max_length`` tokens per text."""

    top: int = DEFAULT_TOP
    sample: int = DEFAULT_SAMPLE
    seed: int = 0
    fold: bool = True
    exclude: bool = True
    batch_size: int = 16
    max_length: int = 512


@dataclass
class AtlasSums:
    """What some texts of a corpus add to an atlas: every head's running top events and reservoir, and the
    sums behind its numbers. Two parts merge (:meth:`merge`, the earlier part first) into what one run over
    both gives: the same events, the same floats when added in the same order (:func:`part_spans`)."""

    tops: list
    reservoir: Reservoir | None
    statistics: stats.StatisticSums | None
    heads: _HeadSums
    used: int = 0
    skipped: int = 0
    tokens: int = 0
    forward_seconds: float = 0.0

    def merge(self, other: AtlasSums) -> AtlasSums:
        """Both parts' sums (``other`` holds later texts)."""
        tops = [[a.merge(b) for a, b in zip(x, y, strict=True)] for x, y in zip(self.tops, other.tops, strict=True)]
        reservoir = None if self.reservoir is None else self.reservoir.merge(other.reservoir)
        if self.statistics is None or other.statistics is None:
            statistics = self.statistics or other.statistics
        else:
            statistics = self.statistics + other.statistics
        return AtlasSums(
            tops,
            reservoir,
            statistics,
            self.heads.merge(other.heads),
            self.used + other.used,
            self.skipped + other.skipped,
            self.tokens + other.tokens,
            self.forward_seconds + other.forward_seconds,
        )


def atlas_sums(
    loaded,
    texts: Texts,
    first: int,
    options: AtlasOptions,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    total: int | None = None,
) -> AtlasSums:
    """The :class:`AtlasSums` of ``texts``, the corpus's texts from index ``first`` on, in batches; no limit is
    checked here.

    Raises:
        AttentionError: the model returns no or invalid attention.
        CancelledError: when ``cancel()`` returned True (asked before each batch).
    """
    info, tokenizer = loaded.info, loaded.tokenizer
    layers, heads = info.num_layers, info.num_heads
    part = AtlasSums(
        [[RunningTop(options.top) for _ in range(heads)] for _ in range(layers)],
        Reservoir(layers, heads, options.sample) if options.sample else None,
        None,
        _HeadSums(np.zeros((layers, heads))),
    )
    stop = cancel or (lambda: False)
    total = len(texts) if total is None else total
    for start in range(0, len(texts), options.batch_size):
        if stop():
            raise CancelledError(f"cancelled after {first + start} of {total} texts")
        chunk = texts[start : start + options.batch_size]
        forward_began = time.perf_counter()
        types = loaded.encoder.config.type_vocab_size
        inputs, rows = padded.encode_batch(tokenizer, chunk, options.max_length, types)
        weights = padded.batch_attention(loaded.model, inputs, [len(r.input_ids) for r in rows], first + start)
        part.forward_seconds += time.perf_counter() - forward_began
        for offset, (row, text_weights) in enumerate(zip(rows, weights, strict=True)):
            _add_text(part, loaded, row, text_weights, first + start + offset, options)
        if progress is not None:
            progress(first + min(start + options.batch_size, len(texts)), total)
    return part


def _add_text(part: AtlasSums, loaded, row, weights: np.ndarray, index: int, options: AtlasOptions) -> None:
    """One text's events and sums into ``part`` (a text of only special tokens is counted as skipped)."""
    info, tokenizer = loaded.info, loaded.tokenizer
    if all(row.special):  # only [CLS] [SEP]: the line normalised to nothing
        part.skipped += 1
        return
    token_strings = tokenizer.convert_ids_to_tokens(row.input_ids)
    special = special_keys(row.special, info.causal)
    allowed = allowed_keys(len(token_strings), special, options.exclude, info.causal)
    _offer_text(part.tops, weights, allowed, token_strings, index, options.fold)
    if part.reservoir is not None:
        part.reservoir.add(sample_keys(weights, allowed, options.seed, index), weights, index)
    kinds = stats.TokenKinds.from_tokens(
        token_strings, row.special, row.segments, tokenizer.cls_token, tokenizer.sep_token
    )
    text_sums = stats.statistic_sums(weights, kinds, causal=info.causal)
    part.statistics = text_sums if part.statistics is None else part.statistics + text_sums
    part.heads.add(weights, special, np.asarray(row.input_ids))
    part.used, part.tokens = part.used + 1, part.tokens + len(token_strings)


def finish_atlas(
    sums: AtlasSums, loaded, texts: Texts, options: AtlasOptions, induction: bool, seconds: float
) -> Atlas:
    """The :class:`Atlas` of a whole corpus's merged :class:`AtlasSums` (``seconds``: how long the run took).

    Raises:
        InputError: ``corpus_empty`` when no text had a token.
    """
    began = time.perf_counter()
    if sums.statistics is None:
        raise InputError(f"{EMPTY} (no line has a character the tokenizer keeps)", "corpus_empty")
    events = _events_frame(sums.tops, sums.reservoir, loaded, texts, options.max_length)
    heads_frame = _heads_frame(events, sums.statistics, sums.heads, loaded, induction)
    kept = {}
    for i in sorted(set(events["text"].tolist())):
        a, b = texts[i]
        kept[i] = (a, b, _token_count(loaded.tokenizer, a, b, options.max_length))
    seconds += time.perf_counter() - began
    return Atlas(
        events,
        heads_frame,
        kept,
        loaded.info.name,
        asdict(options),
        sums.used,
        sums.skipped,
        sums.tokens,
        seconds,
        sums.forward_seconds,
    )


def _token_count(tokenizer, a: str, b: str | None, max_length: int) -> int:
    _, rows = padded.encode_batch(tokenizer, [(a, b)], max_length)
    return len(rows[0].input_ids)


def _offer_text(tops, weights: np.ndarray, allowed: np.ndarray, token_strings: list, text: int, fold: bool) -> None:
    """Offer one text's events to every head's :class:`RunningTop`, strongest first, only those at or above
    each head's last row."""
    thresholds = np.array([[head.threshold() for head in layer] for layer in tops])  # (L, h)
    candidate = (weights >= thresholds[:, :, None, None]) & allowed  # (L, h, n, n)
    ls, hs, qs, ks = np.nonzero(candidate)
    ws = weights[ls, hs, qs, ks]
    order = np.lexsort((ks, qs, -ws, hs, ls))  # per head, strongest first, then query, then key
    ls, hs, qs, ks, ws = ls[order], hs[order], qs[order], ks[order], ws[order]
    boundaries = np.flatnonzero(np.diff(ls * weights.shape[1] + hs)) + 1
    for segment in np.split(np.arange(len(ls)), boundaries):
        if not len(segment):
            continue
        running = tops[ls[segment[0]]][hs[segment[0]]]
        for i in segment:
            q, k = int(qs[i]), int(ks[i])
            query_token, key_token = token_strings[q], token_strings[k]
            pair = (query_token, key_token) if fold else (text, q, k)
            if not running.offer((-float(ws[i]), text, q, k), pair, query_token, key_token):
                break


def _events_frame(tops, reservoir: Reservoir | None, loaded, texts: Texts, max_length: int) -> pd.DataFrame:
    rows = []
    for layer, layer_tops in enumerate(tops):
        for head, running in enumerate(layer_tops):
            for rank, ((weight, text, q, k), query_token, key_token, folded) in enumerate(running.rows()):
                rows.append((layer, head, "top", rank, text, q, k, query_token, key_token, -weight, k - q, folded))
    if reservoir is not None:
        drawn = np.isfinite(reservoir.key)
        referenced = sorted(set(reservoir.text[drawn].tolist()))
        token_strings = {}
        for i in referenced:
            _, encoded = padded.encode_batch(loaded.tokenizer, [texts[i]], max_length)
            token_strings[i] = loaded.tokenizer.convert_ids_to_tokens(encoded[0].input_ids)
        for layer, head, rank in zip(*np.nonzero(drawn), strict=True):
            text = int(reservoir.text[layer, head, rank])
            q, k = int(reservoir.query[layer, head, rank]), int(reservoir.key_pos[layer, head, rank])
            strings = token_strings[text]
            weight = float(reservoir.weight[layer, head, rank])
            rows.append(
                (int(layer), int(head), "typical", int(rank), text, q, k, strings[q], strings[k], weight, k - q, 1)
            )
    frame = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    frame = frame.astype(
        {c: "int64" for c in ("layer", "head", "rank", "text", "query", "key", "distance", "folded")}
        | {"weight": "float64", "kind": str, "query_token": str, "key_token": str}
    )
    kind_order = frame["kind"].map(KINDS.index)
    return (
        frame.assign(_k=kind_order)
        .sort_values(["layer", "head", "_k", "rank"])
        .drop(columns="_k")
        .reset_index(drop=True)
    )


def _heads_frame(events: pd.DataFrame, statistic_sums, sums: _HeadSums, loaded, induction: bool) -> pd.DataFrame:
    frame = stats.statistics_frame(statistic_sums)
    top = events[events["kind"] == "top"].groupby(["layer", "head"])
    own = pd.DataFrame(
        {"top_weight": top["weight"].mean(), "top_texts": top["text"].nunique().astype("float64")}
    ).reset_index()
    frame = frame.merge(own, on=["layer", "head"], how="left")
    for name, values in sums.means().items():
        frame[name] = values.reshape(-1)  # (L * h,), layer-major
    frame["induction"] = np.nan
    if induction:
        length = min(head_scores.DEFAULT_LENGTH, head_scores.longest_length(loaded))
        if length >= 2:
            scores = head_scores.model_head_scores(loaded, length=length)
            frame["induction"] = scores.repeated["induction"].reshape(-1)
    columns = ["layer", "head", *HEAD_NUMBERS, *(c for c in stats.STATISTICS), "tags"]
    return frame[columns]


def atlas_file_name(atlas: Atlas) -> str:
    """A file name for the atlas: ``atlas-MODEL.parquet`` (the model's last path part)."""
    name = Path(atlas.model).name or "model"
    return f"atlas-{''.join(c if c.isalnum() or c in '-_.' else '_' for c in name)}.parquet"
