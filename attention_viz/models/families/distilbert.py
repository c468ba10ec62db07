"""DistilBERT (Sanh et al. 2019): BERT's layers under other names, no token types, six layers.

``q_lin``/``k_lin``/``v_lin``/``out_lin``, ``sa_layer_norm``, ``ffn.lin1``/``lin2``,
``output_layer_norm``; the LayerNorm epsilon is fixed at 1e-12. The model takes no
``token_type_ids``: a sentence pair is told apart only by its [SEP].
"""

from __future__ import annotations

from attention_viz.models.encoder import EncoderConfig
from attention_viz.models.families.base import Family, check_activation, layer_name

_LAYER = {
    "attention.query": "attention.q_lin",
    "attention.key": "attention.k_lin",
    "attention.value": "attention.v_lin",
    "attention.output": "attention.out_lin",
    "attention_norm": "sa_layer_norm",
    "intermediate": "ffn.lin1",
    "output": "ffn.lin2",
    "output_norm": "output_layer_norm",
}


def encoder_config(config) -> EncoderConfig:
    return EncoderConfig(
        vocab_size=config.vocab_size,
        hidden_size=config.dim,
        num_hidden_layers=config.n_layers,
        num_attention_heads=config.n_heads,
        intermediate_size=config.hidden_dim,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=0,
        layer_norm_eps=1e-12,  # DistilBERT's LayerNorms are built with eps=1e-12, whatever the config says
        hidden_act=check_activation(config, "activation"),
        hidden_dropout_prob=config.dropout,
        attention_probs_dropout_prob=config.attention_dropout,
        initializer_range=config.initializer_range,
    )


def checkpoint_name(name: str, config: EncoderConfig) -> str:
    parts = layer_name(name)
    if parts is None:
        return name  # embeddings.word_embeddings.weight, ... are the same
    index, module, param = parts
    return f"transformer.layer.{index}.{_LAYER[module]}.{param}"


def attention_modules(model) -> list:
    layers = getattr(getattr(getattr(model, "base_model", model), "transformer", None), "layer", None) or ()
    return [getattr(layer, "attention", None) for layer in layers]


FAMILY = Family(
    model_type="distilbert",
    name="DistilBERT",
    differs="six of BERT's layers under other names (q_lin, ...); no token types; WordPiece",
    encoder_config=encoder_config,
    checkpoint_name=checkpoint_name,
    attention_modules=attention_modules,
    token_types=False,
)
