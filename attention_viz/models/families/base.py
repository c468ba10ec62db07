"""What a family adapter says: how a checkpoint's names map onto the encoder, and the family's rules.

A family is one :class:`Family` value in a module of this package; :mod:`attention_viz.models.families`
finds it by ``model_type``. Everything else (the encoder, extraction, analysis) asks the family instead
of knowing model names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from torch import nn

from attention_viz.models.decoder import DecoderConfig
from attention_viz.models.encoder import BertEncoder, EncoderConfig, WeightMismatchError, transformers_name

# Checkpoint entries no family's encoder uses: a pooler on top, position/token-type id buffers.
POOLER_AND_BUFFERS = r"^pooler\.|^embeddings\.(position_ids|token_type_ids)$"


def bert_name(name: str, config: EncoderConfig) -> str:
    """Our name -> ``BertModel``'s (also RoBERTa's, XLM-R's and, but for the projection, ELECTRA's)."""
    return transformers_name(name)


def layer_name(name: str) -> tuple[int, str, str] | None:
    """``layers.3.attention.query.weight`` -> ``(3, "attention.query", "weight")``; None for other names."""
    match = re.fullmatch(r"layers\.(\d+)\.(.+)\.(weight|bias)", name)
    return None if match is None else (int(match[1]), match[2], match[3])


def check_activation(config, attribute: str = "hidden_act") -> str:
    """The config's activation name, refused early with the setting's own name if the encoder lacks it."""
    act = getattr(config, attribute)
    if not isinstance(act, str):
        raise WeightMismatchError(f"{attribute} {act!r} is not supported (a function, not a name)")
    return act


def check_absolute_positions(config) -> None:
    """Refuse relative position embeddings (the encoder implements absolute ones only)."""
    kind = getattr(config, "position_embedding_type", "absolute")
    if kind != "absolute":
        raise WeightMismatchError(f"position_embedding_type {kind!r} is not supported")


def check_encoder(config) -> None:
    """Refuse an encoder family's checkpoint configured as a decoder or with cross-attention."""
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        raise WeightMismatchError(f"{config.model_type} models configured as decoders are not supported")


def bert_config(config, **options) -> EncoderConfig:
    """An :class:`EncoderConfig` from a config with BERT's field names, plus the family's ``options``."""
    check_absolute_positions(config)
    check_encoder(config)
    fields = {
        name: getattr(config, name)
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
            "layer_norm_eps",
            "hidden_dropout_prob",
            "attention_probs_dropout_prob",
            "initializer_range",
        )
    }
    return EncoderConfig(**fields, hidden_act=check_activation(config), **options)


@dataclass(frozen=True)
class Family:
    """One model family: what differs from BERT, in the few places where it does.

    Attributes:
        model_type: transformers' ``config.model_type`` (``"roberta"``).
        name: the family as people write it (``"RoBERTa"``).
        differs: one line on what differs from BERT (shown in the app and in docs/models.md).
        encoder_config: transformers config -> :class:`EncoderConfig` (a Llama-style decoder's:
            :class:`~attention_viz.models.decoder.DecoderConfig`); raises
            :class:`~attention_viz.models.encoder.WeightMismatchError` for settings the encoder lacks.
        checkpoint_name: ``(our parameter name, encoder config)`` -> the name in the transformers model's
            ``state_dict()``.
        attention_modules: the transformers model -> the module that computes the attention weights in
            each layer, in layer order (layers that share weights list their one module once per
            layer); each returns ``(output, weights)``. Extraction hooks them.
        unused: checkpoint entries the encoder does not need.
        transposed: our parameter name -> whether the checkpoint stores its transpose (``Conv1D``).
        token_types: whether the model takes ``token_type_ids`` (GPT-2 would add ``wte(type)`` to every
            token; DistilBERT has none).
        causal: a decoder: each token attends to itself and earlier tokens only.
        position_offset: positions the embedding table reserves before the first token (RoBERTa:
            ``padding_idx + 1``); the longest input is ``max_position_embeddings`` minus this.
        parity: how closely the encoder reproduces transformers' attention, and why.
        model_class: the from-scratch model built from :attr:`encoder_config`'s config:
            :class:`~attention_viz.models.encoder.BertEncoder` (BERT's kin, GPT-2) or
            :class:`~attention_viz.models.decoder.Decoder` (Llama-style decoders).
    """

    model_type: str
    name: str
    differs: str
    encoder_config: Callable[[object], EncoderConfig | DecoderConfig]
    checkpoint_name: Callable[[str, EncoderConfig | DecoderConfig], str]
    attention_modules: Callable[[object], list]
    unused: re.Pattern = field(default_factory=lambda: re.compile(POOLER_AND_BUFFERS))
    transposed: Callable[[str], bool] = lambda name: False
    token_types: bool = True
    causal: bool = False
    position_offset: Callable[[object], int] = lambda config: 0
    parity: str = "bit for bit: the same kernels in the same order as transformers' eager attention"
    model_class: type[nn.Module] = BertEncoder

    def max_positions(self, config) -> int:
        """The most tokens one input can have: the position table less the family's offset."""
        return config.max_position_embeddings - self.position_offset(config)

    def model_kwargs(self, inputs: dict) -> dict:
        """The keyword arguments for the transformers model's forward, from ``input_ids``,
        ``token_type_ids`` and ``attention_mask``: without token types when the family has none, and
        without a key/value cache for a decoder (it would only copy the keys and values)."""
        kwargs = {k: v for k, v in inputs.items() if k != "token_type_ids" or self.token_types}
        return kwargs | {"use_cache": False} if self.causal else kwargs
