"""Attention of an encoder–decoder (T5, BART) for a source and a target text: encoder self-attention, decoder
self-attention and cross-attention, from our from-scratch twin or from transformers.

The decoder reads the target as in training (teacher forcing): its start token, then the target's tokens
without the closing ``</s>`` (the target's labels shifted right one place), so row ``i`` is the attention of the
step that predicts target token ``i``. :func:`generate_seq2seq` lets the model write the target instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attention_viz import settings
from attention_viz.extraction.checks import AttentionError, check_rows
from attention_viz.extraction.forward import token_inputs
from attention_viz.extraction.generation import DEFAULT_NEW_TOKENS, extend_encoding, greedy_ids
from attention_viz.extraction.results import SOURCES
from attention_viz.extraction.tokens import Encoding, InputError, check_length, encode
from attention_viz.models.loading import LoadedSeq2Seq

# T5's relative positions have no end; the length it was trained on bounds a source or target here (with the
# server's own token limit, when lower).
T5_MAX_TOKENS = 512
KINDS = ("encoder", "decoder", "cross")
WRITTEN = "▸ "  # before the label of a target token the model wrote (:meth:`Seq2SeqResult.labels`)


@dataclass(frozen=True)
class Seq2SeqResult:
    """The three kinds of attention of one encoder–decoder forward.

    Attributes:
        encoder: float32 ``(L_enc, h_enc, s, s)``: source token -> source token.
        decoder: float32 ``(L_dec, h_dec, t, t)``: target token -> itself and earlier target tokens (0 above the
            diagonal).
        cross: float32 ``(L_dec, h_dec, t, s)``: target token (query) -> source token (key); each row sums to 1
            over the source.
        source: the ``s`` source tokens, with labels.
        target: the ``t`` tokens the decoder read: its start token first (T5 ``<pad>``, BART ``</s>``).
        generated: ``(t,)`` bool, True for each target token the model wrote (:func:`generate_seq2seq`); all
            False for a given target.
        model_name: :attr:`~attention_viz.models.loading.Seq2SeqInfo.name`.
        computed_by: ``"scratch"`` (the from-scratch twin) or ``"pretrained"`` (transformers).
    """

    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray
    source: Encoding
    target: Encoding
    generated: np.ndarray
    model_name: str
    computed_by: str

    def maps(self, kind: str) -> np.ndarray:
        """The maps of one kind: ``"encoder"``, ``"decoder"`` or ``"cross"``.

        Raises:
            ValueError: another kind, naming the three.
        """
        if kind not in KINDS:
            raise ValueError(f"unknown attention kind {kind!r}: choose one of {', '.join(KINDS)}")
        return getattr(self, kind)

    def labels(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(row labels, column labels)`` of a kind's maps: the target's tokens for the decoder's queries, the
        source's for the encoder's and for the cross-attention's keys. A target token the model wrote has
        :data:`WRITTEN` before its label.

        Raises:
            ValueError: an unknown kind, naming the three.
        """
        self.maps(kind)  # checks the kind
        target = tuple(
            WRITTEN + label if written else label
            for label, written in zip(self.target.labels, self.generated, strict=True)
        )
        rows = self.source.labels if kind == "encoder" else target
        columns = target if kind == "decoder" else self.source.labels
        return tuple(rows), tuple(columns)


def _max_tokens(loaded: LoadedSeq2Seq) -> int:
    return loaded.info.max_positions or T5_MAX_TOKENS


def _encode_named(loaded: LoadedSeq2Seq, text: str, limits: settings.Limits | None, which: str) -> Encoding:
    """:func:`encode` of one of the two texts (``which``: ``"source"`` or ``"target"``); an empty or too long one
    is refused with a code or field that names it, so the message can say which of the two boxes it is."""
    limits = settings.Limits() if limits is None else limits
    check_length(text, None, limits, names=(which, "pair"))
    try:
        return encode(loaded.tokenizer, text, None, _max_tokens(loaded), limits, 0)
    except InputError as exc:
        if exc.code != "empty":
            raise
        raise InputError(f"the {which} text is empty: type one", f"empty_{which}") from exc


def encode_source(loaded: LoadedSeq2Seq, text: str, limits: settings.Limits | None = None) -> Encoding:
    """The source text as the encoder reads it (with the tokenizer's ``</s>``; BART's ``<s>`` before it).

    Raises:
        InputError: empty or too long (codes ``empty_source``, ``too_long`` with ``which`` ``"source"``).
    """
    return _encode_named(loaded, text, limits, "source")


