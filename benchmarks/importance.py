"""#8 head importance over the bundled corpus, against head importance by its definition: one full forward
per head (Michel et al. 2019), kept here only as the baseline.

Both run on the same padded batches of 16 texts that ``analysis.corpus_statistics`` makes (the app's and
the CLI's ``stats --importance``), the baseline interleaved with ours. A third method is timed once: the
one this replaced (per layer, the layer's unablated input reused and its heads as one batch of head masks,
on the padded batch), for the record of what each step gave.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from attention_viz.analysis import corpus, importance
from attention_viz.analysis.importance import cosine_distance, mean_pool
from attention_viz.models.loading import LoadedModel
from benchmarks.harness import Row, Settings, median
from benchmarks.tiny import one_forward_per_head

BATCH_SIZE = 16
TARGET_S = 20.0
TOLERANCE = 1e-6


def layered_padded(encoder, input_ids, token_type_ids, attention_mask) -> np.ndarray:
    """The method before: per layer, its padded input repeated once per head, that layer and the ones above."""
    layers, heads = encoder.config.num_hidden_layers, encoder.config.num_attention_heads
    b = input_ids.shape[0]
    sums = torch.zeros(layers, heads, dtype=torch.float64)
    with torch.inference_mode():
        base = encoder(input_ids, token_type_ids, attention_mask)
        reference = mean_pool(base.last_hidden_state, attention_mask)  # (b, hidden)
        mask = attention_mask.repeat(heads, 1)  # (heads * b, t)
        off = 1 - torch.eye(heads).repeat_interleave(b, dim=0)  # (heads * b, heads)
        for layer in range(layers):
            x = base.hidden_states[layer].repeat(heads, 1, 1)  # (heads * b, t, hidden)
            x, _ = encoder.layers[layer](x, mask, None, off)
            for above in encoder.layers[layer + 1 :]:
                x, _ = above(x, mask, None)
            sums[layer] = cosine_distance(mean_pool(x, mask).view(heads, b, -1), reference[None]).double().sum(-1)
    return sums.numpy()


def _over(batches, method) -> np.ndarray:
    return sum(method(*batch) for batch in batches)


def importance_rows(loaded: LoadedModel, settings: Settings) -> list[Row]:
    """#8: seconds for head importance over the bundled corpus (its first 4 texts in ``--quick``), and the
    baseline's."""
    texts = corpus.parse_corpus(corpus.bundled_corpus())
    texts = texts[:4] if settings.quick else texts
    keys = ("input_ids", "token_type_ids", "attention_mask")
    batches = [[inputs[k] for k in keys] for inputs, _ in corpus.batch_attention(loaded, texts, BATCH_SIZE)]
    tokens = sum(int(batch[2].sum()) for batch in batches)
    encoder = loaded.encoder

    def ours():
        return _over(batches, lambda *b: importance.importance_sums(encoder, *b))

    def baseline():
        return _over(batches, lambda *b: one_forward_per_head(encoder, *b))

    if not settings.quick:  # warm-up: one batch each (--quick checks the row, not its speed)
        importance.importance_sums(encoder, *batches[0])
        one_forward_per_head(encoder, *batches[0])
    ours_s, ours_cpu, base_s = [], [], []
    found = expected = None
    for _ in range(1 if settings.quick else 3):
        start, start_cpu = time.perf_counter(), time.process_time()
        found = ours()
        ours_s.append(time.perf_counter() - start)
        ours_cpu.append(time.process_time() - start_cpu)
        start = time.perf_counter()
        expected = baseline()
        base_s.append(time.perf_counter() - start)
    start = time.perf_counter()
    before = _over(batches, lambda *b: layered_padded(encoder, *b))
    before_s = time.perf_counter() - start
    difference = float(np.abs(found - expected).max()) / len(texts)  # of the mean over texts
    difference_before = float(np.abs(found - before).max()) / len(texts)
    seconds = median(ours_s)
    return [
        Row(
            id="8",
            figure="head importance",
            size=f"{len(texts)} texts ({tokens} tokens)",
            ours=seconds,
            ours_unit="s",
            baseline=median(base_s),
            baseline_unit="s",
            baseline_name="one forward per head (Michel et al. 2019), same batches",
            ratio=seconds / median(base_s),
            target=f"≤ {TARGET_S:g} s for the bundled corpus; values ≤ {TOLERANCE:g}",
            passed=None if settings.quick else seconds <= TARGET_S and difference <= TOLERANCE,
            note=(
                f"max |Δ mean importance| {difference:.1e} vs the baseline, {difference_before:.1e} vs the method "
                f"before (per layer, padded: {before_s:.1f} s, ours {seconds / before_s:.2f}× of it); ours "
                f"{median(ours_cpu):.1f} CPU s on {torch.get_num_threads()} threads"
            ),
            samples={
                "ours_s": ours_s,
                "ours_cpu_s": ours_cpu,
                "baseline_s": base_s,
                "layered_padded_s": before_s,
                "max_abs_difference": difference,
                "max_abs_difference_before": difference_before,
            },
        )
    ]
