"""The head atlas of the bundled corpus: its time against the forwards alone on the same texts (same run,
interleaved), its peak memory for the corpus against the corpus repeated ten times, and a long corpus on a
local Ray cluster against one process.

    .venv/bin/python -m benchmarks.atlas                        # time and memory, each size in its own process
    .venv/bin/python -m benchmarks.atlas --repeat 10            # one size only (the bundled corpus 10 times)
    .venv/bin/python -m benchmarks.atlas --threads 1            # one torch thread (a shared machine: see below)
    .venv/bin/python -m benchmarks.atlas --ray --texts 20000    # Ray against one process, tables compared

Time and memory, per size in a fresh process: the model is loaded and warmed up (the forwards and an atlas
of the first 64 texts); then ``--rounds`` times, alternately, the forwards alone (the corpus path's padded
batches of 16, each text's weights cut and checked: :mod:`attention_viz.extraction.batch`) and the atlas
(top 20, sample 20, no induction score) over the same texts. The medians and their ratio are reported
(the machine is shared: alternating lets its load hit both alike), with the load average before and after,
and the process's CPU seconds beside the wall clock. On a shared machine torch's threads wait on each other
when other work holds the cores (a forward pass then varies many times over): ``--threads 1`` steadies it.
Then the atlas is built once more under ``tracemalloc`` (the atlas's own Python and numpy allocations,
peak; torch's buffers are not traced), and the process's peak RSS (``ru_maxrss``: the model and torch's
buffers too) is read at the end. One JSON object per size is printed.

Ray: ``--texts`` texts made from the bundled corpus, repeated and varied deterministically
(:func:`varied_corpus`); the atlas is built in this process with one torch thread, then on a local Ray
cluster (``ray.init(num_cpus=--workers)``) with as many actors of one thread each, both on the same parts
(:func:`attention_viz.analysis.atlas.part_spans`); the two events and heads tables are compared exactly.
One JSON object is printed; the exit status is 1 when the tables differ.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

from attention_viz import settings

LIMITS = settings.Limits(max_corpus_texts=10**7, max_corpus_tokens=10**9)

# Words put before a sentence of the bundled corpus in its later copies (see :func:`varied_corpus`).
OPENERS = ("Yesterday,", "Then", "Perhaps", "Meanwhile,", "Still,", "Indeed,", "Later,", "So", "And", "Now")


def varied_corpus(num_texts: int) -> list[tuple[str, str | None]]:
    """``num_texts`` texts from the bundled corpus, the same on every run: its lines in order, then again and
    again, each later copy varied: copy ``r`` puts ``OPENERS[r mod 10]`` before every sentence A, and an odd
    copy gives a single sentence a second one (the line ``r`` places further on, as sentence B)."""
    from attention_viz.analysis import bundled_corpus, parse_corpus

    base = parse_corpus(bundled_corpus())
    texts = []
    for i in range(num_texts):
        copy, line = divmod(i, len(base))
        a, b = base[line]
        if copy:
            a = f"{OPENERS[copy % len(OPENERS)]} {a[:1].lower()}{a[1:]}"
            if copy % 2 and b is None:
                b = base[(line + copy) % len(base)][0]
        texts.append((a, b))
    return texts


def measure(repeat: int, rounds: int, threads: int | None = None) -> dict:
    import torch

    from attention_viz.analysis import atlas, bundled_corpus, parse_corpus
    from attention_viz.extraction import batch as padded
    from attention_viz.models.loading import load_model

    if threads:
        torch.set_num_threads(threads)
    loaded = load_model()
    texts = parse_corpus(bundled_corpus()) * repeat
    max_length = LIMITS.tokens_for(loaded.info.max_positions)

    def forwards(chosen) -> float:
        began = time.perf_counter()
        for start in range(0, len(chosen), 16):
            inputs, rows = padded.encode_batch(loaded.tokenizer, chosen[start : start + 16], max_length)
            padded.batch_attention(loaded.model, inputs, [len(r.input_ids) for r in rows], start)
        return time.perf_counter() - began

    def timed(run) -> tuple[float, float, object]:
        """Wall and CPU seconds of ``run()`` (this process's CPU: all its threads), and its result."""
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        return time.perf_counter() - wall, time.process_time() - cpu, result

    forwards(texts[:64])  # a model's first forwards pay for one-off work
    atlas.build_atlas(loaded, texts[:64], limits=LIMITS)
    load_before = os.getloadavg()
    alone, built_s, own_forwards_s, alone_cpu, built_cpu = [], [], [], [], []
    for _ in range(rounds):
        wall, cpu, _ = timed(lambda: forwards(texts))
        alone.append(wall)
        alone_cpu.append(cpu)
        wall, cpu, built = timed(lambda: atlas.build_atlas(loaded, texts, limits=LIMITS))
        built_s.append(built.seconds)
        built_cpu.append(cpu)
        own_forwards_s.append(built.forward_seconds)
    load_after = os.getloadavg()
    tracemalloc.start()  # a build of its own for the memory: tracemalloc slows every allocation
    atlas.build_atlas(loaded, texts, limits=LIMITS)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    forwards_alone, atlas_s = statistics.median(alone), statistics.median(built_s)
    return {
        "texts": len(texts),
        "tokens": built.num_tokens,
        "rounds": rounds,
        "torch_threads": torch.get_num_threads(),
        "forwards_alone_s": round(forwards_alone, 3),
        "atlas_s": round(atlas_s, 3),
        "atlas_forwards_s": round(statistics.median(own_forwards_s), 3),
        "atlas_over_forwards_alone": round(atlas_s / forwards_alone, 3),
        "forwards_alone_cpu_s": round(statistics.median(alone_cpu), 3),
        "atlas_cpu_s": round(statistics.median(built_cpu), 3),
        "atlas_over_forwards_alone_cpu": round(statistics.median(built_cpu) / statistics.median(alone_cpu), 3),
        "samples": {
            "forwards_alone_s": alone,
            "atlas_s": built_s,
            "atlas_forwards_s": own_forwards_s,
            "forwards_alone_cpu_s": alone_cpu,
            "atlas_cpu_s": built_cpu,
        },
        "load_average_before": load_before,
        "load_average_after": load_after,
        "traced_peak_mb": round(traced_peak / 2**20, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "events": len(built.events),
    }


def on_ray(num_texts: int, workers: int) -> dict:
    """The atlas of :func:`varied_corpus` in this process and on a local Ray cluster, compared exactly."""
    import pandas as pd
    import ray
    import torch

    from attention_viz.analysis import atlas, distributed
    from attention_viz.models.loading import load_model

    texts = varied_corpus(num_texts)
    torch.set_num_threads(1)  # as each actor: float32 sums add in an order that depends on the thread count
    loaded = load_model()
    load_before = os.getloadavg()
    began = time.perf_counter()
    alone = atlas.build_atlas(loaded, texts, limits=LIMITS)
    alone_s = time.perf_counter() - began
    ray.init(num_cpus=workers, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        began = time.perf_counter()
        ours = distributed.atlas_on_ray(texts, workers=workers, threads=1, limits=LIMITS)
        ray_s = time.perf_counter() - began
    finally:
        ray.shutdown()
    equal = {}
    for name in ("events", "heads"):
        try:
            pd.testing.assert_frame_equal(getattr(ours, name), getattr(alone, name), check_exact=True)
            equal[name] = True
        except AssertionError:
            equal[name] = False
    equal["texts"] = ours.texts == alone.texts
    return {
        "texts": len(texts),
        "tokens": alone.num_tokens,
        "workers": workers,
        "one_process_s": round(alone_s, 1),
        "one_process_forwards_s": round(alone.forward_seconds, 1),
        "ray_s": round(ray_s, 1),
        "ray_forwards_s": round(ours.forward_seconds, 1),
        "equal": equal,
        "events": len(alone.events),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.atlas")
    parser.add_argument("--repeat", type=int, help="one size: the bundled corpus this many times over")
    parser.add_argument("--rounds", type=int, help="forwards and atlas pairs timed (default 5; 2 for --repeat 10)")
    parser.add_argument("--threads", type=int, help="torch threads (default torch's own: one per core)")
    parser.add_argument("--ray", action="store_true", help="a long corpus on a local Ray cluster against one process")
    parser.add_argument("--texts", type=int, default=20000, help="texts of the --ray corpus (default 20000)")
    parser.add_argument("--workers", type=int, default=2, help="Ray actors and the cluster's CPUs (default 2)")
    args = parser.parse_args(argv)
    if args.ray:
        result = on_ray(args.texts, args.workers)
        print(json.dumps(result))
        return 0 if all(result["equal"].values()) else 1
    if args.repeat is not None:
        rounds = args.rounds or (5 if args.repeat == 1 else 2)
        print(json.dumps(measure(args.repeat, rounds, args.threads)))
        return 0
    for repeat in (1, 10):
        command = [sys.executable, "-m", "benchmarks.atlas", "--repeat", str(repeat)]
        command += ["--rounds", str(args.rounds)] if args.rounds else []
        subprocess.run(command + (["--threads", str(args.threads)] if args.threads else []), check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
