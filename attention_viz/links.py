"""The view in a link: view settings to and from a URL query string, validated by their defaults.

Pure functions, no Streamlit: :mod:`attention_viz.ui.view.url_state` calls these to
read ``st.query_params`` once at session start and to write it back after each run. Every setting is
validated by its default's type (bool, int, float, str), an optional list of allowed values and an
optional integer range; a value that fails is dropped (the default stays) and a note says which, so a
malformed link opens the default view with a note, never an error.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import accumulate
from urllib.parse import parse_qsl, quote_plus, urlencode

MAX_TEXT = 1000  # characters of one text field in a link (the text of a link is cut to this when read too)
# Characters of a whole link the app makes, its address included, percent-encoded (a CJK character takes 9, an
# emoji 12): RFC 9110, section 4.1, asks every sender and recipient to support URIs of at least 8000 octets, and
# the default limits of common proxies take them (nginx: a request line within 8 KiB; Apache: 8190 bytes).
MAX_LINK = 8000
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
        texts: the settings that are free text (typed by the user): a link too long for its room may carry
            a beginning of them (:func:`to_query`). Other settings (a model's name, a language) go whole.
    """

    defaults: Mapping[str, object]
    choices: Mapping[str, tuple] = field(default_factory=dict)
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    max_text: int = MAX_TEXT
    aliases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    texts: tuple[str, ...] = ()


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


def to_query(values: Mapping[str, object], rules: Rules, room: int | None = None) -> tuple[dict[str, str], list[Note]]:
    """The query parameters of a view: every setting of ``rules.defaults`` (see :func:`carried`), in order.

    Text longer than ``rules.max_text`` is cut to that length; then, with ``room``, the free texts
    (``rules.texts``) are cut further until :func:`query_string` of the parameters is at most ``room``
    characters long (percent-encoded: 9 for a CJK character). Each text gets an equal share of what the other
    settings leave, and a share a shorter text does not use goes to the longer ones; a cut keeps a beginning
    of the text and does not separate a character from the combining marks and joiners that follow it
    (:func:`cut_to_fit`). One note ``cut`` for each text cut. If the other settings alone take more than
    ``room`` (the app's take under 1000 characters), the texts are left empty and the query is longer.

    Args:
        values: the view's settings; a missing one takes its default.
        rules: what the link may carry.
        room: the most characters the query string may have (None: no limit but ``rules.max_text``).

    Returns:
        ``(params, notes)``: ``{name: text}`` and a :class:`Note` for each cut text.
    """
    params, cut = {}, []
    for key, default in rules.defaults.items():
        if not carried(default):
            continue
        value = values.get(key, default)
        if isinstance(default, str) and isinstance(value, str) and len(value) > rules.max_text:
            value = value[: rules.max_text]
            cut.append(key)
        params[key] = encode_value(value)
    if room is not None and len(query_string(params)) > room:
        texts = {key: params[key] for key in rules.texts if key in params}
        left = room - len(query_string({**params, **dict.fromkeys(texts, "")}))
        by_size = sorted(texts, key=lambda key: len(quote_plus(texts[key])))
        for i, key in enumerate(by_size):
            kept = cut_to_fit(texts[key], max(0, left) // (len(by_size) - i))
            left -= len(quote_plus(kept))
            if kept != texts[key]:
                params[key] = kept
                cut.append(key)
    return params, [Note("cut", key) for key in rules.defaults if key in cut]


def _joins_previous(char: str) -> bool:
    """Whether ``char`` belongs to the character before it: a combining mark, a variation selector, a
    zero-width joiner, an emoji skin-tone modifier or a tag character (Unicode's grapheme extenders, near
    enough for a cut)."""
    code = ord(char)
    return (
        unicodedata.category(char) in ("Mn", "Me", "Mc")
        or char == "\u200d"
        or 0xFE00 <= code <= 0xFE0F
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
    )


def cut_to_fit(text: str, room: int) -> str:
    """The longest beginning of ``text`` whose query-string encoding (``quote_plus``, as :func:`query_string`
    writes it) is at most ``room`` characters, ending where a person's character ends: never between a
    letter and its combining marks, nor after a zero-width joiner (an emoji sequence is kept whole or left
    out)."""
    costs = list(accumulate(len(quote_plus(char)) for char in text))
    end = next((i for i, total in enumerate(costs) if total > room), len(text))
    while 0 < end < len(text) and (_joins_previous(text[end]) or text[end - 1] == "\u200d"):
        end -= 1
    return text[:end]


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
