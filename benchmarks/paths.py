"""#16 the two ways to get attention, and a speed path the teaching code no longer has.

- The fast path (``extraction.pretrained_attention``: forward hooks, each layer copied out as it is computed,
  the forward stopped after the last attention) against the reference (``extraction.reference_attention``:
  ``output_attentions=True``, every layer checked and stacked), same input, interleaved. A third variant, the
  hooks without the early stop, is timed beside them: it says what stopping the forward (the one exception
  used as control flow) is worth.
- The from-scratch encoder's forward with its plain attention against the same forward with the scores
  scaled, masked and softmaxed in place (defined here, patched in for the measurement only): what the in-place
  branch that ``models/attention.py`` no longer has would give.
"""

from __future__ import annotations

from contextlib import contextmanager, suppress

import numpy as np
import torch

from attention_viz import extraction
from attention_viz.extraction import capture
from attention_viz.models import attention
from attention_viz.models.loading import LoadedModel
from benchmarks.harness import Row, Settings, interleaved, median, round_robin, seconds_row, text_of_tokens


def _in_place_attention(query, key, value, mask=None, scaling=None, dropout=0.0):
    """``attention.scaled_dot_product_attention`` without two score-sized temporaries (inference only)."""
    scores = torch.matmul(query, key.transpose(-2, -1))  # (b, h, t, s)
    scores.mul_(query.size(-1) ** -0.5 if scaling is None else scaling)
    if mask is not None:
        scores.add_(mask)
    weights = torch.softmax(scores, -1, out=scores)  # (b, h, t, s)
    return torch.matmul(weights, value), weights


@contextmanager
def _patched(module, name: str, value):
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


class _WholeForward(capture._Collector):
    """The fast path's collector, but the forward runs to its end (the variant without the early stop)."""

    def __call__(self, module, inputs, output) -> None:
        with suppress(capture._LastLayerSeen):
            super().__call__(module, inputs, output)


def _sizes(loaded: LoadedModel, settings: Settings) -> list[int]:
    sizes = (16, 128) if settings.quick else (16, 128, 512)
    return [n for n in sizes if n <= loaded.info.max_positions]


def path_rows(loaded: LoadedModel, settings: Settings) -> list[Row]:
    """#16: the fast path and the encoder's in-place variant, each against what the package keeps as plain."""
    rows = []
    model = loaded.model
    for n in _sizes(loaded, settings):
        encoding = extraction.encode(loaded.tokenizer, text_of_tokens(loaded.tokenizer, n))

        def fast(encoding=encoding):
            return extraction.pretrained_attention(model, encoding)

        def reference(encoding=encoding):
            return extraction.reference_attention(model, encoding)

        def no_stop(encoding=encoding):
            with _patched(capture, "_Collector", _WholeForward):
                return extraction.pretrained_attention(model, encoding)

        same = np.array_equal(fast(), reference()) and np.array_equal(no_stop(), reference())
        ours, base, whole = round_robin((fast, reference, no_stop), settings)
        rows.append(
            seconds_row(
                "16",
                "extraction: hooks vs output_attentions=True",
                f"{n} tokens",
                ours,
                base,
                "extraction.reference_attention (output_attentions=True, checked)",
                note=f"same bits: {same}; hooks without the early stop {median(whole) / median(base):.2f}×",
                samples={"no_stop_s": whole, "same_bits": same},
            )
        )
    for n in _sizes(loaded, settings)[1:] or _sizes(loaded, settings):
        enc = loaded.tokenizer(text_of_tokens(loaded.tokenizer, n), return_tensors="pt")

        def plain(enc=enc):
            with torch.inference_mode():
                return loaded.encoder(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])

        def in_place(enc=enc):
            with _patched(attention, "scaled_dot_product_attention", _in_place_attention):
                return plain(enc)

        same = all(map(torch.equal, plain().attentions, in_place().attentions))
        a, b = interleaved(in_place, plain, settings)
        name = "the encoder's plain attention (models/attention.py)"
        rows.append(
            seconds_row(
                "16",
                "encoder: in-place softmax vs plain",
                f"{n} tokens",
                a,
                b,
                name,
                note=f"same bits: {same}",
                samples={"same_bits": same},
            )
        )
    return rows
