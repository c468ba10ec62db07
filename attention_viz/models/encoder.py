"""A from-scratch BERT encoder on :class:`MultiHeadSelfAttention` that loads any ``BertModel``'s weights.

Follows Devlin et al. 2019 (BERT) and transformers' ``models/bert/modeling_bert.py`` (post-LayerNorm
encoder, absolute positions). With the same weights it reproduces transformers' eager attention to
about 1e-7 at every layer and head (float32).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from attention_viz.models.attention import MultiHeadSelfAttention

_ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}

# Our module path inside a layer -> transformers' path inside ``encoder.layer.{i}``.
_LAYER_NAMES = {
    "attention.query": "attention.self.query",
    "attention.key": "attention.self.key",
    "attention.value": "attention.self.value",
    "attention.output": "attention.output.dense",
    "attention_norm": "attention.output.LayerNorm",
    "intermediate": "intermediate.dense",
    "output": "output.dense",
    "output_norm": "output.LayerNorm",
}
# Checkpoint entries that the encoder does not use (the pooler sits on top of it).
_UNUSED = re.compile(r"^pooler\.|^embeddings\.(position_ids|token_type_ids)$")


class WeightMismatchError(ValueError):
    """A checkpoint's weights do not fit the from-scratch encoder (missing, extra or mis-shaped)."""


class Variant(enum.StrEnum):
    """Teaching variants of the from-scratch encoder.

    ``exact``: the model's weights, scaling ``head_dim ** -0.5`` (reproduces transformers).
    ``article-scaling``: the model's weights, scores divided by ``sqrt(hidden_size)`` as the seed
    article does. ``no-scaling``: raw scores. ``random``: an untrained encoder of the same shape,
    initialised as BERT does (normal, std ``initializer_range``) from a seed.
    """

    EXACT = "exact"
    ARTICLE_SCALING = "article-scaling"
    NO_SCALING = "no-scaling"
    RANDOM = "random"

    def scaling(self, hidden_size: int) -> float | None:
        """The score scaling this variant uses; ``None`` means ``head_dim ** -0.5``."""
        return {Variant.ARTICLE_SCALING: hidden_size**-0.5, Variant.NO_SCALING: 1.0}.get(self)


@dataclass(frozen=True)
class EncoderConfig:
    """Sizes and settings of a BERT encoder (names as in transformers' ``BertConfig``)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    initializer_range: float = 0.02

    @classmethod
    def from_hf(cls, config) -> EncoderConfig:
        """Read a transformers ``BertConfig``.

        Raises:
            WeightMismatchError: for settings the encoder does not implement (non-absolute positions,
                an unknown activation, a decoder).
        """
        if getattr(config, "position_embedding_type", "absolute") != "absolute":
            raise WeightMismatchError(f"position_embedding_type {config.position_embedding_type!r} is not supported")
        if config.hidden_act not in _ACTIVATIONS:
            raise WeightMismatchError(f"hidden_act {config.hidden_act!r} is not supported")
        if getattr(config, "is_decoder", False):
            raise WeightMismatchError("decoder BERT models are not supported")
        return cls(**{name: getattr(config, name) for name in cls.__dataclass_fields__})

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


@dataclass(frozen=True)
class EncoderOutput:
    """What :meth:`BertEncoder.forward` returns.

    Attributes:
        last_hidden_state: ``(b, t, hidden)``.
        hidden_states: ``L + 1`` tensors ``(b, t, hidden)``: the embeddings, then each layer's output.
        attentions: ``L`` tensors ``(b, h, t, t)``; rows are softmax distributions over keys.
    """

    last_hidden_state: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...]
    attentions: tuple[torch.Tensor, ...]


class Embeddings(nn.Module):
    """Word + position + token-type embeddings, then LayerNorm and dropout."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)  # (t,)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)  # (b, t, hidden)
        x = x + self.position_embeddings(positions)  # (b, t, hidden)
        return self.dropout(self.LayerNorm(x))


