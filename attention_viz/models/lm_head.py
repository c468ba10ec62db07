"""A checkpoint's language-model head, when it has one: a masked-LM head (BERT's ``BertForMaskedLM`` and its
kin) or a causal-LM head (GPT-2's, and the Llama-style decoders': Llama, Qwen2, Qwen3, Mistral, Gemma 2 with its
final logit soft-capping), on top of the from-scratch encoder's last hidden state.

The head is read with transformers' ``AutoModelForMaskedLM`` / ``AutoModelForCausalLM`` from the same folder
or hub name as the model (local files only, safetensors only, no remote code, float32). A checkpoint saved
without one (the bundled all-MiniLM-L6-v2 is a bare ``BertModel``) leaves the head's weights missing:
transformers would draw them at random, so :func:`load_lm_head` says there is none instead. GPT-2 and Gemma 2
tie their head to the token embeddings, so every such checkpoint has one; a Llama-style ``...ForCausalLM``
saves ``lm_head.weight`` unless its config ties it (SmolLM2, Qwen2.5-0.5B do).

The predictions run the from-scratch encoder, which takes a head mask and a key mask, and hand its last
hidden state to the head: with neither, the logits equal the transformers LM model's own (a test checks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from tokenizers.models import WordPiece

from attention_viz.extraction.forward import scratch_forward
from attention_viz.extraction.tokens import visible, whitespace_label

# The head's module(s) in each family's LM class, applied to the last hidden state ``(b, t, hidden)``.
_HEADS: dict[str, Callable] = {
    "bert": lambda m, h: m.cls(h),
    "roberta": lambda m, h: m.lm_head(h),
    "xlm-roberta": lambda m, h: m.lm_head(h),
    "albert": lambda m, h: m.predictions(h),
    "electra": lambda m, h: m.generator_lm_head(m.generator_predictions(h)),
    "distilbert": lambda m, h: m.vocab_projector(m.vocab_layer_norm(m.activation(m.vocab_transform(h)))),
    "gpt2": lambda m, h: m.lm_head(h),
    # the Llama-style decoders: ``lm_head`` after the final RMSNorm, which the from-scratch decoder applies
    "llama": lambda m, h: m.lm_head(h),
    "qwen2": lambda m, h: m.lm_head(h),
    "qwen3": lambda m, h: m.lm_head(h),
    "mistral": lambda m, h: m.lm_head(h),
    "gemma2": lambda m, h: _soft_capped(m.lm_head(h), m.config.final_logit_softcapping),
}


def _soft_capped(logits: torch.Tensor, cap: float | None) -> torch.Tensor:
    """Gemma 2's final soft-capping: ``cap · tanh(logits / cap)`` (``Gemma2ForCausalLM.forward``); ``None``: none."""
    return logits if cap is None else torch.tanh(logits / cap) * cap


@dataclass(frozen=True)
class LanguageModelHead:
    """A loaded LM head.

    Attributes:
        model: the transformers LM model (eval mode); only its head is used.
        kind: ``"masked"`` (predicts the token at a position) or ``"causal"`` (predicts the next token).
        family: the family's ``model_type``.
    """

    model: object
    kind: str
    family: str

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """``(b, t, vocab)`` logits from the last hidden state ``(b, t, hidden)``."""
        return _HEADS[self.family](self.model, hidden)


def load_lm_head(info) -> LanguageModelHead | None:
    """The LM head of the checkpoint a :class:`~attention_viz.models.loading.ModelInfo` was loaded from.

    Returns:
        :class:`LanguageModelHead`, or ``None`` when the family has no head here or the checkpoint was saved
        without its weights (the bundled model).
    """
    if info.family not in _HEADS:
        return None
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    kind = "causal" if info.causal else "masked"
    model, missing = read_lm_model(info, AutoModelForCausalLM if info.causal else AutoModelForMaskedLM)
    if missing:
        return None
    return LanguageModelHead(model.eval(), kind, info.family)


def read_lm_model(info, auto) -> tuple[object, list[str]]:
    """The checkpoint of ``info`` read with its language-model head by ``auto`` (a transformers ``AutoModelFor…``
    class), eager attention, float32, local files only; and the weights it lacked (the head's, when it was saved
    without one).

    Raises:
        OSError: the checkpoint cannot be read that way.
    """
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the warning about missing head weights is what we report instead
    from attention_viz.models.loading import READ_LOCK  # one read at a time: it says why

    try:
        with READ_LOCK:
            model, report = auto.from_pretrained(
                info.path,
                output_loading_info=True,
                attn_implementation="eager",
                use_safetensors=True,
                dtype=torch.float32,
                trust_remote_code=False,
                local_files_only=True,
            )
    except (OSError, ValueError, KeyError) as exc:
        raise OSError(f"could not read the language-model head of {info.name!r}: {exc}") from exc
    finally:
        hf_logging.set_verbosity(verbosity)
    return model, list(report["missing_keys"])


