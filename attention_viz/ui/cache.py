"""The one place that caches: the model per process, results per input.

The model is loaded once per process and model name (``st.cache_resource``) and shared read-only by
every session (case C15). Results are cached by everything that changes them, with the model's name
in the key (case C16), so changing only the layer or head never runs the model again.

Results are shared too, not copied: ``st.cache_data`` unpickles a fresh copy on every call, which at 512
tokens is 75 MB of weights per result on every rerun (about 145 ms of a 512-token head change, measured
with ``python -m benchmarks.profile_rerun``). ``st.cache_resource`` hands every session the same
:class:`AttentionResult`, its arrays made read-only so no caller can change what another one sees.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import streamlit as st

from attention_viz import extraction, loading, metrics
from attention_viz.extraction import AttentionResult
from attention_viz.loading import LoadedModel, ModelLoadError


@st.cache_resource(max_entries=4, show_spinner="Loading the model…")
def _load(name: str) -> LoadedModel | ModelLoadError:
    # A failure is cached too: a missing hub model can take a minute of retries to fail.
    try:
        return loading.load_model(name)
    except ModelLoadError as exc:
        return exc


def model(name: str) -> LoadedModel:
    """The loaded model for ``name``; raises :class:`ModelLoadError` (cached) if it cannot load."""
    loaded = _load(name)
    if isinstance(loaded, ModelLoadError):
        raise loaded
    return loaded


def _read_only(value: object) -> None:
    """Make every numpy array in a (nested) frozen dataclass read-only, in place."""
    for field in fields(value):
        item = getattr(value, field.name)
        if isinstance(item, np.ndarray):
            item.flags.writeable = False
        elif hasattr(item, "__dataclass_fields__"):
            _read_only(item)


# 32 entries bound the memory: a 512-token result of the bundled model is 75 MB.
@st.cache_resource(max_entries=32, show_spinner="Running the model…")
def attention(
    _loaded: LoadedModel, model_name: str, text: str, pair: str | None, source: str, variant: str, seed: int
) -> AttentionResult:
    """Cached :func:`attention_viz.extraction.extract`, shared read-only by every session.

    ``_loaded`` is not hashed, ``model_name`` is. The result's arrays are not writeable: copy one
    (``np.array(result.weights)``) before changing it.
    """
    result = extraction.extract(_loaded, text, pair, source, variant, seed)
    _read_only(result)
    return result


def pretrained(loaded: LoadedModel, text: str, pair: str | None) -> AttentionResult:
    return attention(loaded, loaded.info.name, text, pair, "pretrained", "exact", 0)


def scratch(loaded: LoadedModel, text: str, pair: str | None, variant: str, seed: int) -> AttentionResult:
    seed = seed if variant == "random" else 0  # the seed only matters to the random variant
    return attention(loaded, loaded.info.name, text, pair, "scratch", variant, seed)


@st.cache_data(max_entries=32, show_spinner=False)
def _parity(_loaded: LoadedModel, model_name: str, text: str, pair: str | None) -> float:
    exact = scratch(_loaded, text, pair, "exact", 0).weights
    return metrics.max_abs_difference(exact, pretrained(_loaded, text, pair).weights)


def parity(loaded: LoadedModel, text: str, pair: str | None) -> float:
    """Max |exact from-scratch − pretrained| over every layer and head, computed once per input."""
    return _parity(loaded, loaded.info.name, text, pair)
