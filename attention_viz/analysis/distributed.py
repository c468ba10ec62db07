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

Nothing waits without end: a cluster that does not answer within ``connect_timeout_s`` (default
:data:`CONNECT_TIMEOUT_S`) is a :class:`DistributedError`; more workers than the cluster has CPUs for are
refused before any starts (:class:`NotEnoughCPUsError`); a worker still waiting for a CPU that another job
holds takes no part until it has started, so the parts run on the workers that have. An interrupt
(``KeyboardInterrupt``, Ctrl+C) or ``cancel()`` ends this run's actors before it propagates: a connection
this run opened is closed (the cluster ends the actors its driver owned), else the actors are killed.

Ray is an optional extra (``pip install -e .[ray]``): this module imports it only when called, and the app
never imports this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from attention_viz import settings
from attention_viz.analysis import corpus
from attention_viz.analysis.corpus import CancelledError, CorpusResult, CorpusSums, Progress, Texts
from attention_viz.extraction import InputError

PARTS_PER_WORKER = 4  # parts per worker by default: a lost part costs a quarter of a worker's share
MAX_BATCHES_PER_PART = 64
IN_FLIGHT_PER_WORKER = 2  # the next part waits in the worker's queue while one runs
WAIT_S = 0.5  # how often cancel() is asked while parts run
CONNECT_TIMEOUT_S = 30.0  # seconds a cluster has to answer (or a new local one to start)
CONNECT_THREAD = "ray-connect"  # the thread that runs ray.init for connect(), named so the CLI can find it


class DistributedError(RuntimeError):
    """The Ray run could not finish: Ray is missing, the cluster cannot be reached, or a part failed more
    often than it may be retried. No partial result is returned."""


