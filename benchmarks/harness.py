"""The suite's plumbing: timing (median after a warm-up, ours and the baseline interleaved), rows of the
table, inputs of a given token count, the machine and versions for the results file."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

# Varied English, so token counts come from real WordPiece splits and labels repeat as in real text.
PARAGRAPH = (
    "The animal didn't cross the street because it was too tired. The trophy didn't fit in the suitcase "
    "because it was too big. Researchers ask which heads of a pretrained model attend to the previous token, "
    "which ones look at punctuation, and which spread their attention broadly over the whole sentence. "
    "A student typed a question about tokenisation: why does unbelievable become several WordPiece pieces? "
    "On Tuesday, 14 visitors from Lisbon walked along the harbour before the rain started again."
)


@dataclass
class Row:
    """One line of the table: our figure, the baseline measured in the same run, their ratio, the target.

    ``passed`` is True/False against the target, None when the target is "reported" or the row was skipped.
    """

    id: str
    figure: str
    size: str
    ours: float | None
    ours_unit: str
    baseline: float | None = None
    baseline_unit: str = ""
    baseline_name: str = ""
    ratio: float | None = None
    target: str = "reported"
    passed: bool | None = None
    note: str = ""
    samples: dict = field(default_factory=dict)


@dataclass
class Settings:
    """How much to measure: ``quick`` is the CI smoke run (one rep where a rep costs seconds)."""

    quick: bool
    warmup: int
    repeats: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        return cls(quick=quick, warmup=1, repeats=3) if quick else cls(quick=False, warmup=2, repeats=7)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def round_robin(functions, settings: Settings) -> list[list[float]]:
    """Seconds of each function, run in turn (so load on shared cores hits all alike), after the warm-up."""
    for _ in range(settings.warmup):
        for function in functions:
            function()
    seconds = [[] for _ in functions]
    for _ in range(settings.repeats):
        for function, samples in zip(functions, seconds, strict=True):
            samples.append(timed(function))
    return seconds


def interleaved(
    ours: Callable[[], object], baseline: Callable[[], object], settings: Settings
) -> tuple[list[float], list[float]]:
    """Seconds of ``ours`` and ``baseline``, run alternately (so load on shared cores hits both alike)."""
    a, b = round_robin((ours, baseline), settings)
    return a, b


def seconds_row(
    id: str, figure: str, size: str, ours: list[float], base: list[float], baseline_name: str, **fields
) -> Row:
    """A row of two timings in seconds, ours against the same-run baseline: their medians and ratio, the
    samples as ``ours_s`` and ``baseline_s`` (before any more in ``fields["samples"]``), the other fields as
    given."""
    samples = {"ours_s": ours, "baseline_s": base, **fields.pop("samples", {})}
    return Row(
        id=id,
        figure=figure,
        size=size,
        ours=median(ours),
        ours_unit="s",
        baseline=median(base),
        baseline_unit="s",
        baseline_name=baseline_name,
        ratio=median(ours) / median(base),
        samples=samples,
        **fields,
    )


def median(values: list[float]) -> float:
    return statistics.median(values)


def text_of_tokens(tokenizer, n: int) -> str:
    """A text that the tokenizer turns into exactly ``n`` tokens, [CLS] and [SEP] included."""
    words = PARAGRAPH.split()
    text, i = "", 0

    def count(candidate: str) -> int:
        return len(tokenizer(candidate, truncation=False, verbose=False)["input_ids"])

    while True:
        candidate = (text + " " + words[i % len(words)]).strip()
        if count(candidate) > n:
            break
        text, i = candidate, i + 1
    while count(text) < n:  # " the" is one token in an uncased WordPiece vocabulary
        text += " the"
    if count(text) != n:
        raise ValueError(f"could not build a text of {n} tokens")
    return text


def corpus(size: int) -> list[str]:
    """``size`` sentences of varied length: the paragraph's sentences and joins of two and three of them."""
    sentences = re.split(r"(?<=[.?])\s+", PARAGRAPH)
    out, k = [], 0
    while len(out) < size:
        span = 1 + k % 3
        out.append(" ".join(sentences[(k + j) % len(sentences)] for j in range(span)))
        k += 1
    return out


LOAD_AT_START = os.getloadavg()  # when ``python -m benchmarks`` imports this, before any measurement


def machine() -> dict:
    info = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        info["load_average_at_start"] = LOAD_AT_START
        info["load_average_at_end"] = os.getloadavg()
    except OSError:
        pass
    return info


def versions() -> dict:
    from importlib import metadata

    out = {}
    for package in ("torch", "transformers", "tokenizers", "streamlit", "plotly", "numpy", "bertviz", "playwright"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        out["attention_viz_commit"] = commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        out["attention_viz_commit"] = None
    return out


def _cpu_seconds() -> dict[str, float]:
    """CPU seconds of this process and of its finished children (servers, loaders; not Chromium's)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "self": round(own.ru_utime + own.ru_stime, 1),
        "children": round(children.ru_utime + children.ru_stime, 1),
    }


def write_results(
    rows: list[Row], settings: Settings, started: float, path: Path | None, durations: dict[str, float]
) -> Path:
    now = dt.datetime.now(dt.UTC)
    if path is None:
        path = RESULTS / f"{now:%Y-%m-%dT%H%M}-{'quick' if settings.quick else 'full'}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "date": now.isoformat(timespec="seconds"),
        "mode": "quick" if settings.quick else "full",
        "warmup": settings.warmup,
        "repeats": settings.repeats,
        "duration_s": round(time.monotonic() - started, 1),
        "section_duration_s": durations,
        "cpu_s": _cpu_seconds(),
        "machine": machine(),
        "versions": versions(),
        "results": [asdict(row) for row in rows],
    }
    path.write_text(json.dumps(document, indent=1, default=float) + "\n")
    return path


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "bytes":
        for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
            if value >= scale:
                return f"{value / scale:.3g} {name}"
        return f"{value:.0f} B"
    if unit == "s" and value < 1:
        return f"{value * 1000:.3g} ms"
    return f"{value:.3g} {unit}".strip()


def table(rows: list[Row]) -> str:
    header = ("#", "figure", "size", "ours", "baseline", "ratio", "target", "result")
    lines = [header]
    for r in rows:
        result = {True: "pass", False: "MISS", None: "—" if r.ours is not None else "skipped"}[r.passed]
        lines.append(
            (
                r.id,
                r.figure,
                r.size,
                _number(r.ours, r.ours_unit),
                _number(r.baseline, r.baseline_unit),
                "—" if r.ratio is None else f"{r.ratio:.3g}×",
                r.target,
                result,
            )
        )
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    text = [" | ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines]
    text.insert(1, "-+-".join("-" * w for w in widths))
    notes = [f"  #{r.id} {r.size}: {r.note}" for r in rows if r.note]
    return "\n".join(text + (["", "notes:", *notes] if notes else []))
