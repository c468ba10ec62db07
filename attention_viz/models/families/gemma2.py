"""Gemma 2 (Gemma Team 2024): a Llama-style decoder with soft-capped scores and local/global layers.

What differs from Llama: the embeddings are multiplied by ``sqrt(hidden_size)``; every RMSNorm multiplies by
``1 + weight``; each block norms the attention's and the MLP's output as well as their input
(``post_attention_layernorm``, ``pre_feedforward_layernorm``, ``post_feedforward_layernorm``); scores are
scaled by ``query_pre_attn_scalar ** -0.5`` and soft-capped, ``c * tanh(s / c)``
(``attn_logit_softcapping``), before the mask; ``layer_types`` alternate sliding-window (local) and full
(global) layers. The MLP is GeGLU (``hidden_activation``).
"""

from __future__ import annotations

from attention_viz.models.decoder import DecoderConfig
from attention_viz.models.families.llama import LAYER, decoder_config, decoder_family

_LAYER = LAYER | {
    "post_attention_norm": "post_attention_layernorm",
    "feed_forward_norm": "pre_feedforward_layernorm",
    "post_feed_forward_norm": "post_feedforward_layernorm",
}


def encoder_config(config) -> DecoderConfig:
    """Gemma 2's sizes and options."""
    bias = bool(getattr(config, "attention_bias", False))
    return decoder_config(
        config,
        activation="hidden_activation",
        qkv_bias=bias,
        output_bias=bias,
        query_pre_attn_scalar=config.query_pre_attn_scalar,
        attn_logit_softcapping=config.attn_logit_softcapping,
        embedding_scale=config.hidden_size**0.5,
        sandwich_norms=True,
        unit_offset_norms=True,
    )


FAMILY = decoder_family(
    "gemma2",
    "Gemma 2",
    "a Llama-style decoder with soft-capped attention scores, alternating local (sliding-window) and global "
    "layers, scaled embeddings and norms after attention and MLP",
    encoder_config,
    _LAYER,
)
