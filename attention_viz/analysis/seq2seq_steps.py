"""Inside one head of an encoder–decoder (T5, BART), step by step: the encoder's self-attention, the decoder's
causal self-attention and the cross-attention (queries from the decoder, keys and values from the encoder's
output).

The inputs come from one forward of the from-scratch twin
(:class:`~attention_viz.models.seq2seq.Seq2SeqTransformer`) with a forward pre-hook on every attention module:
each hook records what that module was called with, ``(x, memory, mask)``, so the steps start from exactly the
hidden states the model's attention read (after T5's pre-norm; BART's post-norm blocks hand the sublayer the
residual stream itself) and from the encoder's output for the cross-attention. A step then is one layer's
projections and one head's arithmetic, as :class:`~attention_viz.models.seq2seq.Attention` and
:func:`~attention_viz.models.attention.scaled_dot_product_attention` do it::

    scores = (q · k) * scaling + bias + causal mask,   weights = softmax(scores),   output = weights @ v

with ``scaling`` 1 in T5 (unscaled: its init folds ``d ** -0.5`` into the query weights) and ``d ** -0.5`` in
BART; ``bias`` T5's bucketed relative-position bias in the encoder's and the decoder's self-attention (none in
the cross-attention, none in BART); the causal mask in the decoder's self-attention alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attention_viz.extraction.seq2seq import KINDS, twin_forward
from attention_viz.extraction.tokens import Encoding, InputError
from attention_viz.models.seq2seq import Seq2SeqTransformer, relative_position_bias


@dataclass(frozen=True)
class SublayerInputs:
    """What every attention module of an encoder–decoder read in one forward (float32, batch dropped).

    Attributes:
        encoder: ``(L_enc, s, hidden)``: the input of each encoder layer's self-attention.
        decoder: ``(L_dec, t, hidden)``: the input of each decoder layer's self-attention.
        cross: ``(L_dec, t, hidden)``: the input of each decoder layer's cross-attention (its queries' side).
        memory: ``(s, hidden)``: the encoder's output, the keys' and values' side of every cross-attention.
    """

    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray
    memory: np.ndarray

    def queries_side(self, kind: str) -> np.ndarray:
        """``(L, n, hidden)``: what the queries of ``kind`` are projected from."""
        return getattr(self, kind)

    def keys_side(self, kind: str, layer: int) -> np.ndarray:
        """``(n, hidden)``: what the keys and values of ``kind`` at ``layer`` are projected from: the encoder's
        output for the cross-attention, else the layer's own input."""
        return self.memory if kind == "cross" else getattr(self, kind)[layer]


def sublayer_inputs(twin: Seq2SeqTransformer, source: Encoding, target: Encoding) -> SublayerInputs:
    """Run the twin once on ``source`` and ``target`` and record each attention module's input.

    Args:
        twin: the from-scratch encoder–decoder with the model's weights (:attr:`LoadedSeq2Seq.twin`).
        source, target: the encoded source and the decoder's input (``extract_seq2seq``'s ``source`` and
            ``target``: the start token first).

    Returns:
        :class:`SublayerInputs`.
    """
    seen: dict[tuple[str, int], torch.Tensor] = {}

    def recorder(kind: str, layer: int):
        def hook(_module, args):
            seen[kind, layer] = args[0][0].detach().clone()  # (n, hidden): the attention's x
            if kind == "cross":
                seen["memory", 0] = args[1][0].detach().clone()  # (s, hidden): the encoder's output

        return hook

    modules = [("encoder", i, layer.self_attention) for i, layer in enumerate(twin.encoder_layers)]
    for i, layer in enumerate(twin.decoder_layers):
        modules += [("decoder", i, layer.self_attention), ("cross", i, layer.cross_attention)]
    handles = [module.register_forward_pre_hook(recorder(kind, i)) for kind, i, module in modules]
    try:
        twin_forward(twin, source, target)
    finally:
        for handle in handles:
            handle.remove()

    def stacked(kind: str, layers: int) -> np.ndarray:
        return torch.stack([seen[kind, i] for i in range(layers)]).float().numpy()

    return SublayerInputs(
        encoder=stacked("encoder", len(twin.encoder_layers)),
        decoder=stacked("decoder", len(twin.decoder_layers)),
        cross=stacked("cross", len(twin.decoder_layers)),
        memory=seen["memory", 0].float().numpy(),
    )


