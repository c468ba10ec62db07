"""Pieces the benchmarks and the tests both build offline: a byte-level BPE vocabulary for tiny or base-sized
random RoBERTa and GPT-2 checkpoints, and head importance by its definition (one forward per head).

The tests import them from here (``tests/tiny_families.py``, ``tests/test_corpus.py``), so a benchmark measures
the very models and reference the tests check.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
import torch

from attention_viz.analysis.importance import cosine_distance, mean_pool

BPE_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>", "<|endoftext|>")  # RoBERTa's, then GPT-2's end


def byte_level_bpe(texts: Iterable[str], vocab_size: int) -> tuple[dict, list]:
    """A byte-level BPE (RoBERTa's and GPT-2's kind) trained on ``texts`` with the ``tokenizers`` library.

    Args:
        texts: what it learns its merges from.
        vocab_size: entries at most, :data:`BPE_SPECIALS` and the 256 byte symbols among them.

    Returns:
        ``(vocab, merges)``: token -> id, and the merges as pairs, as ``RobertaTokenizer`` and ``GPT2Tokenizer``
        take them.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(BPE_SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(texts), trainer)
    model = json.loads(tokenizer.to_str())["model"]
    return model["vocab"], [tuple(merge) for merge in model["merges"]]


def one_forward_per_head(encoder, input_ids, token_type_ids, attention_mask) -> np.ndarray:
    """Head importance by its definition (Michel et al. 2019): a full forward with each head's output zeroed in
    turn; ``(layers, heads)`` sums over the batch of the cosine distance of the mean-pooled last hidden state."""
    layers, heads = encoder.config.num_hidden_layers, encoder.config.num_attention_heads
    sums = np.zeros((layers, heads))
    with torch.inference_mode():
        reference = mean_pool(encoder(input_ids, token_type_ids, attention_mask).last_hidden_state, attention_mask)
        for layer in range(layers):
            for head in range(heads):
                head_mask = torch.ones(layers, heads)
                head_mask[layer, head] = 0
                hidden = encoder(input_ids, token_type_ids, attention_mask, head_mask=head_mask).last_hidden_state
                sums[layer, head] = cosine_distance(mean_pool(hidden, attention_mask), reference).double().sum()
    return sums