def encode_target(loaded: LoadedSeq2Seq, text: str, limits: settings.Limits | None = None) -> Encoding:
    """The target text as the decoder reads it in training: the start token, then the target's tokens without
    the closing end token (the labels shifted right one place: transformers' ``shift_tokens_right``).

    Raises:
        InputError: empty or too long (codes ``empty_target``, ``too_long`` with ``which`` ``"target"``).
    """
    labels = _encode_named(loaded, text, limits, "target")
    keep = labels.num_tokens - 1 if labels.input_ids[-1] == loaded.tokenizer.eos_token_id else labels.num_tokens
    start = loaded.info.decoder_start_token_id
    start_token = loaded.tokenizer.convert_ids_to_tokens(start)
    return Encoding(
        input_ids=np.concatenate([[start], labels.input_ids[:keep]]).astype(np.int64),
        token_type_ids=np.zeros(keep + 1, dtype=np.int64),
        tokens=(start_token, *labels.tokens[:keep]),
        labels=(start_token, *labels.labels[:keep]),
        word_ids=np.concatenate([[-1], labels.word_ids[:keep]]).astype(np.int64),
        segments=np.zeros(keep + 1, dtype=np.int64),
        special=np.concatenate([[True], labels.special[:keep]]).astype(bool),
        num_input_tokens=labels.num_input_tokens,
        truncated=labels.truncated,
        cut=labels.cut,
        words=labels.words,
    )


def _stack(attentions, kind: str, layers: int, heads: int, queries: int, keys: int) -> np.ndarray:
    """One kind's ``(1, h, t, s)`` tensors checked (count, shape, finite rows summing to 1) and stacked as
    float32 ``(L, h, t, s)``.

    Raises:
        AttentionError: none, too few or too many, another shape, or rows that are no softmax.
    """
    if not attentions or len(attentions) != layers:
        count = len(attentions) if attentions else 0
        raise AttentionError(f"expected {kind} attention from {layers} layers, got {count}")
    stacked = np.empty((layers, heads, queries, keys), dtype=np.float32)
    for layer, tensor in enumerate(attentions):
        if tensor is None or tuple(tensor.shape) != (1, heads, queries, keys):
            shape = None if tensor is None else tuple(tensor.shape)
            raise AttentionError(
                f"{kind} layer {layer} attention has shape {shape}, expected {(1, heads, queries, keys)}"
            )
        check_rows(tensor[0], f" in {kind} layer {layer}")
        stacked[layer] = tensor[0].numpy()
    return stacked


def twin_forward(twin, source: Encoding, target: Encoding):
    """One forward of the from-scratch encoder–decoder (:class:`~attention_viz.models.seq2seq.Seq2SeqTransformer`)
    on an encoded source and the decoder's input, without autograd: its output, with the attentions of the three
    kinds (hooks registered on its modules see the run)."""
    with torch.inference_mode():
        return twin(token_inputs(source.input_ids)["input_ids"], token_inputs(target.input_ids)["input_ids"])


