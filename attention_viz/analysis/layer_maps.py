"""Some layers' maps of one kind, every head, with their colour ranges: what the attention map element holds.

One function per map kind (:data:`KINDS`), each ``kind(layers, **arguments) -> HeldMaps``:

- :func:`compare`: a model's pretrained attention and its from-scratch reproduction (and their difference), with
  the view toggles applied (:func:`attention_viz.analysis.apply_view`).
- :func:`inside`: every head's weights as :func:`attention_viz.analysis.steps.head_steps` computes them with the
  page's scaling, temperature and masked keys.
- :func:`rollout`: the head average, attention rollout or norm-based attention, one map per layer.
- :func:`article`: the seed article's layer, a correct layer, or their difference (random weights from a seed).
- :func:`seq2seq`: an encoder–decoder's encoder, decoder or cross-attention, pretrained, from scratch or their
  difference.

A :class:`Recipe` names a kind and its arguments, so that the maps of other layers can be made later, in any
thread (the functions read only their read-only arguments); the colour ranges are fitted by
:func:`attention_viz.figures.heatmaps.head_ranges`, the one place for them. No Streamlit here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from attention_viz.analysis import article_compare, steps
from attention_viz.analysis import rollout as rollout_module
from attention_viz.analysis.views import ViewOptions, apply_view
from attention_viz.figures.heatmaps import head_ranges


@dataclass(frozen=True)
class HeldMaps:
    """The maps of some layers, as one bundle of the map element holds them.

    Attributes:
        layers: the layer indices (from 0), in order.
        maps: float32 ``(len(layers), heads, query, key)``; ``heads`` is 1 for one map per layer (rollout).
            Compare: the pretrained maps.
        query_labels, key_labels: one label per query row and per key column (after the view toggles).
        ranges: float64 ``(len(layers), heads, 2)``: each head's fitted colour range, or ``None`` for the map
            kind's fixed range (0 to 1, or ±1 for a difference).
        scratch: Compare's from-scratch maps, shaped as ``maps`` (the element shows either or their difference,
            ``scratch - maps``), else ``None``.
        difference_ranges: with ``scratch`` and fitted ranges, the difference's ``(len(layers), heads, 2)``.
    """

    layers: tuple[int, ...]
    maps: np.ndarray
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    ranges: np.ndarray | None = None
    scratch: np.ndarray | None = None
    difference_ranges: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Recipe:
    """How to make the maps of any layers: a map kind of :data:`KINDS` and its arguments.

    Attributes:
        kind: the name of the map kind's function in :data:`KINDS`.
        key: what the maps depend on (model, revision, text, settings): hashable and small; two recipes with
            the same ``kind`` and ``key`` make the same maps.
        arguments: the function's keyword arguments (read-only arrays, the model, settings).
    """

    kind: str
    key: tuple
    arguments: dict = field(repr=False)

    def maps(self, layers: Sequence[int]) -> HeldMaps:
        """The maps of ``layers`` (:class:`HeldMaps`); may be called from any thread."""
        return KINDS[self.kind](tuple(int(layer) for layer in layers), **self.arguments)


def compare(
    layers: tuple[int, ...], *, pretrained: np.ndarray, scratch: np.ndarray, encoding, options: ViewOptions, fit: bool
) -> HeldMaps:
    """Both models' maps of ``layers`` with the view toggles ``options`` applied.

    Args:
        pretrained, scratch: ``(L, heads, t, t)`` the two models' attention of ``encoding``'s tokens.
        fit: fit each head's colour range to its values (both maps share one; the difference its own).
    """
    index = list(layers)
    first, second = pretrained[index], scratch[index]
    query_labels = key_labels = tuple(encoding.labels)
    if options != ViewOptions():
        view = apply_view(first, encoding, options)
        first, second = view.matrix, apply_view(second, encoding, options).matrix
        query_labels, key_labels = view.query_labels, view.key_labels
    first, second = first.astype(np.float32), second.astype(np.float32)
    ranges = head_ranges(first, second) if fit else None
    difference = head_ranges(second - first, difference=True) if fit else None
    return HeldMaps(layers, first, query_labels, key_labels, ranges, second, difference)


def inside(
    layers: tuple[int, ...],
    *,
    encoder,
    hidden: np.ndarray,
    labels: Sequence[str],
    query: int,
    scaling: float,
    temperature: float,
    masked: tuple[int, ...],
    causal: bool,
    fit: bool,
) -> HeldMaps:
    """Every head's weights of ``layers`` computed step by step with the given settings.

    Args:
        encoder: the from-scratch model with the pretrained weights.
        hidden: ``(L, t, hidden)`` every layer's input (:func:`attention_viz.analysis.steps.layer_inputs`).
        labels: the ``t`` token labels.
        query, scaling, temperature, masked, causal: as :func:`attention_viz.analysis.steps.layer_weights`
            takes them (each layer's sliding window and score cap are the layer's own).
        fit: fit each head's colour range to its values.

    Raises:
        InputError: as :func:`attention_viz.analysis.steps.head_steps`.
    """
    weights = []
    for layer in layers:
        rules = steps.layer_rules(encoder, layer)
        vectors = steps.layer_vectors(encoder, hidden[layer], layer)  # (3, h, t, d)
        weights.append(
            steps.layer_weights(vectors, query, scaling, temperature, masked, causal, rules.window, rules.softcap)
        )
    maps = np.stack(weights).astype(np.float32)  # (n, h, t, t)
    return HeldMaps(layers, maps, tuple(labels), tuple(labels), head_ranges(maps) if fit else None)


def rollout_view(options: ViewOptions, kind: str) -> tuple[ViewOptions, bool]:
    """The view toggles a kind of rollout map takes and whether its rows are renormalised: norms are not
    distributions (no word level, hidden tokens only dropped)."""
    if kind == "norm":
        return ViewOptions(False, options.hide_special, options.block), False
    return options, True


def rollout(layers: tuple[int, ...], *, encoder, encoding, kind: str, options: ViewOptions) -> HeldMaps:
    """One map per layer (``heads`` 1) of ``kind`` (``"raw"``, ``"rollout"`` or ``"norm"``) with the view toggles
    (:func:`rollout_view`); norms (hidden units) get a range from 0 to each layer's largest."""
    shown, renormalise = rollout_view(options, kind)
    views = [
        apply_view(m, encoding, shown, renormalise=renormalise)
        for m in rollout_module.layer_maps(encoder, encoding, list(layers), kind)
    ]
    maps = np.stack([view.matrix for view in views]).astype(np.float32)[:, None]  # (n, 1, query, key)
    ranges = head_ranges(maps, low=0.0) if kind == "norm" else None
    return HeldMaps(layers, maps, views[0].query_labels, views[0].key_labels, ranges)


