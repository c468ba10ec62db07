"""Sizes, windows and labels of a readable map: pure logic, no plotly, no Streamlit.

A map is readable when every drawn row and column has its own label and no two labels overlap. With
key labels written vertically, neighbouring labels are one cell apart, so a cell must be at least one
font size plus a little air. When the tokens do not fit, the map shows a window of them (a range of
queries and a range of keys) instead of thinning the labels.
"""

from __future__ import annotations

import html
import unicodedata
from dataclasses import dataclass

ELLIPSIS = "…"
LABEL_LIMIT = 20  # characters kept on an axis; the hover shows the full label
FSI, PDI = "\u2068", "\u2069"  # FIRST STRONG ISOLATE, POP DIRECTIONAL ISOLATE (Unicode bidi, UAX #9)


@dataclass(frozen=True)
class MapStyle:
    """How large a map is drawn.

    Attributes:
        font_size: tick label font size (px).
        window: the most tokens a map shows per side; more are shown as a movable window.
        side: the plot area's side (px) the figure asks for; cells are ``side / tokens`` px.
        overview_side: the side (px) of the small overview of the whole matrix.
    """

    font_size: int
    window: int
    side: int
    overview_side: int = 160

    @property
    def min_cell(self) -> float:
        """The smallest cell (px) at the requested side: the window's cells."""
        return self.side / self.window


# How many tokens a map draws whole follows from its label size and the smallest plot it gets: at 800 × 600
# with the sidebar open the map's plot area is about 360 px a side for a plain sentence (1280 × 720 gives it
# 450 px), and vertical key labels one cell apart stay apart when a cell is the label size plus 2 px of air.
SMALLEST_SIDE = 360  # px: the plot's side at 800 × 600 with the sidebar open (short labels)
LABEL_AIR = 2  # px between neighbouring labels


def readable_window(font_size: int, side: int = SMALLEST_SIDE) -> int:
    """The most tokens a map of ``side`` px draws whole with ``font_size`` px labels: one cell per token, a
    cell at least the label size plus :data:`LABEL_AIR`. 12 px labels: 25 tokens; 10 px labels: 30."""
    return side // (font_size + LABEL_AIR)


# 12 px labels up to 25 tokens; a longer input is drawn with 10 px labels, so up to 30 tokens (a pair of two
# short sentences) are shown whole, and only longer inputs get a window.
NORMAL = MapStyle(font_size=12, window=readable_window(12), side=480)
DENSE = MapStyle(font_size=10, window=readable_window(10), side=480)
# A projector's 16 px labels still leave 16 px cells for an 18-token sentence, drawn whole, on a 300 px plot.
PRESENTATION = MapStyle(font_size=16, window=18, side=560, overview_side=200)
PRESENTATION_SCALE = 1.2  # Presentation's text size over a browser's 16 px (the app's page text and titles)


def map_style(presentation: bool = False, tokens: int = 0) -> MapStyle:
    """The style for a screen (``False``) or a projector (``True``: larger fonts and cells).

    On a screen, a map of more than :data:`NORMAL`'s window of ``tokens`` per side uses smaller labels
    (:data:`DENSE`), so inputs of up to 30 tokens are shown whole (:func:`readable_window`); the projector
    keeps its large labels and shows a window sooner.
    """
    if presentation:
        return PRESENTATION
    return DENSE if tokens > NORMAL.window else NORMAL


# The figures' font (plotting.TEMPLATE): Arial, or its metric twin Liberation Sans on Linux. Glyph widths in
# font sizes, rounded up from Arial's; a machine with neither draws DejaVu Sans, up to about 8% wider, which
# the label room's padding absorbs.
FONT_FAMILY = "Arial, 'Liberation Sans', Helvetica, sans-serif"
_NARROW = frozenset(" !'(),-./:;I[]fijlrt|’")
_WIDE = frozenset("#%&@MWmw…")
_UPPER_OR_DIGIT = 0.72
_OTHER = 0.56


def _glyph_width(char: str) -> float:
    if char in _NARROW:
        return 0.36
    if char in _WIDE:
        return 1.0
    if unicodedata.category(char) in ("Mn", "Me", "Cf"):  # combining marks, isolates, zero-width joiners
        return 0.0
    if unicodedata.category(char) == "So" and ord(char) > 0x2000:  # emoji and other symbols: Noto Color Emoji
        return 1.3
    if unicodedata.east_asian_width(char) in ("W", "F"):  # CJK, full-width forms
        return 1.0
    if char.isupper() or char.isdigit():
        return _UPPER_OR_DIGIT
    return _OTHER


def text_width(text: str, font_size: float) -> float:
    """An upper estimate of the pixels ``text`` takes in one line at ``font_size`` px.

    Figures reserve their margins from it instead of plotly's ``automargin``, which measures every label
    in the browser and then draws the chart a second time, on every head change.
    Plotly's entities (``&lt;``) count as the one character they show.
    """
    return font_size * sum(_glyph_width(char) for char in html.unescape(text))


def plotly_text(label: str) -> str:
    """``label`` as plotly shows it literally: ``&``, ``<`` and ``>`` written as entities.

    Plotly reads text as a little HTML: ``<s>`` (RoBERTa's first token) strikes through everything
    after it, ``<b>`` turns bold, and an unclosed tag upsets the axis layout. Plotly turns the
    entities back into the characters on screen.
    """
    return html.escape(label, quote=False)


def shorten_label(label: str, limit: int = LABEL_LIMIT) -> str:
    """``label`` cut to ``limit`` characters, the last one an ellipsis, so one long word cannot shrink the map;
    written for plotly (:func:`plotly_text`).

    For example, a 120-character [UNK] piece becomes its first 19 characters and "…".
    """
    return plotly_text(label if len(label) <= limit else label[: limit - 1] + ELLIPSIS)


def isolate(label: str) -> str:
    """``label`` between FSI and PDI: shown in its own direction, it cannot reorder the text around it.

    A Hebrew or Arabic token in "query → key: weight" would otherwise take the arrow and the colon into
    its right-to-left run and the hover would read "weight :key → query". Figures isolate every token
    label (ticks, hover, bars, lines); the exports keep the labels as they are.
    """
    return f"{FSI}{label}{PDI}"


def label_text(shown: str) -> str:
    """The label a figure shows, back as the token's label: without isolates and the invisible suffix that
    keeps repeats apart (see :func:`attention_viz.figures.unique_labels`), and with plotly's entities read
    back (:func:`plotly_text`)."""
    return html.unescape(shown.rstrip("\u200b\u200c").removeprefix(FSI).removesuffix(PDI))


def window_start(start: int, total: int, size: int) -> int:
    """``start`` clamped so that the window ``[start, start + size)`` lies inside ``total`` tokens."""
    return max(0, min(int(start), total - size))


def window_around(index: int, total: int, size: int) -> int:
    """The start of a ``size``-token window that has token ``index`` near its middle."""
    return window_start(index - size // 2, total, size)


def window_slice(start: int, total: int, size: int) -> slice:
    """The tokens a window shows: ``size`` of them (all when ``total <= size``) from the clamped ``start``."""
    begin = window_start(start, total, size)
    return slice(begin, min(begin + size, total))
