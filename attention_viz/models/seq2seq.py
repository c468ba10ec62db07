"""A from-scratch encoder–decoder Transformer: T5 and BART, with encoder, decoder and cross-attention.

An encoder–decoder (Vaswani et al. 2017, §3.1) reads a *source* text with a bidirectional encoder and writes a
*target* text with a causal decoder; each decoder layer attends to its own earlier tokens (decoder
self-attention) and then to the encoder's output (cross-attention: target tokens are the queries, source
tokens the keys and values). One forward gives three sets of maps::

    encoder self-attention   (L_enc, h, s, s)   source token -> source token
    decoder self-attention   (L_dec, h, t, t)   target token -> itself and earlier target tokens
    cross-attention          (L_dec, h, t, s)   target token -> source token

Two families, as transformers' ``models/t5/modeling_t5.py`` and ``models/bart/modeling_bart.py`` compute them:

- **T5** (Raffel et al. 2020): no position embeddings; a learned bias per head and per *bucket* of the
  relative distance ``key - query`` is added to the scores (:func:`relative_position_bucket`:
  bidirectional buckets in the encoder, causal ones in the decoder, computed by the first layer and shared
  by all); scores are *not* scaled by ``d ** -0.5``; pre-norm blocks with T5's RMS-style LayerNorm (no mean,
  no bias); no biases anywhere; a ReLU or gated-GELU feed-forward; the encoder ends with a final norm.
- **BART** (Lewis et al. 2020): learned absolute positions whose table starts 2 rows in (position ``i`` is
  row ``i + 2``); a LayerNorm on the embeddings; post-norm blocks (``norm(x + sublayer(x))``, as BERT); scores
  scaled by ``d ** -0.5``; biases on every projection; a GELU feed-forward.

With the same weights the twin reproduces transformers' eager attention (float32) bit for bit: the same
kernels in the same order. One sequence pair at a time, without padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from attention_viz.models.attention import causal_mask, scaled_dot_product_attention
from attention_viz.models.decoder import RMSNorm
from attention_viz.models.encoder import WeightMismatchError, gelu_new

# The feed-forward's activation by the config's name (transformers' ACT2FN: ``relu`` is nn.ReLU, ``gelu``
# GELUActivation, ``gelu_new`` NewGELUActivation; each calls these functions).
ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_new": gelu_new}
FAMILIES = ("t5", "bart")


@dataclass(frozen=True)
class Seq2SeqConfig:
    """Sizes and settings of the encoder–decoder (T5's and BART's config fields under one set of names).

    Attributes:
        model_type: ``"t5"`` or ``"bart"``: which family's rules (positions, norms, scaling) apply.
        hidden_size: ``d_model``.
        encoder_layers, decoder_layers: ``L_enc`` and ``L_dec`` (T5: ``num_layers``, ``num_decoder_layers``).
        encoder_heads, decoder_heads: heads of the encoder's attention and of both decoder attentions
            (T5: ``num_heads`` for all).
        head_dim: ``d``: T5's ``d_kv``, set apart from ``d_model / h``; ``None`` (BART): ``d_model / h`` in each
            stack (its encoder and decoder may have different head counts, so different head sizes).
        encoder_ffn_size, decoder_ffn_size: the feed-forward's inner size (T5: ``d_ff`` for both).
        hidden_act: the feed-forward's activation (``relu``, ``gelu``, ``gelu_new``).
        gated_ffn: ``down(act(gate(x)) * up(x))`` instead of ``down(act(up(x)))`` (T5 v1.1, Flan-T5).
        norm_eps: epsilon of every norm (T5: ``layer_norm_epsilon``; BART: LayerNorm's 1e-5).
        relative_buckets, relative_max_distance: T5's ``relative_attention_num_buckets`` and
            ``relative_attention_max_distance``.
        max_positions: BART's ``max_position_embeddings`` (the position table has 2 more rows); 0 for T5.
        embedding_scale: BART's ``sqrt(d_model)`` when ``scale_embedding``, else 1.0.
        decoder_start_token_id: the token the decoder starts from (T5: ``<pad>``; BART: ``</s>``).
    """

    model_type: str
    vocab_size: int
    hidden_size: int
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    head_dim: int | None
    encoder_ffn_size: int
    decoder_ffn_size: int
    hidden_act: str
    gated_ffn: bool = False
    norm_eps: float = 1e-6
    relative_buckets: int = 32
    relative_max_distance: int = 128
    max_positions: int = 0
    embedding_scale: float = 1.0
    decoder_start_token_id: int = 0

    POSITION_OFFSET = 2  # BART's position table starts 2 rows in (fairseq's padding_idx + 1)

    def __post_init__(self) -> None:
        if self.model_type not in FAMILIES:
            raise WeightMismatchError(f"model_type {self.model_type!r} is not an encoder–decoder family here")
        if self.hidden_act not in ACTIVATIONS:
            raise WeightMismatchError(
                f"the activation {self.hidden_act!r} is not supported: choose one of {', '.join(ACTIVATIONS)}"
            )

    @property
    def t5(self) -> bool:
        return self.model_type == "t5"

    def head_size(self, heads: int) -> int:
        """``d`` of an attention with ``heads`` heads: T5's ``d_kv``, or ``d_model / heads``."""
        return self.head_dim or self.hidden_size // heads

    def scaling(self, heads: int) -> float:
        """The factor raw scores are multiplied by: 1.0 in T5 (its init folds ``d ** -0.5`` into the query
        weights), ``d ** -0.5`` in BART."""
        return 1.0 if self.t5 else self.head_size(heads) ** -0.5


def relative_position_bucket(
    relative_position: torch.Tensor, bidirectional: bool, num_buckets: int = 32, max_distance: int = 128
) -> torch.Tensor:
    """T5's bucket of each relative distance ``key - query`` (Raffel et al. 2020, §2.1; Mesh TensorFlow's
    ``_relative_position_bucket``, as transformers computes it, operation for operation).

    Near distances get a bucket each; farther ones share logarithmically wider buckets up to
    ``max_distance``, beyond which all fall in the last. Bidirectional (the encoder): half the buckets for
    keys before the query, half for keys after it. Causal (the decoder): keys after the query all share
    bucket 0 with the query itself (they are masked anyway); the buckets count back from the query.

    Args:
        relative_position: int64 ``(t, s)`` (or any shape), ``key position - query position``.
        bidirectional: encoder (True) or decoder (False) buckets.
        num_buckets, max_distance: the config's ``relative_attention_num_buckets``,
            ``relative_attention_max_distance``.

    Returns:
        int64 tensor of the same shape, each in ``[0, num_buckets)``.
    """
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).to(torch.long) * num_buckets  # keys after the query
        distance = torch.abs(relative_position)
    else:
        distance = -torch.min(relative_position, torch.zeros_like(relative_position))  # keys before: 0, 1, ...
    max_exact = num_buckets // 2  # distances 0 .. max_exact - 1: one bucket each
    is_small = distance < max_exact
    log_ratio = torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact)
    if_large = max_exact + (log_ratio * (num_buckets - max_exact)).to(torch.long)
    if_large = torch.min(if_large, torch.full_like(if_large, num_buckets - 1))
    return buckets + torch.where(is_small, distance, if_large)