def seq2seq_maps(
    loaded: LoadedSeq2Seq, source: Encoding, target: Encoding, computed_by: str = "scratch"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(encoder, decoder, cross)`` maps for encoded source and target: float32 ``(L_enc, h, s, s)``,
    ``(L_dec, h, t, t)``, ``(L_dec, h, t, s)``.

    Args:
        computed_by: ``"scratch"``: the twin (:class:`~attention_viz.models.seq2seq.Seq2SeqTransformer`);
            ``"pretrained"``: transformers' forward with ``output_attentions=True`` (``encoder_attentions``,
            ``decoder_attentions``, ``cross_attentions``).

    Raises:
        InputError: an unknown ``computed_by``.
        AttentionError: the model gave no or invalid weights.
    """
    if computed_by not in SOURCES:
        raise InputError(f"unknown source {computed_by!r}: choose one of {', '.join(SOURCES)}", "unknown_source")
    if computed_by == "scratch":
        out = twin_forward(loaded.twin, source, target)
    else:
        with torch.inference_mode():
            out = loaded.model(
                input_ids=token_inputs(source.input_ids)["input_ids"],  # (1, s)
                decoder_input_ids=token_inputs(target.input_ids)["input_ids"],  # (1, t)
                output_attentions=True,
                use_cache=False,
            )
    info, s, t = loaded.info, source.num_tokens, target.num_tokens
    return (
        _stack(out.encoder_attentions, "encoder", info.encoder_layers, info.encoder_heads, s, s),
        _stack(out.decoder_attentions, "decoder", info.decoder_layers, info.decoder_heads, t, t),
        _stack(out.cross_attentions, "cross", info.decoder_layers, info.decoder_heads, t, s),
    )


def extract_seq2seq(
    loaded: LoadedSeq2Seq,
    source: str,
    target: str,
    computed_by: str = "scratch",
    limits: settings.Limits | None = None,
) -> Seq2SeqResult:
    """Encoder, decoder and cross-attention of an encoder–decoder for a source and a target text.

    Args:
        loaded: from :func:`~attention_viz.models.loading.load_seq2seq`.
        source: the text the encoder reads.
        target: the text the decoder reads (teacher forcing, see :func:`encode_target`).
        computed_by: ``"scratch"`` (default) or ``"pretrained"``; the same bits either way.
        limits: characters and tokens accepted (default: :class:`~attention_viz.settings.Limits`' defaults).

    Returns:
        :class:`Seq2SeqResult`.

    Raises:
        InputError: an empty or too long text, an unknown ``computed_by``.
        AttentionError: the model gave no or invalid weights.
    """
    source_encoding = encode_source(loaded, source, limits)
    target_encoding = encode_target(loaded, target, limits)
    encoder, decoder, cross = seq2seq_maps(loaded, source_encoding, target_encoding, computed_by)
    generated = np.zeros(target_encoding.num_tokens, dtype=bool)
    return Seq2SeqResult(
        encoder, decoder, cross, source_encoding, target_encoding, generated, loaded.info.name, computed_by
    )


def generate_seq2seq(
    loaded: LoadedSeq2Seq,
    source: str,
    max_new_tokens: int = DEFAULT_NEW_TOKENS,
    computed_by: str = "scratch",
    limits: settings.Limits | None = None,
) -> Seq2SeqResult:
    """Let the model write the target for ``source`` greedily and return the three kinds of maps.

    The token ids come from transformers' ``generate(do_sample=False, num_beams=1)`` (with the checkpoint's
    other generation settings: BART's forced first ``<s>``, an end token); the maps from one forward of the
    source and the whole generated target through the twin (``computed_by="scratch"``) or transformers. The
    decoder is causal, so rows ``0 .. t-2`` are the maps of the last generation step (which read every token
    but the last written one), and the last row is the step that would come next.

    Args:
        loaded: a T5 or BART model with its LM head (:attr:`Seq2SeqInfo.can_generate`).
        source: the text the encoder reads.
        max_new_tokens: at most this many tokens after the start token (fewer when the model writes its end
            token, or BART's position table ends).
        computed_by, limits: as for :func:`extract_seq2seq`.

    Returns:
        :class:`Seq2SeqResult` whose ``target`` is the start token and the generated tokens, ``generated`` True
        for all but the start token.

    Raises:
        InputError: an empty or too long source, ``max_new_tokens`` below 1.
        GenerationError: the checkpoint was saved without its LM head.
    """
    from attention_viz.extraction.generation import GenerationError

    if max_new_tokens < 1:
        raise InputError(f"max_new_tokens must be at least 1, not {max_new_tokens}", "invalid")
    if not loaded.info.can_generate:
        raise GenerationError(f"{loaded.info.name!r} was saved without its language-model head: it cannot generate")
    source_encoding = encode_source(loaded, source, limits)
    source_inputs = token_inputs(source_encoding.input_ids)  # (1, s) each
    room = _max_tokens(loaded) - 1  # the start token takes the first position
    config = loaded.model.config
    # transformers' cache is built for as many decoder layers as encoder layers: a T5 with more or fewer
    # decoder layers generates without it (each step a forward of the whole target; the same tokens)
    same_depth = getattr(config, "num_decoder_layers", config.num_hidden_layers) == config.num_hidden_layers
    inputs = {name: source_inputs[name] for name in ("input_ids", "attention_mask")}
    sequence = greedy_ids(loaded.model, inputs, min(max_new_tokens, room), use_cache=same_depth)  # (1, 1 + new)
    start = np.asarray(sequence[0, :1].tolist(), dtype=np.int64)
    start_token = loaded.tokenizer.convert_ids_to_tokens(int(start[0]))
    begin = Encoding(
        input_ids=start,
        token_type_ids=np.zeros(1, dtype=np.int64),
        tokens=(start_token,),
        labels=(start_token,),
        word_ids=np.full(1, -1, dtype=np.int64),
        segments=np.zeros(1, dtype=np.int64),
        special=np.ones(1, dtype=bool),
        num_input_tokens=0,
        truncated=False,
    )
    target = extend_encoding(begin, loaded.tokenizer, sequence[0, 1:].tolist())
    encoder, decoder, cross = seq2seq_maps(loaded, source_encoding, target, computed_by)
    generated = np.arange(target.num_tokens) >= 1
    return Seq2SeqResult(encoder, decoder, cross, source_encoding, target, generated, loaded.info.name, computed_by)
