"""Tiny random encoder–decoder checkpoints (T5, BART) and causal-LM decoders, built offline in a folder.

T5 gets a SentencePiece-style Unigram vocabulary (``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2) and BART the byte-level
BPE, both trained here with ``tokenizers`` on a few lines (:mod:`tiny_families`). The stacks differ in depth (2
encoder layers, 3 decoder layers) and BART's in heads (4 and 2: head sizes 8 and 16), so a twin that mixes them
up shows. Query and key weights, and T5's relative position tables, are drawn wider than the families' init so
that heads have structure; T5's buckets are few and near (8 buckets up to distance 16) so that a 40-token text
reaches the logarithmic and the last ones. The end token's logit is pushed down so that greedy generation
writes the tokens asked for instead of stopping at once.
"""

from __future__ import annotations

import torch
from tiny_families import DECODERS, _bpe, _unigram, make_tiny
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BartTokenizer,
    T5Config,
    T5ForConditionalGeneration,
    T5Tokenizer,
)

SEQ2SEQ = ("bart", "t5")
T5_BUCKETS, T5_MAX_DISTANCE = 8, 16


def _t5(feed_forward: str):
    tokenizer = T5Tokenizer(vocab=_unigram(("<pad>", "</s>", "<unk>"), "<unk>"), extra_ids=0)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=8,
        d_ff=37,
        num_layers=2,
        num_decoder_layers=3,
        num_heads=4,
        relative_attention_num_buckets=T5_BUCKETS,
        relative_attention_max_distance=T5_MAX_DISTANCE,
        feed_forward_proj=feed_forward,
        decoder_start_token_id=tokenizer.pad_token_id,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return tokenizer, T5ForConditionalGeneration(config)


def _bart(tie: bool):
    vocab, merges = _bpe()
    tokenizer = BartTokenizer(vocab=vocab, merges=merges)
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=32,
        encoder_layers=2,
        decoder_layers=3,
        encoder_attention_heads=4,
        decoder_attention_heads=2,
        encoder_ffn_dim=37,
        decoder_ffn_dim=29,
        max_position_embeddings=64,
        scale_embedding=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.eos_token_id,
        forced_eos_token_id=None,  # the end token only where the model chooses it: every other token greedy
        tie_word_embeddings=tie,
    )
    model = BartForConditionalGeneration(config)
    model.generation_config.forced_bos_token_id = tokenizer.bos_token_id  # as facebook/bart-large: <s> first
    return tokenizer, model


def make_tiny_seq2seq(family: str, folder, seed: int = 0, feed_forward: str = "relu", tie: bool = True) -> str:
    """Save a random ``t5`` or ``bart`` ``...ForConditionalGeneration`` with its tokenizer in ``folder``;
    ``feed_forward``: T5's ``feed_forward_proj`` (``relu``, or ``gated-gelu`` as T5 v1.1); ``tie``: BART's LM head
    tied to the token embeddings (transformers 5 ties T5's always)."""
    torch.manual_seed(seed)
    tokenizer, model = _t5(feed_forward) if family == "t5" else _bart(tie)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(("q.weight", "k.weight", "q_proj.weight", "k_proj.weight")):
                param.normal_(0.0, 0.5)
            elif name.endswith("relative_attention_bias.weight"):
                param.normal_(0.0, 2.0)
        if family == "bart":  # a bias per token, so the greedy tokens vary
            model.final_logits_bias.normal_(0.0, 2.0)
            model.final_logits_bias[0, tokenizer.eos_token_id] = -1e4
        else:  # tied: the embedding row too
            model.lm_head.weight[tokenizer.eos_token_id] = 0.0
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


def make_tiny_causal_lm(family: str, folder) -> str:
    """A tiny decoder of ``family`` (``gpt2`` or one of :data:`tiny_families.DECODERS`) whose LM head is saved:
    tied to the token embeddings (a bare model's folder then loads as a causal LM with its head)."""
    options = {"tie_word_embeddings": True} if family in DECODERS else {}
    return make_tiny(family, folder, **options)
