"""Attention of generated tokens: a decoder (GPT-2, the Llama-style families) continues a prompt greedily, and the
maps cover the prompt and what it wrote.

The token ids come from transformers' ``generate(do_sample=False, num_beams=1)`` on the checkpoint's causal-LM
model (the checkpoint's other generation settings, such as an end token, still apply); the maps come from one
forward of the whole sequence, prompt and generated tokens, through our from-scratch model (or the pretrained
one). In a causal decoder no row changes when a later token is appended, so row ``i`` of that forward is the
attention of the step that wrote token ``i + 1``: every step's maps at once. Encoder–decoders (T5, BART):
:func:`attention_viz.extraction.seq2seq.generate_seq2seq`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attention_viz import settings
from attention_viz.errors import CodedError
from attention_viz.extraction.forward import model_inputs
from attention_viz.extraction.results import AttentionResult, extract_encoded
from attention_viz.extraction.tokens import Encoding, InputError, encode
from attention_viz.models.lm_head import byte_label, piece_text, unknown_id_label
from attention_viz.models.loading import LoadedModel, ModelInfo

DEFAULT_NEW_TOKENS = 20


class GenerationError(CodedError, RuntimeError):
    """A model cannot generate here; the message says why and :attr:`code` names the case: ``not_decoder``,
    ``no_lm_head`` (saved without its language-model head) or ``unreadable`` (its files cannot be read)."""

    default_code = "unreadable"


@dataclass(frozen=True)
class GeneratedAttention:
    """Attention over a prompt and the tokens a model generated after it.

    Attributes:
        result: the maps, float32 ``(layers, heads, n, n)`` for the ``n`` tokens of prompt and continuation,
            with their :class:`~attention_viz.extraction.Encoding` (``result.encoding``).
        generated: ``(n,)`` bool, True for each token the model wrote (the prompt's are False).
    """

    result: AttentionResult
    generated: np.ndarray

    @property
    def num_prompt_tokens(self) -> int:
        """Tokens of the prompt, special tokens included (the generated ones follow them)."""
        return int((~self.generated).sum())


def token_label(tokenizer, token_id: int) -> str:
    """A display label for a token the model wrote (no typed text to take it from), as input tokens' labels
    read: what it decodes to, without tokenizer markers (:func:`~attention_viz.models.lm_head.piece_text`),
    ``##`` before a piece that continues a word, ``␣``/``⏎`` for whitespace, ``byte 0xC4`` for a byte that is
    no whole character, a special token as the model names it, and ``id 151700`` for an id the tokenizer has
    no piece for (the model's vocabulary is larger than its tokenizer's)."""
    piece = piece_text(tokenizer, token_id)
    if piece.special:
        return piece.piece
    text = " + ".join(byte_label(part) if isinstance(part, bytes) else part for part in piece.parts)
    if not text:  # a lone word-start marker (SentencePiece's ▁, byte-level Ġ)
        return "␣"
    return text if piece.new_word else "##" + text


def extend_encoding(encoding: Encoding, tokenizer, ids: list[int], mark: str = "") -> Encoding:
    """``encoding`` followed by the tokens ``ids`` (generated: no typed words, one segment, token type 0), the
    label of each new one followed by ``mark`` (the app's ✎).

    Returns:
        An :class:`Encoding` of ``encoding.num_tokens + len(ids)`` tokens; the new ones have word id -1 and
        are special only when the tokenizer says so (an end token).
    """
    pieces = tokenizer.convert_ids_to_tokens(ids)  # None for an id past the tokenizer's vocabulary
    tokens = tuple(unknown_id_label(i) if piece is None else piece for i, piece in zip(ids, pieces, strict=True))
    specials = set(tokenizer.all_special_ids)
    new = len(ids)
    return Encoding(
        input_ids=np.concatenate([encoding.input_ids, np.asarray(ids, dtype=np.int64)]),
        token_type_ids=np.zeros(encoding.num_tokens + new, dtype=np.int64),
        tokens=encoding.tokens + tokens,
        labels=encoding.labels + tuple(token_label(tokenizer, i) + mark for i in ids),
        word_ids=np.concatenate([encoding.word_ids, np.full(new, -1, dtype=np.int64)]),
        segments=np.zeros(encoding.num_tokens + new, dtype=np.int64),
        special=np.concatenate([encoding.special, np.asarray([i in specials for i in ids], dtype=bool)]),
        num_input_tokens=encoding.num_input_tokens,
        truncated=encoding.truncated,
        cut=encoding.cut,
        words=encoding.words,
    )


def greedy_ids(model, inputs: dict[str, torch.Tensor], max_new_tokens: int, **options) -> torch.Tensor:
    """Token ids from transformers' ``generate`` with ``do_sample=False, num_beams=1`` (greedy), up to
    ``max_new_tokens`` new ones; ``inputs`` and ``options`` go to ``generate`` as they are.

    Returns:
        ``(1, n)``: for a decoder, the prompt then the new tokens; for an encoder–decoder, the decoder's
        sequence from its start token.
    """
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # notes about unused sampling settings in the checkpoint's defaults
    try:
        with torch.inference_mode():
            return model.generate(**inputs, do_sample=False, num_beams=1, max_new_tokens=max_new_tokens, **options)
    finally:
        hf_logging.set_verbosity(verbosity)


def load_generator(info: ModelInfo):
    """The causal-LM model (``AutoModelForCausalLM``, eval mode, eager attention, float32, local files and
    safetensors only, no remote code) of the checkpoint a decoder's :class:`ModelInfo` was loaded from.

    Raises:
        GenerationError: not a decoder, or a checkpoint saved without its LM head (transformers would draw the
            head at random); the message says which.
    """
    if not info.causal:
        raise GenerationError(
            f"{info.name!r} is not a decoder ({info.family_name}): it does not generate text", "not_decoder"
        )
    from transformers import AutoModelForCausalLM

    from attention_viz.models.lm_head import read_lm_model

    try:
        model, missing = read_lm_model(info, AutoModelForCausalLM)
    except OSError as exc:
        raise GenerationError(str(exc)) from exc
    if missing:
        raise GenerationError(
            f"{info.name!r} was saved without its language-model head "
            f"({sorted(missing)[0]} is missing): it cannot generate",
            "no_lm_head",
        )
    return model.eval()


def generate_decoder(
    loaded: LoadedModel,
    prompt: str,
    max_new_tokens: int = DEFAULT_NEW_TOKENS,
    source: str = "scratch",
    generator=None,
    limits: settings.Limits | None = None,
) -> GeneratedAttention:
    """Continue ``prompt`` greedily with a decoder and return the maps over prompt and continuation.

    Args:
        loaded: a decoder (GPT-2, Llama, Qwen2, Qwen3, Mistral, Gemma 2) from
            :func:`~attention_viz.models.loading.load_model`.
        prompt: the text to continue.
        max_new_tokens: at most this many new tokens (fewer when the model writes its end token, or the
            position table ends).
        source: ``"scratch"`` (our from-scratch decoder; the default) or ``"pretrained"`` (transformers).
        generator: the checkpoint's causal-LM model (:func:`load_generator`), loaded here when ``None``.
        limits: as for :func:`~attention_viz.extraction.extract`.

    Returns:
        :class:`GeneratedAttention`: maps ``(layers, heads, n, n)`` over the ``n`` tokens, equal to one forward
        of the whole sequence.

    Raises:
        InputError: an empty or too long prompt, ``max_new_tokens`` below 1, or no position left to generate
            into (code ``no_room``).
        GenerationError: the model does not generate (see :func:`load_generator`).
    """
    if max_new_tokens < 1:
        raise InputError(f"max_new_tokens must be at least 1, not {max_new_tokens}", "invalid")
    generator = load_generator(loaded.info) if generator is None else generator
    encoding = encode(loaded.tokenizer, prompt, None, loaded.info.max_positions, limits, 0)
    new_ids = continuation(loaded, encoding, max_new_tokens, generator)
    full = extend_encoding(encoding, loaded.tokenizer, new_ids)
    generated = np.arange(full.num_tokens) >= encoding.num_tokens
    return GeneratedAttention(extract_encoded(loaded, full, source), generated)


def continuation(loaded: LoadedModel, encoding: Encoding, max_new_tokens: int, generator) -> list[int]:
    """The token ids a decoder writes greedily after ``encoding`` (:func:`greedy_ids`), at most
    ``max_new_tokens`` of them and no more than the positions left; fewer when it writes its end token.

    Args:
        loaded: the decoder ``encoding`` was made for.
        encoding: the prompt, ``t`` tokens (one text, no pair).
        max_new_tokens: at least 1.
        generator: the checkpoint's causal-LM model (:func:`load_generator`).

    Returns:
        The new ids, in order (the prompt's are not repeated).

    Raises:
        InputError: ``max_new_tokens`` below 1, or the prompt fills every position (code ``no_room``).
    """
    if max_new_tokens < 1:
        raise InputError(f"max_new_tokens must be at least 1, not {max_new_tokens}", "invalid")
    room = loaded.info.max_positions - encoding.num_tokens
    if room < 1:
        raise InputError(
            f"the prompt fills all {loaded.info.max_positions} positions: shorten it to leave room to generate",
            "no_room",
            positions=loaded.info.max_positions,
        )
    inputs = model_inputs(encoding)  # (1, t) each
    end = loaded.tokenizer.eos_token_id
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else end
    sequence = greedy_ids(
        generator,
        {"input_ids": inputs["input_ids"], "attention_mask": inputs["attention_mask"]},  # a decoder: no token types
        min(max_new_tokens, room),
        pad_token_id=pad,
    )  # (1, t + new)
    return sequence[0, encoding.num_tokens :].tolist()
