"""Head importance: how much the sentence embedding moves when one head is switched off.

Michel et al. 2019 ("Are Sixteen Heads Really Better than One?") mask one head's output and measure
the change in a task score. The bundled all-MiniLM-L6-v2 is a sentence-embedding model (mean pooling
over tokens), so here the change is the cosine distance between the mean-pooled last hidden states
with and without the head, computed with our from-scratch encoder, which reproduces the model exactly
and takes a head mask.

The definition costs one forward per head. Three things make it cheaper with the same numbers:

- a head in layer ``l`` changes nothing below ``l``: every ablation starts from the unablated input of
  its layer and runs only that layer and the ones above, and at each layer all the ablations that have
  reached it run as one batch;
- in its own layer, an ablation changes only that head's share of the output: the layer's queries,
  keys, values and attention are computed once for all its heads' ablations
  (:meth:`~attention_viz.models.encoder.EncoderLayer.without_each_head`);
- padding is dropped: texts of one length run together unpadded (a padded key gets weight exactly 0,
  so a text's numbers do not depend on its batch).

Benchmark #8 measures it against one forward per head.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from attention_viz.analysis import stats
from attention_viz.extraction.forward import model_inputs
from attention_viz.models.encoder import BertEncoder

# Attention weights (heads × query × key) computed by one layer call at most: 64 MB of float32.
ATTENTION_CELLS = 16 * 2**20


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
    """``1 − cos(a, b)`` over the last axis, clamped to [0, 2] (round-off can leave it just outside)."""
    return (1 - F.cosine_similarity(a, b, dim=-1)).clamp(0.0, 2.0)


def _length_groups(attention_mask: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(rows, positions)`` per token count ``n``: the ``g`` texts with ``n`` real tokens, ``(g,)``, and
    where their real tokens are, ``(g, n)`` in order (padding on either side)."""
    real_first = torch.argsort(attention_mask, dim=1, descending=True, stable=True)  # (b, t)
    lengths = attention_mask.sum(1)  # (b,)
    groups = []
    for n in lengths.unique().tolist():
        rows = (lengths == n).nonzero()[:, 0]  # (g,)
        groups.append((rows, real_first[rows, :n]))
    return groups


def _in_chunks(run: Callable[[torch.Tensor], torch.Tensor], size: int, x: torch.Tensor) -> torch.Tensor:
    """``run(x)``, ``size`` rows at a time (the attention weights of many sequences at once can take a
    gigabyte at 512 tokens), concatenated."""
    if len(x) <= size:
        return run(x)
    return torch.cat([run(x[i : i + size]) for i in range(0, len(x), size)])


def _pooled_without_each_head(
    encoder: BertEncoder, inputs: list[torch.Tensor], on_layer: Callable[[int], None] | None
) -> torch.Tensor:
    """Mean-pooled last hidden states of ``g`` unpadded texts of ``n`` tokens with one head switched off,
    for every head: ``(L, h, g, hidden)``.

    ``inputs[l]`` is ``(g, n, hidden)`` the unablated input of layer ``l``. The ablations that start at
    a layer join those started below it, so each layer runs once over every ablation that has reached it.
    """
    heads, (g, n, hidden) = encoder.config.num_attention_heads, inputs[0].shape
    size = max(1, ATTENTION_CELLS // (heads * n * n))  # sequences per layer call
    x = inputs[0][:0]  # (0, n, hidden): no ablation has started yet
    texts = max(1, size // heads)  # texts per call of without_each_head
    for layer, module in enumerate(encoder.layers):
        if len(x):  # the ablations started below
            x = _in_chunks(lambda chunk, module=module: module(chunk, None, None)[0], size, x)
        started = [  # (h, texts, n, hidden) each
            module.without_each_head(inputs[layer][i : i + texts]).view(heads, -1, n, hidden)
            for i in range(0, g, texts)
        ]
        x = torch.cat([x, torch.cat(started, dim=1).view(heads * g, n, hidden)])  # ((layer + 1) * h * g, n, hidden)
        if on_layer is not None:
            on_layer(layer)
    last = x if encoder.final_norm is None else encoder.final_norm(x)  # as last_hidden_state is
    return last.mean(1).view(len(encoder.layers), heads, g, -1)  # (L, h, g, hidden)


def importance_sums(
    encoder: BertEncoder,
    input_ids: torch.Tensor,
    token_type_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    on_layer: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Sum over a batch of texts of the cosine distance caused by switching off each head in turn.

    Equal, to float32 round-off (about 1e-7), to one forward per head with that head's output zeroed
    (``encoder(..., head_mask=...)``), for less work (see the module's docstring).

    Args:
        encoder: the from-scratch encoder (eval mode).
        input_ids, token_type_ids, attention_mask: ``(b, t)`` a padded batch; every text has at least
            one real token.
        on_layer: optional callable, called with each layer once its heads are done (for progress).

    Returns:
        ``(layers, heads)`` float64, the sum over the ``b`` texts of ``1 − cos(e, e_without_head)``.

    Raises:
        ValueError: a text with no real token (an all-zero row of ``attention_mask``).
    """
    if not bool(attention_mask.sum(1).all()):
        raise ValueError("every text needs at least one real token: a row of attention_mask is all 0")
    layers, heads = encoder.config.num_hidden_layers, encoder.config.num_attention_heads
    sums = torch.zeros(layers, heads, dtype=torch.float64)
    groups = _length_groups(attention_mask)
    with torch.inference_mode():
        base = encoder(input_ids, token_type_ids, attention_mask)
        reference = mean_pool(base.last_hidden_state, attention_mask)  # (b, hidden)
        for index, (rows, positions) in enumerate(groups):
            inputs = [hidden[rows[:, None], positions] for hidden in base.hidden_states[:-1]]  # L × (g, n, hidden)
            last = on_layer if index == len(groups) - 1 else None  # every layer is done once the last group is
            pooled = _pooled_without_each_head(encoder, inputs, last)  # (L, h, g, hidden)
            sums += cosine_distance(pooled, reference[rows][None, None]).double().sum(-1)
    return sums.numpy()


def head_importance(encoder: BertEncoder, encoding) -> np.ndarray:
    """Importance of every head for one encoded input: ``(layers, heads)`` cosine distances (0 to 2)."""
    inputs = model_inputs(encoding)
    return importance_sums(encoder, inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"])


def text_statistics(
    encoder: BertEncoder,
    weights: np.ndarray,
    encoding,
    cls_token: str | None = "[CLS]",
    sep_token: str | None = "[SEP]",
    causal: bool = False,
) -> pd.DataFrame:
    """Per-head statistics, tags and importance of one input (the Head statistics page's table for a text).

    Args:
        encoder: the from-scratch encoder with the model's weights.
        weights: ``(layers, heads, t, t)`` the model's attention for the input.
        encoding: the input (:class:`~attention_viz.extraction.Encoding`), ``t`` tokens.
        cls_token, sep_token: the model's names for its first and separator tokens (``<s>``, ``</s>`` in RoBERTa).
        causal: a decoder's attention: statistics that need later tokens are left empty (NaN).

    Returns:
        One row per head, layer-major: :func:`~attention_viz.analysis.stats.head_statistics`' columns
        and ``importance`` (:func:`head_importance`).
    """
    kinds = stats.TokenKinds.from_encoding(encoding, cls_token, sep_token)
    frame = stats.head_statistics(weights, kinds, causal)
    frame["importance"] = head_importance(encoder, encoding).reshape(-1)  # (L * h,), layer-major
    return frame
