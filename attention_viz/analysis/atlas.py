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
events of those pairs at or above the current last row (which only rises), 32 bytes each: the one thing
that grows with the corpus, as the folded counts do. The atlas stores only the texts its events refer to.

Speed: the forwards cost most; what the atlas adds is done for all heads at once in numpy, not event by
event in Python. Of a text only the events at or above a head's current last row (for the sample: above
its smallest kept key) are taken, and they are sorted in with the kept ones once a batch
(:class:`TopEvents`, :class:`Reservoir`); the rows are exactly those of sorting every event of the corpus.

The forwards are the corpus path's (:mod:`attention_viz.extraction.batch`: padded batches, each text's
weights cut to its own tokens and checked). The per-head numbers are corpus means over query tokens:
the statistics of :mod:`attention_viz.analysis.stats` (Clark et al. 2019), the ``duplicate`` and ``sink``
scores of :mod:`attention_viz.analysis.head_scores` (TransformerLens; Xiao et al. 2023) over the corpus, the
shares left out (``special``, ``self``), the top events' mean weight (``top_weight``) and the number of
different texts they come from (``top_texts``), and optionally the ``induction`` score on seeded random
sequences (Olsson et al. 2022) and the ``importance`` by ablation of a corpus run (:func:`with_importance`).

An atlas is saved as one Parquet file (:meth:`Atlas.to_parquet`, read back by :func:`read_atlas`): the
events as rows, the heads, texts and options as JSON in the file's metadata.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
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
    "importance": "importance by ablation over the corpus (Michel et al. 2019; see with_importance)",
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
    for name in NUMBERS:  # a file written before a number was added: not known there
        if name not in heads:
            heads.insert(len(heads.columns) - 1, name, np.nan)
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


# --- the running top events of every head -------------------------------------------------------------