WORD_START = "␣"  # drawn before a piece that starts a new word (a space before it, or no ``##``)
SENTENCEPIECE_SPACE = "\u2581"  # ▁, SentencePiece's mark for a space (Kudo & Richardson 2018)


def _byte_of() -> dict[str, int]:
    """GPT-2's byte-level alphabet inverted: the character that stands for each byte → the byte.

    Byte-level BPE (GPT-2, RoBERTa; Radford et al. 2019, ``bytes_to_unicode`` in OpenAI's ``encoder.py``)
    writes each byte as one printable character: the printable Latin-1 bytes as themselves, the other 68
    (controls, space, ...) as U+0100 onwards in byte order (space is ``Ġ``, line feed ``Ċ``).
    """
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in kept]
    return {chr(b): b for b in kept} | {chr(256 + n): b for n, b in enumerate(moved)}


_BYTE_OF = _byte_of()


def _utf8_parts(data: bytes) -> tuple[str | bytes, ...]:
    """``data`` as text where it is whole UTF-8 characters and as ``bytes`` runs where it is not (a piece of
    byte-level BPE can hold the first or last bytes of a character that the next or previous piece completes)."""
    parts: list[str | bytes] = []
    while data:
        try:
            parts.append(data.decode("utf-8"))
            break
        except UnicodeDecodeError as exc:
            if exc.start:
                parts.append(data[: exc.start].decode("utf-8"))
            if parts and isinstance(parts[-1], bytes):
                parts[-1] += data[exc.start : exc.end]
            else:
                parts.append(data[exc.start : exc.end])
            data = data[exc.end :]
    return tuple(parts)


def _shown(text: str) -> str:
    """Text drawn visibly: a run of whitespace as ``␣``/``⏎``/``⇥`` per character, control characters as their
    pictures (as token labels are, :func:`attention_viz.extraction.tokens.visible`)."""
    return whitespace_label(text) if text and not text.strip() else visible(text)


def byte_label(run: bytes) -> str:
    """``byte 0xC4`` / ``bytes 0xE4 0xB8``: a run of bytes that is no whole UTF-8 character."""
    return ("bytes " if len(run) > 1 else "byte ") + " ".join(f"0x{b:02X}" for b in run)


@dataclass(frozen=True)
class PieceText:
    """One vocabulary piece as a reader sees it, whatever the tokenizer.

    Attributes:
        piece: the piece as the tokenizer writes it (``Ġanim``, ``▁d``, ``##s``, ``<mask>``).
        parts: what it decodes to, without the space that starts a word: text, and ``bytes`` runs that are
            no whole UTF-8 character (a byte-level piece such as ``Ä`` is byte 0xC4 alone). Control
            characters and spaces inside are drawn visibly (``⏎`` for a line break, as token labels are).
        new_word: the piece starts a new word: a space before it (byte-level ``Ġ``, SentencePiece ``▁``),
            or a WordPiece piece without the ``##`` that continues a word.
        special: a special token of the tokenizer (``[SEP]``, ``</s>``, ``<|endoftext|>``), shown as it is.
    """

    piece: str
    parts: tuple[str | bytes, ...]
    new_word: bool
    special: bool = False

    def label(self, bytes_label: Callable[[bytes], str] = byte_label) -> str:
        """``␣`` for a new word, then the text, each bytes run as ``bytes_label`` writes it (``byte 0xC4``),
        `` + `` between text and bytes: ``␣anim``, ``␣café``, ``s``, ``byte 0xC4``, ``j + byte 0xC3``; a piece
        of only a space is ``␣``."""
        text = " + ".join(bytes_label(part) if isinstance(part, bytes) else part for part in self.parts)
        return (WORD_START if self.new_word else "") + text


