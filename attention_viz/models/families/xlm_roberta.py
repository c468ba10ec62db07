"""XLM-RoBERTa (Conneau et al. 2020): RoBERTa's model with a multilingual SentencePiece vocabulary."""

from __future__ import annotations

from attention_viz.models.families.base import Family, bert_name
from attention_viz.models.families.bert import attention_modules
from attention_viz.models.families.roberta import encoder_config, position_offset

FAMILY = Family(
    model_type="xlm-roberta",
    name="XLM-RoBERTa",
    differs="RoBERTa's rules with a SentencePiece vocabulary (▁ marks a space) in 100 languages",
    encoder_config=encoder_config,
    checkpoint_name=bert_name,
    attention_modules=attention_modules,
    position_offset=position_offset,
)