ARTICLE_PANELS = ("correct", "changed", "difference")


class LayerMemo:
    """The last few layers' results of one computation, shared by the maps made from it (thread-safe; two
    threads asking at once for a layer may both compute it)."""

    def __init__(self, make: Callable[[int], tuple], keep: int = 3) -> None:
        self._make, self._keep = make, keep
        self._made: OrderedDict[int, tuple] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, layer: int) -> tuple:
        with self._lock:
            found = self._made.get(layer)
        if found is None:
            found = self._make(layer)
            with self._lock:
                self._made[layer] = found
                while len(self._made) > self._keep:
                    self._made.popitem(last=False)
        return found


def article_memo(hidden: np.ndarray, heads: int, seed: int, differences: tuple) -> LayerMemo:
    """A layer's ``(correct, changed)`` maps (:func:`attention_viz.analysis.article_compare.article_maps` on the
    layer's input ``hidden[layer]``), made once for the three panels of :func:`article`."""
    return LayerMemo(lambda layer: article_compare.article_maps(hidden[layer], heads, seed, differences))


def article(layers: tuple[int, ...], *, memo: LayerMemo, labels: Sequence[str], panel: str, fit: bool) -> HeldMaps:
    """One panel of the article's layer (:data:`ARTICLE_PANELS`): the correct layer's maps, the article's, or
    ``changed - correct``; the two share each head's fitted range, the difference its own ``±max``.

    Args:
        memo: the layers' ``(correct, changed)`` maps (:func:`article_memo`).
        labels: the token labels.
        panel: ``"correct"``, ``"changed"`` or ``"difference"``.
        fit: fit each head's colour range to its values.

    Raises:
        ValueError: an unknown panel.
    """
    if panel not in ARTICLE_PANELS:
        raise ValueError(f"unknown panel {panel!r}: one of {', '.join(ARTICLE_PANELS)}")
    made = [memo(layer) for layer in layers]
    correct, changed = (np.stack([pair[i] for pair in made]).astype(np.float32) for i in (0, 1))
    if panel == "difference":
        maps = changed - correct
        ranges = head_ranges(maps, difference=True) if fit else None
    else:
        maps = correct if panel == "correct" else changed
        ranges = head_ranges(correct, changed) if fit else None
    return HeldMaps(layers, maps, tuple(labels), tuple(labels), ranges)


