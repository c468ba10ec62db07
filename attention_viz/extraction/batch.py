"""Attention for many texts at once, in one padded batch: the corpus path.

The texts are tokenised with the rules of :func:`~attention_viz.extraction.encode` (segments, token types),
padded on the right to the longest, and run through :func:`~attention_viz.extraction.capture.model_attentions`,
the reference path; each text's weights are cut back to its own tokens and checked as a single text's are
(:mod:`~attention_viz.extraction.checks`). A padded key gets weight exactly 0 from the model's mask, so a
text's weights are the same alone or in any batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from attention_viz.extraction.capture import model_attentions
from attention_viz.extraction.checks import check_count, check_rows
from attention_viz.extraction.tokens import model_token_types, segments_of


class BatchText(NamedTuple):
    """One text of a batch as the model saw it, ``n`` tokens.

    Attributes:
        input_ids: ``n`` token ids.
        special: ``n`` flags, True for tokens the tokenizer added.
        segments: ``n`` segments (0 for sentence A, 1 for B), as :attr:`Encoding.segments`.
    """

    input_ids: list[int]
    special: list[bool]
    segments: list[int]


def encode_batch(
    tokenizer, texts: Sequence[tuple[str, str | None]], max_length: int, type_vocab_size: int = 2
) -> tuple[dict[str, torch.Tensor], list[BatchText]]:
    """Tokenise texts and pad them into one batch.

    A tokenizer with no separator token (a decoder's) reads a pair as one text, the two joined by a space.
    Padding uses the tokenizer's own padding id where it has one (RoBERTa's positions depend on it); GPT-2
    has none, and any id does there: padded keys are masked.

    Args:
        tokenizer: a fast transformers tokenizer.
        texts: ``(sentence A, sentence B or None)`` pairs.
        max_length: tokens per text; longer texts are cut (``longest_first``).
        type_vocab_size: the model's token types; with one, sentence B gets type 0 too.

    Returns:
        ``(inputs, texts)``: ``input_ids``, ``token_type_ids`` and ``attention_mask``, each int64 ``(b, t)``
        padded on the right; and per text its :class:`BatchText`.
    """
    if tokenizer.sep_token is None:
        texts = [(a if b is None else f"{a} {b}", None) for a, b in texts]
    encoded = [tokenizer(a, b, truncation=True, max_length=max_length, return_token_type_ids=True) for a, b in texts]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    t = max(len(e["input_ids"]) for e in encoded)
    ids = torch.full((len(encoded), t), pad_id, dtype=torch.int64)  # (b, t)
    types, mask = torch.zeros_like(ids), torch.zeros_like(ids)  # (b, t)
    rows = []
    for row, e in enumerate(encoded):
        n, sequence_ids = len(e["input_ids"]), e.sequence_ids()
        ids[row, :n] = torch.tensor(e["input_ids"])
        types[row, :n] = torch.from_numpy(model_token_types(np.asarray(e["token_type_ids"]), type_vocab_size))
        mask[row, :n] = 1
        rows.append(BatchText(e["input_ids"], [s is None for s in sequence_ids], segments_of(sequence_ids).tolist()))
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}, rows


def batch_attention(model, inputs: dict[str, torch.Tensor], lengths: Sequence[int], first: int = 0) -> list[np.ndarray]:
    """Each text's attention in a padded batch, cut to its own tokens and checked.

    Args:
        model: a transformers model of a supported family (eager attention, eval mode).
        inputs: the padded batch of :func:`encode_batch`, ``(b, t)`` each.
        lengths: the ``b`` texts' token counts ``n``.
        first: the index of the batch's first text in the whole run (for messages).

    Returns:
        Per text float32 ``(layers, heads, n, n)``, views of one ``(b, layers, heads, t, t)`` array.

    Raises:
        AttentionError: no weights, another number of layers, or a text whose rows fail
            :func:`~attention_viz.extraction.checks.check_rows` (the message names the text).
    """
    attentions = model_attentions(model, inputs)
    check_count(attentions, model.config.num_hidden_layers)
    stacked = torch.stack(attentions, 1).float().numpy()  # (b, L, h, t, t)
    cut = []
    for row, n in enumerate(lengths):
        weights = stacked[row, :, :, :n, :n]  # (L, h, n, n): padding cut off
        check_rows(torch.from_numpy(weights), f" in text {first + row}")
        cut.append(weights)
    return cut
