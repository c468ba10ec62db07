"""RoBERTa (Liu et al. 2019): BERT's layers; positions offset by the padding index; one token type.

Positions follow fairseq's ``make_positions``: real tokens count from ``pad_token_id + 1``, so a
514-position table holds 512 tokens. Byte-level BPE (``Ġ`` marks a space); ``<s> A </s></s> B </s>``.
"""

from __future__ import annotations

from attention_viz.models.families.base import Family, bert_config, bert_name
from attention_viz.models.families.bert import attention_modules


def encoder_config(config):
    """BERT's fields, with RoBERTa's position rule."""
    return bert_config(config, padding_idx=config.pad_token_id)


def position_offset(config) -> int:
    return config.pad_token_id + 1


FAMILY = Family(
    model_type="roberta",
    name="RoBERTa",
    differs="positions start after the padding index; one token type; byte-level BPE; <s> A </s></s> B </s>",
    encoder_config=encoder_config,
    checkpoint_name=bert_name,
    attention_modules=attention_modules,
    position_offset=position_offset,
)
