"""Long runs shared by everyone who asks: computed once per key, progress for the waiting, Stop, a bound."""

import threading

import pytest

from attention_viz.analysis.corpus import CancelledError
from attention_viz.analysis.shared_runs import SharedRuns


class Steps:
    """A run of ``total`` steps that reports each one, asks ``cancel()`` before each, and can be held at a
    step until released; ``calls`` counts how often it was started."""

    def __init__(self, total: int = 4, hold_at: int | None = None) -> None:
        self.total, self.hold_at, self.calls = total, hold_at, 0
        self.held, self.release = threading.Event(), threading.Event()

    def __call__(self, report, cancel):
        self.calls += 1
        report(0, self.total)
        for step in range(self.total):
            if step == self.hold_at and self.calls == 1:
                self.held.set()
                assert self.release.wait(30)
            if cancel():
                raise CancelledError(f"cancelled after {step} of {self.total}")
            report(step + 1, self.total)
        return {"sum": sum(range(self.total)), "call": self.calls}


def _thread(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_two_threads_asking_the_same_key_run_it_once_and_the_second_sees_its_progress():
    runs, steps = SharedRuns(kept=4, poll_s=0.01), Steps(total=5, hold_at=2)
    results, seen = {}, []
    first = _thread(lambda: results.__setitem__("first", runs.run("k", steps)))
    assert steps.held.wait(30)
    second = _thread(lambda: results.__setitem__("second", runs.run("k", steps, lambda d, t: seen.append((d, t)))))
    while not seen:  # the second waits, passing the held run's progress on
        threading.Event().wait(0.01)
    steps.release.set()
    first.join(30)
    second.join(30)
    assert steps.calls == 1
    assert results["first"] is results["second"] == {"sum": 10, "call": 1}
    assert seen[0] == (2, 5) and all(total == 5 for _, total in seen)
    assert runs.get("k") is results["first"] and runs.run("k", steps) is results["first"] and steps.calls == 1
    assert runs.get("other") is None


def test_stop_ends_the_run_for_everyone_and_keeps_nothing():
    runs, steps = SharedRuns(kept=4, poll_s=0.01), Steps(total=4, hold_at=1)
    errors = []

    def ask():
        try:
            runs.run("k", steps)
        except CancelledError as exc:
            errors.append(str(exc))

    first = _thread(ask)
    assert steps.held.wait(30)
    second = _thread(ask)
    assert not runs.stop("another key")
    assert runs.stop("k")
    second.join(30)  # the waiting one leaves at once, the running one still held
    assert errors == ["stopped while waiting for the run in progress"]
    steps.release.set()
    first.join(30)
    assert errors[1] == "cancelled after 1 of 4"
    assert runs.get("k") is None and len(runs) == 0
    assert runs.run("k", steps) == {"sum": 6, "call": 2}  # asked again: a new run, to the end


def test_a_callers_stop_ends_its_part_and_a_waiting_caller_computes_it():
    runs, steps = SharedRuns(kept=4, poll_s=0.01), Steps(total=3, hold_at=1)
    stop, errors, results = threading.Event(), [], {}

    def first():
        try:
            runs.run("k", steps, cancel=stop.is_set)
        except CancelledError:
            errors.append("first")

    one = _thread(first)
    assert steps.held.wait(30)
    two = _thread(lambda: results.__setitem__("second", runs.run("k", steps)))
    stop.set()
    steps.release.set()
    one.join(30)
    two.join(30)
    assert errors == ["first"] and results["second"] == {"sum": 3, "call": 2}
    assert runs.get("k") is results["second"]


def test_a_raising_progress_keeps_nothing():
    """Streamlit ends a page's run by raising from its next element update: the progress callback."""
    runs, steps = SharedRuns(kept=4), Steps(total=3)

    class StoppedPageError(Exception):
        pass

    def progress(done, total):
        if done == 2:
            raise StoppedPageError

    with pytest.raises(StoppedPageError):
        runs.run("k", steps, progress)
    assert runs.get("k") is None
    assert runs.run("k", steps) == {"sum": 3, "call": 2}


def test_an_error_is_not_kept():
    runs, calls = SharedRuns(kept=4), []

    def failing(report, cancel):
        calls.append(None)
        if len(calls) == 1:
            raise ValueError("the corpus is empty")
        return "done"

    with pytest.raises(ValueError, match="the corpus is empty"):
        runs.run("k", failing)
    assert runs.get("k") is None and len(runs) == 0
    assert runs.run("k", failing) == "done" and len(calls) == 2


def test_the_least_recently_asked_result_goes_first():
    runs, computed = SharedRuns(kept=2), []

    def compute(key):
        def run(report, cancel):
            computed.append(key)
            return key.upper()

        return run

    assert runs.run("a", compute("a")) == "A"
    assert runs.run("b", compute("b")) == "B"
    assert runs.get("a") == "A"  # "a" was asked for last: "b" is now the oldest
    assert runs.run("c", compute("c")) == "C"
    assert len(runs) == 2 and runs.get("b") is None and runs.get("a") == "A" and runs.get("c") == "C"
    assert runs.run("b", compute("b")) == "B" and computed == ["a", "b", "c", "b"]
    with pytest.raises(ValueError, match="kept must be at least 1"):
        SharedRuns(kept=0)
