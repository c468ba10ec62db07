"""Scaled dot-product attention and a correct multi-head self-attention layer, in plain torch.

Shape vocabulary, here and everywhere in the package: ``b`` batch, ``h`` heads, ``t`` query positions,
``s`` key positions, ``d`` head_dim, ``L`` layers. Attention weights are ``(b, h, t, s)``: one row per
query, a softmax distribution over keys.

Follows Vaswani et al. 2017 ("Attention Is All You Need", eq. 1) and transformers'
``eager_attention_forward`` / ``BertSelfAttention`` (``models/bert/modeling_bert.py``).
"""

from __future__ import annotations

import torch
from torch import nn


def key_padding_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Turn a ``(b, s)`` padding mask into an additive key mask.

    Args:
        attention_mask: ``(b, s)``, 1 (or True) for real tokens and 0 for padding, as tokenizers return.
        dtype: dtype of the attention scores the mask is added to.

    Returns:
        ``(b, 1, 1, s)`` tensor: 0 on real keys and ``torch.finfo(dtype).min`` on padded keys, so it
        broadcasts over heads and queries and masks keys only.

    Raises:
        ValueError: if ``attention_mask`` is not 2-D.
    """
    if attention_mask.dim() != 2:
        raise ValueError(f"attention_mask must be (batch, key), got shape {tuple(attention_mask.shape)}")
    masked = attention_mask[:, None, None, :] == 0  # (b, 1, 1, s)
    zeros = torch.zeros(masked.shape, dtype=dtype, device=attention_mask.device)
    return zeros.masked_fill(masked, torch.finfo(dtype).min)


def causal_mask(
    num_tokens: int, dtype: torch.dtype, attention_mask: torch.Tensor | None = None, window: int | None = None
) -> torch.Tensor:
    """An additive mask that lets each query see only itself and earlier keys (a decoder's, as GPT-2's).

    Args:
        num_tokens: ``t``, the number of queries and keys.
        dtype: dtype of the attention scores the mask is added to.
        attention_mask: optional ``(b, t)`` padding mask, 1 for real tokens and 0 for padding; padded keys
            are masked as well.
        window: sliding-window attention (Mistral, Gemma 2's local layers; Beltagy et al. 2020): query
            ``i`` sees only the ``window`` keys ``i - window + 1 .. i``, as transformers'
            ``sliding_window_overlay`` (``j > i - window``). ``None``: every earlier key.

    Returns:
        ``(1, 1, t, t)``, or ``(b, 1, t, t)`` with a padding mask: 0 where query ``i`` may see key ``j``
        (``j <= i``, within the window, and ``j`` not padded), ``torch.finfo(dtype).min`` elsewhere, as
        transformers' ``create_causal_mask`` (``create_sliding_window_causal_mask``) builds it for eager
        attention. After the softmax the upper triangle is exactly 0.
    """
    device = None if attention_mask is None else attention_mask.device
    seen = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device).tril()  # (t, s): j <= i
    if window is not None:
        seen = seen & ~seen.tril(-window)  # (t, s): and j > i - window
    blocked = ~seen[None, None]  # (1, 1, t, s)
    if attention_mask is not None:
        blocked = blocked | (attention_mask[:, None, None, :] == 0)  # (b, 1, t, s)
    zeros = torch.zeros(blocked.shape, dtype=dtype, device=device)
    return zeros.masked_fill(blocked, torch.finfo(dtype).min)


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    scaling: float | None = None,
    dropout: float = 0.0,
    softcap: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention as a pure function: ``softmax(q k^T * scaling + mask) v``.

    Args:
        query: ``(b, h, t, d)``.
        key: ``(b, h, s, d)``.
        value: ``(b, h, s, d_v)``.
        mask: additive mask, 4-D and broadcastable to ``(b, h, t, s)``; use :func:`key_padding_mask`
            for padding. ``None`` for no mask.
        scaling: factor applied to the raw scores; ``None`` means ``d ** -0.5`` (the Transformer's).
        dropout: dropout probability on the weights (0 in eval; as in BERT, the returned weights are
            the ones after dropout).
        softcap: attention-logit soft-capping (Gemma 2): the scaled scores become
            ``softcap * tanh(scores / softcap)``, each within ``(-softcap, softcap)``, before the mask is
            added (transformers' Gemma 2 ``eager_attention_forward``). ``None``: no capping.

    Returns:
        ``(context, weights)``: context ``(b, h, t, d_v)``; weights ``(b, h, t, s)``, each row a
        softmax distribution over keys that sums to 1 (without dropout).

    Raises:
        ValueError: if ``mask`` is not 4-D. A bare ``(b, s)`` mask would broadcast against the wrong
            axes.
    """
    if mask is not None and mask.dim() != 4:
        raise ValueError(
            f"mask must be 4-D (batch, heads, query, key), got shape {tuple(mask.shape)}; "
            "build a padding mask with key_padding_mask(attention_mask, dtype)"
        )
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(-2, -1)) * scaling  # (b, h, t, s)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap  # (b, h, t, s), each in (-softcap, softcap)
    if mask is not None:
        scores = scores + mask  # (b, h, t, s)
    weights = torch.softmax(scores, dim=-1)  # (b, h, t, s)
    weights = nn.functional.dropout(weights, p=dropout, training=dropout > 0)
    return torch.matmul(weights, value), weights  # (b, h, t, d_v), (b, h, t, s)