def relative_position_bias(
    table: nn.Embedding, queries: int, keys: int, bidirectional: bool, config: Seq2SeqConfig
) -> torch.Tensor:
    """T5's position bias ``(1, h, t, s)``: ``table[bucket(key - query)]`` for every query and key, per head.

    Args:
        table: ``(num_buckets, h)``, one learned scalar per bucket and head (``relative_attention_bias``).
        queries, keys: ``t`` and ``s``.
        bidirectional: encoder (True) or decoder (False) buckets.
    """
    device = table.weight.device
    query_position = torch.arange(queries, dtype=torch.long, device=device)[:, None]  # (t, 1)
    key_position = torch.arange(keys, dtype=torch.long, device=device)[None, :]  # (1, s)
    bucket = relative_position_bucket(
        key_position - query_position, bidirectional, config.relative_buckets, config.relative_max_distance
    )  # (t, s)
    return table(bucket).permute([2, 0, 1]).unsqueeze(0)  # (t, s, h) -> (1, h, t, s)


class Attention(nn.Module):
    """Multi-head attention of an encoder–decoder: self-attention, or cross-attention from ``x`` to ``memory``.

    ``query``, ``key``, ``value`` and ``output`` are T5's ``q``, ``k``, ``v``, ``o`` (no biases) or BART's
    ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``. Nothing is stored during ``forward``.
    """

    def __init__(self, config: Seq2SeqConfig, heads: int) -> None:
        super().__init__()
        self.num_heads, self.head_dim, self.scaling = heads, config.head_size(heads), config.scaling(heads)
        inner, bias = heads * self.head_dim, not config.t5
        self.query = nn.Linear(config.hidden_size, inner, bias=bias)
        self.key = nn.Linear(config.hidden_size, inner, bias=bias)
        self.value = nn.Linear(config.hidden_size, inner, bias=bias)
        self.output = nn.Linear(inner, config.hidden_size, bias=bias)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, -1, self.head_dim).transpose(1, 2)  # (b, h, n, d)

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from each position of ``x`` ``(b, t, hidden)`` to ``memory`` ``(b, s, hidden)`` (cross-attention)
        or to ``x`` itself (``memory`` None: ``s = t``).

        Args:
            mask: added to the scores, broadcastable to ``(b, h, t, s)``: T5's position bias, a causal mask,
                or their sum. On every key a query sees, the causal mask is 0, so ``bias + mask`` there is the
                bias exactly, and the scores are transformers' ``(scores + bias) + mask`` bit for bit.

        Returns:
            ``(output (b, t, hidden), weights (b, h, t, s))``, each row of weights summing to 1.
        """
        memory = x if memory is None else memory
        q, k, v = self._split(self.query(x)), self._split(self.key(memory)), self._split(self.value(memory))
        context, weights = scaled_dot_product_attention(q, k, v, mask, self.scaling)  # (b, h, t, d), (b, h, t, s)
        b, h, t, d = context.shape
        return self.output(context.transpose(1, 2).reshape(b, t, h * d)), weights


class FeedForward(nn.Module):
    """``down(act(up(x)))`` (T5's ``wi``/``wo``, BART's ``fc1``/``fc2``), or gated: ``down(act(gate(x)) * up(x))``
    (T5 v1.1's ``wi_0``/``wi_1``/``wo``)."""

    def __init__(self, config: Seq2SeqConfig, inner: int) -> None:
        super().__init__()
        bias = not config.t5
        self.up = nn.Linear(config.hidden_size, inner, bias=bias)
        if config.gated_ffn:
            self.gate = nn.Linear(config.hidden_size, inner, bias=bias)
        self.down = nn.Linear(inner, config.hidden_size, bias=bias)
        self.activation = ACTIVATIONS[config.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "gate"):
            return self.down(self.activation(self.gate(x)) * self.up(x))  # (b, n, hidden)
        return self.down(self.activation(self.up(x)))  # (b, n, hidden)


def _norm(config: Seq2SeqConfig) -> nn.Module:
    """T5's LayerNorm is an RMSNorm (``x / sqrt(mean(x²) + eps) * weight``, no mean, no bias); BART's is
    ``nn.LayerNorm``."""
    if config.t5:
        return RMSNorm(config.hidden_size, config.norm_eps)
    return nn.LayerNorm(config.hidden_size, eps=config.norm_eps)


class Seq2SeqLayer(nn.Module):
    """One encoder layer (self-attention, feed-forward) or decoder layer (causal self-attention,
    cross-attention, feed-forward). Each sublayer is wrapped pre-norm in T5, ``x + f(norm(x))``, and post-norm
    in BART, ``norm(x + f(x))``."""

    def __init__(self, config: Seq2SeqConfig, decoder: bool) -> None:
        super().__init__()
        self.pre_norm = config.t5
        heads = config.decoder_heads if decoder else config.encoder_heads
        self.self_attention = Attention(config, heads)
        self.self_attention_norm = _norm(config)
        if decoder:
            self.cross_attention = Attention(config, heads)
            self.cross_attention_norm = _norm(config)
        self.feed_forward = FeedForward(config, config.decoder_ffn_size if decoder else config.encoder_ffn_size)
        self.feed_forward_norm = _norm(config)

    def _sublayer(self, x: torch.Tensor, norm: nn.Module, f) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x`` through one residual sublayer ``f`` (returning ``(output, weights or None)``), pre- or post-norm."""
        if self.pre_norm:
            out, weights = f(norm(x))
            return x + out, weights
        out, weights = f(x)
        return norm(x + out), weights

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, memory: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(x (b, n, hidden), self-attention weights (b, h, n, n), cross-attention weights (b, h, n, s) or
        None)`` for the layer's input ``x``; ``mask`` is added to the self-attention scores; ``memory``
        ``(b, s, hidden)`` is the encoder's output (a decoder layer)."""
        x, self_weights = self._sublayer(x, self.self_attention_norm, lambda y: self.self_attention(y, None, mask))
        cross_weights = None
        if hasattr(self, "cross_attention"):
            x, cross_weights = self._sublayer(x, self.cross_attention_norm, lambda y: self.cross_attention(y, memory))
        x, _ = self._sublayer(x, self.feed_forward_norm, lambda y: (self.feed_forward(y), None))
        return x, self_weights, cross_weights


@dataclass(frozen=True)
class Seq2SeqOutput:
    """What one forward of :class:`Seq2SeqTransformer` gives.

    Attributes:
        encoder_attentions: ``L_enc`` tensors ``(b, h, s, s)``.
        decoder_attentions: ``L_dec`` tensors ``(b, h, t, t)``, 0 above the diagonal.
        cross_attentions: ``L_dec`` tensors ``(b, h, t, s)``: target queries, source keys.
        encoder_last_hidden_state: ``(b, s, hidden)``, what every cross-attention reads.
        last_hidden_state: the decoder's ``(b, t, hidden)`` (after T5's final norm).
    """

    encoder_attentions: tuple[torch.Tensor, ...]
    decoder_attentions: tuple[torch.Tensor, ...]
    cross_attentions: tuple[torch.Tensor, ...]
    encoder_last_hidden_state: torch.Tensor
    last_hidden_state: torch.Tensor


class Seq2SeqTransformer(nn.Module):
    """The encoder and decoder stacks of T5 or BART, written from scratch (no LM head).

    Build it with :func:`attention_viz.models.seq2seq_families.twin_from_pretrained`, which copies a
    transformers checkpoint's weights into it.

    Attributes:
        embeddings: the token embeddings both stacks share (transformers' ``shared``).
        encoder_layers, decoder_layers: one :class:`Seq2SeqLayer` per layer.
        encoder_position_bias, decoder_position_bias: T5's ``(num_buckets, h)`` tables (first layer's).
        encoder_positions, decoder_positions: BART's learned position tables ``(max_positions + 2, hidden)``.
        encoder_embedding_norm, decoder_embedding_norm: BART's ``layernorm_embedding``.
        encoder_final_norm, decoder_final_norm: T5's ``final_layer_norm`` of each stack.
    """

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.encoder_layers = nn.ModuleList(Seq2SeqLayer(config, False) for _ in range(config.encoder_layers))
        self.decoder_layers = nn.ModuleList(Seq2SeqLayer(config, True) for _ in range(config.decoder_layers))
        if config.t5:
            self.encoder_position_bias = nn.Embedding(config.relative_buckets, config.encoder_heads)
            self.decoder_position_bias = nn.Embedding(config.relative_buckets, config.decoder_heads)
            self.encoder_final_norm = _norm(config)
            self.decoder_final_norm = _norm(config)
        else:
            rows = config.max_positions + config.POSITION_OFFSET
            self.encoder_positions = nn.Embedding(rows, config.hidden_size)
            self.decoder_positions = nn.Embedding(rows, config.hidden_size)
            self.encoder_embedding_norm = _norm(config)
            self.decoder_embedding_norm = _norm(config)

    def embed(self, input_ids: torch.Tensor, decoder: bool) -> torch.Tensor:
        """``(b, n)`` ids -> ``(b, n, hidden)``: T5's token embeddings alone (positions enter as the bias);
        BART's scaled token embeddings plus position ``i``'s row ``i + 2``, then LayerNorm."""
        x = self.embeddings(input_ids)  # (b, n, hidden)
        if self.config.t5:
            return x
        x = x * self.config.embedding_scale  # BartScaledWordEmbedding (1.0 unless scale_embedding)
        table = self.decoder_positions if decoder else self.encoder_positions
        n = input_ids.shape[1]
        if n > self.config.max_positions:
            raise ValueError(f"{n} tokens, more than the {self.config.max_positions} positions of the model")
        positions = torch.arange(n, dtype=torch.long, device=input_ids.device)[None]  # (1, n)
        x = x + table(positions + self.config.POSITION_OFFSET)  # (b, n, hidden)
        norm = self.decoder_embedding_norm if decoder else self.encoder_embedding_norm
        return norm(x)

    def encode(self, source_ids: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """The encoder on ``source_ids`` ``(b, s)``: ``(memory (b, s, hidden), L_enc weights (b, h, s, s))``."""
        x = self.embed(source_ids, decoder=False)  # (b, s, hidden)
        s = source_ids.shape[1]
        mask = None  # bidirectional, no padding: every source token sees every source token
        if self.config.t5:  # computed once, by the first layer's table, and added in every layer
            mask = relative_position_bias(self.encoder_position_bias, s, s, True, self.config)  # (1, h, s, s)
        attentions = []
        for layer in self.encoder_layers:
            x, weights, _ = layer(x, mask)  # (b, s, hidden), (b, h, s, s)
            attentions.append(weights)
        if self.config.t5:
            x = self.encoder_final_norm(x)
        return x, tuple(attentions)

    def forward(self, source_ids: torch.Tensor, target_ids: torch.Tensor) -> Seq2SeqOutput:
        """Run the encoder on the source and the decoder on the target (teacher forcing: every target token at
        once, each seeing only itself and earlier ones).

        Args:
            source_ids: ``(b, s)`` token ids of the source text (with the tokenizer's ``</s>``).
            target_ids: ``(b, t)`` the decoder's input ids, starting with ``decoder_start_token_id``.

        Returns:
            :class:`Seq2SeqOutput`.

        Raises:
            ValueError: a BART input longer than its position table.
        """
        memory, encoder_attentions = self.encode(source_ids)  # (b, s, hidden)
        x = self.embed(target_ids, decoder=True)  # (b, t, hidden)
        t = target_ids.shape[1]
        mask = causal_mask(t, x.dtype).to(x.device)  # (1, 1, t, t): 0 where j <= i, finfo.min above
        if self.config.t5:  # causal buckets, computed once and shared by every layer
            mask = relative_position_bias(self.decoder_position_bias, t, t, False, self.config) + mask  # (1, h, t, t)
        decoder_attentions, cross_attentions = [], []
        for layer in self.decoder_layers:
            x, self_weights, cross_weights = layer(x, mask, memory)  # (b, t, hidden), (b, h, t, t), (b, h, t, s)
            decoder_attentions.append(self_weights)
            cross_attentions.append(cross_weights)
        if self.config.t5:
            x = self.decoder_final_norm(x)
        return Seq2SeqOutput(encoder_attentions, tuple(decoder_attentions), tuple(cross_attentions), memory, x)
