"""Corpus statistics and head importance on a Ray cluster (https://docs.ray.io), for corpora past one machine.

The corpus is cut into parts of whole batches; Ray actors, each holding the model loaded once, compute a
part's :class:`~attention_viz.analysis.corpus.CorpusSums` with the same code as the single-process run
(:func:`~attention_viz.analysis.corpus.corpus_sums`), and the parts' sums are merged here and divided once
(:func:`~attention_viz.analysis.corpus.finish_statistics`). Every batch holds the same texts as in the
single-process run, so each batch's numbers are the same and only the order of the float64 additions
differs: the result equals :func:`~attention_viz.analysis.corpus.corpus_statistics` to about 1e-15.

A worker that dies (its process killed, its machine lost) is restarted and its part run again, up to
``retries`` times; past that the run stops with :class:`DistributedError`. A result is never made of
fewer parts than the corpus has.

Ray is an optional extra (``pip install -e .[ray]``): this module imports it only when called, and the app
never imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from attention_viz import settings
from attention_viz.analysis import corpus
from attention_viz.analysis.corpus import CancelledError, CorpusResult, CorpusSums, Progress, Texts
from attention_viz.extraction import InputError

PARTS_PER_WORKER = 4  # parts per worker by default: a lost part costs a quarter of a worker's share
MAX_BATCHES_PER_PART = 64
IN_FLIGHT_PER_WORKER = 2  # the next part waits in the worker's queue while one runs
WAIT_S = 0.5  # how often cancel() is asked while parts run


class DistributedError(RuntimeError):
    """The Ray run could not finish: Ray is missing, the cluster cannot be reached, or a part failed more
    often than it may be retried. No partial result is returned."""


def _ray():
    try:
        import ray
    except ImportError:
        raise DistributedError(
            "Ray is not installed: pip install -e '.[ray]' (or pip install ray) to run on a cluster"
        ) from None
    return ray


def parts(num_texts: int, batch_size: int, texts_per_part: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each part: whole batches of ``batch_size`` (the last may be short).

    Raises:
        InputError: ``batch_size`` or ``texts_per_part`` below 1.
    """
    if batch_size < 1 or texts_per_part < 1:
        raise InputError(f"the batch size and texts per part must be at least 1, got {batch_size}, {texts_per_part}")
    size = math.ceil(texts_per_part / batch_size) * batch_size  # a part boundary is a batch boundary
    return [(start, min(start + size, num_texts)) for start in range(0, num_texts, size)]


def default_texts_per_part(num_texts: int, batch_size: int, workers: int) -> int:
    """About :data:`PARTS_PER_WORKER` parts per worker, at most :data:`MAX_BATCHES_PER_PART` batches each."""
    return max(batch_size, min(math.ceil(num_texts / (workers * PARTS_PER_WORKER)), batch_size * MAX_BATCHES_PER_PART))


class _Worker:
    """A Ray actor: the model loaded once, then the sums of each part it is given."""

    def __init__(self, model: str | None, threads: int):
        import torch

        from attention_viz.models.loading import load_model

        torch.set_num_threads(threads)  # float32 sums add in an order that depends on the thread count
        self.loaded = load_model(model)

    def sums(self, texts: Texts, batch_size: int, max_length: int, importance: bool, divergence: bool) -> CorpusSums:
        return corpus.corpus_sums(
            self.loaded, texts, batch_size, max_length, importance=importance, divergence=divergence
        )

    def atlas_sums(self, texts: Texts, first: int, options):
        from attention_viz.analysis import atlas

        return atlas.atlas_sums(self.loaded, texts, first, options)

    def pid(self) -> int:
        import os

        return os.getpid()


