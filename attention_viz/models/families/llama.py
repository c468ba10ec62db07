"""Llama (Touvron et al. 2023): a decoder with rotary positions, grouped-query attention, RMSNorm and SwiGLU.

Each block is ``x + self_attn(input_layernorm(x))`` then ``x + mlp(post_attention_layernorm(x))``; ``norm``
follows the last. Queries and keys are rotated by position (RoPE, with the config's ``rope_parameters``:
``default``, ``linear`` or ``llama3``); ``num_key_value_heads`` key/value heads are shared by the query
heads (grouped-query attention). The from-scratch twin is :class:`~attention_viz.models.decoder.Decoder`.
The helpers here serve the other Llama-style families (Qwen2, Qwen3, Mistral, Gemma 2) as well.
"""

from __future__ import annotations

import re

from attention_viz.models.decoder import FULL, Decoder, DecoderConfig
from attention_viz.models.encoder import WeightMismatchError
from attention_viz.models.families.base import Family, check_activation, layer_name

# Our module path inside a block -> transformers' path inside ``layers.{i}``.
LAYER = {
    "attention_norm": "input_layernorm",
    "attention.query": "self_attn.q_proj",
    "attention.key": "self_attn.k_proj",
    "attention.value": "self_attn.v_proj",
    "attention.output": "self_attn.o_proj",
    "attention.query_norm": "self_attn.q_norm",
    "attention.key_norm": "self_attn.k_norm",
    "feed_forward_norm": "post_attention_layernorm",
    "gate": "mlp.gate_proj",
    "up": "mlp.up_proj",
    "down": "mlp.down_proj",
}
OTHER = {"embeddings.weight": "embed_tokens.weight", "final_norm.weight": "norm.weight"}
NOTHING_UNUSED = re.compile(r"(?!)")  # RoPE's frequencies and Gemma's embedding scale are not saved


def rope_options(config) -> dict:
    """The :class:`DecoderConfig` RoPE fields from a config's ``rope_parameters`` (transformers 5; older
    configs' ``rope_scaling`` and ``rope_theta`` are read into it when the config loads).

    Raises:
        WeightMismatchError: for a RoPE type other than ``default``, ``linear`` and ``llama3``, RoPE on part
            of each head (``partial_rotary_factor``), or parameters per layer type.
    """
    params = dict(getattr(config, "rope_parameters", None) or {})
    if not params:  # a config class that keeps the older fields
        params = dict(getattr(config, "rope_scaling", None) or {})
        params.setdefault("rope_theta", getattr(config, "rope_theta", 10000.0))
    if "rope_theta" not in params:
        raise WeightMismatchError(f"rope parameters per layer type are not supported: {sorted(params)}")
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise WeightMismatchError(f"partial_rotary_factor {params['partial_rotary_factor']} is not supported")
    options = {"rope_theta": float(params["rope_theta"]), "rope_type": params.get("rope_type", "default")}
    if options["rope_type"] in ("linear", "llama3"):
        options["rope_factor"] = float(params["factor"])
    if options["rope_type"] == "llama3":
        options["rope_low_freq_factor"] = float(params["low_freq_factor"])
        options["rope_high_freq_factor"] = float(params["high_freq_factor"])
        options["rope_original_max_positions"] = int(
            params.get("original_max_position_embeddings", config.max_position_embeddings)
        )
    return options


def layer_types(config) -> tuple[str, ...]:
    """Each layer's attention kind from the config's ``layer_types``; all ``full_attention`` without it."""
    kinds = getattr(config, "layer_types", None)
    return tuple(kinds) if kinds else (FULL,) * config.num_hidden_layers


def decoder_config(config, activation: str = "hidden_act", **options) -> DecoderConfig:
    """A :class:`DecoderConfig` from a config with Llama's field names, plus the family's ``options``.

    Raises:
        WeightMismatchError: for an activation, RoPE type or layer type the decoder lacks, or a model
            configured with bidirectional attention.
    """
    if getattr(config, "use_bidirectional_attention", False):
        raise WeightMismatchError(f"{config.model_type} with bidirectional attention is not supported")
    heads = config.num_attention_heads
    fields = dict(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=heads,
        num_key_value_heads=getattr(config, "num_key_value_heads", None) or heads,
        head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
        intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_position_embeddings,
        rms_norm_eps=config.rms_norm_eps,
        hidden_act=check_activation(config, activation),
        attention_probs_dropout_prob=getattr(config, "attention_dropout", 0.0),
        initializer_range=config.initializer_range,
        layer_types=layer_types(config),
        sliding_window=getattr(config, "sliding_window", None),
    )
    return DecoderConfig(**(fields | rope_options(config) | options))


def encoder_config(config) -> DecoderConfig:
    """Llama's sizes and options: ``attention_bias`` on all four attention projections, ``mlp_bias``."""
    bias = bool(getattr(config, "attention_bias", False))
    return decoder_config(config, qkv_bias=bias, output_bias=bias, mlp_bias=bool(getattr(config, "mlp_bias", False)))


def checkpoint_namer(layer: dict[str, str]):
    """``(our name, config) -> transformers' name`` for a Llama-style model with the block names ``layer``."""

    def checkpoint_name(name: str, config: DecoderConfig) -> str:
        parts = layer_name(name)
        if parts is None:
            return OTHER.get(name, name)
        index, module, param = parts
        return f"layers.{index}.{layer[module]}.{param}"

    return checkpoint_name


def attention_modules(model) -> list:
    """Each block's ``self_attn``; it returns ``(output, weights)`` with weights per query head."""
    blocks = getattr(getattr(model, "base_model", model), "layers", None) or ()
    return [getattr(block, "self_attn", None) for block in blocks]


def decoder_family(model_type: str, name: str, differs: str, config, layer: dict[str, str] = LAYER) -> Family:
    """The :class:`Family` of a Llama-style decoder: no token types, causal, the decoder as its twin."""
    return Family(
        model_type=model_type,
        name=name,
        differs=differs,
        encoder_config=config,
        checkpoint_name=checkpoint_namer(layer),
        attention_modules=attention_modules,
        unused=NOTHING_UNUSED,
        token_types=False,
        causal=True,
        model_class=Decoder,
    )


FAMILY = decoder_family(
    "llama",
    "Llama",
    "a decoder: rotary positions (RoPE), grouped-query attention, RMSNorm, SwiGLU MLP; no pairs",
    encoder_config,
)
