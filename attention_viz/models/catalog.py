"""Models already on this machine: the local Hugging Face cache and the folders under the model root.

Only what would load is listed: a config.json of a supported family (:mod:`attention_viz.models.families`)
and safetensors weights. Nothing is downloaded and no weight is read; each config.json is.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from attention_viz import settings
from attention_viz.models import families


@dataclass(frozen=True)
class FoundModel:
    """A model that can be loaded by name.

    Attributes:
        name: what to load it by: a hub name (``roberta-base``) for the cache, a folder's name relative
            to the model root (or its full path when no root is set) for a folder.
        family: its family's ``model_type`` (``roberta``).
        family_name: as people write it (``RoBERTa``).
        where: ``"cache"`` or ``"folder"``.
    """

    name: str
    family: str
    family_name: str
    where: str


def _family_of(folder: Path) -> families.Family | None:
    """The family of a checkpoint folder with safetensors weights, or None (unreadable, unsupported)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or not any(folder.glob("*.safetensors")):
        return None
    try:
        return families.family_for(config.get("model_type", ""))
    except families.UnsupportedFamilyError:
        return None


def cached_models(cache_dir: str | None = None) -> list[FoundModel]:
    """Supported models in the local Hugging Face cache (``huggingface_hub.scan_cache_dir``), by hub name.

    Args:
        cache_dir: the hub cache (default: the one ``HF_HUB_CACHE`` / ``HF_HOME`` points to).

    Returns:
        One entry per model repository, sorted by name; ``[]`` when there is no cache.
    """
    from huggingface_hub import constants, scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:  # the cache transformers loads from, read now (scan_cache_dir's default is fixed at its import)
        info = scan_cache_dir(cache_dir or constants.HF_HUB_CACHE)
    except (CacheNotFound, OSError, ValueError):
        return []
    found = []
    for repo in info.repos:
        if repo.repo_type != "model":
            continue
        for revision in sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True):
            family = _family_of(Path(revision.snapshot_path))
            if family is not None:
                found.append(FoundModel(repo.repo_id, family.model_type, family.name, "cache"))
                break
    return sorted(found, key=lambda model: model.name.lower())


def folder_models(root: str) -> list[FoundModel]:
    """Supported checkpoints in the folders under ``root`` (one or two levels down, as ``org/name``)."""
    base = Path(root)
    candidates = [p for p in base.glob("*") if p.is_dir()] + [p for p in base.glob("*/*") if p.is_dir()]
    found = []
    for folder in sorted(candidates):
        family = _family_of(folder)
        if family is not None:
            found.append(FoundModel(folder.relative_to(base).as_posix(), family.model_type, family.name, "folder"))
    return found


def find_models(policy: settings.ModelPolicy | None = None, cache_dir: str | None = None) -> list[FoundModel]:
    """The models that load here without a download: those in the cache, then the root's folders.

    Args:
        policy: which models may load (default: any); with an allow-list, only the
            cached models on it are offered; the folders under its root always are.
        cache_dir: the hub cache (default: the usual one).

    Returns:
        :class:`FoundModel` entries, each name once.
    """
    policy = settings.ModelPolicy() if policy is None else policy
    cached = cached_models(cache_dir)
    if policy.restricted:
        cached = [model for model in cached if model.name in policy.allowed]
    folders = folder_models(policy.root) if policy.root and os.path.isdir(policy.root) else []
    names = {model.name for model in cached}
    return cached + [model for model in folders if model.name not in names]