def corpus_statistics_on_ray(
    texts: Texts,
    model: str | None = None,
    address: str | None = None,
    batch_size: int = 16,
    workers: int | None = None,
    texts_per_part: int | None = None,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    importance: bool = False,
    divergence: bool = False,
    limits: settings.Limits | None = None,
    retries: int = 3,
    threads: int | None = None,
    cpus_per_worker: float = 1,
) -> CorpusResult:
    """:func:`~attention_viz.analysis.corpus.corpus_statistics` with the batches run on Ray actors.

    Args:
        texts: ``(sentence A, sentence B or None)`` pairs.
        model: hub name or local folder every worker loads (default the bundled model); a folder must
            exist at the same path on every machine of the cluster.
        address: the cluster (``ray://host:10001``, ``host:6379`` or ``auto``); None connects as
            ``ray.init()`` does (``RAY_ADDRESS``, else a cluster started on this machine, else a new local
            one for this run). A connection this call opened is closed at the end.
        batch_size: texts per forward pass, as in the single-process run.
        workers: actors to start (default: the cluster's CPUs divided by ``cpus_per_worker``).
        texts_per_part: texts per task (rounded up to whole batches); default :func:`default_texts_per_part`.
        progress: called with ``(0, texts in all)``, then ``(texts done, texts in all)`` as parts finish.
        cancel: asked every :data:`WAIT_S` seconds while parts run; True stops the run.
        importance, divergence: as in ``corpus_statistics``.
        limits: texts and tokens of the corpus and tokens per text (default :func:`attention_viz.settings.load`).
        retries: restarts of a dead worker and reruns of its part before the run stops.
        threads: torch threads in each worker; default this process's (``torch.get_num_threads()``). The
            single-process run's float32 matrix products add in an order that depends on the thread count,
            so its result is matched to 1e-15 with the same count and to about 1e-7 with another.
        cpus_per_worker: Ray CPUs each actor reserves (how many actors share a machine).

    Returns:
        :class:`~attention_viz.analysis.corpus.CorpusResult`, equal to the single-process run's.

    Raises:
        InputError, AttentionError: as ``corpus_statistics`` (a worker's error is raised as it was).
        CancelledError: when ``cancel()`` returned True.
        DistributedError: Ray missing or unreachable, or a part that failed ``retries + 1`` times.
    """
    import torch

    from attention_viz.models.loading import load_model

    if not texts:
        raise InputError(corpus.EMPTY, "corpus_empty")
    limits = settings.load().limits if limits is None else limits
    local = load_model(model)  # the tokenizer checks the corpus here, before any worker starts
    max_length = limits.tokens_for(local.info.max_positions)
    corpus.check_corpus(local.tokenizer, texts, limits, max_length)
    ray = _ray()
    opened = not ray.is_initialized()
    if opened:
        try:
            ray.init(address=address, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise DistributedError(
                f"cannot reach the Ray cluster at {address or 'the default address'}: {exc}"
            ) from None
    try:
        if workers is None:
            workers = max(1, int(ray.cluster_resources().get("CPU", 1) // cpus_per_worker))
        size = texts_per_part or default_texts_per_part(len(texts), batch_size, workers)
        spans = parts(len(texts), batch_size, size)
        actor = ray.remote(num_cpus=cpus_per_worker, max_restarts=retries, max_task_retries=retries)(_Worker)
        actors = [actor.remote(model, threads or torch.get_num_threads()) for _ in range(min(workers, len(spans)))]
        task = (batch_size, max_length, importance, divergence)
        return _run(ray, texts, spans, actors, task, progress, cancel or (lambda: False), retries)
    finally:
        if opened:
            ray.shutdown()


def _run(ray, texts: Texts, spans, actors, task: tuple, progress, stop, retries: int, call=None):
    """Every part on the actors (two in flight each), merged in corpus order; the actors are killed at the end.
    With ``call(actor, start, end)`` (the task of one part) the parts' results are returned in corpus order
    instead, unmerged."""
    results: dict = {}
    pending: dict = {}  # object ref -> (part index, actor)
    queue = list(range(len(spans)))[::-1]

    def submit(worker) -> None:
        index = queue.pop()
        start, end = spans[index]
        ref = worker.sums.remote(list(texts[start:end]), *task) if call is None else call(worker, start, end)
        pending[ref] = (index, worker)

    if progress is not None:
        progress(0, len(texts))
    try:
        for worker in actors * IN_FLIGHT_PER_WORKER:
            if queue:
                submit(worker)
        while pending:
            if stop():
                raise CancelledError(
                    f"cancelled after {sum(r.used + r.skipped for r in results.values())} of {len(texts)} texts"
                )
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_S)
            for ref in ready:
                index, worker = pending.pop(ref)
                results[index] = _get(ray, ref, spans[index], retries)
                if queue:
                    submit(worker)
                if progress is not None:
                    progress(sum(spans[i][1] - spans[i][0] for i in results), len(texts))
    finally:
        for worker in actors:
            ray.kill(worker)
    if len(results) != len(spans):  # cannot happen: every part was waited for
        raise DistributedError(f"{len(spans) - len(results)} of {len(spans)} parts have no result")
    if call is not None:
        return [results[index] for index in range(len(spans))]
    total = CorpusSums()
    for index in range(len(spans)):  # in corpus order, so a rerun adds in the same order
        total = total.merge(results[index])
    return corpus.finish_statistics(total)


def atlas_on_ray(
    texts: Texts,
    model: str | None = None,
    address: str | None = None,
    batch_size: int = 16,
    workers: int | None = None,
    top: int = 20,
    sample: int = 20,
    seed: int = 0,
    fold: bool = True,
    exclude: bool = True,
    induction: bool = False,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    limits: settings.Limits | None = None,
    retries: int = 3,
    threads: int | None = None,
    cpus_per_worker: float = 1,
):
    """:func:`~attention_viz.analysis.atlas.build_atlas` with the parts of the corpus
    (:func:`~attention_viz.analysis.atlas.part_spans`) run on Ray actors and merged here in corpus order, as
    the local run merges them: the same events and, with the same torch threads, the same floats.

    Args: as :func:`corpus_statistics_on_ray` and ``build_atlas``.

    Returns:
        :class:`~attention_viz.analysis.atlas.Atlas`.

    Raises:
        InputError, AttentionError: as ``build_atlas`` (a worker's error is raised as it was).
        CancelledError: when ``cancel()`` returned True.
        DistributedError: Ray missing or unreachable, or a part that failed ``retries + 1`` times.
    """
    import time

    import torch

    from attention_viz.analysis import atlas
    from attention_viz.models.loading import load_model

    began = time.perf_counter()
    local = load_model(model)  # the tokenizer checks the corpus here, before any worker starts
    limits = atlas.check_atlas_input(local, texts, top, sample, batch_size, limits)
    max_length = limits.tokens_for(local.info.max_positions)
    options = atlas.AtlasOptions(top, sample, seed, fold, exclude, batch_size, max_length)
    spans = atlas.part_spans(len(texts), batch_size)
    ray = _ray()
    opened = not ray.is_initialized()
    if opened:
        try:
            ray.init(address=address, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise DistributedError(
                f"cannot reach the Ray cluster at {address or 'the default address'}: {exc}"
            ) from None
    try:
        if workers is None:
            workers = max(1, int(ray.cluster_resources().get("CPU", 1) // cpus_per_worker))
        actor = ray.remote(num_cpus=cpus_per_worker, max_restarts=retries, max_task_retries=retries)(_Worker)
        actors = [actor.remote(model, threads or torch.get_num_threads()) for _ in range(min(workers, len(spans)))]

        def call(worker, start: int, end: int):
            return worker.atlas_sums.remote(list(texts[start:end]), start, options)

        found = _run(ray, texts, spans, actors, (), progress, cancel or (lambda: False), retries, call)
    finally:
        if opened:
            ray.shutdown()
    total = found[0]
    for part in found[1:]:  # in corpus order, as the local run adds them
        total = total.merge(part)
    return atlas.finish_atlas(total, local, texts, options, induction, time.perf_counter() - began)


def _get(ray, ref, span: tuple[int, int], retries: int):
    """A part's sums; a worker's own error as it was raised there, a lost worker as :class:`DistributedError`."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        raise (cause if isinstance(cause, Exception) else exc) from None
    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.ObjectLostError) as exc:
        raise DistributedError(
            f"texts {span[0] + 1}-{span[1]}: the Ray worker running them was lost {retries + 1} time(s) "
            f"({type(exc).__name__}); the run stopped without a result: run it again"
        ) from None
