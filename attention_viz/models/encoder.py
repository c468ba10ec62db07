"""A from-scratch Transformer encoder on :class:`MultiHeadSelfAttention` that loads a checkpoint's weights.

Follows Devlin et al. 2019 (BERT) and transformers' ``models/bert/modeling_bert.py`` (post-LayerNorm
encoder, absolute positions), with the options the other supported families need (see
:mod:`attention_viz.models.families`): positions offset by a padding index (RoBERTa), no token types
(DistilBERT, GPT-2), factorised embeddings with a projection (ELECTRA, ALBERT), one set of layer weights
shared by several layers (ALBERT), and pre-LayerNorm blocks with a causal mask and a fused query/key/value
projection (GPT-2, Radford et al. 2019). With the same weights it reproduces transformers' eager
attention bit for bit: the same kernels run in the same order (float32).
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from attention_viz.models.attention import MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation written out as OpenAI GPT and Google's BERT code do (transformers'
    ``NewGELUActivation``, ``gelu_new``): the same operations in the same order, so the same bits;
    ``F.gelu(approximate="tanh")`` differs from it in the last bits."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


# The largest difference of one attention weight between the exact from-scratch encoder and transformers' model that
# counts as reproducing it: the tests hold the supported families to it, and Compare and Inside the model say
# whether the current text stays within it.
PARITY_BOUND = 1e-5

_ACTIVATIONS = {"gelu": F.gelu, "gelu_new": gelu_new, "gelu_pytorch_tanh": _gelu_tanh, "relu": F.relu}

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
    """Sizes and settings of the encoder (names as in transformers' ``BertConfig``).

    The fields after ``initializer_range`` are the other families' options; their defaults are BERT's.

    Attributes:
        type_vocab_size: token types (segments); 0 for a model without token-type embeddings.
        embedding_size: size of the embeddings when smaller than ``hidden_size`` (ELECTRA, ALBERT); a
            linear projection maps them to ``hidden_size``. ``None``: ``hidden_size``.
        padding_idx: RoBERTa's position rule when set: positions count real tokens from
            ``padding_idx + 1`` on, and padding gets position ``padding_idx`` (fairseq's
            ``make_positions``). ``None``: positions ``0 .. t - 1``.
        embedding_norm: LayerNorm after summing the embeddings (GPT-2 has none).
        pre_norm: pre-LayerNorm blocks (GPT-2): ``x + attention(norm(x))``, then
            ``x + feed_forward(norm(x))``; otherwise BERT's post-LayerNorm layers.
        causal: each token attends only to itself and earlier tokens (a decoder).
        fused_qkv: one projection for query, key and value (GPT-2's ``c_attn``).
        final_norm: LayerNorm after the last layer (GPT-2's ``ln_f``).
        layer_groups: how many sets of layer weights the layers share (ALBERT's ``num_hidden_groups``;
            layer ``i`` uses set ``i * layer_groups // num_hidden_layers``); ``None``: one set per layer.
    """

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
    embedding_size: int | None = None
    padding_idx: int | None = None
    embedding_norm: bool = True
    pre_norm: bool = False
    causal: bool = False
    fused_qkv: bool = False
    final_norm: bool = False
    layer_groups: int | None = None

    def __post_init__(self) -> None:
        if self.hidden_act not in _ACTIVATIONS:
            raise WeightMismatchError(
                f"hidden_act {self.hidden_act!r} is not supported: choose one of {', '.join(_ACTIVATIONS)}"
            )
        groups = self.layer_groups
        if groups is not None and not 1 <= groups <= self.num_hidden_layers:
            raise WeightMismatchError(f"layer_groups must be 1 to {self.num_hidden_layers}, got {groups}")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def weight_sets(self) -> int:
        """How many distinct sets of layer weights there are (``num_hidden_layers`` unless shared)."""
        return self.layer_groups or self.num_hidden_layers

    def weight_set(self, layer: int) -> int:
        """Which set of layer weights ``layer`` uses (transformers' ALBERT: ``int(i / (L / groups))``)."""
        return layer * self.weight_sets // self.num_hidden_layers


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
    """Word + token-type + position embeddings, then LayerNorm, dropout and (factorised) a projection.

    Each part is there only if the config asks for it: no token types when ``type_vocab_size`` is 0, no
    LayerNorm without ``embedding_norm``, a ``projection`` to ``hidden_size`` when ``embedding_size``
    is smaller. The sums run in transformers' order (word + type, then + position).
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        size = config.embedding_size or config.hidden_size
        self.padding_idx = config.padding_idx
        self.word_embeddings = nn.Embedding(config.vocab_size, size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, size)
        if config.type_vocab_size:
            self.token_type_embeddings = nn.Embedding(config.type_vocab_size, size)
        if config.embedding_norm:
            self.LayerNorm = nn.LayerNorm(size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        if size != config.hidden_size:
            self.projection = nn.Linear(size, config.hidden_size)

    def positions(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Position ids: ``(t,)`` from 0, or ``(b, t)`` by RoBERTa's rule when ``padding_idx`` is set."""
        if self.padding_idx is None:
            return torch.arange(input_ids.shape[1], device=input_ids.device)  # (t,)
        real = input_ids.ne(self.padding_idx).int()  # (b, t)
        return (torch.cumsum(real, dim=1).type_as(real) * real).long() + self.padding_idx  # (b, t)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        x = self.word_embeddings(input_ids)  # (b, t, size)
        if hasattr(self, "token_type_embeddings"):
            types = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids
            x = x + self.token_type_embeddings(types)  # (b, t, size)
        x = x + self.position_embeddings(self.positions(input_ids))  # (b, t, size)
        if hasattr(self, "LayerNorm"):
            x = self.LayerNorm(x)
        x = self.dropout(x)
        return self.projection(x) if hasattr(self, "projection") else x  # (b, t, hidden)


class EncoderLayer(nn.Module):
    """One post-LayerNorm Transformer layer: attention, add & norm, feed-forward, add & norm."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        hidden = config.hidden_size
        self.attention = MultiHeadSelfAttention(
            hidden,
            config.num_attention_heads,
            dropout=config.attention_probs_dropout_prob,
            causal=config.causal,
            fused=config.fused_qkv,
        )
        self.attention_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(hidden, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.activation: Callable[[torch.Tensor], torch.Tensor] = _ACTIVATIONS[config.hidden_act]

    def attention_input(self, x: torch.Tensor) -> torch.Tensor:
        """What the attention's projections see of the layer's input ``x``: ``x`` itself here."""
        return x

    def after_attention(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The layer's output from its input ``x`` and the attention's output ``attended``, both
        ``(b, t, hidden)``: add & norm, feed-forward, add & norm."""
        x = self.attention_norm(x + self.dropout(attended))  # (b, t, hidden)
        ffn = self.output(self.activation(self.intermediate(x)))  # (b, t, hidden)
        return self.output_norm(x + self.dropout(ffn))

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float | None,
        head_mask: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        attended, weights = self.attention(self.attention_input(x), attention_mask, scaling, head_mask, key_mask)
        return self.after_attention(x, attended), weights  # (b, t, hidden), (b, h, t, t)

    def without_each_head(self, x: torch.Tensor) -> torch.Tensor:
        """The layer on unpadded ``x`` ``(g, n, hidden)`` with each of its ``h`` heads switched off in turn
        (Michel et al. 2019): ``(h * g, n, hidden)``, copy ``k * g + i`` being text ``i`` without head ``k``.

        The numbers of :meth:`forward` with a head mask of one 0, to float32 round-off; the queries, keys,
        values and attention of the ``g`` texts are computed once, and only each head's share of the output
        is switched off.
        """
        attention, (g, n, _) = self.attention, x.shape
        h = attention.num_heads
        off = 1 - torch.eye(h, dtype=x.dtype, device=x.device).repeat_interleave(g, dim=0)  # (h * g, h)
        q, k, v = (attention._split(p) for p in attention._project(self.attention_input(x)))  # 3 × (g, h, n, d)
        mask = causal_mask(n, q.dtype) if attention.causal else None  # (1, 1, n, n)
        context, _ = scaled_dot_product_attention(q, k, v, mask)  # (g, h, n, d)
        context = context.repeat(h, 1, 1, 1) * off[:, :, None, None]  # (h * g, h, n, d)
        merged = context.transpose(1, 2).reshape(h * g, n, -1)  # (h * g, n, h * d)
        return self.after_attention(x.repeat(h, 1, 1), attention.output(merged))  # (h * g, n, hidden)


class PreNormLayer(EncoderLayer):
    """One pre-LayerNorm Transformer block (GPT-2): ``x + attention(norm(x))``, then
    ``x + feed_forward(norm(x))``. ``attention_norm`` is GPT-2's ``ln_1``, ``output_norm`` its ``ln_2``."""

    def attention_input(self, x: torch.Tensor) -> torch.Tensor:
        """What the attention's projections see of the block's input ``x``: ``attention_norm(x)``."""
        return self.attention_norm(x)

    def after_attention(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The block's output from its input ``x`` and the attention's output: two residual additions."""
        x = x + self.dropout(attended)  # (b, t, hidden)
        ffn = self.output(self.activation(self.intermediate(self.output_norm(x))))  # (b, t, hidden)
        return x + self.dropout(ffn)


class BertEncoder(nn.Module):
    """The embeddings and layer stack of any supported family, written from scratch (no pooler, no head).

    Named after BERT, the family it began with; the config's options give the other families (see
    :class:`EncoderConfig`). Build it with :func:`attention_viz.models.families.encoder_from_pretrained`
    to copy a transformers model's weights, or with :meth:`random` for an untrained encoder. Call
    ``eval()`` before reading attention: in train mode dropout changes the weights on every run.

    Attributes:
        layers: one module per layer, ``num_hidden_layers`` of them; layers that share weights (ALBERT)
            are the same module, listed once per layer.
        final_norm: the LayerNorm after the last layer, or ``None``.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        block = PreNormLayer if config.pre_norm else EncoderLayer
        sets = [block(config) for _ in range(config.weight_sets)]
        self.layers = nn.ModuleList(sets[config.weight_set(i)] for i in range(config.num_hidden_layers))
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if config.final_norm else None

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
        attentions_out: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
    ) -> EncoderOutput:
        """Encode a batch of token ids.

        Args:
            input_ids: ``(b, t)`` token ids, ``t`` at most ``max_position_embeddings`` (less RoBERTa's
                offset).
            token_type_ids: ``(b, t)`` segment ids (0 for sentence A, 1 for B); default all 0; ignored
                by a family without token types.
            attention_mask: ``(b, t)`` 1 for real tokens, 0 for padding; default no padding. A causal
                model masks later keys as well, whatever the scaling.
            scaling: score scaling for every layer (see :class:`Variant`); ``None`` is ``head_dim**-0.5``.
            head_mask: ``(L, h)`` or ``(b, L, h)``: 1 keeps a head, 0 zeroes its output before the
                output projection (Michel et al. 2019); ``None`` (default) keeps every head and
                reproduces transformers exactly.
            attentions_out: ``(L, b, h, t, t)``, the dtype of the weights: each layer's weights are copied
                into it as the layer finishes and the output's attentions are its slices, so the layers' own
                tensors are freed at once (one layer's weights alive, not all).
            key_mask: ``(L, h, t)`` or ``(b, L, h, t)`` bool, True where a key is removed for a layer's
                head (its score gets ``finfo(dtype).min``, as padding does, and each row is renormalised over
                the keys left); ``None`` (default) removes none.

        Returns:
            :class:`EncoderOutput` with every layer's hidden states and attention weights;
            ``last_hidden_state`` after the final LayerNorm when the family has one.
        """
        x = self.embeddings(input_ids, token_type_ids)  # (b, t, hidden)
        hidden_states, attentions = [x], []
        for index, layer in enumerate(self.layers):
            layer_mask = None if head_mask is None else head_mask[..., index, :]  # (h,) or (b, h)
            layer_keys = None if key_mask is None else key_mask[..., index, :, :]  # (h, t) or (b, h, t)
            x, weights = layer(x, attention_mask, scaling, layer_mask, layer_keys)  # (b, t, hidden), (b, h, t, t)
            if attentions_out is not None:
                weights = attentions_out[index].copy_(weights)
            hidden_states.append(x)
            attentions.append(weights)
        last = x if self.final_norm is None else self.final_norm(x)  # (b, t, hidden)
        return EncoderOutput(last, tuple(hidden_states), tuple(attentions))

    def attention_input(self, hidden_states: tuple[torch.Tensor, ...], layer: int) -> torch.Tensor:
        """What ``layer``'s query, key and value projections see: its input, after ``ln_1`` in a
        pre-LayerNorm block. ``hidden_states`` is :attr:`EncoderOutput.hidden_states`."""
        return self.layers[layer].attention_input(hidden_states[layer])


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


def load_weights(
    encoder: BertEncoder,
    state_dict: dict[str, torch.Tensor],
    checkpoint_name: Callable[[str], str],
    unused: re.Pattern,
    transposed: Callable[[str], bool] = lambda name: False,
    assign: bool = False,
) -> None:
    """Copy a checkpoint's state dict into ``encoder`` by a name mapping, checking every key and shape.

    Args:
        encoder: the from-scratch encoder to fill.
        state_dict: the transformers model's ``state_dict()``.
        checkpoint_name: our parameter name -> the checkpoint's (layers that share weights map to the
            same checkpoint name, and get the same tensor).
        unused: checkpoint entries the encoder does not need (a pooler, buffers); any other entry left
            over is an error.
        transposed: whether our parameter is the transpose of the checkpoint's (GPT-2's ``Conv1D``
            stores ``(in, out)``). It becomes a transposed view of the checkpoint's layout, so
            ``F.linear`` runs the very ``addmm`` that ``Conv1D`` runs.
        assign: make the checkpoint's tensors themselves the encoder's parameters
            (``load_state_dict(assign=True)``), as an encoder built on the ``meta`` device needs: where the
            dtype is the same they share the checkpoint's memory (a transposed one as a view), so the
            from-scratch encoder costs no second copy of the weights. Nothing
            in the package writes to a loaded model's weights. Otherwise copy into its existing parameters.

    Raises:
        WeightMismatchError: if a weight the encoder needs is missing or of another shape, or if the
            checkpoint has encoder weights that the encoder would silently ignore.
    """
    source = dict(state_dict)
    copied, by_key = {}, {}
    for name, target in encoder.state_dict().items():
        key = checkpoint_name(name)
        if key not in source:
            raise WeightMismatchError(f"checkpoint has no {key!r} (needed for {name!r})")
        if key not in by_key:
            tensor = source[key].detach()
            tensor = tensor.t() if transposed(name) else tensor
            if tensor.shape != target.shape:
                raise WeightMismatchError(f"{key!r} has shape {tuple(tensor.shape)}, expected {tuple(target.shape)}")
            # shared when assigned (a transposed view keeps its strides); cloned when copied in
            by_key[key] = tensor.to(target.dtype) if assign else tensor.to(target.dtype).clone()
        copied[name] = by_key[key]
    left = sorted(k for k in source if k not in by_key and not unused.match(k))
    if left:
        raise WeightMismatchError(f"checkpoint weights the encoder does not use: {left[:5]}")
    encoder.load_state_dict(copied, strict=True, assign=assign)
