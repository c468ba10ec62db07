"""The view in a link: view settings to and from a URL query string, validated by their defaults.

Pure functions, no Streamlit: :mod:`attention_viz.ui.url_state` calls these to
read ``st.query_params`` once at session start and to write it back after each run. Every setting is
validated by its default's type (bool, int, float, str), an optional list of allowed values and an
optional integer range; a value that fails is dropped (the default stays) and a note says which, so a
malformed link opens the default view with a note, never an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode

MAX_TEXT = 1000  # characters of one text field in a link; a URL of about 10 kB at 3 bytes per CJK char
MAX_INT = 2**31 - 1
_TRUE, _FALSE = {"1", "true", "on", "yes"}, {"0", "false", "off", "no"}


@dataclass(frozen=True)
class Rules:
    """What a link may carry.

    Attributes:
        defaults: every view setting and its default; the default's type is the setting's type.
        choices: allowed values of a setting, for settings that have a fixed list.
        ranges: inclusive ``(low, high)`` of a number setting; other integers take ``0..MAX_INT``.
        max_text: the most characters one text setting may carry.
        aliases: ``{setting: {old text: new text}}``: how older links wrote a value that has been
            renamed since, so that they keep working.
    """

    defaults: Mapping[str, object]
    choices: Mapping[str, tuple] = field(default_factory=dict)
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    max_text: int = MAX_TEXT
    aliases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Note:
    """Something about a link the user should be told: ``kind`` is ``invalid``, ``cut`` or ``unknown``."""

    kind: str
    key: str


def carried(default: object) -> bool:
    """Whether a setting with this default goes into links: bool, int, float, str, or ``None``."""
    return default is None or isinstance(default, bool | int | float | str)


def encode_value(value: object) -> str:
    """One setting as query-string text: booleans as ``1``/``0``, ``None`` as empty, numbers with ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def decode_value(text: str, default: object) -> object:
    """Parse ``text`` as the type of ``default``.

    A ``None`` default (a setting that is often unset, such as a token in focus) takes ``""`` as
    ``None``, then an integer if the text is one, else the text.

    Raises:
        ValueError: if ``text`` is not a value of that type (``"abc"`` for an int, ``"nan"`` for a float).
    """
    if default is None:
        if not text.strip():
            return None
        try:
            return int(text.strip())
        except ValueError:
            return text
    if isinstance(default, bool):
        lowered = text.strip().lower()
        if lowered not in _TRUE | _FALSE:
            raise ValueError(f"not a yes/no value: {text!r}")
        return lowered in _TRUE
    if isinstance(default, int):
        return int(text.strip())
    if isinstance(default, float):
        number = float(text)
        if not math.isfinite(number):
            raise ValueError(f"not a finite number: {text!r}")
        return number
    return text


def to_query(values: Mapping[str, object], rules: Rules) -> tuple[dict[str, str], list[Note]]:
    """The query parameters of a view: every setting of ``rules.defaults`` (see :func:`carried`), in order.

    Text longer than ``rules.max_text`` is cut to that length (note ``cut``).

    Args:
        values: the view's settings; a missing one takes its default.
        rules: what the link may carry.

    Returns:
        ``(params, notes)``: ``{name: text}`` and a :class:`Note` for each cut text.
    """
    params, notes = {}, []
    for key, default in rules.defaults.items():
        if not carried(default):
            continue
        value = values.get(key, default)
        if isinstance(default, str) and isinstance(value, str) and len(value) > rules.max_text:
            value = value[: rules.max_text]
            notes.append(Note("cut", key))
        params[key] = encode_value(value)
    return params, notes


def from_query(params: Mapping[str, str], rules: Rules) -> tuple[dict[str, object], list[Note]]:
    """The settings a link carries, each checked against its default's type, choices and range.

    Args:
        params: the query parameters (``st.query_params.to_dict()`` or :func:`parse_query`).
        rules: what the link may carry.

    Returns:
        ``(values, notes)``: the valid settings found (a setting not in the link is absent, so it
        keeps its current value), and a :class:`Note` for each one dropped (``invalid``), cut to
        ``rules.max_text`` (``cut``) or not known (``unknown``).
    """
    values, notes = {}, []
    for key, text in params.items():
        if key not in rules.defaults or not carried(rules.defaults[key]):
            notes.append(Note("unknown", key))
            continue
        default = rules.defaults[key]
        text = rules.aliases.get(key, {}).get(text, text)
        try:
            value = decode_value(text, default)
        except ValueError:
            notes.append(Note("invalid", key))
            continue
        if isinstance(value, str) and len(value) > rules.max_text:
            value = value[: rules.max_text]
            notes.append(Note("cut", key))
        if not _allowed(key, value, rules):
            notes.append(Note("invalid", key))
            continue
        values[key] = value
    return values, notes


def _allowed(key: str, value: object, rules: Rules) -> bool:
    if key in rules.choices:
        return value in rules.choices[key]
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        low, high = rules.ranges.get(key, (0, MAX_INT))
        return low <= value <= high
    if isinstance(value, float) and key in rules.ranges:
        low, high = rules.ranges[key]
        return low <= value <= high
    return True


def query_string(params: Mapping[str, str]) -> str:
    """``params`` as a URL query string (UTF-8, percent-encoded; Chinese text included)."""
    return urlencode(params)


def parse_query(query: str) -> dict[str, str]:
    """A URL query string (with or without the leading ``?``) as ``{name: text}``; the last of repeats wins."""
    return dict(parse_qsl(query.lstrip("?"), keep_blank_values=True))
