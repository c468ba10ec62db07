"""From text to attention weights.

- :mod:`~attention_viz.extraction.tokens`: tokenisation with display labels (:class:`Encoding`).
- :mod:`~attention_viz.extraction.checks`: the checks every layer's weights pass (:class:`AttentionError`).
- :mod:`~attention_viz.extraction.forward`: the one way an input reaches a model (:func:`model_inputs`,
  :func:`token_inputs`) and the from-scratch encoder's checked forward (:func:`scratch_forward`).
- :mod:`~attention_viz.extraction.capture`: the pretrained model's weights for one input, by transformers'
  ``output_attentions=True`` (:func:`reference_attention`) or by forward hooks as each layer computes them
  (:func:`pretrained_attention`), the same bits.
- :mod:`~attention_viz.extraction.batch`: padded batches of texts (a corpus), each text's weights cut to
  its own tokens and checked.
- :mod:`~attention_viz.extraction.results`: :func:`extract`, pretrained or from scratch, as an
  :class:`AttentionResult`.
- :mod:`~attention_viz.extraction.export`: results as CSV, JSON and file names.
- :mod:`~attention_viz.extraction.seq2seq`: an encoder–decoder's (T5, BART) encoder, decoder and cross-attention
  for a source and a target text, or a target it generates (:func:`extract_seq2seq`, :func:`generate_seq2seq`).
- :mod:`~attention_viz.extraction.generation`: a decoder's maps over a prompt and the tokens it generates
  greedily (:func:`generate_decoder`).

Data preparation only; drawing lives in :mod:`attention_viz.figures`.
"""

from attention_viz.extraction.capture import pretrained_attention, reference_attention
from attention_viz.extraction.checks import ROW_SUM_TOLERANCE, AttentionError, validate_attentions
from attention_viz.extraction.forward import model_inputs, scratch_forward, token_inputs
from attention_viz.extraction.results import SOURCES, AttentionResult, extract, extract_encoded, scratch_attention
from attention_viz.extraction.tokens import Encoding, InputError, check_length, encode

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
    "reference_attention",
    "scratch_attention",
    "scratch_forward",
    "token_inputs",
    "validate_attentions",
]