class _Rows:
    """``count`` output rows of a fused projection from ``start`` on, called like the ``nn.Linear`` they
    would be: the query, key or value projection of a fused attention. Not a module: its weights are
    the fused projection's, read at call time."""

    def __init__(self, fused: nn.Linear, start: int, count: int) -> None:
        self.fused, self.rows = fused, slice(start, start + count)

    @property
    def weight(self) -> torch.Tensor:
        return self.fused.weight[self.rows]  # (count, in)

    @property
    def bias(self) -> torch.Tensor | None:
        return None if self.fused.bias is None else self.fused.bias[self.rows]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.weight, self.bias)  # (..., count)


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention, correct where the seed article's layer is not.

    Query, key and value are projections of the whole input vector (``Linear(input_size,
    heads * head_dim)`` each), split into heads afterwards; scores are scaled by ``head_dim ** -0.5``;
    padded keys get an additive ``finfo(dtype).min``; heads are merged and projected back by
    ``output``. Parameter names follow BERT's checkpoint (``query``, ``key``, ``value``), so loading
    ``BertSelfAttention`` weights is a name-for-name copy. Nothing is stored on the module during
    ``forward``: one instance can serve many threads.

    Args:
        input_size: size of each input vector (BERT's ``hidden_size``).
        num_heads: number of heads ``h``.
        head_dim: size ``d`` of each head; default ``input_size // num_heads``.
        bias: whether the projections have a bias (BERT: yes).
        dropout: dropout probability on the attention weights in train mode.
        output_size: size of the output projection; default ``input_size``.
        causal: mask every key after the query (a decoder such as GPT-2); the mask is kept by every
            scaling.
        fused: one ``qkv`` projection to ``3 * heads * head_dim``, split into query, key and value
            afterwards (GPT-2's ``c_attn``), instead of three. ``query``, ``key`` and ``value`` are then
            views of its rows that compute the same slices (for reading one head's vectors).

    Raises:
        ValueError: if ``head_dim`` is not given and ``input_size`` is not divisible by ``num_heads``.
    """

    def __init__(
        self,
        input_size: int,
        num_heads: int,
        head_dim: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
        output_size: int | None = None,
        causal: bool = False,
        fused: bool = False,
    ) -> None:
        super().__init__()
        if head_dim is None:
            if input_size % num_heads:
                raise ValueError(f"input_size {input_size} is not divisible by num_heads {num_heads}")
            head_dim = input_size // num_heads
        self.num_heads, self.head_dim, self.dropout = num_heads, head_dim, dropout
        self.causal, self.fused = causal, fused
        inner = num_heads * head_dim
        if fused:
            self.qkv = nn.Linear(input_size, 3 * inner, bias=bias)
            self.query, self.key, self.value = (_Rows(self.qkv, part * inner, inner) for part in range(3))
        else:
            self.query = nn.Linear(input_size, inner, bias=bias)
            self.key = nn.Linear(input_size, inner, bias=bias)
            self.value = nn.Linear(input_size, inner, bias=bias)
        self.output = nn.Linear(inner, output_size or input_size, bias=bias)

    window: int | None = None  # every earlier key (a decoder) or every key: no sliding window
    softcap: float | None = None  # scores are not capped

    @property
    def scaling(self) -> float:
        """The factor the model's own scores are multiplied by: ``head_dim ** -0.5``."""
        return self.head_dim**-0.5

    def _project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.fused:  # one matrix product, then views of its columns, as GPT-2's c_attn(x).split(...)
            return self.qkv(x).split(self.num_heads * self.head_dim, dim=-1)  # 3 × (b, t, h*d)
        return self.query(x), self.key(x), self.value(x)  # 3 × (b, t, h*d)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # (b, h, t, d)

    def head_vectors(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every head's query, key and value vectors for ``x`` ``(b, t, input_size)``: 3 × ``(b, h, t, d)``,
        the vectors whose scaled dot products :meth:`forward` turns into weights."""
        return tuple(self._split(p) for p in self._project(x))  # 3 × (b, h, t, d)

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        scaling: float | None = None,
        head_mask: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from every position of ``x`` to every position.

        Args:
            x: ``(b, t, input_size)``.
            attention_mask: ``(b, t)`` padding mask, 1 for real tokens, 0 for padding; ``None`` if no
                padding.
            scaling: override of the score scaling (teaching variants); ``None`` is ``head_dim ** -0.5``.
            head_mask: ``(h,)`` or ``(b, h)`` factors on each head's context before the heads are
                merged: 0 switches a head's output off (Michel et al. 2019, "Are Sixteen Heads Really
                Better than One?"); the weights returned are unchanged. ``None``: no mask, no extra
                arithmetic (exact parity with transformers).
            key_mask: ``(h, s)`` or ``(b, h, s)`` bool, True where a key is removed for a head: its score
                gets ``finfo(dtype).min``, as a padding mask gives it, so each row is renormalised over the
                keys left. ``None``: no key removed.

        Returns:
            ``(output, weights)``: output ``(b, t, output_size)`` (before any residual); weights
            ``(b, h, t, t)`` with rows summing to 1 in eval mode.
        """
        q, k, v = (self._split(p) for p in self._project(x))  # 3 × (b, h, t, d)
        # An all-ones mask masks nothing: skipping it saves an add over every (b, h, t, s) score (bit-identical;
        # python -m benchmarks --only 2 measures the encoder against transformers).
        padded = attention_mask is not None and not bool(attention_mask.all())
        if self.causal:
            mask = causal_mask(x.shape[1], q.dtype, attention_mask if padded else None)  # (1 or b, 1, t, t)
        else:
            mask = key_padding_mask(attention_mask, q.dtype) if padded else None
        if key_mask is not None:
            removed = key_mask.to(torch.bool).reshape(-1, self.num_heads, 1, x.shape[1])  # (1 or b, h, 1, s)
            kept = torch.zeros((), dtype=q.dtype) if mask is None else mask
            mask = torch.where(removed, torch.finfo(q.dtype).min, kept)  # (1 or b, h, 1 or t, s)
        p = self.dropout if self.training else 0.0
        context, weights = scaled_dot_product_attention(q, k, v, mask, scaling, p)  # (b, h, t, d)
        if head_mask is not None:
            factors = head_mask.to(context.dtype).reshape(-1, self.num_heads, 1, 1)  # (1 or b, h, 1, 1)
            context = context * factors
        b, h, t, d = context.shape
        merged = context.transpose(1, 2).reshape(b, t, h * d)  # (b, t, h*d)
        return self.output(merged), weights