class TopEvents:
    """Every head's ``top`` strongest events, folded by (query token, key token) pair, over a stream of texts.

    An event's order key is ``(-weight, text, query, key)``: smaller is stronger. A head's top events depend
    only on its events at or above its last row, so that is all this keeps: per head, the events of its
    kept pairs at or above the last row (all its events while it has fewer than ``top`` pairs). Of a text,
    :meth:`offer` takes only the events at or above each head's last row so far (the last row only rises);
    :meth:`settle` sorts them in with the kept ones and cuts at the new last row. Texts may come in any
    order, and :meth:`merge` joins two streams: the rows (:meth:`rows`) are exactly what sorting every event
    of the corpus gives (see the module docstring).

    The events of all heads are held in flat arrays, one entry per event (``head`` is
    ``layer · heads + head``), so that a batch's events are sorted and cut for all heads at once by numpy,
    not one event at a time in Python. Token strings are held once each, as codes into :attr:`strings`.

    Args:
        layers, heads: the model's. top: pairs kept per head. fold: fold by pair (else every event is a pair
            of its own, and ``folded`` is 1).
    """

    def __init__(self, layers: int, heads: int, top: int, fold: bool = True):
        self.layers, self.heads, self.top, self.fold = layers, heads, top, fold
        self.events = {name: np.zeros(0, dtype=dtype) for name, dtype in EVENT_ARRAYS.items()}
        self.floor = np.full((layers, heads), -np.inf, dtype=np.float32)  # each head's last row's weight
        self.strings: list[str] = []  # token strings by code: at most the vocabulary's
        self._codes: dict[str, int] = {}
        self._waiting: list[dict[str, np.ndarray]] = []  # offered events, not yet settled
        self._waiting_events = 0

    def codes(self, token_strings) -> np.ndarray:
        """``(n,)`` int32: the codes of ``n`` token strings (a string not seen before gets the next one)."""
        for s in token_strings:
            if s not in self._codes:
                self._codes[s] = len(self.strings)
                self.strings.append(s)
        return np.array([self._codes[s] for s in token_strings], dtype=np.int32)

    def offer(self, weights: np.ndarray, allowed: np.ndarray, token_strings, text: int) -> None:
        """One text's events: ``weights`` ``(layers, heads, n, n)``, those ``allowed`` (``(n, n)`` bool, see
        :func:`allowed_keys`); each head's at or above its last row wait for :meth:`settle`."""
        candidate = allowed & (weights >= self.floor[:, :, None, None])  # (L, h, n, n)
        layer, head, query, key = np.nonzero(candidate)
        if len(layer):
            codes = self.codes(token_strings)
            self._waiting.append(
                {
                    "head": (layer * self.heads + head).astype(np.int32),
                    "weight": weights[candidate],  # in np.nonzero's order, as the positions
                    "text": np.full(len(layer), text, dtype=np.int64),
                    "query": query.astype(np.int32),
                    "key": key.astype(np.int32),
                    "query_code": codes[query],
                    "key_code": codes[key],
                    "length": np.full(len(layer), len(token_strings), dtype=np.int32),
                }
            )
            self._waiting_events += len(layer)
            if self._waiting_events > 4 * self.top * self.layers * self.heads:  # a while to sort: raise the floor
                self.settle()

    def settle(self) -> None:
        """Sort the waiting events in with the kept ones; keep per head its top pairs' events at or above its
        last row, and raise :attr:`floor` to the last row."""
        if self._waiting:
            waiting, self._waiting, self._waiting_events = self._waiting, [], 0
            self._cut({name: np.concatenate([self.events[name], *(w[name] for w in waiting)]) for name in self.events})

    def _cut(self, events: dict[str, np.ndarray]) -> None:
        ranked = _rank_events(events)  # positions in ``events``, sorted
        heads = events["head"][ranked]
        firsts, rank, _ = _first_of_each_pair(heads, self._pairs(events)[ranked])
        last = np.full(self.layers * self.heads, len(heads))  # a head of fewer than ``top`` pairs keeps all
        at_last = firsts[rank == self.top - 1]  # each full head's last row
        last[heads[at_last]] = at_last
        kept = ranked[np.arange(len(heads)) <= last[heads]]
        floor = np.full(self.layers * self.heads, -np.inf, dtype=np.float32)
        floor[heads[at_last]] = events["weight"][ranked[at_last]]
        self.floor = floor.reshape(self.layers, self.heads)
        self.events = {name: values[kept].astype(EVENT_ARRAYS[name], copy=False) for name, values in events.items()}

    def _pairs(self, events: dict[str, np.ndarray]) -> np.ndarray:
        """Each event's pair as one int64: its two token codes, or (not folded) its place in the arrays."""
        if not self.fold:
            return np.arange(len(events["head"]), dtype=np.int64)
        return events["query_code"].astype(np.int64) * max(len(self.strings), 1) + events["key_code"]

    def merge(self, other: TopEvents) -> TopEvents:
        """The top events of both streams: what offering ``other``'s texts after these would keep (an event
        either part left out is weaker than the merged last row)."""
        self.settle()
        other.settle()
        merged = TopEvents(self.layers, self.heads, self.top, self.fold)
        joined = {name: [] for name in self.events}
        for part in (self, other):
            recode = merged.codes(part.strings) if part.strings else np.zeros(0, dtype=np.int32)
            for name, values in part.events.items():
                joined[name].append(recode[values] if name.endswith("_code") else values)
        merged._cut({name: np.concatenate(parts) for name, parts in joined.items()})
        return merged

    def lengths(self) -> dict[int, int]:
        """``{text: its token count}`` of the texts of the kept events."""
        self.settle()
        return dict(zip(self.events["text"].tolist(), self.events["length"].tolist(), strict=True))

    def rows(self) -> list[tuple]:
        """``(layer, head, rank, text, query, key, query token, key token, weight, folded)`` of each head's
        kept pairs, layer-major, strongest first; ``folded``: the pair's events at or above the last row."""
        self.settle()
        events = self.events
        firsts, rank, folded = _first_of_each_pair(events["head"], self._pairs(events))
        return [
            (
                *divmod(int(events["head"][i]), self.heads),
                int(r),
                int(events["text"][i]),
                int(events["query"][i]),
                int(events["key"][i]),
                self.strings[events["query_code"][i]],
                self.strings[events["key_code"][i]],
                float(events["weight"][i]),
                int(count),
            )
            for i, r, count in zip(firsts, rank, folded, strict=True)
        ]


# One entry per event of :class:`TopEvents`: its head (``layer · heads + head``), weight, text, positions, the
# codes of its query and key tokens and its text's token count.
EVENT_ARRAYS = {
    "head": np.int32,
    "weight": np.float32,
    "text": np.int64,
    "query": np.int32,
    "key": np.int32,
    "query_code": np.int32,
    "key_code": np.int32,
    "length": np.int32,
}


def _rank_events(events: dict[str, np.ndarray]) -> np.ndarray:
    """The order that sorts events by head, then by order key: strongest first, then text, query, key."""
    return np.lexsort((events["key"], events["query"], events["text"], -events["weight"], events["head"]))


