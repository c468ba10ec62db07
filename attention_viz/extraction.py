"""From text to attention weights: tokenisation with display labels, then pretrained or from-scratch attention.

Data preparation only; drawing lives in :mod:`attention_viz.figures`. Results are frozen dataclasses of
numpy arrays, so they pickle (for ``st.cache_data``) and go straight to pandas.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from attention_viz import settings
from attention_viz.encoder import BertEncoder, Variant
from attention_viz.loading import LoadedModel

ROW_SUM_TOLERANCE = 1e-4
SOURCES = ("pretrained", "scratch")


class InputError(ValueError):
    """The user's input cannot be encoded (for example, empty text); the message says what to do.

    Attributes:
        code: a stable id for the app's translated message: ``empty`` (nothing left after BERT's
            normaliser), ``too_long`` (more characters than the limit; fields ``which``, ``chars``,
            ``limit``), ``unknown_source``, ``unknown_variant``.
        fields: what the translated message needs.
    """

    def __init__(self, message: str, code: str = "invalid", **fields: object) -> None:
        super().__init__(message)
        self.code = code
        self.fields = fields


class AttentionError(RuntimeError):
    """A model returned no, or invalid, attention weights; the message says what to do."""


@dataclass(frozen=True)
class Encoding:
    """One input (a text or a sentence pair) as the model sees it; ``t`` tokens after truncation.

    Attributes:
        input_ids: ``(t,)`` int64 WordPiece ids, with [CLS]/[SEP].
        token_type_ids: ``(t,)`` int64 segment ids given to the model.
        tokens: ``t`` WordPiece tokens (``##`` marks a continuation piece).
        labels: ``t`` display labels: the characters the user typed for each piece (from the
            tokenizer's character offsets), ``##`` before a continuation piece, `` [UNK]`` after a
            piece the vocabulary does not know, and the token itself for [CLS]/[SEP].
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

    @property
    def num_tokens(self) -> int:
        """Tokens the model saw (``t``)."""
        return len(self.tokens)

    @property
    def is_pair(self) -> bool:
        return bool((self.segments == 1).any())


@dataclass(frozen=True)
class AttentionResult:
    """Attention weights of every layer and head for one input.

    Attributes:
        weights: float32 ``(layers, heads, query, key)``; ``weights[l, h, i]`` is the distribution of
            query token ``i``'s attention over the keys and sums to 1.
        encoding: the tokens, labels and segments the axes refer to.
        model_name: the model's name (:attr:`ModelInfo.name`).
        source: ``"pretrained"`` (transformers) or ``"scratch"`` (our encoder).
        variant: the from-scratch :class:`Variant` value; ``None`` for pretrained.
        seed: the seed of the ``random`` variant; ``None`` otherwise.
    """

    weights: np.ndarray
    encoding: Encoding
    model_name: str
    source: str
    variant: str | None = None
    seed: int | None = None

    def head(self, layer: int, head: int) -> np.ndarray:
        """One head's ``(query, key)`` matrix; raises IndexError naming the valid range."""
        layers, heads = self.weights.shape[:2]
        if not (0 <= layer < layers and 0 <= head < heads):
            raise IndexError(f"layer {layer}, head {head} out of range: layers 0-{layers - 1}, heads 0-{heads - 1}")
        return self.weights[layer, head]


def encode(
    tokenizer, text: str, pair: str | None = None, max_length: int = 512, limits: settings.Limits | None = None
) -> Encoding:
    """Tokenise a text or a sentence pair, cut to ``max_length`` tokens.

    Text that BERT's normaliser turns into nothing (zero-width spaces, byte-order marks, soft hyphens,
    control characters) is empty; such a second sentence means no pair, so the model is given exactly
    what is reported (case C20). Segment ids are asked for explicitly: tokenizers whose
    ``model_input_names`` leave them out would return none (case C19).

    Args:
        tokenizer: a fast (Rust-backed) transformers tokenizer: offsets and ``sequence_ids()`` are
            needed.
        text: sentence A.
        pair: sentence B, or ``None``/blank for a single text.
        max_length: the model's maximum positions; longer inputs are cut (``longest_first``).
        limits: characters and tokens accepted (default: :func:`attention_viz.settings.load`); the
            token limit is the smaller of ``limits.max_tokens`` and ``max_length``.

    Returns:
        :class:`Encoding`.

    Raises:
        InputError: if ``text`` is empty once normalised (code ``empty``), or a sentence has more
            characters than ``limits.max_chars`` (code ``too_long``).
    """
    limits = settings.load().limits if limits is None else limits
    for which, value in (("text", text), ("pair", pair)):
        if value and len(value) > limits.max_chars:
            raise InputError(
                f"the {'second sentence' if which == 'pair' else 'text'} has {len(value):,} characters; "
                f"the limit is {limits.max_chars:,}: shorten it",
                "too_long",
                which=which,
                chars=len(value),
                limit=limits.max_chars,
            )
    if not (text and text.strip()):
        raise InputError("the text is empty: type a sentence", "empty")
    pair = pair if pair and pair.strip() else None
    max_length = limits.tokens_for(max_length)

    def tokenize(pair: str | None, cut: bool):
        options = {"truncation": True, "max_length": max_length} if cut else {"truncation": False}
        return tokenizer(text, pair, return_offsets_mapping=True, return_token_type_ids=True, verbose=False, **options)

    # One call in the common case: the whole input, counted per sentence; a second only to cut it.
    enc = tokenize(pair, cut=False)
    a_tokens, b_tokens = enc.sequence_ids().count(0), enc.sequence_ids().count(1)
    if not a_tokens:
        raise InputError("the text is empty: type a sentence", "empty")
    if pair is not None and not b_tokens:  # BERT's normaliser left nothing of it: no pair (C20)
        pair = None
        enc = tokenize(None, cut=False)
    num_input_tokens = len(enc["input_ids"])
    if num_input_tokens > max_length:
        enc = tokenize(pair, cut=True)
    sequence_ids = enc.sequence_ids()
    special = np.array([s is None for s in sequence_ids])
    kept = (sequence_ids.count(0), sequence_ids.count(1))
    tokens = tuple(tokenizer.convert_ids_to_tokens(enc["input_ids"]))
    return Encoding(
        input_ids=np.asarray(enc["input_ids"], dtype=np.int64),
        token_type_ids=np.asarray(enc["token_type_ids"], dtype=np.int64),
        tokens=tokens,
        labels=_labels(enc, tokens, (text, pair), tokenizer.unk_token),
        word_ids=_word_ids(enc.word_ids(), sequence_ids),
        segments=_segments(sequence_ids),
        special=special,
        num_input_tokens=num_input_tokens,
        truncated=num_input_tokens > len(enc["input_ids"]),
        cut=(a_tokens - kept[0], b_tokens - kept[1]),
    )


def _segments(sequence_ids: list[int | None]) -> np.ndarray:
    segments, current = [], 0
    for sequence_id in sequence_ids:
        current = current if sequence_id is None else sequence_id
        segments.append(current)
    return np.asarray(segments, dtype=np.int64)


def _word_ids(word_ids: list[int | None], sequence_ids: list[int | None]) -> np.ndarray:
    """Word indices counted across both sentences (the tokenizer restarts them at sentence B)."""
    pairs = list(zip(word_ids, sequence_ids, strict=True))
    a_words = 1 + max((w for w, s in pairs if s == 0 and w is not None), default=-1)
    shifted = [-1 if w is None else w + (a_words if s == 1 else 0) for w, s in pairs]
    return np.asarray(shifted, dtype=np.int64)


def _labels(enc, tokens: tuple[str, ...], texts: tuple[str, str | None], unk_token: str) -> tuple[str, ...]:
    pieces = zip(tokens, enc["offset_mapping"], enc.sequence_ids(), enc.word_ids(), strict=True)
    labels, previous_word = [], None
    for token, (start, end), s, w in pieces:
        typed = texts[s][start:end] if s is not None else ""
        label = typed or token
        if typed and token == unk_token:
            label = f"{typed} {token}"  # the model saw [UNK], not what was typed
        if s is not None and (s, w) == previous_word:
            label = "##" + label
        labels.append(label)
        previous_word = None if s is None else (s, w)
    return tuple(labels)


def _model_inputs(encoding: Encoding) -> dict[str, torch.Tensor]:
    return {
        "input_ids": torch.tensor(encoding.input_ids)[None],  # (1, t)
        "token_type_ids": torch.tensor(encoding.token_type_ids)[None],  # (1, t)
        "attention_mask": torch.ones(1, encoding.num_tokens, dtype=torch.int64),  # (1, t)
    }


_NO_WEIGHTS = (
    "this model returned no attention weights: load it with attn_implementation='eager' "
    "(SDPA and flash attention do not return them)"
)


class _SoftmaxInto(TorchFunctionMode):
    """While one self-attention module runs, in this thread only: its softmax writes the attention
    probabilities straight into the result (``torch.softmax(..., out=)``, the same kernel), instead of into
    a temporary that is then copied. At 512 tokens that is 75 MB written once instead of three times
    (issue 10, figure #1: about 15 ms of a 200 ms forward). Any other call, and a softmax that does not
    fit ``out`` (another shape, dtype or dim), runs unchanged."""

    def __init__(self, out: torch.Tensor) -> None:
        super().__init__()
        self.out = out  # (1, heads, t, t) view of one layer of the result
        self.used = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.softmax and not self.used:
            scores, dim = args[0], kwargs.get("dim", args[1] if len(args) > 1 else None)
            fits = scores.shape == self.out.shape and scores.dtype == self.out.dtype
            if fits and dim in (-1, scores.dim() - 1) and kwargs.get("dtype") is None:
                self.used = True
                return torch.softmax(scores, -1, out=self.out)
        return func(*args, **kwargs)


class _LayerChecker:
    """Checks one layer's attention after another and writes them into one ``(layers, heads, t, t)`` array.

    Each layer is checked as it arrives (in torch, on both cores). A layer computed by :class:`_SoftmaxInto`
    is already in place; any other is copied once into the numpy array, which numpy allocates with
    transparent huge pages (half the cost of ``torch.cat``, measured at 512 tokens: 17 vs 40 ms).
    """

    def __init__(self, num_layers: int, num_heads: int, num_tokens: int) -> None:
        self.expected = (1, num_heads, num_tokens, num_tokens)
        self.weights = np.empty((num_layers, num_heads, num_tokens, num_tokens), dtype=np.float32)
        self.count = 0
        self._mode: _SoftmaxInto | None = None

    def enter(self) -> None:
        """Before a self-attention module runs: its softmax writes into the next layer's place."""
        self.leave()
        if self.count < len(self.weights):
            self._mode = _SoftmaxInto(torch.from_numpy(self.weights[self.count])[None])
            self._mode.__enter__()

    def leave(self) -> None:
        """After it (or after a failed forward): nothing is intercepted any more."""
        if self._mode is not None:
            mode, self._mode = self._mode, None
            mode.__exit__(None, None, None)

    def add(self, tensor: torch.Tensor | None) -> None:
        layer = self.count
        if tensor is None:
            raise AttentionError(_NO_WEIGHTS)
        if layer >= len(self.weights):
            raise AttentionError(f"expected attention from {len(self.weights)} layers, got more")
        if tuple(tensor.shape) != self.expected:
            raise AttentionError(f"layer {layer} attention has shape {tuple(tensor.shape)}, expected {self.expected}")
        rows = tensor[0].float()  # (h, t, t)
        worst = float((rows.sum(-1) - 1).abs().max())  # NaN when a value is NaN or infinite
        if not worst <= ROW_SUM_TOLERANCE:
            if not bool(torch.isfinite(rows).all()):
                raise AttentionError("attention weights contain NaN or infinity")
            computed_in = str(tensor.dtype).removeprefix("torch.")
            if computed_in not in {"float32", "float64"}:  # the real cause, not a guess about dropout (C18)
                raise AttentionError(
                    f"attention rows do not sum to 1 (off by {worst:.2g}): the model runs in {computed_in}; "
                    "load it in float32 (attention_viz.load_model does)"
                )
            raise AttentionError(
                f"attention rows do not sum to 1 (off by {worst:.2g}): is the model in eval mode, without dropout?"
            )
        place = torch.from_numpy(self.weights[layer])
        if (rows.data_ptr(), rows.stride()) != (place.data_ptr(), place.stride()):  # not computed in place
            place.copy_(rows)
        self.count += 1

    def result(self) -> np.ndarray:
        if self.count != len(self.weights):
            raise AttentionError(f"expected attention from {len(self.weights)} layers, got {self.count}")
        return self.weights


def validate_attentions(attentions, num_layers: int, num_heads: int, num_tokens: int) -> np.ndarray:
    """Check a model's attentions and stack them as float32 ``(layers, heads, query, key)``.

    Args:
        attentions: ``outputs.attentions``: one ``(1, heads, t, t)`` tensor per layer.
        num_layers, num_heads, num_tokens: what the model and input should give.

    Raises:
        AttentionError: if there are none (SDPA or flash attention), the count or a shape is wrong,
            a value is not finite, or a row does not sum to 1 within ``ROW_SUM_TOLERANCE``.
    """
    if not attentions:
        raise AttentionError(_NO_WEIGHTS)
    if len(attentions) != num_layers:
        raise AttentionError(f"expected attention from {num_layers} layers, got {len(attentions)}")
    checker = _LayerChecker(num_layers, num_heads, num_tokens)
    for tensor in attentions:
        checker.add(tensor)
    return checker.result()


class _LastLayerSeen(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by the last self-attention's hook: nothing after it changes an attention weight."""


# The forward being collected in this thread (or task): a model is shared by every session of the app, and
# a hook on it fires in every thread's forward, so each forward finds its own collector here.
_COLLECTOR: ContextVar[_LayerChecker | None] = ContextVar("attention_viz_collector", default=None)
_HOOKS = "_attention_viz_hooks"  # on each hooked module: (_collect, its two hook handles)
_install = threading.Lock()


def _place(module, inputs) -> None:
    checker = _COLLECTOR.get()
    if checker is not None:  # else a forward that nobody collects (e.g. a batch with output_attentions=True)
        checker.enter()


def _collect(module, inputs, output) -> None:
    checker = _COLLECTOR.get()
    if checker is None:
        return
    checker.leave()
    checker.add(output[1] if isinstance(output, tuple) and len(output) > 1 else None)
    if checker.count == len(checker.weights):
        raise _LastLayerSeen


def _hooked_self_attentions(model) -> list | None:
    """The self-attention module of every layer (``encoder.layer[i].attention.self`` in BERT), each with
    :func:`_place` as a forward pre-hook and :func:`_collect` as a forward hook (installed once per module);
    None for a model of another structure."""
    layers = getattr(getattr(getattr(model, "base_model", model), "encoder", None), "layer", None)
    modules = [getattr(getattr(layer, "attention", None), "self", None) for layer in layers or ()]
    if not modules or any(module is None for module in modules):
        return None
    with _install:
        for module in modules:
            installed = getattr(module, _HOOKS, None)
            if installed is not None and installed[0] is _collect:
                continue
            if installed is not None:  # hooks of an earlier copy of this module (a developer's reload): they
                for handle in installed[1]:  # would collect into that copy's _COLLECTOR, which nobody sets
                    handle.remove()
            handles = (module.register_forward_pre_hook(_place), module.register_forward_hook(_collect))
            setattr(module, _HOOKS, (_collect, handles))
    return modules


def pretrained_attention(model, encoding: Encoding) -> np.ndarray:
    """Attention of a transformers BERT for one encoded input.

    The weights are transformers' own (its eager attention), taken from each layer's self-attention
    module by forward hooks as the layer computes them: its softmax writes straight into the result
    (:class:`_SoftmaxInto`), and the hook after it checks the rows. The forward stops after the last layer's
    attention: its feed-forward block, the pooler and the last hidden state change no weight, and
    skipping them saves about a fifth of the forward at 512 tokens. A model of another structure is
    run whole with ``output_attentions=True``. Safe to call from several threads on one model.

    Returns:
        float32 ``(layers, heads, query, key)``.

    Raises:
        AttentionError: see :func:`validate_attentions`.
    """
    config = model.config
    layers, heads = config.num_hidden_layers, config.num_attention_heads
    modules = _hooked_self_attentions(model)
    if modules is None or len(modules) != layers:
        with torch.inference_mode():
            outputs = model(**_model_inputs(encoding), output_attentions=True)
        return validate_attentions(getattr(outputs, "attentions", None), layers, heads, encoding.num_tokens)
    checker = _LayerChecker(layers, heads, encoding.num_tokens)
    token = _COLLECTOR.set(checker)
    try:
        with torch.inference_mode():
            model(**_model_inputs(encoding))
    except _LastLayerSeen:
        pass
    finally:
        checker.leave()  # a forward that failed inside a self-attention module leaves nothing intercepting
        _COLLECTOR.reset(token)
    return checker.result()


def scratch_attention(encoder: BertEncoder, encoding: Encoding, scaling: float | None = None) -> np.ndarray:
    """Attention of our from-scratch encoder for one encoded input.

    Returns:
        float32 ``(layers, heads, query, key)``.
    """
    inputs = _model_inputs(encoding)
    with torch.inference_mode():
        output = encoder(inputs["input_ids"], inputs["token_type_ids"], inputs["attention_mask"], scaling)
    config = encoder.config
    return validate_attentions(
        output.attentions, config.num_hidden_layers, config.num_attention_heads, encoding.num_tokens
    )


def extract(
    loaded: LoadedModel,
    text: str,
    pair: str | None = None,
    source: str = "pretrained",
    variant: str | Variant = Variant.EXACT,
    seed: int = 0,
    limits: settings.Limits | None = None,
) -> AttentionResult:
    """Attention of every layer and head for a text or a sentence pair.

    Args:
        loaded: from :func:`attention_viz.loading.load_model`.
        text: sentence A.
        pair: sentence B, or ``None``.
        source: ``"pretrained"`` (transformers' model) or ``"scratch"`` (our encoder).
        variant: for ``"scratch"``: a :class:`Variant` or its value.
        seed: for the ``random`` variant.
        limits: characters and tokens accepted (default: from the environment, see
            :mod:`attention_viz.settings`).

    Returns:
        :class:`AttentionResult`.

    Raises:
        InputError: empty text, an unknown source or variant.
        AttentionError: the model gave no or invalid attention weights.
    """
    if source not in SOURCES:
        raise InputError(f"unknown source {source!r}: choose one of {', '.join(SOURCES)}", "unknown_source")
    encoding = encode(loaded.tokenizer, text, pair, loaded.info.max_positions, limits)
    if source == "pretrained":
        weights = pretrained_attention(loaded.model, encoding)
        return AttentionResult(weights, encoding, loaded.info.name, source)
    try:
        variant = Variant(variant)
    except ValueError:
        choices = ", ".join(v.value for v in Variant)
        raise InputError(f"unknown variant {variant!r}: choose one of {choices}", "unknown_variant") from None
    encoder = BertEncoder.random(loaded.encoder.config, seed) if variant is Variant.RANDOM else loaded.encoder
    weights = scratch_attention(encoder, encoding, variant.scaling(loaded.info.hidden_size))
    return AttentionResult(
        weights, encoding, loaded.info.name, source, variant.value, seed if variant is Variant.RANDOM else None
    )
