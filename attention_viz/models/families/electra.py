"""ELECTRA (Clark et al. 2020), the discriminator: BERT's layers on embeddings of their own size.

Small ELECTRAs embed in fewer dimensions than their hidden size; ``embeddings_project`` maps the
embeddings (after their LayerNorm) up to it. A checkpoint of ``ElectraForPreTraining`` loads as
``ElectraModel``: the discriminator's head is not part of the attention.
"""

from __future__ import annotations

from attention_viz.models.encoder import EncoderConfig, transformers_name
from attention_viz.models.families.base import Family, bert_config
from attention_viz.models.families.bert import attention_modules


def encoder_config(config):
    """BERT's fields, with the embedding size."""
    return bert_config(config, embedding_size=config.embedding_size)


def checkpoint_name(name: str, config: EncoderConfig) -> str:
    if name.startswith("embeddings.projection."):
        return name.replace("embeddings.projection.", "embeddings_project.", 1)
    return transformers_name(name)


FAMILY = Family(
    model_type="electra",
    name="ELECTRA",
    differs="embeddings of their own size, projected to the hidden size (embeddings_project); WordPiece",
    encoder_config=encoder_config,
    checkpoint_name=checkpoint_name,
    attention_modules=attention_modules,
)
