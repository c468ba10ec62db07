"""The seed article's ``SelfAttention`` layer, reproduced as written, for teaching.

Source: the Chinese tutorial "BERT and the self-attention mechanism: from principle to practice" that
the project began from (itself a copy of a widely shared PyTorch tutorial layer).
"""

from __future__ import annotations

import torch
from torch import nn


class ArticleSelfAttention(nn.Module):
    """The article's multi-head attention, with its design choices kept, that also returns weights.

    How it differs from BERT's ``BertSelfAttention`` (and from :class:`MultiHeadSelfAttention`):

    1. **Projections after the split, shared by all heads.** One ``Linear(head_dim, head_dim,
       bias=False)`` each for values, keys and queries, applied to each head's own slice of the
       input. A head never sees the other slices, and Q/K/V have ``3 * head_dim**2``
       parameters instead of BERT's ``3 * (hidden**2 + hidden)``. BERT projects the whole vector
       with bias, then splits.
    2. **Scaling by** ``sqrt(embed_size)`` instead of ``sqrt(head_dim)``: the softmax temperature is
       ``sqrt(heads)`` times too high, so attention is flatter.
    3. **Mask by** ``masked_fill(mask == 0, -1e20)`` before scaling: overflows in float16
       and the mask's shape is whatever the caller broadcasts. BERT adds ``finfo(dtype).min`` to
       padded keys.
    4. **No bias, no dropout, no residual or LayerNorm**: ``fc_out`` is its only output step (BERT's
       ``BertSelfOutput`` adds dense, dropout, residual and LayerNorm).
    5. **Separate values/keys/query inputs**: it can be used for cross-attention, and the caller must
       pass the same tensor three times for self-attention.
    6. **No weights returned** in the article; this copy returns them as well.

    The article's printed ``forward`` defines ``self.values``, ``self.keys`` and ``self.queries`` but
    never calls them (three lines are missing), so as printed it attends with the raw input slices.
    ``apply_projections=True`` (default) applies them, as the layer's design intends;
    ``apply_projections=False`` reproduces the printed code exactly.

    Args:
        embed_size: size of each input vector.
        heads: number of heads; must divide ``embed_size``.
        apply_projections: see above.

    Raises:
        AssertionError: as in the article, if ``embed_size`` is not divisible by ``heads``.
    """

    def __init__(self, embed_size: int, heads: int, apply_projections: bool = True) -> None:
        super().__init__()
        self.embed_size = embed_size
        self.heads = heads
        self.head_dim = embed_size // heads
        self.apply_projections = apply_projections
        assert self.head_dim * heads == embed_size, "Embed size needs to be divisible by heads"
        self.values = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.keys = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.queries = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.fc_out = nn.Linear(heads * self.head_dim, embed_size)

    def forward(
        self,
        values: torch.Tensor,
        keys: torch.Tensor,
        query: torch.Tensor,
        mask: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the article's forward pass.

        Args:
            values, keys: ``(b, s, embed_size)``.
            query: ``(b, t, embed_size)``.
            mask: broadcastable to ``(b, h, t, s)``; positions where it is 0 are filled with ``-1e20``.

        Returns:
            ``(out, attention)``: out ``(b, t, embed_size)``; attention ``(b, h, t, s)``.

        Raises:
            RuntimeError: from torch, when ``mask`` is given on float16 input (``-1e20`` overflows).
        """
        n, t, s = query.shape[0], query.shape[1], keys.shape[1]
        values = values.reshape(n, s, self.heads, self.head_dim)  # (b, s, h, d)
        keys = keys.reshape(n, s, self.heads, self.head_dim)  # (b, s, h, d)
        queries = query.reshape(n, t, self.heads, self.head_dim)  # (b, t, h, d)
        if self.apply_projections:
            values, keys, queries = self.values(values), self.keys(keys), self.queries(queries)
        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])  # (b, h, t, s)
        if mask is not None:
            energy = energy.masked_fill(mask == 0, float("-1e20"))
        attention = torch.softmax(energy / (self.embed_size ** (1 / 2)), dim=3)  # (b, h, t, s)
        out = torch.einsum("nhql,nlhd->nqhd", [attention, values])  # (b, t, h, d)
        out = out.reshape(n, t, self.heads * self.head_dim)  # (b, t, h*d)
        return self.fc_out(out), attention
