"""The head atlas of the bundled corpus: its time against the forwards alone on the same texts (same run), and
its peak memory for the corpus against the corpus repeated ten times.

    .venv/bin/python -m benchmarks.atlas                 # both, each size in a process of its own
    .venv/bin/python -m benchmarks.atlas --repeat 10     # one size only (what the first runs twice)

Per size, in a fresh process: the model is loaded; the forwards alone run over the texts (the corpus path's
padded batches of 16, each text's weights cut and checked: :mod:`attention_viz.extraction.batch`; after a
warm-up on the first 64 texts), the atlas is built (top 20, sample 20, no induction score) and the forwards
alone run again (the faster of the two counts: the machine is shared); then the atlas is built once more
under ``tracemalloc`` (the atlas's own Python and numpy allocations, peak), and the process's peak RSS
(``ru_maxrss``: the model and torch's buffers too) is read at the end. The atlas's own forwards are timed
inside it as well (``forward_seconds``). One JSON object per size is printed.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

from attention_viz import settings


def measure(repeat: int) -> dict:
    from attention_viz.analysis import atlas, bundled_corpus, parse_corpus
    from attention_viz.extraction import batch as padded
    from attention_viz.models.loading import load_model

    loaded = load_model()
    texts = parse_corpus(bundled_corpus()) * repeat
    limits = settings.Limits(max_corpus_texts=10**7, max_corpus_tokens=10**9)
    max_length = limits.tokens_for(loaded.info.max_positions)

    def forwards(chosen) -> float:
        began = time.perf_counter()
        for start in range(0, len(chosen), 16):
            inputs, rows = padded.encode_batch(loaded.tokenizer, chosen[start : start + 16], max_length)
            padded.batch_attention(loaded.model, inputs, [len(r.input_ids) for r in rows], start)
        return time.perf_counter() - began

    forwards(texts[:64])  # a model's first forwards pay for one-off work
    alone = [forwards(texts)]
    built = atlas.build_atlas(loaded, texts, limits=limits)
    alone.append(forwards(texts))  # before and after the atlas: the machine is shared
    forwards_alone = min(alone)
    tracemalloc.start()  # a second build for the memory: tracemalloc slows every allocation
    atlas.build_atlas(loaded, texts, limits=limits)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "texts": len(texts),
        "tokens": built.num_tokens,
        "forwards_alone_s": round(forwards_alone, 2),
        "atlas_s": round(built.seconds, 2),
        "atlas_forwards_s": round(built.forward_seconds, 2),
        "atlas_over_forwards_alone": round(built.seconds / forwards_alone, 2),
        "atlas_over_its_forwards": round(built.seconds / built.forward_seconds, 2),
        "traced_peak_mb": round(traced_peak / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "events": len(built.events),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.atlas")
    parser.add_argument("--repeat", type=int, help="one size: the bundled corpus this many times over")
    args = parser.parse_args(argv)
    if args.repeat is not None:
        print(json.dumps(measure(args.repeat)))
        return 0
    for repeat in (1, 10):
        subprocess.run([sys.executable, "-m", "benchmarks.atlas", "--repeat", str(repeat)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
