"""A decoder of a realistic size: what the app says before loading it, how long it loads, the from-scratch
twin's agreement with transformers, and a forward at 512 tokens (the app's estimate next to the measurement).

The checkpoint is a randomly initialised Qwen2 of Qwen2-0.5B's shape (hidden 896, 24 layers, 14 query heads
sharing 2 key/value heads, intermediate 4,864, vocabulary 151,936, tied input and output embeddings: 494 M
parameters), saved as safetensors in a temporary folder with a small byte-level BPE tokenizer trained here
(the model's vocabulary table keeps its real size; the tokenizer only uses its first ids). Random weights cost
what trained ones do. Nothing is downloaded; the folder is deleted at the end.

    .venv/bin/python -m benchmarks.realistic_size            # writes benchmarks/results/<date>-realistic-size.json

The figures are taken in a second process (its peak memory is what the app would hold for this model: the
weights once, shared by transformers' model and the from-scratch twin, plus the causal-LM model that generates),
after the checkpoint's files are dropped from the page cache so that the load reads the disk. The forward at
512 tokens is the app's estimate (one 32-token forward scaled by FLOPs, ``models/sizes.py``) next to two timed
forwards; the generation is 8 greedy tokens after a 32-token prompt, then the maps of the last step.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from attention_viz import extraction
from attention_viz.models import sizes
from attention_viz.models.loading import load_model
from benchmarks.harness import PARAGRAPH, corpus, machine, text_of_tokens, versions

QWEN2_05B = dict(
    hidden_size=896,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    intermediate_size=4864,
    vocab_size=151936,
    max_position_embeddings=32768,
    tie_word_embeddings=True,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
)
PARITY_TOKENS = 32
GENERATED = 8  # tokens generated after the 32-token prompt (the app's default count)
MEASURED = "="  # marks the measuring process's line of figures


def tokenizer():
    """A byte-level BPE of 1,000 entries trained on the benchmark paragraph; ``<|endoftext|>`` ends and pads."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([PARAGRAPH, *corpus(64)], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", pad_token="<|endoftext|>")


def build(folder: str) -> float:
    """Save the random Qwen2 (with its LM head, tied) and the tokenizer in ``folder``; returns seconds taken."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    start = time.perf_counter()
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(**QWEN2_05B))
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer().save_pretrained(folder)
    del model
    gc.collect()
    return time.perf_counter() - start


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: kB


def _evict(folder: str) -> None:
    """Drop the checkpoint's files from the page cache (this folder's files only), so the load reads the disk."""
    for path in Path(folder).iterdir():
        with path.open("rb") as handle:
            os.fsync(handle.fileno())
            os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def _seconds(fn):
    start = time.perf_counter()
    value = fn()
    return value, round(time.perf_counter() - start, 3)


def measure(folder: str) -> dict:
    """Everything but the build, in a process of its own (its peak memory is the app's for this model)."""
    from attention_viz.extraction.generation import continuation, extend_encoding, load_generator

    need = sizes.memory_need(folder)
    available = sizes.available_memory()
    _evict(folder)
    loaded, load_seconds = _seconds(lambda: load_model(folder))

    encoding = extraction.encode(loaded.tokenizer, text_of_tokens(loaded.tokenizer, PARITY_TOKENS))
    scratch, first_map = _seconds(lambda: extraction.extract_encoded(loaded, encoding, "scratch").weights)
    pretrained = extraction.extract_encoded(loaded, encoding, "pretrained").weights
    parity = float(np.abs(scratch.astype(np.float64) - pretrained).max())

    estimate = sizes.estimate_forward(loaded.encoder)  # as the app times it: 32 tokens, scaled by FLOPs
    ids = torch.arange(sizes.FORWARD_TOKENS)[None] % len(loaded.tokenizer)  # (1, 512)
    times = []
    with torch.inference_mode():
        for _ in range(2):
            times.append(_seconds(lambda: loaded.encoder(ids))[1])

    generator, generator_seconds = _seconds(lambda: load_generator(loaded.info))
    new, generate_seconds = _seconds(lambda: continuation(loaded, encoding, GENERATED, generator))
    full = extend_encoding(encoding, loaded.tokenizer, new)
    _, step_pretrained = _seconds(lambda: extraction.extract_encoded(loaded, full, "pretrained"))
    _, step_scratch = _seconds(lambda: extraction.extract_encoded(loaded, full, "scratch"))
    return {
        "model": "random Qwen2 of Qwen2-0.5B's shape",
        "config": QWEN2_05B,
        "tokenizer_entries": len(loaded.tokenizer),
        "memory_said_before_loading": {
            "parameters": need.parameters,
            "bytes": need.bytes,
            "text": sizes.size_text(need.bytes),
            "source": need.source,
            "available_bytes": available,
        },
        "parameters_loaded": loaded.info.parameters,
        "load_seconds_from_disk": load_seconds,
        "first_map_seconds": first_map,
        "parity": {"tokens": encoding.num_tokens, "max_abs_difference": parity},
        "forward_512": {
            "estimate_seconds": round(estimate.seconds, 3),
            "estimate_text": sizes.duration_text(estimate.seconds),
            "probe_tokens": estimate.measured_tokens,
            "probe_seconds": round(estimate.measured_seconds, 4),
            "flops_ratio": round(estimate.flops_ratio, 2),
            "measured_seconds": times,
            "measured_over_estimate": round(min(times) / estimate.seconds, 2),
        },
        "generation": {
            "load_generator_seconds": generator_seconds,
            "prompt_tokens": encoding.num_tokens,
            "generated_tokens": len(new),
            "greedy_seconds": generate_seconds,
            "step_maps_seconds": {"pretrained": step_pretrained, "scratch": step_scratch},
        },
        "torch_threads": torch.get_num_threads(),
        "peak_rss_gib": round(_peak_gib(), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--measure", metavar="FOLDER", help=argparse.SUPPRESS)  # the measuring process
    args = parser.parse_args()
    if args.measure:
        print(MEASURED + json.dumps(measure(args.measure)))
        return
    load_before = [f"{x:.2f}" for x in os.getloadavg()]
    folder = tempfile.mkdtemp(prefix="realistic-qwen2-")
    try:
        build_seconds = build(folder)
        disk = sum(p.stat().st_size for p in Path(folder).iterdir())
        command = [sys.executable, "-m", "benchmarks.realistic_size", "--measure", folder]
        out = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True, cwd=Path(__file__).parent.parent)
        figures = json.loads(next(line for line in out.stdout.splitlines() if line.startswith(MEASURED))[1:])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    date = time.strftime("%Y-%m-%dT%H%M")
    record = {
        "date": date,
        "load_before": load_before,
        "load_after": [f"{x:.2f}" for x in os.getloadavg()],
        "machine": machine(),
        "versions": versions(),
        "build_seconds": round(build_seconds, 1),
        "checkpoint_bytes_on_disk": disk,
        **figures,
    }
    path = Path(args.out) / f"{date}-realistic-size.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    print(path)


if __name__ == "__main__":
    main()