def _first_of_each_pair(heads: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For events sorted by :func:`_rank_events`: the index of each (head, pair)'s first event, in order; its
    rank among its head's pairs (from 0); and how many events the (head, pair) has. A speed trick: one
    ``np.unique`` over all heads instead of a dictionary per head."""
    groups = heads.astype(np.int64) * (int(pairs.max(initial=0)) + 1) + pairs
    _, firsts, counts = np.unique(groups, return_index=True, return_counts=True)  # first index: a stable sort
    order = np.argsort(firsts)
    firsts, counts = firsts[order], counts[order]
    first_heads = heads[firsts]
    rank = np.arange(len(firsts)) - np.searchsorted(first_heads, first_heads)  # heads are sorted
    return firsts, rank, counts


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
    keys = np.random.default_rng([seed, text]).random(weights.shape)  # (L, h, n, n): u in [0, 1)
    with np.errstate(divide="ignore", invalid="ignore"):  # in place: the same numbers, fewer copies
        np.log(keys, out=keys)
        np.divide(keys, weights, out=keys)  # float32 weights taken as float64, exactly
    keys[(weights <= 0) | np.isnan(keys)] = -np.inf
    keys[..., ~np.asarray(allowed, dtype=bool)] = -np.inf
    return keys


class Reservoir:
    """Each head's ``size`` events with the largest reservoir keys so far: ``(layers, heads, size)`` arrays
    ``key``, ``text``, ``query``, ``key_pos`` and ``weight``, largest key first (``key`` -inf and ``text`` -1
    while a head has fewer events). :meth:`offer` takes a text's events and :meth:`settle` sorts them in
    (:meth:`add` does both); on a tie of keys the earlier event stays. With each event its ``query_token``,
    ``key_token`` and its text's token count ``length`` are kept, so the events need no tokenizer later."""

    NAMES = ("key", "text", "query", "key_pos", "weight", "query_token", "key_token", "length")

    def __init__(self, layers: int, heads: int, size: int):
        shape = (layers, heads, size)
        self.key = np.full(shape, -np.inf)
        self.text, self.query, self.key_pos, self.length = (np.full(shape, -1, dtype=np.int64) for _ in range(4))
        self.weight = np.zeros(shape, dtype=np.float64)
        self.query_token, self.key_token = np.full(shape, "", dtype=object), np.full(shape, "", dtype=object)
        self.size = size
        self._waiting: list[dict[str, np.ndarray]] = []  # offered events, flat, not yet sorted in
        self._waiting_events = 0

    def merge(self, other: Reservoir) -> Reservoir:
        """The reservoir of both streams: the ``size`` largest keys of the two."""
        self.settle()
        other.settle()
        merged = Reservoir(*self.key.shape)
        joined = {name: np.concatenate([getattr(self, name), getattr(other, name)], axis=-1) for name in self.NAMES}
        order = np.argsort(-joined["key"], axis=-1, kind="stable")[..., : self.size]
        for name, values in joined.items():
            setattr(merged, name, np.take_along_axis(values, order, axis=-1))
        return merged

    def add(self, keys: np.ndarray, weights: np.ndarray, text: int, tokens=None) -> None:
        """One text's events into every head's reservoir: :meth:`offer`, then :meth:`settle`."""
        self.offer(keys, weights, text, tokens)
        self.settle()

    def offer(self, keys: np.ndarray, weights: np.ndarray, text: int, tokens=None) -> None:
        """One text's events: ``keys`` from :func:`sample_keys` and ``weights``, both ``(layers, heads, n, n)``;
        ``tokens``: its ``n`` token strings (None: kept as empty strings).

        A speed trick: only an event whose key is above its head's smallest kept key can enter (that key
        only rises; the others would sort behind every kept entry), so only those wait, as flat entries."""
        heads, n = keys.shape[1], keys.shape[-1]
        enters = keys > self.key[..., -1, None, None]  # (L, h, n, n)
        layer, head, query, key = np.nonzero(enters)
        if len(layer):
            strings = np.array([""] * n if tokens is None else list(tokens), dtype=object)
            self._waiting.append(
                {
                    "head": layer * heads + head,
                    "key": keys[enters],
                    "text": np.full(len(layer), text, dtype=np.int64),
                    "query": query,
                    "key_pos": key,
                    "weight": np.asarray(weights, dtype=np.float64)[enters],
                    "query_token": strings[query],
                    "key_token": strings[key],
                    "length": np.full(len(layer), n, dtype=np.int64),
                }
            )
            self._waiting_events += len(layer)
            if self._waiting_events > 4 * self.key.size:  # a while to sort: raise the smallest kept keys
                self.settle()

    def settle(self) -> None:
        """Sort the waiting events in: per head the ``size`` largest keys of the kept and the waiting ones, on a
        tie the one offered first (the kept ones before all)."""
        if not self._waiting:
            return
        waiting, self._waiting, self._waiting_events = self._waiting, [], 0
        layers, heads, size = self.key.shape
        kept = {name: getattr(self, name).reshape(-1) for name in self.NAMES}
        kept["head"] = np.repeat(np.arange(layers * heads), size)
        joined = {name: np.concatenate([kept[name], *(w[name] for w in waiting)]) for name in kept}
        order = np.lexsort((-joined["key"], joined["head"]))  # by head, largest key first; stable on ties
        heads_sorted = joined["head"][order]
        rank = np.arange(len(order)) - np.searchsorted(heads_sorted, heads_sorted)  # within the head
        chosen = order[rank < size]  # ``size`` a head: it had as many kept entries
        for name in self.NAMES:
            setattr(self, name, joined[name][chosen].reshape(layers, heads, size))


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
        limits: the operator's limits (default: :class:`~attention_viz.settings.Limits`' defaults).

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
    limits = settings.Limits() if limits is None else limits
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

    tops: TopEvents
    reservoir: Reservoir | None
    statistics: stats.StatisticSums | None
    heads: _HeadSums
    used: int = 0
    skipped: int = 0
    tokens: int = 0
    forward_seconds: float = 0.0

    def merge(self, other: AtlasSums) -> AtlasSums:
        """Both parts' sums (``other`` holds later texts)."""
        tops = self.tops.merge(other.tops)
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
        TopEvents(layers, heads, options.top, options.fold),
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
        part.tops.settle()  # the batch's events sorted in for all heads at once
        if part.reservoir is not None:
            part.reservoir.settle()
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
    part.tops.offer(weights, allowed, token_strings, index)
    if part.reservoir is not None:
        part.reservoir.offer(sample_keys(weights, allowed, options.seed, index), weights, index, token_strings)
    kinds = stats.TokenKinds.from_tokens(
        token_strings, row.special, row.segments, tokenizer.cls_token, tokenizer.sep_token
    )
    text_sums = stats.statistic_sums(weights, kinds, causal=info.causal, windows=info.windows)
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
    top_rows, lengths = sums.tops.rows(), sums.tops.lengths()
    if sums.reservoir is not None:
        drawn = np.isfinite(sums.reservoir.key)
        lengths.update(zip(sums.reservoir.text[drawn].tolist(), sums.reservoir.length[drawn].tolist(), strict=True))
    events = _events_frame(top_rows, sums.reservoir)
    heads_frame = _heads_frame(events, sums.statistics, sums.heads, loaded, induction)
    kept = {i: (*texts[i], lengths[i]) for i in sorted(set(events["text"].tolist()))}
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


