"""Capturing a transformers model's attention weights as it computes them.

Forward hooks on each self-attention module check every layer's weights as they arrive and write them into
one ``(layers, heads, query, key)`` array; while a module runs, its softmax writes straight into that array
(:class:`_SoftmaxInto`). A ContextVar tells each forward which collector is its own, since one model is
shared by every session of the app.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from attention_viz.extraction.tokens import Encoding, model_inputs
from attention_viz.models import families

ROW_SUM_TOLERANCE = 1e-4


class AttentionError(RuntimeError):
    """A model returned no, or invalid, attention weights; the message says what to do."""


_NO_WEIGHTS = (
    "this model returned no attention weights: load it with attn_implementation='eager' "
    "(SDPA and flash attention do not return them)"
)


class _SoftmaxInto(TorchFunctionMode):
    """While one self-attention module runs, in this thread only: its softmax writes the attention
    probabilities straight into the result (``torch.softmax(..., out=)``, the same kernel), instead of into
    a temporary that is then copied. At 512 tokens that is 75 MB written once instead of three times
    (about 15 ms of a 200 ms forward). Any other call, and a softmax that does not
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

    def __init__(self, num_layers: int, num_heads: int, num_tokens: int, into: np.ndarray | None = None) -> None:
        self.expected = (1, num_heads, num_tokens, num_tokens)
        shape = (num_layers, num_heads, num_tokens, num_tokens)
        self.weights = np.empty(shape, dtype=np.float32) if into is None else into
        if self.weights.shape != shape or self.weights.dtype != np.float32:
            raise ValueError(f"expected a float32 array of shape {shape} to write into")
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
            if computed_in not in {"float32", "float64"}:  # the real cause, not a guess about dropout
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


def validate_attentions(
    attentions, num_layers: int, num_heads: int, num_tokens: int, into: np.ndarray | None = None
) -> np.ndarray:
    """Check a model's attentions and stack them as float32 ``(layers, heads, query, key)``.

    Args:
        attentions: ``outputs.attentions``: one ``(1, heads, t, t)`` tensor per layer.
        num_layers, num_heads, num_tokens: what the model and input should give.
        into: the float32 ``(layers, heads, t, t)`` array to stack them in (a new one if ``None``); a layer
            that already lies in its place there is not copied.

    Raises:
        AttentionError: if there are none (SDPA or flash attention), the count or a shape is wrong,
            a value is not finite, or a row does not sum to 1 within ``ROW_SUM_TOLERANCE``.
    """
    if not attentions:
        raise AttentionError(_NO_WEIGHTS)
    if len(attentions) != num_layers:
        raise AttentionError(f"expected attention from {num_layers} layers, got {len(attentions)}")
    checker = _LayerChecker(num_layers, num_heads, num_tokens, into)
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


def _family(model) -> families.Family:
    """The model's family by ``config.model_type``; BERT's rules for a model of no supported family."""
    try:
        return families.family_for(getattr(model.config, "model_type", "bert"))
    except families.UnsupportedFamilyError:
        return families.family_for("bert")


def _hooked_self_attentions(model) -> list | None:
    """The module that computes the attention of every layer, as its family names it
    (``encoder.layer[i].attention.self`` in BERT, ``transformer.layer[i].attention`` in DistilBERT,
    ``h[i].attn`` in GPT-2, ALBERT's one shared ``AlbertAttention`` once per layer), each with
    :func:`_place` as a forward pre-hook and :func:`_collect` as a forward hook (installed once per module);
    None for a model of another structure."""
    modules = _family(model).attention_modules(model)
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
    """Attention of a transformers model of a supported family for one encoded input.

    The model is given what its family takes (no token types for DistilBERT and GPT-2; no key/value
    cache for GPT-2). The weights are transformers' own (its eager attention), taken from each layer's
    attention module (as :func:`_hooked_self_attentions` finds it) by forward hooks as the layer computes
    them: its softmax writes straight into the result (:class:`_SoftmaxInto`), and the hook after it
    checks the rows. The forward stops after the last layer's
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
    inputs = _family(model).model_kwargs(model_inputs(encoding))
    modules = _hooked_self_attentions(model)
    if modules is None or len(modules) != layers:
        with torch.inference_mode():
            outputs = model(**inputs, output_attentions=True)
        return validate_attentions(getattr(outputs, "attentions", None), layers, heads, encoding.num_tokens)
    checker = _LayerChecker(layers, heads, encoding.num_tokens)
    token = _COLLECTOR.set(checker)
    try:
        with torch.inference_mode():
            model(**inputs)
    except _LastLayerSeen:
        pass
    finally:
        checker.leave()  # a forward that failed inside a self-attention module leaves nothing intercepting
        _COLLECTOR.reset(token)
    return checker.result()
