"""Long runs shared by everyone who asks: one run per key, its progress, Stop, and a bound on what is kept.

Statistics over a corpus, a head atlas and named head scores take seconds to minutes. When many people ask for
the same run at once (a class on one corpus, each in a session of the same server), it runs once: the first to
ask computes it, the others wait for its result and meanwhile get its progress. A run's result is kept for the
next to ask, up to a number of results (the least recently used go first).

A run ends without a result when its ``compute`` raises, when its ``progress`` raises (Streamlit ends a page's
run that way when its user presses Stop or changes the input), or when it is stopped (``cancel()`` of the one
computing it, or :meth:`SharedRuns.stop` for everyone): nothing of it is kept, so the next to ask starts it
again, and an error is raised again rather than remembered. When the one computing it is stopped, someone still
waiting for the same key computes it.

No Streamlit here: the app keeps one :class:`SharedRuns` per kind of run for the whole server
(``attention_viz/ui/server/cache_heads.py``); anything else may keep its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from attention_viz.analysis.corpus import CancelledError, Progress

T = TypeVar("T")

WAIT_POLL_S = 0.25  # how often a waiting caller passes the running one's progress on and asks its own cancel()

Compute = Callable[[Progress, Callable[[], bool]], T]


class _Flight:
    """One run in progress: whoever holds ``lock`` computes; ``progress`` is its last ``(done, total)``;
    ``askers`` counts those computing or waiting; ``stopped`` is set by :meth:`SharedRuns.stop`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.progress: tuple[float, int] | None = None
        self.askers = 0
        self.stopped = threading.Event()


class SharedRuns(Generic[T]):
    """Results of long runs by key, each computed once however many threads ask at the same time.

    Args:
        kept: how many results are kept (at least 1); the least recently asked for goes first.
        poll_s: how often a waiting caller gets the running one's progress (seconds).

    Thread-safe: every method may be called from any thread.
    """

    def __init__(self, kept: int, poll_s: float = WAIT_POLL_S) -> None:
        if kept < 1:
            raise ValueError(f"kept must be at least 1, got {kept}")
        self.kept = kept
        self.poll_s = poll_s
        self._results: OrderedDict[Hashable, T] = OrderedDict()
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> T | None:
        """The kept result of ``key``, or None; nothing is computed."""
        with self._lock:
            return self._kept(key)

    def _kept(self, key: Hashable) -> T | None:
        if key not in self._results:
            return None
        self._results.move_to_end(key)
        return self._results[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._results)

    def clear(self) -> None:
        """Forget every kept result (runs in progress go on and keep theirs)."""
        with self._lock:
            self._results.clear()

    def stop(self, key: Hashable) -> bool:
        """Stop the run of ``key`` for everyone: the one computing it gets :class:`CancelledError` at its
        ``compute``'s next ``cancel()``, those waiting get it at once, and nothing is kept. Returns whether a
        run of ``key`` was in progress. The next to ask starts a new run."""
        with self._lock:
            flight = self._flights.pop(key, None)
        if flight is None:
            return False
        flight.stopped.set()
        return True

    def run(
        self,
        key: Hashable,
        compute: Compute,
        progress: Progress | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> T:
        """The result of ``key``: kept, the result of the run in progress (waited for), or computed now as
        ``compute(report, cancel)`` and kept.

        Args:
            key: everything the result depends on (hashable).
            compute: runs the work; it calls ``report(done, total)`` as it goes and asks ``cancel()`` between
                steps, raising :class:`~attention_viz.analysis.corpus.CancelledError` when it says True (the
                core's corpus, atlas and score runs take both as ``progress`` and ``cancel``).
            progress: called with ``(done, total)`` as the run goes, whoever computes it; a waiting caller gets
                the running one's last progress every ``poll_s`` seconds.
            cancel: this caller's Stop: asked while it computes or waits; True ends its part with
                :class:`CancelledError` (a run it was computing is not kept, and a caller still waiting for it
                computes it).

        Raises:
            CancelledError: this caller's ``cancel()`` said True, or :meth:`stop` stopped the run.
            Exception: what ``compute`` or ``progress`` raised (nothing is kept; the next to ask runs again).
        """
        asked = cancel or (lambda: False)
        with self._lock:
            found = self._kept(key)
            if found is not None:
                return found
            flight = self._flights.setdefault(key, _Flight())
            flight.askers += 1
        try:
            while not flight.lock.acquire(timeout=self.poll_s):  # another caller computes it: pass its progress on
                if flight.stopped.is_set() or asked():
                    raise CancelledError("stopped while waiting for the run in progress")
                if progress is not None and flight.progress is not None:
                    progress(*flight.progress)
            try:
                return self._compute(key, flight, compute, progress, asked)
            finally:
                flight.lock.release()
        finally:
            with self._lock:
                flight.askers -= 1
                if flight.askers == 0 and self._flights.get(key) is flight:
                    del self._flights[key]

    def _compute(self, key: Hashable, flight: _Flight, compute: Compute, progress, asked) -> T:
        """Under ``flight.lock``: the result another caller kept meanwhile, or ``compute``'s, kept."""
        if flight.stopped.is_set():
            raise CancelledError("stopped before it started")
        with self._lock:
            found = self._kept(key)  # the run this caller waited for finished
            if found is not None:
                return found

        def report(done: float, total: int) -> None:
            flight.progress = (done, total)
            if progress is not None:
                progress(done, total)

        result = compute(report, lambda: flight.stopped.is_set() or asked())
        if flight.stopped.is_set():  # stopped after its last cancel(): not kept, as a stopped run never is
            raise CancelledError("stopped")
        with self._lock:
            self._results[key] = result
            self._results.move_to_end(key)
            while len(self._results) > self.kept:
                self._results.popitem(last=False)
        return result