def piece_text(tokenizer, token_id: int) -> PieceText:
    """What vocabulary entry ``token_id`` reads as: the text ``tokenizer.decode([token_id])`` gives, as
    transformers' ``fill-mask`` pipeline shows it, with the word start made visible and the bytes that
    are no whole character named instead of decoded to U+FFFD.

    Three kinds of tokenizer, told apart by the pieces themselves:

    - WordPiece (BERT, DistilBERT, ELECTRA): a piece continues a word when it starts with the model's
      ``continuing_subword_prefix`` (``##``); any other piece starts one.
    - Byte-level BPE (GPT-2, RoBERTa): every character of the piece stands for one byte (see
      :func:`_byte_of`) and the tokenizer decodes it to those bytes; a leading space starts a word.
    - SentencePiece (XLM-R, ALBERT): ``▁`` (U+2581) stands for a space; a leading one starts a word.

    Args:
        tokenizer: a fast (Rust-backed) transformers tokenizer.
        token_id: 0 to the vocabulary size − 1. An id the tokenizer has no piece for (a model's embedding
            table may have more rows than its tokenizer has tokens: Qwen2's 151,936 for about 151,650) reads
            ``id 151700``, as a special token does (no text of its own).
    """
    piece = tokenizer.convert_ids_to_tokens(int(token_id))
    if piece is None:
        return PieceText(unknown_id_label(token_id), (unknown_id_label(token_id),), False, True)
    if int(token_id) in tokenizer.all_special_ids:
        return PieceText(piece, (piece,), False, True)
    model = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
    if isinstance(model, WordPiece):
        prefix = model.continuing_subword_prefix
        new_word = not piece.startswith(prefix)
        return PieceText(piece, (_shown(piece if new_word else piece[len(prefix) :]),), new_word)
    if all(c in _BYTE_OF for c in piece):
        data = bytes(_BYTE_OF[c] for c in piece)
        if tokenizer.convert_tokens_to_string([piece]) == data.decode("utf-8", "replace"):  # byte-level indeed
            new_word = data.startswith(b" ")
            parts = _utf8_parts(data[1:] if new_word else data)
            return PieceText(piece, tuple(p if isinstance(p, bytes) else _shown(p) for p in parts), new_word)
    new_word = piece.startswith(SENTENCEPIECE_SPACE)
    text = _shown((piece[1:] if new_word else piece).replace(SENTENCEPIECE_SPACE, " "))
    return PieceText(piece, (text,) if text else (), new_word)


def unknown_id_label(token_id: int) -> str:
    """The label of a token id the tokenizer has no piece for: ``id 151700``."""
    return f"id {int(token_id)}"


@dataclass(frozen=True)
class Predictions:
    """The top-k predictions at one position.

    Attributes:
        position: the position read (a masked LM: the token there; causal: the token after it).
        ids: ``(k,)`` token ids, most probable first.
        tokens: their pieces exactly as the tokenizer writes them (``Ġanim``, ``▁d``).
        pieces: the same as a reader sees them (:func:`piece_text`; ``pieces[i].label()`` is ``␣anim``).
        probabilities: ``(k,)`` softmax probabilities (0 to 1).
    """

    position: int
    ids: np.ndarray
    tokens: tuple[str, ...]
    probabilities: np.ndarray
    pieces: tuple[PieceText, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        """Each prediction's :meth:`PieceText.label` (``␣anim``, ``byte 0xC4``)."""
        return tuple(piece.label() for piece in self.pieces)


def predict(
    encoder,
    head: LanguageModelHead,
    tokenizer,
    encoding,
    position: int,
    k: int = 5,
    head_mask: torch.Tensor | None = None,
    key_mask: torch.Tensor | None = None,
) -> Predictions:
    """Top-``k`` predictions at ``position``, optionally with heads switched off or keys removed.

    Args:
        encoder: the from-scratch encoder (its weights are the LM model's base).
        head: from :func:`load_lm_head`.
        tokenizer: the model's tokenizer (for the pieces and their text, :func:`piece_text`).
        encoding: the input, ``t`` tokens.
        position: 0 to ``t − 1``.
        k: how many.
        head_mask: ``(L, h)``, 0 switches a head's output off (see the encoder).
        key_mask: ``(L, h, t)`` bool, True removes a key (see :mod:`attention_viz.analysis.knockout`).

    Raises:
        ValueError: a position out of range.
        AttentionError: the encoder's attention is not valid (:func:`~attention_viz.extraction.scratch_forward`).
    """
    if not 0 <= position < encoding.num_tokens:
        raise ValueError(f"position {position} is out of range 0-{encoding.num_tokens - 1}")
    hidden = scratch_forward(encoder, encoding, head_mask=head_mask, key_mask=key_mask).last_hidden_state  # (1, t, h)
    with torch.inference_mode():
        probabilities = torch.softmax(head.logits(hidden)[0, position].double(), -1)  # (vocab,)
    top = torch.topk(probabilities, k)
    chosen = top.indices.numpy()
    pieces = tuple(piece_text(tokenizer, i) for i in chosen.tolist())
    return Predictions(position, chosen, tuple(p.piece for p in pieces), top.values.numpy(), pieces)