class NotEnoughCPUsError(DistributedError):
    """More workers were asked for than the cluster has CPUs for; refused before any worker starts.

    Attributes:
        workers: the workers asked for.
        cpus: the cluster's CPUs (Ray's ``CPU`` resource, all nodes).
        cpus_per_worker: the CPUs each worker reserves.
        capacity: the most workers the cluster can hold (``cpus // cpus_per_worker``; may be 0).
    """

    def __init__(self, workers: int, cpus: float, cpus_per_worker: float) -> None:
        self.workers, self.cpus, self.cpus_per_worker = workers, cpus, cpus_per_worker
        self.capacity = int(cpus // cpus_per_worker)
        super().__init__(
            f"{workers} Ray worker(s) of {cpus_per_worker:g} CPU need {workers * cpus_per_worker:g} CPUs and the "
            f"cluster has {cpus:g}: ask for at most {self.capacity}"
        )


def _ray():
    try:
        import ray
    except ImportError:
        raise DistributedError(
            "Ray is not installed: pip install -e '.[ray]' (or pip install ray) to run on a cluster"
        ) from None
    return ray


def _probe(target: str, timeout_s: float) -> None:
    """One TCP connection to the host and port of ``target`` (``host:port`` or ``ray://host:port``), so that a
    refused port, an unknown host or a silent one fails now and not after Ray's own retries (minutes).
    An address without a port (``auto``, ``local``) is left to Ray.

    Raises:
        DistributedError: the connection was refused, the host is unknown, or nothing answered in time.
    """
    try:
        parts_ = urlsplit(target if "://" in target else f"tcp://{target}")
        host, port = parts_.hostname, parts_.port
    except ValueError:
        return  # not host:port; ray.init says what is wrong with it
    if not host or port is None:
        return
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except TimeoutError:
        raise DistributedError(f"no Ray cluster answered at {target} within {timeout_s:g} s") from None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise DistributedError(
            f"cannot reach the Ray cluster at {target}: {reason}; is it running, and is this its address?"
        ) from None


def connect(ray, address: str | None, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """``ray.init(address)`` that gives up after ``timeout_s`` seconds instead of Ray's retries (about 36 s
    each, 20 times, for an address where no cluster answers).

    The address's port is tried first (:func:`_probe`), so a refused one fails at once. ``ray.init`` then
    runs on a helper thread while this one waits, so the wait ends on time and an interrupt (Ctrl+C) is
    raised here at once; a connection that comes after the caller gave up is closed again.

    Args:
        ray: the ``ray`` module.
        address: as ``ray.init`` takes it (``ray://host:10001``, ``host:6379``, ``auto`` or None); the port
            of a ``host:port`` address is probed. ``RAY_ADDRESS`` is the caller's to read (the command line
            passes it as ``address``); Ray reads it itself for ``None`` or ``auto``, unprobed.
        timeout_s: seconds for the port, the connection and, with no address, the start of a local cluster.

    Raises:
        DistributedError: nothing answered, the answer was not a Ray cluster in time, or Ray refused.
    """
    deadline = time.monotonic() + timeout_s
    if address and address not in ("auto", "local"):
        _probe(address, timeout_s)
    where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
    outcome: dict[str, BaseException] = {}
    done = threading.Event()
    lock = threading.Lock()
    gave_up = []

    def init() -> None:
        try:
            ray.init(address=address, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
            done.set()
            return
        with lock:  # the waiting thread gives up under this lock too: either it sees done, or this sees gave_up
            try:
                if gave_up:
                    ray.shutdown()
            finally:
                done.set()

    threading.Thread(target=init, name=CONNECT_THREAD, daemon=True).start()
    try:
        finished = done.wait(max(0.0, deadline - time.monotonic()))
    finally:
        with lock:
            if not done.is_set():
                gave_up.append(True)
    if not finished and not done.is_set():
        raise DistributedError(f"{where} did not answer within {timeout_s:g} s: is the address right?")
    error = outcome.get("error")
    if isinstance(error, ImportError):
        raise DistributedError(
            f"Ray's client is not installed: pip install -e '.[ray]' (or pip install 'ray[client]') "
            f"to use a ray:// address ({error})"
        ) from None
    if isinstance(error, ConnectionError | RuntimeError | ValueError | TimeoutError):
        raise DistributedError(f"cannot reach {where}: {error}") from None
    if error is not None:
        raise error


def stuck_connection() -> bool:
    """Whether a connection :func:`connect` gave up on is still inside Ray's client (a thread of this process,
    see :data:`CONNECT_THREAD`). The interpreter's exit can then abort in Ray's C++ code (``std::bad_alloc``):
    a program that is done leaves with ``os._exit`` instead (:func:`attention_viz.cli.entry`)."""
    return any(thread.name == CONNECT_THREAD and thread.is_alive() for thread in threading.enumerate())


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

    def __init__(self, model: str | None, threads: int, policy: settings.ModelPolicy | None = None):
        import torch

        from attention_viz.models.loading import load_model

        torch.set_num_threads(threads)  # float32 sums add in an order that depends on the thread count
        self.loaded = load_model(model, policy)

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
    policy: settings.ModelPolicy | None = None,
    retries: int = 3,
    threads: int | None = None,
    cpus_per_worker: float = 1,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
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
        workers: actors to start (default: the cluster's CPUs divided by ``cpus_per_worker``); more than
            that is refused (:class:`NotEnoughCPUsError`). A worker waiting for a CPU another job holds
            takes parts only once it has started.
        texts_per_part: texts per task (rounded up to whole batches); default :func:`default_texts_per_part`.
        progress: called with ``(0, texts in all)``, then ``(texts done, texts in all)`` as parts finish.
        cancel: asked every :data:`WAIT_S` seconds while parts run; True stops the run.
        importance, divergence: as in ``corpus_statistics``.
        limits: texts and tokens of the corpus and tokens per text (default:
            :class:`~attention_viz.settings.Limits`' defaults).
        policy: which models the driver and the workers may load (default: any).
        retries: restarts of a dead worker and reruns of its part before the run stops.
        threads: torch threads in each worker; default this process's (``torch.get_num_threads()``). The
            single-process run's float32 matrix products add in an order that depends on the thread count,
            so its result is matched to 1e-15 with the same count and to about 1e-7 with another.
        cpus_per_worker: Ray CPUs each actor reserves (how many actors share a machine).
        connect_timeout_s: seconds the cluster has to answer, or a new local one to start (:func:`connect`);
            unused when Ray is already initialized in this process.

    Returns:
        :class:`~attention_viz.analysis.corpus.CorpusResult`, equal to the single-process run's.

    Raises:
        InputError, AttentionError: as ``corpus_statistics`` (a worker's error is raised as it was).
        CancelledError: when ``cancel()`` returned True.
        NotEnoughCPUsError: ``workers`` more than the cluster's CPUs hold.
        DistributedError: Ray missing, the cluster unreachable within ``connect_timeout_s``, or a part that
            failed ``retries + 1`` times.
        KeyboardInterrupt: as raised (Ctrl+C), after this run's actors were ended.
    """
    from attention_viz.models.loading import load_model

    if not texts:
        raise InputError(corpus.EMPTY, "corpus_empty")
    limits = settings.Limits() if limits is None else limits
    local = load_model(model, policy)  # the tokenizer checks the corpus here, before any worker starts
    max_length = limits.tokens_for(local.info.max_positions)
    corpus.check_corpus(local.tokenizer, texts, limits, max_length)
    with _actors(model, address, workers, retries, threads, cpus_per_worker, connect_timeout_s, policy) as actors:
        ray, start = actors
        size = texts_per_part or default_texts_per_part(len(texts), batch_size, start.workers)
        spans = parts(len(texts), batch_size, size)
        actors = start(len(spans))
        task = (batch_size, max_length, importance, divergence)
        return _run(ray, texts, spans, actors, task, progress, cancel or (lambda: False), retries)


@dataclasses.dataclass
class _Start:
    """Starts the run's actors (``start(parts)``: at most one per part) and keeps them to end them."""

    ray: object
    actor: object
    model: str | None
    threads: int
    workers: int
    policy: settings.ModelPolicy | None = None
    started: list = dataclasses.field(default_factory=list)

    def __call__(self, parts: int) -> list:
        for _ in range(min(self.workers, parts)):
            self.started.append(self.actor.remote(self.model, self.threads, self.policy))
        return self.started


@contextlib.contextmanager
def _actors(model, address, workers, retries: int, threads, cpus_per_worker: float, connect_timeout_s: float, policy):
    """Ray connected (:func:`connect`, unless this process already is) and ``workers`` checked against the
    cluster's CPUs (:class:`NotEnoughCPUsError`); yields ``(ray, start)``. On the way out, also after an
    interrupt, the cluster's CPUs are free again: a connection opened here is closed (the cluster ends the
    actors this driver owned, with no notice of their parts), else the run's actors are killed."""
    import torch

    ray = _ray()
    opened = not ray.is_initialized()
    if opened:
        connect(ray, address, connect_timeout_s)
    start = None
    try:
        cpus = ray.cluster_resources().get("CPU", 0)
        capacity = int(cpus // cpus_per_worker)
        workers = capacity if workers is None else workers
        if capacity < 1 or workers > capacity:  # the extra actors would never start
            raise NotEnoughCPUsError(max(workers, 1), cpus, cpus_per_worker)
        actor = ray.remote(num_cpus=cpus_per_worker, max_restarts=retries, max_task_retries=retries)(_Worker)
        start = _Start(ray, actor, model, threads or torch.get_num_threads(), workers, policy)
        yield ray, start
    finally:
        if opened:
            ray.shutdown()
        elif start is not None:
            for worker in start.started:
                ray.kill(worker)


@contextlib.contextmanager
def _ctrl_c_noted():
    """While parts run on the main thread, Ctrl+C (SIGINT) is noted in the list yielded instead of raised at once:
    the loop raises ``KeyboardInterrupt`` itself at its next turn (every :data:`WAIT_S`). Raised inside Ray's
    blocking calls, an interrupt could be lost there and the run went on to its end. Elsewhere, as it was."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not (
        signal.default_int_handler
    ):
        yield []
        return
    noted: list[bool] = []
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append(True))
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _run(ray, texts: Texts, spans, actors, task: tuple, progress, stop, retries: int, call=None):
    """Every part on the actors (two in flight each) once each has started, merged in corpus order. With
    ``call(actor, start, end)`` (the task of one part) the parts' results are returned in corpus order
    instead, unmerged.

    An actor takes parts only after its first call has answered: one still waiting for a CPU holds none, so
    the parts run on the actors that have started and the run never waits on one that cannot."""
    with _ctrl_c_noted() as interrupted:
        return _run_parts(ray, texts, spans, actors, task, progress, stop, retries, call, interrupted)


def _run_parts(ray, texts: Texts, spans, actors, task: tuple, progress, stop, retries: int, call, interrupted):
    results: dict = {}
    pending: dict = {}  # object ref -> (part index, actor)
    starting = {worker.pid.remote(): worker for worker in actors}  # object ref -> actor not yet started
    queue = list(range(len(spans)))[::-1]

    def submit(worker) -> None:
        index = queue.pop()
        start, end = spans[index]
        ref = worker.sums.remote(list(texts[start:end]), *task) if call is None else call(worker, start, end)
        pending[ref] = (index, worker)

    if progress is not None:
        progress(0, len(texts))
    while len(results) < len(spans):
        if interrupted:
            raise KeyboardInterrupt
        if stop():
            raise CancelledError(
                f"cancelled after {sum(spans[i][1] - spans[i][0] for i in results)} of {len(texts)} texts"
            )
        if not pending and not starting:  # cannot happen: a lost actor raises in _get
            raise DistributedError(f"{len(spans) - len(results)} of {len(spans)} parts have no Ray worker left")
        ready, _ = ray.wait([*pending, *starting], num_returns=1, timeout=WAIT_S)
        for ref in ready:
            if ref in starting:
                worker = starting.pop(ref)
                _get(ray, ref, None, retries)  # a worker that cannot start stops the run here
                for _ in range(IN_FLIGHT_PER_WORKER):
                    if queue:
                        submit(worker)
                continue
            index, worker = pending.pop(ref)
            results[index] = _get(ray, ref, spans[index], retries)
            if queue:
                submit(worker)
            if progress is not None:
                progress(sum(spans[i][1] - spans[i][0] for i in results), len(texts))
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
    policy: settings.ModelPolicy | None = None,
    retries: int = 3,
    threads: int | None = None,
    cpus_per_worker: float = 1,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
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
        NotEnoughCPUsError: ``workers`` more than the cluster's CPUs hold.
        DistributedError: Ray missing, the cluster unreachable within ``connect_timeout_s``, or a part that
            failed ``retries + 1`` times.
        KeyboardInterrupt: as raised (Ctrl+C), after this run's actors were ended.
    """
    from attention_viz.analysis import atlas
    from attention_viz.models.loading import load_model

    began = time.perf_counter()
    local = load_model(model, policy)  # the tokenizer checks the corpus here, before any worker starts
    limits = atlas.check_atlas_input(local, texts, top, sample, batch_size, limits)
    max_length = limits.tokens_for(local.info.max_positions)
    options = atlas.AtlasOptions(top, sample, seed, fold, exclude, batch_size, max_length)
    spans = atlas.part_spans(len(texts), batch_size)
    with _actors(model, address, workers, retries, threads, cpus_per_worker, connect_timeout_s, policy) as actors:
        ray, start = actors

        def call(worker, first: int, end: int):
            return worker.atlas_sums.remote(list(texts[first:end]), first, options)

        found = _run(ray, texts, spans, start(len(spans)), (), progress, cancel or (lambda: False), retries, call)
    total = found[0]
    for part in found[1:]:  # in corpus order, as the local run adds them
        total = total.merge(part)
    return atlas.finish_atlas(total, local, texts, options, induction, time.perf_counter() - began)


def _get(ray, ref, span: tuple[int, int] | None, retries: int):
    """A part's sums (``span``) or a worker's start (None); a worker's own error as it was raised there, a
    lost worker as :class:`DistributedError`."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        raise (cause if isinstance(cause, Exception) else exc) from None
    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.ObjectLostError) as exc:
        what = f"texts {span[0] + 1}-{span[1]}: the Ray worker running them" if span else "a Ray worker starting"
        raise DistributedError(
            f"{what} was lost {retries + 1} time(s) ({type(exc).__name__}); the run stopped without a result: "
            "run it again"
        ) from None
