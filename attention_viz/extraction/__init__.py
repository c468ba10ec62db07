"""From text to attention weights.

- :mod:`~attention_viz.extraction.tokens`: tokenisation with display labels (:class:`Encoding`).
- :mod:`~attention_viz.extraction.capture`: the pretrained model's weights, taken by hooks as each layer
  computes them, and their checks.
- :mod:`~attention_viz.extraction.results`: :func:`extract`, pretrained or from scratch, as an
  :class:`AttentionResult`.
- :mod:`~attention_viz.extraction.export`: results as CSV, JSON and file names.

Data preparation only; drawing lives in :mod:`attention_viz.figures`.
"""

from attention_viz.extraction.capture import (
    ROW_SUM_TOLERANCE,
    AttentionError,
    pretrained_attention,
    validate_attentions,
)
from attention_viz.extraction.results import SOURCES, AttentionResult, extract, extract_encoded, scratch_attention
from attention_viz.extraction.tokens import Encoding, InputError, check_length, encode, model_inputs

__all__ = [
    "ROW_SUM_TOLERANCE",
    "SOURCES",
    "AttentionError",
    "AttentionResult",
    "Encoding",
    "InputError",
    "check_length",
    "encode",
    "extract",
    "extract_encoded",
    "model_inputs",
    "pretrained_attention",
    "scratch_attention",
    "validate_attentions",
]
