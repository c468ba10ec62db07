"""Statistics, head similarity and head importance over a corpus, in padded batches.

A corpus is plain text, one text per line; a tab splits a line into a sentence pair. Texts run in
batches padded to the longest; each text's attention is cut back to its own tokens before anything
is computed, and padded keys get weight 0 from the model's mask, so a text's numbers are the same
alone or in any batch. A corpus larger than the operator's limits (texts, tokens:
:class:`attention_viz.settings.Limits`) is refused before anything runs. Progress is reported through a
callback, in texts (with fractions while a batch's head importance runs, one step per layer), and the
run stops between batches, or between layers of head importance, when ``cancel()`` says so;
:func:`seconds_left` turns the progress into an estimate of the time left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd
import torch

from attention_viz import settings
from attention_viz.analysis import importance as importance_module
from attention_viz.analysis import similarity, stats
from attention_viz.extraction import InputError
from attention_viz.extraction import batch as padded
from attention_viz.models.loading import LoadedModel

BUNDLED_CORPUS = Path(__file__).resolve().parents[2] / "assets" / "corpus" / "sentences.txt"
Progress = Callable[[float, int], None]  # (texts done, a fraction while a batch's importance runs; texts in all)
Texts = Sequence[tuple[str, str | None]]
EMPTY = "the corpus is empty: give one text per line"


class CancelledError(RuntimeError):
    """The run was cancelled (``cancel()`` returned True) before it finished."""


@dataclass(frozen=True)
class CorpusResult:
    """Per-head results over a corpus.

    Attributes:
        statistics: one row per head (``layer``, ``head``, the statistics of
            :data:`attention_viz.analysis.stats.STATISTICS`, ``tags``, and ``importance`` when asked for).
        divergence: ``(n, n)`` mean JS divergence between heads (bits), ``n = layers * heads``; None
            unless asked for.
        num_texts: texts used; num_skipped: lines with no token left after normalisation.
        num_tokens: tokens in all; num_truncated: texts at the model's maximum length (cut).
    """

    statistics: pd.DataFrame
    divergence: np.ndarray | None
    num_texts: int
    num_skipped: int
    num_tokens: int
    num_truncated: int


def bundled_corpus() -> str:
    """The text of the bundled corpus (``assets/corpus/sentences.txt``: English and Chinese, some pairs)."""
    return BUNDLED_CORPUS.read_text(encoding="utf-8")


def corpus_lines(text: str) -> list[str]:
    """The lines of a corpus file: a line ends at ``\\n`` or ``\\r\\n`` only, and a leading byte-order mark is
    dropped. Form feeds, vertical tabs, the file/group/record separators, NEL and the Unicode line and
    paragraph separators stay inside their line (``str.splitlines()`` would split at each); a final line
    break ends the last line and makes no empty one."""
    lines = text.removeprefix("\ufeff").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def blank_lines(text: str) -> int:
    """Lines of a corpus file that :func:`parse_corpus` skips: blank, or with nothing before a tab."""
    return sum(not line.partition("\t")[0].strip() for line in corpus_lines(text))


def parse_corpus(text: str) -> list[tuple[str, str | None]]:
    """Texts of a corpus file: one per non-blank line (lines as :func:`corpus_lines` splits them);
    ``A<TAB>B`` is a sentence pair.

    Raises:
        InputError: ``corpus_empty`` if there is no text at all.
    """
    texts = []
    for line in corpus_lines(text):
        first, _, second = line.partition("\t")
        if first.strip():
            texts.append((first.strip(), second.strip() or None))
    if not texts:
        raise InputError(EMPTY, "corpus_empty")
    return texts


def seconds_left(elapsed: float, done: float, total: int) -> float | None:
    """Seconds the rest of a run takes at the rate so far; ``None`` before anything is done.

    Args:
        elapsed: seconds since the run started.
        done: texts done (as reported to the progress callback).
        total: texts in all.
    """
    return None if done <= 0 else elapsed * (total - done) / done


def check_corpus(tokenizer, texts: Texts, limits: settings.Limits, max_length: int) -> int:
    """Refuse a corpus over the operator's limits, or one whose every line normalises to nothing, before it
    runs; return its tokens (each text cut to ``max_length``).

    Raises:
        InputError: ``corpus_too_large`` with ``what`` (``texts`` or ``tokens``), ``count``, ``limit`` and
            ``setting`` (the environment variable that raises the limit); ``corpus_empty`` when no line
            keeps a token (only zero-width characters, byte-order marks and the like).
    """
    if len(texts) > limits.max_corpus_texts:
        _too_large("texts", len(texts), limits.max_corpus_texts)
    tokens = words = 0
    for a, b in texts:
        encoded = tokenizer(a, b, truncation=True, max_length=max_length, return_special_tokens_mask=True)
        tokens += len(encoded["input_ids"])
        words += len(encoded["special_tokens_mask"]) - sum(encoded["special_tokens_mask"])
    if tokens > limits.max_corpus_tokens:
        _too_large("tokens", tokens, limits.max_corpus_tokens)
    if not words:
        raise InputError(f"{EMPTY} (no line has a character the tokenizer keeps)", "corpus_empty")
    return tokens


def _too_large(what: str, count: int, limit: int) -> NoReturn:
    setting = f"{settings.ENV_PREFIX}MAX_CORPUS_{what.upper()}"
    raise InputError(
        f"the corpus has {count:,} {what}; the limit is {limit:,} ({setting}): use a smaller corpus",
        "corpus_too_large",
        what=what,
        count=count,
        limit=limit,
        setting=setting,
    )


def batch_attention(
    loaded: LoadedModel, texts: Texts, batch_size: int = 16, max_length: int | None = None
) -> Iterator[tuple[dict[str, torch.Tensor], list[tuple[np.ndarray, stats.TokenKinds]]]]:
    """The pretrained model's attention for each text, computed in padded batches
    (:mod:`attention_viz.extraction.batch`), each text's weights checked as a single text's are.

    Token type ids are asked for explicitly (``return_token_type_ids=True``): some tokenizers leave
    them out by default; the model is given them only if its family takes them. A model with one token type
    gets type 0 for both sentences of a pair, as :func:`attention_viz.extraction.encode` gives it. A
    decoder (GPT-2) reads each pair as one text, sentence A and B joined by a space.

    Args:
        loaded: the model.
        texts: ``(sentence A, sentence B or None)`` pairs.
        batch_size: texts per forward pass.
        max_length: tokens per text (longer texts are cut); default the model's maximum positions.

    Yields:
        ``(inputs, items)`` per batch: ``inputs`` the padded ``(b, t)`` tensors given to the model;
        ``items`` per text ``(weights, kinds)``, ``weights`` float32 ``(layers, heads, n, n)`` cut to
        the text's ``n`` real tokens.

    Raises:
        AttentionError: if the model returns no or invalid attention.
        InputError: if ``batch_size`` is below 1.
    """
    if batch_size < 1:
        raise InputError(f"the batch size must be at least 1, got {batch_size}")
    tokenizer, info = loaded.tokenizer, loaded.info
    types = loaded.encoder.config.type_vocab_size
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        inputs, rows = padded.encode_batch(tokenizer, chunk, max_length or info.max_positions, types)
        weights = padded.batch_attention(loaded.model, inputs, [len(row.input_ids) for row in rows], start)
        items = []
        for text, text_weights in zip(rows, weights, strict=True):
            tokens = tokenizer.convert_ids_to_tokens(text.input_ids)
            kinds = stats.TokenKinds.from_tokens(
                tokens, text.special, text.segments, tokenizer.cls_token, tokenizer.sep_token
            )
            items.append((text_weights, kinds))
        yield inputs, items


@dataclass
class CorpusSums:
    """Per-head sums over some texts of a corpus, before they are divided into means.

    Sums of two parts of a corpus add up (:meth:`merge`) to the sums of the whole, so parts can run in
    different processes or on different machines; :func:`finish_statistics` turns them into the result.

    Attributes:
        statistics: ``(layers, heads, k)`` :func:`attention_viz.analysis.stats.statistic_sums` added over
            texts; None while no text had a token.
        divergence: ``(n, n)`` :func:`attention_viz.analysis.similarity.head_divergence_sums` added over
            texts, ``queries`` their query tokens; None unless asked for.
        importance: ``(layers, heads)`` :func:`attention_viz.analysis.importance.importance_sums` added
            over batches; None unless asked for.
        used, skipped, tokens, truncated: as in :class:`CorpusResult` (``num_*``).
    """

    statistics: np.ndarray | None = None
    divergence: np.ndarray | None = None
    queries: int = 0
    importance: np.ndarray | None = None
    used: int = 0
    skipped: int = 0
    tokens: int = 0
    truncated: int = 0

    def merge(self, other: CorpusSums) -> CorpusSums:
        """The sums of both parts (float64 additions: the order changes them by round-off only)."""

        def add(a, b):
            return b if a is None else a if b is None else a + b

        return CorpusSums(
            add(self.statistics, other.statistics),
            add(self.divergence, other.divergence),
            self.queries + other.queries,
            add(self.importance, other.importance),
            self.used + other.used,
            self.skipped + other.skipped,
            self.tokens + other.tokens,
            self.truncated + other.truncated,
        )


def corpus_sums(
    loaded: LoadedModel,
    texts: Texts,
    batch_size: int = 16,
    max_length: int | None = None,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    importance: bool = False,
    divergence: bool = False,
) -> CorpusSums:
    """The sums of :class:`CorpusSums` over ``texts``, in batches of ``batch_size``; no limit is checked here.

    Args: as :func:`corpus_statistics`; ``max_length`` tokens per text (default the model's maximum), and
    ``progress`` counts in the texts of this call (``(done, len(texts))``).

    Raises:
        AttentionError: the model returns no or invalid attention.
        CancelledError: when ``cancel()`` returned True.
    """
    max_length = max_length or loaded.info.max_positions
    stop = cancel or (lambda: False)
    sums, done = CorpusSums(), 0
    for inputs, items in batch_attention(loaded, texts, batch_size, max_length):
        if stop():
            raise CancelledError(f"cancelled after {done} of {len(texts)} texts")
        real = [bool((~(kinds.cls | kinds.sep)).any()) for _, kinds in items]
        for (weights, kinds), has_words in zip(items, real, strict=True):
            if not has_words:  # only [CLS] [SEP]: the line normalised to nothing
                sums.skipped += 1
                continue
            n = weights.shape[-1]
            sums.used, sums.tokens, sums.truncated = sums.used + 1, sums.tokens + n, sums.truncated + (n >= max_length)
            text_sums = stats.statistic_sums(weights, kinds, causal=loaded.info.causal, windows=loaded.info.windows)
            sums.statistics = text_sums if sums.statistics is None else sums.statistics + text_sums
            if divergence:
                d, q = similarity.head_divergence_sums(weights)
                sums.divergence = d if sums.divergence is None else sums.divergence + d
                sums.queries += q
        if importance and any(real):
            keep = torch.tensor(real)
            batch = [inputs[k][keep] for k in ("input_ids", "token_type_ids", "attention_mask")]
            on_layer = _layer_steps(progress, stop, done, len(items), len(texts), loaded.info.num_layers)
            part = importance_module.importance_sums(loaded.encoder, *batch, on_layer=on_layer)
            sums.importance = part if sums.importance is None else sums.importance + part
        done += len(items)
        if progress is not None:
            progress(done, len(texts))
    return sums


def finish_statistics(sums: CorpusSums) -> CorpusResult:
    """The means of :class:`CorpusSums` over a whole corpus.

    Raises:
        InputError: ``corpus_empty`` when no text had a token.
    """
    if sums.statistics is None:  # check_corpus found a token; the model's batches must have it too
        raise InputError(f"{EMPTY} (no line has a character the tokenizer keeps)", "corpus_empty")
    frame = stats.statistics_frame(sums.statistics)
    if sums.importance is not None:
        frame["importance"] = (sums.importance / sums.used).reshape(-1)  # (L * h,), layer-major
    mean_divergence = None if sums.divergence is None else sums.divergence / sums.queries
    return CorpusResult(frame, mean_divergence, sums.used, sums.skipped, sums.tokens, sums.truncated)


def corpus_statistics(
    loaded: LoadedModel,
    texts: Texts,
    batch_size: int = 16,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    importance: bool = False,
    divergence: bool = False,
    limits: settings.Limits | None = None,
) -> CorpusResult:
    """Per-head statistics (Clark et al. 2019) over a corpus, optionally head importance and similarity.

    Args:
        loaded: the model.
        texts: ``(sentence A, sentence B or None)`` pairs, e.g. from :func:`parse_corpus`.
        batch_size: texts per forward pass (padded to the longest in the batch).
        progress: called with ``(0, texts in all)`` first, then ``(texts done, texts in all)`` after each
            batch and, with importance, after each layer of it (a fraction of the batch).
        cancel: called before each batch and after each layer of importance; True stops the run with
            :class:`CancelledError`.
        importance: also compute head importance (Michel et al. 2019): per layer one extra pass of
            the layers from it upward for every head, so several times slower.
        divergence: also compute the JS divergence between every pair of heads.
        limits: the operator's limits (default: :class:`~attention_viz.settings.Limits`' defaults): texts and tokens
            of the corpus, tokens per text.

    Returns:
        :class:`CorpusResult`; importance is averaged over texts, the statistics over query tokens.

    Raises:
        InputError: no texts or none with a token (``corpus_empty``), more texts or tokens than the
            limits (``corpus_too_large``, see :func:`check_size`), or a batch size below 1.
        AttentionError: the model returns no or invalid attention.
        CancelledError: when ``cancel()`` returned True.
    """
    if not texts:
        raise InputError(EMPTY, "corpus_empty")
    limits = settings.Limits() if limits is None else limits
    max_length = limits.tokens_for(loaded.info.max_positions)
    check_corpus(loaded.tokenizer, texts, limits, max_length)
    if progress is not None:
        progress(0, len(texts))
    sums = corpus_sums(loaded, texts, batch_size, max_length, progress, cancel, importance, divergence)
    return finish_statistics(sums)


def _layer_steps(progress: Progress | None, stop: Callable[[], bool], done: int, size: int, total: int, layers: int):
    """``on_layer`` for one batch's head importance: report a fraction of the batch, stop if asked."""

    def on_layer(layer: int) -> None:
        if stop():
            raise CancelledError(f"cancelled after {done} of {total} texts")
        if progress is not None:
            progress(done + size * (layer + 1) / (layers + 1), total)  # the batch's last step: after its importance

    return on_layer
