"""BERT (Devlin et al. 2019): the encoder as written; every other family is a difference from it."""

from __future__ import annotations

from attention_viz.models.families.base import Family, bert_config, bert_name


def attention_modules(model) -> list:
    """``encoder.layer[i].attention.self`` of a BERT-structured model (BERT, RoBERTa, XLM-R, ELECTRA)."""
    layers = getattr(getattr(getattr(model, "base_model", model), "encoder", None), "layer", None) or ()
    return [getattr(getattr(layer, "attention", None), "self", None) for layer in layers]


FAMILY = Family(
    model_type="bert",
    name="BERT",
    differs="the reference: post-LayerNorm encoder, WordPiece, [CLS] A [SEP] B [SEP] with token types 0/1",
    encoder_config=bert_config,
    checkpoint_name=bert_name,
    attention_modules=attention_modules,
)