def _events_frame(top_rows: list[tuple], reservoir: Reservoir | None) -> pd.DataFrame:
    """The events table of :meth:`TopEvents.rows` and the reservoir's events."""
    rows = [
        (layer, head, "top", rank, text, q, k, query_token, key_token, weight, k - q, folded)
        for layer, head, rank, text, q, k, query_token, key_token, weight, folded in top_rows
    ]
    if reservoir is not None:
        drawn = np.isfinite(reservoir.key)
        for layer, head, rank in zip(*np.nonzero(drawn), strict=True):
            text = int(reservoir.text[layer, head, rank])
            q, k = int(reservoir.query[layer, head, rank]), int(reservoir.key_pos[layer, head, rank])
            tokens = reservoir.query_token[layer, head, rank], reservoir.key_token[layer, head, rank]
            weight = float(reservoir.weight[layer, head, rank])
            rows.append((int(layer), int(head), "typical", int(rank), text, q, k, *tokens, weight, k - q, 1))
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
    frame["induction"] = frame["importance"] = np.nan
    if induction:
        length = min(head_scores.DEFAULT_LENGTH, head_scores.longest_length(loaded))
        if length >= 2:
            scores = head_scores.model_head_scores(loaded, length=length)
            frame["induction"] = scores.repeated["induction"].reshape(-1)
    columns = ["layer", "head", *HEAD_NUMBERS, *(c for c in stats.STATISTICS), "tags"]
    return frame[columns]


def with_importance(atlas: Atlas, statistics: pd.DataFrame) -> Atlas:
    """The atlas with its heads' ``importance`` from a corpus run's per-head table (the ``importance`` column
    of :func:`attention_viz.analysis.corpus_statistics` with ``importance=True``: the mean cosine distance of
    the sentence embedding without the head, Michel et al. 2019), matched by layer and head.

    Raises:
        ValueError: ``statistics`` has no ``importance``, or not the atlas's heads.
    """
    if "importance" not in statistics:
        raise ValueError("the corpus statistics have no importance: run them with importance=True")
    found = atlas.heads[["layer", "head"]].merge(
        statistics[["layer", "head", "importance"]], on=["layer", "head"], how="left", validate="one_to_one"
    )
    if len(statistics) != len(atlas.heads) or found["importance"].isna().any():
        raise ValueError(f"the statistics are of other heads ({len(statistics)} rows for {len(atlas.heads)} heads)")
    heads = atlas.heads.assign(importance=found["importance"].to_numpy(dtype=np.float64))
    return replace(atlas, heads=heads)


def atlas_file_name(atlas: Atlas) -> str:
    """A file name for the atlas: ``atlas-MODEL.parquet`` (the model's last path part)."""
    name = Path(atlas.model).name or "model"
    return f"atlas-{''.join(c if c.isalnum() or c in '-_.' else '_' for c in name)}.parquet"
