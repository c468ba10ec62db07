"""How big a checkpoint is before it loads, whether it fits in memory, and how long a forward will take.

The weights are always held in float32 (4 bytes a parameter) whatever dtype they were saved in, so a
checkpoint needs ``parameters × 4`` bytes of memory: 0.5 B parameters are 2 GB, 1.1 B are 4.4 GB. The
parameters are counted without reading a weight: from the shapes in the safetensors headers of a folder
(every tensor the checkpoint saves, a sharded checkpoint's shards listed by its
``model.safetensors.index.json``), or else from the config (the model built on PyTorch's ``meta`` device,
where a tensor has a shape and no storage).

The time of a forward at 512 tokens is an estimate: one short forward is timed and scaled by the ratio of
the two lengths' floating-point operations (:func:`forward_flops`: ``2 · t`` per matrix weight, plus
``4 · t² · d`` per head for the scores and the weighted sum of values).
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from pathlib import Path

FLOAT32_BYTES = 4
FORWARD_TOKENS = 512
PROBE_TOKENS = 32


@dataclass(frozen=True)
class MemoryNeed:
    """What a checkpoint will take once loaded.

    Attributes:
        parameters: how many numbers its weights hold.
        bytes: ``parameters × 4``: the weights in float32, in bytes.
        source: where the count comes from: ``"safetensors"`` (the files' headers) or ``"config"``.
    """

    parameters: int
    bytes: int
    source: str


def _safetensors_files(folder: Path) -> list[Path]:
    """The weight files of a checkpoint folder: the shards its index lists, or every ``*.safetensors``."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [folder / name for name in names]
    return sorted(folder.glob("*.safetensors"))


def safetensors_parameters(folder: str | os.PathLike) -> int | None:
    """The numbers a folder's safetensors files hold, from their headers (the tensors' shapes; nothing else
    of the files is read).

    Returns:
        The count over every tensor saved, or ``None`` when the folder has no safetensors file.

    Raises:
        OSError: a listed shard is missing or a header cannot be read.
    """
    files = _safetensors_files(Path(folder))
    if not files:
        return None
    total = 0
    for path in files:
        with path.open("rb") as handle:
            (size,) = struct.unpack("<Q", handle.read(8))  # safetensors: u64 header length, then JSON
            try:
                header = json.loads(handle.read(size))
            except ValueError as exc:
                raise OSError(f"{path.name}: the safetensors header cannot be read ({exc})") from exc
        total += sum(prod(entry["shape"]) for key, entry in header.items() if key != "__metadata__")
    return total


def config_parameters(config) -> int:
    """The parameters of the base model (``AutoModel``) a transformers config describes, counted on the
    ``meta`` device: no memory is taken and no weight is drawn. Tied weights count once."""
    import torch
    from transformers import AutoModel

    with torch.device("meta"):
        model = AutoModel.from_config(config)
    return sum(p.numel() for p in model.parameters())


def memory_need(folder: str | os.PathLike | None, config=None) -> MemoryNeed | None:
    """The memory a checkpoint's weights take in float32, without loading them.

    Args:
        folder: its local folder (a hub name's snapshot in the cache), or ``None``.
        config: its transformers config, used when the folder has no safetensors file.

    Returns:
        :class:`MemoryNeed`, or ``None`` when neither says (no folder and no config).
    """
    counted = None if folder is None else safetensors_parameters(folder)
    if counted is not None:
        return MemoryNeed(counted, counted * FLOAT32_BYTES, "safetensors")
    if config is None:
        return None
    counted = config_parameters(config)
    return MemoryNeed(counted, counted * FLOAT32_BYTES, "config")


def available_memory(meminfo: str | os.PathLike = "/proc/meminfo") -> int | None:
    """Bytes of memory a new process can take now without swapping: psutil's ``available`` when psutil is
    installed, else the kernel's ``MemAvailable`` line of ``/proc/meminfo``; ``None`` where neither says
    (not Linux, an old kernel)."""
    try:
        import psutil
    except ImportError:
        pass
    else:
        return int(psutil.virtual_memory().available)
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # the kernel writes kB (KiB)
    except (OSError, ValueError, IndexError):
        return None
    return None


def size_parts(size: int) -> tuple[str, str]:
    """``size`` bytes as a number of 3 significant digits and its decimal unit: ``("4.4", "GB")``,
    ``("512", "MB")``, ``("91.2", "kB")``, ``("999", "B")``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            value = size / scale
            return (f"{value:.0f}" if value >= 100 else f"{value:.3g}"), unit
    return str(size), "B"


def size_text(size: int) -> str:
    """``size`` bytes in decimal units, 3 significant digits: ``4.4 GB``, ``512 MB``, ``91.2 kB``."""
    return " ".join(size_parts(size))


def fits(need: MemoryNeed, available: int | None) -> bool:
    """Whether the weights fit in ``available`` bytes; unknown available memory is not refused."""
    return available is None or need.bytes <= available


def forward_flops(layers: int, matrix_parameters: int, heads: int, head_dim: int, tokens: int) -> int:
    """Floating-point operations of one forward over ``tokens`` tokens (multiply and add counted apart).

    Every weight of a matrix is one multiply-add per token: ``2 · t · P`` for the ``P`` weights of the layers'
    matrices (embedding tables are looked up, not multiplied). Each head's scores ``q · k`` and weighted sum
    of values are ``t²`` dot products of ``d`` numbers each: ``4 · t² · d`` per head and layer (a causal mask
    does not save them in eager attention).
    """
    return 2 * tokens * matrix_parameters + 4 * tokens * tokens * head_dim * heads * layers


@dataclass(frozen=True)
class ForwardEstimate:
    """How long a forward of the from-scratch model at ``tokens`` tokens takes on this machine, estimated.

    Attributes:
        tokens: the length estimated for.
        seconds: the estimate: ``measured_seconds × flops_ratio``.
        measured_tokens, measured_seconds: the forward that was timed.
        flops_ratio: :func:`forward_flops` at ``tokens`` over the same at ``measured_tokens``.
    """

    tokens: int
    seconds: float
    measured_tokens: int
    measured_seconds: float
    flops_ratio: float


def matrix_parameters(encoder) -> int:
    """The weights of a from-scratch model's layers (every parameter but its embedding tables')."""
    embedded = {id(p) for p in encoder.embeddings.parameters()}
    return sum(p.numel() for p in encoder.parameters() if id(p) not in embedded)


def estimate_forward(
    encoder,
    tokens: int = FORWARD_TOKENS,
    probe: int = PROBE_TOKENS,
    repeats: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> ForwardEstimate:
    """Time a forward of ``encoder`` on ``probe`` tokens and scale it to ``tokens`` by their FLOPs.

    Args:
        encoder: a from-scratch :class:`~attention_viz.models.encoder.BertEncoder` or
            :class:`~attention_viz.models.decoder.Decoder` (its config gives layers, heads and head size).
        tokens: the length to estimate for (512 by default).
        probe: the length timed (at most ``tokens``). One forward runs untimed first (one-time set-up), then
            ``repeats`` timed ones, of which the fastest counts (the others met other work on the machine).
        repeats: timed forwards, at least 1.
        clock: seconds (``time.perf_counter``); a test passes its own.

    Returns:
        :class:`ForwardEstimate`; an estimate: threads, caches and other work on the machine change it.
    """
    import torch

    config = encoder.config
    probe = max(1, min(probe, tokens))
    ids = torch.arange(probe)[None] % config.vocab_size  # (1, probe)
    times = []
    with torch.inference_mode():
        encoder(ids)
        for _ in range(max(1, repeats)):
            start = clock()
            encoder(ids)
            times.append(clock() - start)
    measured = min(times)
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    weights = matrix_parameters(encoder)
    cost = lambda t: forward_flops(config.num_hidden_layers, weights, heads, head_dim, t)  # noqa: E731
    ratio = cost(tokens) / cost(probe)
    return ForwardEstimate(tokens, measured * ratio, probe, measured, ratio)


def duration_parts(seconds: float) -> tuple[str, str]:
    """A duration as a number of 2 significant digits and its unit: ``("0.041", "s")``, ``("3.2", "s")``;
    from a minute on in minutes, ``("2.1", "min")``."""
    if seconds < 60:
        return f"{seconds:.2g}", "s"
    return f"{seconds / 60:.2g}", "min"


def duration_text(seconds: float) -> str:
    """``0.041 s``, ``3.2 s``, ``2.1 min``: 2 significant digits."""
    return " ".join(duration_parts(seconds))
