"""The one way an input reaches a model: its tensors, and a from-scratch forward whose weights are checked.

- :func:`token_inputs` and :func:`model_inputs`: the ``input_ids``, ``token_type_ids`` and ``attention_mask``
  a forward takes, from token ids or from an :class:`~attention_viz.extraction.tokens.Encoding`.
- :func:`scratch_forward`: one run of the from-scratch encoder on one encoded input, every layer's attention
  passed through :func:`~attention_viz.extraction.checks.check_attentions` before anything reads it.

The pretrained model's own forwards go through :mod:`~attention_viz.extraction.capture` (one input) and
:mod:`~attention_viz.extraction.batch` (a batch), with the same checks.
"""

from __future__ import annotations

import numpy as np
import torch

from attention_viz.extraction.checks import check_attentions
from attention_viz.extraction.tokens import Encoding


def token_inputs(input_ids, token_type_ids=None) -> dict[str, torch.Tensor]:
    """The tensors a forward takes for a batch of unpadded token ids.

    Args:
        input_ids: ``(b, t)`` or ``(t,)`` int token ids (an array, a list or a tensor); ``(t,)`` is one input.
        token_type_ids: the same shape, the segment of each token; ``None`` gives every token segment 0.

    Returns:
        ``input_ids``, ``token_type_ids`` and ``attention_mask`` (all 1: nothing is padded), each int64
        ``(b, t)``. They are new tensors: writing to them never changes the arrays given (a cached
        :class:`Encoding`'s are read-only).
    """
    ids = torch.tensor(np.asarray(input_ids), dtype=torch.int64)
    ids = ids[None] if ids.dim() == 1 else ids  # (b, t)
    types = torch.zeros_like(ids) if token_type_ids is None else torch.tensor(np.asarray(token_type_ids))
    return {"input_ids": ids, "token_type_ids": types.reshape(ids.shape), "attention_mask": torch.ones_like(ids)}


def model_inputs(encoding: Encoding) -> dict[str, torch.Tensor]:
    """The tensors a forward takes for one encoded input: :func:`token_inputs` of its ids and token types,
    each ``(1, t)``."""
    return token_inputs(encoding.input_ids, encoding.token_type_ids)


def scratch_forward(
    encoder,
    encoding: Encoding,
    scaling: float | None = None,
    head_mask: torch.Tensor | None = None,
    key_mask: torch.Tensor | None = None,
    attentions_out: torch.Tensor | None = None,
):
    """One forward of the from-scratch encoder on one encoded input, without autograd, its attention checked.

    Args:
        encoder: a :class:`~attention_viz.models.encoder.BertEncoder` (eval mode).
        encoding: the input, ``t`` tokens.
        scaling, head_mask, key_mask, attentions_out: as :meth:`BertEncoder.forward
            <attention_viz.models.encoder.BertEncoder.forward>` takes them (``None``: the model as it is).

    Returns:
        The encoder's :class:`~attention_viz.models.encoder.EncoderOutput`: ``attentions`` are ``L`` tensors
        ``(1, h, t, t)`` whose rows each sum to 1.

    Raises:
        AttentionError: a layer's weights are missing, of another shape, not finite, or a row does not sum to 1
            (see :func:`~attention_viz.extraction.checks.check_attentions`).
    """
    inputs = model_inputs(encoding)
    with torch.inference_mode():
        output = encoder(
            inputs["input_ids"],
            inputs["token_type_ids"],
            inputs["attention_mask"],
            scaling,
            head_mask=head_mask,
            attentions_out=attentions_out,
            key_mask=key_mask,
        )
    config = encoder.config
    check_attentions(output.attentions, config.num_hidden_layers, config.num_attention_heads, encoding.num_tokens)
    return output
