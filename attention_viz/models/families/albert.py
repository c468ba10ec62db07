"""ALBERT (Lan et al. 2020): factorised embeddings and one set of layer weights shared by every layer.

The embeddings (size ``embedding_size``, 128 in the released models) are projected to the hidden size by
``encoder.embedding_hidden_mapping_in``. Layer ``i`` runs the weights of group
``i * num_hidden_groups // num_hidden_layers`` (one group in every released ALBERT): the attention
still differs from layer to layer, because each layer's input does. SentencePiece (``▁``), lower-cased.
"""

from __future__ import annotations

from attention_viz.models.encoder import EncoderConfig, WeightMismatchError
from attention_viz.models.families.base import Family, bert_config, layer_name

_LAYER = {
    "attention.query": "attention.query",
    "attention.key": "attention.key",
    "attention.value": "attention.value",
    "attention.output": "attention.dense",
    "attention_norm": "attention.LayerNorm",
    "intermediate": "ffn",
    "output": "ffn_output",
    "output_norm": "full_layer_layer_norm",
}


def encoder_config(config):
    """BERT's fields, with the embedding size and the shared layer groups.

    Raises:
        WeightMismatchError: for ``inner_group_num`` other than 1 (several layers in one group: each
            would add attention maps beyond ``num_hidden_layers``).
    """
    if config.inner_group_num != 1:
        raise WeightMismatchError(f"ALBERT with inner_group_num {config.inner_group_num} is not supported (only 1)")
    if config.num_hidden_layers % config.num_hidden_groups:
        raise WeightMismatchError("ALBERT's num_hidden_layers must be a multiple of num_hidden_groups")
    return bert_config(config, embedding_size=config.embedding_size, layer_groups=config.num_hidden_groups)


def _group(index: int, config) -> int:
    return index * config.num_hidden_groups // config.num_hidden_layers


def checkpoint_name(name: str, config: EncoderConfig) -> str:
    if name.startswith("embeddings.projection."):
        return name.replace("embeddings.projection.", "encoder.embedding_hidden_mapping_in.", 1)
    parts = layer_name(name)
    if parts is None:
        return name
    index, module, param = parts
    group = config.weight_set(index)
    return f"encoder.albert_layer_groups.{group}.albert_layers.0.{_LAYER[module]}.{param}"


def attention_modules(model) -> list:
    """The one shared ``AlbertAttention`` (per group), listed once per layer."""
    base = getattr(model, "base_model", model)
    groups = getattr(getattr(base, "encoder", None), "albert_layer_groups", None)
    if groups is None:
        return []
    config = base.config
    return [groups[_group(i, config)].albert_layers[0].attention for i in range(config.num_hidden_layers)]


FAMILY = Family(
    model_type="albert",
    name="ALBERT",
    differs="factorised embeddings (128) projected to the hidden size; one set of layer weights shared by every layer",
    encoder_config=encoder_config,
    checkpoint_name=checkpoint_name,
    attention_modules=attention_modules,
)
