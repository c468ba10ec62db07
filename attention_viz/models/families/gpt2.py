"""GPT-2 (Radford et al. 2019): a decoder; pre-LayerNorm blocks, fused ``c_attn``, a causal mask.

Each block is ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))``; ``ln_f`` follows the last. Query, key and
value come from one ``Conv1D`` (``c_attn``, weight stored ``(in, out)``), split in three; the
encoder's fused projection holds a transposed view of it, so its ``F.linear`` runs ``Conv1D``'s very
``addmm``. Each token sees itself and earlier tokens only: the upper triangle of every map is 0. No token
types (GPT-2 would add ``wte(type)``), no special tokens added, no sentence pairs.
"""

from __future__ import annotations

import re

from attention_viz.models.encoder import EncoderConfig, WeightMismatchError
from attention_viz.models.families.base import Family, check_activation, layer_name

_LAYER = {
    "attention_norm": "ln_1",
    "attention.qkv": "attn.c_attn",
    "attention.output": "attn.c_proj",
    "output_norm": "ln_2",
    "intermediate": "mlp.c_fc",
    "output": "mlp.c_proj",
}
_OTHER = {
    "embeddings.word_embeddings.weight": "wte.weight",
    "embeddings.position_embeddings.weight": "wpe.weight",
    "final_norm.weight": "ln_f.weight",
    "final_norm.bias": "ln_f.bias",
}
_CONV1D = ("attention.qkv", "attention.output", "intermediate", "output")


def encoder_config(config) -> EncoderConfig:
    """GPT-2's sizes and options.

    Raises:
        WeightMismatchError: for scaling by the inverse layer index, unscaled or upcast-and-reordered
            attention, or cross-attention (settings no released GPT-2 has).
    """
    for setting in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"):
        if getattr(config, setting, False):
            raise WeightMismatchError(f"GPT-2 with {setting}=True is not supported")
    if not getattr(config, "scale_attn_weights", True):
        raise WeightMismatchError("GPT-2 with scale_attn_weights=False is not supported")
    return EncoderConfig(
        vocab_size=config.vocab_size,
        hidden_size=config.n_embd,
        num_hidden_layers=config.n_layer,
        num_attention_heads=config.n_head,
        intermediate_size=config.n_inner or 4 * config.n_embd,
        max_position_embeddings=config.n_positions,
        type_vocab_size=0,
        layer_norm_eps=config.layer_norm_epsilon,
        hidden_act=check_activation(config, "activation_function"),
        hidden_dropout_prob=config.resid_pdrop,
        attention_probs_dropout_prob=config.attn_pdrop,
        initializer_range=config.initializer_range,
        embedding_norm=False,
        pre_norm=True,
        causal=True,
        fused_qkv=True,
        final_norm=True,
    )


def checkpoint_name(name: str, config: EncoderConfig) -> str:
    parts = layer_name(name)
    if parts is None:
        return _OTHER.get(name, name)
    index, module, param = parts
    return f"h.{index}.{_LAYER[module]}.{param}"


def transposed(name: str) -> bool:
    """``Conv1D`` weights are stored ``(in, out)``, the transpose of ``nn.Linear``'s."""
    parts = layer_name(name)
    return parts is not None and parts[2] == "weight" and parts[1] in _CONV1D


def attention_modules(model) -> list:
    blocks = getattr(getattr(model, "base_model", model), "h", None) or ()
    return [getattr(block, "attn", None) for block in blocks]


FAMILY = Family(
    model_type="gpt2",
    name="GPT-2",
    differs="a decoder: causal mask, pre-LayerNorm blocks, fused c_attn (Conv1D) weights; byte-level BPE; no pairs",
    encoder_config=encoder_config,
    checkpoint_name=checkpoint_name,
    attention_modules=attention_modules,
    unused=re.compile(r"^h\.\d+\.attn\.(bias|masked_bias)$"),
    transposed=transposed,
    token_types=False,
    causal=True,
)
