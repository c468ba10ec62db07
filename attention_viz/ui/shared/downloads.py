"""Download buttons for what a page shows: the matrix as CSV, all attention as JSON, the figure as HTML.

One call per page: ``downloads.buttons(result, matrix, figure, layer, head, what)``. The contents come
from :mod:`attention_viz.export` and are built only when clicked (a 512-token CSV takes about a second to
write, the JSON of every head is hundreds of MB, an HTML page carries plotly.js), so a head change pays
for none of them. PNG comes from the chart's
own toolbar (camera icon), configured by :func:`chart_config`; the disk icon beside it saves an SVG of the same
name (the app's own elements draw it themselves; Streamlit's charts get it from
:func:`attention_viz.ui.attention_map.components.svg_buttons`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attention_viz.extraction import AttentionResult, export
from attention_viz.ui.server import cache
from attention_viz.ui.text.i18n import t
from attention_viz.ui.text.safe_text import Markdown


def chart_config(model: str, layer: int, head: int, what: str = "") -> dict:
    """``st.plotly_chart(config=...)``: the toolbar's PNG gets a meaningful name and 2× scale (its SVG the same
    name)."""
    return export.image_config(model, layer, head, what)


def buttons(
    result: AttentionResult,
    matrix: np.ndarray,
    figure: go.Figure | Callable[[], go.Figure],
    layer: int,
    head: int,
    what: str,
    labels: tuple[str, ...] | None = None,
    key_labels: tuple[str, ...] | None = None,
) -> None:
    """Three download buttons in a row.

    Args:
        result: the text's attention (the JSON holds all of it: every layer and head).
        matrix: the ``(query, key)`` matrix shown (CSV).
        figure: the figure shown (HTML), or a function that makes it (called only when the HTML is clicked).
        layer, head, what: name the files, e.g. ``attention_all-MiniLM-L6-v2_layer3_head1_inside.csv``.
        labels: the matrix's (query) labels; default the result's.
        key_labels: the matrix's key labels when they differ from ``labels`` (a non-square view).
    """
    labels = result.encoding.labels if labels is None else labels
    stem = export.file_stem(result.model_name, f"layer{layer}", f"head{head}", what)
    row = st.container(horizontal=True, gap="small")  # wraps on a narrow screen instead of cutting the labels
    _button(row, t("links.download_csv"), lambda: export.matrix_csv(matrix, labels, key_labels), stem, "csv", what)
    json_stem = export.file_stem(result.model_name, "pretrained", "all")
    json_help = t("links.download_json_help")
    json_bytes = cache.json_size(result)  # on the button before the click: it grows as tokens²
    json_label = t("links.download_json", size=file_size(json_bytes))
    _button(row, json_label, lambda: export.attention_json(result), json_stem, "json", what, json_help)
    html = lambda: export.figure_html(figure() if callable(figure) else figure)  # noqa: E731
    _button(row, t("links.download_html"), html, stem, "html", what)
    if json_bytes > LARGE_DOWNLOAD:
        st.caption(t("links.download_json_large", size=file_size(json_bytes)))
    st.caption(t("links.png_hint"))


LARGE_DOWNLOAD = 50_000_000  # bytes: above this a download says it is large (about 180 tokens' JSON, 12 × 6 heads)


def file_size(size: int) -> str:
    """``size`` bytes in decimal units, as a download's label shows it: ``"≈ 131 MB"``, ``"≈ 4.0 MB"``,
    ``"≈ 26 kB"``."""
    if size >= 10_000_000:
        return f"≈ {size / 1e6:.0f} MB"
    if size >= 1_000_000:
        return f"≈ {size / 1e6:.1f} MB"
    return f"≈ {max(1, round(size / 1e3))} kB"


def data_buttons(stem: str, what: str, csv, json) -> None:
    """A CSV and a JSON download of what a page shows, built only when clicked.

    Args:
        stem: the file name without extension (:func:`attention_viz.extraction.export.file_stem`).
        what: names the buttons' keys (one page's pair of buttons).
        csv, json: callables returning the files' text.
    """
    row = st.container(horizontal=True, gap="small")
    _button(row, t("links.download_shown_csv"), csv, stem, "csv", what)
    _button(row, t("links.download_shown_json"), json, stem, "json", what)


# each kind of file: its MIME type and its button's icon
_KINDS = {
    "csv": ("text/csv", ":material/table:"),
    "json": ("application/json", ":material/data_object:"),
    "html": ("text/html", ":material/code:"),
}


def _button(row, label: Markdown, data, stem: str, kind: str, what: str, help: Markdown | None = None) -> None:
    """One download button for the file ``stem.kind``, built when clicked; keyed by kind and ``what``."""
    mime, icon = _KINDS[kind]
    row.download_button(
        label,
        data,
        file_name=f"{stem}.{kind}",
        help=help,
        mime=mime,
        icon=icon,
        on_click="ignore",
        key=f"download_{kind}_{what}",
        width="content",
    )
