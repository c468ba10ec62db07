"""#1 extraction, #2 the from-scratch encoder and #6 corpus statistics, each against a bare transformers
forward on the same tokens in the same process."""

from __future__ import annotations

import importlib

import numpy as np
import torch

from attention_viz import extraction
from attention_viz.models.loading import LoadedModel
from benchmarks.harness import Row, Settings, corpus, interleaved, median, seconds_row, text_of_tokens


def _bare_inputs(loaded: LoadedModel, text: str) -> dict[str, torch.Tensor]:
    return loaded.tokenizer(text, return_tensors="pt", truncation=True, max_length=loaded.info.max_positions)


def extraction_rows(loaded: LoadedModel, settings: Settings) -> list[Row]:
    """#1: ``extract`` (tokenise, forward, checks, result) vs ``model(**enc, output_attentions=True)``."""
    rows = []
    for n in (16, 128) if settings.quick else (16, 128, 512):
        text = text_of_tokens(loaded.tokenizer, n)
        enc = _bare_inputs(loaded, text)

        def bare(enc=enc):
            with torch.inference_mode():
                return loaded.model(**enc, output_attentions=True)

        # twice the repeats at 512 tokens: a rep is short, and the shared machine's noise is a tenth of it
        more = settings if settings.quick or n < 512 else Settings(False, settings.warmup, 2 * settings.repeats)
        ours, base = interleaved(lambda text=text: extraction.extract(loaded, text), bare, more)
        row = seconds_row(
            "1", "extraction", f"{n} tokens", ours, base, "bare eager model(**enc, output_attentions=True)"
        )
        row.target = "≤ 1.05× at 128 and 512" if n >= 128 else "reported"
        row.passed = (row.ratio <= 1.05) if n >= 128 else None
        rows.append(row)
    return rows


def encoder_rows(loaded: LoadedModel, settings: Settings) -> list[Row]:
    """#2: our from-scratch encoder's forward vs transformers' eager forward, same input and weights."""
    rows = []
    for n in (128,) if settings.quick else (128, 512):
        enc = _bare_inputs(loaded, text_of_tokens(loaded.tokenizer, n))

        def ours(enc=enc):
            with torch.inference_mode():
                return loaded.encoder(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])

        def theirs(enc=enc):
            with torch.inference_mode():
                return loaded.model(**enc, output_attentions=True)

        a, b = interleaved(ours, theirs, settings)
        difference = float(
            max(
                (x - y).abs().max()
                for x, y in zip(ours().attentions, theirs().attentions, strict=True)  # (1, h, t, t) per layer
            )
        )
        row = seconds_row(
            "2",
            "from-scratch encoder forward",
            f"{n} tokens",
            a,
            b,
            "transformers eager forward, same weights",
            target="≤ 1.0× and max |Δattention| ≤ 1e-5",
            note=f"max |Δattention| = {difference:.1e}",
            samples={"max_abs_difference": difference},
        )
        row.passed = row.ratio <= 1.0 and difference <= 1e-5
        rows.append(row)
    return rows


# The interface #6 times: a function of the loaded model and a list of texts that computes the head
# statistics over the corpus (batched, as the app and the CLI do): ``(module, names)``, the first name found
# is used. It is :func:`app_corpus_statistics` below: `attention_viz.analysis.corpus_statistics`, the per-head
# statistics only. The app's cached call (attention_viz/ui/server/cache_heads.py: `corpus_statistics`) also computes the
# head-to-head divergence for Head similarity, which costs several times more (measured: 31 vs 4.5
# sentences/s on 16 sentences on a loaded 2-core machine); that is not part of this figure.
CORPUS_STATISTICS = ("benchmarks.core", ("app_corpus_statistics",))
BATCH_SIZE = 16


def app_corpus_statistics(loaded: LoadedModel, texts: list[str]):
    """The per-head corpus statistics over ``texts`` (single sentences), batched by :data:`BATCH_SIZE`."""
    from attention_viz import analysis

    pairs = [(text, None) for text in texts]  # analysis.Texts: (sentence, second sentence or None)
    return analysis.corpus_statistics(loaded, pairs, BATCH_SIZE, None, importance=False, divergence=False)


def corpus_statistics_function():
    """The app's corpus statistics ``f(loaded, texts)``, or a string saying why it is missing."""
    module_name, names = CORPUS_STATISTICS
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        return f"{module_name} is missing ({exc}); connect CORPUS_STATISTICS in benchmarks/core.py after the merge"
    for name in names:
        function = getattr(module, name, None)
        if callable(function):
            return function
    return f"{module_name} has none of {', '.join(names)}; connect CORPUS_STATISTICS in benchmarks/core.py"


def corpus_rows(loaded: LoadedModel, settings: Settings) -> list[Row]:
    """#6: sentences per second of the corpus statistics vs a bare batched forward with attentions."""
    texts = corpus(16 if settings.quick else 128)

    def bare():
        for start in range(0, len(texts), BATCH_SIZE):
            enc = loaded.tokenizer(texts[start : start + BATCH_SIZE], padding=True, return_tensors="pt")
            with torch.inference_mode():
                outputs = loaded.model(**enc, output_attentions=True)
            np.stack([a.numpy() for a in outputs.attentions], axis=1)  # (batch, layers, heads, query, key)

    function = corpus_statistics_function()
    row = Row(
        id="6",
        figure="corpus statistics",
        size=f"{len(texts)} sentences",
        ours=None,
        ours_unit="sentences/s",
        baseline_unit="sentences/s",
        baseline_name=f"bare batched forward with attentions, batch {BATCH_SIZE}",
        target="≥ 0.8×",
    )
    if isinstance(function, str):
        row.note = "skipped: " + function
        if not settings.quick:  # the baseline alone still says what the floor is
            _, base = interleaved(lambda: None, bare, Settings(quick=True, warmup=1, repeats=1))
            row.baseline = len(texts) / median(base)
        return [row]
    ours, base = interleaved(lambda: function(loaded, texts), bare, settings)
    row.ours, row.baseline = len(texts) / median(ours), len(texts) / median(base)
    row.ratio = row.ours / row.baseline
    row.passed = row.ratio >= 0.8
    row.samples = {"ours_s": ours, "baseline_s": base}
    return [row]
