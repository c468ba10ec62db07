"""Qwen3 (Yang et al. 2025): Llama's decoder with an RMSNorm on each head's query and key (QK-norm).

``q_norm`` and ``k_norm`` normalise each head's ``head_dim`` numbers before the rotation; ``head_dim`` is
set in the config apart from ``hidden_size / heads``. No q, k, v bias (``attention_bias`` as Llama's).
"""

from __future__ import annotations

from attention_viz.models.decoder import DecoderConfig
from attention_viz.models.families.llama import decoder_config, decoder_family


def encoder_config(config) -> DecoderConfig:
    """Qwen3's sizes and options: QK-norm; ``attention_bias`` on all four attention projections."""
    bias = bool(getattr(config, "attention_bias", False))
    return decoder_config(config, qkv_bias=bias, output_bias=bias, qk_norm=True)


FAMILY = decoder_family(
    "qwen3",
    "Qwen3",
    "Llama's decoder (RoPE, grouped-query attention, RMSNorm, SwiGLU) with an RMSNorm on each head's q and k",
    encoder_config,
)