class EncoderLayer(nn.Module):
    """One post-LayerNorm Transformer layer: attention, add & norm, feed-forward, add & norm."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        hidden = config.hidden_size
        self.attention = MultiHeadSelfAttention(
            hidden, config.num_attention_heads, dropout=config.attention_probs_dropout_prob
        )
        self.attention_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(hidden, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.activation = _ACTIVATIONS[config.hidden_act]

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float | None,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        attended, weights = self.attention(x, attention_mask, scaling, head_mask)  # (b, t, hidden), (b, h, t, t)
        x = self.attention_norm(x + self.dropout(attended))
        ffn = self.output(self.activation(self.intermediate(x)))  # (b, t, hidden)
        return self.output_norm(x + self.dropout(ffn)), weights


class BertEncoder(nn.Module):
    """BERT's embeddings and encoder stack, written from scratch (no pooler).

    Build it with :meth:`from_bert` to copy a transformers ``BertModel``'s weights, or with
    :meth:`random` for an untrained encoder. Call ``eval()`` before reading attention: in train mode
    dropout changes the weights on every run (case C09).
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_hidden_layers))

    @classmethod
    def from_bert(cls, bert: nn.Module) -> BertEncoder:
        """Build an encoder with a copy of a transformers ``BertModel``'s weights, in eval mode.

        Raises:
            WeightMismatchError: if the config is unsupported or any weight is missing, unused or of
                another shape.
        """
        with torch.device("meta"):  # shapes only: every weight is replaced by BERT's (no random init)
            encoder = cls(EncoderConfig.from_hf(bert.config))
        load_bert_weights(encoder, bert.state_dict(), assign=True)
        return encoder.eval()

    @classmethod
    def random(cls, config: EncoderConfig, seed: int) -> BertEncoder:
        """An untrained encoder, initialised as BERT's ``_init_weights`` does, reproducibly from ``seed``."""
        encoder = cls(config)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for module in encoder.modules():
                if isinstance(module, nn.Linear | nn.Embedding):
                    nn.init.normal_(module.weight, 0.0, config.initializer_range, generator=generator)
                if isinstance(module, nn.Linear):
                    nn.init.zeros_(module.bias)
                elif isinstance(module, nn.LayerNorm):
                    nn.init.ones_(module.weight)
                    nn.init.zeros_(module.bias)
        return encoder.eval()

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        scaling: float | None = None,
        head_mask: torch.Tensor | None = None,
    ) -> EncoderOutput:
        """Encode a batch of token ids.

        Args:
            input_ids: ``(b, t)`` WordPiece ids, ``t`` at most ``max_position_embeddings``.
            token_type_ids: ``(b, t)`` segment ids (0 for sentence A, 1 for B); default all 0.
            attention_mask: ``(b, t)`` 1 for real tokens, 0 for padding; default no padding.
            scaling: score scaling for every layer (see :class:`Variant`); ``None`` is ``head_dim**-0.5``.
            head_mask: ``(L, h)`` or ``(b, L, h)``: 1 keeps a head, 0 zeroes its output before the
                output projection (Michel et al. 2019); ``None`` (default) keeps every head and
                reproduces transformers exactly.

        Returns:
            :class:`EncoderOutput` with every layer's hidden states and attention weights.
        """
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)  # (b, t, hidden)
        hidden_states, attentions = [x], []
        for index, layer in enumerate(self.layers):
            layer_mask = None if head_mask is None else head_mask[..., index, :]  # (h,) or (b, h)
            x, weights = layer(x, attention_mask, scaling, layer_mask)  # (b, t, hidden), (b, h, t, t)
            hidden_states.append(x)
            attentions.append(weights)
        return EncoderOutput(x, tuple(hidden_states), tuple(attentions))


def transformers_name(name: str) -> str:
    """Map one of our parameter names to the transformers ``BertModel`` checkpoint name.

    ``layers.3.attention.query.weight`` -> ``encoder.layer.3.attention.self.query.weight``; embedding
    names are the same in both.
    """
    match = re.fullmatch(r"layers\.(\d+)\.(.+)\.(weight|bias)", name)
    if match is None:
        return name
    index, module, param = match.groups()
    return f"encoder.layer.{index}.{_LAYER_NAMES[module]}.{param}"


def load_bert_weights(encoder: BertEncoder, state_dict: dict[str, torch.Tensor], assign: bool = False) -> None:
    """Copy a transformers ``BertModel`` state dict into ``encoder``, checking every key and shape.

    Args:
        encoder: the from-scratch encoder to fill.
        state_dict: ``BertModel.state_dict()``.
        assign: make the copies the encoder's parameters (``load_state_dict(assign=True)``), as an
            encoder built on the ``meta`` device needs; otherwise copy into its existing parameters.

    Raises:
        WeightMismatchError: if a weight the encoder needs is missing or of another shape, or if the
            checkpoint has encoder weights that the encoder would silently ignore.
    """
    source = dict(state_dict)
    copied, used = {}, set()
    for name, target in encoder.state_dict().items():
        key = transformers_name(name)
        if key not in source:
            raise WeightMismatchError(f"checkpoint has no {key!r} (needed for {name!r})")
        if source[key].shape != target.shape:
            raise WeightMismatchError(f"{key!r} has shape {tuple(source[key].shape)}, expected {tuple(target.shape)}")
        copied[name] = source[key].detach().to(target.dtype).clone()
        used.add(key)
    unused = sorted(k for k in source if k not in used and not _UNUSED.match(k))
    if unused:
        raise WeightMismatchError(f"checkpoint weights the encoder does not use: {unused[:5]}")
    encoder.load_state_dict(copied, strict=True, assign=assign)
