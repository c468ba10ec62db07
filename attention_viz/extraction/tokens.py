"""Tokenisation with display labels: text (or a sentence pair) to the :class:`Encoding` a model is given.

Labels are the characters the user typed for each piece (from the tokenizer's offsets), so a map's axes
read as the sentence does, whatever the tokenizer (WordPiece, byte-level BPE, SentencePiece). Results are
frozen dataclasses of numpy arrays: they pickle (for ``st.cache_data``) and go straight to pandas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attention_viz import settings
from attention_viz.errors import CodedError


class InputError(CodedError, ValueError):
    """The user's input cannot be encoded (for example, empty text); the message says what to do.

    Attributes:
        code: a stable id for the app's translated message: ``empty`` (nothing left after BERT's
            normaliser), ``too_long`` (more characters than the limit; fields ``which``, ``chars``,
            ``limit``), ``unknown_source``, ``unknown_variant``.
        fields: what the translated message needs.
    """

    default_code = "invalid"


@dataclass(frozen=True)
class Encoding:
    """One input (a text or a sentence pair) as the model sees it; ``t`` tokens after truncation.

    Attributes:
        input_ids: ``(t,)`` int64 token ids, with the family's special tokens ([CLS]/[SEP], <s>/</s>).
        token_type_ids: ``(t,)`` int64 segment ids from the tokenizer (a family without token types,
            such as DistilBERT or GPT-2, is not given them).
        tokens: ``t`` tokens as the tokenizer writes them (WordPiece ``##``, byte-level ``Ġ``,
            SentencePiece ``▁``).
        labels: ``t`` display labels without tokenizer markers: the characters the user typed for each
            piece (from the tokenizer's character offsets), ``##`` before a piece that continues a
            word (for every tokenizer kind), `` [UNK]`` after a piece the vocabulary does not know,
            ``␣``/``⏎`` for a token that stands for whitespace, and the token itself for special
            tokens (see :func:`_labels`).
        word_ids: ``(t,)`` int64 index of the word each token belongs to, counted across both
            sentences of a pair; -1 for special tokens.
        segments: ``(t,)`` int64, 0 for sentence A and 1 for sentence B, from the tokenizer's
            ``sequence_ids()``; a special token takes the segment of the text before it (so [CLS] and
            the first [SEP] are A, the last [SEP] of a pair is B), as BERT's token types do.
        special: ``(t,)`` bool, True for tokens the tokenizer added ([CLS], [SEP]).
        num_input_tokens: tokens the input had before truncation.
        truncated: whether the input was cut to the model's maximum length.
        cut: tokens cut from sentence A and from sentence B (``longest_first``: the longer one loses
            tokens first); ``(0, 0)`` when nothing was cut.
        words: the typed text of each word, ``words[word_ids[i]]`` for token ``i`` (each character
            once, even where several pieces share it); empty for a word of whitespace only, and ``()``
            for an encoding made without them.
        one_segment: a sentence pair given to a model with one token type (``type_vocab_size=1``): both
            sentences get token type 0, as such models read a pair (``segments`` still tell them apart).
    """

    input_ids: np.ndarray
    token_type_ids: np.ndarray
    tokens: tuple[str, ...]
    labels: tuple[str, ...]
    word_ids: np.ndarray
    segments: np.ndarray
    special: np.ndarray
    num_input_tokens: int
    truncated: bool
    cut: tuple[int, int] = (0, 0)
    words: tuple[str, ...] = ()
    one_segment: bool = False

    @property
    def num_tokens(self) -> int:
        """Tokens the model saw (``t``)."""
        return len(self.tokens)

    @property
    def is_pair(self) -> bool:
        return bool((self.segments == 1).any())


# What a message calls each text whose length is checked (the ``which`` of code ``too_long``)
TEXT_NAMES = {"text": "text", "pair": "second sentence", "source": "source text", "target": "target text"}


def check_length(
    text: str | None, pair: str | None, limits: settings.Limits, names: tuple[str, str] = ("text", "pair")
) -> None:
    """Refuse a sentence longer than ``limits.max_chars`` characters, without tokenising it.

    Cheap enough to run before a long text is hashed or tokenised: a 1 MB paste costs only the message.
    ``names``: what the two texts are (keys of :data:`TEXT_NAMES`): ``("source", "target")`` for an
    encoder–decoder's two texts.

    Raises:
        InputError: code ``too_long``, with fields ``which`` (a name from ``names``), ``chars`` and ``limit``.
    """
    for which, value in zip(names, (text, pair), strict=True):
        if value and len(value) > limits.max_chars:
            raise InputError(
                f"the {TEXT_NAMES[which]} has {len(value):,} characters; the limit is {limits.max_chars:,}: shorten it",
                "too_long",
                which=which,
                chars=len(value),
                limit=limits.max_chars,
            )


def encode(
    tokenizer,
    text: str,
    pair: str | None = None,
    max_length: int = 512,
    limits: settings.Limits | None = None,
    type_vocab_size: int = 2,
) -> Encoding:
    """Tokenise a text or a sentence pair, cut to ``max_length`` tokens.

    Text that BERT's normaliser turns into nothing (zero-width spaces, byte-order marks, soft hyphens,
    control characters) is empty; such a second sentence means no pair, so the model is given exactly
    what is reported. Segment ids are asked for explicitly: tokenizers whose
    ``model_input_names`` leave them out would return none.

    Args:
        tokenizer: a fast (Rust-backed) transformers tokenizer: offsets and ``sequence_ids()`` are
            needed.
        text: sentence A.
        pair: sentence B, or ``None``/blank for a single text.
        max_length: the model's maximum positions; longer inputs are cut (``longest_first``).
        limits: characters and tokens accepted (default: :class:`~attention_viz.settings.Limits`' defaults); the
            token limit is the smaller of ``limits.max_tokens`` and ``max_length``.
        type_vocab_size: the model's token types (``config.type_vocab_size``); with one, a pair's
            sentence B gets type 0 too (:attr:`Encoding.one_segment`) instead of an index the model lacks.

    Returns:
        :class:`Encoding`.

    Raises:
        InputError: if ``text`` is empty once normalised (code ``empty``), a sentence has more
            characters than ``limits.max_chars`` (code ``too_long``), or a pair is given to a tokenizer
            without a separator token, as a decoder's (code ``pair_unsupported``).
    """
    limits = settings.Limits() if limits is None else limits
    check_length(text, pair, limits)
    if not (text and text.strip()):
        raise InputError("the text is empty: type a sentence", "empty")
    pair = pair if pair and pair.strip() else None
    if pair is not None and tokenizer.sep_token is None:
        raise InputError(
            "this model reads one text, not a sentence pair (a decoder such as GPT-2 has no separator token): "
            "leave the second sentence empty, or join the two sentences into one text",
            "pair_unsupported",
        )
    max_length = limits.tokens_for(max_length)

    def tokenize(pair: str | None, cut: bool):
        options = {"truncation": True, "max_length": max_length} if cut else {"truncation": False}
        return tokenizer(text, pair, return_offsets_mapping=True, return_token_type_ids=True, verbose=False, **options)

    # One call in the common case: the whole input, counted per sentence; a second only to cut it.
    enc = tokenize(pair, cut=False)
    a_tokens, b_tokens = enc.sequence_ids().count(0), enc.sequence_ids().count(1)
    if not a_tokens:
        raise InputError("the text is empty: type a sentence", "empty")
    if pair is not None and not b_tokens:  # BERT's normaliser left nothing of it: no pair
        pair = None
        enc = tokenize(None, cut=False)
    num_input_tokens = len(enc["input_ids"])
    if num_input_tokens > max_length:
        enc = tokenize(pair, cut=True)
    sequence_ids = enc.sequence_ids()
    special = np.array([s is None for s in sequence_ids])
    kept = (sequence_ids.count(0), sequence_ids.count(1))
    tokens = tuple(tokenizer.convert_ids_to_tokens(enc["input_ids"]))
    word_ids = _word_ids(enc.word_ids(), sequence_ids)
    labels, words = _labels(tokenizer, enc, tokens, (text, pair), word_ids)
    token_type_ids = np.asarray(enc["token_type_ids"], dtype=np.int64)
    one_segment = bool(0 < type_vocab_size <= token_type_ids.max(initial=0))
    return Encoding(
        input_ids=np.asarray(enc["input_ids"], dtype=np.int64),
        token_type_ids=model_token_types(token_type_ids, type_vocab_size),
        tokens=tokens,
        labels=labels,
        word_ids=word_ids,
        segments=segments_of(sequence_ids),
        special=special,
        num_input_tokens=num_input_tokens,
        truncated=num_input_tokens > len(enc["input_ids"]),
        cut=(a_tokens - kept[0], b_tokens - kept[1]),
        words=words,
        one_segment=one_segment,
    )


def segments_of(sequence_ids: list[int | None]) -> np.ndarray:
    """``(t,)`` int64 segments from a tokenizer's ``sequence_ids()``: 0 for sentence A, 1 for B, and a special
    token that of the text before it (see :attr:`Encoding.segments`)."""
    segments, current = [], 0
    for sequence_id in sequence_ids:
        current = current if sequence_id is None else sequence_id
        segments.append(current)
    return np.asarray(segments, dtype=np.int64)


def model_token_types(token_type_ids: np.ndarray, type_vocab_size: int) -> np.ndarray:
    """The tokenizer's ``(t,)`` token types as the model takes them: with one token type (or none), sentence B
    gets type 0 too (see :attr:`Encoding.one_segment`)."""
    return np.minimum(token_type_ids, max(type_vocab_size, 1) - 1)


def _word_ids(word_ids: list[int | None], sequence_ids: list[int | None]) -> np.ndarray:
    """Word indices counted across both sentences (the tokenizer restarts them at sentence B)."""
    pairs = list(zip(word_ids, sequence_ids, strict=True))
    a_words = 1 + max((w for w, s in pairs if s == 0 and w is not None), default=-1)
    shifted = [-1 if w is None else w + (a_words if s == 1 else 0) for w, s in pairs]
    return np.asarray(shifted, dtype=np.int64)


def _visible_char(c: str) -> str:
    """How one character is drawn in a label: whitespace and control characters get a visible mark."""
    code = ord(c)
    if c in _LINE_MARKS:
        return _LINE_MARKS[c]
    if code < 0x20:  # other C0 controls (bell, escape, ...): their Unicode control picture (U+2400 block)
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0x80 <= code <= 0x9F:  # C1 controls (NEL, ...) have no control picture
        return f"\\x{code:02x}"
    if c.isspace():  # no-break space, the Unicode spaces (U+2000-U+200A, U+3000, ...), line and paragraph separators
        return "␣"
    return c


_LINE_MARKS = {"\n": "⏎", "\r": "", "\t": "⇥"}


def visible(text: str) -> str:
    """``text`` with every control character drawn visibly: a C0 control as its Unicode control picture
    (bell ``\\x07`` as ``␇``, escape as ``␛``), DEL as ``␡``, a C1 control as ``\\x85``, a line break as ``⏎``, a
    tab as ``⇥`` and a space other than U+0020 (no-break, ideographic, ...) as ``␣``. Labels and words then never
    hold a character a font draws as an empty box, or one that SVG (and so a chart's PNG export) refuses."""
    if text.isprintable():
        return text
    return "".join(c if c == " " else _visible_char(c) for c in text)


def whitespace_label(text: str) -> str:
    """A visible label for a token that stands for whitespace only: ``␣`` per space (any Unicode space, the
    no-break space too), ``⏎`` per line break, ``⇥`` per tab, a control picture per other control character
    (:func:`visible`); ``␣`` for a marker with no text of its own (SentencePiece's lone ``▁``)."""
    shown = "".join(_visible_char(c) for c in text)
    return shown or "␣"


def _stands_for_space(tokenizer, token: str) -> str | None:
    """The text a token decodes to when that is whitespace only (``Ġ``, ``Ċ``, ``▁``); None otherwise.

    Such a token can carry the offsets of the character after it (SentencePiece puts ``▁`` on the next
    word's first character), so its label comes from what it decodes to, not from its offsets.
    """
    text = tokenizer.convert_tokens_to_string([token])  # ~1 µs a token
    return text if not text.strip() else None


def _decoded(tokenizer, token: str) -> str:
    """A piece with no typed characters of its own, as text (never a byte-level glyph such as ``Ġ``)."""
    text = visible(tokenizer.convert_tokens_to_string([token]).strip())
    return text if text and "\ufffd" not in text else token


def _labels(
    tokenizer, enc, tokens: tuple[str, ...], texts: tuple[str, str | None], word_ids: np.ndarray
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(labels, words)``: one label per token, and the typed text of each word (``words[word_ids[i]]``).

    The label is what the user typed for the piece (its character offsets, surrounding whitespace
    stripped), so no tokenizer marker shows: no ``Ġ`` (byte-level BPE), no ``▁`` (SentencePiece), no
    byte pieces. A piece that continues a word is written ``##`` + its text, as BERT writes WordPiece
    pieces, for every tokenizer kind (from the word ids, not from the token). Pieces that share one
    character (the bytes of a character byte-level BPE splits, or a character NFD splits) each show
    that character; the word has it once. A token that stands for whitespace is ``␣`` / ``⏎``.
    Special tokens show as the model names them (``[CLS]``, ``<s>``, ``</s>``); an unknown piece shows
    what was typed and the unknown token (``你 [UNK]``).
    """
    unk = tokenizer.unk_token
    words = [""] * (int(word_ids.max(initial=-1)) + 1)
    labels, previous_word, covered = [], None, {0: 0, 1: 0}
    for token, (start, end), s, w in zip(tokens, enc["offset_mapping"], enc.sequence_ids(), word_ids, strict=True):
        if s is None:
            labels.append(token)
            previous_word = None
            continue
        typed = texts[s][start:end]
        space = _stands_for_space(tokenizer, token)
        if space is not None:  # a marker for whitespace: it claims no typed character
            labels.append(whitespace_label(typed if typed.isspace() else space))
            continue
        if typed and not typed.strip():  # a byte piece of a no-break or other Unicode space: no byte glyph
            covered[s] = max(covered[s], end)
            labels.append(whitespace_label(typed))
            continue
        if typed == token and token in tokenizer.all_special_tokens:  # a special token typed as text
            labels.append(token)
            previous_word = None
            continue
        new = visible(texts[s][max(start, covered[s]) : end].strip())  # characters no earlier piece showed
        covered[s] = max(covered[s], end)
        label = new or visible(typed.strip()) or _decoded(tokenizer, token)
        if token == unk:  # the model saw the unknown token, not what was typed
            label, new = f"{label} {token}", f"{new} {token}" if new else new
        if w >= 0:
            words[w] += new
        labels.append("##" + label if w >= 0 and w == previous_word else label)
        previous_word = w
    return tuple(labels), tuple(words)
