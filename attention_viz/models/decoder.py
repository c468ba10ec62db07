"""A from-scratch Llama-style decoder: rotary positions, grouped-query attention, RMSNorm, a gated MLP.

Follows Touvron et al. 2023 (Llama) and transformers' ``models/llama/modeling_llama.py``, with the options
the other Llama-style families need (see :mod:`attention_viz.models.families`): a bias on the query, key
and value projections (Qwen2), an RMSNorm on each head's query and key (Qwen3), sliding-window attention
(Mistral), and Gemma 2's scaled embeddings, extra norms around attention and MLP, ``query_pre_attn_scalar``
and attention-logit soft-capping on alternating local and global layers. The pieces, in a block::

    x = x + attention(norm(x))        # causal; q and k rotated by position (RoPE, Su et al. 2021)
    x = x + down(act(gate(norm(x))) * up(norm(x)))   # SwiGLU (Shazeer 2020)

Grouped-query attention (Ainslie et al. 2023): ``h`` query heads share ``h_kv`` key/value heads, each
key/value head serving ``h / h_kv`` query heads in a row; the weights are per query head, ``(b, h, t, s)``.
With the same weights it reproduces transformers' eager attention (float32): the same kernels run in the
same order, so the same bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from attention_viz.models.attention import causal_mask, scaled_dot_product_attention
from attention_viz.models.encoder import EncoderOutput, WeightMismatchError


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


# The gate's activation by the config's name (transformers' ACT2FN: ``silu`` is SiLUActivation,
# ``gelu_pytorch_tanh`` GELUTanh; both call these functions).
ACTIVATIONS = {"silu": F.silu, "gelu_pytorch_tanh": _gelu_tanh, "gelu": F.gelu}
FULL, SLIDING = "full_attention", "sliding_attention"
ROPE_TYPES = ("default", "linear", "llama3")


@dataclass(frozen=True)
class DecoderConfig:
    """Sizes and settings of the decoder (names as in transformers' ``LlamaConfig``).

    Attributes:
        num_key_value_heads: ``h_kv`` key/value heads (grouped-query attention); ``num_attention_heads``
            is a multiple of it. Equal to it: ordinary multi-head attention.
        head_dim: ``d``, the size of each head (Qwen3 and Gemma 2 set it apart from ``hidden_size / h``).
        rms_norm_eps: the epsilon added to the mean square in every RMSNorm.
        hidden_act: the gate's activation (``silu`` for Llama's SwiGLU, ``gelu_pytorch_tanh`` for Gemma 2).
        rope_theta: RoPE's base wavelength (10000 in Su et al. 2021; 500000 in Llama 3).
        rope_type: ``default``, ``linear`` (every frequency divided by ``rope_factor``) or ``llama3`` (low
            frequencies divided by ``rope_factor``, high ones kept, a smooth ramp between; Llama 3.1).
        rope_factor, rope_low_freq_factor, rope_high_freq_factor, rope_original_max_positions: the scaling's
            parameters (transformers' ``rope_parameters``: ``factor``, ``low_freq_factor``,
            ``high_freq_factor``, ``original_max_position_embeddings``).
        qkv_bias: a bias on the query, key and value projections (Qwen2; Llama's ``attention_bias``).
        output_bias: a bias on the attention's output projection (Llama's ``attention_bias``).
        mlp_bias: a bias on the MLP's three projections (Llama's ``mlp_bias``).
        qk_norm: an RMSNorm over each head's query and key before the rotation (Qwen3).
        layer_types: each layer's ``full_attention`` or ``sliding_attention``; empty: all full.
        sliding_window: how many keys (itself included) a query of a sliding layer sees.
        query_pre_attn_scalar: scores are scaled by its ``** -0.5`` instead of ``head_dim ** -0.5`` (Gemma 2).
        attn_logit_softcapping: scores become ``c * tanh(scores / c)`` before the mask (Gemma 2).
        embedding_scale: the token embeddings are multiplied by it (Gemma 2: ``sqrt(hidden_size)``).
        sandwich_norms: an RMSNorm after the attention and after the MLP as well as before (Gemma 2).
        unit_offset_norms: RMSNorm multiplies by ``1 + weight``, computed in float32 (Gemma 2).
    """

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    hidden_act: str = "silu"
    attention_probs_dropout_prob: float = 0.0
    initializer_range: float = 0.02
    rope_theta: float = 10000.0
    rope_type: str = "default"
    rope_factor: float = 1.0
    rope_low_freq_factor: float = 1.0
    rope_high_freq_factor: float = 4.0
    rope_original_max_positions: int = 8192
    qkv_bias: bool = False
    output_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    query_pre_attn_scalar: float | None = None
    attn_logit_softcapping: float | None = None
    embedding_scale: float | None = None
    sandwich_norms: bool = False
    unit_offset_norms: bool = False

    def __post_init__(self) -> None:
        if self.hidden_act not in ACTIVATIONS:
            raise WeightMismatchError(
                f"hidden_act {self.hidden_act!r} is not supported: choose one of {', '.join(ACTIVATIONS)}"
            )
        if self.rope_type not in ROPE_TYPES:
            raise WeightMismatchError(
                f"rope_type {self.rope_type!r} is not supported: choose one of {', '.join(ROPE_TYPES)}"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise WeightMismatchError(
                f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads {self.num_key_value_heads}"
            )
        if self.layer_types and len(self.layer_types) != self.num_hidden_layers:
            raise WeightMismatchError(f"layer_types names {len(self.layer_types)} layers, not {self.num_hidden_layers}")
        unknown = set(self.layer_types) - {FULL, SLIDING}
        if unknown:
            raise WeightMismatchError(f"layer types {sorted(unknown)} are not supported")
        if SLIDING in self.layer_types and not self.sliding_window:
            raise WeightMismatchError("sliding_attention layers need a sliding_window")

    # What the rest of the package reads of any from-scratch model's config (see EncoderConfig).
    type_vocab_size = 0  # no token types
    causal = True
    layer_groups = None  # every layer its own weights

    @property
    def groups(self) -> int:
        """Query heads per key/value head (``h / h_kv``; 1 without grouped-query attention)."""
        return self.num_attention_heads // self.num_key_value_heads

    def window(self, layer: int) -> int | None:
        """The sliding window of ``layer`` (from 0), or ``None`` where it sees every earlier key."""
        return self.sliding_window if self.layer_types and self.layer_types[layer] == SLIDING else None

    @property
    def scaling(self) -> float:
        """The factor raw scores are multiplied by: ``head_dim ** -0.5``; Gemma 2: ``query_pre_attn_scalar ** -0.5``."""
        return (self.query_pre_attn_scalar or self.head_dim) ** -0.5


def rope_frequencies(config: DecoderConfig) -> torch.Tensor:
    """RoPE's inverse frequencies ``θ_i = theta ** (-2i / d)``, ``(d/2,)`` float32, scaled as the config says.

    As transformers' ``compute_default_rope_parameters``, ``_compute_linear_scaling_rope_parameters`` and
    ``_compute_llama3_parameters`` (``modeling_rope_utils.py``) compute them, operation for operation.
    """
    d = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))  # (d/2,)
    if config.rope_type == "linear":  # positions divided by the factor (Chen et al. 2023)
        return inv_freq / config.rope_factor
    if config.rope_type == "llama3":
        factor, low, high = config.rope_factor, config.rope_low_freq_factor, config.rope_high_freq_factor
        old_context = config.rope_original_max_positions
        low_freq_wavelen, high_freq_wavelen = old_context / low, old_context / high
        wavelen = 2 * math.pi / inv_freq  # (d/2,)
        scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)  # long waves slowed
        smooth = (old_context / wavelen - low) / (high - low)  # (d/2,): 0 at the low end, 1 at the high end
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(medium, smoothed, scaled)
    return inv_freq


def rotary_angles(config: DecoderConfig, num_tokens: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)`` of each position's rotation angles, each ``(1, t, d)``: position ``p`` turns the pair
    of dimensions ``(i, i + d/2)`` by the angle ``p · θ_i`` (transformers' ``LlamaRotaryEmbedding``)."""
    positions = torch.arange(num_tokens, device=device)[None]  # (1, t)
    freqs = positions[..., None].float() * rope_frequencies(config).to(device)  # (1, t, d/2)
    angles = torch.cat((freqs, freqs), dim=-1)  # (1, t, d)
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``(..., d)`` -> ``(..., d)``: ``[x1, x2]`` -> ``[-x2, x1]``, the halves of the last axis swapped and
    the new first half negated: a quarter turn of each pair ``(x[i], x[i + d/2])``."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]  # (..., d/2) each
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate queries or keys ``(b, h, t, d)`` by their positions' angles ``cos``, ``sin`` ``(1, t, d)``:
    each pair ``(x[i], x[i + d/2])`` turns by ``p · θ_i``. A query at ``p`` and a key at ``p'`` then have a
    dot product that depends on their content and on ``p - p'`` only (Su et al. 2021, eq. 14)."""
    cos, sin = cos[:, None], sin[:, None]  # (1, 1, t, d): the same angles for every head
    return (x * cos) + (rotate_half(x) * sin)  # (b, h, t, d)


def repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    """Grouped-query attention: each key or value head ``(b, h_kv, s, d)`` repeated for the ``groups`` query
    heads it serves, in a row: ``(b, h_kv * groups, s, d)``, query head ``i`` reading key/value head
    ``i // groups`` (transformers' ``repeat_kv``; ``torch.repeat_interleave`` along heads)."""
    if groups == 1:
        return x
    b, h_kv, s, d = x.shape
    return x[:, :, None].expand(b, h_kv, groups, s, d).reshape(b, h_kv * groups, s, d)  # (b, h, s, d)


class RMSNorm(nn.Module):
    """Root-mean-square normalisation (Zhang & Sennrich 2019): ``x / sqrt(mean(x²) + eps) * weight``, in
    float32; no mean subtracted, no bias. ``unit_offset`` (Gemma): ``* (1 + weight)``, weight from 0."""

    def __init__(self, size: int, eps: float, unit_offset: bool = False) -> None:
        super().__init__()
        self.eps, self.unit_offset = eps, unit_offset
        self.weight = nn.Parameter(torch.zeros(size) if unit_offset else torch.ones(size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()  # (..., size)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)  # (..., size)
        if self.unit_offset:
            return (normed * (1.0 + self.weight.float())).type_as(x)
        return self.weight * normed.to(x.dtype)


class GroupedQueryAttention(nn.Module):
    """Causal self-attention with rotary positions and ``h_kv`` key/value heads shared by ``h`` query heads.

    ``query``, ``key``, ``value`` and ``output`` are transformers' ``q_proj``, ``k_proj``, ``v_proj`` and
    ``o_proj``; ``query_norm``/``key_norm`` Qwen3's ``q_norm``/``k_norm``. Nothing is stored during
    ``forward``.

    Args:
        config: the decoder's config.
        layer: this layer's index (its sliding window, if any).
    """

    def __init__(self, config: DecoderConfig, layer: int) -> None:
        super().__init__()
        self.config = config
        self.num_heads, self.num_key_value_heads, self.head_dim = (
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
        )
        self.window, self.causal, self.dropout = config.window(layer), True, config.attention_probs_dropout_prob
        self.scaling, self.softcap = config.scaling, config.attn_logit_softcapping  # the model's own score rules
        inner, kv_inner = self.num_heads * self.head_dim, self.num_key_value_heads * self.head_dim
        self.query = nn.Linear(config.hidden_size, inner, bias=config.qkv_bias)
        self.key = nn.Linear(config.hidden_size, kv_inner, bias=config.qkv_bias)
        self.value = nn.Linear(config.hidden_size, kv_inner, bias=config.qkv_bias)
        self.output = nn.Linear(inner, config.hidden_size, bias=config.output_bias)
        if config.qk_norm:
            self.query_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
            self.key_norm = RMSNorm(self.head_dim, config.rms_norm_eps)

    def unrotated(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The projections of ``x`` ``(b, t, hidden)`` split into heads, before any rotation: queries
        ``(b, h, t, d)``, keys and values ``(b, h_kv, t, d)`` (Qwen3's norms applied to queries and keys)."""
        b, t, _ = x.shape
        q = self.query(x).view(b, t, -1, self.head_dim)  # (b, t, h, d)
        k = self.key(x).view(b, t, -1, self.head_dim)  # (b, t, h_kv, d)
        v = self.value(x).view(b, t, -1, self.head_dim).transpose(1, 2)  # (b, h_kv, t, d)
        if self.config.qk_norm:  # over each head's d numbers
            q, k = self.query_norm(q), self.key_norm(k)
        return q.transpose(1, 2), k.transpose(1, 2), v  # (b, h, t, d), (b, h_kv, t, d), (b, h_kv, t, d)

    def head_vectors(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every query head's query, key and value vectors for ``x`` ``(b, t, hidden)``: 3 × ``(b, h, t, d)``.

        Queries and keys are rotated by position (after Qwen3's norms); each key/value head is repeated for
        the query heads of its group, so heads ``g * groups .. (g + 1) * groups - 1`` share the same keys
        and values.
        """
        q, k, v = self.unrotated(x)  # (b, h, t, d), (b, h_kv, t, d), (b, h_kv, t, d)
        cos, sin = rotary_angles(self.config, x.shape[1], x.device)  # (1, t, d) each
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        groups = self.config.groups
        return q, repeat_kv(k, groups), repeat_kv(v, groups)  # 3 × (b, h, t, d)

    def mask(self, num_tokens: int, dtype: torch.dtype, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """The additive causal mask of this layer ``(1 or b, 1, t, t)``: padding, and its sliding window."""
        padded = attention_mask is not None and not bool(attention_mask.all())
        return causal_mask(num_tokens, dtype, attention_mask if padded else None, self.window)

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor,
        scaling: float | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(context (b, h, t, d), weights (b, h, t, s))`` from :meth:`head_vectors`' output and a mask;
        ``scaling`` ``None`` is the model's own (:attr:`DecoderConfig.scaling`)."""
        scaling = self.scaling if scaling is None else scaling
        p = self.dropout if self.training else 0.0
        return scaled_dot_product_attention(q, k, v, mask, scaling, p, self.softcap)

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        scaling: float | None = None,
        head_mask: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from every position of ``x`` ``(b, t, hidden)`` to itself and earlier positions.

        Args, returns: as :meth:`attention_viz.models.attention.MultiHeadSelfAttention.forward`; weights
        ``(b, h, t, t)``, one map per query head.
        """
        q, k, v = self.head_vectors(x)  # 3 × (b, h, t, d)
        t = x.shape[1]
        mask = self.mask(t, q.dtype, attention_mask)  # (1 or b, 1, t, t)
        if key_mask is not None:
            removed = key_mask.to(torch.bool).reshape(-1, self.num_heads, 1, t)  # (1 or b, h, 1, s)
            mask = torch.where(removed, torch.finfo(q.dtype).min, mask)  # (1 or b, h, t, s)
        context, weights = self.attend(q, k, v, mask, scaling)  # (b, h, t, d), (b, h, t, s)
        if head_mask is not None:
            context = context * head_mask.to(context.dtype).reshape(-1, self.num_heads, 1, 1)
        b, h, _, d = context.shape
        merged = context.transpose(1, 2).reshape(b, t, h * d)  # (b, t, h*d)
        return self.output(merged), weights


class DecoderLayer(nn.Module):
    """One pre-norm block: ``x + attention(norm(x))``, then ``x + mlp(norm(x))``; Gemma 2 norms each
    branch's output as well (``post_attention_norm``, ``post_feed_forward_norm``)."""

    def __init__(self, config: DecoderConfig, layer: int) -> None:
        super().__init__()
        hidden, eps, offset = config.hidden_size, config.rms_norm_eps, config.unit_offset_norms
        self.attention_norm = RMSNorm(hidden, eps, offset)
        self.attention = GroupedQueryAttention(config, layer)
        self.feed_forward_norm = RMSNorm(hidden, eps, offset)
        self.gate = nn.Linear(hidden, config.intermediate_size, bias=config.mlp_bias)
        self.up = nn.Linear(hidden, config.intermediate_size, bias=config.mlp_bias)
        self.down = nn.Linear(config.intermediate_size, hidden, bias=config.mlp_bias)
        self.activation = ACTIVATIONS[config.hidden_act]
        if config.sandwich_norms:
            self.post_attention_norm = RMSNorm(hidden, eps, offset)
            self.post_feed_forward_norm = RMSNorm(hidden, eps, offset)

    def attention_input(self, x: torch.Tensor) -> torch.Tensor:
        """What the attention's projections see of the block's input ``x``: ``attention_norm(x)``."""
        return self.attention_norm(x)

    def after_attention(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The block's output from its input ``x`` and the attention's output, both ``(b, t, hidden)``."""
        if hasattr(self, "post_attention_norm"):
            attended = self.post_attention_norm(attended)
        x = x + attended  # (b, t, hidden)
        h = self.feed_forward_norm(x)
        h = self.down(self.activation(self.gate(h)) * self.up(h))  # (b, t, hidden): SwiGLU / GeGLU
        if hasattr(self, "post_feed_forward_norm"):
            h = self.post_feed_forward_norm(h)
        return x + h

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
        """The block on unpadded ``x`` ``(g, n, hidden)`` with each of its ``h`` query heads switched off in
        turn: ``(h * g, n, hidden)``, copy ``k * g + i`` being text ``i`` without head ``k`` (as
        :meth:`attention_viz.models.encoder.EncoderLayer.without_each_head`)."""
        attention, (g, n, _) = self.attention, x.shape
        h = attention.num_heads
        off = 1 - torch.eye(h, dtype=x.dtype, device=x.device).repeat_interleave(g, dim=0)  # (h * g, h)
        q, k, v = attention.head_vectors(self.attention_input(x))  # 3 × (g, h, n, d)
        context, _ = attention.attend(q, k, v, attention.mask(n, q.dtype, None))  # (g, h, n, d)
        context = context.repeat(h, 1, 1, 1) * off[:, :, None, None]  # (h * g, h, n, d)
        merged = context.transpose(1, 2).reshape(h * g, n, -1)  # (h * g, n, h * d)
        return self.after_attention(x.repeat(h, 1, 1), attention.output(merged))  # (h * g, n, hidden)


class Decoder(nn.Module):
    """The token embeddings and block stack of a Llama-style decoder, written from scratch (no LM head).

    Called as :class:`~attention_viz.models.encoder.BertEncoder` is (token types are ignored) and returning
    the same :class:`~attention_viz.models.encoder.EncoderOutput`, so every page and analysis runs on it.
    Build it with :func:`attention_viz.models.families.encoder_from_pretrained`, or :meth:`random`.

    Attributes:
        layers: one :class:`DecoderLayer` per layer.
        final_norm: the RMSNorm after the last layer (transformers' ``norm``).
    """

    def __init__(self, config: DecoderConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.final_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, config.unit_offset_norms)

    @classmethod
    def random(cls, config: DecoderConfig, seed: int) -> Decoder:
        """An untrained decoder, initialised as transformers' ``_init_weights`` does (normal, std
        ``initializer_range``; zero biases; RMSNorm weights 1, or 0 with a unit offset), from ``seed``."""
        decoder = cls(config)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for module in decoder.modules():
                if isinstance(module, nn.Linear | nn.Embedding):
                    nn.init.normal_(module.weight, 0.0, config.initializer_range, generator=generator)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    nn.init.zeros_(module.bias)
                elif isinstance(module, RMSNorm):
                    nn.init.constant_(module.weight, 0.0 if module.unit_offset else 1.0)
        return decoder.eval()

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``(b, t)`` ids -> ``(b, t, hidden)``; multiplied by Gemma 2's ``sqrt(hidden_size)``. No position
        embedding: positions enter as the rotation of queries and keys in every layer."""
        x = self.embeddings(input_ids)  # (b, t, hidden)
        if self.config.embedding_scale is not None:
            x = x * torch.tensor(self.config.embedding_scale, dtype=x.dtype)
        return x

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
        """Run the decoder on a batch of token ids.

        Args:
            input_ids: ``(b, t)`` token ids; position ``i`` is the ``i``-th token (as transformers counts it
                when no ``position_ids`` are given, padding included).
            token_type_ids: ignored (no token types).
            attention_mask, scaling, head_mask, attentions_out, key_mask: as for
                :meth:`~attention_viz.models.encoder.BertEncoder.forward`; ``scaling`` ``None`` is the
                model's own (:attr:`DecoderConfig.scaling`); the causal mask and any sliding window stay.

        Returns:
            :class:`~attention_viz.models.encoder.EncoderOutput`: ``L + 1`` hidden states (the scaled
            embeddings, then each block's output), ``L`` attention maps ``(b, h, t, t)`` per query head,
            ``last_hidden_state`` after the final RMSNorm.
        """
        x = self.embed(input_ids)  # (b, t, hidden)
        hidden_states, attentions = [x], []
        for index, layer in enumerate(self.layers):
            layer_mask = None if head_mask is None else head_mask[..., index, :]  # (h,) or (b, h)
            layer_keys = None if key_mask is None else key_mask[..., index, :, :]  # (h, t) or (b, h, t)
            x, weights = layer(x, attention_mask, scaling, layer_mask, layer_keys)  # (b, t, hidden), (b, h, t, t)
            if attentions_out is not None:
                weights = attentions_out[index].copy_(weights)
            hidden_states.append(x)
            attentions.append(weights)
        return EncoderOutput(self.final_norm(x), tuple(hidden_states), tuple(attentions))

    def attention_input(self, hidden_states: tuple[torch.Tensor, ...], layer: int) -> torch.Tensor:
        """What ``layer``'s query, key and value projections see: its input after ``attention_norm``."""
        return self.layers[layer].attention_input(hidden_states[layer])
