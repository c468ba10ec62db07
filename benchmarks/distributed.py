"""#18 corpus statistics and head importance on a local Ray cluster, against the single-process run.

The cluster is started here (``ray.init(num_cpus=...)`` on this machine, one CPU per worker, one torch thread
each); the single-process run uses torch's default threads, and the two are interleaved. Ours is timed
twice: a whole call (the actors start, import torch and load the model: what one ``stats --ray`` pays), and
its texts per second once the actors are up (what a long corpus approaches), from the progress calls. The
values of both runs are compared (float32 matrix products add in an order that depends on the thread
count: about 1e-7 here; 1e-15 with as many threads, as the test suite checks).
"""

from __future__ import annotations

import os
import time

import numpy as np

from attention_viz.analysis import corpus, distributed
from attention_viz.models.loading import LoadedModel
from benchmarks.harness import Row, Settings, interleaved, median

BATCH_SIZE = 16


def ray_rows(loaded: LoadedModel, settings: Settings) -> list[Row]:
    """#16: texts per second, statistics with head importance, on a local Ray cluster vs one process."""
    try:
        import ray
    except ImportError:
        return [Row("18", "corpus statistics on Ray", "", None, "texts/s", note="skipped: ray is not installed")]
    texts = corpus.parse_corpus(corpus.bundled_corpus())[: 32 if settings.quick else 264]
    cpus = os.cpu_count() or 1
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    results, steady = {}, []
    try:

        def on_ray():
            marks = []
            results["ray"] = distributed.corpus_statistics_on_ray(
                texts,
                batch_size=BATCH_SIZE,
                workers=cpus,
                importance=True,
                threads=1,
                progress=lambda done, total: marks.append((time.perf_counter(), done)),
            )
            (t0, d0), (t1, d1) = marks[1], marks[-1]  # from the first part's end: the actors are up
            if len(marks) > cpus + 2 and t1 > t0:  # enough parts after the first for a rate
                steady.append((d1 - d0) / (t1 - t0))

        def alone():
            results["alone"] = corpus.corpus_statistics(loaded, texts, BATCH_SIZE, importance=True)

        once = Settings(quick=True, warmup=0, repeats=1) if settings.quick else Settings(False, 0, 3)
        ours, base = interleaved(on_ray, alone, once)
    finally:
        ray.shutdown()
    numbers = results["alone"].statistics.select_dtypes("number").columns
    difference = float(np.nanmax(np.abs(results["ray"].statistics[numbers] - results["alone"].statistics[numbers])))
    load = os.getloadavg()
    row = Row(
        id="18",
        figure=f"corpus statistics with head importance on a local Ray cluster ({cpus} workers, 1 thread each)",
        size=f"{len(texts)} texts (bundled corpus), batch {BATCH_SIZE}",
        ours=len(texts) / median(ours),
        ours_unit="texts/s",
        baseline=len(texts) / median(base),
        baseline_unit="texts/s",
        baseline_name=f"corpus_statistics in this process, {_threads()} torch threads",
        target="reported (a cluster adds machines; on one machine the actors' start is the cost)",
        note=(
            f"whole call incl. actors' start; once started {median(steady):.1f} texts/s; "
            f"max difference {difference:.1g}; load average {load[0]:.2f}"
            if steady
            else f"max difference {difference:.1g}; load average {load[0]:.2f}"
        ),
        samples={"ours_s": ours, "baseline_s": base, "steady_texts_per_s": steady, "load_average": load},
    )
    row.ratio = row.ours / row.baseline
    return [row]


def _threads() -> int:
    import torch

    return torch.get_num_threads()
