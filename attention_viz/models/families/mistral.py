"""Mistral (Jiang et al. 2023): Llama's decoder with sliding-window attention in every layer.

With ``sliding_window`` set, query ``i`` sees only keys ``i - window + 1 .. i`` (transformers'
``create_sliding_window_causal_mask``); ``null`` (Mistral 7B v0.2 on) is ordinary causal attention. No
biases.
"""

from __future__ import annotations

from attention_viz.models.decoder import FULL, SLIDING, DecoderConfig
from attention_viz.models.families.llama import decoder_config, decoder_family


def encoder_config(config) -> DecoderConfig:
    """Mistral's sizes and options: every layer sliding when the config sets ``sliding_window``."""
    window = getattr(config, "sliding_window", None)
    kinds = (FULL if window is None else SLIDING,) * config.num_hidden_layers
    return decoder_config(config, layer_types=kinds, sliding_window=window)


FAMILY = decoder_family(
    "mistral",
    "Mistral",
    "Llama's decoder (RoPE, grouped-query attention, RMSNorm, SwiGLU) with sliding-window attention",
    encoder_config,
)
