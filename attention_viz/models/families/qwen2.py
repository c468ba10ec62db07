"""Qwen2 (Yang et al. 2024): Llama's decoder with a bias on the query, key and value projections.

The output projection and the MLP have none. Layers from ``max_window_layers`` on use sliding-window
attention when the config sets ``use_sliding_window`` (``layer_types``); the released models do not.
"""

from __future__ import annotations

from attention_viz.models.decoder import DecoderConfig
from attention_viz.models.families.llama import decoder_config, decoder_family


def encoder_config(config) -> DecoderConfig:
    """Qwen2's sizes and options: biased q, k, v projections; any sliding layers its ``layer_types`` name."""
    return decoder_config(config, qkv_bias=True)


FAMILY = decoder_family(
    "qwen2",
    "Qwen2",
    "Llama's decoder (RoPE, grouped-query attention, RMSNorm, SwiGLU) with a bias on q, k and v; no pairs",
    encoder_config,
)
