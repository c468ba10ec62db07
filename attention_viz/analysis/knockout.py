"""Knocking out a key: one token removed as a key for one head, one layer's heads or every head.

The removed key's score gets ``finfo(dtype).min`` before the softmax, exactly as a padding mask gives a
padded key, so each row is renormalised over the keys left: ``A'[i, j] = A[i, j] / (1 − A[i, k])`` in the
layer where key ``k`` goes, for the rows of that layer's own input (the layers above see inputs that
changed). The token stays in the input: it is still a query, still in the residual stream of its own
position, and still in the mean-pooled sentence embedding. Run with our from-scratch encoder
(:class:`~attention_viz.models.encoder.BertEncoder`'s ``key_mask``); removing a key for every head of
every layer is what transformers does with ``attention_mask`` 0 at that position (the tests check both
agree, and that a per-head mask given to transformers' own attention modules agrees too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attention_viz.analysis.importance import cosine_distance, mean_pool
from attention_viz.extraction.forward import scratch_forward
from attention_viz.models import lm_head

SCOPES = ("head", "layer", "all")  # one head, every head of one layer, every head of every layer


def key_mask(num_layers: int, num_heads: int, num_tokens: int, key: int, scope: str, layer: int = 0, head: int = 0):
    """The ``(L, h, t)`` bool mask that removes ``key`` for ``scope``.

    Args:
        num_layers, num_heads, num_tokens: the model's layers and heads and the input's tokens.
        key: the token removed as a key (0-based position).
        scope: ``"head"`` (head ``head`` of layer ``layer``), ``"layer"`` (every head of ``layer``) or
            ``"all"`` (every head of every layer).
        layer, head: which, for ``"head"`` and ``"layer"``.

    Raises:
        ValueError: an unknown scope, or a key, layer or head out of range.
    """
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}: choose one of {', '.join(SCOPES)}")
    for name, value, count in (("key", key, num_tokens), ("layer", layer, num_layers), ("head", head, num_heads)):
        if not 0 <= value < count:
            raise ValueError(f"{name} {value} is out of range 0-{count - 1}")
    mask = np.zeros((num_layers, num_heads, num_tokens), dtype=bool)
    if scope == "all":
        mask[:, :, key] = True
    elif scope == "layer":
        mask[layer, :, key] = True
    else:
        mask[layer, head, key] = True
    return mask


@dataclass(frozen=True)
class KnockoutResult:
    """Attention and the sentence embedding with and without a key.

    Attributes:
        before, after: float32 ``(L, h, t, t)``, the encoder's attention without and with the key removed.
        change: ``(L, h)`` float64, each head's mean over queries of the total variation between a row
            before and after, ``½ Σ_j |A'[i, j] − A[i, j]|`` (0 to 1).
        embedding_distance: ``1 − cos`` between the mean-pooled last hidden states before and after.
        key, scope, layer, head: what was removed (``layer``/``head`` as given, whatever the scope).
        mask: ``(L, h, t)`` bool, the key mask used.
    """

    before: np.ndarray
    after: np.ndarray
    change: np.ndarray
    embedding_distance: float
    key: int
    scope: str
    layer: int
    head: int
    mask: np.ndarray

    def first_changed_layer(self) -> int:
        """The lowest layer where the key was removed: nothing below it changes."""
        return int(np.flatnonzero(self.mask.any((1, 2)))[0])


def knock_out_key(encoder, encoding, key: int, scope: str = "all", layer: int = 0, head: int = 0) -> KnockoutResult:
    """Remove token ``key`` as a key for ``scope`` and run the encoder with and without it.

    Args:
        encoder: the from-scratch encoder with the model's weights (eval mode).
        encoding: the input (:class:`~attention_viz.extraction.Encoding`), ``t`` tokens.
        key, scope, layer, head: see :func:`key_mask`.

    Returns:
        :class:`KnockoutResult`.

    Raises:
        ValueError: as :func:`key_mask`; and for a decoder, the first token removed where its first query
            would be left with no key at all (it sees only itself).
    """
    config = encoder.config
    mask = key_mask(config.num_hidden_layers, config.num_attention_heads, encoding.num_tokens, key, scope, layer, head)
    if config.causal and key == 0:
        raise ValueError("in a decoder the first token is the only key of the first query: remove another token")
    base = scratch_forward(encoder, encoding)
    knocked = scratch_forward(encoder, encoding, key_mask=torch.from_numpy(mask))
    before = torch.stack(base.attentions)[:, 0].numpy()  # (L, h, t, t)
    after = torch.stack(knocked.attentions)[:, 0].numpy()
    change = 0.5 * np.abs(after.astype(np.float64) - before).sum(-1).mean(-1)  # (L, h)
    ones = torch.ones(1, encoding.num_tokens)  # (1, t): no padding
    distance = cosine_distance(mean_pool(base.last_hidden_state, ones), mean_pool(knocked.last_hidden_state, ones))
    return KnockoutResult(before, after, change, float(distance[0]), key, scope, layer, head, mask)


def changed_predictions(
    encoder, head, tokenizer, encoding, position: int, k: int, off=None, knocked=None
) -> lm_head.Predictions:
    """:func:`~attention_viz.models.lm_head.predict` with one head switched off and/or one key removed.

    Args:
        encoder, head, tokenizer, encoding, position, k: as :func:`~attention_viz.models.lm_head.predict`.
        off: ``(layer, head)`` whose output is zeroed (a ``(L, h)`` head mask), or ``None``.
        knocked: ``(key, scope, layer, head)`` removed as :func:`key_mask` says, or ``None``.

    Raises:
        ValueError: a position, key, layer or head out of range, or an unknown scope.
    """
    config = encoder.config
    layers, heads = config.num_hidden_layers, config.num_attention_heads
    head_mask = None
    if off is not None:
        head_mask = torch.ones(layers, heads)  # (L, h)
        head_mask[off] = 0
    key_masks = None if knocked is None else torch.from_numpy(key_mask(layers, heads, encoding.num_tokens, *knocked))
    return lm_head.predict(encoder, head, tokenizer, encoding, position, k, head_mask, key_masks)
