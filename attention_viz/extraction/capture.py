"""A transformers model's attention weights for one input, by two paths that give the same bits.

- :func:`reference_attention`: transformers' public ``output_attentions=True`` on the eager attention, every
  layer checked and stacked. The definition: the other path is tested against it, and it serves any model
  whose attention modules its family does not name.
- :func:`pretrained_attention`: the same weights taken by forward hooks on each layer's attention module
  as the layer computes them, checked and copied into the result at once, and the forward stopped after the
  last layer's attention. It holds one layer's weights at a time instead of all of them, and skips the last
  feed-forward block and the pooler (``python -m benchmarks --only 16`` measures both paths).
"""

from __future__ import annotations

from contextvars import ContextVar

import numpy as np
import torch

from attention_viz.extraction.checks import NO_WEIGHTS, AttentionError, empty_weights, validate_attentions, write_layer
from attention_viz.extraction.forward import model_inputs
from attention_viz.extraction.tokens import Encoding
from attention_viz.models import families


def family_of(model) -> families.Family:
    """The model's family by ``config.model_type``; BERT's rules for a model of no supported family."""
    try:
        return families.family_for(getattr(model.config, "model_type", "bert"))
    except families.UnsupportedFamilyError:
        return families.family_for("bert")


def model_attentions(model, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """One forward with ``output_attentions=True``: the weights of every layer, as transformers returns them.

    Args:
        model: a transformers model of a supported family, eager attention, eval mode.
        inputs: ``input_ids``, ``token_type_ids`` and ``attention_mask``, each ``(b, t)``; the model gets
            what its family takes (no token types for DistilBERT and GPT-2; no key/value cache for GPT-2).

    Returns:
        One ``(b, heads, t, t)`` tensor per layer.

    Raises:
        AttentionError: the model returned none (SDPA or flash attention).
    """
    with torch.inference_mode():
        outputs = model(**family_of(model).model_kwargs(inputs), output_attentions=True)
    attentions = getattr(outputs, "attentions", None)
    if not attentions:
        raise AttentionError(NO_WEIGHTS)
    return attentions


def reference_attention(model, encoding: Encoding) -> np.ndarray:
    """Attention of a transformers model for one encoded input, through ``output_attentions=True``.

    Returns:
        float32 ``(layers, heads, query, key)``.

    Raises:
        AttentionError: see :func:`~attention_viz.extraction.checks.validate_attentions`.
    """
    config = model.config
    attentions = model_attentions(model, model_inputs(encoding))
    return validate_attentions(attentions, config.num_hidden_layers, config.num_attention_heads, encoding.num_tokens)


class _LastLayerSeen(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by the last layer's hook: nothing after it changes an attention weight, and transformers has
    no public way to end a forward early."""


# The forward being collected in this thread (or task): one model is shared by every session of the app, so
# a hook fires in every thread's forward while it is registered, and collects only in its own.
_COLLECTING: ContextVar[_Collector | None] = ContextVar("attention_viz_collecting", default=None)


class _Collector:
    """Checks each layer's weights as its attention module returns them and copies them into ``weights``."""

    def __init__(self, weights: np.ndarray) -> None:
        self.weights, self.count = weights, 0

    def __call__(self, module, inputs, output) -> None:
        if _COLLECTING.get() is not self:
            return
        write_layer(self.weights, self.count, output[1] if isinstance(output, tuple) and len(output) > 1 else None)
        self.count += 1
        if self.count == len(self.weights):
            raise _LastLayerSeen


def pretrained_attention(model, encoding: Encoding) -> np.ndarray:
    """Attention of a transformers model of a supported family for one encoded input: the bits of
    :func:`reference_attention`, taken as each layer computes them.

    A forward hook (``register_forward_hook``, removed before returning) on each layer's attention module,
    as the family names it (``encoder.layer[i].attention.self`` in BERT, ``h[i].attn`` in GPT-2, ALBERT's one
    shared module once), checks the layer's weights and copies them into the result; the forward stops after
    the last layer's. A model whose attention modules its family does not find goes through
    :func:`reference_attention`. Safe to call from several threads on one model.

    Returns:
        float32 ``(layers, heads, query, key)``.

    Raises:
        AttentionError: see :func:`~attention_viz.extraction.checks.validate_attentions`.
    """
    config = model.config
    modules = family_of(model).attention_modules(model)
    if not modules or len(modules) != config.num_hidden_layers or any(module is None for module in modules):
        return reference_attention(model, encoding)
    collector = _Collector(empty_weights(config.num_hidden_layers, config.num_attention_heads, encoding.num_tokens))
    distinct = {id(module): module for module in modules}.values()  # ALBERT's shared module: one hook
    handles = [module.register_forward_hook(collector) for module in distinct]
    token = _COLLECTING.set(collector)
    try:
        with torch.inference_mode():
            model(**family_of(model).model_kwargs(model_inputs(encoding)))
    except _LastLayerSeen:
        pass
    finally:
        _COLLECTING.reset(token)
        for handle in handles:
            handle.remove()
    if collector.count != len(collector.weights):
        raise AttentionError(f"expected attention from {len(collector.weights)} layers, got {collector.count}")
    return collector.weights
