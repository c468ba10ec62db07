"""One-click examples (``assets/presets/presets.toml``): text, pair, layer, head and what to look for.

Each preset names a query token and a key token; :func:`finding` reads their weight from a result, so
the number shown next to "what to look for" is the model's, never typed in.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from attention_viz.extraction import Encoding

PRESETS_FILE = Path(__file__).resolve().parents[2] / "assets" / "presets" / "presets.toml"


@dataclass(frozen=True)
class Preset:
    """One example: the input, the head to look at and a query → key pair that shows its finding.

    Attributes:
        id: stable name (also the widget key).
        language: the language of the text, ``en`` or ``zh``.
        text, pair: sentence A and sentence B (``""`` for none).
        layer, head: the head to open (from 0).
        query, key: token labels to find (see :func:`token_index`).
        query_nth, key_nth: which occurrence of each label, from 1.
        title, look_for: ``{language: text}`` in English and Chinese.
    """

    id: str
    language: str
    text: str
    pair: str
    layer: int
    head: int
    query: str
    key: str
    title: dict[str, str]
    look_for: dict[str, str]
    query_nth: int = 1
    key_nth: int = 1


@cache
def load(path: Path = PRESETS_FILE) -> tuple[Preset, ...]:
    """The presets in file order.

    Raises:
        FileNotFoundError: if the file is missing; ``TypeError`` if an entry lacks a field.
    """
    raw = tomllib.loads(path.read_text("utf-8"))
    return tuple(Preset(**entry) for entry in raw["preset"])


def opening(path: Path = PRESETS_FILE) -> Preset:
    """The example the app opens on: the first in the file."""
    return load(path)[0]


def _normalise(label: str) -> str:
    return label.removesuffix(" [UNK]").removeprefix("##").lower()


def token_index(encoding: Encoding, label: str, nth: int = 1) -> int | None:
    """Position of the ``nth`` token (from 1) whose label reads ``label``; ``None`` if there is none.

    Labels compare case-insensitively, without a ``##`` prefix or an `` [UNK]`` suffix.
    """
    matches = [i for i, shown in enumerate(encoding.labels) if _normalise(shown) == _normalise(label)]
    return matches[nth - 1] if len(matches) >= nth else None


def finding(preset: Preset, encoding: Encoding, head_weights: np.ndarray) -> tuple[int, int, float] | None:
    """``(query_index, key_index, weight)`` of the preset's query → key in one head's ``(query, key)`` map.

    ``None`` when the text no longer holds those tokens (edited, or another tokenizer).
    """
    query = token_index(encoding, preset.query, preset.query_nth)
    key = token_index(encoding, preset.key, preset.key_nth)
    if query is None or key is None:
        return None
    return query, key, float(head_weights[query, key])
