"""Downloads of what is shown: one head's matrix as CSV, all attention as JSON, a figure as HTML.

Pure functions on results and figures (no Streamlit), shared by the app's download buttons and the
command line, so a file from either has the same content.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from attention_viz.extraction import AttentionResult

CSV_INDEX_NAME = "query \\ key"


def matrix_frame(
    matrix: np.ndarray, labels: list[str] | tuple[str, ...], key_labels: list[str] | tuple[str, ...] | None = None
) -> pd.DataFrame:
    """A ``(query, key)`` matrix as a labelled DataFrame: rows are queries, columns are keys.

    ``key_labels`` name the columns of a non-square view (a pair's A→B block); default ``labels``.
    """
    labels = list(labels)
    columns = labels if key_labels is None else list(key_labels)
    return pd.DataFrame(np.asarray(matrix), index=labels, columns=columns).rename_axis(CSV_INDEX_NAME)


def matrix_csv(
    matrix: np.ndarray, labels: list[str] | tuple[str, ...], key_labels: list[str] | tuple[str, ...] | None = None
) -> str:
    """One head's ``(query, key)`` matrix as CSV with the token labels (8 significant digits).

    ``key_labels`` name the columns when they differ from the rows' ``labels`` (non-square views).

    Returns:
        CSV text: a header row of key labels, then one row per query token with its label first.
    """
    return matrix_frame(matrix, labels, key_labels).to_csv(float_format="%.8g")


def select(weights: np.ndarray, layer: int | None, head: int | None) -> np.ndarray:
    """Index ``(layers, heads, query, key)`` by the given layer and/or head."""
    if layer is not None:
        weights = weights[layer]
    if head is not None:
        weights = weights[head] if layer is not None else weights[:, head]
    return weights


def attention_payload(result: AttentionResult, layer: int | None = None, head: int | None = None) -> dict:
    """All attention of a text with what it refers to: the command line's JSON fields.

    Returns:
        ``model, source, variant, seed, tokens, labels, segments, is_pair, num_layers, num_heads,
        layer, head, num_input_tokens, truncated, cut, attention``; ``attention`` is ``(layers, heads, query, key)``,
        narrowed by ``layer`` and ``head`` when given.
    """
    return {**_payload_header(result, layer, head), "attention": select(result.weights, layer, head).tolist()}


def _payload_header(result: AttentionResult, layer: int | None = None, head: int | None = None) -> dict:
    """:func:`attention_payload` without its ``attention``: what the weights refer to."""
    encoding = result.encoding
    return {
        "model": result.model_name,
        "source": result.source,
        "variant": result.variant,
        "seed": result.seed,
        "tokens": list(encoding.tokens),
        "labels": list(encoding.labels),
        "segments": encoding.segments.tolist(),
        "is_pair": encoding.is_pair,
        "num_layers": int(result.weights.shape[0]),
        "num_heads": int(result.weights.shape[1]),
        "layer": layer,
        "head": head,
        "num_input_tokens": encoding.num_input_tokens,
        "truncated": encoding.truncated,
        "cut": {"text": encoding.cut[0], "pair": encoding.cut[1]},
    }


def attention_json(result: AttentionResult, layer: int | None = None, head: int | None = None) -> str:
    """:func:`attention_payload` as JSON text (UTF-8 labels kept readable)."""
    return json.dumps(attention_payload(result, layer, head), ensure_ascii=False) + "\n"


JSON_SIZE_SAMPLE = 4096  # weights whose written length is measured to estimate the JSON's size


def attention_json_size(result: AttentionResult) -> int:
    """The size in bytes of :func:`attention_json` of ``result`` (all layers and heads), without writing it.

    Everything but the weights is written and measured; the weights' part is exact in its brackets and
    separators and estimated in its numbers, from the mean written length of :data:`JSON_SIZE_SAMPLE` of
    them spread evenly over the array (within about 1 %: a float32 weight is written in 1 to 24 characters,
    ``1.0``, ``0.0012345678900480270``, ``3.4e-05``). About 1 ms at 512 tokens, where the file is 460 MB.
    """
    weights = result.weights  # (layers, heads, query, key)
    count = weights.size
    rest = {**_payload_header(result), "attention": []}
    size = len((json.dumps(rest, ensure_ascii=False) + "\n").encode("utf-8"))
    if count == 0:
        return size
    flat = weights.reshape(-1)
    sample = flat[np.linspace(0, count - 1, min(count, JSON_SIZE_SAMPLE)).astype(np.int64)].tolist()
    number_chars = sum(len(repr(value)) for value in sample) / len(sample) * count
    # every list of k items is "[" + items joined by ", " + "]": 2 + 2 (k - 1) characters besides its items
    lists = [int(np.prod(weights.shape[:depth])) for depth in range(weights.ndim)]  # lists at each depth
    items = weights.shape  # items per list at each depth
    brackets = sum(n * 2 * k for n, k in zip(lists, items, strict=True))
    return size + round(number_chars) + brackets


def view_json(matrix: np.ndarray, labels, key_labels, what: str, **about) -> str:
    """A shown ``(query, key)`` matrix as JSON: ``{"what", ...about, "query_labels", "key_labels", "matrix"}``.

    ``what`` (and ``about``: model, layer, view options) say what the matrix is, e.g. ``"attention rollout"``.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    payload = {"what": what, **about, "query_labels": list(labels), "key_labels": list(key_labels)}
    payload["matrix"] = np.round(matrix, 8).tolist()
    return json.dumps(payload, ensure_ascii=False) + "\n"


def similarity_frame(positions: np.ndarray, num_heads: int) -> pd.DataFrame:
    """Every head's place in the head-similarity map: columns ``layer``, ``head``, ``x``, ``y`` (MDS units).

    Args:
        positions: ``(layers * heads, 2)``, layer-major (:func:`attention_viz.analysis.mds_layout`).
        num_heads: heads per layer.
    """
    positions = np.asarray(positions, dtype=np.float64)
    index = np.arange(len(positions))
    return pd.DataFrame(
        {"layer": index // num_heads, "head": index % num_heads, "x": positions[:, 0], "y": positions[:, 1]}
    )


def similarity_json(positions: np.ndarray, divergence: np.ndarray, num_heads: int, **about) -> str:
    """The head-similarity map as JSON: each head's place and the ``(n, n)`` JS divergence (bits) it is laid
    out from, ``heads[i]`` naming row and column ``i`` of ``divergence``."""
    frame = similarity_frame(positions, num_heads)
    payload = {
        "what": "head similarity: Jensen-Shannon divergence between heads (bits), laid out by MDS",
        **about,
        "heads": [
            {"layer": int(r.layer), "head": int(r.head), "x": float(r.x), "y": float(r.y)} for r in frame.itertuples()
        ],
        "divergence": np.round(np.asarray(divergence, dtype=np.float64), 8).tolist(),
    }
    return json.dumps(payload, ensure_ascii=False) + "\n"


def figure_html(figure: go.Figure) -> str:
    """A standalone HTML page of the figure, with plotly.js inside (opens offline; plotly.js makes it several MB)."""
    return figure.to_html(include_plotlyjs=True, full_html=True)


def file_stem(model: str, *parts: str | int) -> str:
    """A file name without extension, e.g. ``attention_all-MiniLM-L6-v2_layer3_head1``.

    Characters that are not safe in file names (``/`` of a hub name or a folder) become ``-``.
    """
    name = re.sub(r"[^\w.-]+", "-", model.strip().rstrip("/").split("/")[-1] or "model").strip("-")
    return "_".join(["attention", name or "model", *(str(p) for p in parts)])


def image_config(model: str, layer: int, head: int, what: str = "") -> dict:
    """plotly's chart config: the toolbar's camera button saves a PNG at 2× with a meaningful name.

    Returns:
        ``{"toImageButtonOptions": {"format": "png", "filename": ..., "scale": 2}}`` for
        ``st.plotly_chart(config=...)``.
    """
    parts = [f"layer{layer}", f"head{head}"] + ([what] if what else [])
    return {"toImageButtonOptions": {"format": "png", "filename": file_stem(model, *parts), "scale": 2}}
