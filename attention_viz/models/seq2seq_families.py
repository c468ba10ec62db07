"""The encoder–decoder families, T5 and BART: how a checkpoint's config and weight names map onto the twin.

They sit apart from :mod:`attention_viz.models.families` (whose adapters describe one stack that the app's pages
draw as ``(layers, heads, t, t)``): an encoder–decoder has two stacks and three kinds of attention, which the
pages do not show yet. :func:`seq2seq_family` finds one by ``config.model_type``;
:func:`twin_from_pretrained` builds :class:`~attention_viz.models.seq2seq.Seq2SeqTransformer` with a transformers
model's weights.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from attention_viz.models.encoder import WeightMismatchError, load_weights
from attention_viz.models.seq2seq import Seq2SeqConfig, Seq2SeqTransformer


@dataclass(frozen=True)
class Seq2SeqFamily:
    """One encoder–decoder family.

    Attributes:
        model_type: transformers' ``config.model_type`` (``"t5"``).
        name: as people write it (``"T5"``).
        differs: one line on what differs from the Transformer of Vaswani et al. (docs/models.md).
        config: transformers config -> :class:`Seq2SeqConfig`; raises
            :class:`~attention_viz.models.encoder.WeightMismatchError` for settings the twin lacks.
        checkpoint_name: ``(our parameter name, config)`` -> the name in the base model's ``state_dict()``
            (``T5Model``'s / ``BartModel``'s; a ``...ForConditionalGeneration``'s base model has the same).
        unused: base-model entries the twin does not read (the stacks' tied copies of the shared embedding).
    """

    model_type: str
    name: str
    differs: str
    config: Callable[[object], Seq2SeqConfig]
    checkpoint_name: Callable[[str, Seq2SeqConfig], str]
    unused: re.Pattern


_STACK = re.compile(r"(encoder|decoder)_layers\.(\d+)\.(.+)\.(weight|bias)")


def _t5_config(config) -> Seq2SeqConfig:
    """T5's fields (``feed_forward_proj`` ``relu`` or ``gated-gelu``; v1.1 and Flan-T5 are gated).

    Raises:
        WeightMismatchError: an activation other than ``relu``, ``gelu``, ``gelu_new``.
    """
    return Seq2SeqConfig(
        model_type="t5",
        vocab_size=config.vocab_size,
        hidden_size=config.d_model,
        encoder_layers=config.num_layers,
        decoder_layers=config.num_decoder_layers,
        encoder_heads=config.num_heads,
        decoder_heads=config.num_heads,
        head_dim=config.d_kv,
        encoder_ffn_size=config.d_ff,
        decoder_ffn_size=config.d_ff,
        hidden_act=config.dense_act_fn,
        gated_ffn=bool(config.is_gated_act),
        norm_eps=config.layer_norm_epsilon,
        relative_buckets=config.relative_attention_num_buckets,
        relative_max_distance=config.relative_attention_max_distance,
        decoder_start_token_id=config.decoder_start_token_id,
    )


_T5_ATTENTION = {"query": "q", "key": "k", "value": "v", "output": "o"}


def _t5_name(name: str, config: Seq2SeqConfig) -> str:
    """``decoder_layers.1.cross_attention.query.weight`` -> ``decoder.block.1.layer.1.EncDecAttention.q.weight``."""
    other = {
        "embeddings.weight": "shared.weight",
        "encoder_position_bias.weight": "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        "decoder_position_bias.weight": "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        "encoder_final_norm.weight": "encoder.final_layer_norm.weight",
        "decoder_final_norm.weight": "decoder.final_layer_norm.weight",
    }
    match = _STACK.fullmatch(name)
    if match is None:
        return other.get(name, name)
    stack, index, module, param = match.groups()
    ff = 2 if stack == "decoder" else 1  # the feed-forward is the block's last sublayer
    up = "wi_1" if config.gated_ffn else "wi"
    paths = {
        "self_attention_norm": "layer.0.layer_norm",
        "cross_attention_norm": "layer.1.layer_norm",
        "feed_forward_norm": f"layer.{ff}.layer_norm",
        "feed_forward.up": f"layer.{ff}.DenseReluDense.{up}",
        "feed_forward.gate": f"layer.{ff}.DenseReluDense.wi_0",
        "feed_forward.down": f"layer.{ff}.DenseReluDense.wo",
    }
    for ours, theirs in _T5_ATTENTION.items():
        paths[f"self_attention.{ours}"] = f"layer.0.SelfAttention.{theirs}"
        paths[f"cross_attention.{ours}"] = f"layer.1.EncDecAttention.{theirs}"
    return f"{stack}.block.{index}.{paths[module]}.{param}"


def _bart_config(config) -> Seq2SeqConfig:
    """BART's fields.

    Raises:
        WeightMismatchError: an activation other than ``relu``, ``gelu``, ``gelu_new``.
    """
    return Seq2SeqConfig(
        model_type="bart",
        vocab_size=config.vocab_size,
        hidden_size=config.d_model,
        encoder_layers=config.encoder_layers,
        decoder_layers=config.decoder_layers,
        encoder_heads=config.encoder_attention_heads,
        decoder_heads=config.decoder_attention_heads,
        head_dim=None,
        encoder_ffn_size=config.encoder_ffn_dim,
        decoder_ffn_size=config.decoder_ffn_dim,
        hidden_act=config.activation_function,
        norm_eps=1e-5,  # nn.LayerNorm's default, which BART's layers use
        max_positions=config.max_position_embeddings,
        embedding_scale=config.d_model**0.5 if config.scale_embedding else 1.0,
        decoder_start_token_id=config.decoder_start_token_id,
    )


_BART_OTHER = {
    "positions.weight": "embed_positions.weight",
    "embedding_norm.weight": "layernorm_embedding.weight",
    "embedding_norm.bias": "layernorm_embedding.bias",
}
_BART_LAYER = {
    "self_attention.query": "self_attn.q_proj",
    "self_attention.key": "self_attn.k_proj",
    "self_attention.value": "self_attn.v_proj",
    "self_attention.output": "self_attn.out_proj",
    "self_attention_norm": "self_attn_layer_norm",
    "cross_attention.query": "encoder_attn.q_proj",
    "cross_attention.key": "encoder_attn.k_proj",
    "cross_attention.value": "encoder_attn.v_proj",
    "cross_attention.output": "encoder_attn.out_proj",
    "cross_attention_norm": "encoder_attn_layer_norm",
    "feed_forward.up": "fc1",
    "feed_forward.down": "fc2",
    "feed_forward_norm": "final_layer_norm",
}


def _bart_name(name: str, config: Seq2SeqConfig) -> str:
    """``encoder_layers.0.feed_forward.up.bias`` -> ``encoder.layers.0.fc1.bias``."""
    match = _STACK.fullmatch(name)
    if match is None:
        if name == "embeddings.weight":
            return "shared.weight"
        stack, _, rest = name.partition("_")  # encoder_positions.weight -> (encoder, positions.weight)
        return f"{stack}.{_BART_OTHER[rest]}"
    stack, index, module, param = match.groups()
    return f"{stack}.layers.{index}.{_BART_LAYER[module]}.{param}"


T5 = Seq2SeqFamily(
    model_type="t5",
    name="T5",
    differs=(
        "relative position buckets added to the scores (bidirectional in the encoder, causal in the decoder; "
        "first layer's, shared); unscaled scores; pre-norm RMS-style LayerNorm; no biases"
    ),
    config=_t5_config,
    checkpoint_name=_t5_name,
    unused=re.compile(r"^(encoder|decoder)\.embed_tokens\.weight$|^lm_head\.weight$"),
)
BART = Seq2SeqFamily(
    model_type="bart",
    name="BART",
    differs="learned positions (2 rows reserved), LayerNorm on the embeddings, post-norm blocks, scaled scores",
    config=_bart_config,
    checkpoint_name=_bart_name,
    unused=re.compile(r"^(encoder|decoder)\.embed_tokens\.weight$"),
)
SEQ2SEQ_FAMILIES = {family.model_type: family for family in (T5, BART)}


def seq2seq_family(model_type: str) -> Seq2SeqFamily | None:
    """The encoder–decoder family of a ``config.model_type``, or ``None`` for any other."""
    return SEQ2SEQ_FAMILIES.get(str(model_type))


def twin_from_pretrained(model: nn.Module) -> Seq2SeqTransformer:
    """A from-scratch :class:`Seq2SeqTransformer` with a copy of a transformers T5 or BART model's weights, in
    eval mode (``T5Model``/``BartModel`` or their ``...ForConditionalGeneration``: the base model's weights).

    Raises:
        WeightMismatchError: another family, a setting the twin lacks, or a weight missing, unused or of
            another shape.
    """
    family = seq2seq_family(getattr(model.config, "model_type", ""))
    if family is None:
        raise WeightMismatchError(f"{model.config.model_type!r} is not an encoder–decoder family: T5 or BART")
    config = family.config(model.config)
    with torch.device("meta"):  # shapes only: every weight is replaced by the checkpoint's
        twin = Seq2SeqTransformer(config)
    base = getattr(model, "base_model", model)
    names = lambda name: family.checkpoint_name(name, config)  # noqa: E731
    load_weights(twin, base.state_dict(), names, family.unused, assign=True)
    return twin.eval()
