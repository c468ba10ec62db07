"""User-facing words: one table per language (``locales/en.toml``, ``locales/zh.toml``), keyed by stable ids.

Pages never hold literal sentences: they call ``t("compare.title", layer=3, head=1)``. Ids are
``section.name``; values are ``str.format`` templates, written in Markdown. A template's fields are
escaped, not the template: a string field is shown literally (:func:`attention_viz.ui.text.safe_text.literal`:
a token, a file name, a model name can never become a link or a formula), a number is formatted by
the template (``{weight:.2f}``), and a :class:`~attention_viz.ui.text.safe_text.Markdown` field (another
``t(...)``, a literal) goes in as it is. Both tables have the same ids and the same fields (a test checks).
"""

from __future__ import annotations

import string
import tomllib
from functools import cache
from importlib.resources import files

import streamlit as st

from attention_viz.ui.text.safe_text import Markdown, literal

LANGUAGES = {"en": "English", "zh": "中文"}
DEFAULT_LANGUAGE = "en"
LANGUAGE_KEY = "lang"  # the session-state key of the language switch


@cache
def table(language: str) -> dict[str, str]:
    """The flat ``{"section.name": template}`` table of one language.

    Raises:
        KeyError: for a language not in :data:`LANGUAGES`.
    """
    if language not in LANGUAGES:
        raise KeyError(f"unknown language {language!r}: choose one of {', '.join(LANGUAGES)}")
    raw = tomllib.loads(files("attention_viz.ui.text").joinpath("locales", f"{language}.toml").read_text("utf-8"))
    return {f"{section}.{name}": text for section, entries in raw.items() for name, text in entries.items()}


def fields(template: str) -> set[str]:
    """The ``{field}`` names a template uses."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def language() -> str:
    """The language the user chose (``en`` before any choice)."""
    chosen = st.session_state.get(LANGUAGE_KEY, DEFAULT_LANGUAGE)
    return chosen if chosen in LANGUAGES else DEFAULT_LANGUAGE


def t(key: str, /, **values: object) -> Markdown:
    """The text ``key`` in the user's language as Markdown, with ``values`` filled in; string values are
    shown literally (see the module docstring).

    Raises:
        KeyError: for an id that is in neither table (a typo in a page fails its AppTest).
    """
    escaped = {name: literal(value) if isinstance(value, str) else value for name, value in values.items()}
    return Markdown(table(language())[key].format(**escaped))


def plain(key: str, /, **values: object) -> str:
    """The text ``key`` with ``values`` filled in as they are: for what does not render Markdown (a
    chart's title, an option of a select box), never for a Streamlit call that does."""
    return table(language())[key].format(**values)


def counted(key: str, n: int, /, **values: object) -> Markdown:
    """:func:`t` for a text about ``n`` things (the field ``{n}``): ``key_one`` when ``n`` is 1 and the table has
    it ("1 empty line skipped"), else ``key`` ("0 empty lines skipped", "2 empty lines skipped"). Both tables
    have both ids; where a language has no plural (Chinese) the two texts differ only in the number."""
    chosen = f"{key}_one" if n == 1 and f"{key}_one" in table(language()) else key
    return t(chosen, n=n, **values)
