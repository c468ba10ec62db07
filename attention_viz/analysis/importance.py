"""Head importance: how much the sentence embedding moves when one head is switched off.

Michel et al. 2019 ("Are Sixteen Heads Really Better than One?") mask one head's output and measure
the change in a task score. The bundled all-MiniLM-L6-v2 is a sentence-embedding model (mean pooling
over tokens), so here the change is the cosine distance between the mean-pooled last hidden states
with and without the head, computed with our from-scratch encoder, which reproduces the model exactly
and takes a head mask.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from attention_viz.models.encoder import BertEncoder


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of the hidden states over real tokens (sentence-transformers' mean pooling).

    Args:
        hidden: ``(b, t, hidden)``.
        attention_mask: ``(b, t)``, 1 for real tokens, 0 for padding.

    Returns:
        ``(b, hidden)``.
    """
    mask = attention_mask.to(hidden.dtype)[..., None]  # (b, t, 1)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``1 − cos(a, b)`` over the last axis, clamped to [0, 2] (round-off, case C23)."""
    return (1 - F.cosine_similarity(a, b, dim=-1)).clamp(0.0, 2.0)


def importance_sums(
    encoder: BertEncoder,
    input_ids: torch.Tensor,
    token_type_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    on_layer=None,
) -> np.ndarray:
    """Sum over a batch of texts of the cosine distance caused by switching off each head in turn.

    Layers below the ablated head are not affected, so each ablation reuses the unablated input of
    its layer and reruns only that layer and the ones above; the heads of one layer run as one batch.

    Args:
        encoder: the from-scratch encoder (eval mode).
        input_ids, token_type_ids, attention_mask: ``(b, t)`` a padded batch.
        on_layer: optional callable, called with the layer just finished (for progress).

    Returns:
        ``(layers, heads)`` float64, the sum over the ``b`` texts of ``1 − cos(e, e_without_head)``.
    """
    layers, heads = encoder.config.num_hidden_layers, encoder.config.num_attention_heads
    b = input_ids.shape[0]
    sums = torch.zeros(layers, heads, dtype=torch.float64)
    with torch.inference_mode():
        base = encoder(input_ids, token_type_ids, attention_mask)
        reference = mean_pool(base.last_hidden_state, attention_mask)  # (b, hidden)
        mask = attention_mask.repeat(heads, 1)  # (heads * b, t), head-major copies
        off = 1 - torch.eye(heads).repeat_interleave(b, dim=0)  # (heads * b, heads): copy k has head k//b off
        for layer in range(layers):
            x = base.hidden_states[layer].repeat(heads, 1, 1)  # (heads * b, t, hidden)
            x, _ = encoder.layers[layer](x, mask, None, off)
            for above in encoder.layers[layer + 1 :]:
                x, _ = above(x, mask, None)
            pooled = mean_pool(x, mask).view(heads, b, -1)  # (heads, b, hidden)
            sums[layer] = cosine_distance(pooled, reference[None]).double().sum(-1)
            if on_layer is not None:
                on_layer(layer)
    return sums.numpy()


def head_importance(encoder: BertEncoder, encoding) -> np.ndarray:
    """Importance of every head for one encoded input: ``(layers, heads)`` cosine distances (0 to 2)."""
    ids = torch.tensor(encoding.input_ids)[None]  # (1, t); a copy: cached encodings are read-only
    types = torch.tensor(encoding.token_type_ids)[None]  # (1, t)
    return importance_sums(encoder, ids, types, torch.ones_like(ids))