def seq2seq(
    layers: tuple[int, ...],
    *,
    pretrained: np.ndarray,
    scratch: np.ndarray,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    view: str,
    fit: bool,
) -> HeldMaps:
    """An encoder–decoder's maps of one kind of attention as shown (``view``: ``"pretrained"``, ``"scratch"`` or
    ``"difference"``, ``scratch - pretrained``), from both models' ``(L, heads, query, key)`` maps."""
    index = list(layers)
    first, second = (np.asarray(m[index], dtype=np.float32) for m in (pretrained, scratch))
    shown = {"pretrained": first, "scratch": second, "difference": second - first}[view]
    ranges = head_ranges(shown, difference=view == "difference") if fit else None
    return HeldMaps(layers, shown, tuple(query_labels), tuple(key_labels), ranges)


@dataclass(frozen=True)
class HeadPair:
    """One head's two maps (pretrained, from scratch) as the view toggles shape them, with their labels.

    Attributes:
        pretrained, scratch: ``(query, key)``: the head's token-level attention as extracted when every toggle
            is off (float32), else the view's (float64).
        row_labels, key_labels: one label per query row and per key column.
        view: the pretrained map's :class:`~attention_viz.analysis.ViewMatrix`, ``None`` when every toggle is off.
    """

    pretrained: np.ndarray
    scratch: np.ndarray
    row_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    view: object | None

    def shown(self, kind: str) -> np.ndarray:
        """The map of ``kind``: ``"pretrained"``, ``"scratch"`` or ``"difference"`` (``scratch - pretrained``)."""
        return {"pretrained": self.pretrained, "scratch": self.scratch}.get(kind, self.scratch - self.pretrained)


def head_pair(pretrained: np.ndarray, scratch: np.ndarray, encoding, options: ViewOptions) -> HeadPair:
    """One head's ``(t, t)`` maps of both models with the view toggles ``options`` applied (:class:`HeadPair`)."""
    if options == ViewOptions():
        labels = tuple(encoding.labels)
        return HeadPair(pretrained, scratch, labels, labels, None)
    view = apply_view(pretrained, encoding, options)
    other = apply_view(scratch, encoding, options).matrix  # (q, k), the same labels
    return HeadPair(view.matrix, other, view.query_labels, view.key_labels, view)


KINDS: dict[str, Callable[..., HeldMaps]] = {
    "compare": compare,
    "inside": inside,
    "rollout": rollout,
    "article": article,
    "seq2seq": seq2seq,
}
