"""Outside text in Markdown: shown exactly as written, never read as Markdown.

Streamlit renders Markdown in ``st.markdown``, ``st.caption``, headers, ``st.info``/``warning``/``error``/
``success``, widget labels, help texts, radio options and metric values: a link, an image the browser
fetches, bold text, a heading, a KaTeX formula (``$...$``), an emoji or icon shortcode (``:smile:``,
``:material/home:``), a colour directive (``:red[...]``), HTML. Text from outside the project (typed text,
tokens and their labels, link parameter names and values, uploaded file names, model names, error
details) reaches those calls only through :func:`literal`:

- text without ASCII punctuation or invisible characters (words in any script, emoji, CJK punctuation
  such as ``，``), or one number such as ``-1,234.5e-06``, cannot form any of these (CommonMark and
  Streamlit only read ASCII punctuation) and is returned as it is, so a sentence's words read as before;
- anything else becomes a CommonMark code span, in which nothing is interpreted. Streamlit rewrites every
  ``:material/`` of the source before parsing, inside code too, so that colon is written as an escaped
  character just outside the span.

:class:`Markdown` marks text that is safe to render: what the project wrote (the translated templates,
their fields escaped by :func:`attention_viz.ui.text.i18n.t`) and what :func:`literal` returns. As with
markupsafe's ``Markup``, adding plain text to it or joining plain text with it escapes that text.
No Streamlit here: the rules are plain string functions, tested against a CommonMark parser.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

_MARKS = frozenset(string.punctuation)  # what CommonMark can escape: the only punctuation Markdown reads
_NUMBER = re.compile(r"[-+−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LINE_BREAK = re.compile(r"\r\n?|\n")
_ICON = ":material/"  # Streamlit's frontend replaces it in the whole source, code spans included


class Markdown(str):
    """Text that is safe to render as Markdown: written by the project, or made safe by :func:`literal`.

    ``markdown + text``, ``text + markdown`` and ``markdown.join(texts)`` show ``text`` literally.
    Anything else that builds a new string (``str.format``, f-strings, slicing) returns a plain ``str``.
    """

    __slots__ = ()

    def __add__(self, other: object) -> Markdown:
        if not isinstance(other, str):
            return NotImplemented
        return Markdown(str.__add__(self, literal(other)))

    def __radd__(self, other: object) -> Markdown:
        if not isinstance(other, str):
            return NotImplemented
        return Markdown(str.__add__(literal(other), self))

    def join(self, parts: Iterable[str]) -> Markdown:  # type: ignore[override]
        return Markdown(str.join(self, [literal(part) for part in parts]))


def inert(text: str) -> bool:
    """Whether ``text`` shows as it is in Markdown: no ASCII punctuation, no invisible or control character
    (``str.isprintable``), no space at either end (Markdown drops it); or one number; or only spaces."""
    if _NUMBER.fullmatch(text) or not text.strip(" "):
        return True
    plain = all(c == " " or (c.isprintable() and c not in _MARKS) for c in text)
    return plain and text == text.strip(" ")


def _code_span(text: str) -> str:
    """``text`` as a CommonMark code span: the fence one backtick longer than its longest run of backticks."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    # A backtick next to the fence would lengthen it, and CommonMark strips one space from each side when
    # both are there: pad with one space on each side, which the parser takes away again.
    padded = text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" "))
    pad = " " if padded else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def literal(text: object) -> Markdown:
    """``text`` as Markdown that shows it exactly (line breaks become spaces).

    Words and numbers come back unchanged; anything else as a code span (see the module docstring).
    Already safe text (a :class:`Markdown`) comes back as it is, so calling this twice does no harm.
    """
    if isinstance(text, Markdown):
        return text
    text = _LINE_BREAK.sub(" ", str(text))
    if inert(text):
        return Markdown(text)
    first, *rest = text.split(_ICON)
    spans = [_code_span(first)] if first else []
    spans += [r"\:" + _code_span(_ICON[1:] + piece) for piece in rest]
    return Markdown("".join(spans))