@dataclass(frozen=True)
class Seq2SeqSteps:
    """Every intermediate value of one encoder–decoder head for one query token (float32; ``n`` keys, ``d``
    head_dim), with :class:`~attention_viz.analysis.steps.HeadSteps`' names for what both have.

    Attributes:
        kind: ``"encoder"``, ``"decoder"`` or ``"cross"``.
        layer, head, query_index: which head, and the query token's position (a source token for the encoder,
            a target token for the decoder's two kinds).
        query: ``(d,)`` the query vector.
        keys: ``(n, d)`` every key: source tokens (encoder, cross: from the encoder's output), or target tokens.
        values: ``(n, d)`` every value, from the same tokens as the keys.
        dots: ``(n,)`` raw scores ``q · k``.
        scaling: the factor the dots are multiplied by: 1.0 in T5, ``d ** -0.5`` in BART.
        bias: ``(n,)`` the position bias added to the scaled dots: T5's relative-position bias of this head
            (encoder and decoder self-attention); zeros where the model adds none (cross-attention, BART).
        has_bias: whether the model adds a position bias to this kind's scores.
        masked: key positions the causal mask hides from this query (the decoder's: every later target token).
        scores: ``(n,)`` ``dots * scaling + bias``, ``-inf`` on masked keys.
        weights: ``(n,)`` softmax of ``scores``: sums to 1, exactly 0 on masked keys.
        context: ``(d,)`` ``weights @ values``, this head's output for the query token.
        all_weights: ``(queries, n)`` the same computation for every query: the head's map.
    """

    kind: str
    layer: int
    head: int
    query_index: int
    query: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    dots: np.ndarray
    scaling: float
    bias: np.ndarray
    has_bias: bool
    masked: tuple[int, ...]
    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    all_weights: np.ndarray


def _attention(twin: Seq2SeqTransformer, kind: str, layer: int):
    """The attention module of ``kind`` at ``layer``; errors name the ranges."""
    if kind not in KINDS:
        raise InputError(f"unknown attention kind {kind!r}: choose one of {', '.join(KINDS)}")
    stack = twin.encoder_layers if kind == "encoder" else twin.decoder_layers
    if not 0 <= layer < len(stack):
        raise IndexError(f"layer {layer} out of range: 0-{len(stack) - 1}")
    return stack[layer].cross_attention if kind == "cross" else stack[layer].self_attention


def _bias(twin: Seq2SeqTransformer, kind: str, queries: int, keys: int) -> torch.Tensor | None:
    """T5's ``(h, queries, keys)`` relative-position bias of a self-attention kind; ``None`` for the
    cross-attention and for BART."""
    if not twin.config.t5 or kind == "cross":
        return None
    table = twin.encoder_position_bias if kind == "encoder" else twin.decoder_position_bias
    return relative_position_bias(table, queries, keys, kind == "encoder", twin.config)[0]  # (h, t, s)


def seq2seq_steps(
    twin: Seq2SeqTransformer, inputs: SublayerInputs, kind: str, layer: int, head: int, query_index: int
) -> Seq2SeqSteps:
    """The computation of one head of an encoder–decoder for one query token, step by step.

    Args:
        twin: the from-scratch encoder–decoder (:attr:`LoadedSeq2Seq.twin`).
        inputs: :func:`sublayer_inputs` of the same twin and texts.
        kind: ``"encoder"``, ``"decoder"`` or ``"cross"``.
        layer, head: from 0, in the kind's stack (the encoder's, or the decoder's for its two kinds).
        query_index: the query token (a source token for ``encoder``, a target token otherwise).

    Returns:
        :class:`Seq2SeqSteps`; its ``all_weights`` equal the twin's map of that head (``extract_seq2seq``'s
        ``maps(kind)[layer, head]``) to float32 rounding.

    Raises:
        InputError: an unknown kind, or a query token out of range.
        IndexError: a layer or head out of range.
    """
    attention = _attention(twin, kind, layer)
    if not 0 <= head < attention.num_heads:
        raise IndexError(f"head {head} out of range: 0-{attention.num_heads - 1}")
    x = torch.from_numpy(np.array(inputs.queries_side(kind)[layer], dtype=np.float32))  # (t, hidden)
    memory = torch.from_numpy(np.array(inputs.keys_side(kind, layer), dtype=np.float32))  # (s, hidden)
    t, s = x.shape[0], memory.shape[0]
    if not 0 <= query_index < t:
        raise InputError(f"query token {query_index} out of range: 0-{t - 1}")
    part = slice(head * attention.head_dim, (head + 1) * attention.head_dim)  # the head's columns
    with torch.inference_mode():
        q = attention.query(x)[:, part]  # (t, d)
        k = attention.key(memory)[:, part]  # (s, d)
        v = attention.value(memory)[:, part]  # (s, d)
        dots = q @ k.T  # (t, s)
        scores = dots * attention.scaling  # (t, s)
        bias = _bias(twin, kind, t, s)
        if bias is not None:
            scores = scores + bias[head]  # (t, s)
        seen = torch.ones(t, s, dtype=torch.bool)
        if kind == "decoder":
            seen = seen.tril()  # query i sees keys j <= i
        scores = scores.masked_fill(~seen, -torch.inf)  # (t, s)
        weights = torch.softmax(scores, dim=-1)  # (t, s): exp(-inf) is exactly 0
        context = weights[query_index] @ v  # (d,)
    row = query_index
    return Seq2SeqSteps(
        kind=kind,
        layer=layer,
        head=head,
        query_index=row,
        query=q[row].numpy(),
        keys=k.numpy(),
        values=v.numpy(),
        dots=dots[row].numpy(),
        scaling=float(attention.scaling),
        bias=np.zeros(s, dtype=np.float32) if bias is None else bias[head, row].numpy().astype(np.float32),
        has_bias=bias is not None,
        masked=tuple(int(j) for j in np.flatnonzero(~seen[row].numpy())),
        scores=scores[row].numpy(),
        weights=weights[row].numpy(),
        context=context.numpy(),
        all_weights=weights.numpy(),
    )
